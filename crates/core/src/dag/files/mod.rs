//! DAGMan's files besides the rescue DAG, as text: the node status file
//! ([`status`]), the jobstate log ([`jobstate`]), the metrics file
//! ([`metrics`]) and the dot file ([`dot`]). Each is a pure function of a
//! run and the time; the caller writes them where they belong.

pub mod dot;
pub mod jobstate;
pub mod metrics;
pub mod status;

use super::rescue::utc;

/// `ctime`-like text of a UNIX time (UTC): `Mon May  9 17:02:18 2014`.
pub fn ctime(secs: u64) -> String {
    let (y, mo, d, h, mi, s) = utc(secs);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let wd = DAYS[((secs / 86_400) % 7) as usize];
    let mon = MONTHS[(mo as usize).saturating_sub(1) % 12];
    format!("{wd} {mon} {d:2} {h:02}:{mi:02}:{s:02} {y}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ctime_format() {
        assert_eq!(super::ctime(1_399_674_138), "Fri May  9 22:22:18 2014");
    }
}
