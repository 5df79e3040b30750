//! The starter with real guest processes and a tiny in-test shadow server
//! that records inputs served, output chunks, uploaded files and status
//! reports. Owner activity is driven through the watch channel directly.
//!
//! Needs root for the cgroup cases (skipped otherwise); the others run as
//! any user. Real-process tests share the isolation tests' lock file so
//! CPU measurements do not disturb each other.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use gleaner_core::detector::OwnerState;
use gleaner_core::eviction::{Condor1988Config, EvictionPolicy};
use gleaner_core::time::Dur;
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState};
use gleaner_proto::wire::{JobStatusReport, PlacementRequest, PlacementResponse, RejectReason};
use gleaner_station::host::starter::{
    AnyNonEmptyClaim, GuestListing, Starter, StarterConfig, router,
};
use gleaner_station::isolation::{
    CgroupConfig, CgroupLayout, CgroupManager, RemoveOnDrop, SlotConfig,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

mod common;
use common::{alive, proc_stat, serial_lock, serve, shared_tempdir, unix_now};
use gleaner_proto::fit::{self, Reject};

#[derive(Default)]
struct Rec {
    inputs: HashMap<String, Vec<u8>>,
    outputs: HashMap<String, Vec<u8>>,
    files: HashMap<String, Vec<u8>>,
    reports: Vec<JobStatusReport>,
}

type Shared = Arc<Mutex<Rec>>;

async fn input(
    State(s): State<Shared>,
    Path((_j, name)): Path<(String, String)>,
) -> (StatusCode, Vec<u8>) {
    match s.lock().unwrap().inputs.get(&name) {
        Some(b) => (StatusCode::OK, b.clone()),
        None => (StatusCode::NOT_FOUND, Vec::new()),
    }
}

async fn output(
    State(s): State<Shared>,
    Path((_j, stream)): Path<(String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> StatusCode {
    let off: usize = q.get("offset").and_then(|o| o.parse().ok()).unwrap_or(0);
    let mut r = s.lock().unwrap();
    let buf = r.outputs.entry(stream).or_default();
    if off > buf.len() {
        return StatusCode::CONFLICT;
    }
    let end = off + body.len();
    if end > buf.len() {
        buf.resize(end, 0);
    }
    buf[off..end].copy_from_slice(&body);
    StatusCode::OK
}

async fn file(
    State(s): State<Shared>,
    Path((_j, name)): Path<(String, String)>,
    body: Bytes,
) -> StatusCode {
    s.lock().unwrap().files.insert(name, body.to_vec());
    StatusCode::NO_CONTENT
}

async fn status(State(s): State<Shared>, Json(r): Json<JobStatusReport>) -> StatusCode {
    s.lock().unwrap().reports.push(r);
    StatusCode::NO_CONTENT
}

async fn shadow(rec: Shared) -> String {
    let app = Router::new()
        .route("/v1/shadow/{job}/input/{name}", get(input))
        .route("/v1/shadow/{job}/output/{stream}", post(output))
        .route("/v1/shadow/{job}/files/{name}", put(file))
        .route("/v1/jobs/{job}/status", post(status))
        .with_state(rec);
    serve(app).await
}

struct Env {
    rec: Shared,
    url: String,
    owner: watch::Sender<OwnerState>,
    starter: Arc<Starter>,
    _dir: tempfile::TempDir,
    _cg: Option<CgParent>,
}

/// Removes the test's cgroup parent (and any leftover guest group).
struct CgParent(CgroupManager);

impl Drop for CgParent {
    fn drop(&mut self) {
        for job in self.0.list().unwrap_or_default() {
            if let Ok(g) = self.0.open(&job) {
                drop(RemoveOnDrop(g));
            }
        }
        let _ = self.0.remove_parent();
    }
}

fn cgroups(name: &str) -> Option<CgroupManager> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("{name}: not root, no cgroup");
        return None;
    }
    let layout = CgroupLayout::detect().ok()?;
    let mut c = CgroupConfig::new(layout);
    c.parent = format!("gleaner-test-{}-starter-{name}", std::process::id());
    // Normal weight for the guests' parent: the machine may be busy with
    // builds, and an idle-class guest would then get no CPU at all, which
    // would hide whether a resume worked.
    c.parent_idle = false;
    CgroupManager::new(c).ok()
}

async fn env(policy: EvictionPolicy, owner: OwnerState, cg: Option<CgroupManager>) -> Env {
    env_with(policy, owner, cg, |_| {}).await
}

/// [`env`] with the starter's configuration adjusted by `adjust`.
async fn env_with(
    policy: EvictionPolicy,
    owner: OwnerState,
    cg: Option<CgroupManager>,
    adjust: impl FnOnce(&mut StarterConfig),
) -> Env {
    // The guests (slot accounts of this test when root) must reach their
    // sandboxes.
    let dir = shared_tempdir();
    let rec: Shared = Arc::default();
    let url = shadow(rec.clone()).await;
    let (tx, rx) = watch::channel(owner);
    let mut cfg = StarterConfig::new("host1", dir.path().join("execute"));
    cfg.policy = policy;
    cfg.cpus = 4;
    cfg.memory_mb = 4096;
    cfg.output_poll = Duration::from_millis(100);
    cfg.checkpoint_grace = Duration::from_millis(500);
    cfg.slots = SlotConfig::new(gleaner_testkit::slot_prefix(), 4);
    adjust(&mut cfg);
    let starter = Arc::new(Starter::new(cfg, Box::new(AnyNonEmptyClaim), rx, cg.clone()).unwrap());
    Env {
        rec,
        url,
        owner: tx,
        starter,
        _dir: dir,
        _cg: cg.map(CgParent),
    }
}

fn request(env: &Env, job: JobId, script: &str) -> PlacementRequest {
    env.rec
        .lock()
        .unwrap()
        .inputs
        .insert("job.sh".into(), script.as_bytes().to_vec());
    let mut d = JobDescription::new("alice", "job.sh");
    d.transfer_output_files = None;
    PlacementRequest {
        protocol: gleaner_proto::wire::PROTOCOL_VERSION,
        job_id: job,
        home: "home1".into(),
        claim_id: "claim".into(),
        description: d,
        shadow: env.url.clone(),
        checkpoint: None,
        run_count: 0,
        lease_secs: None,
        run: None,
        claim_seq: 0,
    }
}

fn accepted(r: PlacementResponse) {
    assert!(matches!(r, PlacementResponse::Accepted { .. }), "{r:?}");
}

/// How long a guest may take to start. Guests are idle-priority from
/// their first instruction (their namespace setup included), so on a
/// machine whose CPUs are busy with other work (a build beside the test
/// suite) they wait for it; the station's reactions, timed below, do not.
const GUEST_START: Duration = Duration::from_secs(60);

async fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn event(env: &Env, kind: JobEventKind) -> Option<JobStatusReport> {
    env.rec
        .lock()
        .unwrap()
        .reports
        .iter()
        .find(|r| r.event == kind)
        .cloned()
}

async fn guest_pid(env: &Env) -> i32 {
    wait_for("guest pid", GUEST_START, || {
        env.starter
            .listing()
            .first()
            .and_then(|l: &GuestListing| l.pid)
            .map(|p| p as i32)
    })
    .await
}

/// (utime + stime ticks, scheduling policy) of a process.
fn stat(pid: i32) -> Option<(u64, u32)> {
    proc_stat(pid).map(|(ticks, policy, _)| (ticks, policy))
}

const BUSY: &str = "#!/bin/sh\nwhile :; do :; done\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_completes_streams_and_uploads() {
    let _l = serial_lock();
    let env = env(EvictionPolicy::default(), OwnerState::Av, None).await;
    let job = JobId::new(1, 0);
    let script = "#!/bin/sh\necho line1\necho oops >&2\nsleep 1.5\necho line2\necho result > out.txt\nexit 3\n";
    accepted(env.starter.place(request(&env, job, script)));
    // The first chunk arrives while the job still runs.
    wait_for("stdout chunk", Duration::from_secs(5), || {
        let r = env.rec.lock().unwrap();
        (r.outputs.get("stdout").map(Vec::as_slice) == Some(b"line1\n")).then_some(())
    })
    .await;
    assert!(
        event(&env, JobEventKind::Completed).is_none(),
        "chunk came only at exit"
    );
    let done = wait_for("completed", Duration::from_secs(10), || {
        event(&env, JobEventKind::Completed)
    })
    .await;
    assert_eq!(done.state, JobState::Completed { exit_code: 3 });
    assert_eq!(done.host, "host1");
    {
        let r = env.rec.lock().unwrap();
        assert_eq!(r.outputs["stdout"], b"line1\nline2\n");
        assert_eq!(r.outputs["stderr"], b"oops\n");
        assert_eq!(r.files["out.txt"], b"result\n");
        // The executable and capture files are not outputs.
        assert_eq!(r.files.len(), 1, "{:?}", r.files.keys());
        assert!(r.reports.iter().any(|x| x.event == JobEventKind::Started));
    }
    wait_for("slot freed", Duration::from_secs(5), || {
        env.starter.listing().is_empty().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_missing_executable_is_held() {
    let env = env(EvictionPolicy::default(), OwnerState::Av, None).await;
    let mut req = request(&env, JobId::new(2, 0), "");
    req.description.executable = "absent.sh".into();
    accepted(env.starter.place(req));
    let held = wait_for("held", Duration::from_secs(10), || {
        event(&env, JobEventKind::Held)
    })
    .await;
    match held.state {
        JobState::Held { reason } => assert!(reason.contains("absent.sh"), "{reason}"),
        s => panic!("{s:?}"),
    }
    // A missing input file holds the job too.
    let mut req = request(&env, JobId::new(2, 1), BUSY);
    req.description.transfer_input_files = vec!["data.txt".into()];
    accepted(env.starter.place(req));
    wait_for("held 2", Duration::from_secs(10), || {
        env.rec
            .lock()
            .unwrap()
            .reports
            .iter()
            .find(|r| r.job_id == JobId::new(2, 1) && r.event == JobEventKind::Held)
            .cloned()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_immediate_eviction_rejects_then_kills_fast() {
    let _l = serial_lock();
    let ie = EvictionPolicy::from_name("ie").unwrap();
    let env = env(ie, OwnerState::Na, None).await;
    let job = JobId::new(3, 0);
    match env.starter.place(request(&env, job, BUSY)) {
        PlacementResponse::Rejected { reason, .. } => assert_eq!(reason, RejectReason::OwnerActive),
        r => panic!("{r:?}"),
    }
    env.owner.send(OwnerState::Av).unwrap();
    accepted(env.starter.place(request(&env, job, BUSY)));
    let pid = guest_pid(&env).await;
    assert!(alive(pid));
    let t0 = Instant::now();
    env.owner.send(OwnerState::Na).unwrap();
    let ev = wait_for("evicted", Duration::from_secs(5), || {
        event(&env, JobEventKind::Evicted)
    })
    .await;
    let took = t0.elapsed();
    assert_eq!(ev.state, JobState::Idle);
    assert!(took < Duration::from_millis(500), "eviction took {took:?}");
    assert!(!alive(pid), "guest still alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_linger_longer_lowers_priority_and_vacate_endpoint() {
    let _l = serial_lock();
    let ll = EvictionPolicy::from_name("ll").unwrap();
    let name = "ll";
    let env = env(ll, OwnerState::Na, cgroups(name)).await;
    let job = JobId::new(4, 0);
    // Accepted although the owner is active: Linger-Longer uses it.
    accepted(env.starter.place(request(&env, job, BUSY)));
    let pid = guest_pid(&env).await;
    let (_, policy) = stat(pid).unwrap();
    assert_eq!(
        policy,
        libc::SCHED_IDLE as u32,
        "guest not idle while owner active"
    );
    // The owner leaves: the ladder runs the guest "normally", which is
    // still idle priority (issue 12: idle at all times).
    env.owner.send(OwnerState::Av).unwrap();
    wait_for("running again", Duration::from_secs(5), || {
        (env.starter.listing()[0].state == "running").then_some(())
    })
    .await;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(500) {
        assert_eq!(
            stat(pid).unwrap().1,
            libc::SCHED_IDLE as u32,
            "guest at normal priority after the owner left"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    env.owner.send(OwnerState::Na).unwrap();
    wait_for("lingering again", Duration::from_secs(5), || {
        (env.starter.listing()[0].state == "lingering").then_some(())
    })
    .await;
    assert_eq!(stat(pid).unwrap().1, libc::SCHED_IDLE as u32);

    // The HTTP surface: list, then vacate. The daemon's auth layer puts the
    // verified caller in the request; stand in for it with fixed callers.
    let caller = |name: &str, role| gleaner_edge::Caller {
        name: name.into(),
        role,
        credential: gleaner_edge::Credential::Token {
            token_id: name.into(),
        },
    };
    // The guest's home station, and another station (which speaks only for
    // its own guests).
    let base = serve(router(env.starter.clone()).layer(axum::Extension(caller(
        "home1",
        gleaner_edge::Role::Station,
    ))))
    .await;
    let as_other = serve(router(env.starter.clone()).layer(axum::Extension(caller(
        "home2",
        gleaner_edge::Role::Station,
    ))))
    .await;
    let as_user = serve(
        router(env.starter.clone())
            .layer(axum::Extension(caller("mallory", gleaner_edge::Role::User))),
    )
    .await;
    // Behind the daemon's authentication layer, as the station serves it:
    // a request without a token never reaches the handlers.
    type Tokens = gleaner_edge::TokenVerifier;
    let key = gleaner_proto::creds::PoolSigner::from_seed(&[6; 32]).verifier();
    let no_auth = serve(
        router(env.starter.clone()).layer(axum::middleware::from_fn_with_state(
            Arc::new(Tokens::new(key, Default::default())),
            gleaner_edge::authenticate::<Tokens>,
        )),
    )
    .await;
    let http = reqwest::Client::new();
    // A user's token may not vacate anyone's guest, nor another station's
    // token; no claims at all: 401.
    for who in [&as_user, &as_other] {
        let r = http
            .post(format!("{who}/v1/guests/{job}/vacate"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
    }
    let r = http
        .post(format!("{no_auth}/v1/guests/{job}/vacate"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(alive(pid), "a refused vacate must not touch the guest");
    let list: Vec<GuestListing> = http
        .get(format!("{base}/v1/guests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].info.job, job);
    let r = http
        .post(format!("{base}/v1/guests/{job}/vacate"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let ev = wait_for("evicted", Duration::from_secs(5), || {
        event(&env, JobEventKind::Evicted)
    })
    .await;
    assert_eq!(ev.state, JobState::Idle);
    assert!(!alive(pid));
    let r = http
        .post(format!("{base}/v1/guests/{job}/vacate"))
        .send()
        .await
        .unwrap();
    // Gone once the report is out (give the slot a moment to free).
    wait_for("slot freed", Duration::from_secs(5), || {
        env.starter.listing().is_empty().then_some(())
    })
    .await;
    assert!(r.status() == 404 || r.status() == 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_condor1988_suspends_resumes_then_vacates() {
    let _l = serial_lock();
    let policy = EvictionPolicy::Condor1988(Condor1988Config {
        grace: Dur::from_millis(1500),
        ..Default::default()
    });
    let env = env(policy, OwnerState::Av, cgroups("condor")).await;
    let job = JobId::new(5, 0);
    accepted(env.starter.place(request(&env, job, BUSY)));
    let pid = guest_pid(&env).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    env.owner.send(OwnerState::Na).unwrap();
    wait_for("suspended", Duration::from_secs(2), || {
        (env.starter.listing()[0].state == "suspended").then_some(())
    })
    .await;
    let (t0, _) = stat(pid).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (t1, _) = stat(pid).unwrap();
    assert!(t1 - t0 <= 1, "suspended guest ran: {t0} -> {t1} ticks");
    assert!(event(&env, JobEventKind::Suspended).is_some());

    env.owner.send(OwnerState::Av).unwrap();
    wait_for("resumed guest runs", Duration::from_secs(5), || {
        let (t, _) = stat(pid)?;
        (t > t1 + 5).then_some(())
    })
    .await;
    assert!(event(&env, JobEventKind::Resumed).is_some());

    // Owner back and still active after the grace: vacated (Mutka 1988 L841).
    let t_na = Instant::now();
    env.owner.send(OwnerState::Na).unwrap();
    let ev = wait_for("evicted", Duration::from_secs(6), || {
        event(&env, JobEventKind::Evicted)
    })
    .await;
    assert!(
        t_na.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        t_na.elapsed()
    );
    assert_eq!(ev.state, JobState::Idle);
    assert!(!alive(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_rejects_bad_claims_and_oversized_jobs() {
    let env = env(EvictionPolicy::default(), OwnerState::Av, None).await;
    let mut req = request(&env, JobId::new(6, 0), BUSY);
    req.claim_id = String::new();
    match env.starter.place(req) {
        PlacementResponse::Rejected { reason, .. } => assert_eq!(reason, RejectReason::BadClaim),
        r => panic!("{r:?}"),
    }
    let mut req = request(&env, JobId::new(6, 1), BUSY);
    req.description.request_cpus = 8;
    match env.starter.place(req) {
        PlacementResponse::Rejected { reason, .. } => {
            assert_eq!(reason, RejectReason::NoResources)
        }
        r => panic!("{r:?}"),
    }
    let mut req = request(&env, JobId::new(6, 2), BUSY);
    req.description.request_memory_mb = Some(1 << 20);
    assert!(matches!(
        env.starter.place(req),
        PlacementResponse::Rejected {
            reason: RejectReason::NoResources,
            ..
        }
    ));
    let mut req = request(&env, JobId::new(6, 3), BUSY);
    req.description.request_disk_kb = Some(u64::MAX / 2);
    assert!(matches!(
        env.starter.place(req),
        PlacementResponse::Rejected {
            reason: RejectReason::NoResources,
            ..
        }
    ));
    let mut req = request(&env, JobId::new(6, 4), BUSY);
    req.description.transfer_input_files = vec!["..".into()];
    // The job's own fault: the home counts it as a failed start.
    assert!(matches!(
        env.starter.place(req),
        PlacementResponse::Rejected {
            reason: RejectReason::Unrunnable,
            ..
        }
    ));
    assert!(env.starter.listing().is_empty());
}

/// The host re-checks a placement with the matchmaker's fit check: for the
/// same job and the ad the host advertises, `glean q --analyze`'s verdict
/// (the coordinator's `matchmaker::analyze`) and the host's answer agree,
/// reason and words, including the owner's guest limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_refuses_what_the_matchmaker_refuses_in_the_same_words() {
    use gleaner_coordinator::matchmaker::{AdEntry, AdsView, analyze};
    use gleaner_station::host::policy::PolicyConfig;
    let _l = serial_lock();
    let env = env_with(EvictionPolicy::default(), OwnerState::Av, None, |c| {
        c.cpus = 3;
        c.guest_policy = PolicyConfig {
            deny_users: vec!["mallory".into()],
            start: Some(
                "TARGET.RequestMemory =?= undefined || TARGET.RequestMemory <= 2048".into(),
            ),
            max_guests: Some(2),
            ..Default::default()
        };
        c.machine.attrs.insert("HasMatlab".into(), "true".into());
    })
    .await;
    let mut next = 0u64;
    // Both verdicts on one job: the rejects the matchmaker names (empty
    // when it would place the job) and the host's answer.
    let mut both = |adjust: &dyn Fn(&mut JobDescription)| {
        next += 1;
        let mut req = request(&env, JobId::new(20, next as u32), BUSY);
        adjust(&mut req.description);
        let view = AdsView {
            now_unix: unix_now() as i64,
            stations: vec![AdEntry {
                ad: env.starter.current_ad(),
                pending_claims: 0,
                embargoed: false,
            }],
            licences: Vec::new(),
        };
        let rejects = analyze(&req.description, &view).remove(0).rejects;
        (rejects, env.starter.place(req))
    };
    let agree = |(rejects, answer): (Vec<Reject>, PlacementResponse), what: &str| {
        match (&rejects[..], &answer) {
            ([], PlacementResponse::Accepted { .. }) => {}
            ([first, ..], PlacementResponse::Rejected { reason, message }) => {
                assert_eq!(*reason, first.placement_reason(), "{what}");
                assert_eq!(*message, fit::explain(&rejects), "{what}");
            }
            _ => panic!("{what}: matchmaker {rejects:?}, host {answer:?}"),
        }
        rejects
    };
    let plain = |_: &mut JobDescription| {};
    assert!(agree(both(&plain), "a plain job").is_empty());
    let r = agree(both(&|d| d.owner = "mallory".into()), "a denied user");
    assert!(matches!(r[..], [Reject::UserDenied { .. }]), "{r:?}");
    let r = agree(both(&|d| d.request_memory_mb = Some(3000)), "START");
    assert!(matches!(r[..], [Reject::Start { .. }]), "{r:?}");
    let r = agree(
        both(&|d| d.requirements = Some("HasMatlab && Memory > 8000".into())),
        "requirements",
    );
    assert!(
        matches!(&r[..], [Reject::Requirements { clauses }] if clauses.len() == 1),
        "{r:?}"
    );
    let r = agree(both(&|d| d.request_cpus = 3), "cpus");
    assert!(
        matches!(r[..], [Reject::Cpus { need: 3, free: 2 }]),
        "{r:?}"
    );
    // The owner's guest limit (2 of 3 CPUs) now binds on the host too.
    assert!(agree(both(&plain), "a second guest").is_empty());
    let r = agree(both(&plain), "a third guest");
    assert_eq!(
        r,
        vec![Reject::GuestLimit {
            limit: 2,
            guests: 2
        }]
    );
    // The owner is back: every reason, the owner's first.
    env.owner.send(OwnerState::Na).unwrap();
    let r = agree(both(&|d| d.owner = "mallory".into()), "owner active");
    assert_eq!(r[0], Reject::OwnerActive, "{r:?}");
    assert!(r.len() >= 3, "owner, user and the guest limit: {r:?}");
    env.starter.vacate_all("test over");
    wait_for("guests gone", Duration::from_secs(20), || {
        env.starter.listing().is_empty().then_some(())
    })
    .await;
}

fn destination(job: JobId, available: bool) -> gleaner_proto::wire::Destination {
    gleaner_proto::wire::Destination {
        job,
        home: "home1".into(),
        available,
    }
}

/// The `Evicted` report of `job`, once it is there.
fn evicted(env: &Env, job: JobId) -> Option<JobStatusReport> {
    env.rec
        .lock()
        .unwrap()
        .reports
        .iter()
        .find(|r| r.job_id == job && r.event == JobEventKind::Evicted)
        .cloned()
}

/// Linger-Longer in the starter (Ryu & Hollingsworth L85–93): a lingering
/// guest migrates once the owner has been active for `T_lingr` (Eq. 4;
/// with the default h = 1, l = 0, `T_lingr = T_migr`, here 8 MB at the
/// pool's 8 MB/s = 1 s, Eq. 5) and the coordinator says a free node would
/// take it; without one it lingers, and leaves as soon as one appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_linger_longer_migrates_after_t_lingr_only_with_a_destination() {
    let _l = serial_lock();
    let env = env(
        EvictionPolicy::from_name("ll").unwrap(),
        OwnerState::Av,
        None,
    )
    .await;
    env.starter.on_pool_transfer_rate(Some(8e6));
    let t_lingr = Duration::from_secs(1);
    let (stay, go) = (JobId::new(30, 0), JobId::new(30, 1));
    accepted(env.starter.place(request(&env, stay, BUSY)));
    accepted(env.starter.place(request(&env, go, BUSY)));
    wait_for("both running", GUEST_START, || {
        let l = env.starter.listing();
        (l.len() == 2 && l.iter().all(|g| g.state == "running")).then_some(())
    })
    .await;
    env.starter
        .on_destinations(&[destination(stay, false), destination(go, true)]);
    let t0 = Instant::now();
    env.owner.send(OwnerState::Na).unwrap();
    let ev = wait_for(
        "the guest with a destination leaves",
        Duration::from_secs(10),
        || evicted(&env, go),
    )
    .await;
    let took = t0.elapsed();
    eprintln!("Linger-Longer left {took:?} after the owner came back (T_lingr = {t_lingr:?})");
    assert!(took >= t_lingr, "left before T_lingr: {took:?}");
    assert!(took < t_lingr + Duration::from_millis(900), "{took:?}");
    assert_eq!(ev.state, JobState::Idle);
    assert!(ev.detail.contains("migrating"), "{}", ev.detail);
    assert!(ev.detail.contains("T_lingr = 1.0 s"), "{}", ev.detail);
    // No free node for the other: it lingers past T_lingr …
    tokio::time::sleep(t_lingr).await;
    assert!(evicted(&env, stay).is_none(), "left without a destination");
    let l = env.starter.listing();
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(l[0].state, "lingering");
    // … and goes as soon as one appears.
    let t1 = Instant::now();
    env.starter.on_destinations(&[destination(stay, true)]);
    let ev = wait_for("the waiting guest leaves", Duration::from_secs(10), || {
        evicted(&env, stay)
    })
    .await;
    let took = t1.elapsed();
    eprintln!("the waiting guest left {took:?} after a destination appeared");
    assert!(took < Duration::from_millis(900), "{took:?}");
    assert!(ev.detail.contains("migrating"), "{}", ev.detail);
}

/// Linger-Forever never leaves (L91), destination or not; Pause-and-Migrate
/// leaves after its pause (L58), to the free node when there is one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starter_linger_forever_stays_and_pause_and_migrate_leaves_after_its_pause() {
    let _l = serial_lock();
    let lf = env(
        EvictionPolicy::from_name("lf").unwrap(),
        OwnerState::Av,
        None,
    )
    .await;
    lf.starter.on_pool_transfer_rate(Some(8e6));
    let job = JobId::new(31, 0);
    accepted(lf.starter.place(request(&lf, job, BUSY)));
    guest_pid(&lf).await;
    lf.starter.on_destinations(&[destination(job, true)]);
    lf.owner.send(OwnerState::Na).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(evicted(&lf, job).is_none(), "Linger-Forever left");
    assert_eq!(lf.starter.listing()[0].state, "lingering");
    lf.starter.vacate_all("test over");

    let pause = Duration::from_millis(1500);
    let pm = EvictionPolicy::PauseAndMigrate(gleaner_core::eviction::PauseAndMigrateConfig {
        pause: Dur::from_millis(1500),
        ..Default::default()
    });
    let env = env(pm, OwnerState::Av, None).await;
    let (go, vacate) = (JobId::new(32, 0), JobId::new(32, 1));
    accepted(env.starter.place(request(&env, go, BUSY)));
    accepted(env.starter.place(request(&env, vacate, BUSY)));
    wait_for("both running", GUEST_START, || {
        let l = env.starter.listing();
        (l.len() == 2 && l.iter().all(|g| g.pid.is_some())).then_some(())
    })
    .await;
    env.starter
        .on_destinations(&[destination(go, true), destination(vacate, false)]);
    let t0 = Instant::now();
    env.owner.send(OwnerState::Na).unwrap();
    wait_for("both paused", Duration::from_secs(5), || {
        let l = env.starter.listing();
        l.iter().all(|g| g.state == "suspended").then_some(())
    })
    .await;
    let a = wait_for(
        "the one with a destination",
        Duration::from_secs(10),
        || evicted(&env, go),
    )
    .await;
    let took = t0.elapsed();
    let b = wait_for("the one without", Duration::from_secs(10), || {
        evicted(&env, vacate)
    })
    .await;
    eprintln!("Pause-and-Migrate left {took:?} after the owner came back (pause {pause:?})");
    assert!(
        took >= pause && took < pause + Duration::from_millis(900),
        "{took:?}"
    );
    assert!(a.detail.contains("migrating"), "{}", a.detail);
    // No destination: vacated all the same (NoDestination::Vacate).
    assert!(
        b.detail.contains("evicted by pause_and_migrate"),
        "{}",
        b.detail
    );
    wait_for("lf gone", Duration::from_secs(10), || {
        lf.starter.listing().is_empty().then_some(())
    })
    .await;
}
