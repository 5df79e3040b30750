//! Issue 12, per-station identities and single-use claims, tried as an
//! attacker would on real stations (in process, on loopback): a station
//! owner is root on their own machine and holds a valid token for their
//! own station, nothing more. Each attack must be refused and change
//! nothing: no guest started or stopped, no job state changed, no
//! connection to an address the attacker chose.
//!
//! The host side: `/v1/place` and `/v1/guests/{job}/vacate` on an
//! execute-only station. The home side: the shadow, lease and checkpoint
//! endpoints of a submit-only station for a job placed on another host.

mod common;

use common::shadow::Shadow;
use common::{place, serial_lock, shared_tempdir, test_isolation};
use gleaner_proto::api::SubmitBody;
use gleaner_proto::creds::{ClaimTicket, PoolSigner, new_nonce};
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::{
    JobStatusReport, PROTOCOL_VERSION, PlacementRequest, PlacementResponse, RejectReason,
};
use gleaner_station::client::StationClient;
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::host::starter::GuestListing;
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::{TestKeys, TestUser, reachable, skip_unless_root};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const HOST: &str = "exec";
const HOME: &str = "home";

/// An execute-only station named [`HOST`] with the pool's public key and
/// its own token.
struct Host {
    addr: SocketAddr,
    keys: TestKeys,
    running: Option<Running>,
    http: reqwest::Client,
}

impl Host {
    async fn start(root: &Path) -> Host {
        let keys = TestKeys::in_dir(&root.join("coord")).unwrap();
        let mut cfg = StationConfig {
            name: HOST.into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            state_dir: root.join(HOST),
            role: StationRole::ExecuteOnly,
            placement_interval_secs: 0.0,
            cpus: Some(4),
            isolation: test_isolation(),
            ..Default::default()
        };
        common::give_credentials(&mut cfg, &keys, root);
        let (addr, running) = spawn_for_test(cfg).await.unwrap();
        Host {
            addr,
            keys,
            running: Some(running),
            http: reqwest::Client::new(),
        }
    }

    /// A placement of a `sleep` job (nothing to fetch) from [`HOME`].
    fn request(&self, job: JobId, claim: String, shadow: &str) -> PlacementRequest {
        let mut d = JobDescription::new("alice", "/bin/sleep");
        d.arguments = vec!["60".into()];
        d.transfer_executable = false;
        PlacementRequest {
            protocol: PROTOCOL_VERSION,
            job_id: job,
            home: HOME.into(),
            claim_id: claim,
            description: d,
            shadow: shadow.into(),
            checkpoint: None,
            run_count: 0,
            lease_secs: None,
            run: None,
            claim_seq: 0,
        }
    }

