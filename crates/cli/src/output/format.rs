//! Cell formats shared by the renderers (condor_q's columns).

use gleaner_core::time::Time;
use gleaner_proto::api::JobInfo;
use gleaner_proto::job::JobState;

fn now() -> Time {
    let us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    Time::from_micros(us)
}

/// `MM/DD HH:MM` (UTC), as condor_q's SUBMITTED column.
pub fn short_date(t: Time) -> String {
    let full = gleaner_proto::api::utc_datetime(t); // YYYY-MM-DD HH:MM:SS
    match (full.get(5..7), full.get(8..10), full.get(11..16)) {
        (Some(m), Some(d), Some(hm)) => format!("{m}/{d} {hm}"),
        _ => full,
    }
}

/// `D+HH:MM:SS`, as condor_q's RUN_TIME column.
pub fn run_time(j: &JobInfo) -> String {
    let Some(start) = j.started_at else {
        return "0+00:00:00".into();
    };
    let end = match j.state {
        JobState::Running | JobState::Suspended => now(),
        _ => j.finished_at.unwrap_or(j.updated_at),
    };
    let s = end.since(start).0 / 1_000_000;
    format!(
        "{}+{:02}:{:02}:{:02}",
        s / 86_400,
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60
    )
}

/// The exit code of a completed job, else empty.
pub fn exit_code(j: &JobInfo) -> String {
    match j.state {
        JobState::Completed { exit_code } => exit_code.to_string(),
        _ => String::new(),
    }
}

/// `YYYY-MM-DD HH:MM` (UTC) of seconds since the UNIX epoch.
pub fn epoch_date(secs: u64) -> String {
    let full = gleaner_proto::api::utc_datetime(Time::from_micros(secs.saturating_mul(1_000_000)));
    full.get(..16).map_or(full.clone(), str::to_string)
}

/// One value as condor_q -af prints it: strings without quotes, other
/// values in HTCondor's form (`undefined`, `true`, `12`, `2.5`, `3.0`).
pub fn autoformat_value(v: &gleaner_classad::Value) -> String {
    super::adformat::value_text(v, false)
}

pub fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(short_date(Time::from_secs(1_763_707_800)), "11/21 06:50");
    }
}
