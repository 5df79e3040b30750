//! The station holds what is posted to `/v1/submit` to the submit
//! parser's limits and rules (issue 14, item 2), whatever the client:
//! each submission below is built as raw JSON, as a client that skips the
//! CLI's checks would send it, to a real station daemon. Each is refused
//! with a 400 and a JSON error naming file:line or the field; the daemon
//! answers afterwards and its queue is unchanged. The macro bomb's refusal
//! time and the test process's peak memory (the daemon runs in it) are
//! printed.

use gleaner_proto::wire::{ErrorBody, ErrorCode, PROTOCOL_VERSION};
use gleaner_station::config::{StationConfig, StationRole};
use gleaner_station::node::spawn_for_test;
use gleaner_testkit::{TestKeys, TestOwner};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Peak resident memory of this process so far, KiB (`VmHWM`).
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A `/v1/submit` body: one `queue` statement (on line `queue_line`) with
/// the assignments `vars` (name, value, line), `procs` procs.
fn body(work: &str, vars: &[(String, String, usize)], queue_line: usize, procs: usize) -> Value {
    let table: serde_json::Map<String, Value> = vars
        .iter()
        .map(|(name, value, line)| {
            (
                name.to_ascii_lowercase(),
                json!({"name": name, "value": value, "line": line}),
            )
        })
        .collect();
    let binding = json!({"step": 0, "item_index": 0, "items": {}});
    json!({
        "protocol": PROTOCOL_VERSION,
        "submit_dir": work,
        "submission": {
            "file_name": "bomb.sub",
            "owner": "whoever",
            "env": {},
            "batches": [{
                "line": queue_line,
                "statement": "",
                "vars": table,
                "procs": vec![binding; procs],
            }],
        },
    })
}

