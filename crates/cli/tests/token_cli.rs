//! `glean token create|list|revoke` as a real process against a temporary
//! coordinator state directory.

use gleaner_coordinator::tokens::{TokenRecord, TokenRegistry};
use gleaner_proto::creds::{PoolVerifier, Role, load_or_create_signing_key};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const DAY: u64 = 86_400;

fn glean(args: &[&str], state_dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glean"))
        .args(args)
        .arg("--state-dir")
        .arg(state_dir)
        .output()
        .unwrap()
}

/// A coordinator state directory with a signing key; returns its verifier.
fn coordinator_dir() -> (tempfile::TempDir, PoolVerifier) {
    let dir = tempfile::tempdir().unwrap();
    let signer = load_or_create_signing_key(&dir.path().join("signing.key")).unwrap();
    (dir, signer.verifier())
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `create`, asserts stdout is exactly one line, returns the token.
fn create_ok(args: &[&str], dir: &Path) -> String {
    let o = glean(&[&["token", "create"], args].concat(), dir);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.lines().count(),
        1,
        "stdout must hold the token only: {out:?}"
    );
    out.trim().to_string()
}

fn list_json(dir: &Path) -> Vec<TokenRecord> {
    let o = glean(&["token", "list", "--json"], dir);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn create_list_revoke_round_trip() {
    let (dir, verifier) = coordinator_dir();
    let t0 = now();
    let user = create_ok(&["--user", "alice"], dir.path());
    let admin = create_ok(&["--admin", "root", "--expires", "2"], dir.path());
    let station = create_ok(
        &["--station", "ws12.example.org", "--expires", "0"],
        dir.path(),
    );
    let station_default = create_ok(&["--station", "ws13"], dir.path());
    let t1 = now();

    let u = verifier.verify(&user, t1).unwrap();
    assert_eq!((u.subject.as_str(), u.role), ("alice", Role::User));
    let exp = u.expires_at.unwrap();
    assert!((t0 + 30 * DAY..=t1 + 30 * DAY).contains(&exp), "{exp}");
    let a = verifier.verify(&admin, t1).unwrap();
    assert_eq!(a.role, Role::Admin);
    assert!(a.expires_at.unwrap() <= t1 + 2 * DAY);
    let s = verifier.verify(&station, u64::MAX - 1).unwrap();
    assert_eq!((s.role, s.expires_at), (Role::Station, None));
    let sd = verifier.verify(&station_default, t1).unwrap();
    assert!(sd.expires_at.unwrap() >= t0 + 365 * DAY);

    // The list shows every token's facts and never a token.
    let list = list_json(dir.path());
    let ids: Vec<&str> = list.iter().map(|r| r.token_id.as_str()).collect();
    assert_eq!(ids, [&u.token_id, &a.token_id, &s.token_id, &sd.token_id]);
    assert!(list.iter().all(|r| !r.revoked));
    let o = glean(&["token", "list"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    for word in [
        "ID",
        "SUBJECT",
        "ROLE",
        "ISSUED",
        "EXPIRES",
        "REVOKED",
        "alice",
        "ws12.example.org",
        "never",
    ] {
        assert!(table.contains(word), "{word} missing:\n{table}");
    }
    assert!(table.contains(&u.token_id), "{table}");
    for tok in [&user, &admin, &station] {
        let sig = tok.split('.').nth(1).unwrap();
        assert!(!table.contains(sig));
        let file = std::fs::read_to_string(dir.path().join("tokens.json")).unwrap();
        assert!(!file.contains(sig));
    }

    // Revoke: recorded, idempotent, and in the coordinator's revocations.
    let o = glean(&["token", "revoke", &s.token_id], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("revoked station token"),
        "{}",
        stdout(&o)
    );
    let o = glean(&["token", "revoke", &s.token_id], dir.path());
    assert!(o.status.success());
    assert!(stdout(&o).contains("already revoked"), "{}", stdout(&o));
    let list = list_json(dir.path());
    let rec = list.iter().find(|r| r.token_id == s.token_id).unwrap();
    assert!(rec.revoked && rec.revoked_at.is_some());
    assert_eq!(list.iter().filter(|r| r.revoked).count(), 1);
    let revs = TokenRegistry::in_state_dir(dir.path())
        .revocations(now())
        .unwrap();
    assert!(revs.is_revoked(&s) && !revs.is_revoked(&u));

    // Registry files are private.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.path().join("tokens.json")), 0o600);
    assert_eq!(mode(&dir.path().join("tokens.json.lock")), 0o600);
}

#[test]
fn coordinator_config_names_the_state_dir() {
    let (dir, verifier) = coordinator_dir();
    let conf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        conf.path(),
        format!("state_dir = {:?}\n", dir.path().display().to_string()),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_glean"))
        .args(["token", "create", "--user", "bob", "--config"])
        .arg(conf.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let c = verifier.verify(stdout(&o).trim(), now()).unwrap();
    assert_eq!(c.subject, "bob");
    assert_eq!(list_json(dir.path()).len(), 1);
}

/// A coordinator whose `signing_key` lies outside its state directory:
/// `glean token --config` signs with that key, as the coordinator does.
#[test]
fn coordinator_config_names_a_signing_key_elsewhere() {
    let state = tempfile::tempdir().unwrap();
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("pool-signing.key");
    let verifier = load_or_create_signing_key(&key).unwrap().verifier();
    let conf = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        conf.path(),
        format!(
            "state_dir = {:?}\nsigning_key = {:?}\n",
            state.path().display().to_string(),
            key.display().to_string()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_glean"))
        .args(["token", "create", "--station", "ws1", "--config"])
        .arg(conf.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let c = verifier.verify(stdout(&o).trim(), now()).unwrap();
    assert_eq!(c.subject, "ws1");
    let o = Command::new(env!("CARGO_BIN_EXE_glean"))
        .args(["token", "list", "--json", "--config"])
        .arg(conf.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: Vec<TokenRecord> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(state.path().join("tokens.json").exists());
}

#[test]
fn concurrent_creates_lose_no_entry() {
    let (dir, verifier) = coordinator_dir();
    let children: Vec<_> = (0..8)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_glean"))
                .args(["token", "create", "--user", &format!("user{i}")])
                .arg("--state-dir")
                .arg(dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut printed = Vec::new();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        printed.push(verifier.verify(stdout(&o).trim(), now()).unwrap());
    }
    let list = list_json(dir.path());
    assert_eq!(list.len(), 8, "{list:#?}");
    let mut ids: Vec<&str> = list.iter().map(|r| r.token_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 8);
    for c in &printed {
        assert!(
            list.iter()
                .any(|r| r.token_id == c.token_id && r.subject == c.subject),
            "{c:?} missing"
        );
    }
}

/// Runs a failing `glean`, asserts exit 2 and that stderr holds `needle`.
fn fails_with(args: &[&str], dir: &Path, needle: &str) {
    let o = glean(args, dir);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
    assert!(o.stdout.is_empty(), "{args:?}: {}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
}

#[test]
fn without_the_signing_key_nothing_is_issued() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["token", "create", "--user", "alice"][..],
        &["token", "list"],
        &["token", "revoke", "0123"],
    ] {
        fails_with(args, dir.path(), "no signing key at");
        fails_with(args, dir.path(), "coordinator's signing key");
    }
    // Nothing was created on the way, least of all a key.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // A station holds only pool.pub: that is not enough either.
    let (_coord, verifier) = coordinator_dir();
    let station = tempfile::tempdir().unwrap();
    gleaner_proto::creds::write_public_key(&station.path().join("pool.pub"), &verifier).unwrap();
    fails_with(
        &["token", "create", "--admin", "root"],
        station.path(),
        "no signing key at",
    );
}

#[test]
fn bad_inputs_give_clear_errors() {
    let (dir, _) = coordinator_dir();
    let d = dir.path();
    fails_with(
        &["token", "create", "--user", "Alice"],
        d,
        "user name \"Alice\" is not valid",
    );
    fails_with(
        &["token", "create", "--user", "alice", "--expires", "0"],
        d,
        "always expire",
    );
    fails_with(
        &["token", "create", "--admin", "root", "--expires", "0"],
        d,
        "always expire",
    );
    fails_with(
        &["token", "create", "--station", "ws 12"],
        d,
        "station name \"ws 12\" is not valid",
    );
    fails_with(
        &["token", "create", "--user", "a", "--expires", "999999"],
        d,
        "at most",
    );
    fails_with(
        &["token", "create", "--user", "a", "--expires=-1"],
        d,
        "invalid value '-1' for '--expires <DAYS>'",
    );
    fails_with(&["token", "create"], d, "--user");
    fails_with(
        &["token", "create", "--user", "a", "--station", "b"],
        d,
        "cannot be used with",
    );
    fails_with(
        &["token", "list", "--config", "c.toml"],
        d,
        "cannot be used with",
    );
    fails_with(
        &["token", "revoke", "feedface"],
        d,
        "no token with id \"feedface\"",
    );
    // Nothing above wrote a registry entry.
    assert!(list_json(d).is_empty());

    let o = Command::new(env!("CARGO_BIN_EXE_glean"))
        .args(["token", "list", "--config", "/nonexistent/coordinator.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/coordinator.toml"),
        "{}",
        stderr(&o)
    );

    std::fs::write(d.join("tokens.json"), "{ not json").unwrap();
    fails_with(&["token", "list"], d, "tokens.json");
    fails_with(&["token", "create", "--user", "a"], d, "tokens.json");
    assert_eq!(
        std::fs::read_to_string(d.join("tokens.json")).unwrap(),
        "{ not json"
    );

    let key = d.join("signing.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails_with(&["token", "create", "--user", "a"], d, "chmod 600");
}
