//! Owner CPU load: `/proc/stat` deltas minus the guests' cgroup usage, and
//! the load average from `/proc/loadavg`.
//!
//! Why subtract: a lingering guest keeps the CPU near 100 % busy, so the raw
//! utilisation would make every station running a guest look owned forever
//! (Linger-Longer spec §6.4; Mutka 1988 L351: the monitor measures the
//! owner's own load, not system or guest work).

use super::OwnerError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Cumulative CPU counters of `/proc/stat`'s aggregate `cpu` line, in clock
/// ticks (`USER_HZ`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// All time that passed (guest/guest_nice are already inside user/nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
    /// Time spent running something (not idle, not waiting for I/O, not
    /// stolen by the hypervisor).
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
}

/// Parse `<procfs>/stat`; returns the aggregate counters and the number of
/// per-CPU lines (the CPU count).
pub fn read_proc_stat(procfs: &Path) -> Result<(CpuTimes, usize), OwnerError> {
    let path = procfs.join("stat");
    let text = std::fs::read_to_string(&path).map_err(|e| OwnerError::io(&path, e))?;
    parse_proc_stat(&text).map_err(|what| OwnerError::parse(&path, what))
}

fn parse_proc_stat(text: &str) -> Result<(CpuTimes, usize), String> {
    let mut agg = None;
    let mut ncpu = 0usize;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        match it.next() {
            Some("cpu") => {
                let v: Vec<u64> = it
                    .map(|f| {
                        f.parse::<u64>()
                            .map_err(|e| format!("cpu field {f:?}: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                if v.len() < 4 {
                    return Err(format!("cpu line has {} fields, need ≥ 4", v.len()));
                }
                let g = |i: usize| v.get(i).copied().unwrap_or(0);
                agg = Some(CpuTimes {
                    user: g(0),
                    nice: g(1),
                    system: g(2),
                    idle: g(3),
                    iowait: g(4),
                    irq: g(5),
                    softirq: g(6),
                    steal: g(7),
                });
            }
            Some(w) if w.starts_with("cpu") => ncpu += 1,
            _ => {}
        }
    }
    let agg = agg.ok_or_else(|| "no aggregate `cpu` line".to_string())?;
    Ok((agg, ncpu.max(1)))
}

/// `/proc/loadavg`'s three averages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
}

pub fn read_loadavg(procfs: &Path) -> Result<LoadAvg, OwnerError> {
    let path = procfs.join("loadavg");
    let text = std::fs::read_to_string(&path).map_err(|e| OwnerError::io(&path, e))?;
    let mut it = text.split_ascii_whitespace().map(|f| f.parse::<f64>());
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(one)), Some(Ok(five)), Some(Ok(fifteen))) => Ok(LoadAvg { one, five, fifteen }),
        _ => Err(OwnerError::parse(&path, format!("{:?}", text.trim()))),
    }
}

/// Cumulative CPU time used by all guests together (monotonic while the
/// guests' parent group exists). Implemented by
/// [`crate::isolation::CgroupManager`].
pub trait GuestCpuUsage: Send {
    fn guest_cpu_usage(&self) -> Result<Duration, String>;
}

/// No guests (a station that runs nothing, or tests).
pub struct NoGuests;

impl GuestCpuUsage for NoGuests {
    fn guest_cpu_usage(&self) -> Result<Duration, String> {
        Ok(Duration::ZERO)
    }
}

/// Fractions of the whole machine over one sampling interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuShare {
    /// Owner (non-guest, non-monitor) busy time ÷ total time, in `0..=1`.
    pub owner: f64,
    /// Guest busy time ÷ total time, in `0..=1`.
    pub guest: f64,
}

struct Prev {
    times: CpuTimes,
    guest: Duration,
    own: Duration,
    at: Instant,
}

/// Measures owner CPU from successive `/proc/stat` readings.
pub struct CpuMeter {
    procfs: PathBuf,
    guests: Box<dyn GuestCpuUsage>,
    tick: Duration,
    exclude_self: bool,
    prev: Option<Prev>,
    ncpu: usize,
    /// Guest runnable threads, exponentially averaged like the kernel's
    /// 1-minute load average, to subtract from `/proc/loadavg`.
    guest_load: f64,
}

impl CpuMeter {
    /// `procfs` is normally `/proc`. The tick length is `sysconf(_SC_CLK_TCK)`.
    pub fn new(procfs: impl Into<PathBuf>, guests: Box<dyn GuestCpuUsage>) -> Self {
        // SAFETY: sysconf has no preconditions; it only reads a constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let hz = if hz > 0 { hz as u64 } else { 100 };
        CpuMeter {
            procfs: procfs.into(),
            guests,
            tick: Duration::from_nanos(1_000_000_000 / hz),
            exclude_self: true,
            prev: None,
            ncpu: 1,
            guest_load: 0.0,
        }
    }

