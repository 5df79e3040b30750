//! When a deferred or CronTab job may start, on this station's calendar:
//! the rules are `gleaner_core::cron`'s, the time zone (the system's, or
//! `TZ`) is applied here. The queue stores the result with the job
//! (`not_before`, `match_from`) so that its idle jobs are matched only
//! from then on, and the home's timing loop (`home::timing`) acts on a
//! missed window.

use gleaner_classad::{Ad, EvalContext};
use gleaner_core::cron::{Civil, Spec, next_run};
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobId};

/// A job's next start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// Its `DeferralTime`: it may not start before.
    pub at: Time,
    /// It may be matched from here: `DeferralPrepTime` earlier (the host
    /// waits for `at` before it starts the program).
    pub match_from: Time,
}

fn secs(t: Time) -> i64 {
    i64::try_from(t.as_micros() / 1_000_000).unwrap_or(i64::MAX)
}

fn time_of(secs: i64) -> Time {
    Time::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// The calendar minute of `t` on this station.
pub fn local_minute(t: Time) -> Option<Civil> {
    let ts = jiff::Timestamp::from_second(secs(t)).ok()?;
    let dt = jiff::tz::TimeZone::system().to_datetime(ts);
    Some(Civil {
        year: i32::from(dt.year()),
        month: u8::try_from(dt.month()).ok()?,
        day: u8::try_from(dt.day()).ok()?,
        hour: u8::try_from(dt.hour()).ok()?,
        minute: u8::try_from(dt.minute()).ok()?,
    })
}

/// The instant of calendar minute `c` on this station (a minute skipped by
/// a clock change is taken as the one after it).
pub fn instant_of(c: Civil) -> Option<Time> {
    let dt = jiff::civil::DateTime::new(
        i16::try_from(c.year).ok()?,
        i8::try_from(c.month).ok()?,
        i8::try_from(c.day).ok()?,
        i8::try_from(c.hour).ok()?,
        i8::try_from(c.minute).ok()?,
        0,
        0,
    )
    .ok()?;
    let ts = jiff::tz::TimeZone::system().to_timestamp(dt).ok()?;
    Some(time_of(ts.as_second()))
}

/// A string attribute's text (`CronMinute = "*/5"`).
fn attr_text(d: &JobDescription, name: &str) -> Option<String> {
    let v = d.custom_attrs.get(name)?;
    let e = gleaner_classad::parse_expr(v).ok()?;
    let val = EvalContext::new(0).eval(&e);
    Some(match val.as_str() {
        Some(s) => s.to_string(),
        None => val.unparse(),
    })
}

/// The job's CronTab schedule, if it has one.
pub fn cron_spec(d: &JobDescription) -> Option<Spec> {
    let f = |n: &str| attr_text(d, n);
    let fields = [
        f("CronMinute"),
        f("CronHour"),
        f("CronDayOfMonth"),
        f("CronMonth"),
        f("CronDayOfWeek"),
    ];
    if fields.iter().all(Option::is_none) {
        return None;
    }
    Spec::new(
        fields[0].as_deref(),
        fields[1].as_deref(),
        fields[2].as_deref(),
        fields[3].as_deref(),
        fields[4].as_deref(),
    )
    .ok()
}

/// A whole number of seconds from an attribute (`DeferralWindow`).
pub fn attr_secs(d: &JobDescription, name: &str, default: i64) -> i64 {
    d.custom_attrs
        .get(name)
        .and_then(|v| gleaner_classad::parse_expr(v).ok())
        .and_then(|e| EvalContext::new(0).eval(&e).as_f64())
        .filter(|n| n.is_finite())
        .map_or(default, |n| n as i64)
}

/// `DeferralWindow` in seconds.
pub fn window_secs(d: &JobDescription) -> i64 {
    attr_secs(d, "DeferralWindow", 0).max(0)
}

fn with_prep(d: &JobDescription, at: i64) -> Start {
    let prep = attr_secs(d, "DeferralPrepTime", 0).max(0);
    Start {
        at: time_of(at),
        match_from: time_of(at.saturating_sub(prep)),
    }
}

/// The next run of a CronTab job after `now` (`None`: not a cron job, or
/// its schedule never matches).
pub fn next_cron_start(d: &JobDescription, now: Time) -> Option<Start> {
    let spec = cron_spec(d)?;
    let next = next_run(&spec, local_minute(now)?)?;
    Some(with_prep(d, secs(instant_of(next)?)))
}

/// When a job just queued at `qdate` may first start: its CronTab
/// schedule's next time, else its `DeferralTime` (an expression over its
/// ad, e.g. `QDate + 60`); `None` for a job that may start at once.
pub fn first_start(d: &JobDescription, id: JobId, qdate: Time) -> Option<Start> {
    if cron_spec(d).is_some() {
        return next_cron_start(d, qdate);
    }
    let expr = d.custom_attrs.get("DeferralTime")?;
    let mut ad = Ad::new();
    for (k, v) in &d.custom_attrs {
        if ad.insert(k, v).is_err() {
            ad.insert_str(k, v);
        }
    }
    ad.insert_int("QDate", secs(qdate));
    ad.insert_int("ClusterId", i64::try_from(id.cluster).unwrap_or(i64::MAX));
    ad.insert_int("ProcId", i64::from(id.proc));
    ad.insert_int("CurrentTime", secs(qdate));
    let e = gleaner_classad::parse_expr(expr).ok()?;
    let v = EvalContext::new(secs(qdate)).with_my(&ad).eval(&e);
    let at = v.as_f64().filter(|n| n.is_finite() && *n >= 0.0)?;
    Some(with_prep(d, at as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(attrs: &[(&str, &str)]) -> JobDescription {
        let mut d = JobDescription::new("alice", "/bin/true");
        for (k, v) in attrs {
            d.custom_attrs.insert((*k).into(), (*v).into());
        }
        d
    }

    #[test]
    fn deferral_time_is_an_expression_over_the_ad() {
        let d = desc(&[("DeferralTime", "QDate + 60"), ("DeferralPrepTime", "20")]);
        let s = first_start(&d, JobId::new(3, 0), Time::from_secs(1_000)).unwrap();
        assert_eq!(s.at, Time::from_secs(1_060));
        assert_eq!(s.match_from, Time::from_secs(1_040));
        assert_eq!(
            first_start(&desc(&[]), JobId::new(1, 0), Time::from_secs(5)),
            None
        );
    }

    #[test]
    fn cron_jobs_start_on_the_next_matching_minute() {
        let d = desc(&[("CronMinute", "\"*/5\"")]);
        // Two and a half minutes past a multiple of five minutes (UTC):
        // the next run is within five minutes, on a local :x0 or :x5.
        let t = Time::from_secs(1_700_000_000 - 1_700_000_000 % 300 + 150);
        let s = next_cron_start(&d, t).unwrap();
        let at = secs(s.at);
        assert!(
            at > secs(t) && at - secs(t) <= 300,
            "{at} after {}",
            secs(t)
        );
        assert_eq!(local_minute(s.at).unwrap().minute % 5, 0);
        assert_eq!(s.match_from, s.at, "no prep time given");
    }
}
