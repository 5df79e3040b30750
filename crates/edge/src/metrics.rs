//! What every daemon's `GET /metrics` shares: the daemon's own CPU time and
//! resident memory (from `/proc/self`), and the response carrying a
//! registry in the OpenMetrics text format (which Prometheus scrapes and
//! its text-format parsers read).
//!
//! Daemons build a fresh [`Registry`] per scrape from their state (gauges
//! are read at scrape time, counters copied from their running totals), so
//! no metric object has to be threaded through the code.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

/// The content type of the OpenMetrics text format, version 1.0.0.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A daemon's own use of the machine, read from `/proc/self`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Resident set size, in bytes.
    pub resident_bytes: u64,
}

impl ProcessStats {
    /// This process now; `None` where `/proc` is missing or unreadable
    /// (the metrics are then left out rather than reported as 0).
    pub fn current() -> Option<ProcessStats> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        Self::parse(&stat, &statm, clock_ticks()?, page_size()?)
    }

    /// `stat` and `statm` as the kernel writes them (proc(5)): utime and
    /// stime are fields 14 and 15 of `stat` in clock ticks, counted after
    /// the command name (which may hold spaces and parentheses, hence the
    /// last `)`); resident pages are the second field of `statm`.
    pub fn parse(stat: &str, statm: &str, ticks: u64, page: u64) -> Option<ProcessStats> {
        let after_comm = &stat[stat.rfind(')')? + 1..];
        // Fields from 3 (state) on: utime is field 14, index 11 here.
        let mut fields = after_comm.split_whitespace().skip(11);
        let utime: u64 = fields.next()?.parse().ok()?;
        let stime: u64 = fields.next()?.parse().ok()?;
        let resident: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        if ticks == 0 {
            return None;
        }
        Some(ProcessStats {
            cpu_seconds: (utime + stime) as f64 / ticks as f64,
            resident_bytes: resident.saturating_mul(page),
        })
    }

    /// Registers `process_cpu_seconds_total` and
    /// `process_resident_memory_bytes` under the registry's prefix.
    pub fn register(&self, registry: &mut Registry) {
        let cpu = Counter::<f64, AtomicU64>::default();
        cpu.inc_by(self.cpu_seconds);
        registry.register_with_unit(
            "process_cpu",
            "CPU time (user + system) used by this daemon",
            Unit::Seconds,
            cpu,
        );
        let rss = Gauge::<i64>::default();
        rss.set(i64::try_from(self.resident_bytes).unwrap_or(i64::MAX));
        registry.register_with_unit(
            "process_resident_memory",
            "Resident memory of this daemon",
            Unit::Bytes,
            rss,
        );
    }
}

fn clock_ticks() -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|&t| t > 0)
}

fn page_size() -> Option<u64> {
    // SAFETY: as above.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).ok().filter(|&p| p > 0)
}

/// The registry as a `/metrics` response (500 if encoding fails, which
/// only a broken label writer can make happen).
pub fn metrics_response(registry: &Registry) -> Response {
    let mut body = String::new();
    match encode(&mut body, registry) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], body).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics").into_response(),
    }
}

/// A gauge of `f64` (for values that are not whole numbers).
pub type FloatGauge = Gauge<f64, AtomicU64>;

/// A gauge set to `v`.
pub fn gauge(v: i64) -> Gauge {
    let g = Gauge::default();
    g.set(v);
    g
}

/// A counter holding `v` (a running total kept elsewhere).
pub fn counter(v: u64) -> Counter {
    let c = Counter::default();
    c.inc_by(v);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat_with_a_strange_command_name() {
        // Fields 14/15 (utime 250, stime 50 ticks); the name holds ") (".
        let stat =
            "42 (a) (b c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 39 19 4 0 100 1000 300";
        let statm = "5000 300 100 10 0 400 0";
        let s = ProcessStats::parse(stat, statm, 100, 4096).unwrap();
        assert_eq!(s.cpu_seconds, 3.0);
        assert_eq!(s.resident_bytes, 300 * 4096);
    }

    #[test]
    fn this_process_has_stats() {
        let s = ProcessStats::current().unwrap();
        assert!(s.resident_bytes > 0);
    }

    #[test]
    fn process_metrics_are_named_by_convention() {
        let mut r = Registry::with_prefix("gleaner");
        ProcessStats {
            cpu_seconds: 1.5,
            resident_bytes: 4096,
        }
        .register(&mut r);
        let mut out = String::new();
        encode(&mut out, &r).unwrap();
        assert!(
            out.contains("gleaner_process_cpu_seconds_total 1.5"),
            "{out}"
        );
        assert!(
            out.contains("gleaner_process_resident_memory_bytes 4096"),
            "{out}"
        );
    }
}
