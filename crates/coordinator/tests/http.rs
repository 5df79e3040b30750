//! The coordinator over real HTTP on loopback, with fake stations.

mod common;

use common::ad;
use gleaner_coordinator::{CoordinatorConfig, RunningCoordinator, spawn_for_test};
use gleaner_core::detector::OwnerState;
use gleaner_proto::creds::{Claims, PoolSigner, Role, load_or_create_signing_key};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{
    AdvertiseReply, ErrorBody, ErrorCode, EventsReply, PoolStatus, StationAd, UserPrio,
};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(key: &PoolSigner, subject: &str, role: Role) -> String {
    key.sign(&Claims {
        subject: subject.into(),
        role,
        issued_at: now_secs(),
        expires_at: Some(now_secs() + 3600),
        token_id: format!("t-{subject}"),
    })
    .unwrap()
}

/// A minimal HTTP/1.1 client: one request per connection, so tests can
/// also send broken requests. Returns the status and body.
async fn raw(addr: SocketAddr, request: &[u8], close_write: bool) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    if close_write {
        s.shutdown().await.unwrap();
    }
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    let body = body.unwrap_or("");
    req.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    raw(addr, req.as_bytes(), false).await.unwrap()
}

struct Pool {
    _dir: tempfile::TempDir,
    key: PoolSigner,
    /// The token of station `a` (each station advertises with its own).
    daemon: String,
    user: String,
    coord: RunningCoordinator,
}

fn config(dir: &Path, interval: f64, grace: f64) -> CoordinatorConfig {
    CoordinatorConfig {
        state_dir: dir.join("state"),
        scheduling_interval_secs: interval,
        advertise_period_secs: 1,
        station_timeout_secs: Some(5.0),
        startup_grace_secs: Some(grace),
        // Fake hosts never report placements; keep their claims pending.
        claim_lifetime_secs: Some(600),
        seed: Some(42),
        ..CoordinatorConfig::default()
    }
}

impl Pool {
    async fn start(interval: f64, grace: f64) -> Pool {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), interval, grace);
        Self::start_with(dir, cfg).await
    }

    async fn start_with(dir: tempfile::TempDir, cfg: CoordinatorConfig) -> Pool {
        // The coordinator finds and keeps the key the test made.
        let key = load_or_create_signing_key(&cfg.signing_key_path()).unwrap();
        let coord = spawn_for_test(cfg).await.unwrap();
        Pool {
            daemon: token(&key, "a", Role::Station),
            user: token(&key, "alice", Role::User),
            key,
            coord,
            _dir: dir,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.coord.addr()
    }

    /// The token of station `name`.
    fn station(&self, name: &str) -> String {
        token(&self.key, name, Role::Station)
    }

    /// Advertises `ad` with the token of the station it names.
    async fn advertise(&self, ad: &StationAd) -> AdvertiseReply {
        let body = serde_json::to_string(ad).unwrap();
        let (status, text) = http(
            self.addr(),
            "POST",
            "/v1/advertise",
            Some(&self.station(&ad.name)),
            Some(&body),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        let (status, text) = http(self.addr(), "GET", path, Some(&self.user), None).await;
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }
}

/// A home station that only submits, with `idle` waiting and `remote` running.
fn home(name: &str, idle: u32, remote: u32) -> StationAd {
    let mut a = ad(name, OwnerState::Na, 1, idle, &[]);
    a.submit_only = true;
    a.demand.remote_jobs = remote;
    a
}

fn sleep(ms: u64) -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(ms))
}

