//! The owner's rules for guests: operating windows and the allowed/denied
//! user lists (used in matchmaking and by the host).
//!
//! DMW leaves time-of-day and owner rules open (spec `dmw-neeracher.md`
//! §1.5: only "background jobs on certain hosts are suspended during working
//! hours", seeds/001_c7470f9b5ea54797.txt L1281, as a possible remedy);
//! HTCondor expresses them in the machine's `START` expression
//! (`ClockDay`, `ClockMin`). Gleaner gives owners a simpler, explicit form:
//! a list of windows such as `"Mon-Fri 18:00-08:00"` during which guests may
//! run. The coordinator evaluates them when it matches and the station when
//! it accepts a placement and while guests run, both through
//! [`Windows::open_at`] with the time passed in, so the rule is the same on
//! both sides and testable at its edges.
//!
//! ## Window syntax
//! `DAYS HH:MM-HH:MM`, where `DAYS` is `*` (every day), a day (`Mon`), a
//! range (`Mon-Fri`, wrapping allowed: `Fri-Mon`) or a comma list of those
//! (`Sat,Sun`). Times are local; the end is exclusive and may be `24:00`.
//! A window whose end is not after its start runs past midnight: it opens on
//! each listed day and closes on the next day (`Mon-Fri 18:00-08:00` is open
//! on Saturday until 08:00). `00:00-24:00` is the whole day. An empty list
//! of windows means "always open".

use serde::{Deserialize, Serialize};

const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const MIN_PER_DAY: u32 = 24 * 60;

/// Why a window or a user list cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("window {0:?}: expected \"DAYS HH:MM-HH:MM\", e.g. \"Mon-Fri 18:00-08:00\"")]
    Shape(String),
    #[error("window {window:?}: unknown day {day:?} (Mon, Tue, …, Sun or *)")]
    Day { window: String, day: String },
    #[error("window {window:?}: bad time {time:?} (HH:MM, 00:00 to 24:00)")]
    Time { window: String, time: String },
}

/// One operating window: open from `start` (minute of the day) on each day
/// of `days` until `end` (exclusive), on the next day if `end <= start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Bit d (0 = Monday) set when the window opens on that day.
    pub days: u8,
    pub start: u32,
    pub end: u32,
}

/// Local time as a weekday (0 = Monday) and a minute of the day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalTime {
    pub weekday: u32,
    pub minute: u32,
}

impl LocalTime {
    /// The local time at UNIX second `unix` for a zone `utc_offset_secs`
    /// east of UTC (1970-01-01 was a Thursday).
    pub fn from_unix(unix: i64, utc_offset_secs: i32) -> Self {
        let local = unix.saturating_add(i64::from(utc_offset_secs));
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        LocalTime {
            weekday: (days + 3).rem_euclid(7) as u32,
            minute: (secs / 60) as u32,
        }
    }
}

fn parse_day(s: &str) -> Option<u32> {
    let l = s.to_ascii_lowercase();
    DAY_NAMES
        .iter()
        .position(|d| l.get(..3).is_some_and(|p| d.starts_with(p)) && is_day_word(&l))
        .map(|p| p as u32)
}

fn is_day_word(l: &str) -> bool {
    const FULL: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    FULL.iter().any(|f| f.starts_with(l))
}

fn parse_days(window: &str, spec: &str) -> Result<u8, PolicyError> {
    if spec == "*" {
        return Ok(0x7f);
    }
    let bad = |day: &str| PolicyError::Day {
        window: window.to_string(),
        day: day.to_string(),
    };
    let mut mask = 0u8;
    for part in spec.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let a = parse_day(a.trim()).ok_or_else(|| bad(a))?;
                let b = parse_day(b.trim()).ok_or_else(|| bad(b))?;
                let mut d = a;
                loop {
                    mask |= 1 << d;
                    if d == b {
                        break;
                    }
                    d = (d + 1) % 7;
                }
            }
            None => mask |= 1 << parse_day(part).ok_or_else(|| bad(part))?,
        }
    }
    Ok(mask)
}

