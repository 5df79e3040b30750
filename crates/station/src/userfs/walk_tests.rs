//! The walk's rules on a scratch directory, as whoever runs the tests and
//! without switching credentials (the switch is tested with real users in
//! `tests/userfs.rs`).

use super::walk::{AsUser, MAX_HOPS};
use super::{PathErrorKind, UnixUser, UserFsError};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::time::{Duration, Instant};

fn me() -> UnixUser {
    UnixUser::current().expect("own account")
}

fn kind(e: &UserFsError) -> &PathErrorKind {
    e.kind().unwrap_or_else(|| panic!("not a path error: {e}"))
}

fn read_all(u: &AsUser<'_>, p: &Path) -> String {
    let mut s = String::new();
    u.open_read(p)
        .expect("open")
        .read_to_string(&mut s)
        .expect("read");
    s
}

#[test]
fn reads_regular_files_and_names_what_else_it_found() {
    let user = me();
    let u = AsUser::new(&user);
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("in.txt");
    std::fs::write(&f, "data").expect("write");
    assert_eq!(read_all(&u, &f), "data");

    let e = u.open_read(dir.path()).unwrap_err();
    assert!(
        matches!(kind(&e), PathErrorKind::NotRegular("directory")),
        "{e}"
    );
    let e = u.open_read(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::NotFound), "{e}");
    let e = u.open_read(Path::new("relative/in.txt")).unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::NotAbsolute), "{e}");
    let e = u.open_read(&f.join("below")).unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::NotADirectory), "{e}");
    let e = u.open_read(&dir.path().join("in.txt/")).unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::NotADirectory), "{e}");
    assert!(e.to_string().starts_with("cannot read "), "{e}");
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let user = me();
    let u = AsUser::new(&user);
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("out.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o666)).expect("mkfifo");
    let started = Instant::now();
    for res in [
        u.open_read(&fifo).map(drop),
        u.create_truncate(&fifo, 0o644).map(drop),
        u.open_append_create(&fifo, 0o644).map(drop),
        u.check_writable(&fifo),
    ] {
        let e = res.unwrap_err();
        assert!(matches!(kind(&e), PathErrorKind::NotRegular("FIFO")), "{e}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    let e = u.open_read(Path::new("/dev/null")).unwrap_err();
    assert!(
        matches!(kind(&e), PathErrorKind::NotRegular("character device")),
        "{e}"
    );
}

#[test]
fn creates_with_the_mode_less_umask_022_and_truncates_or_appends() {
    let user = me();
    let u = AsUser::new(&user);
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("out");
    u.create_truncate(&f, 0o666)
        .expect("create")
        .write_all(b"first")
        .expect("write");
    let meta = std::fs::metadata(&f).expect("stat");
    assert_eq!(meta.mode() & 0o7777, 0o644);
    assert_eq!(meta.uid(), user.uid);
    u.create_truncate(&f, 0o600)
        .expect("again")
        .write_all(b"2")
        .expect("write");
    assert_eq!(std::fs::read_to_string(&f).expect("read"), "2");
    // An existing file keeps its mode.
    assert_eq!(std::fs::metadata(&f).expect("stat").mode() & 0o7777, 0o644);
    u.open_append_create(&f, 0o600)
        .expect("append")
        .write_all(b"3")
        .expect("write");
    assert_eq!(std::fs::read_to_string(&f).expect("read"), "23");
    let log = dir.path().join("log");
    u.open_append_create(&log, 0o4755)
        .expect("new log")
        .write_all(b"x")
        .expect("write");
    assert_eq!(
        std::fs::metadata(&log).expect("stat").mode() & 0o7777,
        0o755
    );
    let e = u
        .create_truncate(&dir.path().join("sub/"), 0o644)
        .unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::NotFound), "{e}");
}

