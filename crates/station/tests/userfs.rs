//! `userfs` with real Unix users made by the test (root needed; skipped
//! with a printed reason otherwise): the home's file work on a user's
//! behalf has that user's rights, never root's, and never follows a
//! symlink planted by someone else.
//!
//! Every refusal is checked for "no state change": the target file keeps
//! its content and mtime, nothing is created.

use gleaner_proto::job::JobDescription;
use gleaner_station::userfs::{PathErrorKind, UnixUser, UserFs, UserFsError, validate_job};
use gleaner_testkit::{TestUser, skip_unless_root};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt, lchown, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Two fresh users, or `None` (skipped) when not root.
fn two_users(test: &str) -> Option<(TestUser, TestUser)> {
    if skip_unless_root(&format!("{test}: creates Unix users")) {
        return None;
    }
    let a = TestUser::create("ufsa").expect("create user A");
    let b = TestUser::create("ufsb").expect("create user B");
    Some((a, b))
}

fn fs_of(t: &TestUser) -> UserFs {
    let user = UnixUser::lookup(t.name()).expect("lookup test user");
    assert_eq!(user.uid, t.uid());
    UserFs::new(user).expect("userfs")
}

fn kind(e: &UserFsError) -> &PathErrorKind {
    e.kind().unwrap_or_else(|| panic!("not a path error: {e}"))
}

/// Writes `data` to `path` as root, then gives it to `uid` with `mode`.
fn put(path: &Path, data: &str, uid: u32, mode: u32) {
    std::fs::write(path, data).expect("write");
    std::os::unix::fs::chown(path, Some(uid), None).expect("chown");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A directory of A's (`HOME/job`, owned by A).
fn job_dir(a: &TestUser) -> PathBuf {
    let dir = a.home().join("job");
    let out = a
        .run("mkdir", &[dir.to_str().expect("utf-8")])
        .expect("mkdir");
    assert!(out.status.success(), "{out:?}");
    dir
}

/// A root-owned directory everyone may enter but only root may write.
fn root_dir() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("gltest-root-")
        .tempdir()
        .expect("tempdir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    d
}

/// Content and mtime of a file, to prove it was not touched. The mtime is
/// first set well in the past so any write would show.
fn freeze(path: &Path) -> (String, SystemTime) {
    let past = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(past))
        .expect("set mtime");
    snapshot(path)
}

fn snapshot(path: &Path) -> (String, SystemTime) {
    let data = std::fs::read_to_string(path).expect("read");
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime");
    (data, mtime)
}

fn read_all(mut f: std::fs::File) -> String {
    let mut s = String::new();
    f.read_to_string(&mut s).expect("read");
    s
}

#[test]
fn etc_shadow_is_refused_and_own_files_are_read() {
    let Some((a, _b)) = two_users("etc_shadow_is_refused_and_own_files_are_read") else {
        return;
    };
    let fs = fs_of(&a);
    let e = fs.open_read("/etc/shadow").unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::PermissionDenied), "{e}");
    assert_eq!(
        e.to_string(),
        format!("cannot read /etc/shadow as {}: Permission denied", a.name())
    );
    assert!(fs.check_readable("/etc/shadow").is_err());

    let own = a.home().join("in.txt");
    let out = a
        .command("sh")
        .args(["-c", "echo mine > in.txt && chmod 600 in.txt"])
        .output()
        .expect("sh as A");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(read_all(fs.open_read(&own).expect("own file")), "mine\n");
    fs.check_readable(&own).expect("readable");
}

