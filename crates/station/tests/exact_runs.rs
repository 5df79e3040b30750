//! A job's outputs are those of exactly one run (issue 14), with real
//! processes: a coordinator, a submit-only home `a` and an execute-only
//! host `b`, in process. The job prints `pid $$ run TOKEN line i` slowly,
//! TOKEN random per run (in a PID namespace every run is PID 1, so the pid
//! alone would not tell runs apart).
//!
//! - Held mid-run and released, it runs again from scratch: the delivered
//!   stdout holds the lines of one run only, the last one, 1 to N.
//! - While the second run runs, a chunk of the first (its run id read from
//!   the host's guest listing) and a chunk naming no run are refused with
//!   409 (field `run`), and the spooled output does not change.

use gleaner_proto::job::JobState;
use gleaner_proto::wire::ErrorBody;
use gleaner_station::client::StationClient;
use gleaner_station::config::StationRole;
use gleaner_station::host::starter::GuestListing;
use gleaner_station::node::spawn_for_test;
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, pool_keys, pool_station, shared_tempdir, submit};

const LINES: usize = 12;

/// The job: LINES lines, 0.4 s apart, each naming the run's random token.
const SCRIPT: &str = "#!/bin/sh\n\
    tok=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')\n\
    i=1\n\
    while [ $i -le 12 ]; do echo \"pid $$ run $tok line $i\"; i=$((i+1)); sleep 0.4; done\n";

async fn wait_state(client: &StationClient, id: &str, want: fn(&JobState) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let d = client.job(id).await.unwrap();
        if want(&d.job.state) {
            return;
        }
        assert!(Instant::now() < deadline, "job never got there: {d:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn lines_so_far(client: &StationClient, id: &str) -> Vec<String> {
    let out = client.output(id, "stdout", 0).await.unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The runs' tokens in `lines`, in order of first appearance.
fn tokens(lines: &[String]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for l in lines {
        if let Some(t) = l.split_whitespace().nth(3)
            && !v.iter().any(|x| x == t)
        {
            v.push(t.to_string());
        }
    }
    v
}

/// Posts one stdout chunk to the home's shadow as an administrator (who
/// passes the host check, so that only the run decides).
async fn post_chunk(
    home: &str,
    admin: &str,
    id: &str,
    offset: usize,
    run: Option<&str>,
) -> (u16, String) {
    let mut url = reqwest::Url::parse(&format!("{home}/v1/shadow/{id}/output/stdout")).unwrap();
    url.query_pairs_mut()
        .append_pair("offset", &offset.to_string());
    if let Some(r) = run {
        url.query_pairs_mut().append_pair("run", r);
    }
    let resp = reqwest::Client::new()
        .post(url)
        .bearer_auth(admin)
        .body("pid 666 run stale line 99\n")
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body: ErrorBody = resp.json().await.unwrap_or(ErrorBody::new(
        gleaner_proto::wire::ErrorCode::Internal,
        "no error body",
    ));
    (status, body.error.field.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn held_and_released_job_delivers_the_last_runs_output_only() {
    let _serial = common::serial_lock();
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = pool_keys(root);
    let coord = gleaner_coordinator::spawn_for_test(coordinator_config(root))
        .await
        .unwrap();
    let coord_url = format!("http://{}", coord.addr());
    let mut a_cfg = pool_station(root, &keys, &coord_url, "a", StationRole::SubmitOnly);
    // The only host must take the job back at once after the hold.
    a_cfg.avoid_host_secs = 0.0;
    a_cfg.lease_secs = 6.0;
    let (a_addr, a) = spawn_for_test(a_cfg).await.unwrap();
    let b_cfg = pool_station(root, &keys, &coord_url, "b", StationRole::ExecuteOnly);
    let (b_addr, b) = spawn_for_test(b_cfg).await.unwrap();

    let (alice, work) = common::job_owner(root);
    std::fs::write(work.join("lines.sh"), SCRIPT).unwrap();
    let text = "executable = lines.sh\noutput = out.txt\nerror = err.txt\nlog = job.log\nqueue\n";
    let client = StationClient::new(format!("http://{a_addr}"), keys.user(alice.name())).unwrap();
    let admin = keys.admin("admin");
    let host = StationClient::new(format!("http://{b_addr}"), admin.clone()).unwrap();
    let home_url = format!("http://{a_addr}");
    let id = submit(&client, text, &work).await.jobs[0].to_string();

    // Run 1: a few lines, and its run id from the host's listing
    // (`a-<job>-r1-<nonce>` is run `a/<job>/r1/<nonce>`).
    let deadline = Instant::now() + Duration::from_secs(90);
    while lines_so_far(&client, &id).await.len() < 3 {
        assert!(Instant::now() < deadline, "first run printed nothing");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let guests: Vec<GuestListing> = host.get_json("/v1/guests").await.unwrap();
    let guest = guests
        .iter()
        .find(|g| g.info.job.to_string() == id)
        .unwrap();
    let nonce = guest.guest_id.rsplit('-').next().unwrap().to_string();
    assert_eq!(
        guest.guest_id,
        format!("a-{id}-r1-{nonce}"),
        "sandbox named after the run"
    );
    let first_run = format!("a/{id}/r1/{nonce}");
    let first = lines_so_far(&client, &id).await;

    // Hold mid-run, then release: the job runs again from scratch.
    if let Err(e) = client.hold(&id, Some("test")).await {
        panic!("hold: {e}: {:#?}", client.job(&id).await.unwrap().events);
    }
    wait_state(&client, &id, |s| matches!(s, JobState::Held { .. })).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    client.release(&id, None).await.unwrap();

    // Run 2 is running: the first run's chunks, and chunks naming no run,
    // are refused and change nothing.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let now = lines_so_far(&client, &id).await;
        let toks = tokens(&now);
        if now.len() >= 2 && toks.len() == 1 && !first.iter().any(|l| l == &now[0]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "second run never printed: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = client.output(&id, "stdout", 0).await.unwrap();
    let (status, field) = post_chunk(&home_url, &admin, &id, before.len(), Some(&first_run)).await;
    assert_eq!(
        (status, field.as_str()),
        (409, "run"),
        "a stale run's chunk"
    );
    let (status, field) = post_chunk(&home_url, &admin, &id, before.len(), None).await;
    assert_eq!(
        (status, field.as_str()),
        (409, "run"),
        "a chunk naming no run"
    );
    let after = client.output(&id, "stdout", 0).await.unwrap();
    assert!(
        after.starts_with(&before),
        "spool changed under a refused chunk"
    );
    assert!(
        !String::from_utf8_lossy(&after).contains("pid 666"),
        "stale chunk stored"
    );

    wait_state(&client, &id, |s| s.is_terminal()).await;
    let d = client.job(&id).await.unwrap();
    assert_eq!(d.job.state, JobState::Completed { exit_code: 0 }, "{d:#?}");
    assert!(d.job.run_count >= 2, "the job ran again: {d:#?}");
    let out = std::fs::read_to_string(work.join("out.txt")).unwrap();
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    assert_eq!(
        tokens(&lines).len(),
        1,
        "lines of more than one run:\n{out}"
    );
    let numbers: Vec<usize> = lines
        .iter()
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert_eq!(numbers, (1..=LINES).collect::<Vec<_>>(), "{out}");
    assert!(
        !lines.iter().any(|l| first.contains(l)),
        "first run's lines delivered:\n{out}"
    );
    // Written aside and renamed: no staging file is left next to it.
    let leftovers: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".gleaner-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}\n{:#?}", d.events);

    a.stop().await;
    b.stop().await;
    coord.stop().await.unwrap();
}
