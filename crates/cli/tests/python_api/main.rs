//! The Python API (`python/`, docs/python.md) end to end: its pytest
//! suites run in the virtual environment `scripts/python-api.sh` builds
//! (`target/pyvenv`, or `$GLEANER_PYTHON_VENV`):
//!
//! - `differential`: Gleaner's `classad2` and `htcondor2.Submit` /
//!   `JobEventLog` against HTCondor 25's own modules, case by case (no
//!   pool);
//! - `on_a_personal_pool`: a `glean up` pool, and as a Unix user the test
//!   creates, the API's tests against it (`python/tests/pool/`), then
//!   HTCondor's documentation examples and tutorial cells run unchanged
//!   (`python/tests/docs/`), then the PyPI clients installed in the
//!   environment (`python/tests/clients/`).
//!
//! A tutorial cell has HTCondor's tool log to `/tmp/log`: the test removes
//! the file its user made there, and one left by an earlier run's user
//! (whose account is gone) before it starts.
//!
//! Without the environment each test says it is skipped, and fails when
//! `GLEANER_REQUIRE_ORACLE=1` (CI) asks for every oracle.

#[path = "../common/mod.rs"]
mod common;

use common::{TestOwner, UpProcess, free_base_port, glean_bin, spawn_up, wait_pool_up};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The virtual environment with the package installed, if there is one.
fn venv() -> Option<PathBuf> {
    let dir = match std::env::var_os("GLEANER_PYTHON_VENV") {
        Some(d) => PathBuf::from(d),
        // Beside the `glean` binary's profile directory: target/pyvenv.
        None => glean_bin().parent()?.parent()?.join("pyvenv"),
    };
    let python = dir.join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import gleaner._native, htcondor2, classad2, pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(dir)
    } else {
        gleaner_testkit::oracle_missing(
            "the Python API's virtual environment",
            "scripts/python-api.sh",
            &format!(
                "{} cannot import gleaner, htcondor2, classad2 and pytest",
                python.display()
            ),
        );
        None
    }
}

fn show(out: &Output) -> String {
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn differential() {
    let Some(venv) = venv() else { return };
    let out = Command::new(venv.join("bin/python"))
        .args(["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"])
        .arg(repo().join("python/tests/test_differential.py"))
        .env("GLEANER_ORACLE_PYTHON", "python3")
        .output()
        .unwrap();
    println!("{}", show(&out));
    assert!(out.status.success(), "{}", show(&out));
}

/// A GLEAN_HOME for `owner` on the pool at `home`: its pool.toml and CA,
/// and a user token of its own (for the coordinator: `Collector`).
fn user_home(home: &Path, owner: &TestOwner, dir: &Path) {
    owner.dir(dir).unwrap();
    for f in ["pool.toml", "pool-ca.pem"] {
        if let Ok(data) = std::fs::read(home.join(f)) {
            owner.write(&dir.join(f), data).unwrap();
        }
    }
    let out = Command::new(glean_bin())
        .args(["token", "create", "--user", owner.name(), "--state-dir"])
        .arg(home.join("coordinator/state"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let token = dir.join("token");
    owner.write(&token, &out.stdout).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The file a tutorial cell has HTCondor's tool log to (`TOOL_LOG`).
const TOOL_LOG: &str = "/tmp/log";

/// Removes [`TOOL_LOG`] if `owns(its uid)`.
fn remove_tool_log(owns: impl Fn(u32) -> bool) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(meta) = std::fs::symlink_metadata(TOOL_LOG)
        && owns(meta.uid())
    {
        let _ = std::fs::remove_file(TOOL_LOG);
    }
}

#[test]
fn on_a_personal_pool() {
    let Some(venv) = venv() else { return };
    // One left by a test user of an earlier run that was cut short.
    remove_tool_log(|uid| uid != 0 && matches!(nix::unistd::User::from_uid(uid.into()), Ok(None)));
    let _slots = gleaner_testkit::DefaultSlots::hold();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let owner = TestOwner::new("pyapi").unwrap();
    let work = tmp.path().join("work");
    owner.dir(&work).unwrap();
    gleaner_testkit::reachable(&venv).unwrap();
    gleaner_testkit::reachable(&repo().join("python/tests/x")).unwrap();
    let pool = UpProcess(spawn_up(&home, 3, free_base_port(6), Stdio::null()));
    wait_pool_up(&home);
    let uhome = tmp.path().join("userhome");
    user_home(&home, &owner, &uhome);
    // A directory the guests' slot accounts may write, outside /tmp
    // (each guest has a /tmp of its own): for the client tool that needs a
    // file system every host shares (joblib-htcondor).
    let target = glean_bin()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let shared = tempfile::Builder::new()
        .prefix("pyapi-shared-")
        .tempdir_in(&target)
        .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    gleaner_testkit::reachable(&shared.path().join("x")).unwrap();
    // `glean` on PATH, for htcondor2.personal.PersonalPool.
    let path = format!(
        "{}:{}",
        glean_bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let pytest = |what: &str| {
        owner
            .command(venv.join("bin/python"))
            .args(["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"])
            .arg(repo().join("python/tests").join(what))
            .env("GLEAN_HOME", &uhome)
            .env("GLEANER_TEST_WORK", &work)
            .env("GLEANER_DOCS_REPORT", work.join("docs-report.json"))
            .env("GLEANER_SHARED_DIR", shared.path())
            .env("PATH", &path)
            .current_dir(&work)
            .output()
            .unwrap()
    };
    let api = pytest("pool");
    println!("{}", show(&api));
    let docs = pytest("docs");
    println!("{}", show(&docs));
    let report = std::fs::read_to_string(work.join("docs-report.json")).unwrap_or_default();
    println!("--- documentation examples and tutorial cells ---\n{report}");
    remove_tool_log(|uid| uid == owner.uid());
    let clients = pytest("clients");
    println!("{}", show(&clients));
    drop(pool);
    assert!(
        api.status.success(),
        "the API's tests failed:\n{}",
        show(&api)
    );
    assert!(
        docs.status.success(),
        "the documentation's examples failed:\n{}",
        show(&docs)
    );
    assert!(
        clients.status.success(),
        "the PyPI clients failed:\n{}",
        show(&clients)
    );
}
