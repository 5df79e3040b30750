//! The reservation API over real HTTP on loopback (Mutka 1988 §6.3.4):
//! who may read and change what, bad bodies, and a restart that keeps
//! every reservation and balance. Each refusal is checked to change
//! nothing.

mod common;

use gleaner_coordinator::reserve_api::{ReservationsView, SyncReply};
use gleaner_coordinator::reserve_config::{ReservationsConfig, ShareConfig};
use gleaner_coordinator::{CoordinatorConfig, RunningCoordinator, spawn_for_test};
use gleaner_core::detector::OwnerState;
use gleaner_proto::creds::{Claims, PoolSigner, Role, load_or_create_signing_key};
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
        token_id: format!("t-{subject}-{role:?}"),
    })
    .unwrap()
}

async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

fn config(dir: &Path) -> CoordinatorConfig {
    CoordinatorConfig {
        state_dir: dir.join("state"),
        scheduling_interval_secs: 0.5,
        advertise_period_secs: 1,
        seed: Some(3),
        reservations: Some(ReservationsConfig {
            reservable_share: ShareConfig::All(1.0),
            accounts: [("alice", "s0"), ("bob", "s1")]
                .into_iter()
                .map(|(u, s)| (u.to_string(), s.to_string()))
                .collect(),
            ..ReservationsConfig::default()
        }),
        ..CoordinatorConfig::default()
    }
}

struct Pool {
    key: PoolSigner,
    coord: RunningCoordinator,
}

impl Pool {
    async fn start(dir: &Path) -> Pool {
        let cfg = config(dir);
        let key = load_or_create_signing_key(&cfg.signing_key_path()).unwrap();
        let coord = spawn_for_test(cfg).await.unwrap();
        let p = Pool { key, coord };
        for s in ["s0", "s1", "s2", "s3"] {
            let body = serde_json::to_string(&common::ad(s, OwnerState::Av, 1, 0, &[])).unwrap();
            let t = token(&p.key, s, Role::Station);
            let (st, text) = http(p.addr(), "POST", "/v1/advertise", Some(&t), &body).await;
            assert_eq!(st, 200, "{text}");
        }
        p
    }
    fn addr(&self) -> SocketAddr {
        self.coord.addr()
    }
    fn tok(&self, who: &str, role: Role) -> String {
        token(&self.key, who, role)
    }
    async fn admin_view(&self) -> serde_json::Value {
        let (st, text) = http(
            self.addr(),
            "GET",
            "/v1/reservations",
            Some(&self.tok("root", Role::Admin)),
            "",
        )
        .await;
        assert_eq!(st, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }
}

/// A request row for `user`: `machines` machines in the slot after next.
fn add_row(user: &str, machines: u32, view: &ReservationsView) -> String {
    let start = (view.slot + 2) * view.slot_secs * 1_000_000;
    let stop = start + view.slot_secs * 1_000_000;
    serde_json::json!({"rows": [{"row": 1, "op": {"op": "add", "user": user,
        "start": start, "stop": stop, "lower": machines, "upper": machines,
        "class": "second"}}]})
    .to_string()
}

/// The state an attack must not change: reservations, money, bank.
fn money_and_list(v: &serde_json::Value) -> serde_json::Value {
    serde_json::json!([
        v["reservations"],
        v["tables"]["stations"],
        v["tables"]["bank"]
    ])
}

#[tokio::test]
async fn users_act_only_for_themselves_and_stations_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pool::start(dir.path()).await;
    let alice = p.tok("alice", Role::User);
    let bob = p.tok("bob", Role::User);
    let station = p.tok("s2", Role::Station);

    let (st, text) = http(p.addr(), "GET", "/v1/reservations", Some(&alice), "").await;
    assert_eq!(st, 200, "{text}");
    let view: ReservationsView = serde_json::from_str(&text).unwrap();
    assert_eq!(view.user, "alice");
    assert_eq!(view.account.as_ref().unwrap().station, "s0");
    assert!(view.tables.is_none(), "users do not see the System Table");
    assert!(
        view.availability.iter().all(|s| s.free == 4),
        "{:?}",
        view.availability
    );

    // No token, another user's view, a station's token: refused.
    let (st, _) = http(p.addr(), "GET", "/v1/reservations", None, "").await;
    assert_eq!(st, 401);
    let (st, text) = http(
        p.addr(),
        "GET",
        "/v1/reservations?user=bob",
        Some(&alice),
        "",
    )
    .await;
    assert_eq!(st, 403, "{text}");
    let (st, _) = http(p.addr(), "GET", "/v1/reservations", Some(&station), "").await;
    assert_eq!(st, 403);