#[test]
fn another_users_private_directory_is_refused() {
    let Some((a, b)) = two_users("another_users_private_directory_is_refused") else {
        return;
    };
    let fs = fs_of(&a);
    let target = b.home().join("planted");
    for res in [
        fs.create_truncate(&target, 0o644).map(drop),
        fs.open_append_create(&target, 0o644).map(drop),
        fs.check_writable(&target),
    ] {
        let e = res.unwrap_err();
        assert!(matches!(kind(&e), PathErrorKind::PermissionDenied), "{e}");
        // Refused while searching B's home, and reported there.
        assert!(
            e.to_string()
                .contains(&format!("(at {})", b.home().display())),
            "{e}"
        );
    }
    assert!(!target.exists());
    // B's existing file, even world-readable, sits behind B's 0700 home.
    let file = b.home().join("notes");
    put(&file, "b's", b.uid(), 0o644);
    assert!(fs.open_read(&file).is_err());
}

#[test]
fn dotdot_output_is_created_as_the_user_or_refused_never_as_root() {
    let Some((a, _b)) = two_users("dotdot_output_is_created_as_the_user_or_refused_never_as_root")
    else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    let up = "../".repeat(job.components().count() - 1);

    // Into /tmp (world-writable): created, and A's.
    let name = format!("gltest-dotdot-{}", std::process::id());
    let escaped = job.join(format!("{up}tmp/{name}"));
    let landed = Path::new("/tmp").join(&name);
    let _ = std::fs::remove_file(&landed);
    fs.create_truncate(&escaped, 0o644)
        .expect("A may create in /tmp")
        .write_all(b"x")
        .expect("write");
    let meta = std::fs::metadata(&landed).expect("created in /tmp");
    std::fs::remove_file(&landed).expect("cleanup");
    assert_eq!(meta.uid(), a.uid(), "created as A, not as root");

    // Into a directory only root may write: refused, nothing created.
    let rootonly = root_dir();
    let rel = rootonly.path().strip_prefix("/").expect("absolute");
    let escaped = job.join(format!("{up}{}/x", rel.display()));
    let e = fs.create_truncate(&escaped, 0o644).unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::PermissionDenied), "{e}");
    assert!(!rootonly.path().join("x").exists());
}

#[test]
fn symlink_planted_by_another_user_is_refused_and_target_untouched() {
    let Some((a, b)) = two_users("symlink_planted_by_another_user_is_refused_and_target_untouched")
    else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    // A's own precious file: A could write it, but not through B's link.
    let precious = a.home().join("precious");
    put(&precious, "keep", a.uid(), 0o644);
    let before = freeze(&precious);
    let link = job.join("out.txt");
    symlink("../precious", &link).expect("symlink");
    lchown(&link, Some(b.uid()), None).expect("lchown to B");

    for res in [
        fs.create_truncate(&link, 0o644).map(drop),
        fs.open_append_create(&link, 0o644).map(drop),
        fs.check_writable(&link),
        fs.open_read(&link).map(drop),
    ] {
        let e = res.unwrap_err();
        assert!(
            matches!(kind(&e), PathErrorKind::ForeignSymlink { owner } if *owner == b.uid()),
            "{e}"
        );
    }
    assert_eq!(snapshot(&precious), before, "target untouched");
}

#[test]
fn users_own_symlink_to_a_root_only_file_is_refused_and_target_untouched() {
    let Some((a, _b)) =
        two_users("users_own_symlink_to_a_root_only_file_is_refused_and_target_untouched")
    else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    let rootonly = root_dir();
    let readable = rootonly.path().join("config");
    put(&readable, "root's config", 0, 0o644);
    let secret = rootonly.path().join("secret");
    put(&secret, "root's secret", 0, 0o600);
    let before = (freeze(&readable), freeze(&secret));

    let out = job.join("out.txt");
    symlink(&readable, &out).expect("symlink");
    lchown(&out, Some(a.uid()), None).expect("lchown to A");
    let err = job.join("err.txt");
    symlink(&secret, &err).expect("symlink");
    lchown(&err, Some(a.uid()), None).expect("lchown to A");

    // A's link is followed, and then A's rights apply at the target.
    for res in [
        fs.create_truncate(&out, 0o644).map(drop),
        fs.open_append_create(&out, 0o644).map(drop),
        fs.create_truncate(&err, 0o644).map(drop),
        fs.open_read(&err).map(drop),
    ] {
        let e = res.unwrap_err();
        assert!(matches!(kind(&e), PathErrorKind::PermissionDenied), "{e}");
    }
    assert_eq!((snapshot(&readable), snapshot(&secret)), before);
}

