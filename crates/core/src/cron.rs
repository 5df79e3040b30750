//! Deferred and CronTab jobs (HTCondor manual, "Time Scheduling for Job
//! Execution"): when a job may start, and when a missed start holds it.
//!
//! A deferred job (`deferral_time`) may start from its `DeferralTime`
//! until `DeferralWindow` seconds after; a job that is still waiting after
//! that has missed its time and is held (HTCondor: "evicted from the
//! execution machine and put on hold"). A CronTab job (`cron_minute`,
//! `cron_hour`, `cron_day_of_month`, `cron_month`, `cron_day_of_week`)
//! gets a new `DeferralTime` from its schedule whenever it enters the
//! queue, is requeued or is released: the first matching minute after
//! the current time rounded up to the next minute; one that misses its
//! window waits for the next matching time instead (the manual: it "must
//! wait for the next execution time").
//!
//! Pure code: calendar times come in as [`Civil`] minutes; the caller
//! converts to and from the station's time zone.

use std::fmt;

/// A calendar minute (proleptic Gregorian), in the station's time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Civil {
    pub year: i32,
    /// 1-12.
    pub month: u8,
    /// 1-31.
    pub day: u8,
    /// 0-23.
    pub hour: u8,
    /// 0-59.
    pub minute: u8,
}

/// Days since 1970-01-01 of a date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i32, m: u8, d: u8) -> i64 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i32, u8, u8) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    ((y + i64::from(m <= 2)) as i32, m, d)
}

impl Civil {
    /// The minute `days` days after this one's date, same hour and minute.
    fn day_number(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// 0 = Sunday … 6 = Saturday.
    pub fn weekday(&self) -> u8 {
        // 1970-01-01 was a Thursday.
        (self.day_number() + 4).rem_euclid(7) as u8
    }

    /// Minutes since 1970-01-01 00:00 (in the same zone).
    pub fn minutes(&self) -> i64 {
        self.day_number() * 1440 + i64::from(self.hour) * 60 + i64::from(self.minute)
    }

    /// The calendar minute `m` minutes after 1970-01-01 00:00.
    pub fn from_minutes(m: i64) -> Civil {
        let days = m.div_euclid(1440);
        let rem = m.rem_euclid(1440);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (rem / 60) as u8,
            minute: (rem % 60) as u8,
        }
    }
}

impl fmt::Display for Civil {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute
        )
    }
}

/// The five fields of a CronTab schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    /// The values the field allows (day of week: 0-7, Sunday 0 or 7).
    fn range(self) -> (u8, u8) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 7),
        }
    }

    fn key(self) -> &'static str {
        match self {
            Field::Minute => "cron_minute",
            Field::Hour => "cron_hour",
            Field::DayOfMonth => "cron_day_of_month",
            Field::Month => "cron_month",
            Field::DayOfWeek => "cron_day_of_week",
        }
    }
}

/// Why a CronTab field is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key} \"{text}\": {why}")]
pub struct CronError {
    pub key: &'static str,
    pub text: String,
    pub why: String,
}

/// The set of values one field allows, as a bit set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Set {
    bits: u64,
    /// Written as `*` (for the day-of-month/day-of-week rule).
    star: bool,
}

impl Set {
    fn has(&self, v: u8) -> bool {
        self.bits & (1 << v) != 0
    }
}

/// A CronTab schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    minute: Set,
    hour: Set,
    dom: Set,
    month: Set,
    dow: Set,
}

impl Spec {
    /// Parses one field: `*`, `N`, `N-M`, `*/S`, `N-M/S`, and comma lists
    /// of those (the manual's operators).
    pub fn parse_field(field: Field, text: &str) -> Result<u64, CronError> {
        parse(field, text).map(|s| s.bits)
    }

    /// The schedule from its fields (`None`: `*`, every value).
    pub fn new(
        minute: Option<&str>,
        hour: Option<&str>,
        day_of_month: Option<&str>,
        month: Option<&str>,
        day_of_week: Option<&str>,
    ) -> Result<Spec, CronError> {
        let f = |field: Field, t: Option<&str>| parse(field, t.unwrap_or("*"));
        let mut dow = f(Field::DayOfWeek, day_of_week)?;
        // Sunday is 0 or 7.
        if dow.has(7) {
            dow.bits |= 1;
        }
        Ok(Spec {
            minute: f(Field::Minute, minute)?,
            hour: f(Field::Hour, hour)?,
            dom: f(Field::DayOfMonth, day_of_month)?,
            month: f(Field::Month, month)?,
            dow,
        })
    }

