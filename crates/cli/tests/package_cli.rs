//! What the Debian package takes from the binary, as a real process:
//! `glean generate` (man pages, completions, slot account names) and
//! `glean station --check-config`, which tells an administrator whether
//! the station would accept its configuration, credentials and slot
//! accounts (docs/packaging.md). The package itself is tested by
//! scripts/test-deb.sh.

use gleaner_testkit::TestKeys;
use std::path::Path;
use std::process::{Command, Output};

fn glean(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glean"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn man_pages_and_completions_come_from_the_cli_and_generate_stays_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let comp = dir.path().join("comp");
    let o = glean(&["generate", "man", man.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = glean(&["generate", "completions", comp.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));

    let page = |name: &str| std::fs::read_to_string(man.join(name)).unwrap();
    assert!(page("glean.1").contains(".TH glean 1"));
    // One page per subcommand, nested ones too, with their options.
    assert!(page("glean-station.1").contains("check\\-config"));
    assert!(page("glean-token-create.1").contains("station"));
    let pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !pages.iter().any(|p| p.contains("generate")),
        "the hidden subcommand got a page: {pages:?}"
    );
    for (file, marker) in [
        ("glean.bash", "_glean()"),
        ("_glean", "#compdef glean"),
        ("glean.fish", "complete -c glean"),
    ] {
        let body = std::fs::read_to_string(comp.join(file)).unwrap();
        assert!(body.contains(marker), "{file} lacks {marker:?}");
        assert!(
            body.contains("check-config"),
            "{file} lacks station's options"
        );
    }
    let help = text(&glean(&["--help"]));
    assert!(
        help.contains("station") && !help.contains("generate"),
        "{help}"
    );
}

fn write_config(path: &Path, keys_dir: &Path, token: &Path, isolation: &str) {
    std::fs::write(
        path,
        format!(
            "name = \"pkgcheck\"\nstate_dir = \"/nonexistent/state\"\n\
             public_key = \"{}\"\ntoken_file = \"{}\"\n[isolation]\n{isolation}",
            keys_dir.join("pool.pub").display(),
            token.display(),
        ),
    )
    .unwrap();
}

#[test]
fn check_config_names_what_the_station_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(dir.path()).unwrap();
    let token = keys
        .station_token_file("pkgcheck", &dir.path().join("station.token"))
        .unwrap();
    let config = dir.path().join("station.toml");
    let check = |config: &Path| {
        glean(&[
            "station",
            "--config",
            config.to_str().unwrap(),
            "--check-config",
        ])
    };
    // A station that runs no guests needs no slot accounts: all good.
    write_config(&config, dir.path(), &token, "");
    std::fs::write(
        &config,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("[isolation]", "role = \"submit_only\"\n[isolation]"),
    )
    .unwrap();
    let o = check(&config);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("ok    credentials: token") && out.contains("\"pkgcheck\""));

    // Another station's token: refused, saying whose it is.
    let other = keys
        .station_token_file("elsewhere", &dir.path().join("other.token"))
        .unwrap();
    write_config(&config, dir.path(), &other, "");
    let o = check(&config);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("FAIL  credentials") && text(&o).contains("\"elsewhere\""),
        "{}",
        text(&o)
    );

    // A broken file is an error naming the key, before any check.
    std::fs::write(&config, "[isolation]\nslot_count = 0\n").unwrap();
    let o = check(&config);
    assert!(!o.status.success());
    assert!(text(&o).contains("slot_count"), "{}", text(&o));
}

/// As root: missing accounts fail when the package is to make them, an
/// account the rules refuse fails with the reason, a proper one passes.
#[test]
fn check_config_holds_slot_accounts_to_the_station_rules() {
    if gleaner_testkit::skip_unless_root("creates slot accounts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let keys = TestKeys::in_dir(dir.path()).unwrap();
    let token = keys
        .station_token_file("pkgcheck", &dir.path().join("station.token"))
        .unwrap();
    let prefix = gleaner_testkit::slot_prefix();
    let config = dir.path().join("station.toml");
    write_config(
        &config,
        dir.path(),
        &token,
        &format!("slot_prefix = \"{prefix}\"\nslot_count = 1\ncreate_slot_users = false\n"),
    );
    let check = || {
        glean(&[
            "station",
            "--config",
            config.to_str().unwrap(),
            "--check-config",
        ])
    };
    let name = format!("{prefix}1");
    let o = check();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("missing: {name}")),
        "{}",
        text(&o)
    );

    // What `glean generate slot-accounts` names is what the check wants.
    let o = glean(&[
        "generate",
        "slot-accounts",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(text(&o).trim(), format!("{name} -"));

    // A login shell: refused with the reason.
    let useradd = |shell: &str| {
        let s = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--user-group",
                "--comment",
                "Gleaner guest slot",
                "--shell",
                shell,
                &name,
            ])
            .status()
            .unwrap();
        assert!(s.success());
    };
    useradd("/bin/sh");
    let o = check();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("login shell"), "{}", text(&o));
    assert!(
        Command::new("userdel")
            .arg(&name)
            .status()
            .unwrap()
            .success()
    );

    // As the package's postinst makes it: accepted.
    useradd("/usr/sbin/nologin");
    let o = check();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("ok    slot accounts: {name} (uid")),
        "{}",
        text(&o)
    );
}