#[test]
fn users_own_symlink_to_own_file_is_followed() {
    let Some((a, _b)) = two_users("users_own_symlink_to_own_file_is_followed") else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    let real = a.home().join("results.txt");
    put(&real, "old", a.uid(), 0o644);
    let link = job.join("out.txt");
    let out = a
        .command("ln")
        .args(["-s", "../results.txt"])
        .arg(&link)
        .output()
        .expect("ln as A");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::symlink_metadata(&link).expect("lstat").uid(),
        a.uid()
    );

    fs.create_truncate(&link, 0o644)
        .expect("followed")
        .write_all(b"new")
        .expect("write");
    assert_eq!(std::fs::read_to_string(&real).expect("read"), "new");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("lstat")
            .is_symlink()
    );
    assert_eq!(
        read_all(fs.open_read(&link).expect("read through link")),
        "new"
    );
}

#[test]
fn a_fifo_is_refused_within_a_bounded_time() {
    let Some((a, _b)) = two_users("a_fifo_is_refused_within_a_bounded_time") else {
        return;
    };
    let fs = fs_of(&a);
    let fifo = a.home().join("out.txt");
    let out = a
        .command("mkfifo")
        .arg(&fifo)
        .output()
        .expect("mkfifo as A");
    assert!(out.status.success(), "{out:?}");
    // Run where a hang cannot stall the test: nobody ever opens the other
    // end, so a blocking open would never return.
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || {
        let results = vec![
            fs.open_read(&path).map(drop),
            fs.create_truncate(&path, 0o644).map(drop),
            fs.open_append_create(&path, 0o644).map(drop),
            fs.check_readable(&path),
            fs.check_writable(&path),
        ];
        let _ = tx.send(results);
    });
    let results = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("FIFO operations must not block");
    for res in results {
        let e = res.unwrap_err();
        assert!(matches!(kind(&e), PathErrorKind::NotRegular("FIFO")), "{e}");
    }
}

#[test]
fn created_files_belong_to_the_user() {
    let Some((a, _b)) = two_users("created_files_belong_to_the_user") else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    let out = job.join("out.txt");
    fs.create_truncate(&out, 0o666)
        .expect("create")
        .write_all(b"hello")
        .expect("write");
    let log = job.join("job.log");
    fs.open_append_create(&log, 0o644)
        .expect("log")
        .write_all(b"000\n")
        .expect("write");
    for p in [&out, &log] {
        let m = std::fs::metadata(p).expect("stat");
        assert_eq!((m.uid(), m.gid()), (a.uid(), a.gid()), "{}", p.display());
        assert_eq!(m.mode() & 0o7777, 0o644, "{}", p.display());
    }
    // A can use what was made for them with their own tools.
    let out = a
        .command("cat")
        .arg(job.join("out.txt"))
        .output()
        .expect("cat");
    assert_eq!(out.stdout, b"hello");
}

