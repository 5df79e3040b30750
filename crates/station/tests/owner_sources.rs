//! Idle sources against fakes: temp dirs of files and FIFOs carrying
//! `struct input_event` records, tty files with set atimes, activity files,
//! a fake logind, a fake `busctl`, fake sysfs power supplies.

use gleaner_station::owner::{
    BusctlLogind, EvdevSource, FileSource, INPUT_EVENT_SIZE, IdleSource, InputEvent,
    InterruptsSource, LogindIdle, LogindQuery, LogindSource, MinIdle, OwnerError, TtySource,
    read_power_state,
};
use std::fs::{self, File, FileTimes, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn mkfifo(p: &Path) {
    nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

fn key_event(at: SystemTime) -> [u8; INPUT_EVENT_SIZE] {
    let d = at.duration_since(UNIX_EPOCH).unwrap();
    InputEvent {
        sec: d.as_secs() as i64,
        usec: d.subsec_micros() as i64,
        kind: 1,
        code: 30,
        value: 1,
    }
    .encode()
}

fn secs_ago(now: SystemTime, s: u64) -> SystemTime {
    now - Duration::from_secs(s)
}

#[test]
fn evdev_reads_records_from_files_and_uses_their_stamps() {
    let dir = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    let t1 = secs_ago(now, 100);
    let t2 = secs_ago(now, 40);
    let mut f = File::create(dir.path().join("event0")).unwrap();
    f.write_all(&key_event(t1)).unwrap();
    f.write_all(&key_event(t2)).unwrap();
    // Not an event device: ignored.
    fs::write(dir.path().join("mouse0"), key_event(now)).unwrap();
    let mut s = EvdevSource::with_dir(dir.path());
    let got = s.last_activity(now).unwrap().unwrap();
    let diff = got.duration_since(t2).unwrap_or_else(|e| e.duration());
    assert!(diff < Duration::from_millis(1), "{got:?} vs {t2:?}");
    assert_eq!(s.devices(), vec![dir.path().join("event0")]);
    // Nothing new: the last activity stays.
    assert_eq!(s.last_activity(now).unwrap(), Some(got));
}

#[test]
fn evdev_partial_records_wait_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("event3");
    let now = SystemTime::now();
    let rec = key_event(secs_ago(now, 5));
    fs::write(&p, &rec[..10]).unwrap();
    let watch_start = SystemTime::now();
    let mut s = EvdevSource::with_dir(dir.path());
    // A device but no complete event yet: idle since the watch started.
    let first = s.last_activity(now).unwrap().unwrap();
    assert!(first >= watch_start);
    OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(&rec[10..])
        .unwrap();
    assert!(s.last_activity(now).unwrap().is_some());
}

#[test]
fn evdev_without_devices_knows_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = EvdevSource::with_dir(dir.path().join("no-such-dir"));
    assert_eq!(s.last_activity(SystemTime::now()).unwrap(), None);
    let mut s = EvdevSource::with_dir(dir.path());
    assert_eq!(s.last_activity(SystemTime::now()).unwrap(), None);
}

#[test]
fn evdev_hotplug_and_unplug_via_inotify() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = EvdevSource::with_dir(dir.path());
    let now = SystemTime::now();
    assert_eq!(s.last_activity(now).unwrap(), None);
    // Plug a device in after the source started.
    let p = dir.path().join("event7");
    mkfifo(&p);
    assert!(s.last_activity(now).unwrap().is_some());
    assert_eq!(s.devices(), vec![p.clone()]);
    let mut w = OpenOptions::new().write(true).open(&p).unwrap();
    // An event with a monotonic (implausible) stamp counts at read time.
    w.write_all(
        &InputEvent {
            sec: 12,
            usec: 0,
            kind: 2,
            code: 0,
            value: 3,
        }
        .encode(),
    )
    .unwrap();
    let t = s.last_activity(SystemTime::now()).unwrap().unwrap();
    assert!(t >= now);
    // Unplug: the device disappears from the set.
    fs::remove_file(&p).unwrap();
    s.last_activity(SystemTime::now()).unwrap();
    assert!(s.devices().is_empty());
    // A device appearing in a directory created later is found too.
    let sub = dir.path().join("later");
    let mut s2 = EvdevSource::with_dir(&sub);
    assert_eq!(s2.last_activity(now).unwrap(), None);
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join("event0"), key_event(secs_ago(now, 3))).unwrap();
    assert!(s2.last_activity(now).unwrap().is_some());
}

