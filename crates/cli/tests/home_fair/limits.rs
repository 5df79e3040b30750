//! Per-user limits: a refused submission names the limit and the numbers
//! and leaves the queue as it was; a user at `max_running_per_owner` waits
//! while another user's jobs run; `glean users` shows the limits and each
//! user's jobs.

use crate::pool::{Pool, Spec, wait_for};
use std::time::{Duration, Instant};

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn limits_refuse_with_their_numbers_and_change_nothing() {
    if gleaner_testkit::skip_unless_root("home_fair::limits: creates Unix users") {
        return;
    }
    let pool = Pool::start(Spec {
        hosts: 2,
        coordinator: "scheduling_interval_secs = 1\n".into(),
        home_tables: "[limits]\nmax_jobs_per_submission = 3\nmax_jobs_per_owner = 5\n\
                      max_running_per_owner = 1\n"
            .into(),
    });
    let ann = pool.user("limann");
    let bob = pool.user("limbob");
    let sleep = |n: u32| {
        format!("executable = /bin/sleep\narguments = 4\ntransfer_executable = false\nqueue {n}\n")
    };

    // Over the submission's limit: refused, nothing queued, no cluster
    // id spent.
    let out = ann.try_submit("four.sub", &sleep(4));
    assert!(!out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("max_jobs_per_submission") && said.contains("at most 3"),
        "{said}"
    );
    assert!(ann.summary().clusters.is_empty());
    assert_eq!(ann.submit("three.sub", &sleep(3)), 1, "no cluster id spent");
    assert_eq!(ann.submit("two.sub", &sleep(2)), 2);

    // Over the user's limit: refused with the user's count and the limit.
    let out = ann.try_submit("one.sub", &sleep(1));
    assert!(!out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains(&format!("{} has 5 jobs", ann.name()))
            && said.contains("max_jobs_per_owner = 5"),
        "{said}"
    );
    let s = ann.summary();
    assert_eq!(s.total.idle + s.total.running, 5, "{s:?}");
    assert_eq!(s.clusters.len(), 2);

    // Limits are per user: Bob submits.
    let bobs = bob.submit("bob.sub", &sleep(2));
    assert_eq!(bobs, 3);

    // The administrator's view: the limits, and each user's jobs.
    let out = bob.glean(&["users", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let view: gleaner_proto::api::HomeUsers = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view.limits.max_jobs_per_owner, 5);
    assert_eq!(view.limits.max_jobs_per_submission, 3);
    assert_eq!(view.limits.max_running_per_owner, Some(1));
    let jobs = |who: &str| {
        view.users
            .iter()
            .find(|u| u.user == who)
            .map(|u| u.jobs.active())
            .unwrap_or_else(|| panic!("{who} not in {view:?}"))
    };
    // One of Ann's may have finished by now.
    assert!((4..=5).contains(&jobs(ann.name())), "{view:?}");
    assert_eq!(jobs(bob.name()), 2, "{view:?}");
    let table = text(&ann.glean(&["users"]));
    assert!(
        table.contains(ann.name()) && table.contains("max_jobs_per_owner = 5"),
        "{table}"
    );

    // Two hosts, but Ann holds one at most; Bob's jobs run beside hers.
    let mut bob_ran = false;
    let until = Instant::now() + Duration::from_secs(12);
    while Instant::now() < until {
        let a = ann.summary().total.running;
        assert!(
            a <= 1,
            "Ann runs {a} jobs at once, over max_running_per_owner = 1"
        );
        bob_ran |= bob.summary().total.running > 0;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        bob_ran,
        "Bob's jobs never ran beside Ann's\n{}",
        pool.logs()
    );
    wait_for(
        Duration::from_secs(60),
        "Ann's first job to run",
        &pool,
        || {
            let s = ann.summary();
            (s.total.running + s.clusters.iter().map(|c| c.counts.completed).sum::<u64>() > 0)
                .then_some(())
        },
    );
    // What is left goes (clusters that finished refuse, which is fine).
    for c in ["1", "2"] {
        ann.glean(&["rm", c]);
    }
    bob.glean(&["rm", "3"]);
}
