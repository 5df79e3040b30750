//! Matchmaking end to end on loopback: a coordinator with a licence limit
//! of 2, a submit-only home and three execute stations that advertise
//! different memory, attributes and policies. Real guest processes run;
//! the coordinator's host listing (`GET /v1/ads`) is sampled throughout:
//! every guest runs only where its job is allowed, and never more than 2
//! licensed jobs run at once.

use gleaner_coordinator::CoordinatorConfig;
use gleaner_coordinator::matchmaker::AdsView;
use gleaner_proto::job::{JobDescription, JobId, JobState};
use gleaner_proto::wire::{PROTOCOL_VERSION, PlacementRequest, PlacementResponse, RejectReason};
use gleaner_station::client::{JobQuery, StationClient};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::host::policy::PolicyConfig;
use gleaner_station::node::spawn_for_test;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

mod common;
use common::{coordinator_config, place, pool_keys, pool_station, shared_tempdir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_run_only_where_allowed_and_licences_hold() {
    let dir = shared_tempdir();
    let root = dir.path();
    let keys = pool_keys(root);

    let coord = gleaner_coordinator::spawn_for_test(CoordinatorConfig {
        licences: BTreeMap::from([("matlab".to_string(), 2)]),
        ..coordinator_config(root)
    })
    .await
    .unwrap();
    let coord_url = format!("http://{}", coord.addr());

    let station = |name: &str, role, memory: u64, attrs: &[(&str, &str)], policy| StationConfig {
        cpus: Some(2),
        memory_mb: Some(memory),
        speed: Some(1.0),
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        policy,
        ..pool_station(root, &keys, &coord_url, name, role)
    };
    let (home_addr, home) = spawn_for_test(station(
        "home",
        StationRole::SubmitOnly,
        0,
        &[],
        PolicyConfig::default(),
    ))
    .await
    .unwrap();
    let mut running = vec![home];
    let mut addrs = BTreeMap::new();
    // big: lots of memory and the licensed program.
    // small: the program but little memory.
    // plain: lots of memory, no program, and its START only takes
    // memory-hungry jobs; it refuses user mallory.
    for (name, mem, attrs, policy) in [
        (
            "big",
            8192,
            vec![("HasMatlab", "true")],
            PolicyConfig::default(),
        ),
        (
            "small",
            1024,
            vec![("HasMatlab", "true")],
            PolicyConfig::default(),
        ),
        (
            "plain",
            8192,
            vec![],
            PolicyConfig {
                start: Some("TARGET.RequestMemory >= 2048".into()),
                deny_users: vec!["mallory".into()],
                ..Default::default()
            },
        ),
    ] {
        let (addr, r) =
            spawn_for_test(station(name, StationRole::ExecuteOnly, mem, &attrs, policy))
                .await
                .unwrap();
        addrs.insert(name, addr);
        running.push(r);
    }

    let (alice, work) = common::job_owner(root);
    let token = keys.user(alice.name());
    let client = StationClient::new(format!("http://{home_addr}"), token.clone()).unwrap();
    let submit = |text: &'static str| common::submit(&client, text, &work);
    let licensed = submit(
        "executable = /bin/sleep\narguments = 1.5\ntransfer_executable = false\n\
         requirements = HasMatlab =?= true\nconcurrency_limits = MATLAB\nqueue 5\n",
    )
    .await;
    let hungry = submit(
        "executable = /bin/sleep\narguments = 1\ntransfer_executable = false\n\
         request_memory = 4096\nqueue 3\n",
    )
    .await;
    let mut allowed: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for j in &licensed.jobs {
        allowed.insert(j.to_string(), BTreeSet::from(["big", "small"]));
    }
    for j in &hungry.jobs {
        allowed.insert(j.to_string(), BTreeSet::from(["big", "plain"]));
    }
    let licensed_ids: BTreeSet<String> = licensed.jobs.iter().map(|j| j.to_string()).collect();

    let coord_client = StationClient::new(coord_url.clone(), token).unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut peak = 0;
    let mut samples = 0;
    loop {
        let view: AdsView = coord_client.get_json("/v1/ads").await.unwrap();
        let mut now_licensed = 0;
        for e in &view.stations {
            for g in &e.ad.running_guests {
                let id = g.job.to_string();
                let ok = allowed
                    .get(&id)
                    .is_some_and(|s| s.contains(e.ad.name.as_str()));
                assert!(ok, "job {id} runs on {}", e.ad.name);
                if licensed_ids.contains(&id) {
                    now_licensed += 1;
                }
            }
        }
        assert!(now_licensed <= 2, "{now_licensed} licensed jobs at once");
        peak = peak.max(now_licensed);
        samples += 1;
        let jobs = client
            .jobs(&JobQuery {
                all: true,
                ..Default::default()
            })
            .await
            .unwrap();
        let done = jobs.iter().filter(|j| j.state.is_terminal()).count();
        if done == allowed.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "jobs did not finish: {jobs:#?}\n{view:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (id, hosts) in &allowed {
        let d = client.job(id).await.unwrap();
        assert_eq!(d.job.state, JobState::Completed { exit_code: 0 }, "{d:#?}");
        let host = d.job.host.clone().unwrap_or_default();
        assert!(hosts.contains(host.as_str()), "{id} ran on {host}");
    }
    eprintln!("{samples} samples; at most {peak} licensed jobs at once");
    assert!(peak >= 1, "no licensed job seen in {samples} samples");

    // The host enforces its policy too: a placement for a denied user,
    // with a valid claim, is refused by the starter itself.
    let claim = keys.claim("plain", "home", &format!("http://{home_addr}"));
    let mut d = JobDescription::new("mallory", "/bin/true");
    d.request_memory_mb = Some(4096);
    let req = PlacementRequest {
        protocol: PROTOCOL_VERSION,
        job_id: JobId::new(99, 0),
        home: "home".into(),
        claim_id: claim,
        description: d,
        shadow: format!("http://{home_addr}"),
        checkpoint: None,
        run_count: 0,
        lease_secs: None,
        run: None,
        claim_seq: 0,
    };
    let daemon = keys.station("home");
    let resp: PlacementResponse =
        place(&reqwest::Client::new(), addrs["plain"], &daemon, &req).await;
    match resp {
        PlacementResponse::Rejected { reason, message } => {
            assert_eq!(reason, RejectReason::RequirementsUnmet);
            assert!(message.contains("mallory"), "{message}");
        }
        r => panic!("{r:?}"),
    }

    for r in running {
        r.stop().await;
    }
    coord.stop().await.unwrap();
}