/// `Uid`, `Gid`, `Groups` and `CapEff` lines of a status file.
fn creds_of(status_file: &str) -> Vec<String> {
    std::fs::read_to_string(status_file)
        .expect("status")
        .lines()
        .filter(|l| {
            ["Uid:", "Gid:", "Groups:", "CapEff:"]
                .iter()
                .any(|k| l.starts_with(k))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn daemon_thread_credentials_are_unchanged_after_1000_operations() {
    let Some((a, b)) = two_users("daemon_thread_credentials_are_unchanged_after_1000_operations")
    else {
        return;
    };
    let (fa, fb) = (fs_of(&a), fs_of(&b));
    let thread_before = creds_of("/proc/thread-self/status");
    let process_before = creds_of("/proc/self/status");
    assert!(
        thread_before
            .iter()
            .any(|l| l.starts_with("Uid:\t0\t0\t0\t0")),
        "{thread_before:?}"
    );

    // The operation's own thread does act as the user, without capabilities.
    let inside = fa
        .run(|_| Ok(creds_of("/proc/thread-self/status")))
        .expect("run");
    let uid = a.uid();
    let fs_uid_line = format!("Uid:\t0\t0\t0\t{uid}");
    assert!(inside.contains(&fs_uid_line), "{inside:?}");
    assert!(
        inside.contains(&"CapEff:\t0000000000000000".to_string()),
        "{inside:?}"
    );

    for i in 0..1000 {
        let (fs, who) = if i % 2 == 0 { (&fa, &a) } else { (&fb, &b) };
        match i % 4 {
            0 | 1 => {
                let p = who.home().join(format!("f{}", i % 8));
                fs.create_truncate(&p, 0o644).expect("create");
            }
            2 => assert!(fs.open_read("/etc/shadow").is_err()),
            _ => assert_eq!(
                fs.check_writable(a.home().join("x")).is_ok(),
                who.uid() == a.uid()
            ),
        }
    }
    assert_eq!(creds_of("/proc/thread-self/status"), thread_before);
    assert_eq!(creds_of("/proc/self/status"), process_before);
}

#[test]
fn parallel_operations_for_two_users_never_cross() {
    let Some((a, b)) = two_users("parallel_operations_for_two_users_never_cross") else {
        return;
    };
    let (fa, fb) = (fs_of(&a), fs_of(&b));
    std::thread::scope(|s| {
        for i in 0..16 {
            let (fs, me, other) = if i % 2 == 0 {
                (&fa, &a, &b)
            } else {
                (&fb, &b, &a)
            };
            s.spawn(move || {
                for round in 0..10 {
                    let p = me.home().join(format!("par-{i}-{round}"));
                    fs.create_truncate(&p, 0o600)
                        .expect("own home")
                        .write_all(me.name().as_bytes())
                        .expect("write");
                    let theirs = other.home().join(format!("par-{i}-{round}-intruder"));
                    assert!(fs.create_truncate(&theirs, 0o600).is_err());
                }
            });
        }
    });
    for (who, parity) in [(&a, 0), (&b, 1)] {
        let mut n = 0;
        for e in std::fs::read_dir(who.home()).expect("readdir").flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("par-") {
                continue;
            }
            assert!(
                !name.ends_with("-intruder"),
                "{name} was created in {}",
                who.name()
            );
            let i: usize = name
                .split('-')
                .nth(1)
                .and_then(|t| t.parse().ok())
                .expect("index");
            assert_eq!(i % 2, parity, "{name} in {}'s home", who.name());
            let m = e.metadata().expect("stat");
            assert_eq!((m.uid(), m.gid()), (who.uid(), who.gid()), "{name}");
            assert_eq!(std::fs::read_to_string(e.path()).expect("read"), who.name());
            n += 1;
        }
        assert_eq!(n, 80, "files in {}'s home", who.name());
    }
}

#[test]
fn async_variants_act_as_the_user() {
    let Some((a, _b)) = two_users("async_variants_act_as_the_user") else {
        return;
    };
    let fs = fs_of(&a);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let p = a.home().join("async.txt");
    rt.block_on(async {
        fs.create_truncate_async(p.clone(), 0o644)
            .await
            .expect("create")
            .write_all(b"a")
            .expect("write");
        fs.open_append_create_async(p.clone(), 0o644)
            .await
            .expect("append")
            .write_all(b"b")
            .expect("write");
        assert_eq!(
            read_all(fs.open_read_async(p.clone()).await.expect("read")),
            "ab"
        );
        assert!(fs.open_read_async("/etc/shadow".into()).await.is_err());
    });
    assert_eq!(std::fs::metadata(&p).expect("stat").uid(), a.uid());
}

/// `(key, message)` of each problem.
fn problems(fs: &UserFs, d: &JobDescription) -> Vec<(&'static str, String)> {
    let found = validate_job(fs, d).expect("validation runs");
    for p in &found {
        println!("{p}");
    }
    found.iter().map(|p| (p.key, p.to_string())).collect()
}

#[test]
fn validation_names_each_submit_key_and_path() {
    let Some((a, b)) = two_users("validation_names_each_submit_key_and_path") else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    let rootonly = root_dir();
    put(&job.join("ok.txt"), "ok", a.uid(), 0o644);
    let out = a
        .command("mkfifo")
        .arg(job.join("events"))
        .output()
        .expect("mkfifo");
    assert!(out.status.success(), "{out:?}");
    let planted = job.join("result.dat");
    symlink("ok.txt", &planted).expect("symlink");
    lchown(&planted, Some(b.uid()), None).expect("lchown to B");

    let mut d = JobDescription::new(a.name(), "/etc/shadow");
    d.iwd = Some(job.display().to_string());
    d.input = Some("missing.txt".into());
    d.transfer_input_files = vec!["/etc/shadow".into(), "ok.txt".into()];
    d.output = Some(format!("{}/out", b.home().display()));
    let up = "../".repeat(job.components().count() - 1);
    let err = format!(
        "{up}{}/err",
        rootonly.path().strip_prefix("/").expect("abs").display()
    );
    d.error = Some(err.clone());
    d.log = Some("events".into());
    d.transfer_output_files = Some(vec!["sub/result.dat".into()]);

    let found = problems(&fs, &d);
    let keys: Vec<&str> = found.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            "executable",
            "input",
            "transfer_input_files",
            "output",
            "error",
            "log",
            "transfer_output_files"
        ]
    );
    let user = a.name();
    let expect = [
        format!("executable = /etc/shadow: cannot read /etc/shadow as {user}: Permission denied"),
        format!(
            "input = missing.txt: cannot read {}/missing.txt as {user}: No such file or directory",
            job.display()
        ),
        format!(
            "transfer_input_files = /etc/shadow: cannot read /etc/shadow as {user}: Permission denied"
        ),
        format!(
            "output = {0}/out: cannot write {0}/out as {user}: Permission denied (at {0})",
            b.home().display()
        ),
        format!(
            "error = {err}: cannot create {}/{err} as {user}: Permission denied (at {}/err)",
            job.display(),
            rootonly.path().display()
        ),
        format!(
            "log = events: cannot write {}/events as {user}: not a regular file (it is a FIFO)",
            job.display()
        ),
    ];
    for (i, want) in expect.iter().enumerate() {
        assert_eq!(&found[i].1, want);
    }
    assert!(
        found[6]
            .1
            .contains("refused to follow a symlink owned by uid"),
        "{}",
        found[6].1
    );
    // Checked, not created.
    assert!(!b.home().join("out").exists());
    assert!(!rootonly.path().join("err").exists());
}

