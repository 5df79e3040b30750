//! The home's checkpoint store over real HTTP: good checkpoints rotate
//! (latest, previous), a corrupt or partial upload is refused with the
//! previous one kept and the refusal in the job's history, a checkpoint
//! that rots on disk is rolled back to the previous one, and a host that
//! no longer runs a job has its lease renewal refused.

use gleaner_proto::job::{JobEventKind, JobState};
use gleaner_station::checkpoint::{Checkpointer, Manifest, SelfCheckpoint, read_bundle};
use gleaner_station::client::StationClient;
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::spawn_for_test;
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, pool_keys, pool_station, shared_tempdir, submit};

fn bundle(dir: &std::path::Path, content: &[u8], seq: u64) -> Vec<u8> {
    std::fs::write(dir.join("state"), content).unwrap();
    SelfCheckpoint {
        exit_code: 85,
        files: vec!["state".into()],
    }
    .collect(
        dir,
        Manifest {
            seq,
            ..Default::default()
        },
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkpoints_are_verified_rotated_and_rolled_back() {
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = pool_keys(root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let station = |name: &str, role| StationConfig {
        // Small enough to see the bucket work, large enough to stay quick.
        checkpoint_bytes_per_sec: 4 << 20,
        ..pool_station(root, &keys, &coord_url, name, role)
    };
    let (home_addr, home) = spawn_for_test(station("home", StationRole::SubmitOnly))
        .await
        .unwrap();
    let (b_addr, b) = spawn_for_test(station("b", StationRole::ExecuteOnly))
        .await
        .unwrap();
    let (alice, work) = common::job_owner(root);
    let client =
        StationClient::new(format!("http://{home_addr}"), keys.user(alice.name())).unwrap();
    let id = submit(
        &client,
        "executable = /bin/sleep\ntransfer_executable = false\narguments = 600\n\
         log = job.log\nqueue\n",
        &work,
    )
    .await
    .jobs[0]
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.job(&id).await.unwrap().job.state != JobState::Running {
        assert!(Instant::now() < deadline, "job never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let http = reqwest::Client::new();
    // The host's own token: the job runs on b.
    let daemon = keys.station("b");
    // The host names the job's current run (issue 14).
    let run = common::run_on(b_addr, &keys.admin("admin"), "home", &id).await;
    let url = format!("http://{home_addr}/v1/shadow/{id}/checkpoint?run={run}");
    let put = |body: Vec<u8>| {
        let http = http.clone();
        let url = url.clone();
        let daemon = daemon.clone();
        async move {
            http.put(url)
                .bearer_auth(daemon)
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };
    let get = || async {
        http.get(&url)
            .bearer_auth(&daemon)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec()
    };
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();

    // No checkpoint yet.
    let r = http.get(&url).bearer_auth(&daemon).send().await.unwrap();
    assert_eq!(r.status(), 404);

    // Two good ones: latest and previous. The second is 8 MiB through a
    // 4 MiB/s bucket (one second of burst): it cannot take much under 1 s.
    let first = bundle(&src, b"step 10", 1);
    assert!(put(first.clone()).await.status().is_success());
    // Noise: a checkpoint that compressed would barely touch the bucket.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let big: Vec<u8> = (0..8u32 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let second = bundle(&src, &big, 2);
    let t = Instant::now();
    assert!(put(second.clone()).await.status().is_success());
    assert!(
        t.elapsed() >= Duration::from_millis(800),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(get().await, second);
    // The home measured its receive rate on the big one and advertises it
    // for the pool's T_migr (issue #6 item 3); the tiny first one did not
    // count. Ads go every second here.
    let ads = format!("{coord_url}/v1/ads");
    let deadline = Instant::now() + Duration::from_secs(30);
    let rate = loop {
        let v: serde_json::Value = http
            .get(&ads)
            .bearer_auth(keys.admin("admin"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let advertised = v["stations"].as_array().and_then(|st| {
            st.iter()
                .find(|e| e["ad"]["name"] == "home")
                .and_then(|e| e["ad"]["attrs"]["CheckpointTransferRate"].as_str())
                .and_then(|r| r.parse::<u64>().ok())
        });
        if let Some(r) = advertised {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "home never advertised its rate: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // 8 MiB through a 4 MiB/s bucket with one second of burst.
    assert!(rate > 0 && rate < 64 << 20, "{rate}");
    let ckpt = root.join("home/spool").join(&id).join("ckpt");
    assert!(ckpt.join("previous.ckpt").exists());

    // Corrupt (a flipped byte) and partial uploads are refused; the last
    // good checkpoint is still served.
    let mut bad = second.clone();
    let n = bad.len() / 2;
    bad[n] ^= 0xff;
    let r = put(bad).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("BLAKE3"));
    let r = put(second[..second.len() / 2].to_vec()).await;
    assert_eq!(r.status(), 400);
    assert_eq!(get().await, second);
    let d = client.job(&id).await.unwrap();
    let rejected = d
        .events
        .iter()
        .filter(|e| e.kind == JobEventKind::Checkpointed && e.detail.contains("rejected"))
        .count();
    assert_eq!(rejected, 2, "{:#?}", d.events);
    let log = std::fs::read_to_string(work.join("job.log")).unwrap();
    assert!(log.contains("Checkpoint rejected"), "{log}");

    // The stored latest rots on disk. A chunk's bytes: served as stored
    // (the host restoring it finds out), and on the host's `verify=1` the
    // home checks, sets it aside and serves the previous one.
    let latest = ckpt.join("latest.ckpt");
    let mut rotten = std::fs::read(&latest).unwrap();
    let n = rotten.len() / 2;
    rotten[n] ^= 1;
    std::fs::write(&latest, &rotten).unwrap();
    assert_eq!(get().await, rotten);
    let verified = http
        .get(format!("{url}&verify=1"))
        .bearer_auth(&daemon)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    assert_eq!(verified, first);
    let m = read_bundle(&mut &verified[..], None).unwrap();
    assert_eq!(m.seq, 1);
    assert!(ckpt.join("latest.ckpt.corrupt").exists());
    let d = client.job(&id).await.unwrap();
    assert!(
        d.events
            .iter()
            .any(|e| e.detail.contains("refused at restore")),
        "{:#?}",
        d.events
    );
    // Its end cut off: not whole, so the previous one is served at once.
    std::fs::write(&latest, &second[..second.len() - 5]).unwrap();
    assert_eq!(get().await, first);

    // A lease renewal from a host that does not run the job is refused:
    // 403 for a station speaking in another's name or not running it,
    // 409 (an administrator naming another host) when no longer its.
    let lease = format!("http://{home_addr}/v1/shadow/{id}/lease");
    for (tok, host, want) in [
        (daemon.clone(), "somebody-else", 403),
        (keys.station("c"), "c", 403),
        (keys.admin("admin"), "somebody-else", 409),
    ] {
        let r = http
            .post(&lease)
            .bearer_auth(tok)
            .json(&serde_json::json!({"host": host}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), want, "{host}");
    }
    // Nor may another station store or fetch the job's checkpoints.
    let r = http
        .get(&url)
        .bearer_auth(keys.station("c"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // The job's host is heard for the job's current run only: a renewal
    // of another run, or naming none, is 409 (field `run`): that run's
    // host then kills it.
    for other in [None, Some(format!("home/{id}/r9/00ff"))] {
        let r = http
            .post(&lease)
            .bearer_auth(&daemon)
            .json(&serde_json::json!({"host": "b", "run": other}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 409, "{other:?}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["error"]["field"], "run", "{body}");
    }
    let r = http
        .post(&lease)
        .bearer_auth(&daemon)
        .json(&serde_json::json!({"host": "b", "run": run}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());

    // A user token cannot touch checkpoints.
    let r = http
        .get(&url)
        .bearer_auth(keys.user(alice.name()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    client.rm(&id, None).await.unwrap();
    home.stop().await;
    b.stop().await;
    coord.stop().await.unwrap();
}
