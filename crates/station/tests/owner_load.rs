//! Owner CPU load from fake `/proc/stat` files minus fake guest usage, load
//! averages, and the mapping onto the core detector's sample.

use gleaner_core::detector::OwnerSample;
use gleaner_core::time::Dur;
use gleaner_station::owner::{
    CpuMeter, EvdevSource, GuestCpuUsage, MinIdle, NoGuests, OwnerMonitor, OwnerPaths,
    OwnerReading, SessionCheck, read_loadavg, read_proc_stat,
};
use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Guest usage a test can move forward.
#[derive(Clone)]
struct FakeGuests(Arc<Mutex<Result<Duration, String>>>);

impl Default for FakeGuests {
    fn default() -> Self {
        FakeGuests(Arc::new(Mutex::new(Ok(Duration::ZERO))))
    }
}

impl FakeGuests {
    fn set(&self, d: Duration) {
        *self.0.lock().unwrap() = Ok(d);
    }
    fn fail(&self) {
        *self.0.lock().unwrap() = Err("guest group gone".into());
    }
}

impl GuestCpuUsage for FakeGuests {
    fn guest_cpu_usage(&self) -> Result<Duration, String> {
        self.0.lock().unwrap().clone()
    }
}

/// Write a 2-CPU /proc/stat with the given aggregate user/system/idle ticks.
fn write_stat(procfs: &Path, user: u64, system: u64, idle: u64) {
    fs::write(
        procfs.join("stat"),
        format!(
            "cpu  {user} 0 {system} {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\nintr 0\nctxt 0\n"
        ),
    )
    .unwrap();
}

fn meter(procfs: &Path, guests: impl GuestCpuUsage + 'static) -> CpuMeter {
    // 10 ms ticks, as USER_HZ = 100.
    CpuMeter::new(procfs, Box::new(guests))
        .with_tick(Duration::from_millis(10))
        .exclude_self(false)
}

#[test]
fn busy_guest_does_not_look_like_an_owner() {
    let dir = tempfile::tempdir().unwrap();
    let g = FakeGuests::default();
    g.set(Duration::ZERO);
    let mut m = meter(dir.path(), g.clone());
    let t0 = Instant::now();
    write_stat(dir.path(), 1000, 0, 1000);
    assert_eq!(m.sample_at(t0).unwrap(), None); // baseline
    assert_eq!(m.ncpu(), 2);
    // 10 s on 2 CPUs = 2000 ticks; the guest burned one whole CPU (1000
    // ticks = 10 s) and the owner 20 ticks (0.2 s).
    write_stat(dir.path(), 1000 + 1020, 0, 1000 + 980);
    g.set(Duration::from_secs(10));
    let s = m.sample_at(t0 + Duration::from_secs(10)).unwrap().unwrap();
    assert!((s.owner - 0.01).abs() < 1e-9, "{s:?}");
    assert!((s.guest - 0.5).abs() < 1e-9, "{s:?}");
    // The guest's share of the load average moves toward 1 runnable thread
    // with the kernel's 60-s time constant: 1 - e^(-10/60).
    let expect = 1.0 - (-10.0f64 / 60.0).exp();
    assert!((m.guest_load() - expect).abs() < 1e-9);
}

#[test]
fn owner_share_counts_system_time_and_clamps() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = meter(dir.path(), NoGuests);
    let t0 = Instant::now();
    write_stat(dir.path(), 0, 0, 0);
    m.sample_at(t0).unwrap();
    write_stat(dir.path(), 50, 50, 100);
    let s = m.sample_at(t0 + Duration::from_secs(1)).unwrap().unwrap();
    assert!((s.owner - 0.5).abs() < 1e-9);
    // No time passed in /proc/stat: zero, not NaN.
    let s = m.sample_at(t0 + Duration::from_secs(2)).unwrap().unwrap();
    assert_eq!(s.owner, 0.0);
}

#[test]
fn guest_counter_reset_or_failure_is_not_owner_load_spike() {
    let dir = tempfile::tempdir().unwrap();
    let g = FakeGuests::default();
    g.set(Duration::from_secs(100));
    let mut m = meter(dir.path(), g.clone());
    let t0 = Instant::now();
    write_stat(dir.path(), 0, 0, 0);
    m.sample_at(t0).unwrap();
    // Parent group recreated: the counter went back to 1 s. Busy time 100
    // ticks (1 s), all guest, but the delta is unknown: counted as 0 guest.
    g.set(Duration::from_secs(1));
    write_stat(dir.path(), 100, 0, 100);
    let s = m.sample_at(t0 + Duration::from_secs(1)).unwrap().unwrap();
    assert!((s.owner - 0.5).abs() < 1e-9);
    assert_eq!(s.guest, 0.0);
    // Usage unreadable: the previous counter is kept (delta 0) and the
    // reading still succeeds.
    g.fail();
    write_stat(dir.path(), 100, 0, 300);
    let s = m.sample_at(t0 + Duration::from_secs(2)).unwrap().unwrap();
    assert_eq!(s.owner, 0.0);
}

#[test]
fn malformed_files_name_their_path() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("stat"), "intr 0\n").unwrap();
    let e = read_proc_stat(dir.path()).unwrap_err().to_string();
    assert!(e.contains("stat"), "{e}");
    fs::write(dir.path().join("loadavg"), "x y\n").unwrap();
    let e = read_loadavg(dir.path()).unwrap_err().to_string();
    assert!(e.contains("loadavg"), "{e}");
    let e = read_loadavg(&dir.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope"), "{e}");
}

