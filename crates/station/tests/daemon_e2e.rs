//! End to end on loopback: a coordinator and two stations. A job submitted
//! at station A (submit-only) runs on station B (execute-only), and its
//! output comes back to A's submit directory.

use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_station::client::StationClient;
use gleaner_station::config::StationRole;
use gleaner_station::node::spawn_for_test;
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, pool_keys, pool_station, shared_tempdir, submit};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_from_a_runs_on_b_and_output_returns() {
    // Guests may run as `nobody`: let them traverse to their sandboxes.
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = pool_keys(root);

    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());

    let station = |name: &str, role| pool_station(root, &keys, &coord_url, name, role);
    let (a_addr, a) = spawn_for_test(station("a", StationRole::SubmitOnly))
        .await
        .unwrap();
    let (_b_addr, b) = spawn_for_test(station("b", StationRole::ExecuteOnly))
        .await
        .unwrap();

    let (alice, work) = common::job_owner(root);
    std::fs::write(
        work.join("run.sh"),
        "#!/bin/sh\necho hello from $(cat in.txt)\ntr a-z A-Z < in.txt > out.txt\n",
    )
    .unwrap();
    std::fs::write(work.join("in.txt"), "station a").unwrap();
    let text = "executable = run.sh\ntransfer_input_files = in.txt\n\
                transfer_output_files = out.txt\noutput = stdout.txt\nlog = job.log\nqueue\n";
    let token = keys.user(alice.name());
    let client = StationClient::new(format!("http://{a_addr}"), token).unwrap();
    let resp = submit(&client, text, &work).await;
    let id = resp.jobs[0].to_string();

    let deadline = Instant::now() + Duration::from_secs(60);
    let detail = loop {
        let d = client.job(&id).await.unwrap();
        if d.job.state.is_terminal() || matches!(d.job.state, JobState::Held { .. }) {
            break d;
        }
        assert!(Instant::now() < deadline, "job never finished: {d:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        detail.job.state,
        JobState::Completed { exit_code: 0 },
        "{detail:#?}"
    );
    assert_eq!(detail.job.host.as_deref(), Some("b"));
    assert!(detail.events.iter().any(|e| e.kind == JobEventKind::Placed));
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "STATION A"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("stdout.txt")).unwrap(),
        "hello from station a\n"
    );
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(log.contains("005 (001.000.000)"), "{log}");
    assert_eq!(
        client.output(&id, "stdout", 0).await.unwrap(),
        b"hello from station a\n"
    );

    a.stop().await;
    b.stop().await;
    coord.stop().await.unwrap();
}