fn parse_time(window: &str, s: &str) -> Result<u32, PolicyError> {
    let bad = || PolicyError::Time {
        window: window.to_string(),
        time: s.to_string(),
    };
    let (h, m) = s.split_once(':').ok_or_else(bad)?;
    let h: u32 = h.parse().map_err(|_| bad())?;
    let m: u32 = m.parse().map_err(|_| bad())?;
    if m >= 60 || h > 24 || (h == 24 && m != 0) {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

impl Window {
    /// Parses `DAYS HH:MM-HH:MM` (see the module docs).
    pub fn parse(text: &str) -> Result<Window, PolicyError> {
        let t = text.trim();
        let (days, times) = t
            .rsplit_once(char::is_whitespace)
            .ok_or_else(|| PolicyError::Shape(text.to_string()))?;
        let (a, b) = times
            .split_once('-')
            .ok_or_else(|| PolicyError::Shape(text.to_string()))?;
        let days = parse_days(text, days.trim())?;
        Ok(Window {
            days,
            start: parse_time(text, a)?,
            end: parse_time(text, b)?,
        })
    }

    fn on(&self, weekday: u32) -> bool {
        self.days & (1 << (weekday % 7)) != 0
    }

    /// Whether the window is open at `t`.
    pub fn contains(&self, t: LocalTime) -> bool {
        if self.start < self.end {
            self.on(t.weekday) && (self.start..self.end).contains(&t.minute)
        } else if self.start == self.end && self.start == 0 {
            // "00:00-00:00": read as the whole day, like 00:00-24:00.
            self.on(t.weekday)
        } else {
            // Past midnight: the evening part on a listed day, the morning
            // part on the day after one.
            (self.on(t.weekday) && t.minute >= self.start)
                || (self.on((t.weekday + 6) % 7) && t.minute < self.end.min(MIN_PER_DAY))
        }
    }
}

/// A station's operating windows; empty means always open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Windows(pub Vec<Window>);

impl Windows {
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Windows, PolicyError> {
        texts
            .iter()
            .map(|t| Window::parse(t.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map(Windows)
    }

    pub fn always(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether guests may run at UNIX second `unix` in a zone
    /// `utc_offset_secs` east of UTC.
    pub fn open_at(&self, unix: i64, utc_offset_secs: i32) -> bool {
        if self.always() {
            return true;
        }
        let t = LocalTime::from_unix(unix, utc_offset_secs);
        self.0.iter().any(|w| w.contains(t))
    }
}

/// Allowed and denied job owners. A denied user is always refused; a
/// non-empty allow list refuses everybody else. Names compare exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserFilter {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl UserFilter {
    pub fn admits(&self, user: &str) -> bool {
        !self.deny.iter().any(|u| u == user)
            && (self.allow.is_empty() || self.allow.iter().any(|u| u == user))
    }
}

/// Why a station does not lend right now, in the order the rule checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotLending {
    /// The owner stopped lending (now, or until a time not yet reached).
    Stopped,
    /// The operating windows (the owner's weekly schedule) are closed.
    OutsideSchedule,
    /// The owner is at the machine (the detector says NA).
    OwnerActive,
}

/// The owner's controls over lending, as the gate applies them: the owner
/// may stop lending until a time (`Some(u)`: until UNIX second `u`) or
/// until they resume (`None` in `stopped_until` with `stopped` set), and
/// the schedule's windows may be closed. A station lends only when none of
/// this holds and the detector says AV (BOINC's "suspend until", "use at
/// most during these hours"; Neeracher 1998 L1281 for the windows).
pub fn lending(
    detector_available: bool,
    window_open: bool,
    stopped: bool,
    stopped_until: Option<u64>,
    now_unix: u64,
) -> Result<(), NotLending> {
    if stopped && stopped_until.is_none_or(|u| now_unix < u) {
        return Err(NotLending::Stopped);
    }
    if !window_open {
        return Err(NotLending::OutsideSchedule);
    }
    if !detector_available {
        return Err(NotLending::OwnerActive);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2025-11-17 00:00 UTC was a Monday.
    const MONDAY: i64 = 1_763_337_600;

    fn at(day: i64, h: i64, m: i64) -> i64 {
        MONDAY + day * 86_400 + h * 3600 + m * 60
    }

    #[test]
    fn weekday_of_known_dates() {
        assert_eq!(LocalTime::from_unix(0, 0).weekday, 3, "1970-01-01 Thursday");
        assert_eq!(LocalTime::from_unix(MONDAY, 0).weekday, 0);
        // One second before Monday is Sunday 23:59.
        assert_eq!(
            LocalTime::from_unix(MONDAY - 1, 0),
            LocalTime {
                weekday: 6,
                minute: 1439
            }
        );
        // UTC+1: Monday 00:00 UTC is Monday 01:00 local.
        assert_eq!(LocalTime::from_unix(MONDAY, 3600).minute, 60);
        // UTC-1: it is still Sunday 23:00.
        assert_eq!(LocalTime::from_unix(MONDAY, -3600).weekday, 6);
    }

    #[test]
    fn day_window_edges() {
        let w = Windows::parse(&["Mon-Fri 09:00-17:00"]).unwrap();
        assert!(!w.open_at(at(0, 8, 59), 0));
        assert!(w.open_at(at(0, 9, 0), 0), "start is inclusive");
        assert!(w.open_at(at(0, 16, 59), 0));
        assert!(!w.open_at(at(0, 17, 0), 0), "end is exclusive");
        assert!(w.open_at(at(4, 12, 0), 0), "Friday");
        assert!(!w.open_at(at(5, 12, 0), 0), "Saturday");
    }

    #[test]
    fn overnight_window_runs_into_the_next_day() {
        let w = Windows::parse(&["Mon-Fri 18:00-08:00"]).unwrap();
        assert!(!w.open_at(at(0, 17, 59), 0));
        assert!(w.open_at(at(0, 18, 0), 0));
        assert!(w.open_at(at(1, 7, 59), 0), "Tuesday morning");
        assert!(!w.open_at(at(1, 8, 0), 0));
        assert!(!w.open_at(at(0, 7, 0), 0), "Monday morning follows Sunday");
        assert!(
            w.open_at(at(5, 7, 59), 0),
            "Saturday morning follows Friday"
        );
        assert!(!w.open_at(at(5, 18, 0), 0), "Saturday evening");
        // The same instant in UTC+2 is two hours later locally.
        assert!(w.open_at(at(0, 16, 0), 7200));
        assert!(!w.open_at(at(0, 16, 0), 0));
    }

    #[test]
    fn whole_days_lists_and_wrapping_ranges() {
        let w = Windows::parse(&["Sat,Sun 00:00-24:00"]).unwrap();
        assert!(w.open_at(at(5, 0, 0), 0));
        assert!(w.open_at(at(6, 23, 59), 0));
        assert!(!w.open_at(at(7, 0, 0), 0), "next Monday");
        let w = Windows::parse(&["Fri-Mon 12:00-13:00"]).unwrap();
        assert!(w.open_at(at(0, 12, 30), 0));
        assert!(!w.open_at(at(2, 12, 30), 0));
        assert!(w.open_at(at(6, 12, 30), 0));
        let w = Windows::parse(&["* 00:00-00:00"]).unwrap();
        assert!(w.open_at(at(3, 5, 0), 0));
        assert!(Windows::default().open_at(at(3, 5, 0), 0));
        let two = Windows::parse(&["mon 01:00-02:00", "tuesday 03:00-04:00"]).unwrap();
        assert!(two.open_at(at(0, 1, 0), 0) && two.open_at(at(1, 3, 0), 0));
        assert!(!two.open_at(at(0, 3, 0), 0));
    }

    #[test]
    fn bad_windows_name_the_problem() {
        assert!(matches!(
            Window::parse("Mon-Fry 09:00-17:00"),
            Err(PolicyError::Day { .. })
        ));
        assert!(matches!(
            Window::parse("Mon 25:00-26:00"),
            Err(PolicyError::Time { .. })
        ));
        assert!(matches!(
            Window::parse("Mon 09:60-10:00"),
            Err(PolicyError::Time { .. })
        ));
        assert!(matches!(
            Window::parse("09:00-10:00"),
            Err(PolicyError::Shape(_))
        ));
        assert!(matches!(
            Window::parse("Mon 0900"),
            Err(PolicyError::Shape(_))
        ));
        assert!(
            Window::parse("m 09:00-10:00").is_err(),
            "too short a day name"
        );
    }

    proptest::proptest! {
        /// `contains` agrees with the definition: a window opens at
        /// `start` on each listed day and stays open for
        /// (end − start) mod 24 h (a whole day when that is 0).
        #[test]
        fn window_matches_its_definition(
            days in 1u8..128,
            start in 0u32..=1440,
            end in 0u32..=1440,
            weekday in 0u32..7,
            minute in 0u32..1440,
        ) {
            let w = Window { days, start, end };
            let dur = if end > start {
                end - start
            } else if start == end {
                MIN_PER_DAY
            } else {
                end + MIN_PER_DAY - start
            };
            let week = 7 * MIN_PER_DAY;
            let t = weekday * MIN_PER_DAY + minute;
            let expected = (0..7).filter(|d| days & (1 << d) != 0).any(|d| {
                let open = d * MIN_PER_DAY + start;
                (t + week - open % week) % week < dur
            });
            proptest::prop_assert_eq!(w.contains(LocalTime { weekday, minute }), expected);
        }
    }

    #[test]
    fn user_filter() {
        let f = UserFilter::default();
        assert!(f.admits("anyone"));
        let f = UserFilter {
            allow: vec!["alice".into(), "bob".into()],
            deny: vec!["bob".into()],
        };
        assert!(f.admits("alice"));
        assert!(!f.admits("bob"), "deny wins");
        assert!(!f.admits("carol"));
    }

    #[test]
    fn lending_needs_no_stop_an_open_window_and_an_absent_owner() {
        assert_eq!(lending(true, true, false, None, 10), Ok(()));
        assert_eq!(
            lending(true, true, true, None, 10),
            Err(NotLending::Stopped)
        );
        assert_eq!(
            lending(true, true, true, Some(11), 10),
            Err(NotLending::Stopped)
        );
        // A stop until a past time no longer holds.
        assert_eq!(lending(true, true, true, Some(10), 10), Ok(()));
        assert_eq!(
            lending(true, false, false, None, 10),
            Err(NotLending::OutsideSchedule)
        );
        assert_eq!(
            lending(false, true, false, None, 10),
            Err(NotLending::OwnerActive)
        );
        assert_eq!(
            lending(false, false, true, None, 10),
            Err(NotLending::Stopped)
        );
    }
}
