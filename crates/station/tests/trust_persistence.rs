//! Issue 12, what a restart must not undo (real stations in process, on
//! loopback): a claim a host accepted stays spent after the host restarts,
//! and a token revoked at the coordinator is refused by a station from its
//! next advertisement on, and still after the station restarts, even with
//! the coordinator gone.

mod common;

use common::shadow::Shadow;
use common::{place, serial_lock, shared_tempdir, test_isolation};
use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest};
use gleaner_proto::creds::{PoolSigner, Role};
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::wire::{PROTOCOL_VERSION, PlacementRequest, PlacementResponse, RejectReason};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::{TestKeys, skip_unless_root};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const HOST: &str = "exec";
const HOME: &str = "home";

fn host_config(root: &Path, keys: &TestKeys, coordinator: &str) -> StationConfig {
    let mut cfg = StationConfig {
        name: HOST.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: root.join(HOST),
        coordinator: coordinator.into(),
        role: StationRole::ExecuteOnly,
        advertise_secs: 1,
        placement_interval_secs: 0.0,
        cpus: Some(4),
        isolation: test_isolation(),
        ..Default::default()
    };
    common::give_credentials(&mut cfg, keys, root);
    cfg
}

fn sleep_job(job: JobId, claim: &str, shadow: &str) -> PlacementRequest {
    let mut d = JobDescription::new("alice", "/bin/sleep");
    d.arguments = vec!["60".into()];
    d.transfer_executable = false;
    PlacementRequest {
        protocol: PROTOCOL_VERSION,
        job_id: job,
        home: HOME.into(),
        claim_id: claim.into(),
        description: d,
        shadow: shadow.into(),
        checkpoint: None,
        run_count: 0,
        lease_secs: None,
        run: None,
        claim_seq: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_claim_stays_spent_after_the_host_restarts() {
    if skip_unless_root("places guests as slot accounts") {
        return;
    }
    let _l = serial_lock();
    let dir = shared_tempdir();
    let keys = TestKeys::in_dir(&dir.path().join("coord")).unwrap();
    let shadow = Shadow::start().await;
    let http = reqwest::Client::new();
    let claim = keys.claim(HOST, HOME, &shadow.url);
    let (addr, running) = spawn_for_test(host_config(dir.path(), &keys, ""))
        .await
        .unwrap();
    let r = place(
        &http,
        addr,
        &claim,
        &sleep_job(JobId::new(1, 0), &claim, &shadow.url),
    )
    .await;
    assert!(matches!(r, PlacementResponse::Accepted { .. }), "{r:?}");
    running.stop().await;
    // Same state directory: the nonce book is read back.
    let (addr, running) = spawn_for_test(host_config(dir.path(), &keys, ""))
        .await
        .unwrap();
    let r = place(
        &http,
        addr,
        &claim,
        &sleep_job(JobId::new(1, 1), &claim, &shadow.url),
    )
    .await;
    match r {
        PlacementResponse::Rejected { reason, .. } => assert_eq!(reason, RejectReason::BadClaim),
        r => panic!("a claim was accepted again after a restart: {r:?}"),
    }
    let listed: Vec<serde_json::Value> = http
        .get(format!("http://{addr}/v1/guests"))
        .bearer_auth(&claim)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        listed.is_empty(),
        "a guest runs after the replay: {listed:?}"
    );
    running.stop().await;
}

/// The status of `GET /v1/guests` with `token` (any valid token may list).
async fn status_with(http: &reqwest::Client, addr: SocketAddr, token: &str) -> u16 {
    http.get(format!("http://{addr}/v1/guests"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn start_host(root: &Path, keys: &TestKeys, coordinator: &str) -> (SocketAddr, Running) {
    spawn_for_test(host_config(root, keys, coordinator))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_refused_from_the_next_advertisement_and_after_a_restart() {
    if skip_unless_root("runs a host with slot accounts") {
        return;
    }
    let _l = serial_lock();
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = common::pool_keys(root);
    let coord = gleaner_coordinator::spawn_for_test(common::coordinator_config(root))
        .await
        .unwrap();
    let coordinator = format!("http://{}", coord.addr());
    // An administrator's token, issued as `glean token create` does, so
    // that it can be revoked by id.
    let registry = TokenRegistry::in_state_dir(&root.join("coord"));
    let signer: &PoolSigner = keys.signer();
    let now = common::unix_now();
    let issued = registry
        .create(
            signer,
            &TokenRequest {
                role: Role::Admin,
                subject: "ops".into(),
                expires_days: Some(1),
            },
            now,
        )
        .unwrap();
    let http = reqwest::Client::new();
    let (addr, running) = start_host(root, &keys, &coordinator).await;
    assert_eq!(status_with(&http, addr, &issued.token).await, 200);

    registry.revoke(&issued.record.token_id, now).unwrap();
    let t0 = Instant::now();
    while status_with(&http, addr, &issued.token).await != 401 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the station never heard of the revocation"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "revocation reached the station after {:.2} s (advertise period 1 s)",
        t0.elapsed().as_secs_f64()
    );
    // Another admin token still works: only the revoked id is refused.
    assert_eq!(status_with(&http, addr, &keys.admin("ops")).await, 200);

    // The coordinator gone and the station restarted: still refused.
    running.stop().await;
    coord.stop().await.unwrap();
    let (addr, running) = start_host(root, &keys, &coordinator).await;
    assert_eq!(status_with(&http, addr, &issued.token).await, 401);
    running.stop().await;
}