    let before = money_and_list(&p.admin_view().await);
    // A station cannot reserve, even for a user; refused before the body
    // is read (garbage gets the same 403).
    for body in [add_row("alice", 1, &view), "{garbage".to_string()] {
        let (st, text) = http(
            p.addr(),
            "POST",
            "/v1/reservations/sync",
            Some(&station),
            &body,
        )
        .await;
        assert_eq!(st, 403, "{text}");
    }
    // Alice cannot reserve for Bob.
    let (st, text) = http(
        p.addr(),
        "POST",
        "/v1/reservations/sync",
        Some(&alice),
        &add_row("bob", 1, &view),
    )
    .await;
    assert_eq!(st, 200, "{text}");
    let r: SyncReply = serde_json::from_str(&text).unwrap();
    assert!(!r.acks[0].accepted);
    assert_eq!(
        money_and_list(&p.admin_view().await),
        before,
        "no state change"
    );
    // Bad bodies: 400 naming the field.
    let (st, text) = http(
        p.addr(),
        "POST",
        "/v1/reservations/sync",
        Some(&alice),
        "{\"rows\": [{\"row\": \"x\"}]}",
    )
    .await;
    assert_eq!(st, 400, "{text}");
    assert!(text.contains("rows[0]"), "{text}");
    assert_eq!(
        money_and_list(&p.admin_view().await),
        before,
        "no state change"
    );

    // Alice reserves 2 machines; Bob cannot cancel or shrink it.
    let (st, text) = http(
        p.addr(),
        "POST",
        "/v1/reservations/sync",
        Some(&alice),
        &add_row("alice", 2, &view),
    )
    .await;
    assert_eq!(st, 200, "{text}");
    let r: SyncReply = serde_json::from_str(&text).unwrap();
    assert!(r.acks[0].accepted, "{:?}", r.acks);
    let id = r.acks[0].reservation.unwrap();
    let after_reserve = money_and_list(&p.admin_view().await);
    assert_ne!(after_reserve, before);
    for machines in ["null", "1"] {
        let body = format!(
            "{{\"rows\": [{{\"row\": 1, \"op\": {{\"op\": \"delete\", \"reservation\": {id}, \"machines\": {machines}}}}}]}}"
        );
        let (st, text) = http(p.addr(), "POST", "/v1/reservations/sync", Some(&bob), &body).await;
        assert_eq!(st, 200, "{text}");
        let r: SyncReply = serde_json::from_str(&text).unwrap();
        assert!(!r.acks[0].accepted);
        assert!(
            r.acks[0]
                .error
                .as_deref()
                .unwrap_or("")
                .contains("another account"),
            "{:?}",
            r.acks
        );
    }
    assert_eq!(
        money_and_list(&p.admin_view().await),
        after_reserve,
        "no state change"
    );
    // Bob's own view does not show Alice's reservation.
    let (_, text) = http(p.addr(), "GET", "/v1/reservations", Some(&bob), "").await;
    let bv: ReservationsView = serde_json::from_str(&text).unwrap();
    assert!(bv.reservations.is_empty());

    // A restart keeps every reservation and balance.
    p.coord.stop().await.unwrap();
    let p = Pool::start(dir.path()).await;
    assert_eq!(money_and_list(&p.admin_view().await), after_reserve);
}

#[tokio::test]
async fn an_admin_cancels_a_users_reservation_and_a_user_cannot_act_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pool::start(dir.path()).await;
    let alice = p.tok("alice", Role::User);
    let bob = p.tok("bob", Role::User);
    let (_, text) = http(p.addr(), "GET", "/v1/reservations", Some(&alice), "").await;
    let view: ReservationsView = serde_json::from_str(&text).unwrap();
    let (st, text) = http(
        p.addr(),
        "POST",
        "/v1/reservations/sync",
        Some(&alice),
        // Far enough ahead to be cancelled (Last_cancel_time, L1042).
        &serde_json::json!({"rows": [{"row": 1, "op": {"op": "add", "user": "alice",
            "start": (view.slot + 6) * view.slot_secs * 1_000_000,
            "stop": (view.slot + 7) * view.slot_secs * 1_000_000,
            "lower": 2, "upper": 2, "class": "second"}}]})
        .to_string(),
    )
    .await;
    assert_eq!(st, 200, "{text}");
    let r: SyncReply = serde_json::from_str(&text).unwrap();
    let id = r.acks[0].reservation.unwrap();
    let cancel = format!(
        "{{\"rows\": [{{\"row\": 1, \"op\": {{\"op\": \"delete\", \"reservation\": {id}, \"machines\": null}}}}]}}"
    );
    let reserved = money_and_list(&p.admin_view().await);

    // Bob naming Alice: refused before the body is read, nothing changes.
    for body in [cancel.as_str(), "{garbage"] {
        let (st, text) = http(
            p.addr(),
            "POST",
            "/v1/reservations/sync?user=alice",
            Some(&bob),
            body,
        )
        .await;
        assert_eq!(st, 403, "{text}");
    }
    assert_eq!(money_and_list(&p.admin_view().await), reserved);

    // An admin acting for Alice cancels it; the refund is Alice's.
    let admin = p.tok("root", Role::Admin);
    let (st, text) = http(
        p.addr(),
        "POST",
        "/v1/reservations/sync?user=alice",
        Some(&admin),
        &cancel,
    )
    .await;
    assert_eq!(st, 200, "{text}");
    let r: SyncReply = serde_json::from_str(&text).unwrap();
    assert!(r.acks[0].accepted, "{:?}", r.acks);
    assert_eq!(r.view.user, "alice");
    assert!(
        r.view
            .reservations
            .iter()
            .all(|x| x.id != id || x.counts.values().all(|&m| m == 0)),
        "{:?}",
        r.view.reservations
    );
    assert_ne!(money_and_list(&p.admin_view().await), reserved);
}