#[test]
fn check_writable_changes_nothing() {
    let user = me();
    let u = AsUser::new(&user);
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("new");
    u.check_writable(&missing).expect("creatable");
    assert!(!missing.exists());
    let e = u
        .check_writable(&dir.path().join("no/such/dir/x"))
        .unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::NotFound), "{e}");
    assert!(u.is_dir(dir.path()).expect("is_dir"));
    assert!(!u.is_dir(&missing).expect("is_dir"));
    u.check_dir(dir.path()).expect("enter");
    u.check_dir(Path::new("/")).expect("enter /");
}

#[test]
fn dotdot_is_the_real_parent_of_where_a_symlink_led() {
    let user = me();
    let u = AsUser::new(&user);
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(b.path().join("sub")).expect("mkdir");
    std::fs::write(b.path().join("f"), "in b").expect("write");
    std::fs::write(a.path().join("f"), "in a").expect("write");
    symlink(b.path().join("sub"), a.path().join("link")).expect("symlink");
    // Textually a/link/../f is a/f; on the real directories it is b/f.
    assert_eq!(read_all(&u, &a.path().join("link/../f")), "in b");
    // Relative targets are walked from the link's own directory.
    symlink("link/../f", a.path().join("rel")).expect("symlink");
    assert_eq!(read_all(&u, &a.path().join("rel")), "in b");
    // A path ending in `..` is a directory.
    assert!(u.is_dir(&a.path().join("link/..")).expect("is_dir"));
}

#[test]
fn symlink_loops_stop_after_the_hop_limit() {
    let user = me();
    let u = AsUser::new(&user);
    let dir = tempfile::tempdir().expect("tempdir");
    symlink("b", dir.path().join("a")).expect("symlink");
    symlink("a", dir.path().join("b")).expect("symlink");
    let e = u.open_read(&dir.path().join("a")).unwrap_err();
    assert!(
        matches!(kind(&e), PathErrorKind::TooManySymlinks(MAX_HOPS)),
        "{e}"
    );
    let e = u
        .create_truncate(&dir.path().join("a/x"), 0o644)
        .unwrap_err();
    assert!(matches!(kind(&e), PathErrorKind::TooManySymlinks(_)), "{e}");
}

#[test]
fn symlinks_of_other_owners_are_not_followed() {
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: giving a symlink to another uid needs root");
        return;
    }
    // The walk acts for uid 54321 here (without switching: the rule is
    // about link owners, not permissions).
    let user = UnixUser {
        name: "linkowner".into(),
        uid: 54_321,
        gid: 54_321,
        groups: vec![54_321],
        home: "/nonexistent".into(),
    };
    let u = AsUser::new(&user);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let target = dir.path().join("target");
    std::fs::write(&target, "keep").expect("write");
    let link = dir.path().join("out");
    symlink(&target, &link).expect("symlink");
    // Root's links are followed.
    assert_eq!(read_all(&u, &link), "keep");
    for (owner, followed) in [(54_321, true), (54_322, false)] {
        std::os::unix::fs::lchown(&link, Some(owner), None).expect("lchown");
        let res = u.open_read(&link);
        assert_eq!(res.is_ok(), followed, "owner {owner}: {res:?}");
        if let Err(e) = res {
            assert!(
                matches!(kind(&e), PathErrorKind::ForeignSymlink { owner: 54_322 }),
                "{e}"
            );
        }
    }
    let e = u.create_truncate(&link, 0o644).unwrap_err();
    assert!(
        matches!(kind(&e), PathErrorKind::ForeignSymlink { .. }),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep");
    // Also on the way to a file, not only at its end.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    std::fs::write(sub.join("f"), "f").expect("write");
    let dlink = dir.path().join("dlink");
    symlink(&sub, &dlink).expect("symlink");
    std::os::unix::fs::lchown(&dlink, Some(54_322), None).expect("lchown");
    let e = u.open_read(&dlink.join("f")).unwrap_err();
    assert!(
        matches!(kind(&e), PathErrorKind::ForeignSymlink { .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains(&format!("(at {})", dlink.display())),
        "{e}"
    );
}
