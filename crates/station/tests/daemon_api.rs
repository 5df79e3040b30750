//! The station daemon's user and shadow APIs, on loopback.
//!
//! Jobs belong to Unix accounts: `alice` and `bob` are real accounts made
//! for each test when it runs as root (both are the test's own account
//! otherwise, and the tests about two users are skipped).

use gleaner_core::time::Time;
use gleaner_proto::api::{AppendResponse, JobInfo, SubmitBody};
use gleaner_proto::creds::{Claims, PoolSigner, Role};
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::{ErrorBody, JobStatusReport, PROTOCOL_VERSION};
use gleaner_station::client::{ClientError, JobQuery, StationClient};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::{TestKeys, TestOwner, skip_unless_root};
use std::path::{Path, PathBuf};

struct Env {
    dir: tempfile::TempDir,
    running: Option<Running>,
    base: String,
    keys: TestKeys,
    alice: TestOwner,
    bob: TestOwner,
    /// The submit directory, alice's.
    work: PathBuf,
}

/// The home station, with the public key and its own token from `keys`.
fn config(dir: &Path, keys: &TestKeys) -> StationConfig {
    StationConfig {
        name: "home".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: dir.join("state"),
        public_key: keys.public_key(),
        token_file: keys
            .station_token_file("home", &dir.join("home.token"))
            .unwrap(),
        role: StationRole::SubmitOnly,
        placement_interval_secs: 0.0,
        ..Default::default()
    }
}

impl Env {
    async fn start() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let keys = TestKeys::in_dir(&dir.path().join("coord")).unwrap();
        let (addr, running) = spawn_for_test(config(dir.path(), &keys)).await.unwrap();
        let alice = TestOwner::new("alice").unwrap();
        let bob = TestOwner::new("bob").unwrap();
        let work = dir.path().join("work");
        alice.dir(&work).unwrap();
        Env {
            dir,
            running: Some(running),
            base: format!("http://{addr}"),
            keys,
            alice,
            bob,
            work,
        }
    }

    /// The account behind a test's name for a user (`alice`, `bob`);
    /// other names (administrators, stations) are used as they are.
    fn name(&self, who: &str) -> String {
        match who {
            "alice" => self.alice.name().to_string(),
            "bob" => self.bob.name().to_string(),
            other => other.to_string(),
        }
    }

    async fn restart(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
        let (addr, running) = spawn_for_test(config(self.dir.path(), &self.keys))
            .await
            .unwrap();
        self.base = format!("http://{addr}");
        self.running = Some(running);
    }

    fn token(&self, who: &str, role: Role) -> String {
        self.keys.token(role, &self.name(who))
    }

    /// The home places job `id` on station `exec1`: from now on `exec1`
    /// (and no other station) speaks for it (table and queue row, as its scheduler does).
    fn place_on_exec1(&self, id: &str) {
        let home = &self.running.as_ref().unwrap().home;
        let id: JobId = id.parse().unwrap();
        home.remote_jobs()
            .begin_placing(id, "exec1", "http://127.0.0.1:9", "claim", None);
        home.queue()
            .record_placement(id, "exec1", "http://127.0.0.1:9", "claim", Time::ZERO)
            .unwrap();
    }

    fn client(&self, who: &str, role: Role) -> StationClient {
        StationClient::new(&self.base, self.token(who, role)).unwrap()
    }

    fn submit_dir(&self) -> &Path {
        &self.work
    }

    async fn submit(&self, who: &str, text: &str) -> Vec<JobId> {
        let sub = parse_submit(text, &SubmitContext::new("job.sub", self.name(who))).unwrap();
        let body = SubmitBody {
            protocol: PROTOCOL_VERSION,
            submission: sub,
            submit_dir: Some(self.submit_dir().to_string_lossy().into_owned()),
        };
        self.client(who, Role::User)
            .submit(&body)
            .await
            .unwrap()
            .jobs
    }

    async fn state(&self, id: &str) -> JobState {
        self.client("admin", Role::Admin)
            .job(id)
            .await
            .unwrap()
            .job
            .state
    }

    async fn report(&self, id: JobId, event: JobEventKind, state: JobState) -> reqwest::Response {
        let rep = JobStatusReport {
            protocol: PROTOCOL_VERSION,
            job_id: id,
            host: "exec1".into(),
            event,
            state,
            at: Time::ZERO,
            detail: String::new(),
            usage: None,
            run: None,
            start_failure: None,
            hold_code: None,
        };
        reqwest::Client::new()
            .post(format!("{}/v1/jobs/{id}/status", self.base))
            .bearer_auth(self.token("exec1", Role::Station))
            .json(&rep)
            .send()
            .await
            .unwrap()
    }
}

