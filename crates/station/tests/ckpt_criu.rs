//! The CRIU backend: dump a running process tree and restore it. Runs only
//! where a working CRIU exists (`criu --version` ≥ 4.1 and `criu check`
//! passing, usually as root); elsewhere it prints why it is skipped.

use gleaner_station::checkpoint::{Criu, CriuStatus, Manifest, criu_status, read_bundle};
use std::time::Duration;

#[test]
fn criu_dumps_and_restores_a_process_tree() {
    match criu_status() {
        CriuStatus::Unavailable { reason } => {
            println!("skipped: no working CRIU on this machine: {reason}");
            return;
        }
        CriuStatus::Available { version } => println!("CRIU {version}"),
    }
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("count");
    // A shell counting in its own session (CRIU needs a detached tree).
    let script = format!(
        "i=0; while :; do i=$((i+1)); echo $i > {}; sleep 0.1; done",
        counter.display()
    );
    let mut child = std::process::Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let criu = Criu {
        images: dir.path().join("images"),
    };
    let pid = child.id();
    criu.dump(pid).unwrap();
    // The dump ended the original process: reap it.
    let _ = child.wait();
    let before: u64 = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let bundle = criu.collect_images(Manifest::default()).unwrap();
    let m = read_bundle(&mut &bundle[..], None).unwrap();
    assert_eq!(m.backend, "criu");
    assert!(!m.files.is_empty());
    criu.restore().unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let after: u64 = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(after > before, "restored process did not continue");
    // CRIU restores the same PID.
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}