    /// Override the tick length (tests with fake `/proc/stat` files).
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Whether to subtract this process's own CPU (`<procfs>/self/stat`):
    /// monitor work is not owner work (Mutka 1988 L351). Default on.
    pub fn exclude_self(mut self, yes: bool) -> Self {
        self.exclude_self = yes;
        self
    }

    /// CPU count seen in the last `/proc/stat`.
    pub fn ncpu(&self) -> usize {
        self.ncpu
    }

    /// Guests' share of the load average (runnable threads, 1-min average).
    pub fn guest_load(&self) -> f64 {
        self.guest_load
    }

    fn own_usage(&self) -> Result<Duration, OwnerError> {
        if !self.exclude_self {
            return Ok(Duration::ZERO);
        }
        let path = self.procfs.join("self").join("stat");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            // A fake procfs without `self`: nothing to subtract.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Duration::ZERO),
            Err(e) => return Err(OwnerError::io(&path, e)),
        };
        let (utime, stime) = parse_pid_stat_times(&text).ok_or_else(|| {
            OwnerError::parse(&path, "no utime/stime after the command name".to_string())
        })?;
        let tick_ns = u64::try_from(self.tick.as_nanos()).unwrap_or(u64::MAX);
        Ok(Duration::from_nanos(
            tick_ns.saturating_mul(utime.saturating_add(stime)),
        ))
    }

    /// Take a reading. The first call only records a baseline and returns
    /// `None`.
    pub fn sample(&mut self) -> Result<Option<CpuShare>, OwnerError> {
        self.sample_at(Instant::now())
    }

    pub fn sample_at(&mut self, at: Instant) -> Result<Option<CpuShare>, OwnerError> {
        let (times, ncpu) = read_proc_stat(&self.procfs)?;
        self.ncpu = ncpu;
        let guest = match self.guests.guest_cpu_usage() {
            Ok(g) => g,
            Err(e) => {
                // Without the guest figure the owner would look as busy as
                // the guest; keep the previous counter so the delta is 0 and
                // say so loudly.
                tracing::warn!(error = %e, "guest CPU usage unreadable");
                self.prev.as_ref().map_or(Duration::ZERO, |p| p.guest)
            }
        };
        let own = self.own_usage()?;
        let cur = Prev {
            times,
            guest,
            own,
            at,
        };
        let Some(prev) = self.prev.replace(cur) else {
            return Ok(None);
        };
        let dt_total = times.total().saturating_sub(prev.times.total());
        if dt_total == 0 {
            return Ok(Some(CpuShare {
                owner: 0.0,
                guest: 0.0,
            }));
        }
        let total = self.tick.as_secs_f64() * dt_total as f64;
        let busy = self.tick.as_secs_f64() * times.busy().saturating_sub(prev.times.busy()) as f64;
        // A counter that went backwards (guest parent group recreated) gives
        // no information for this interval: count 0, not a huge number.
        let g = guest.saturating_sub(prev.guest).as_secs_f64();
        let s = own.saturating_sub(prev.own).as_secs_f64();
        let owner = ((busy - g - s) / total).clamp(0.0, 1.0);
        let guest_frac = (g / total).clamp(0.0, 1.0);
        // Kernel load average: exponential decay with a 60-s constant
        // (kernel/sched/loadavg.c); the guest's mean runnable threads over
        // the interval is its busy time ÷ wall time.
        let wall = at.saturating_duration_since(prev.at).as_secs_f64();
        if wall > 0.0 {
            let guest_threads = g / wall;
            let decay = (-wall / 60.0).exp();
            self.guest_load = self.guest_load * decay + guest_threads * (1.0 - decay);
        }
        Ok(Some(CpuShare {
            owner,
            guest: guest_frac,
        }))
    }
}

/// utime and stime (fields 14, 15) of `/proc/<pid>/stat`; the command name
/// may contain spaces and parentheses, so split after the last `)`.
pub(crate) fn parse_pid_stat_times(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_ascii_whitespace();
    // After ")": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt
    // majflt cmajflt utime(14) stime(15).
    let utime = f.nth(11)?.parse().ok()?;
    let stime = f.next()?.parse().ok()?;
    Some((utime, stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat() {
        let t = "cpu  10 2 3 100 4 1 1 0 5 0\ncpu0 5 1 1 50 2 0 0 0 0 0\ncpu1 5 1 2 50 2 1 1 0 0 0\nintr 1 2\n";
        let (c, n) = parse_proc_stat(t).unwrap();
        assert_eq!(n, 2);
        assert_eq!(c.total(), 121);
        assert_eq!(c.busy(), 17);
        assert!(parse_proc_stat("intr 1\n").is_err());
        assert!(parse_proc_stat("cpu 1 x 3 4\n").is_err());
    }

    #[test]
    fn parses_pid_stat_with_odd_names() {
        let t = "42 (a b) c)) S 1 42 42 0 -1 4194560 100 0 0 0 77 33 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_pid_stat_times(t), Some((77, 33)));
    }
}
