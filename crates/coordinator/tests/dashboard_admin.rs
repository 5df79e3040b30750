//! The dashboard's administrator actions and the token API's (drain,
//! undrain, vacate, revoke) over real HTTP on loopback, with fake
//! stations; every refused attempt leaves the pool, `drained.json` and the
//! token registry as they were. And a dashboard session does not outlive
//! its token: revoked, the next request is 401 and an open event stream
//! ends; expiring, the session ends with it.

mod common;

use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest};
use gleaner_coordinator::{CoordinatorConfig, RunningCoordinator, spawn_for_test};
use gleaner_core::detector::OwnerState;
use gleaner_proto::creds::{Claims, PoolSigner, Role, load_or_create_signing_key};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{AdvertiseReply, PoolStatus, StationAd};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// One request on its own connection: (status, lower-cased head, body).
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("Content-Length: 0\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

struct Pool {
    dir: tempfile::TempDir,
    key: PoolSigner,
    coord: Option<RunningCoordinator>,
    admin: String,
    alice: String,
    alice_id: String,
}

fn config(dir: &Path) -> CoordinatorConfig {
    CoordinatorConfig {
        state_dir: dir.join("state"),
        scheduling_interval_secs: 0.2,
        advertise_period_secs: 1,
        station_timeout_secs: Some(30.0),
        startup_grace_secs: Some(0.0),
        claim_lifetime_secs: Some(600),
        seed: Some(42),
        ..CoordinatorConfig::default()
    }
}

impl Pool {
    async fn start() -> Pool {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let key = load_or_create_signing_key(&cfg.signing_key_path()).unwrap();
        let coord = spawn_for_test(cfg.clone()).await.unwrap();
        // Tokens from the registry, as `glean token create` makes them.
        let reg = TokenRegistry::in_state_dir(&cfg.state_dir);
        let mk = |role, who: &str| {
            let req = TokenRequest {
                role,
                subject: who.into(),
                expires_days: None,
            };
            reg.create(&key, &req, now_secs()).unwrap()
        };
        let admin = mk(Role::Admin, "root").token;
        let alice = mk(Role::User, "alice");
        Pool {
            dir,
            key,
            coord: Some(coord),
            admin,
            alice: alice.token,
            alice_id: alice.record.token_id,
        }
    }

    async fn restart(&mut self) {
        self.coord.take().unwrap().stop().await.unwrap();
        let cfg = config(self.dir.path());
        self.coord = Some(spawn_for_test(cfg).await.unwrap());
    }

    fn addr(&self) -> SocketAddr {
        self.coord.as_ref().unwrap().addr()
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn station(&self, name: &str) -> String {
        self.key
            .sign(&Claims {
                subject: name.into(),
                role: Role::Station,
                issued_at: now_secs(),
                expires_at: Some(now_secs() + 3600),
                token_id: format!("t-{name}"),
            })
            .unwrap()
    }

    async fn advertise(&self, ad: &StationAd) -> AdvertiseReply {
        let body = serde_json::to_string(ad).unwrap();
        let mut s = TcpStream::connect(self.addr()).await.unwrap();
        let req = format!(
            "POST /v1/advertise HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.station(&ad.name),
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.unwrap();
        let text = String::from_utf8_lossy(&buf).to_string();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// `path` with `token` as the bearer.
    async fn call(&self, method: &str, path: &str, token: &str) -> (u16, String) {
        let auth = format!("Bearer {token}");
        let (s, _, b) = http(self.addr(), method, path, &[("Authorization", &auth)]).await;
        (s, b)
    }

    async fn status(&self) -> PoolStatus {
        let (s, b) = self.call("GET", "/v1/pool", &self.admin).await;
        assert_eq!(s, 200, "{b}");
        serde_json::from_str(&b).unwrap()
    }

    async fn drained(&self, name: &str) -> bool {
        self.status()
            .await
            .stations
            .iter()
            .any(|s| s.name == name && s.drained)
    }

    /// A dashboard session for `token`: (cookie, CSRF token, login head).
    async fn login(&self, token: &str) -> (String, String, String) {
        let (s, b) = self.call("POST", "/v1/dashboard/ticket", token).await;
        assert_eq!(s, 200, "{b}");
        let path = serde_json::from_str::<Value>(&b).unwrap()["path"]
            .as_str()
            .unwrap()
            .to_string();
        let (s, head, _) = http(self.addr(), "GET", &path, &[]).await;
        assert_eq!(s, 303);
        let cookie = head
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let (s, _, b) = http(
            self.addr(),
            "GET",
            "/dashboard/api/state",
            &[("Cookie", &cookie)],
        )
        .await;
        assert_eq!(s, 200, "{b}");
        let csrf = serde_json::from_str::<Value>(&b).unwrap()["viewer"]["csrf"]
            .as_str()
            .unwrap()
            .to_string();
        (cookie, csrf, head)
    }

    /// A dashboard POST with these cookie, CSRF token and Origin.
    async fn page_post(
        &self,
        path: &str,
        cookie: Option<&str>,
        csrf: Option<&str>,
        origin: Option<&str>,
    ) -> (u16, String) {
        let mut h = Vec::new();
        if let Some(c) = cookie {
            h.push(("Cookie", c));
        }
        if let Some(t) = csrf {
            h.push(("X-Gleaner-CSRF", t));
        }
        if let Some(o) = origin {
            h.push(("Origin", o));
        }
        let (s, _, b) = http(self.addr(), "POST", path, &h).await;
        (s, b)
    }

    fn origin(&self) -> String {
        format!("http://{}", self.addr())
    }

    fn revoked_in_registry(&self, id: &str) -> bool {
        TokenRegistry::in_state_dir(&self.state_dir())
            .list()
            .unwrap()
            .iter()
            .any(|t| t.token_id == id && t.revoked)
    }
}

fn ad(name: &str, cpus: u32, idle: u32, guests: &[(JobId, &str)]) -> StationAd {
    common::ad(name, OwnerState::Av, cpus, idle, guests)
}

/// A home that only submits.
fn home(name: &str, idle: u32) -> StationAd {
    let mut a = ad(name, 1, idle, &[]);
    a.state = OwnerState::Na;
    a.submit_only = true;
    a
}

/// Polls the dashboard's state until `f` holds for station `name` (the
/// sampler looks every 250 ms).
async fn dashboard_shows(p: &Pool, cookie: &str, name: &str, f: impl Fn(&Value) -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let (_, _, b) = http(
            p.addr(),
            "GET",
            "/dashboard/api/state",
            &[("Cookie", cookie)],
        )
        .await;
        let v: Value = serde_json::from_str(&b).unwrap();
        if v["pool"]["stations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["name"] == name && f(s))
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn an_administrator_drains_vacates_and_revokes_from_the_dashboard() {
    let p = Pool::start().await;
    p.advertise(&ad("ws1", 2, 0, &[(JobId::new(1, 0), "home")]))
        .await;
    p.advertise(&home("home", 0)).await;
    let (cookie, csrf, _) = p.login(&p.admin).await;
    let origin = p.origin();
    let post = |path: &'static str| p.page_post(path, Some(&cookie), Some(&csrf), Some(&origin));

    let (s, b) = post("/dashboard/api/stations/ws1/drain").await;
    assert_eq!(s, 200, "{b}");
    assert!(p.drained("ws1").await, "glean status shows the drain");
    let file = std::fs::read_to_string(p.state_dir().join("drained.json")).unwrap();
    assert!(file.contains("ws1"), "{file}");
    assert!(
        dashboard_shows(&p, &cookie, "ws1", |s| s["drained"] == true).await,
        "the page's model marks ws1 drained"
    );
    // A home with work waits: nothing is granted on a drained host.
    let mut granted = 0;
    for _ in 0..5 {
        granted += p.advertise(&home("home", 3)).await.grants.len();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(granted, 0, "no grant on a drained host");

    // Vacate: the guest's home is asked to give the node back.
    let (s, b) = post("/dashboard/api/stations/ws1/vacate").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(serde_json::from_str::<Value>(&b).unwrap()["preempted"], 1);
    let r = p.advertise(&home("home", 3)).await;
    assert_eq!(r.preemptions.len(), 1, "{r:?}");
    assert_eq!(r.preemptions[0].host, "ws1");
    assert_eq!(r.preemptions[0].job, Some(JobId::new(1, 0)));
    assert_eq!(r.preemptions[0].reason, "vacated by administrator root");

    // The token list names alice's token; revoking it refuses it at once.
    let (s, _, b) = http(
        p.addr(),
        "GET",
        "/dashboard/api/tokens",
        &[("Cookie", &cookie)],
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(
        b.contains(&p.alice_id) && !b.contains(&p.alice),
        "ids, never tokens"
    );
    assert_eq!(p.call("GET", "/v1/pool", &p.alice).await.0, 200);
    let path = format!("/dashboard/api/tokens/{}/revoke", p.alice_id);
    let (s, b) = p
        .page_post(&path, Some(&cookie), Some(&csrf), Some(&origin))
        .await;
    assert_eq!(s, 200, "{b}");
    assert!(p.revoked_in_registry(&p.alice_id));
    assert_eq!(p.call("GET", "/v1/pool", &p.alice).await.0, 401);

    // Undrain: grants flow again.
    let (s, b) = post("/dashboard/api/stations/ws1/undrain").await;
    assert_eq!(s, 200, "{b}");
    assert!(!p.drained("ws1").await);
    p.advertise(&ad("ws1", 2, 0, &[])).await;
    let mut granted = 0;
    for _ in 0..20 {
        granted += p.advertise(&home("home", 3)).await.grants.len();
        if granted > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(granted > 0, "undrained, ws1 takes guests again");
}

#[tokio::test]
async fn refused_actions_change_nothing() {
    let p = Pool::start().await;
    p.advertise(&ad("ws1", 2, 0, &[(JobId::new(1, 0), "home")]))
        .await;
    p.advertise(&home("home", 0)).await;
    let origin = p.origin();
    let (admin_cookie, admin_csrf, _) = p.login(&p.admin).await;
    let (user_cookie, user_csrf, _) = p.login(&p.alice).await;
    let revoke_admin = format!("/dashboard/api/tokens/{}/revoke", p.alice_id);
    let pr = &p;
    let nothing_changed = move || async move {
        let p = pr;
        assert!(!p.drained("ws1").await, "ws1 drained by a refused request");
        assert!(!p.state_dir().join("drained.json").exists());
        assert!(
            !p.revoked_in_registry(&p.alice_id),
            "token revoked by a refused request"
        );
        let r = p.advertise(&home("home", 0)).await;
        assert!(
            r.preemptions.is_empty(),
            "a refused vacate preempted: {r:?}"
        );
    };
    let paths = [
        "/dashboard/api/stations/ws1/drain",
        "/dashboard/api/stations/ws1/vacate",
        revoke_admin.as_str(),
    ];
    for path in paths {
        // A user's session, with everything else right: 403.
        let (s, b) = p
            .page_post(path, Some(&user_cookie), Some(&user_csrf), Some(&origin))
            .await;
        assert_eq!(s, 403, "user session on {path}: {b}");
        // An administrator's session without the CSRF token, with a wrong
        // one, another one's, from another origin, or with no Origin: 403.
        let attempts: [(Option<&str>, Option<&str>, &str); 5] = [
            (None, Some(&origin), "no CSRF token"),
            (Some("00"), Some(&origin), "a wrong CSRF token"),
            (
                Some(&user_csrf),
                Some(&origin),
                "another session's CSRF token",
            ),
            (
                Some(&admin_csrf),
                Some("http://evil.example"),
                "a foreign Origin",
            ),
            (Some(&admin_csrf), None, "no Origin"),
        ];
        for (csrf, org, what) in attempts {
            let (s, b) = p.page_post(path, Some(&admin_cookie), csrf, org).await;
            assert_eq!(s, 403, "{what} on {path}: {b}");
        }
        // No session at all: 401.
        let (s, _) = p
            .page_post(path, None, Some(&admin_csrf), Some(&origin))
            .await;
        assert_eq!(s, 401, "no session on {path}");
        nothing_changed().await;
    }
    // The user's page model carries the role the page hides buttons by;
    // the token list is an administrator's only.
    let (_, _, b) = http(
        p.addr(),
        "GET",
        "/dashboard/api/state",
        &[("Cookie", &user_cookie)],
    )
    .await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["viewer"]["role"], "user");
    let (s, _, _) = http(
        p.addr(),
        "GET",
        "/dashboard/api/tokens",
        &[("Cookie", &user_cookie)],
    )
    .await;
    assert_eq!(s, 403);

    // The token API: a user's or a station's token is refused, none is 401.
    let station = p.station("ws1");
    let api = [
        ("POST", "/v1/stations/ws1/drain".to_string()),
        ("POST", "/v1/stations/ws1/vacate".to_string()),
        ("POST", format!("/v1/tokens/{}/revoke", p.alice_id)),
        ("GET", "/v1/tokens".to_string()),
    ];
    for (m, path) in &api {
        assert_eq!(p.call(m, path, &p.alice).await.0, 403, "user {path}");
        assert_eq!(p.call(m, path, &station).await.0, 403, "station {path}");
        let (s, _, _) = http(p.addr(), m, path, &[]).await;
        assert_eq!(s, 401, "no token {path}");
    }
    nothing_changed().await;
    // Unknown targets: 404, nothing written.
    let (s, b) = p.call("POST", "/v1/stations/nowhere/drain", &p.admin).await;
    assert_eq!(s, 404, "{b}");
    assert_eq!(
        p.call("POST", "/v1/tokens/ffff/revoke", &p.admin).await.0,
        404
    );
    nothing_changed().await;
}

#[tokio::test]
async fn a_drain_survives_a_restart_and_ends_by_the_api() {
    let mut p = Pool::start().await;
    p.advertise(&ad("ws1", 2, 0, &[])).await;
    let (s, b) = p.call("POST", "/v1/stations/ws1/drain", &p.admin).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(serde_json::from_str::<Value>(&b).unwrap()["changed"], true);
    p.restart().await;
    p.advertise(&ad("ws1", 2, 0, &[])).await;
    assert!(p.drained("ws1").await, "drained after the restart");
    let mut granted = 0;
    for _ in 0..5 {
        granted += p.advertise(&home("home", 3)).await.grants.len();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(granted, 0);
    let (s, b) = p.call("POST", "/v1/stations/ws1/undrain", &p.admin).await;
    assert_eq!(s, 200, "{b}");
    assert!(!p.drained("ws1").await);
}

#[tokio::test]
async fn a_revoked_tokens_session_and_stream_end_at_once() {
    let p = Pool::start().await;
    p.advertise(&ad("ws1", 1, 0, &[])).await;
    let (cookie, _, _) = p.login(&p.alice).await;
    // An open event stream.
    let mut stream = TcpStream::connect(p.addr()).await.unwrap();
    let req = format!(
        "GET /dashboard/api/events HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nCookie: {cookie}\r\n\r\n",
        p.addr()
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut first = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut first))
        .await
        .unwrap()
        .unwrap();
    let first = String::from_utf8_lossy(&first[..n]).to_string();
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");

    // It stays open while the token is good (heartbeats, updates).
    let open_until = Instant::now() + Duration::from_millis(2500);
    let mut buf = vec![0u8; 65536];
    while Instant::now() < open_until {
        if let Ok(r) = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await
        {
            assert!(r.unwrap() > 0, "the stream ended while the token was good");
        }
    }
    // Revoked as `glean token revoke` does it: in the registry file.
    let revoked_at = Instant::now();
    TokenRegistry::in_state_dir(&p.state_dir())
        .revoke(&p.alice_id, now_secs())
        .unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest))
        .await
        .expect("the stream ends after the revocation")
        .unwrap();
    println!(
        "event stream closed {:.0} ms after the revocation",
        revoked_at.elapsed().as_secs_f64() * 1000.0
    );
    for path in [
        "/dashboard/api/state",
        "/dashboard/api/events",
        "/dashboard/",
    ] {
        let (s, _, b) = http(p.addr(), "GET", path, &[("Cookie", &cookie)]).await;
        assert_eq!(s, 401, "{path} after the revocation: {b}");
    }
}

#[tokio::test]
async fn a_session_ends_when_its_token_expires() {
    let p = Pool::start().await;
    // A token that expires in 3 s (signed directly; not in the registry).
    let brief = p
        .key
        .sign(&Claims {
            subject: "bob".into(),
            role: Role::User,
            issued_at: now_secs(),
            expires_at: Some(now_secs() + 3),
            token_id: "brief".into(),
        })
        .unwrap();
    let (cookie, _, head) = p.login(&brief).await;
    let max_age: u64 = head
        .split("max-age=")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(max_age <= 3, "cookie outlives the token: Max-Age={max_age}");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let (s, _, _) = http(
        p.addr(),
        "GET",
        "/dashboard/api/state",
        &[("Cookie", &cookie)],
    )
    .await;
    assert_eq!(s, 401, "the session ended with its token");
}
