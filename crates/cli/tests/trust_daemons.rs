//! Issue 12 at the level of whole daemons (`docs/security.md`, "Keys and
//! credentials"): only the coordinator holds the pool's signing key, and a
//! station starts only with its own valid token.
//!
//! - A personal pool (`glean up`, a coordinator and two stations): the
//!   coordinator's signing key (its seed, in every encoding a file could
//!   hold it: the key file's text, base64url, standard base64, hex, raw
//!   bytes) appears in no file outside the coordinator's state directory,
//!   nor in any station process's command line or environment; each
//!   station's directory holds only what verifies (`pool.pub`) and its own
//!   token, and `glean token create|list|revoke` with a station's directory
//!   issues nothing.
//! - A real `glean station` started with another station's token, a user
//!   token, a token of another pool, an expired token, a revoked token or a
//!   token file others may read: each exits at once with an error naming
//!   the file and the reason, and leaves its state directory as it was (no
//!   queue, no socket).

mod common;

use base64::Engine;
use common::{TestOwner, free_base_port, free_port, glean_bin, glean_in, up, wait_pool_up};
use gleaner_proto::creds::{Claims, Revocations, Role};
use gleaner_testkit::TestKeys;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every regular file below `dir`, without following links.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            files_below(&e.path(), out);
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

