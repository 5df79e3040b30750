//! End-to-end tests of the `glean` binary (real process, real files).

use assert_cmd::Command;

fn glean() -> Command {
    Command::cargo_bin("glean").unwrap()
}

#[test]
fn classad_eval_uses_target_ad_and_prints_classad_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let ad = dir.path().join("machine.ad");
    std::fs::write(&ad, "Memory = 2048\nArch = \"X86_64\"\n").unwrap();
    let out = glean()
        .args([
            "classad",
            "eval",
            "TARGET.Memory >= 1024 && Arch == \"x86_64\"",
        ])
        .arg("--target")
        .arg(&ad)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "true");

    let out = glean()
        .args(["classad", "eval", "TARGET.Disk > 10"])
        .arg("--target")
        .arg(&ad)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "undefined");
}

#[test]
fn classad_eval_reports_bad_expressions_and_files_clearly() {
    let out = glean().args(["classad", "eval", "1 +"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("column"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ad");
    std::fs::write(&bad, "Memory = = 3\n").unwrap();
    let out = glean()
        .args(["classad", "eval", "1"])
        .arg("--my")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.ad"), "{err}");
}

/// `--strict` passes when every check passes: the reservation market's
/// experiment through the real binary.
#[test]
fn sim_market_quick_strict_passes() {
    let dir = tempfile::tempdir().unwrap();
    let out = glean()
        .args([
            "sim", "market", "--quick", "--strict", "--seeds", "1", "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let summary = std::fs::read_to_string(dir.path().join("market/summary.md")).unwrap();
    assert!(summary.contains("free market") && summary.contains("PAC"));
}

#[test]
fn sim_list_names_every_experiment_and_unknown_names_fail() {
    let out = glean().args(["sim", "list"]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    for name in [
        "updown",
        "profile",
        "linger",
        "migration",
        "reservations",
        "market",
        "gang",
        "condor_month",
        "ps_toy",
        "owner",
        "throttle",
    ] {
        assert!(s.contains(name), "{s}");
    }
    let out = glean()
        .args(["sim", "nosuch", "--out"])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown experiment"));
}