#[tokio::test]
async fn advertise_grant_round_trip_with_verifiable_claims() {
    let p = Pool::start(0.2, 0.0).await;
    assert!(p.advertise(&home("a", 3, 0)).await.grants.is_empty());
    // A host turning up AV is a capacity event: a grant at once (L643).
    let r = p.advertise(&ad("h1", OwnerState::Av, 2, 0, &[])).await;
    assert_eq!(r.next_advertise_secs, 1);
    let r = p.advertise(&home("a", 3, 0)).await;
    // Both free cpus in one pass (the default `per_pass`).
    assert_eq!(r.grants.len(), 2);
    let g = &r.grants[0];
    assert_eq!(g.host, "h1");
    assert_eq!(g.host_address, "http://h1:9618");
    let ticket = p
        .key
        .verifier()
        .verify_claim(&g.claim_id, "h1", now_secs())
        .unwrap();
    assert_eq!(ticket.home, "a");
    // The home's address on record: the only one the host will call.
    assert_eq!(ticket.home_address, "http://a:9618");
    assert!(
        p.key
            .verifier()
            .verify_claim(&g.claim_id, "h2", now_secs())
            .is_err()
    );
    // The host learns which claims may place on it.
    let r = p.advertise(&ad("h1", OwnerState::Av, 2, 0, &[])).await;
    assert_eq!(r.claims.len(), 2);
    assert_eq!(r.claims[0].home, "a");
    // Never a third.
    let mut total = 2;
    for _ in 0..50 {
        if total == 2 {
            break;
        }
        sleep(100).await;
        total += p.advertise(&home("a", 3, 0)).await.grants.len();
    }
    assert_eq!(total, 2);
    for _ in 0..5 {
        sleep(150).await;
        total += p.advertise(&home("a", 3, 0)).await.grants.len();
        p.advertise(&ad("h1", OwnerState::Av, 2, 0, &[])).await;
    }
    assert_eq!(total, 2);
    let status: PoolStatus = p.get("/v1/pool").await;
    assert_eq!(status.stations.len(), 2);
    p.coord.stop().await.unwrap();
}

#[tokio::test]
async fn light_station_gets_the_next_free_node() {
    // A long grace: no preemption, so the only way to a node is a free one.
    let p = Pool::start(0.2, 60.0).await;
    let j = |c, n| JobId::new(c, n);
    let guests = [(j(1, 0), "heavy"), (j(1, 1), "heavy")];
    p.advertise(&home("heavy", 10, 2)).await;
    p.advertise(&home("light", 1, 0)).await;
    p.advertise(&ad("h", OwnerState::Av, 2, 0, &guests)).await;
    // Let an interval pass: heavy's index goes up, light's down.
    let mut ordered = false;
    for _ in 0..50 {
        sleep(100).await;
        p.advertise(&home("heavy", 10, 2)).await;
        p.advertise(&home("light", 1, 0)).await;
        p.advertise(&ad("h", OwnerState::Av, 2, 0, &guests)).await;
        let prio: UserPrio = p.get("/v1/userprio").await;
        let si = |n: &str| prio.stations.iter().find(|e| e.station == n).unwrap().si;
        if si("light") < si("heavy") {
            ordered = true;
            break;
        }
    }
    assert!(ordered, "no interval ran");
    // One of heavy's remote jobs finishes: a capacity event.
    p.advertise(&ad("h", OwnerState::Av, 2, 0, &guests[1..]))
        .await;
    let light = p.advertise(&home("light", 1, 0)).await;
    let heavy = p.advertise(&home("heavy", 10, 1)).await;
    assert_eq!(light.grants.len(), 1, "{light:?}");
    assert_eq!(light.grants[0].host, "h");
    assert!(heavy.grants.is_empty() && heavy.preemptions.is_empty());
    p.coord.stop().await.unwrap();
}

#[tokio::test]
async fn na_station_is_never_granted() {
    let p = Pool::start(0.1, 0.0).await;
    for _ in 0..5 {
        p.advertise(&ad("busy", OwnerState::Na, 4, 0, &[])).await;
        let r = p.advertise(&home("a", 2, 0)).await;
        assert!(r.grants.is_empty(), "{r:?}");
        sleep(120).await;
    }
    // The owner leaves: the station turns AV and is granted at once.
    p.advertise(&ad("busy", OwnerState::Av, 4, 0, &[])).await;
    let r = p.advertise(&home("a", 2, 0)).await;
    // One per idle job, in one pass (the default `per_pass`).
    assert_eq!(r.grants.len(), 2);
    p.coord.stop().await.unwrap();
}