/// The forms in which a file could hold the signing key's seed.
fn key_forms(signing_key_text: &str) -> Vec<(String, Vec<u8>)> {
    let b64 = signing_key_text
        .lines()
        .find_map(|l| l.strip_prefix("gleaner-ed25519-secret "))
        .expect("signing.key: its key line")
        .trim();
    let seed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(b64)
        .expect("signing.key holds base64url");
    assert_eq!(seed.len(), 32, "an Ed25519 seed");
    let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
    vec![
        ("key file text".into(), b64.as_bytes().to_vec()),
        (
            "standard base64".into(),
            base64::engine::general_purpose::STANDARD_NO_PAD
                .encode(&seed)
                .into_bytes(),
        ),
        ("hex".into(), hex.into_bytes()),
        ("raw seed".into(), seed),
    ]
}

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                    let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                    holds(&cmd, needle.as_bytes()).then_some(pid)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_signing_key_exists_only_on_the_coordinator() {
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    let owner = TestOwner::new("keyscan").unwrap();
    owner.dir(&work).unwrap();
    let port = free_base_port(4);
    let _pool = up(&home, 2, port, None);
    wait_pool_up(&home);

    let coord_state = home.join("coordinator/state");
    let key_text = std::fs::read_to_string(coord_state.join("signing.key")).unwrap();
    let mode = std::fs::metadata(coord_state.join("signing.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "signing.key readable by others: {mode:o}");
    let forms = key_forms(&key_text);

    // Every file of the pool outside the coordinator's state, and the
    // stations' execute directory (kept outside GLEAN_HOME when root).
    let mut files = Vec::new();
    files_below(&home, &mut files);
    let execute = PathBuf::from(format!("/var/lib/gleaner/up-{port}"));
    files_below(&execute, &mut files);
    let outside: Vec<&PathBuf> = files
        .iter()
        .filter(|f| !f.starts_with(&coord_state))
        .collect();
    let stations: Vec<PathBuf> = (0..2)
        .map(|k| home.join(format!("stations/station{k}")))
        .collect();
    for s in &stations {
        assert!(
            outside.iter().any(|f| f.starts_with(s)),
            "no file of {} scanned",
            s.display()
        );
    }
    for f in &outside {
        let Ok(data) = std::fs::read(f) else { continue };
        for (form, bytes) in &forms {
            assert!(
                !holds(&data, bytes),
                "{} holds the signing key ({form})",
                f.display()
            );
        }
        assert!(
            !holds(&data, b"gleaner-ed25519-secret"),
            "{} holds a signing key",
            f.display()
        );
    }
    eprintln!(
        "scanned {} files outside {}: no signing key",
        outside.len(),
        coord_state.display()
    );

    // Nor do the station processes carry it in their arguments or
    // environment.
    for s in &stations {
        let config = s.join("station.toml");
        let pids = processes_mentioning(&config.to_string_lossy());
        assert!(!pids.is_empty(), "station of {} not running", s.display());
        for pid in pids {
            for what in ["cmdline", "environ"] {
                let data = std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
                for (form, bytes) in &forms {
                    assert!(!holds(&data, bytes), "station {pid} {what}: key ({form})");
                }
            }
        }
    }

    // A station's own directory cannot mint, list or revoke: nothing there
    // signs, and nothing is created.
    for s in &stations {
        let before = dir_listing(s);
        for args in [
            vec!["token", "create", "--admin", "root"],
            vec!["token", "create", "--user", "mallory"],
            vec!["token", "list"],
            vec!["token", "revoke", "00"],
        ] {
            let out = Command::new(glean_bin())
                .args(&args)
                .arg("--state-dir")
                .arg(s)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{args:?} succeeded on {}",
                s.display()
            );
            assert!(out.stdout.is_empty(), "{args:?} printed a token");
            assert!(err.contains("no signing key"), "{args:?}: {err}");
        }
        // The running station writes its log and its queue meanwhile:
        // those may grow; no file may appear, vanish or change elsewhere.
        let steady = |l: Vec<(PathBuf, u64)>| -> Vec<(PathBuf, Option<u64>)> {
            l.into_iter()
                .map(|(n, size)| {
                    let live = n.extension().is_some_and(|e| e == "log") || n.starts_with("state");
                    (n, (!live).then_some(size))
                })
                .collect()
        };
        assert_eq!(
            steady(dir_listing(s)),
            steady(before),
            "{} changed",
            s.display()
        );
    }
    // The pool still works for its users afterwards.
    let out = glean_in(&home, &work, &["status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Names (relative) and sizes of everything below `dir`.
fn dir_listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut files = Vec::new();
    files_below(dir, &mut files);
    let mut v: Vec<(PathBuf, u64)> = files
        .into_iter()
        .filter_map(|f| {
            let len = std::fs::metadata(&f).ok()?.len();
            Some((f.strip_prefix(dir).ok()?.to_path_buf(), len))
        })
        .collect();
    v.sort();
    v
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(role: Role, subject: &str, expires_at: Option<u64>, id: &str) -> Claims {
    Claims {
        subject: subject.into(),
        role,
        // An hour ago, so that a token may also have expired already.
        issued_at: now_secs() - 3600,
        expires_at,
        token_id: id.into(),
    }
}

#[test]
fn a_station_starts_only_with_its_own_valid_token() {
    let tmp = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(&tmp.path().join("keys")).unwrap();
    let other_pool = TestKeys::in_dir(&tmp.path().join("other-keys")).unwrap();
    let week = Some(now_secs() + 7 * 86_400);
    let revoked_id = "7e1ed0000000000000000000000000aa";
    let cases: Vec<(&str, String, u32, bool, &str)> = vec![
        (
            "another station's token",
            keys.sign(&claims(Role::Station, "ws2", None, "a1")),
            0o600,
            false,
            "station \"ws2\"",
        ),
        (
            "a user token",
            keys.sign(&claims(Role::User, "ws1", week, "a2")),
            0o600,
            false,
            "not a station token",
        ),
        (
            "a token of another pool",
            other_pool.sign(&claims(Role::Station, "ws1", None, "a3")),
            0o600,
            false,
            "not valid for this pool",
        ),
        (
            "an expired token",
            keys.sign(&claims(Role::Station, "ws1", Some(now_secs() - 60), "a4")),
            0o600,
            false,
            "expired",
        ),
        (
            "a revoked token",
            keys.sign(&claims(Role::Station, "ws1", None, revoked_id)),
            0o600,
            true,
            "revoked",
        ),
        (
            "a token file others may read",
            keys.sign(&claims(Role::Station, "ws1", None, "a6")),
            0o644,
            false,
            "chmod 600",
        ),
    ];
    for (i, (what, token, mode, revoke, says)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("case{i}"));
        let state = dir.join("state");
        std::fs::create_dir_all(&state).unwrap();
        let token_file = dir.join("station.token");
        gleaner_testkit::write_private(&token_file, token).unwrap();
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(*mode)).unwrap();
        if *revoke {
            let mut r = Revocations::new();
            r.revoke(revoked_id, None);
            r.save(&state.join("revoked.json")).unwrap();
        }
        let config = dir.join("station.toml");
        let port = free_port();
        std::fs::write(
            &config,
            format!(
                "name = \"ws1\"\nlisten = \"127.0.0.1:{port}\"\nstate_dir = \"{}\"\n\
                 public_key = \"{}\"\ntoken_file = \"{}\"\nuser_socket = \"{}\"\n\
                 [isolation]\ncgroups = \"off\"\nslot_prefix = \"{}\"\n",
                state.display(),
                keys.public_key().display(),
                token_file.display(),
                state.join("user.sock").display(),
                gleaner_testkit::slot_prefix(),
            ),
        )
        .unwrap();
        let before = dir_listing(&state);
        let t = Instant::now();
        let out = Command::new(glean_bin())
            .args(["station", "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let took = t.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: the station started");
        assert!(
            err.contains(says) && err.contains(&token_file.display().to_string()),
            "{what}: {err}"
        );
        assert!(took < Duration::from_secs(20), "{what}: took {took:?}");
        assert_eq!(dir_listing(&state), before, "{what}: state changed");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{what}: something listens"
        );
        eprintln!(
            "{what}: refused in {took:?}: {}",
            err.trim().lines().last().unwrap_or("")
        );
    }
}