const TWO: &str = "executable = /bin/echo\narguments = hi\nqueue 2\n";

fn api_status(e: ClientError) -> u16 {
    e.status().unwrap_or(0)
}

#[tokio::test]
async fn submit_then_listed_and_detailed() {
    if skip_unless_root("alice and bob are two accounts") {
        return;
    }
    let env = Env::start().await;
    let ids = env.submit("alice", TWO).await;
    assert_eq!(ids, vec![JobId::new(1, 0), JobId::new(1, 1)]);
    let jobs: Vec<JobInfo> = env
        .client("alice", Role::User)
        .jobs(&JobQuery::default())
        .await
        .unwrap();
    assert_eq!(jobs.len(), 2);
    assert!(
        jobs.iter()
            .all(|j| j.owner == env.name("alice") && j.state == JobState::Idle)
    );
    assert_eq!(jobs[0].cmd, "/bin/echo hi");
    let d = env.client("alice", Role::User).job("1.1").await.unwrap();
    assert_eq!(d.events[0].kind, JobEventKind::Submitted);
    assert_eq!(
        d.description.iwd.as_deref(),
        Some(env.submit_dir().to_str().unwrap())
    );
    // The owner comes from the token, not from the body.
    let ids = env.submit("bob", TWO).await;
    assert_eq!(ids[0].cluster, 2);
    let bobs = env
        .client("alice", Role::User)
        .jobs(&JobQuery {
            owner: Some(env.name("bob")),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(bobs.len(), 2);
}

#[tokio::test]
async fn rm_hold_release_change_state() {
    let env = Env::start().await;
    env.submit("alice", TWO).await;
    let c = env.client("alice", Role::User);
    let r = c.hold("1.0", Some("wait for data")).await.unwrap();
    assert_eq!(r.changed, vec![JobId::new(1, 0)]);
    assert_eq!(
        env.state("1.0").await,
        JobState::Held {
            reason: "wait for data".into()
        }
    );
    // Releasing a job that is not held is a conflict and changes nothing.
    assert_eq!(api_status(c.release("1.1", None).await.unwrap_err()), 409);
    c.release("1.0", None).await.unwrap();
    assert_eq!(env.state("1.0").await, JobState::Idle);
    // A cluster id means all its procs.
    let r = c.rm("1", None).await.unwrap();
    assert_eq!(r.changed.len(), 2);
    assert_eq!(env.state("1.1").await, JobState::Removed);
    assert!(c.jobs(&JobQuery::default()).await.unwrap().is_empty());
    assert_eq!(c.history(Some(&env.name("alice"))).await.unwrap().len(), 2);
    assert_eq!(api_status(c.rm("7.0", None).await.unwrap_err()), 404);
}

#[tokio::test]
async fn another_users_job_is_forbidden() {
    if skip_unless_root("alice and bob are two accounts") {
        return;
    }
    let env = Env::start().await;
    env.submit("alice", TWO).await;
    let bob = env.client("bob", Role::User);
    assert_eq!(api_status(bob.rm("1.0", None).await.unwrap_err()), 403);
    assert_eq!(api_status(bob.hold("1", None).await.unwrap_err()), 403);
    assert_eq!(
        api_status(bob.output("1.0", "stdout", 0).await.unwrap_err()),
        403
    );
    assert_eq!(env.state("1.0").await, JobState::Idle);
    assert_eq!(env.state("1.1").await, JobState::Idle);
    // An administrator may.
    env.client("root", Role::Admin)
        .rm("1.0", None)
        .await
        .unwrap();
    assert_eq!(env.state("1.0").await, JobState::Removed);
}

#[tokio::test]
async fn bad_tokens_are_401() {
    let env = Env::start().await;
    env.submit("alice", TWO).await;
    let http = reqwest::Client::new();
    let url = format!("{}/v1/jobs", env.base);
    let r = http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = http.get(&url).bearer_auth("garbage").send().await.unwrap();
    assert_eq!(r.status(), 401);
    let other = PoolSigner::from_seed(&[7; 32])
        .sign(&Claims {
            subject: "alice".into(),
            role: Role::Admin,
            issued_at: 0,
            expires_at: Some(u64::MAX),
            token_id: "forged".into(),
        })
        .unwrap();
    let r = http
        .post(format!("{}/v1/jobs/1.0/rm", env.base))
        .bearer_auth(&other)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let body: ErrorBody = r.json().await.unwrap();
    assert_eq!(body.error.code.http_status(), 401);
    let expired = env.keys.sign(&Claims {
        subject: "alice".into(),
        role: Role::User,
        issued_at: 0,
        expires_at: Some(1),
        token_id: "old".into(),
    });
    let r = http.get(&url).bearer_auth(&expired).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(env.state("1.0").await, JobState::Idle);
}

#[tokio::test]
async fn garbage_is_400_and_the_server_keeps_serving() {
    let env = Env::start().await;
    let http = reqwest::Client::new();
    let tok = env.token("alice", Role::User);
    for body in [
        "garbage",
        "{",
        "{\"submission\": 5}",
        "{\"protocol\": 1, \"submission\": {\"file_name\": \"x\"",
        "",
    ] {
        let r = http
            .post(format!("{}/v1/submit", env.base))
            .bearer_auth(&tok)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "body {body:?}");
        let e: ErrorBody = r.json().await.unwrap();
        assert!(e.error.field.is_some(), "{e}");
    }
    let r = http
        .post(format!("{}/v1/submit", env.base))
        .bearer_auth(&tok)
        .body("{\"protocol\": 1}")
        .send()
        .await
        .unwrap();
    let e: ErrorBody = r.json().await.unwrap();
    assert_eq!(e.error.field.as_deref(), Some("submission"));
    for (path, code) in [
        ("/v1/jobs/abc", 400),
        ("/v1/jobs/99.0", 404),
        ("/v1/jobs?state=bogus", 400),
        ("/v1/nowhere", 404),
    ] {
        let r = http
            .get(format!("{}{path}", env.base))
            .bearer_auth(&tok)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), code, "{path}");
    }
    let r = http
        .post(format!("{}/v1/jobs/1.0/hold", env.base))
        .bearer_auth(&tok)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    env.submit("alice", TWO).await;
    let r = http
        .post(format!("{}/v1/jobs/1.0/hold", env.base))
        .bearer_auth(&tok)
        .body("{\"reason\": 3}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(env.state("1.0").await, JobState::Idle);
}

