//! A checkpoint that rots at the home is refused when a host restores
//! it; the previous one is restored instead and the job's output is that
//! of one run.

use crate::pool::{Pool, one_run};
use gleaner_proto::job::JobState;

/// Cuts the job's host off from the home (no checkpoint of it arrives any
/// more), spoils the latest checkpoint with `spoil`, and waits until the
/// job runs on the other host (the first one's lease ran out), which is
/// then stopped. Returns the step the previous checkpoint holds.
async fn spoil_and_move(p: &mut Pool, id: &str, spoil: impl Fn(&std::path::Path)) -> u32 {
    let from = p.running_on(id).await;
    p.proxy.cut(&from);
    let dir = p.ckpt_dir(id);
    let previous =
        crate::pool::checkpoint_step(&dir.join("previous.ckpt")).expect("a previous checkpoint");
    spoil(&dir.join("latest.ckpt"));
    let to = if from == "x1" { "x2" } else { "x1" };
    p.wait_job(id, 60, "the job never moved", |d| {
        d.job.state == JobState::Running && d.job.host.as_deref() == Some(to)
    })
    .await;
    p.stop_host(&from).await;
    previous
}

async fn refused_at_restore(spoil: impl Fn(&std::path::Path), what: &str) {
    let mut p = Pool::start().await;
    let id = p.submit("a", 80, 10, 2, false).await;
    p.wait_checkpoints(&id, 2).await;
    let previous = spoil_and_move(&mut p, &id, spoil).await;
    let d = p.wait_done(&id).await;
    assert_eq!(
        d.job.state,
        JobState::Completed { exit_code: 0 },
        "{:#?}",
        d.events
    );
    assert_eq!(
        std::fs::read_to_string(p.work.join("out-a.txt")).unwrap(),
        one_run(80)
    );
    // The move restored the previous checkpoint: the other host's first
    // run resumed from it.
    let err = std::fs::read_to_string(p.work.join("err-a.txt")).unwrap();
    assert!(
        err.contains(&format!("resumed at {previous}\n")),
        "{what}: resumed from another step than {previous}:\n{err}"
    );
    // The bad one was set aside and the history says so.
    assert!(p.ckpt_dir(&id).join("latest.ckpt.corrupt").exists());
    assert!(
        d.events.iter().any(|e| e.detail.contains("set aside")),
        "{what}: {:#?}",
        d.events
    );
    p.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_corrupted_checkpoint_is_refused_at_restore_and_the_previous_one_restored() {
    refused_at_restore(
        |latest| {
            // One flipped byte in the middle of a chunk.
            let mut b = std::fs::read(latest).unwrap();
            let n = b.len() / 2;
            b[n] ^= 0x20;
            std::fs::write(latest, b).unwrap();
        },
        "corrupted",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_truncated_checkpoint_is_refused_at_restore_and_the_previous_one_restored() {
    refused_at_restore(
        |latest| {
            let b = std::fs::read(latest).unwrap();
            std::fs::write(latest, &b[..b.len() - 1000]).unwrap();
        },
        "truncated",
    )
    .await;
}