#[tokio::test]
async fn updown_preempts_heavy_holder_for_waiting_light_station() {
    let p = Pool::start(0.2, 0.0).await;
    let guests = [(JobId::new(1, 0), "heavy"), (JobId::new(1, 1), "heavy")];
    let mut preempted = None;
    for _ in 0..50 {
        p.advertise(&ad("h", OwnerState::Av, 2, 0, &guests)).await;
        p.advertise(&home("light", 1, 0)).await;
        let r = p.advertise(&home("heavy", 5, 2)).await;
        if let Some(pre) = r.preemptions.first() {
            preempted = Some(pre.clone());
            break;
        }
        sleep(100).await;
    }
    let pre = preempted.expect("heavy was never asked to give a node back");
    assert_eq!(pre.host, "h");
    let job = pre.job.unwrap();
    assert!(pre.reason.contains("light"), "{}", pre.reason);
    // Before the victim leaves, nobody is granted the node.
    assert!(p.advertise(&home("light", 1, 0)).await.grants.is_empty());
    // The host vacates the job; the reserved node goes to light.
    let left: Vec<_> = guests.iter().copied().filter(|g| g.0 != job).collect();
    p.advertise(&ad("h", OwnerState::Av, 2, 0, &left)).await;
    let light = p.advertise(&home("light", 1, 0)).await;
    assert_eq!(light.grants.len(), 1, "{light:?}");
    assert_eq!(light.grants[0].host, "h");
    assert!(p.advertise(&home("heavy", 6, 1)).await.grants.is_empty());
    p.coord.stop().await.unwrap();
}

#[tokio::test]
async fn missing_forged_or_wrong_role_tokens_are_refused() {
    let p = Pool::start(0.2, 0.0).await;
    let body = serde_json::to_string(&ad("h", OwnerState::Av, 2, 0, &[])).unwrap();
    let forged = token(&PoolSigner::from_seed(&[9; 32]), "h", Role::Station);
    let admin = token(&p.key, "root", Role::Admin);
    // Another station's token: a station speaks only for itself.
    let other = p.station("g");
    for (tok, want) in [
        (None, 401),
        (Some(forged.as_str()), 401),
        (Some("garbage"), 401),
        (Some(p.user.as_str()), 403),
        (Some(admin.as_str()), 403),
        (Some(other.as_str()), 403),
    ] {
        let (status, text) = http(p.addr(), "POST", "/v1/advertise", tok, Some(&body)).await;
        assert_eq!(status, want, "{text}");
        let e: ErrorBody = serde_json::from_str(&text).unwrap();
        let code = if want == 401 {
            ErrorCode::Unauthorized
        } else {
            ErrorCode::Forbidden
        };
        assert_eq!(e.error.code, code);
    }
    for path in ["/v1/pool", "/v1/userprio", "/v1/health"] {
        let (status, _) = http(p.addr(), "GET", path, None, None).await;
        assert_eq!(status, 401);
        let (status, _) = http(p.addr(), "GET", path, Some(&forged), None).await;
        assert_eq!(status, 401);
    }
    // A claim is the credential between its two stations only: a valid,
    // pool-signed claim naming `h` is no token at the coordinator, neither
    // to advertise as `h` nor to read.
    let claim = {
        use gleaner_proto::creds::{ClaimTicket, new_nonce};
        let now = now_secs();
        let ticket = ClaimTicket::new(
            "h",
            "g",
            "http://127.0.0.1:1",
            now,
            now + 600,
            new_nonce().unwrap(),
        );
        p.key.sign_claim(&ticket).unwrap()
    };
    let (status, text) = http(p.addr(), "POST", "/v1/advertise", Some(&claim), Some(&body)).await;
    assert_eq!(status, 401, "{text}");
    for path in [
        "/v1/pool",
        "/v1/ads",
        "/v1/userprio",
        "/v1/events",
        "/metrics",
    ] {
        let (status, text) = http(p.addr(), "GET", path, Some(&claim), None).await;
        assert_eq!(status, 401, "claim on {path}: {text}");
    }
    let status: PoolStatus = p.get("/v1/pool").await;
    assert!(status.stations.is_empty(), "refused ads changed the pool");
    p.coord.stop().await.unwrap();
}