    /// Whether the schedule runs on this date: day of month and day of
    /// week are or-ed when both are restricted (the manual: "the day will
    /// be the logical or of both"); a `*` in one leaves the other to
    /// decide.
    fn day_matches(&self, c: &Civil) -> bool {
        if !self.month.has(c.month) {
            return false;
        }
        let dom = self.dom.has(c.day);
        let dow = self.dow.has(c.weekday());
        match (self.dom.star, self.dow.star) {
            (true, true) => true,
            (true, false) => dow,
            (false, true) => dom,
            (false, false) => dom || dow,
        }
    }

    /// Whether the schedule runs at this minute.
    pub fn matches(&self, c: &Civil) -> bool {
        self.day_matches(c) && self.hour.has(c.hour) && self.minute.has(c.minute)
    }

    /// The first matching minute at or after `from`. Searches up to eight
    /// years ahead (a schedule for 29 February on a Monday may take
    /// that long); `None` if it never matches (31 February).
    pub fn next_at_or_after(&self, from: Civil) -> Option<Civil> {
        let first_day = from.day_number();
        for day in first_day..first_day + 366 * 8 + 2 {
            let (year, month, d) = civil_from_days(day);
            let date = Civil {
                year,
                month,
                day: d,
                hour: 0,
                minute: 0,
            };
            if !self.day_matches(&date) {
                continue;
            }
            let (h0, m0) = if day == first_day {
                (from.hour, from.minute)
            } else {
                (0, 0)
            };
            for hour in h0..24 {
                if !self.hour.has(hour) {
                    continue;
                }
                let start = if hour == h0 { m0 } else { 0 };
                if let Some(minute) = (start..60).find(|m| self.minute.has(*m)) {
                    return Some(Civil {
                        hour,
                        minute,
                        ..date
                    });
                }
            }
        }
        None
    }
}

fn parse(field: Field, text: &str) -> Result<Set, CronError> {
    let (lo, hi) = field.range();
    let err = |why: String| CronError {
        key: field.key(),
        text: text.to_string(),
        why,
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(err("empty".into()));
    }
    let num = |s: &str| -> Result<u8, CronError> {
        let v: u8 = s
            .trim()
            .parse()
            .map_err(|_| err(format!("\"{s}\" is not a number")))?;
        if v < lo || v > hi {
            return Err(err(format!("{v} is outside {lo}-{hi}")));
        }
        Ok(v)
    };
    let mut bits = 0u64;
    for part in t.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u8 = s
                    .trim()
                    .parse()
                    .map_err(|_| err(format!("step \"{s}\" is not a number")))?;
                if step == 0 {
                    return Err(err("a step must be at least 1".into()));
                }
                (r.trim(), step)
            }
            None => (part.trim(), 1),
        };
        let (from, to) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(err(format!("range {a}-{b} runs backwards")));
            }
            (a, b)
        } else {
            let v = num(range)?;
            // `N/S` is N up to the end, every S.
            if step > 1 { (v, hi) } else { (v, v) }
        };
        let mut v = from;
        while v <= to {
            bits |= 1 << v;
            v = match v.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
    }
    Ok(Set {
        bits,
        star: t == "*",
    })
}

/// What a deferred job's time says now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deferral {
    /// Not yet: the job may start at `at` (seconds since the epoch).
    Wait { at: i64 },
    /// It may start now.
    Ready,
    /// It missed its window (`DeferralTime + DeferralWindow < now`).
    Missed,
}

/// Where `now` stands against a job's `DeferralTime` and `DeferralWindow`
/// (seconds). The window is inclusive, as HTCondor's "less than or equal
/// to the deferral window".
pub fn deferral(now: i64, time: i64, window: i64) -> Deferral {
    if now < time {
        Deferral::Wait { at: time }
    } else if now - time <= window.max(0) {
        Deferral::Ready
    } else {
        Deferral::Missed
    }
}

