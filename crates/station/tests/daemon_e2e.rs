//! End to end on loopback: a coordinator and two stations. A job submitted
//! at station A (submit-only) runs on station B (execute-only), and its
//! output comes back to A's submit directory.

use gleaner_coordinator::CoordinatorConfig;
use gleaner_proto::api::SubmitBody;
use gleaner_proto::auth::{Claims, Role, load_or_create_pool_key};
use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::client::StationClient;
use gleaner_station::daemon::config::{StationConfig, StationRole};
use gleaner_station::daemon::spawn_for_test;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn job_from_a_runs_on_b_and_output_returns() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Guests may run as `nobody`: let them traverse to their sandboxes.
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
    let key_path = root.join("pool.key");
    let key = load_or_create_pool_key(&key_path).unwrap();

    let coord = gleaner_coordinator::spawn_for_test(CoordinatorConfig {
        state_dir: root.join("coord"),
        pool_key: key_path.clone(),
        scheduling_interval_secs: 0.2,
        advertise_period_secs: 1,
        startup_grace_secs: Some(0.0),
        ..Default::default()
    })
    .await
    .unwrap();
    let coord_url = format!("http://{}", coord.addr());

    let station = |name: &str, role| StationConfig {
        name: name.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: root.join(name),
        pool_key: key_path.clone(),
        coordinator: coord_url.clone(),
        role,
        advertise_secs: 1,
        placement_interval_secs: 0.0,
        ..Default::default()
    };
    let (a_addr, a) = spawn_for_test(station("a", StationRole::SubmitOnly))
        .await
        .unwrap();
    let (_b_addr, b) = spawn_for_test(station("b", StationRole::ExecuteOnly))
        .await
        .unwrap();

    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        work.join("run.sh"),
        "#!/bin/sh\necho hello from $(cat in.txt)\ntr a-z A-Z < in.txt > out.txt\n",
    )
    .unwrap();
    std::fs::write(work.join("in.txt"), "station a").unwrap();
    let text = "executable = run.sh\ntransfer_input_files = in.txt\n\
                transfer_output_files = out.txt\noutput = stdout.txt\nlog = job.log\nqueue\n";
    let sub = parse_submit(text, &SubmitContext::new("job.sub", "alice")).unwrap();
    let token = key.sign(&Claims {
        subject: "alice".into(),
        role: Role::User,
        issued_at: 0,
        expires_at: None,
        token_id: "alice".into(),
    });
    let client = StationClient::new(format!("http://{a_addr}"), token).unwrap();
    let resp = client
        .submit(&SubmitBody {
            protocol: PROTOCOL_VERSION,
            submission: sub,
            submit_dir: Some(work.to_string_lossy().into_owned()),
        })
        .await
        .unwrap();
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