/// Revocations recorded in `tokens.json` (by `glean token revoke`) are
/// enforced at once on the coordinator's own callers and handed to every
/// station in the advertise reply.
#[tokio::test]
async fn revoked_tokens_are_refused_and_carried_in_replies() {
    use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest};
    let p = Pool::start(0.2, 0.0).await;
    let registry = TokenRegistry::in_state_dir(&p._dir.path().join("state"));
    let issue = |role, subject: &str| {
        registry
            .create(
                &p.key,
                &TokenRequest {
                    role,
                    subject: subject.into(),
                    expires_days: None,
                },
                now_secs(),
            )
            .unwrap()
    };
    let (h, bob) = (issue(Role::Station, "h"), issue(Role::User, "bob"));
    let body = serde_json::to_string(&ad("h", OwnerState::Av, 2, 0, &[])).unwrap();
    let post = |tok: String| {
        let (addr, body) = (p.addr(), body.clone());
        async move { http(addr, "POST", "/v1/advertise", Some(&tok), Some(&body)).await }
    };
    let (s, t) = post(h.token.clone()).await;
    assert_eq!(s, 200, "{t}");
    let reply: AdvertiseReply = serde_json::from_str(&t).unwrap();
    assert!(reply.revoked.is_empty() && !t.contains("revoked"));
    let (s, _) = http(p.addr(), "GET", "/v1/pool", Some(&bob.token), None).await;
    assert_eq!(s, 200);

    registry.revoke(&bob.record.token_id, now_secs()).unwrap();
    let (s, t) = http(p.addr(), "GET", "/v1/pool", Some(&bob.token), None).await;
    assert_eq!(s, 401, "{t}");
    assert!(t.contains("revoked"), "{t}");
    let reply = p.advertise(&ad("g", OwnerState::Av, 1, 0, &[])).await;
    assert!(reply.revoked.contains(&bob.record.token_id), "{reply:?}");
    assert_eq!(reply.revoked.len(), 1);

    // A revoked station token advertises no more: the pool keeps its last ad.
    let before: serde_json::Value = p.get("/v1/ads").await;
    registry.revoke(&h.record.token_id, now_secs()).unwrap();
    let mut changed = ad("h", OwnerState::Na, 2, 0, &[]);
    changed.address = "http://mallory:1".into();
    let (s, t) = http(
        p.addr(),
        "POST",
        "/v1/advertise",
        Some(&h.token),
        Some(&serde_json::to_string(&changed).unwrap()),
    )
    .await;
    assert_eq!(s, 401, "{t}");
    let after: serde_json::Value = p.get("/v1/ads").await;
    let entry = |v: &serde_json::Value| {
        v["stations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["ad"]["name"] == "h")
            .map(|s| s["ad"].clone())
            .unwrap()
    };
    assert_eq!(entry(&before), entry(&after));
    assert_eq!(entry(&after)["address"], "http://h:9618");
    assert_eq!(entry(&after)["state"], "AV");
    p.coord.stop().await.unwrap();
}