/// The first run time of a CronTab job after `now`: the current minute
/// rounded up to the next one, then the first match (HTCondor: "the
/// current time rounded later in time to the next minute").
pub fn next_run(spec: &Spec, now: Civil) -> Option<Civil> {
    spec.next_at_or_after(Civil::from_minutes(now.minutes() + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(y: i32, mo: u8, d: u8, h: u8, mi: u8) -> Civil {
        Civil {
            year: y,
            month: mo,
            day: d,
            hour: h,
            minute: mi,
        }
    }

    #[test]
    fn calendar_round_trips_and_weekdays() {
        assert_eq!(at(1970, 1, 1, 0, 0).minutes(), 0);
        assert_eq!(at(1970, 1, 1, 0, 0).weekday(), 4);
        // 2024-02-29 was a Thursday; 2000-01-01 a Saturday.
        assert_eq!(at(2024, 2, 29, 0, 0).weekday(), 4);
        assert_eq!(at(2000, 1, 1, 0, 0).weekday(), 6);
        let c = at(2031, 12, 31, 23, 59);
        assert_eq!(Civil::from_minutes(c.minutes()), c);
        assert_eq!(Civil::from_minutes(c.minutes() + 1), at(2032, 1, 1, 0, 0));
    }

    #[test]
    fn fields_as_the_manual_writes_them() {
        assert_eq!(Spec::parse_field(Field::Hour, "0-4").unwrap(), 0b11111);
        let m = Spec::parse_field(Field::Minute, "15,20,25,30").unwrap();
        assert_eq!(m, (1 << 15) | (1 << 20) | (1 << 25) | (1 << 30));
        let m = Spec::parse_field(Field::Minute, "10-30/5").unwrap();
        assert_eq!(m.count_ones(), 5);
        let h = Spec::parse_field(Field::Hour, "*/3").unwrap();
        assert_eq!(h.count_ones(), 8);
        assert!(Spec::parse_field(Field::Minute, "60").is_err());
        assert!(Spec::parse_field(Field::Month, "0").is_err());
        assert!(Spec::parse_field(Field::Hour, "5-2").is_err());
        assert!(Spec::parse_field(Field::Hour, "*/0").is_err());
        assert!(Spec::parse_field(Field::Hour, "x").is_err());
    }

    #[test]
    fn manual_examples() {
        // Every hour at :00, submitted 9:30 → 10:00.
        let s = Spec::new(Some("0"), Some("*"), None, None, None).unwrap();
        assert_eq!(
            next_run(&s, at(2025, 3, 4, 9, 30)),
            Some(at(2025, 3, 4, 10, 0))
        );
        // 23 minutes after every two hours.
        let s = Spec::new(Some("23"), Some("0-23/2"), None, None, None).unwrap();
        assert_eq!(
            next_run(&s, at(2025, 3, 4, 9, 30)),
            Some(at(2025, 3, 4, 10, 23))
        );
        // 22:30 on May 10th-20th and every Tuesday (2) of May.
        let s = Spec::new(Some("30"), Some("20"), Some("10-20"), Some("5"), Some("2")).unwrap();
        // 2025-05-06 is a Tuesday: before the 10th, the day of week counts.
        assert_eq!(
            next_run(&s, at(2025, 5, 1, 0, 0)),
            Some(at(2025, 5, 6, 20, 30))
        );
        // Now exactly on a matching minute: the next one, not this.
        let s = Spec::new(Some("*"), None, None, None, None).unwrap();
        assert_eq!(
            next_run(&s, at(2025, 1, 1, 0, 0)),
            Some(at(2025, 1, 1, 0, 1))
        );
        // Sunday as 7.
        let s = Spec::new(Some("0"), Some("0"), None, None, Some("7")).unwrap();
        assert_eq!(
            next_run(&s, at(2025, 3, 4, 0, 0)).map(|c| c.weekday()),
            Some(0)
        );
        // Never.
        let s = Spec::new(Some("0"), Some("0"), Some("31"), Some("2"), None).unwrap();
        assert_eq!(next_run(&s, at(2025, 1, 1, 0, 0)), None);
    }

    #[test]
    fn deferral_window_is_inclusive() {
        assert_eq!(deferral(90, 100, 0), Deferral::Wait { at: 100 });
        assert_eq!(deferral(100, 100, 0), Deferral::Ready);
        assert_eq!(deferral(101, 100, 0), Deferral::Missed);
        assert_eq!(deferral(145, 100, 120), Deferral::Ready);
        assert_eq!(deferral(221, 100, 120), Deferral::Missed);
    }

    proptest! {
        /// The next run matches, is after now, and no minute in between
        /// matches.
        #[test]
        fn next_run_is_the_first_match(
            m in "(\\*|[0-5]?[0-9])(/[1-9])?",
            h in "(\\*|1?[0-9])",
            start in 0i64..(60 * 24 * 365 * 40),
        ) {
            let s = Spec::new(Some(&m), Some(&h), None, None, None).unwrap();
            let now = Civil::from_minutes(start);
            let next = next_run(&s, now).unwrap();
            prop_assert!(s.matches(&next));
            prop_assert!(next.minutes() > now.minutes());
            for t in now.minutes() + 1..next.minutes() {
                prop_assert!(!s.matches(&Civil::from_minutes(t)));
            }
        }
    }
}