#[test]
fn monitor_reading_maps_to_detector_sample() {
    let dir = tempfile::tempdir().unwrap();
    let proc_ = dir.path().join("proc");
    let sys = dir.path().join("sys");
    let input = dir.path().join("input");
    fs::create_dir_all(&proc_).unwrap();
    fs::create_dir_all(&input).unwrap();
    fs::create_dir_all(sys.join("class/power_supply/BAT0")).unwrap();
    fs::write(sys.join("class/power_supply/BAT0/type"), "Battery\n").unwrap();
    fs::write(sys.join("class/power_supply/BAT0/status"), "Full\n").unwrap();
    fs::write(proc_.join("loadavg"), "1.20 0.80 0.50 2/300 4242\n").unwrap();
    write_stat(&proc_, 0, 0, 0);
    let g = FakeGuests::default();
    g.set(Duration::ZERO);
    let idle = MinIdle::new().with(EvdevSource::with_dir(&input));
    let paths = OwnerPaths {
        procfs: proc_.clone(),
        sysfs: sys.clone(),
    };
    let mut mon = OwnerMonitor::new(idle, meter(&proc_, g.clone()), paths);
    let now = SystemTime::now();
    let r = mon.read(now);
    // First reading: no CPU delta (reads as busy), no input device.
    assert_eq!(r.owner_cpu, None);
    assert_eq!(r.since_input, None);
    assert!(!r.on_battery);
    assert!(r.to_sample().owner_cpu.is_nan());
    // A keystroke 42 s ago on a hot-plugged keyboard.
    let ev = gleaner_station::owner::InputEvent {
        sec: (now - Duration::from_secs(42))
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64,
        usec: 0,
        kind: 1,
        code: 30,
        value: 0,
    };
    fs::write(input.join("event0"), ev.encode()).unwrap();
    write_stat(&proc_, 110, 0, 90);
    g.set(Duration::from_millis(1000));
    let r = mon.read(now);
    assert!((r.owner_cpu.unwrap() - 0.05).abs() < 1e-9, "{r:?}");
    assert!((r.guest_cpu.unwrap() - 0.5).abs() < 1e-9, "{r:?}");
    let since = r.since_input.unwrap();
    assert!(since >= Duration::from_secs(42) && since < Duration::from_secs(43));
    assert_eq!(r.load_avg_raw, Some(1.2));
    let owner_la = r.owner_load_avg.unwrap();
    assert!((0.0..1.2).contains(&owner_la));
    let s = r.to_sample();
    assert_eq!(
        s.since_input,
        Some(Dur::from_micros(since.as_micros() as u64))
    );
    assert_eq!(s.load_avg, r.owner_load_avg);
    // Unplugged from the mains: the sample reads as owner present.
    fs::write(sys.join("class/power_supply/BAT0/status"), "Discharging\n").unwrap();
    let r = mon.read(now);
    assert!(r.on_battery);
    assert_eq!(r.to_sample().since_input, Some(Dur::ZERO));
}

#[test]
fn other_users_sessions_read_as_owned() {
    let dir = tempfile::tempdir().unwrap();
    let proc_ = dir.path();
    let pid = |pid: u32, loginuid: &str| {
        let d = proc_.join(pid.to_string());
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("loginuid"), loginuid).unwrap();
    };
    pid(1, "4294967295"); // never logged in
    pid(200, "65534"); // the guest user: ignored
    fs::create_dir_all(proc_.join("self")).unwrap(); // not a pid
    fs::write(proc_.join("loadavg"), "0.00 0.00 0.00 1/1 1\n").unwrap();
    write_stat(proc_, 0, 0, 0);
    let check = SessionCheck::new(proc_, [65534]);
    assert_eq!(check.sessions().unwrap(), Vec::<u32>::new());
    let mut mon = OwnerMonitor::new(
        MinIdle::new(),
        meter(proc_, NoGuests),
        OwnerPaths {
            procfs: proc_.to_path_buf(),
            sysfs: proc_.join("nosys"),
        },
    )
    .with_sessions(check);
    let r = mon.read(SystemTime::now());
    assert!(r.other_sessions.is_empty());
    assert_eq!(r.to_sample().since_input, None);
    pid(300, "1001"); // someone logged in over ssh
    pid(301, "1001");
    let r = mon.read(SystemTime::now());
    assert_eq!(r.other_sessions, vec![1001]);
    assert_eq!(r.to_sample().since_input, Some(Dur::ZERO));
}

#[test]
fn reading_to_sample_is_plain() {
    let r = OwnerReading {
        owner_cpu: Some(0.001),
        guest_cpu: Some(0.9),
        since_input: Some(Duration::from_secs(90)),
        load_avg_raw: Some(1.0),
        owner_load_avg: Some(0.1),
        on_battery: false,
        other_sessions: vec![],
    };
    assert_eq!(
        r.to_sample(),
        OwnerSample {
            owner_cpu: 0.001,
            since_input: Some(Dur::from_secs(90)),
            load_avg: Some(0.1),
        }
    );
}

#[test]
fn real_proc_smoke() {
    // The real files parse and give sane fractions on this machine.
    let (t, n) = read_proc_stat(Path::new("/proc")).unwrap();
    assert!(t.total() > 0 && n >= 1);
    let l = read_loadavg(Path::new("/proc")).unwrap();
    assert!(l.one >= 0.0);
    let mut m = CpuMeter::new("/proc", Box::new(NoGuests));
    assert_eq!(m.sample().unwrap(), None);
    std::thread::sleep(Duration::from_millis(100));
    let s = m.sample().unwrap().unwrap();
    assert!((0.0..=1.0).contains(&s.owner));
}
