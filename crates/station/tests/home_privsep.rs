//! The home side of issue 12, attacked with real Unix users made by the
//! test (root needed; skipped with a printed reason otherwise): users are
//! Unix users, everything the home does with a user's files is done as
//! that user, and one user cannot touch another's jobs, over the user
//! socket or over TCP.
//!
//! Every refusal is checked for "no state change": the queue is as before,
//! no file was created, and a file an attack aims at keeps its content and
//! mtime.
//!
//! Requests on the user socket are made from a process running as the
//! user: this test binary, re-executed as that user, runs
//! [`peer_request_helper`] (a no-op when run as a test).

use gleaner_core::time::Time;
use gleaner_proto::api::{JobInfo, SubmitBody};
use gleaner_proto::creds::Role;
use gleaner_proto::job::{JobEventKind, JobId, JobState};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::{JobStatusReport, PROTOCOL_VERSION};
use gleaner_station::client::{JobQuery, StationClient};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::home::dagman::{DagOptions, DagState, DagSubmitBody};
use gleaner_station::node::{Running, spawn_for_test};
use gleaner_testkit::{TestKeys, TestUser, reachable, skip_unless_root};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt, lchown, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Environment of the re-executed helper: the socket and the request.
const HELPER_SOCKET: &str = "GLEANER_TEST_PEER_SOCKET";
const HELPER_REQUEST: &str = "GLEANER_TEST_PEER_REQUEST";
const MARK: &str = "----gleaner-peer-response----";
const END: &str = "----gleaner-peer-end----";

/// Run as a test, nothing. Re-executed as a user with the two variables
/// set, one HTTP/1.0 request (never chunked) on the user socket, the raw
/// response printed between [`MARK`] and [`END`].
#[test]
fn peer_request_helper() {
    let (Ok(sock), Ok(req)) = (std::env::var(HELPER_SOCKET), std::env::var(HELPER_REQUEST)) else {
        return;
    };
    let mut parts = req.splitn(3, '\n');
    let (method, path, body) = (
        parts.next().unwrap_or("GET"),
        parts.next().unwrap_or("/"),
        parts.next().unwrap_or(""),
    );
    let mut s = std::os::unix::net::UnixStream::connect(&sock).expect("connect");
    let sent = write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A refusal may come, and the server close, before the whole body is
    // sent (authentication needs only the headers): the answer is still
    // there to read.
    if let Err(e) = sent {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "send: {e}");
    }
    let mut out = String::new();
    s.read_to_string(&mut out).expect("receive");
    println!("{MARK}{out}{END}");
}

struct Env {
    dir: tempfile::TempDir,
    running: Option<Running>,
    base: String,
    keys: TestKeys,
    socket: PathBuf,
    a: TestUser,
    b: TestUser,
}

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
        user_socket: Some(dir.join("state/user.sock")),
        ..Default::default()
    }
}

impl Env {
    /// A station run by root and two users, A and B; `None` (skipped) when
    /// not root.
    async fn start(test: &str) -> Option<Env> {
        Self::start_with(test, |_, _| {}).await
    }

    /// [`Env::start`] with the station's configuration adjusted once the
    /// users exist (`tweak(config, b)`).
    async fn start_with(
        test: &str,
        tweak: impl FnOnce(&mut StationConfig, &TestUser),
    ) -> Option<Env> {
        if skip_unless_root(&format!("{test}: creates Unix users")) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        // The users must reach the socket below it.
        reachable(&dir.path().join("x")).unwrap();
        let keys = TestKeys::in_dir(&dir.path().join("coord")).unwrap();
        let a = TestUser::create("psepa").unwrap();
        let b = TestUser::create("psepb").unwrap();
        let mut cfg = config(dir.path(), &keys);
        tweak(&mut cfg, &b);
        let (addr, running) = spawn_for_test(cfg).await.unwrap();
        let env = Env {
            socket: dir.path().join("state/user.sock"),
            dir,
            running: Some(running),
            base: format!("http://{addr}"),
            keys,
            a,
            b,
        };
        for u in [&env.a, &env.b] {
            let out = u.run("mkdir", &["-p", "job"]).unwrap();
            assert!(out.status.success(), "{out:?}");
        }
        Some(env)
    }

