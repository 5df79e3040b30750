//! Finding 2, the home's part: an output flood is held at its bound (its
//! job's, then its user's), a held or removed job's spool goes at once,
//! and a home killed before the clean-up removes what was left when it
//! starts again, without following links planted in the spool.

use crate::pool::{Pool, Spec, User, wait_for};
use std::path::Path;
use std::time::Duration;

const HOLD_CODE: u32 = 33;

/// Waits until job `id` of `u` is held with the spool's code; its reason.
fn held_for_spool(pool: &Pool, u: &User, id: &str) -> String {
    wait_for(Duration::from_secs(90), &format!("{id} held"), pool, || {
        let d = u.job(id);
        match &d.job.state {
            gleaner_proto::job::JobState::Held { reason } => {
                assert_eq!(d.job.hold_code, Some(HOLD_CODE), "{d:?}");
                Some(reason.clone())
            }
            s => {
                assert!(!s.is_terminal(), "{id} ended {s:?} instead of being held");
                None
            }
        }
    })
}

fn gone(pool: &Pool, p: &Path, what: &str) {
    wait_for(Duration::from_secs(10), what, pool, || {
        (std::fs::symlink_metadata(p).is_err()).then_some(())
    });
}

fn stdout_len(pool: &Pool, id: &str) -> u64 {
    std::fs::metadata(pool.spool_of(id).join("stdout")).map_or(0, |m| m.len())
}

#[test]
fn floods_are_held_at_their_bounds_and_spools_go_at_once_even_after_a_crash() {
    if gleaner_testkit::skip_unless_root("home_fair::spool: creates Unix users") {
        return;
    }
    let mut pool = Pool::start(Spec {
        hosts: 2,
        coordinator: "scheduling_interval_secs = 1\n".into(),
        home_tables: "[limits]\nmax_job_spool_mb = 1\nmax_owner_spool_mb = 1\n".into(),
    });
    let ann = pool.user("spoolann");

    // 1. `yes` writes as fast as it can: held at the job's bound, its
    //    spool removed at once, nothing delivered.
    let c = ann.submit(
        "flood.sub",
        "executable = /usr/bin/yes\ntransfer_executable = false\noutput = flood.out\nqueue\n",
    );
    let flood = format!("{c}.0");
    let why = held_for_spool(&pool, &ann, &flood);
    assert!(why.contains("max_job_spool_mb"), "{why}");
    gone(
        &pool,
        &pool.spool_of(&flood),
        "the held flood's spool to go",
    );
    assert!(
        !ann.work.join("flood.out").exists(),
        "a held job delivers nothing"
    );
    assert!(ann.glean(&["rm", &flood]).status.success());

    // 2. Two jobs that fit the job's bound but not, together, their
    //    user's: the second is held, the first runs on.
    let writer = "executable = /bin/sh\narguments = \"-c 'head -c 600000 /dev/zero; sleep 120'\"\n\
                  transfer_executable = false\noutput = w.out\nqueue\n";
    let first = format!("{}.0", ann.submit("w1.sub", writer));
    wait_for(
        Duration::from_secs(60),
        "the first writer's output",
        &pool,
        || (stdout_len(&pool, &first) == 600_000).then_some(()),
    );
    let second = format!("{}.0", ann.submit("w2.sub", writer));
    let why = held_for_spool(&pool, &ann, &second);
    assert!(
        why.contains("max_owner_spool_mb") && why.contains(ann.name()),
        "{why}"
    );
    gone(
        &pool,
        &pool.spool_of(&second),
        "the held writer's spool to go",
    );
    assert_eq!(
        stdout_len(&pool, &first),
        600_000,
        "the first writer keeps its output"
    );
    assert!(matches!(
        ann.job(&first).job.state,
        gleaner_proto::job::JobState::Running
    ));

    // 3. `rm` frees the running writer's spool at once.
    assert!(ann.glean(&["rm", &first]).status.success());
    gone(
        &pool,
        &pool.spool_of(&first),
        "the removed writer's spool to go",
    );

    // 4. A home killed between the queue's change and the clean-up: what
    //    was left is removed when it starts again, as the spool's owner,
    //    following no link. A job held at submit stands for a held one.
    let c = ann.submit(
        "held.sub",
        "executable = /bin/true\ntransfer_executable = false\nhold = true\nqueue\n",
    );
    let held = format!("{c}.0");
    pool.kill_home();
    let victim = pool.dir.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious"), "keep me").unwrap();
    // The removed writer's spool as a crash left it, with a link out.
    let left = pool.spool_of(&first);
    std::fs::create_dir_all(left.join("files")).unwrap();
    std::fs::write(left.join("stdout"), vec![b'x'; 1000]).unwrap();
    std::os::unix::fs::symlink(victim.join("precious"), left.join("files/out")).unwrap();
    // The held job's spool is itself a link to a directory elsewhere.
    std::os::unix::fs::symlink(&victim, pool.spool_of(&held)).unwrap();
    // A job the queue does not have.
    std::fs::create_dir_all(pool.spool_of("999.0")).unwrap();
    pool.start_home();
    for (id, what) in [
        (&first, "the removed job's leftover spool"),
        (&held, "the held job's planted link"),
        (&"999.0".to_string(), "an unknown job's spool"),
    ] {
        gone(
            &pool,
            &pool.spool_of(id),
            &format!("{what} to go after the restart"),
        );
    }
    assert_eq!(
        std::fs::read_to_string(victim.join("precious")).unwrap(),
        "keep me",
        "a planted link was followed"
    );
    assert!(ann.glean(&["rm", &held]).status.success());
}