#[test]
fn validation_of_a_good_job_finds_nothing_and_creates_nothing() {
    let Some((a, _b)) = two_users("validation_of_a_good_job_finds_nothing_and_creates_nothing")
    else {
        return;
    };
    let fs = fs_of(&a);
    let job = job_dir(&a);
    put(&job.join("run.sh"), "#!/bin/sh\n", a.uid(), 0o755);
    put(&job.join("in.txt"), "in", a.uid(), 0o600);
    let mut d = JobDescription::new(a.name(), "run.sh");
    d.iwd = Some(job.display().to_string());
    d.input = Some("in.txt".into());
    d.transfer_input_files = vec![job.join("in.txt").display().to_string()];
    d.output = Some("out".into());
    d.error = Some("err".into());
    d.log = Some("job.log".into());
    d.transfer_output_files = Some(vec!["result.dat".into()]);
    assert_eq!(problems(&fs, &d), Vec::<(&str, String)>::new());
    for f in ["out", "err", "job.log", "result.dat"] {
        assert!(!job.join(f).exists(), "{f} was created");
    }
    // A host-side executable is not the home's to read.
    d.executable = "/usr/local/bin/not-here".into();
    d.transfer_executable = false;
    assert_eq!(problems(&fs, &d), Vec::<(&str, String)>::new());
}