#[test]
fn evdev_fifo_wakes_the_waiter_within_milliseconds() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("event0");
    mkfifo(&p);
    let mut idle = MinIdle::new().with(EvdevSource::with_dir(dir.path()));
    // Prime: the device is known, no event yet (idle since the watch began).
    assert!(idle.last_activity(SystemTime::now()).is_some());
    let p2 = p.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        let sent = Instant::now();
        let mut w = OpenOptions::new().write(true).open(&p2).unwrap();
        w.write_all(&key_event(SystemTime::now())).unwrap();
        sent
    });
    // A long poll interval: only the descriptor can wake us early.
    let got = idle
        .wait_activity(Duration::from_secs(5), Duration::from_secs(5))
        .unwrap();
    let woke = Instant::now();
    let sent = writer.join().unwrap();
    assert!(got.is_some());
    let lag = woke.duration_since(sent);
    assert!(
        lag < Duration::from_millis(500),
        "woke {lag:?} after the event"
    );
}

#[test]
fn wait_activity_times_out_without_activity() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("event0");
    mkfifo(&p);
    let mut idle = MinIdle::new().with(EvdevSource::with_dir(dir.path()));
    idle.last_activity(SystemTime::now());
    let t0 = Instant::now();
    let got = idle
        .wait_activity(Duration::from_millis(200), Duration::from_millis(50))
        .unwrap();
    assert_eq!(got, None);
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert!(t0.elapsed() < Duration::from_secs(2));
}

fn set_atime(p: &Path, t: SystemTime) {
    File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_times(FileTimes::new().set_accessed(t))
        .unwrap();
}

#[test]
fn tty_source_takes_latest_atime_over_globs() {
    let dir = tempfile::tempdir().unwrap();
    let pts = dir.path().join("pts");
    fs::create_dir(&pts).unwrap();
    let now = SystemTime::now();
    for (name, ago) in [("0", 300), ("1", 30), ("ptmx", 1)] {
        let p = pts.join(name);
        File::create(&p).unwrap();
        set_atime(&p, secs_ago(now, ago));
    }
    let tty1 = dir.path().join("tty1");
    File::create(&tty1).unwrap();
    set_atime(&tty1, secs_ago(now, 100));
    let mut s = TtySource::new(vec![
        format!("{}/*", pts.display()),
        format!("{}/tty*", dir.path().display()),
        format!("{}/console", dir.path().display()), // absent: skipped
    ]);
    let paths = s.matching_paths();
    assert!(!paths.iter().any(|p| p.ends_with("ptmx")), "{paths:?}");
    assert_eq!(paths.len(), 4); // 0, 1, tty1, console (named, may be absent)
    assert_eq!(s.last_activity(now).unwrap(), Some(secs_ago(now, 30)));
    // Typing on tty1 (an atime update) makes it the latest.
    set_atime(&tty1, secs_ago(now, 2));
    assert_eq!(s.last_activity(now).unwrap(), Some(secs_ago(now, 2)));
    let mut none = TtySource::new(vec![format!("{}/nothing*", dir.path().display())]);
    assert_eq!(none.last_activity(now).unwrap(), None);
}

#[test]
fn tty_source_sees_a_real_pty_read() {
    // The classic Condor signal on this machine: reading from a pty slave
    // updates its atime (with coarse granularity, platform.md §1.6), so
    // only check the plumbing: a real /dev/pts entry is found and stat'ed.
    // SAFETY: plain libc pty calls on a descriptor we own.
    let name = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut buf = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, buf.as_mut_ptr(), buf.len()), 0);
        std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_string_lossy()
            .into_owned()
    };
    let mut s = TtySource::new(vec![name.clone()]);
    assert_eq!(s.matching_paths(), vec![std::path::PathBuf::from(&name)]);
    assert!(s.last_activity(SystemTime::now()).unwrap().is_some());
}