struct Station {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Station {
    /// Posts `body`; (status, error body if any).
    async fn submit(&self, body: &Value) -> (u16, Option<ErrorBody>) {
        let r = self
            .http
            .post(format!("{}/v1/submit", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (status, serde_json::from_str(&text).ok())
    }

    /// Every job of the queue, finished or not.
    async fn jobs(&self) -> Vec<Value> {
        let r = self
            .http
            .get(format!("{}/v1/jobs?all=1", self.base))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "the daemon answers");
        r.json().await.unwrap()
    }

    /// Posts `body` and expects a 400 whose message contains `want`.
    async fn refused(&self, what: &str, body: &Value, want: &str) -> String {
        let t0 = Instant::now();
        let (status, err) = self.submit(body).await;
        let took = t0.elapsed();
        let err = err.unwrap_or_else(|| panic!("{what}: no JSON error body (status {status})"));
        assert_eq!(status, 400, "{what}: {err:?}");
        assert_eq!(err.error.code, ErrorCode::BadRequest, "{what}");
        assert!(
            err.error.message.contains(want),
            "{what}: {:?} does not contain {want:?}",
            err.error.message
        );
        println!("{what}: refused in {took:?}: {}", err.error.message);
        assert!(self.jobs().await.is_empty(), "{what}: nothing was queued");
        err.error.message
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_station_refuses_what_the_cli_would_and_keeps_answering() {
    if gleaner_testkit::skip_unless_root("submit_limits: creates a job owner") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(&dir.path().join("keys")).unwrap();
    let cfg = StationConfig {
        name: "home".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        state_dir: dir.path().join("state"),
        public_key: keys.public_key(),
        token_file: keys
            .station_token_file("home", &dir.path().join("home.token"))
            .unwrap(),
        role: StationRole::SubmitOnly,
        ..Default::default()
    };
    let (addr, _running) = spawn_for_test(cfg).await.unwrap();
    let alice = TestOwner::new("alice").unwrap();
    let work = dir.path().join("work");
    alice.dir(&work).unwrap();
    let work = work.to_string_lossy().into_owned();
    let st = Station {
        base: format!("http://{addr}"),
        token: keys.user(alice.name()),
        http: reqwest::Client::new(),
    };
    let v = |name: &str, value: &str, line: usize| (name.to_string(), value.to_string(), line);
    let exe = || v("executable", "/bin/echo", 1);

    // The macro bomb of the issue: 2.3 KB that doubles 30 times.
    let mut vars = vec![exe(), v("m1", "xx", 2)];
    for i in 1..30 {
        vars.push(v(&format!("m{}", i + 1), &format!("$(m{i})$(m{i})"), i + 2));
    }
    vars.push(v("arguments", "$(m30)", 32));
    let bomb = body(&work, &vars, 33, 1);
    println!("macro bomb body: {} bytes", bomb.to_string().len());
    let before = peak_kib();
    let t0 = Instant::now();
    st.refused(
        "macro bomb",
        &bomb,
        "bomb.sub:32: arguments (through $(m21)) expands to more than 1 MiB",
    )
    .await;
    let took = t0.elapsed();
    let after = peak_kib();
    println!(
        "macro bomb: answered (and the queue listed) in {took:?}; peak memory (VmHWM) of the \
         process with the daemon {before} KiB before, {after} KiB after"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(
        after - before < 256 * 1024,
        "peak memory grew {} KiB",
        after - before
    );

    // A 50 MB description, as the issue stored.
    let big = body(
        &work,
        &[exe(), v("arguments", &"a".repeat(50_000_000), 2)],
        3,
        1,
    );
    st.refused(
        "50 MB arguments",
        &big,
        "bomb.sub:2: the value of arguments is 47.7 MiB, more than the 1 MiB limit",
    )
    .await;

    // A command the CLI refuses, posted raw: the station expands with the
    // same table of commands.
    let grid = body(&work, &[exe(), v("grid_resource", "batch slurm", 2)], 3, 1);
    st.refused(
        "refused command",
        &grid,
        "bomb.sub:2: grid_resource is not supported: a grid-universe command",
    )
    .await;

    // Another user's accounting name (issue 19): the owner is the caller,
    // whatever the body says, and accounting_group_user must be the owner.
    let theft = body(
        &work,
        &[
            exe(),
            v("accounting_group", "physics", 2),
            v("accounting_group_user", "bob", 3),
        ],
        4,
        1,
    );
    st.refused(
        "another user's accounting name",
        &theft,
        "bomb.sub:3: invalid value for accounting_group_user: \"bob\" is not you",
    )
    .await;

    // More procs than one submission may have.
    let many = body(&work, &[exe()], 2, 100_001);
    st.refused(
        "100 001 procs",
        &many,
        "more than 100000 jobs in one submission",
    )
    .await;

    // Values no host could run.
    let nul = body(&work, &[v("executable", "/bin/ec\0ho", 1)], 2, 1);
    st.refused(
        "NUL in executable",
        &nul,
        "bomb.sub:1: executable of proc 0: the path contains a NUL byte",
    )
    .await;
    let e2big = body(
        &work,
        &[exe(), v("arguments", &"x".repeat(200_000), 2)],
        3,
        1,
    );
    st.refused(
        "200 KB argument",
        &e2big,
        "bomb.sub:2: arguments of proc 0: argument 1 is 195.3 KiB, more than the 128 KiB limit",
    )
    .await;

    // The submitter's own name is accepted.
    let own = body(
        &work,
        &[exe(), v("accounting_group_user", alice.name(), 2)],
        3,
        1,
    );
    let (status, err) = st.submit(&own).await;
    assert_eq!(status, 200, "{err:?}");
    assert_eq!(st.jobs().await.len(), 1);

    // And a plain submission still goes through.
    let good = body(&work, &[exe(), v("arguments", "hi", 2)], 3, 2);
    let (status, err) = st.submit(&good).await;
    assert_eq!(status, 200, "{err:?}");
    assert_eq!(st.jobs().await.len(), 3);
}