    fn job_dir(&self, u: &TestUser) -> PathBuf {
        u.home().join("job")
    }

    fn token(&self, name: &str, role: Role) -> String {
        self.keys.token(role, name)
    }

    /// The home places job `id` on station `exec1`, as its scheduler does
    /// (table and queue row): from now on `exec1` speaks for it.
    fn place_on_exec1(&self, id: JobId) {
        let home = &self.running.as_ref().unwrap().home;
        home.remote_jobs()
            .begin_placing(id, "exec1", "http://127.0.0.1:9", "claim", None);
        home.queue()
            .record_placement(id, "exec1", "http://127.0.0.1:9", "claim", Time::ZERO)
            .unwrap();
    }

    fn tcp(&self, name: &str, role: Role) -> StationClient {
        StationClient::new(&self.base, self.token(name, role)).unwrap()
    }

    /// An administrator that is no Unix account (admins need one only to
    /// submit).
    fn admin(&self) -> StationClient {
        self.tcp("gleaner-test-admin", Role::Admin)
    }

    fn body(&self, text: &str, dir: &Path) -> SubmitBody {
        SubmitBody {
            protocol: PROTOCOL_VERSION,
            submission: parse_submit(text, &SubmitContext::new("job.sub", "x")).unwrap(),
            submit_dir: Some(dir.display().to_string()),
        }
    }

    /// Every job in the queue, finished ones included.
    async fn queue(&self) -> Vec<JobInfo> {
        self.admin()
            .jobs(&JobQuery {
                all: true,
                ..Default::default()
            })
            .await
            .unwrap()
    }

    /// One request on the user socket from a process running as `u`: the
    /// status and the body.
    async fn peer(&self, u: &TestUser, method: &str, path: &str, body: &str) -> (u16, String) {
        let mut cmd = u.command(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "peer_request_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_SOCKET, &self.socket)
        .env(HELPER_REQUEST, format!("{method}\n{path}\n{body}"));
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let Some(resp) = text
            .split_once(MARK)
            .and_then(|(_, r)| r.split_once(END))
            .map(|(r, _)| r)
        else {
            panic!(
                "the helper as {} gave no response: {text}\n{}",
                u.name(),
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let status: u16 = resp
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {resp}"));
        let body = resp.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_string())
    }

    async fn peer_submit(&self, u: &TestUser, body: &SubmitBody) -> (u16, String) {
        self.peer(
            u,
            "POST",
            "/v1/submit",
            &serde_json::to_string(body).unwrap(),
        )
        .await
    }

    /// A status report from exec1; a `Started` one is preceded by the
    /// placement on exec1.
    async fn report(&self, id: JobId, event: JobEventKind, state: JobState) {
        if event == JobEventKind::Started {
            self.place_on_exec1(id);
        }
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
        let r = reqwest::Client::new()
            .post(format!("{}/v1/jobs/{id}/status", self.base))
            .bearer_auth(self.token("exec1", Role::Station))
            .json(&rep)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    }

    async fn append(&self, id: JobId, stream: &str, data: &str) {
        let r = reqwest::Client::new()
            .post(format!(
                "{}/v1/shadow/{id}/output/{stream}?offset=0",
                self.base
            ))
            .bearer_auth(self.token("exec1", Role::Station))
            .body(data.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }

    /// Runs job `id` to completion through the shadow, with `stdout`.
    async fn complete(&self, id: JobId, stdout: &str) {
        self.report(id, JobEventKind::Started, JobState::Running)
            .await;
        self.append(id, "stdout", stdout).await;
        self.report(
            id,
            JobEventKind::Completed,
            JobState::Completed { exit_code: 0 },
        )
        .await;
    }

    fn spool(&self, id: JobId) -> PathBuf {
        self.dir.path().join("state/spool").join(id.to_string())
    }

    async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }
}

/// Content and mtime of a file, the mtime first set well in the past so
/// that any write would show.
fn freeze(path: &Path) -> (Vec<u8>, SystemTime) {
    let past = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(past))
        .unwrap();
    snapshot(path)
}

fn snapshot(path: &Path) -> (Vec<u8>, SystemTime) {
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().modified().unwrap(),
    )
}