    async fn place_as(&self, token: &str, req: &PlacementRequest) -> (u16, String) {
        let r = self
            .http
            .post(format!("http://{}/v1/place", self.addr))
            .bearer_auth(token)
            .json(req)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn guests(&self) -> Vec<GuestListing> {
        self.http
            .get(format!("http://{}/v1/guests", self.addr))
            .bearer_auth(self.keys.station(HOME))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn vacate_as(&self, token: &str, job: JobId) -> u16 {
        self.http
            .post(format!("http://{}/v1/guests/{job}/vacate", self.addr))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }
}

fn now() -> u64 {
    common::unix_now()
}

/// A claim for `host` granted to `home` at `address`, signed by `signer`,
/// valid from `from` to `until` (Unix seconds).
fn claim(
    signer: &PoolSigner,
    host: &str,
    home: &str,
    address: &str,
    from: u64,
    until: u64,
) -> String {
    let ticket = ClaimTicket::new(host, home, address, from, until, new_nonce().unwrap());
    signer.sign_claim(&ticket).unwrap()
}

fn rejected(r: &PlacementResponse) -> Option<RejectReason> {
    match r {
        PlacementResponse::Rejected { reason, .. } => Some(*reason),
        _ => None,
    }
}

/// A listener that records whether anyone connected: the address an
/// attacker would like the host to call.
async fn trap() -> (String, tokio::task::JoinHandle<bool>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = tokio::spawn(async move {
        tokio::time::timeout(Duration::from_secs(3), l.accept())
            .await
            .is_ok()
    });
    (url, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_foreign_expired_and_replayed_claims_place_nothing() {
    if skip_unless_root("places guests as slot accounts") {
        return;
    }
    let _l = serial_lock();
    let dir = shared_tempdir();
    let host = Host::start(dir.path()).await;
    let shadow = Shadow::start().await;
    let signer = host.keys.signer().clone();
    let home_token = host.keys.station(HOME);
    let t = now();
    let (trap_url, trapped) = trap().await;

    // Each forged or misdirected placement, with the home's own token.
    let cases: Vec<(&str, PlacementRequest)> = vec![
        (
            "signed with another key",
            host.request(
                JobId::new(1, 0),
                claim(
                    &PoolSigner::from_seed(&[7; 32]),
                    HOST,
                    HOME,
                    &shadow.url,
                    t,
                    t + 600,
                ),
                &shadow.url,
            ),
        ),
        (
            "granted on another host",
            host.request(
                JobId::new(1, 1),
                claim(&signer, "other", HOME, &shadow.url, t, t + 600),
                &shadow.url,
            ),
        ),
        (
            "granted to another home",
            host.request(
                JobId::new(1, 2),
                claim(&signer, HOST, "mallory", &shadow.url, t, t + 600),
                &shadow.url,
            ),
        ),
        (
            "expired",
            host.request(
                JobId::new(1, 3),
                claim(&signer, HOST, HOME, &shadow.url, t - 1200, t - 600),
                &shadow.url,
            ),
        ),
        (
            "redirecting the host to another shadow",
            host.request(
                JobId::new(1, 4),
                claim(&signer, HOST, HOME, &shadow.url, t, t + 600),
                &trap_url,
            ),
        ),
        (
            "a claim made of the public key",
            host.request(
                JobId::new(1, 5),
                host.keys.verifier().to_file_string(),
                &shadow.url,
            ),
        ),
    ];
    for (what, req) in &cases {
        let r = place(&host.http, host.addr, &home_token, req).await;
        assert_eq!(rejected(&r), Some(RejectReason::BadClaim), "{what}: {r:?}");
    }
    assert!(
        !trapped.await.unwrap(),
        "the host called the attacker's address"
    );

    // A good claim places once. The same claim for another job places
    // nothing; for the same job it is the home's retry of one placement and
    // gets the same answer, with no second guest.
    let good = claim(&signer, HOST, HOME, &shadow.url, t, t + 600);
    let first = place(
        &host.http,
        host.addr,
        &home_token,
        &host.request(JobId::new(2, 0), good.clone(), &shadow.url),
    )
    .await;
    assert!(
        rejected(&first).is_none(),
        "the good claim was refused: {first:?}"
    );
    let r = place(
        &host.http,
        host.addr,
        &home_token,
        &host.request(JobId::new(2, 1), good.clone(), &shadow.url),
    )
    .await;
    assert_eq!(
        rejected(&r),
        Some(RejectReason::BadClaim),
        "a claim was used twice: {r:?}"
    );
    let again = place(
        &host.http,
        host.addr,
        &home_token,
        &host.request(JobId::new(2, 0), good.clone(), &shadow.url),
    )
    .await;
    assert_eq!(again, first, "a retried placement got another answer");

    // Placements not from the home the claim names: another valid station,
    // a user, an administrator.
    let fresh = claim(&signer, HOST, HOME, &shadow.url, t, t + 600);
    for (who, token, status) in [
        ("another station", host.keys.station("mallory"), 403),
        ("a user", host.keys.user("alice"), 403),
        ("an administrator", host.keys.admin("root"), 403),
    ] {
        let (s, body) = host
            .place_as(
                &token,
                &host.request(JobId::new(3, 0), fresh.clone(), &shadow.url),
            )
            .await;
        assert_eq!(s, status, "{who}: {body}");
    }
    let guests = host.guests().await;
    assert_eq!(
        guests.iter().map(|g| g.info.job).collect::<Vec<_>>(),
        vec![JobId::new(2, 0)],
        "only the one good placement runs"
    );
    // The fresh claim was not spent by the refused callers: the home may
    // still use it.
    let r = place(
        &host.http,
        host.addr,
        &home_token,
        &host.request(JobId::new(3, 0), fresh, &shadow.url),
    )
    .await;
    assert!(rejected(&r).is_none(), "{r:?}");
    host.stop().await;
}

/// Waits until the shadow heard `job` complete.
async fn completed(shadow: &Shadow, job: JobId) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while shadow.report(job, JobEventKind::Completed).is_none() {
        assert!(Instant::now() < deadline, "job {job} did not complete");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Claim reuse (issue 15): a home places its next job on a claim it holds
/// once the last one completed, each placement with the next number under
/// the claim. A replayed placement (an old number, a skipped one, the
/// claim's first placement again), one while the claim's job still runs,
/// one with a claim never used, and one from another station place
/// nothing; the claim goes back only with the claim as the credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_claim_takes_each_placement_once() {
    if skip_unless_root("places guests as slot accounts") {
        return;
    }
    let _l = serial_lock();
    let dir = shared_tempdir();
    let host = Host::start(dir.path()).await;
    let shadow = Shadow::start().await;
    let signer = host.keys.signer().clone();
    let home_token = host.keys.station(HOME);
    let t = now();
    let good = claim(&signer, HOST, HOME, &shadow.url, t, t + 600);
    // A short job: `sleep 1`, nothing to fetch.
    let req = |job: JobId, seq: u64, secs: &str| {
        let mut r = host.request(job, good.clone(), &shadow.url);
        r.description.arguments = vec![secs.into()];
        r.claim_seq = seq;
        r
    };
    let go = |r: PlacementRequest| {
        let (http, addr, token) = (host.http.clone(), host.addr, home_token.clone());
        async move { place(&http, addr, &token, &r).await }
    };

    // A claim never placed with: no later placement under it.
    let unused = claim(&signer, HOST, HOME, &shadow.url, t, t + 600);
    let mut r = host.request(JobId::new(5, 0), unused, &shadow.url);
    r.claim_seq = 1;
    assert_eq!(rejected(&go(r).await), Some(RejectReason::BadClaim));

    let first = go(req(JobId::new(4, 0), 0, "1")).await;
    assert!(rejected(&first).is_none(), "{first:?}");
    // The claim's job still runs: nothing else goes on it.
    let busy = go(req(JobId::new(4, 1), 1, "0")).await;
    assert_eq!(rejected(&busy), Some(RejectReason::BadClaim), "{busy:?}");
    completed(&shadow, JobId::new(4, 0)).await;

    // Replays of the claim's first placement, for its job or another.
    for job in [JobId::new(4, 0), JobId::new(4, 1)] {
        let r = go(req(job, 0, "0")).await;
        assert_eq!(rejected(&r), Some(RejectReason::BadClaim), "{job}: {r:?}");
    }
    // Another station, with its own token: not for this home's claim.
    let (status, body) = host
        .place_as(
            &host.keys.station("mallory"),
            &req(JobId::new(4, 1), 1, "0"),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    // A skipped number.
    let r = go(req(JobId::new(4, 1), 2, "0")).await;
    assert_eq!(rejected(&r), Some(RejectReason::BadClaim), "{r:?}");
    // The next number: the next job runs on the claim.
    let second = go(req(JobId::new(4, 1), 1, "60")).await;
    assert!(rejected(&second).is_none(), "{second:?}");
    // Its retry is the same answer (no second guest); a replay of the
    // number for another job places nothing.
    assert_eq!(go(req(JobId::new(4, 1), 1, "60")).await, second);
    let r = go(req(JobId::new(4, 2), 1, "0")).await;
    assert_eq!(rejected(&r), Some(RejectReason::BadClaim), "{r:?}");
    let jobs: Vec<JobId> = host.guests().await.iter().map(|g| g.info.job).collect();
    assert_eq!(
        jobs,
        vec![JobId::new(4, 1)],
        "one guest, the fresh placement's"
    );

    // Given back: not with a station token, only with the claim itself;
    // then it takes nothing more.
    let release = |token: String| {
        let (http, addr) = (host.http.clone(), host.addr);
        async move {
            http.post(format!("http://{addr}/v1/claims/release"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(release(home_token.clone()).await, 403);
    assert_eq!(release(good.clone()).await, 200);
    assert_eq!(host.vacate_as(&good, JobId::new(4, 1)).await, 202);
    completed_or_gone(&host, JobId::new(4, 1)).await;
    let r = go(req(JobId::new(4, 2), 2, "0")).await;
    assert_eq!(rejected(&r), Some(RejectReason::BadClaim), "{r:?}");
    host.stop().await;
}

/// Waits until `job` is no guest of `host` any more.
async fn completed_or_gone(host: &Host, job: JobId) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while host.guests().await.iter().any(|g| g.info.job == job) {
        assert!(Instant::now() < deadline, "job {job} did not leave");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_guests_home_or_an_admin_vacates_it() {
    if skip_unless_root("places guests as slot accounts") {
        return;
    }
    let _l = serial_lock();
    let dir = shared_tempdir();
    let host = Host::start(dir.path()).await;
    let shadow = Shadow::start().await;
    let t = now();
    let job = JobId::new(1, 0);
    let c = claim(host.keys.signer(), HOST, HOME, &shadow.url, t, t + 600);
    // The home places with the claim as its credential, as its scheduler
    // does.
    let r = place(
        &host.http,
        host.addr,
        &c,
        &host.request(job, c.clone(), &shadow.url),
    )
    .await;
    assert!(rejected(&r).is_none(), "{r:?}");
    // Another station by token or by its own claim on this host, a user,
    // and a claim between the home and another host: none stops the guest.
    for (who, token, status) in [
        ("another station", host.keys.station("mallory"), 403),
        (
            "another station's claim here",
            host.keys.claim(HOST, "mallory", &shadow.url),
            403,
        ),
        ("a user", host.keys.user("alice"), 403),
        (
            "the home's claim on another host",
            host.keys.claim("other", HOME, &shadow.url),
            401,
        ),
        (
            "another claim of the same home here",
            host.keys.claim(HOST, HOME, &shadow.url),
            403,
        ),
    ] {
        assert_eq!(host.vacate_as(&token, job).await, status, "{who}");
    }
    assert_eq!(
        host.guests().await.len(),
        1,
        "a refused vacate stopped the guest"
    );
    // The home, by the claim it placed with (as its scheduler does).
    assert_eq!(host.vacate_as(&c, job).await, 202);
    let t0 = Instant::now();
    while !host.guests().await.is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the guest never left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.stop().await;
}

/// Two homes' jobs of the same id run here at once (every home numbers
/// its clusters from 1): each is its own guest, and a vacate names the
/// guest by its caller's home, never by a home the request chooses. The
/// other home asking for the first home's job (`?home=`) is refused and
/// nothing stops; an administrator must name the home when the id is
/// ambiguous; each vacate stops exactly the guest it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_homes_jobs_of_one_id_are_two_guests_each_vacated_only_by_its_home() {
    if skip_unless_root("places guests as slot accounts") {
        return;
    }
    let _l = serial_lock();
    let dir = shared_tempdir();
    let host = Host::start(dir.path()).await;
    let shadow = Shadow::start().await;
    let t = now();
    let job = JobId::new(1, 0);
    const OTHER: &str = "home2";
    let mine = claim(host.keys.signer(), HOST, HOME, &shadow.url, t, t + 600);
    let theirs = claim(host.keys.signer(), HOST, OTHER, &shadow.url, t, t + 600);
    let r = place(
        &host.http,
        host.addr,
        &mine,
        &host.request(job, mine.clone(), &shadow.url),
    )
    .await;
    assert!(rejected(&r).is_none(), "{r:?}");
    let mut req = host.request(job, theirs.clone(), &shadow.url);
    req.home = OTHER.into();
    let r = place(&host.http, host.addr, &theirs, &req).await;
    assert!(
        rejected(&r).is_none(),
        "the other home's job of the same id: {r:?}"
    );
    let homes = |g: &[GuestListing]| {
        let mut v: Vec<(String, JobId)> = g
            .iter()
            .map(|l| (l.info.home.clone(), l.info.job))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        homes(&host.guests().await),
        [(HOME.to_string(), job), (OTHER.to_string(), job)]
    );
    let post = |token: String, query: &'static str| {
        let http = host.http.clone();
        let url = format!("http://{}/v1/guests/{job}/vacate{query}", host.addr);
        async move {
            http.post(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    // The other home by its claim or its token, naming the first home:
    // refused; an administrator without a home: asked to name one.
    assert_eq!(post(theirs.clone(), "?home=home").await, 403);
    assert_eq!(post(host.keys.station(OTHER), "?home=home").await, 403);
    assert_eq!(post(host.keys.admin("root"), "").await, 400);
    assert_eq!(
        host.guests().await.len(),
        2,
        "a refused vacate stopped a guest"
    );
    // The other home vacates its own job 1.0, and only that.
    assert_eq!(post(theirs.clone(), "").await, 202);
    let t0 = Instant::now();
    while host.guests().await.len() != 1 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the guest never left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(homes(&host.guests().await), [(HOME.to_string(), job)]);
    // An administrator naming the home.
    assert_eq!(post(host.keys.admin("root"), "?home=home2").await, 404);
    assert_eq!(post(host.keys.admin("root"), "?home=home").await, 202);
    while !host.guests().await.is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the guest never left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.stop().await;
}

/// A submit-only home with one job of a real user, recorded as placed on
/// [`HOST`].
struct Home {
    base: String,
    keys: TestKeys,
    running: Option<Running>,
    http: reqwest::Client,
    job: JobId,
    /// The claim the job was placed with.
    claim: String,
    _user: TestUser,
}

impl Home {
    async fn start(root: &Path) -> Home {
        reachable(&root.join("x")).unwrap();
        let keys = TestKeys::in_dir(&root.join("coord")).unwrap();
        let mut cfg = StationConfig {
            name: HOME.into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            state_dir: root.join(HOME),
            role: StationRole::SubmitOnly,
            placement_interval_secs: 0.0,
            user_socket: Some(root.join("home.sock")),
            ..Default::default()
        };
        common::give_credentials(&mut cfg, &keys, root);
        let (addr, running) = spawn_for_test(cfg).await.unwrap();
        let user = TestUser::create("trust").unwrap();
        let work = user.home().to_path_buf();
        let client = StationClient::new(format!("http://{addr}"), keys.user(user.name())).unwrap();
        let sub = parse_submit(
            "executable = /bin/true\ntransfer_executable = false\nqueue\n",
            &SubmitContext::new("job.sub", user.name()),
        )
        .unwrap();
        let resp = client
            .submit(&SubmitBody {
                protocol: PROTOCOL_VERSION,
                submission: sub,
                submit_dir: Some(work.display().to_string()),
            })
            .await
            .unwrap();
        let job = resp.jobs[0];
        // Placed with a claim the coordinator granted, as the scheduler does.
        let claim = keys.claim(HOST, HOME, "http://127.0.0.1:9");
        running
            .home
            .remote_jobs()
            .begin_placing(job, HOST, "http://127.0.0.1:9", &claim, None);
        running
            .home
            .queue()
            .record_placement(
                job,
                HOST,
                "http://127.0.0.1:9",
                &claim,
                gleaner_core::time::Time::ZERO,
            )
            .unwrap();
        Home {
            base: format!("http://{addr}"),
            keys,
            running: Some(running),
            http: reqwest::Client::new(),
            job,
            claim,
            _user: user,
        }
    }

    fn state(&self) -> JobState {
        let home = &self.running.as_ref().unwrap().home;
        home.queue().get(self.job).unwrap().unwrap().state
    }

    fn report(&self, host: &str, event: JobEventKind, state: JobState) -> JobStatusReport {
        JobStatusReport {
            protocol: PROTOCOL_VERSION,
            job_id: self.job,
            host: host.into(),
            event,
            state,
            at: gleaner_core::time::Time::ZERO,
            detail: "exit 0".into(),
            usage: None,
            run: None,
            start_failure: None,
            hold_code: None,
        }
    }

    /// Every endpoint a host uses for the job, as `token`; the statuses.
    async fn try_all(&self, token: &str, claimed_host: &str) -> Vec<(String, u16)> {
        let job = self.job;
        let b = &self.base;
        let report = self.report(
            claimed_host,
            JobEventKind::Completed,
            JobState::Completed { exit_code: 0 },
        );
        let lease = serde_json::json!({"host": claimed_host, "host_address": "http://127.0.0.1:1"});
        let reqs = [
            (
                "status",
                self.http
                    .post(format!("{b}/v1/jobs/{job}/status"))
                    .json(&report),
            ),
            (
                "lease",
                self.http
                    .post(format!("{b}/v1/shadow/{job}/lease"))
                    .json(&lease),
            ),
            (
                "input",
                self.http.get(format!("{b}/v1/shadow/{job}/input/job.sub")),
            ),
            (
                "output",
                self.http
                    .post(format!("{b}/v1/shadow/{job}/output/stdout?offset=0"))
                    .body("forged output"),
            ),
            (
                "file",
                self.http
                    .put(format!("{b}/v1/shadow/{job}/files/out.txt"))
                    .body("forged"),
            ),
            (
                "put checkpoint",
                self.http
                    .put(format!("{b}/v1/shadow/{job}/checkpoint"))
                    .body("x"),
            ),
            (
                "get checkpoint",
                self.http.get(format!("{b}/v1/shadow/{job}/checkpoint")),
            ),
        ];
        let mut out = Vec::new();
        for (what, r) in reqs {
            let s = r.bearer_auth(token).send().await.unwrap().status().as_u16();
            out.push((what.to_string(), s));
        }
        out
    }

    async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_jobs_host_speaks_for_it_on_the_home() {
    if skip_unless_root("creates a Unix user") {
        return;
    }
    let dir = shared_tempdir();
    let home = Home::start(dir.path()).await;
    // Between stations the placement's claim is the credential: a claim
    // naming the home and the job's host is that host speaking. It says
    // the job started: heard (the control case).
    let host_claim = home.claim.clone();
    let r = home
        .http
        .post(format!("{}/v1/jobs/{}/status", home.base, home.job))
        .bearer_auth(&host_claim)
        .json(&home.report(HOST, JobEventKind::Started, JobState::Running))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let before = home.state();
    assert_eq!(before, JobState::Running);
    let mallory = home.keys.station("mallory");
    let user = home.keys.user(home._user.name());
    // Mallory's claim on this home's jobs (another placement of the home,
    // on mallory's station): it speaks for mallory, not for the job's host.
    let mallory_claim = home.keys.claim("mallory", HOME, "http://127.0.0.1:9");
    // A claim between the job's host and another home is nobody here.
    let foreign_claim = home.keys.claim(HOST, "elsewhere", "http://127.0.0.1:8");
    // Another placement's claim of the same two stations (or one read on
    // the network) speaks only for that placement.
    let other_placement = home.keys.claim(HOST, HOME, "http://127.0.0.1:9");
    for (who, token, claimed, status) in [
        (
            "another station, as itself",
            mallory.clone(),
            "mallory",
            403,
        ),
        ("another station, naming the job's host", mallory, HOST, 403),
        ("the job's owner", user, HOST, 403),
        (
            "another station's claim with this home",
            mallory_claim,
            HOST,
            403,
        ),
        (
            "a claim of the job's host with another home",
            foreign_claim,
            HOST,
            401,
        ),
        (
            "the claim of another placement on the job's host",
            other_placement,
            HOST,
            403,
        ),
    ] {
        for (what, got) in home.try_all(&token, claimed).await {
            assert_eq!(got, status, "{who}: {what}");
        }
        assert_eq!(home.state(), before, "{who} changed the job");
    }
    let detail = home
        .running
        .as_ref()
        .unwrap()
        .home
        .queue()
        .get(home.job)
        .unwrap()
        .unwrap();
    assert!(
        !detail.state.is_terminal(),
        "a refused report finished the job: {:?}",
        detail.state
    );
    // The job's host itself is heard.
    let r = home
        .http
        .post(format!("{}/v1/jobs/{}/status", home.base, home.job))
        .bearer_auth(&host_claim)
        .json(&home.report(
            HOST,
            JobEventKind::Completed,
            JobState::Completed { exit_code: 0 },
        ))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    assert_eq!(home.state(), JobState::Completed { exit_code: 0 });
    home.stop().await;
}