async fn append(env: &Env, id: &str, off: u64, data: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!(
            "{}/v1/shadow/{id}/output/stdout?offset={off}",
            env.base
        ))
        .bearer_auth(env.token("exec1", Role::Station))
        .body(data.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn output_append_is_idempotent_and_rejects_gaps() {
    let env = Env::start().await;
    let ids = env.submit("alice", TWO).await;
    // Not placed anywhere: exec1 does not speak for it, and nobody may
    // write output of a job that does not run (an administrator: 409).
    assert_eq!(append(&env, "1.0", 0, "x").await.status(), 403);
    let r = reqwest::Client::new()
        .post(format!("{}/v1/shadow/1.0/output/stdout?offset=0", env.base))
        .bearer_auth(env.token("root", Role::Admin))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    env.place_on_exec1("1.0");
    let r = env
        .report(ids[0], JobEventKind::Started, JobState::Running)
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(env.state("1.0").await, JobState::Running);
    let len = |r: AppendResponse| r.length;
    assert_eq!(
        len(append(&env, "1.0", 0, "hello ").await.json().await.unwrap()),
        6
    );
    assert_eq!(
        len(append(&env, "1.0", 0, "hello ").await.json().await.unwrap()),
        6
    );
    assert_eq!(
        len(append(&env, "1.0", 3, "lo world")
            .await
            .json()
            .await
            .unwrap()),
        11
    );
    assert_eq!(append(&env, "1.0", 20, "gap").await.status(), 409);
    let c = env.client("alice", Role::User);
    assert_eq!(c.output("1.0", "stdout", 0).await.unwrap(), b"hello world");
    assert_eq!(c.output("1.0", "stdout", 6).await.unwrap(), b"world");
    assert_eq!(c.output("1.0", "stderr", 0).await.unwrap(), b"");
    // A bounded piece, and the whole length (what `glean tail` reads).
    assert_eq!(
        c.output_part("1.0", "stdout", 3, Some(4)).await.unwrap(),
        (b"lo w".to_vec(), Some(11))
    );
    assert_eq!(
        c.output_part("1.0", "stdout", u64::MAX, Some(0))
            .await
            .unwrap(),
        (Vec::new(), Some(11))
    );
    let r = reqwest::Client::new()
        .get(format!("{}/v1/jobs/1.0/output/stdout?max=lots", env.base))
        .bearer_auth(env.token("alice", Role::User))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Users may not write a job's output.
    let r = reqwest::Client::new()
        .post(format!(
            "{}/v1/shadow/1.0/output/stdout?offset=11",
            env.base
        ))
        .bearer_auth(env.token("alice", Role::User))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // A retried report is accepted and changes nothing.
    let r = env
        .report(ids[0], JobEventKind::Started, JobState::Running)
        .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn inputs_are_served_and_traversal_refused() {
    let env = Env::start().await;
    let d = env.submit_dir();
    std::fs::write(d.join("run.sh"), "#!/bin/sh\ncat in.txt\n").unwrap();
    std::fs::write(d.join("in.txt"), "input data").unwrap();
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/more.txt"), "more").unwrap();
    std::fs::write(d.join("secret.txt"), "no").unwrap();
    env.submit(
        "alice",
        "executable = run.sh\ntransfer_input_files = in.txt, sub/more.txt\nqueue\n",
    )
    .await;
    let http = reqwest::Client::new();
    let daemon = env.token("exec1", Role::Station);
    let get = |name: &str| {
        http.get(format!("{}/v1/shadow/1.0/input/{name}", env.base))
            .bearer_auth(&daemon)
            .send()
    };
    // Before the home places the job on exec1, exec1 gets nothing.
    assert_eq!(get("in.txt").await.unwrap().status(), 403);
    env.place_on_exec1("1.0");
    assert_eq!(
        get("in.txt").await.unwrap().text().await.unwrap(),
        "input data"
    );
    assert_eq!(get("run.sh").await.unwrap().status(), 200);
    assert_eq!(
        get("sub%2Fmore.txt").await.unwrap().text().await.unwrap(),
        "more"
    );
    assert_eq!(get("more.txt").await.unwrap().text().await.unwrap(), "more");
    for bad in [
        "secret.txt",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2Fetc%2Fpasswd",
        "sub%2F..%2Fsecret.txt",
    ] {
        let r = get(bad).await.unwrap();
        assert_eq!(r.status(), 403, "{bad}");
    }
    // Nor does another station, or a user token, once it is placed.
    for tok in [
        env.token("alice", Role::User),
        env.token("exec2", Role::Station),
    ] {
        let r = http
            .get(format!("{}/v1/shadow/1.0/input/in.txt", env.base))
            .bearer_auth(tok)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
    }
}

#[tokio::test]
async fn completion_delivers_outputs_and_user_log() {
    let env = Env::start().await;
    let ids = env
        .submit(
            "alice",
            "executable = /bin/echo\noutput = out.txt\nerror = err.txt\nlog = job.log\nqueue\n",
        )
        .await;
    env.place_on_exec1("1.0");
    env.report(ids[0], JobEventKind::Started, JobState::Running)
        .await;
    assert_eq!(append(&env, "1.0", 0, "result\n").await.status(), 200);
    let daemon = env.token("exec1", Role::Station);
    let http = reqwest::Client::new();
    let r = http
        .put(format!("{}/v1/shadow/1.0/files/data.bin", env.base))
        .bearer_auth(&daemon)
        .body(vec![1u8, 2, 3])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .put(format!("{}/v1/shadow/1.0/files/a%2F..%2Fb", env.base))
        .bearer_auth(&daemon)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = env
        .report(
            ids[0],
            JobEventKind::Completed,
            JobState::Completed { exit_code: 3 },
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(env.state("1.0").await, JobState::Completed { exit_code: 3 });
    let d = env.submit_dir();
    assert_eq!(
        std::fs::read_to_string(d.join("out.txt")).unwrap(),
        "result\n"
    );
    assert_eq!(std::fs::read_to_string(d.join("err.txt")).unwrap(), "");
    assert_eq!(std::fs::read(d.join("data.bin")).unwrap(), vec![1, 2, 3]);
    let log = std::fs::read_to_string(d.join("job.log")).unwrap();
    assert!(log.starts_with("000 (001.000.000) "), "{log}");
    assert!(log.contains("001 (001.000.000)"), "{log}");
    assert!(
        log.contains("005 (001.000.000)") && log.contains("return value 3"),
        "{log}"
    );
    // Late output after completion is refused.
    assert_eq!(append(&env, "1.0", 7, "late").await.status(), 409);
}

#[tokio::test]
async fn restart_keeps_every_job() {
    if skip_unless_root("alice and bob are two accounts") {
        return;
    }
    let mut env = Env::start().await;
    env.submit("alice", TWO).await;
    env.submit("bob", "executable = /bin/true\nqueue 3\n").await;
    env.client("alice", Role::User)
        .hold("1.1", None)
        .await
        .unwrap();
    env.restart().await;
    let jobs = env
        .client("alice", Role::User)
        .jobs(&JobQuery::default())
        .await
        .unwrap();
    assert_eq!(jobs.len(), 5);
    assert!(matches!(env.state("1.1").await, JobState::Held { .. }));
    // Cluster ids keep counting after a restart.
    let ids = env.submit("alice", TWO).await;
    assert_eq!(ids[0].cluster, 3);
}

/// `/v1/place` settles who is calling before it reads the body: a user, an
/// administrator or no credential at all is refused whatever the body
/// holds, and only a station's malformed body is parsed, to a JSON error
/// naming the field.
#[tokio::test]
async fn place_checks_the_caller_before_the_body() {
    let dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(&dir.path().join("coord")).unwrap();
    let mut cfg = config(dir.path(), &keys);
    cfg.name = "host".into();
    cfg.token_file = keys
        .station_token_file("host", &dir.path().join("host.token"))
        .unwrap();
    cfg.role = StationRole::ExecuteOnly;
    cfg.isolation.cgroups = gleaner_station::isolation::CgroupMode::Off;
    cfg.isolation.slot_prefix = gleaner_testkit::slot_prefix();
    let (addr, running) = spawn_for_test(cfg).await.unwrap();
    let url = format!("http://{addr}/v1/place");
    let http = reqwest::Client::new();
    let post = |tok: Option<String>, body: &'static str| {
        let mut r = http.post(&url).body(body);
        if let Some(t) = tok {
            r = r.bearer_auth(t);
        }
        async move {
            let r = r.send().await.unwrap();
            let status = r.status().as_u16();
            let e: ErrorBody = r.json().await.unwrap();
            (status, e)
        }
    };
    let user = keys.user("alice");
    let admin = keys.admin("root");
    for body in ["garbage", "{\"protocol\": 1}", ""] {
        let (s, e) = post(None, body).await;
        assert_eq!(s, 401, "no credential, body {body:?}: {e}");
        let (s, e) = post(Some(user.clone()), body).await;
        assert_eq!(s, 403, "user, body {body:?}: {e}");
        let (s, e) = post(Some(admin.clone()), body).await;
        assert_eq!(s, 403, "admin, body {body:?}: {e}");
        assert_eq!(e.error.field.as_deref(), Some("home"), "{e}");
    }
    let station = keys.station("home");
    let (s, e) = post(Some(station.clone()), "garbage").await;
    assert_eq!((s, e.error.field.as_deref()), (400, Some("body")), "{e}");
    let (s, e) = post(Some(station), "{\"protocol\": 1}").await;
    assert_eq!(s, 400, "{e}");
    assert!(e.error.field.as_deref().is_some_and(|f| f != "body"), "{e}");
    running.stop().await;
}
