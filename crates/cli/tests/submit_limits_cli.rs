//! `glean submit` refuses a submit file over the limits (issue 14, item 2)
//! before it asks the station anything: the macro bomb that used to hang
//! it for over a minute is refused in milliseconds with file:line, and so
//! are a file too large to read and values no host could run. No station
//! runs here: `GLEAN_HOME` names one that does not answer, so reaching it
//! would be an error of another kind. The bomb's wall time and the CLI's
//! peak memory (`/usr/bin/time`, when installed) are printed.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `glean submit FILE` with a `GLEAN_HOME` whose station is a closed port;
/// (exit code, stderr, peak memory in KiB when measurable, wall time).
fn submit(home: &Path, file: &Path) -> (i32, String, Option<u64>, Duration) {
    let glean = assert_cmd::cargo::cargo_bin("glean");
    let timed = Path::new("/usr/bin/time").exists();
    let mut c = if timed {
        let mut c = Command::new("/usr/bin/time");
        c.args(["-f", "peak-kib=%M"]).arg(glean);
        c
    } else {
        Command::new(glean)
    };
    c.arg("submit")
        .arg(file)
        .env("GLEAN_HOME", home)
        .env_remove("GLEAN_LOG");
    let t0 = Instant::now();
    let out = c.output().unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let peak = err
        .lines()
        .find_map(|l| l.strip_prefix("peak-kib=")?.trim().parse().ok());
    // `time` exits with the command's code.
    (out.status.code().unwrap_or(-1), err, peak, took)
}

fn home(dir: &Path) -> std::path::PathBuf {
    let home = dir.join("glean");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("pool.toml"), "station = \"http://127.0.0.1:9\"\n").unwrap();
    std::fs::write(home.join("token"), "not-a-token\n").unwrap();
    home
}

#[test]
fn the_forty_level_macro_bomb_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let home = home(dir.path());
    let mut text = String::from("executable = /bin/echo\nm1 = xx\n");
    for i in 1..40 {
        text.push_str(&format!("m{} = $(m{i})$(m{i})\n", i + 1));
    }
    text.push_str("arguments = $(m40)\nqueue\n");
    let file = dir.path().join("bomb40.sub");
    std::fs::write(&file, &text).unwrap();

    let (code, err, peak, took) = submit(&home, &file);
    println!(
        "glean submit bomb40.sub ({} bytes): exit {code} in {took:?}, peak memory {} KiB",
        text.len(),
        peak.map_or("?".into(), |p| p.to_string())
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("bomb40.sub:23: m22 (through $(m21)) expands to more than 1 MiB"),
        "{err}"
    );
    assert!(err.contains("bomb40.sub:42: "), "{err}");
    assert!(err.contains("no jobs were submitted"), "{err}");
    // It used to run for over a minute; generous for a loaded machine.
    assert!(took < Duration::from_secs(10), "{took:?}");
    if let Some(p) = peak {
        assert!(p < 256 * 1024, "peak memory {p} KiB");
    }
}

#[test]
fn files_too_large_and_impossible_values_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = home(dir.path());

    let big = dir.path().join("big.sub");
    let mut text = String::from("executable = /bin/echo\n");
    text.push_str(&format!("# {}\nqueue\n", "c".repeat(9 << 20)));
    std::fs::write(&big, &text).unwrap();
    let (code, err, _, _) = submit(&home, &big);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("big.sub: the file is 9 MiB, more than the 8 MiB limit for a submit file"),
        "{err}"
    );

    let nul = dir.path().join("nul.sub");
    std::fs::write(&nul, "executable = /bin/ec\0ho\nqueue 2\n").unwrap();
    let (code, err, _, _) = submit(&home, &nul);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("nul.sub:1: executable of proc 0: the path contains a NUL byte"),
        "{err}"
    );

    let latin = dir.path().join("latin.sub");
    std::fs::write(
        &latin,
        b"executable = /bin/echo\narguments = caf\xe9\nqueue\n",
    )
    .unwrap();
    let (code, err, _, _) = submit(&home, &latin);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("latin.sub:2: not UTF-8 text"), "{err}");
}