#[tokio::test]
async fn garbage_gets_400_and_the_daemon_keeps_serving() {
    let p = Pool::start(0.2, 0.0).await;
    let post = |body: String| {
        let tok = p.daemon.clone();
        let addr = p.addr();
        async move { http(addr, "POST", "/v1/advertise", Some(&tok), Some(&body)).await }
    };
    let field = |text: &str| serde_json::from_str::<ErrorBody>(text).unwrap().error.field;
    let (s, _) = post("this is not json".into()).await;
    assert_eq!(s, 400);
    let (s, _) = post("{\"name\": \"a\", ".into()).await;
    assert_eq!(s, 400);
    let mut v = serde_json::to_value(ad("a", OwnerState::Av, 1, 0, &[])).unwrap();
    v.as_object_mut().unwrap().remove("cpus");
    let (s, t) = post(v.to_string()).await;
    assert_eq!((s, field(&t).as_deref()), (400, Some("cpus")), "{t}");
    v["cpus"] = "lots".into();
    let (s, t) = post(v.to_string()).await;
    assert_eq!((s, field(&t).as_deref()), (400, Some("cpus")), "{t}");
    v["cpus"] = 1.into();
    v["state"] = "MAYBE".into();
    let (s, t) = post(v.to_string()).await;
    assert_eq!((s, field(&t).as_deref()), (400, Some("state")), "{t}");
    v["state"] = "AV".into();
    v["name"] = "".into();
    let (s, _) = post(v.to_string()).await;
    assert_eq!(s, 400);
    v["name"] = "a".into();
    v["protocol"] = 2.into();
    let (s, t) = post(v.to_string()).await;
    assert_eq!(s, 426, "{t}");
    // Too large.
    let (s, _) = post(format!("\"{}\"", "x".repeat(300 * 1024))).await;
    assert_eq!(s, 413);
    // Truncated: the declared length is never sent.
    let req = format!(
        "POST /v1/advertise HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {}\r\n\
         Content-Length: 500\r\n\r\n{{\"name\":",
        p.daemon
    );
    if let Some((s, _)) = raw(p.addr(), req.as_bytes(), true).await {
        assert_eq!(s, 400);
    }
    // Not HTTP at all.
    let _ = raw(p.addr(), b"\x00\x01\x02 hello\r\n\r\n", true).await;
    let (s, _) = http(p.addr(), "GET", "/v1/health", Some(&p.user), None).await;
    assert_eq!(s, 200);
    let status: PoolStatus = p.get("/v1/pool").await;
    assert!(status.stations.is_empty());
    p.coord.stop().await.unwrap();
}

#[tokio::test]
async fn restart_keeps_the_updown_table() {
    let dir = tempfile::tempdir().unwrap();
    // A long grace keeps holdings fixed, so the indices move one way.
    let cfg = config(dir.path(), 0.1, 60.0);
    let state_dir = cfg.state_dir.clone();
    let p = Pool::start_with(dir, cfg.clone()).await;
    let guests = [(JobId::new(1, 0), "heavy")];
    for _ in 0..5 {
        p.advertise(&ad("h", OwnerState::Av, 1, 0, &guests)).await;
        p.advertise(&home("heavy", 3, 1)).await;
        p.advertise(&home("light", 1, 0)).await;
        sleep(100).await;
    }
    let before: UserPrio = p.get("/v1/userprio").await;
    assert!(before.stations.iter().any(|e| e.si != 0.0), "{before:?}");
    let Pool { coord, _dir, .. } = p;
    coord.stop().await.unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state_dir.join("fairness.json")).unwrap())
            .unwrap();
    // Start again from the same state with a long interval: no updates.
    let mut cfg2 = cfg;
    cfg2.scheduling_interval_secs = 3600.0;
    let p2 = Pool::start_with(_dir, cfg2).await;
    let after: UserPrio = p2.get("/v1/userprio").await;
    let names: Vec<&str> = after.stations.iter().map(|e| e.station.as_str()).collect();
    assert_eq!(names, ["h", "heavy", "light"]);
    for (i, e) in after.stations.iter().enumerate() {
        assert_eq!(Some(e.si), saved["stations"][i]["si"].as_f64(), "{e:?}");
        assert!(!e.known, "ads are soft state");
    }
    let b = |n: &str| before.stations.iter().find(|e| e.station == n).unwrap().si;
    let a = |n: &str| after.stations.iter().find(|e| e.station == n).unwrap().si;
    assert!(a("heavy") > 0.0 && a("light") < 0.0);
    // At most a couple of intervals ran between the two readings.
    assert!((a("heavy") - b("heavy")).abs() <= 5.0);
    p2.coord.stop().await.unwrap();
}