#[test]
fn file_source_regular_file_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("activity");
    let mut s = FileSource::new(&p);
    let now = SystemTime::now();
    assert_eq!(s.last_activity(now).unwrap(), None); // absent
    fs::write(&p, "# comment\n1700000000.5\n\nbogus\n").unwrap();
    assert_eq!(
        s.last_activity(now).unwrap(),
        Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_500))
    );
    // `active` means "at the time the file was written": its mtime.
    fs::write(&p, "active\n").unwrap();
    let mtime = fs::metadata(&p).unwrap().modified().unwrap();
    assert_eq!(s.last_activity(now).unwrap(), Some(mtime));
}

#[test]
fn file_source_fifo_streams_and_survives_writers_closing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("activity.fifo");
    mkfifo(&p);
    let mut s = FileSource::new(&p);
    let now = SystemTime::now();
    assert_eq!(s.last_activity(now).unwrap(), None);
    {
        let mut w = OpenOptions::new().write(true).open(&p).unwrap();
        w.write_all(b"1600000000\nacti").unwrap();
    } // writer closed mid-line
    assert_eq!(
        s.last_activity(now).unwrap(),
        Some(UNIX_EPOCH + Duration::from_secs(1_600_000_000))
    );
    {
        let mut w = OpenOptions::new().write(true).open(&p).unwrap();
        w.write_all(b"ve\n").unwrap();
    }
    let later = now + Duration::from_secs(1);
    assert_eq!(s.last_activity(later).unwrap(), Some(later));
    // After all writers closed, the FIFO does not spin poll(): waiting times
    // out normally.
    let mut idle = MinIdle::new().with(s);
    idle.last_activity(later);
    let t0 = Instant::now();
    assert_eq!(
        idle.wait_activity(Duration::from_millis(150), Duration::from_secs(1))
            .unwrap(),
        None
    );
    assert!(t0.elapsed() >= Duration::from_millis(150));
}

struct FakeLogind(Result<Option<LogindIdle>, ()>);

impl LogindQuery for FakeLogind {
    fn query(&mut self) -> Result<Option<LogindIdle>, OwnerError> {
        self.0.map_err(|_| OwnerError::Command {
            program: "fake".into(),
            what: "down".into(),
        })
    }
}

#[test]
fn logind_source_with_fake() {
    let now = SystemTime::now();
    let busy = LogindIdle {
        idle_hint: false,
        idle_since_usec: 5,
    };
    assert_eq!(
        LogindSource::new(FakeLogind(Ok(Some(busy))))
            .last_activity(now)
            .unwrap(),
        Some(now)
    );
    let idle = LogindIdle {
        idle_hint: true,
        idle_since_usec: 1_700_000_000_000_000,
    };
    assert_eq!(
        LogindSource::new(FakeLogind(Ok(Some(idle))))
            .last_activity(now)
            .unwrap(),
        Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
    );
    let never = LogindIdle {
        idle_hint: true,
        idle_since_usec: 0,
    };
    assert_eq!(
        LogindSource::new(FakeLogind(Ok(Some(never))))
            .last_activity(now)
            .unwrap(),
        None
    );
    assert_eq!(
        LogindSource::new(FakeLogind(Ok(None)))
            .last_activity(now)
            .unwrap(),
        None
    );
    assert!(
        LogindSource::new(FakeLogind(Err(())))
            .last_activity(now)
            .is_err()
    );
}

#[test]
fn busctl_logind_with_fake_busctl_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("busctl");
    fs::write(
        &script,
        "#!/bin/sh\n[ \"$1\" = --system ] || exit 3\ncase \"$6\" in\n IdleHint) echo 'b true';;\n IdleSinceHint) echo 't 1700000000000000';;\n *) exit 2;;\nesac\n",
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path().join("bus");
    // No bus socket: no information, and busctl is not even run.
    let mut q = BusctlLogind::new(&script, &sock);
    assert_eq!(q.query().unwrap(), None);
    File::create(&sock).unwrap();
    assert_eq!(
        q.query().unwrap(),
        Some(LogindIdle {
            idle_hint: true,
            idle_since_usec: 1_700_000_000_000_000
        })
    );
    // A failing busctl is an error naming the program.
    let mut bad = BusctlLogind::new(dir.path().join("missing"), &sock);
    let e = bad.query().unwrap_err().to_string();
    assert!(e.contains("missing"), "{e}");
    // The real machine has no system bus: no information, no error.
    let mut real = LogindSource::system();
    if !Path::new("/run/dbus/system_bus_socket").exists() {
        assert_eq!(real.last_activity(SystemTime::now()).unwrap(), None);
    }
}