/// A root-only file (0600 in a 0755 root directory under the test's
/// directory) holding `data`.
fn root_only_file(dir: &Path, data: &str) -> PathBuf {
    let d = dir.join("rootfiles");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = d.join("precious");
    std::fs::write(&f, data).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    f
}

/// A refusal: the status, and the error's field and message.
fn refusal(status: u16, body: &str) -> (u16, String, String) {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    (
        status,
        v["error"]["field"].as_str().unwrap_or("").to_string(),
        v["error"]["message"].as_str().unwrap_or("").to_string(),
    )
}

async fn tcp_refusal(
    r: Result<impl std::fmt::Debug, gleaner_station::client::ClientError>,
) -> (u16, String, String) {
    match r {
        Err(gleaner_station::client::ClientError::Api { status, body }) => (
            status,
            body.error.field.clone().unwrap_or_default(),
            body.error.message.clone(),
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn etc_shadow_as_an_input_is_refused_at_submit() {
    let Some(env) = Env::start("etc_shadow_as_an_input").await else {
        return;
    };
    // Owner and mode only: other tests (of this run or another) add and
    // remove accounts, which rewrites /etc/shadow's content.
    let shadow_meta = || {
        let m = std::fs::metadata("/etc/shadow").unwrap();
        (m.uid(), m.gid(), m.mode())
    };
    let shadow = shadow_meta();
    let dir = env.job_dir(&env.a);
    for (key, text) in [
        (
            "transfer_input_files",
            "executable = /bin/cat\ntransfer_input_files = /etc/shadow\nqueue\n",
        ),
        (
            "input",
            "executable = /bin/cat\ninput = /etc/shadow\nqueue\n",
        ),
    ] {
        // Over TCP with A's token, and on the socket as A.
        let r = env
            .tcp(env.a.name(), Role::User)
            .submit(&env.body(text, &dir))
            .await;
        let (status, field, msg) = tcp_refusal(r).await;
        assert_eq!((status, field.as_str()), (400, key), "{msg}");
        assert!(
            msg.contains(&format!("{key} = /etc/shadow")) && msg.contains("Permission denied"),
            "{msg}"
        );
        let (status, body) = env.peer_submit(&env.a, &env.body(text, &dir)).await;
        let (status, field, msg) = refusal(status, &body);
        assert_eq!((status, field.as_str()), (400, key), "{msg}");
    }
    assert!(env.queue().await.is_empty(), "nothing was queued");
    assert_eq!(shadow_meta(), shadow);
    env.stop().await;
}

#[tokio::test]
async fn an_input_swapped_for_etc_shadow_after_submit_is_not_served() {
    let Some(env) = Env::start("an_input_swapped_after_submit").await else {
        return;
    };
    let dir = env.job_dir(&env.a);
    let data = dir.join("data.txt");
    assert!(
        env.a
            .run("sh", &["-c", &format!("echo mine > {}", data.display())])
            .unwrap()
            .status
            .success()
    );
    let id = env
        .tcp(env.a.name(), Role::User)
        .submit(&env.body(
            "executable = /bin/cat\ntransfer_input_files = data.txt\nqueue\n",
            &dir,
        ))
        .await
        .unwrap()
        .jobs[0];
    // A swaps the declared input for a link to /etc/shadow (A's own link:
    // followed, but read with A's rights).
    std::fs::remove_file(&data).unwrap();
    assert!(
        env.a
            .run("ln", &["-s", "/etc/shadow", data.to_str().unwrap()])
            .unwrap()
            .status
            .success()
    );
    env.place_on_exec1(id);
    let r = reqwest::Client::new()
        .get(format!("{}/v1/shadow/{id}/input/data.txt", env.base))
        .bearer_auth(env.token("exec1", Role::Station))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("Permission denied") && !text.contains("root:"),
        "{text}"
    );
    env.stop().await;
}

#[tokio::test]
async fn dotdot_output_is_created_as_the_user_or_refused() {
    let Some(env) = Env::start("dotdot_output").await else {
        return;
    };
    let dir = env.job_dir(&env.a);
    let name = format!("gleaner-privsep-{}", std::process::id());
    let escaped = PathBuf::from("/tmp").join(&name);
    let _ = std::fs::remove_file(&escaped);
    // /root is root's alone: refused at submit, nothing created.
    let r = env
        .tcp(env.a.name(), Role::User)
        .submit(&env.body(
            &format!("executable = /bin/echo\noutput = ../../../../root/{name}\nqueue\n"),
            &dir,
        ))
        .await;
    let (status, field, msg) = tcp_refusal(r).await;
    assert_eq!((status, field.as_str()), (400, "output"), "{msg}");
    assert!(!Path::new("/root").join(&name).exists());
    assert!(env.queue().await.is_empty());
    // /tmp is everyone's: accepted, and the file is A's, not root's.
    let id = env
        .tcp(env.a.name(), Role::User)
        .submit(&env.body(
            &format!("executable = /bin/echo\noutput = ../../../../tmp/{name}\nqueue\n"),
            &dir,
        ))
        .await
        .unwrap()
        .jobs[0];
    env.complete(id, "out\n").await;
    let m = std::fs::metadata(&escaped).unwrap();
    assert_eq!((m.uid(), m.gid()), (env.a.uid(), env.a.gid()));
    assert_eq!(std::fs::read_to_string(&escaped).unwrap(), "out\n");
    std::fs::remove_file(&escaped).unwrap();
    env.stop().await;
}

#[tokio::test]
async fn error_and_log_in_a_root_only_directory_are_refused() {
    let Some(env) = Env::start("error_and_log_in_a_root_only_directory").await else {
        return;
    };
    let private = env.dir.path().join("rootonly");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dir = env.job_dir(&env.a);
    for key in ["error", "log"] {
        let text = format!(
            "executable = /bin/echo\n{key} = {}/x\nqueue\n",
            private.display()
        );
        let (status, body) = env.peer_submit(&env.a, &env.body(&text, &dir)).await;
        let (status, field, msg) = refusal(status, &body);
        assert_eq!((status, field.as_str()), (400, key), "{msg}");
        assert!(
            msg.contains(&format!("{key} = {}/x", private.display())),
            "{msg}"
        );
    }
    assert!(env.queue().await.is_empty());
    assert_eq!(std::fs::read_dir(&private).unwrap().count(), 0);
    env.stop().await;
}

#[tokio::test]
async fn symlinks_planted_before_submit_are_refused_at_submit() {
    let Some(env) = Env::start("symlinks_planted_before_submit").await else {
        return;
    };
    let dir = env.job_dir(&env.a);
    let precious = root_only_file(env.dir.path(), "root's");
    let before = freeze(&precious);
    // A's own link to a root-only file: followed, and A may not write it.
    assert!(
        env.a
            .run(
                "ln",
                &[
                    "-s",
                    precious.to_str().unwrap(),
                    dir.join("out.txt").to_str().unwrap()
                ]
            )
            .unwrap()
            .status
            .success()
    );
    // A link owned by B to a file of A's: never followed.
    let mine = dir.join("mine.txt");
    assert!(
        env.a
            .run("sh", &["-c", &format!("echo A > {}", mine.display())])
            .unwrap()
            .status
            .success()
    );
    let mine_before = freeze(&mine);
    symlink(&mine, dir.join("err.txt")).unwrap();
    lchown(dir.join("err.txt"), Some(env.b.uid()), Some(env.b.gid())).unwrap();
    for (key, text, why) in [
        (
            "output",
            "executable = /bin/echo\noutput = out.txt\nqueue\n",
            "Permission denied",
        ),
        (
            "error",
            "executable = /bin/echo\nerror = err.txt\nqueue\n",
            "refused to follow a symlink owned by uid",
        ),
    ] {
        let r = env
            .tcp(env.a.name(), Role::User)
            .submit(&env.body(text, &dir))
            .await;
        let (status, field, msg) = tcp_refusal(r).await;
        assert_eq!((status, field.as_str()), (400, key), "{msg}");
        assert!(msg.contains(why), "{msg}");
    }
    assert!(env.queue().await.is_empty());
    assert_eq!(snapshot(&precious), before);
    assert_eq!(snapshot(&mine), mine_before);
    env.stop().await;
}

#[tokio::test]
async fn symlinks_planted_after_submit_are_refused_at_delivery() {
    let Some(env) = Env::start("symlinks_planted_after_submit").await else {
        return;
    };
    let dir = env.job_dir(&env.a);
    let id = env
        .tcp(env.a.name(), Role::User)
        .submit(&env.body(
            "executable = /bin/echo\noutput = out.txt\nerror = err.txt\nlog = job.log\nqueue\n",
            &dir,
        ))
        .await
        .unwrap()
        .jobs[0];
    let precious = root_only_file(env.dir.path(), "root's");
    let before = freeze(&precious);
    assert!(
        env.a
            .run(
                "ln",
                &[
                    "-s",
                    precious.to_str().unwrap(),
                    dir.join("out.txt").to_str().unwrap()
                ]
            )
            .unwrap()
            .status
            .success()
    );
    let mine = dir.join("mine.txt");
    assert!(
        env.a
            .run("sh", &["-c", &format!("echo A > {}", mine.display())])
            .unwrap()
            .status
            .success()
    );
    let mine_before = freeze(&mine);
    symlink(&mine, dir.join("err.txt")).unwrap();
    lchown(dir.join("err.txt"), Some(env.b.uid()), Some(env.b.gid())).unwrap();

    env.report(id, JobEventKind::Started, JobState::Running)
        .await;
    env.append(id, "stdout", "payload\n").await;
    env.append(id, "stderr", "oops\n").await;
    env.report(
        id,
        JobEventKind::Completed,
        JobState::Completed { exit_code: 0 },
    )
    .await;
    // The job completes; neither target was written; the output stays in
    // the spool; the history and the user log say why.
    let d = env.admin().job(&id.to_string()).await.unwrap();
    assert_eq!(d.job.state, JobState::Completed { exit_code: 0 });
    let done = d.events.last().unwrap();
    assert!(
        done.detail.contains("output = out.txt")
            && done.detail.contains("error = err.txt")
            && done.detail.contains("kept in the spool")
            && done
                .detail
                .contains("refused to follow a symlink owned by uid"),
        "{}",
        done.detail
    );
    assert_eq!(snapshot(&precious), before);
    assert_eq!(snapshot(&mine), mine_before);
    assert_eq!(
        std::fs::read_to_string(env.spool(id).join("stdout")).unwrap(),
        "payload\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.spool(id).join("stderr")).unwrap(),
        "oops\n"
    );
    let log = dir.join("job.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("005 (") && text.contains("kept in the spool"),
        "{text}"
    );
    assert_eq!(std::fs::metadata(&log).unwrap().uid(), env.a.uid());
    // The daemon's state is its own: B cannot read the queue or the spool.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
    let state = env.dir.path().join("state");
    assert_eq!(mode(&state.join("queue.db")), 0o600);
    assert_eq!(mode(&state.join("spool")), 0o700);
    assert_eq!(mode(&env.spool(id)), 0o700);
    assert_eq!(mode(&env.spool(id).join("stdout")), 0o600);
    for f in [state.join("queue.db"), env.spool(id).join("stdout")] {
        let out = env.b.run("cat", &[f.to_str().unwrap()]).unwrap();
        assert!(!out.status.success() && out.stdout.is_empty(), "{f:?}");
    }
    env.stop().await;
}

#[tokio::test]
async fn a_token_for_a_name_with_no_account_is_refused() {
    let Some(env) = Env::start("a_token_for_a_name_with_no_account").await else {
        return;
    };
    let ghost = format!("gleaner-ghost-{}", std::process::id());
    let c = env.tcp(&ghost, Role::User);
    let dir = env.job_dir(&env.a);
    let r = c
        .submit(&env.body("executable = /bin/echo\nqueue\n", &dir))
        .await;
    let (status, _, msg) = tcp_refusal(r).await;
    assert_eq!(status, 403);
    assert!(msg.contains(&format!("no Unix account {ghost:?}")), "{msg}");
    let (status, _, _) = tcp_refusal(c.jobs(&JobQuery::default()).await).await;
    assert_eq!(status, 403);
    // An administrator without an account manages jobs but submits nothing.
    let r = env
        .admin()
        .submit(&env.body("executable = /bin/echo\nqueue\n", &dir))
        .await;
    assert_eq!(tcp_refusal(r).await.0, 403);
    assert!(env.queue().await.is_empty());
    env.stop().await;
}

#[tokio::test]
async fn root_never_submits_but_may_manage_every_job() {
    let Some(env) = Env::start("root_never_submits").await else {
        return;
    };
    let dir = env.job_dir(&env.a);
    let text = "executable = /bin/echo\nqueue\n";
    // Root on the socket (this test process) is the administrator root.
    let sock = StationClient::unix(&env.socket).unwrap();
    let me = sock.whoami().await.unwrap();
    // Only the user API is served on the socket.
    for path in [
        "/v1/shadow/1.0/input/x",
        "/v1/guests",
        "/v1/jobs/1.0/checkpoint",
    ] {
        let r = sock.get_json::<serde_json::Value>(path).await;
        assert_eq!(tcp_refusal(r).await.0, 404, "{path}");
    }
    assert_eq!(
        (me.name.as_str(), me.role.as_str(), me.via.as_str(), me.uid),
        ("root", "admin", "socket", Some(0))
    );
    for c in [
        sock.clone(),
        env.tcp("root", Role::User),
        env.tcp("root", Role::Admin),
    ] {
        let (status, _, msg) = tcp_refusal(c.submit(&env.body(text, &dir)).await).await;
        assert_eq!(status, 403);
        assert!(msg.contains("jobs never run as root"), "{msg}");
    }
    assert!(env.queue().await.is_empty());
    // Root may hold and remove anyone's job.
    let (status, _) = env
        .peer_submit(&env.b, &env.body(text, &env.job_dir(&env.b)))
        .await;
    assert_eq!(status, 200);
    sock.hold("1.0", Some("by root")).await.unwrap();
    sock.rm("1.0", None).await.unwrap();
    assert_eq!(env.queue().await[0].state, JobState::Removed);
    env.stop().await;
}

#[tokio::test]
async fn users_cannot_touch_each_others_jobs_on_either_transport() {
    let Some(env) = Env::start("users_cannot_touch_each_others_jobs").await else {
        return;
    };
    let b_dir = env.job_dir(&env.b);
    let (status, body) = env
        .peer_submit(
            &env.b,
            &env.body("executable = /bin/echo\noutput = out\nqueue\n", &b_dir),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let id = JobId::new(1, 0);
    env.report(id, JobEventKind::Started, JobState::Running)
        .await;
    env.append(id, "stdout", "B's secret\n").await;
    let events = env.admin().job("1.0").await.unwrap().events.len();
    let a_tcp = env.tcp(env.a.name(), Role::User);
    for (what, path) in [
        ("rm", "/v1/jobs/1.0/rm"),
        ("hold", "/v1/jobs/1/hold"),
        ("release", "/v1/jobs/1.0/release"),
    ] {
        let (status, body) = env.peer(&env.a, "POST", path, "").await;
        let (status, _, msg) = refusal(status, &body);
        assert_eq!(status, 403, "{what} on the socket: {msg}");
        assert!(
            msg.contains(&format!("belongs to {}", env.b.name())),
            "{msg}"
        );
        let r = match what {
            "rm" => a_tcp.rm("1.0", None).await,
            "hold" => a_tcp.hold("1", None).await,
            _ => a_tcp.release("1.0", None).await,
        };
        assert_eq!(tcp_refusal(r).await.0, 403, "{what} over TCP");
    }
    let (status, body) = env
        .peer(&env.a, "GET", "/v1/jobs/1.0/output/stdout", "")
        .await;
    assert_eq!(status, 403);
    assert!(!body.contains("secret"), "{body}");
    let r = a_tcp.output("1.0", "stdout", 0).await;
    assert_eq!(tcp_refusal(r).await.0, 403);
    // Nothing changed.
    let d = env.admin().job("1.0").await.unwrap();
    assert_eq!((d.job.state, d.events.len()), (JobState::Running, events));
    // B itself may, on the socket.
    let (status, body) = env
        .peer(&env.b, "GET", "/v1/jobs/1.0/output/stdout", "")
        .await;
    assert_eq!((status, body.as_str()), (200, "B's secret\n"));
    let (status, _) = env.peer(&env.b, "POST", "/v1/jobs/1.0/hold", "").await;
    assert_eq!(status, 200);
    env.stop().await;
}

#[tokio::test]
async fn a_peer_claiming_another_owner_in_the_body_submits_as_itself() {
    let Some(env) = Env::start("a_peer_claiming_another_owner").await else {
        return;
    };
    let (status, body) = env.peer(&env.a, "GET", "/v1/whoami", "").await;
    assert_eq!(status, 200);
    let me: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(me["name"], env.a.name());
    assert_eq!(me["via"], "socket");
    assert_eq!(me["uid"], env.a.uid());
    let mut b = env.body("executable = /bin/echo\nqueue 2\n", &env.job_dir(&env.a));
    b.submission.owner = env.b.name().to_string();
    let mut json: serde_json::Value = serde_json::to_value(&b).unwrap();
    json["owner"] = env.b.name().into();
    let (status, body) = env
        .peer(&env.a, "POST", "/v1/submit", &json.to_string())
        .await;
    assert_eq!(status, 200, "{body}");
    let q = env.queue().await;
    assert_eq!(q.len(), 2);
    assert!(q.iter().all(|j| j.owner == env.a.name()), "{q:?}");
    let d = env.admin().job("1.1").await.unwrap();
    assert_eq!(d.description.owner, env.a.name());
    env.stop().await;
}

/// Writes `text` to `path` as a file of `u`'s.
fn write_as(u: &TestUser, path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    lchown(path, Some(u.uid()), Some(u.gid())).unwrap();
}

/// The submission of DAG file `file` from `cwd`, with DAGMan
/// configuration file `config`.
fn dag(file: &Path, cwd: &Path, config: Option<&Path>) -> DagSubmitBody {
    DagSubmitBody {
        protocol: PROTOCOL_VERSION,
        files: vec![file.display().to_string()],
        cwd: cwd.display().to_string(),
        options: DagOptions {
            config: config.map(|c| c.display().to_string()),
            ..Default::default()
        },
        env: Default::default(),
    }
}

#[tokio::test]
async fn dags_are_read_and_their_nodes_submitted_as_their_owner() {
    let Some(env) = Env::start("dags_are_read_and_their_nodes_submitted_as_their_owner").await
    else {
        return;
    };
    let a = env.tcp(env.a.name(), Role::User);
    let dir = env.job_dir(&env.a);
    // A node reading /etc/shadow: the DAG is accepted (HTCondor's is too),
    // its node's submission refused as A, so the node fails and no job of
    // it ever enters the queue.
    write_as(&env.a, &dir.join("x.dag"), "JOB a a.sub\n");
    write_as(
        &env.a,
        &dir.join("a.sub"),
        "executable = /bin/cat\ninput = /etc/shadow\nqueue\n",
    );
    write_as(
        &env.a,
        &dir.join("once.config"),
        "DAGMAN_MAX_SUBMIT_ATTEMPTS = 1\n",
    );
    let id = a
        .submit_dag(&dag(
            &dir.join("x.dag"),
            &dir,
            Some(&dir.join("once.config")),
        ))
        .await
        .unwrap()
        .id;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let s = loop {
        let s = a.dag(id).await.unwrap();
        if s.state != DagState::Running {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "DAG still running: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(s.state, DagState::Failed, "{s:?}");
    assert!(s.nodes[0].error.contains("/etc/shadow"), "{s:?}");
    let q = env.queue().await;
    assert!(
        q.iter().all(|j| j.id.cluster == id),
        "only the DAG's own job: {q:?}"
    );
    // Its rescue DAG is A's file beside the DAG file.
    let rescue = dir.join("x.dag.rescue001");
    assert_eq!(s.rescue_file.as_deref(), rescue.to_str());
    assert_eq!(std::fs::metadata(&rescue).unwrap().uid(), env.a.uid());
    // A DAG file in a directory A may not write: refused (DAGMan's files
    // go beside it), nothing stored, nothing written there.
    let private = env.dir.path().join("rootonly");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(private.join("y.dag"), "JOB a a.sub\n").unwrap();
    std::fs::copy(dir.join("a.sub"), private.join("a.sub")).unwrap();
    let r = a.submit_dag(&dag(&private.join("y.dag"), &dir, None)).await;
    let (status, field, msg) = tcp_refusal(r).await;
    assert_eq!((status, field.as_str()), (400, "files"), "{msg}");
    assert!(msg.contains("cannot write"), "{msg}");
    assert_eq!(a.dags(None).await.unwrap().len(), 1);
    assert_eq!(std::fs::read_dir(&private).unwrap().count(), 2);
    env.stop().await;
}

#[tokio::test]
async fn a_guest_slot_account_on_the_user_socket_is_no_user() {
    // B is named like this station's slot accounts (`<prefix><n>`): a guest
    // running as a slot can reach the user socket from its sandbox, and must
    // not use the pool as a user.
    let Some(env) = Env::start_with("a_guest_slot_account_is_no_user", |cfg, b| {
        cfg.isolation.slot_prefix = b
            .name()
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .into();
    })
    .await
    else {
        return;
    };
    let dir = env.job_dir(&env.b);
    for (method, path, body) in [
        ("GET", "/v1/whoami", String::new()),
        ("GET", "/v1/jobs", String::new()),
        (
            "POST",
            "/v1/submit",
            serde_json::to_string(&env.body("executable = /bin/echo\nqueue\n", &dir)).unwrap(),
        ),
    ] {
        let (status, body) = env.peer(&env.b, method, path, &body).await;
        let (status, _, msg) = refusal(status, &body);
        assert_eq!(status, 403, "{method} {path}: {msg}");
        assert!(msg.contains("guest slot account"), "{msg}");
    }
    assert!(env.queue().await.is_empty());
    // A, an ordinary account, is served.
    let (status, _) = env.peer(&env.a, "GET", "/v1/whoami", "").await;
    assert_eq!(status, 200);
    env.stop().await;
}