#[test]
fn validation_reports_an_unusable_initialdir_once() {
    let Some((a, b)) = two_users("validation_reports_an_unusable_initialdir_once") else {
        return;
    };
    let fs = fs_of(&a);
    let mut d = JobDescription::new(a.name(), "run.sh");
    d.iwd = Some(b.home().display().to_string());
    d.output = Some("out".into());
    d.log = Some("/etc/gleaner-test.log".into());
    let found = problems(&fs, &d);
    let keys: Vec<&str> = found.iter().map(|(k, _)| *k).collect();
    // The relative executable and output fail for the same reason as
    // initialdir; the absolute log is checked on its own.
    assert_eq!(keys, ["initialdir", "log"]);
    assert_eq!(
        found[0].1,
        format!(
            "initialdir = {0}: cannot enter {0} as {1}: Permission denied",
            b.home().display(),
            a.name()
        )
    );
    // No initial directory at all: a relative path cannot be resolved.
    d.iwd = None;
    d.log = None;
    let found = problems(&fs, &d);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0]
            .1
            .starts_with("executable = run.sh: cannot read run.sh as")
    );
    assert!(
        found[1].1.ends_with("not an absolute path"),
        "{}",
        found[1].1
    );
}

/// A staged output (issue 14) is written beside its destination as the
/// user and synced; the destination keeps its old content until publish
/// renames it into place, whole; a discarded one leaves nothing; a
/// symlink planted by another user is refused as everywhere else.
#[test]
fn staged_outputs_appear_whole_on_publish_and_never_through_foreign_links() {
    let Some((a, b)) = two_users("staged_outputs") else {
        return;
    };
    let dir = job_dir(&a);
    let out = dir.join("out.txt");
    put(&out, "old run\n", a.uid(), 0o644);
    let fs = fs_of(&a);
    let listing = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };

    let target = out.clone();
    let staged = fs
        .run(move |u| u.stage(&target, 0o666, |f| f.write_all(b"new run\n")))
        .unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old run\n");
    let names = listing(&dir);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with(".out.txt.gleaner-")),
        "{names:?}"
    );
    fs.run(move |u| u.publish(staged)).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "new run\n");
    assert_eq!(listing(&dir), vec!["out.txt".to_string()]);
    let md = std::fs::metadata(&out).unwrap();
    assert_eq!((md.uid(), md.mode() & 0o777), (a.uid(), 0o644));

    // Discarded: the destination and the directory as before.
    let target = out.clone();
    let staged = fs
        .run(move |u| u.stage(&target, 0o666, |f| f.write_all(b"dropped\n")))
        .unwrap();
    fs.run(move |u| {
        u.discard(staged);
        Ok(())
    })
    .unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "new run\n");
    assert_eq!(listing(&dir), vec!["out.txt".to_string()]);

    // B's link in A's directory: refused, its target untouched.
    let victim = b.home().join("victim.txt");
    put(&victim, "B's\n", b.uid(), 0o666);
    let before = freeze(&victim);
    let link = dir.join("err.txt");
    symlink(&victim, &link).unwrap();
    lchown(&link, Some(b.uid()), Some(b.gid())).unwrap();
    let target = link.clone();
    let e = fs
        .run(move |u| u.stage(&target, 0o666, |f| f.write_all(b"x")))
        .unwrap_err();
    assert!(
        matches!(kind(&e), PathErrorKind::ForeignSymlink { .. }),
        "{e}"
    );
    assert_eq!(snapshot(&victim), before);
}