#[tokio::test]
async fn silent_stations_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 0.1, 0.0);
    cfg.station_timeout_secs = Some(0.4);
    let p = Pool::start_with(dir, cfg).await;
    p.advertise(&home("a", 1, 0)).await;
    p.advertise(&ad("h", OwnerState::Na, 1, 0, &[])).await;
    let status: PoolStatus = p.get("/v1/pool").await;
    assert_eq!(status.stations.len(), 2);
    for _ in 0..8 {
        sleep(100).await;
        p.advertise(&home("a", 1, 0)).await;
    }
    let status: PoolStatus = p.get("/v1/pool").await;
    let names: Vec<_> = status.stations.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a"]);
    // Its index stays: fairness is durable, the ad is not.
    let prio: UserPrio = p.get("/v1/userprio").await;
    let h = prio.stations.iter().find(|e| e.station == "h").unwrap();
    assert!(!h.known);
    p.coord.stop().await.unwrap();
}

/// A home with `n` idle jobs that each take one `matlab` licence.
fn licensed_home(name: &str, n: u32) -> StationAd {
    let mut a = home(name, n, 0);
    let mut d = gleaner_proto::job::JobDescription::new(name, "/bin/true");
    d.concurrency_limits = vec!["matlab".into()];
    let c = gleaner_proto::matchmaking::JobClass::of(&d);
    a.classes = vec![gleaner_proto::matchmaking::JobClass { count: n, ..c }];
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn licence_limit_holds_for_concurrent_homes_and_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), 0.1, 0.0);
    cfg.licences.insert("MatLab".into(), 2);
    cfg.embargo_secs = Some(0.0);
    let p = Pool::start_with(dir, cfg.clone()).await;
    p.advertise(&ad("h", OwnerState::Av, 8, 0, &[])).await;
    let homes = ["a", "b", "c", "d"];
    let mut granted = 0;
    for _ in 0..15 {
        // All homes advertise at once.
        let replies = futures_join(&p, &homes).await;
        granted += replies.iter().map(|r| r.grants.len()).sum::<usize>();
        p.advertise(&ad("h", OwnerState::Av, 8, 0, &[])).await;
        sleep(100).await;
    }
    assert_eq!(granted, 2, "never more grants than licences");
    let ads: serde_json::Value = p.get("/v1/ads").await;
    assert_eq!(ads["licences"][0]["name"], "matlab");
    assert_eq!(ads["licences"][0]["in_use"], 2);
    assert!(p.coord.addr().port() > 0);

    // Restart from the same state directory: the two claims still hold
    // their licences, though no host reports the jobs yet.
    let Pool { _dir, coord, .. } = p;
    coord.stop().await.unwrap();
    let p = Pool::start_with(_dir, cfg).await;
    p.advertise(&ad("h", OwnerState::Av, 8, 0, &[])).await;
    let mut after = 0;
    for _ in 0..10 {
        let replies = futures_join(&p, &homes).await;
        after += replies.iter().map(|r| r.grants.len()).sum::<usize>();
        sleep(100).await;
    }
    assert_eq!(after, 0, "a restart must not hand out the licences again");
    let ads: serde_json::Value = p.get("/v1/ads").await;
    assert_eq!(ads["licences"][0]["in_use"], 2);
    p.coord.stop().await.unwrap();
}

async fn futures_join(p: &Pool, homes: &[&str]) -> Vec<AdvertiseReply> {
    let ads: Vec<StationAd> = homes.iter().map(|h| licensed_home(h, 3)).collect();
    let mut set = tokio::task::JoinSet::new();
    for a in ads {
        let addr = p.addr();
        let daemon = p.station(&a.name);
        set.spawn(async move {
            let body = serde_json::to_string(&a).unwrap();
            let (status, text) =
                http(addr, "POST", "/v1/advertise", Some(&daemon), Some(&body)).await;
            assert_eq!(status, 200, "{text}");
            serde_json::from_str::<AdvertiseReply>(&text).unwrap()
        });
    }
    set.join_all().await
}