struct Fixed(&'static str, Result<Option<SystemTime>, ()>);

impl IdleSource for Fixed {
    fn name(&self) -> &str {
        self.0
    }
    fn last_activity(&mut self, _now: SystemTime) -> Result<Option<SystemTime>, OwnerError> {
        self.1.map_err(|_| OwnerError::Parse {
            path: "x".into(),
            what: "broken".into(),
        })
    }
}

#[test]
fn min_idle_takes_the_most_recent_and_skips_failures() {
    let now = SystemTime::now();
    let mut m = MinIdle::new()
        .with(Fixed("a", Ok(Some(secs_ago(now, 500)))))
        .with(Fixed("b", Ok(Some(secs_ago(now, 20)))))
        .with(Fixed("c", Ok(None)))
        .with(Fixed("d", Err(())));
    assert_eq!(m.idle_for(now), Some(Duration::from_secs(20)));
    assert_eq!(m.report().len(), 4);
    assert!(m.report()[3].result.is_err());
    // Activity "in the future" (clock step) reads as now.
    let mut f = MinIdle::new().with(Fixed("f", Ok(Some(now + Duration::from_secs(9)))));
    assert_eq!(f.idle_for(now), Some(Duration::ZERO));
    // No information at all.
    let mut e = MinIdle::new().with(Fixed("c", Ok(None)));
    assert_eq!(e.idle_for(now), None);
}

#[test]
fn power_supply_states() {
    let dir = tempfile::tempdir().unwrap();
    let ps = dir.path().join("class/power_supply");
    assert!(!read_power_state(dir.path()).unwrap().on_battery); // none at all
    let supply = |name: &str, files: &[(&str, &str)]| {
        let d = ps.join(name);
        fs::create_dir_all(&d).unwrap();
        for (f, v) in files {
            fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    };
    supply("AC", &[("type", "Mains"), ("online", "1")]);
    supply("BAT0", &[("type", "Battery"), ("status", "Charging")]);
    supply(
        "hidpp_battery_0",
        &[
            ("type", "Battery"),
            ("scope", "Device"),
            ("status", "Discharging"),
        ],
    );
    let s = read_power_state(dir.path()).unwrap();
    assert!(s.has_battery && !s.on_battery);
    supply("AC", &[("online", "0")]);
    assert!(read_power_state(dir.path()).unwrap().on_battery);
    supply("AC", &[("online", "1")]);
    supply("BAT0", &[("status", "Discharging")]);
    assert!(read_power_state(dir.path()).unwrap().on_battery);
}

#[test]
fn interrupts_source_detects_keyboard_irq_changes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("interrupts");
    let write = |kbd: u64| {
        fs::write(
            &p,
            format!(
                "           CPU0       CPU1\n  1:  {kbd}  0   IO-APIC   1-edge      i8042\n 24:  500  700   PCI-MSI 65536-edge      virtio0\n"
            ),
        )
        .unwrap()
    };
    let started = SystemTime::now();
    write(10);
    let mut s = InterruptsSource::new(dir.path());
    let t0 = started + Duration::from_secs(100);
    // First reading: idle since we started watching.
    assert!(s.last_activity(t0).unwrap().unwrap() <= t0);
    // Other interrupts do not count.
    assert!(s.last_activity(t0).unwrap().unwrap() < t0);
    write(11);
    let t1 = t0 + Duration::from_secs(5);
    assert_eq!(s.last_activity(t1).unwrap(), Some(t1));
    assert_eq!(
        s.last_activity(t1 + Duration::from_secs(5)).unwrap(),
        Some(t1)
    );
    // The real file on this machine has no keyboard line (virtio only,
    // platform.md §1.6): no information, no error.
    let mut real = InterruptsSource::new("/proc");
    let r = real.last_activity(SystemTime::now()).unwrap();
    if !fs::read_to_string("/proc/interrupts")
        .unwrap()
        .contains("i8042")
    {
        assert_eq!(r, None);
    }
}