/// Issue #6 item 3: the reply carries the median of the checkpoint transfer
/// rates the current ads advertise (T_migr's bandwidth, Ryu & Hollingsworth
/// Eq. 5), for stations that have not measured their own.
#[tokio::test]
async fn reply_carries_the_median_checkpoint_rate_of_the_ads() {
    use gleaner_proto::wire::CHECKPOINT_TRANSFER_RATE_ATTR as RATE;
    let p = Pool::start(0.2, 0.0).await;
    // Nobody has measured a rate yet: none in the reply (and none on the wire).
    let r = p.advertise(&home("fresh", 0, 0)).await;
    assert_eq!(r.checkpoint_transfer_rate, None);
    let with_rate = |name: &str, rate: &str| {
        let mut a = ad(name, OwnerState::Av, 1, 0, &[]);
        a.attrs.insert(RATE.into(), rate.into());
        a
    };
    p.advertise(&with_rate("h1", "20000000")).await;
    let r = p.advertise(&with_rate("h2", "60000000")).await;
    assert_eq!(r.checkpoint_transfer_rate, Some(40_000_000));
    // A station without a rate of its own gets the pool's.
    let r = p.advertise(&home("fresh", 0, 0)).await;
    assert_eq!(r.checkpoint_transfer_rate, Some(40_000_000));
    // A third rate (and a garbage one, ignored): the middle one.
    p.advertise(&with_rate("h4", "not a number")).await;
    let r = p.advertise(&with_rate("h3", "1000")).await;
    assert_eq!(r.checkpoint_transfer_rate, Some(20_000_000));
    // A station's newer ad replaces its old rate.
    let r = p.advertise(&with_rate("h3", "90000000")).await;
    assert_eq!(r.checkpoint_transfer_rate, Some(60_000_000));
    p.coord.stop().await.unwrap();
}

/// `GET /v1/events`: a grant reaches its home's waiting long poll as soon
/// as the pass that decides it runs (here the host's ad turning AV), with
/// no advertisement of the home in between; each station reads only its
/// own mail, users none; a message goes until acknowledged, and never also
/// in an advertise reply.
#[tokio::test]
async fn events_stream_pushes_grants_to_their_station_only() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = CoordinatorConfig {
        // No interval pass during the test: only events decide.
        scheduling_interval_secs: 3600.0,
        ..config(dir.path(), 1.0, 0.0)
    };
    let p = Pool::start_with(dir, cfg).await;
    assert!(p.advertise(&home("a", 1, 0)).await.grants.is_empty());
    let (addr, a_token) = (p.addr(), p.station("a"));
    let poll = tokio::spawn(async move {
        http(
            addr,
            "GET",
            "/v1/events?after=0&wait=20",
            Some(&a_token),
            None,
        )
        .await
    });
    sleep(200).await;
    assert!(!poll.is_finished(), "no mail yet: the call waits");
    p.advertise(&ad("h1", OwnerState::Av, 1, 0, &[])).await;
    let (status, text) = poll.await.unwrap();
    assert_eq!(status, 200, "{text}");
    let got: EventsReply = serde_json::from_str(&text).unwrap();
    assert_eq!(got.grants.len(), 1, "{got:?}");
    assert_eq!(got.grants[0].host, "h1");
    assert!(got.last > 0);
    // Not acknowledged yet: sent again; another station sees none of it.
    let again = "/v1/events?after=0&wait=0";
    let (_, text) = http(p.addr(), "GET", again, Some(&p.station("a")), None).await;
    assert_eq!(serde_json::from_str::<EventsReply>(&text).unwrap(), got);
    let (status, text) = http(p.addr(), "GET", again, Some(&p.station("h1")), None).await;
    assert_eq!(status, 200);
    assert!(
        serde_json::from_str::<EventsReply>(&text)
            .unwrap()
            .grants
            .is_empty()
    );
    let (status, _) = http(p.addr(), "GET", again, Some(&p.user), None).await;
    assert_eq!(status, 403, "users read no station's mail");
    // Sent on the stream: not in the home's next advertise reply.
    assert!(p.advertise(&home("a", 1, 0)).await.grants.is_empty());
    let acked = format!("/v1/events?after={}&wait=0", got.last);
    let (_, text) = http(p.addr(), "GET", &acked, Some(&p.station("a")), None).await;
    let rest: EventsReply = serde_json::from_str(&text).unwrap();
    assert!(rest.grants.is_empty() && rest.last == got.last, "{rest:?}");
    p.coord.stop().await.unwrap();
}
