//! The pool's ads as `htcondor2.Collector` shows them: each station's
//! machine ad (`gleaner_proto::matchmaking::machine_ad`, what `glean
//! status -l` prints) from the coordinator's `GET /v1/ads`, a schedd ad
//! for each station that takes submissions, and the coordinator as the
//! pool's collector and negotiator.
//!
//! HTCondor's daemons map onto Gleaner's two: a station is both a schedd
//! (its home side) and a startd (its host side), and master of itself;
//! the coordinator is collector and negotiator. A schedd ad's `MyAddress`
//! is where `htcondor2.Schedd(ad)` connects: the station's URL, or the
//! user's own station's socket (`unix:/path`).

use gleaner_classad::{Ad, EvalContext, Expr, Value};
use gleaner_proto::wire::StationAd;

/// HTCondor's ad types (`htcondor2.AdType` numbers) that mean something
/// here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Startd,
    Schedd,
    Master,
    Collector,
    Negotiator,
    Any,
    /// Types this pool has no daemon for (license, credd, grid, …).
    None,
}

impl Kind {
    /// From `htcondor2.AdType` (a query's type).
    pub fn from_ad_type(n: i64) -> Kind {
        match n {
            0 | 5 | 24 | 25 => Kind::Startd,
            1 | 6 => Kind::Schedd,
            2 => Kind::Master,
            7 => Kind::Collector,
            13 => Kind::Negotiator,
            10 | 15 => Kind::Any,
            _ => Kind::None,
        }
    }

    /// From `htcondor2.DaemonType` (what `locate` looks for).
    pub fn from_daemon_type(n: i64) -> Kind {
        match n {
            1 => Kind::Any,
            2 => Kind::Master,
            3 => Kind::Schedd,
            4 => Kind::Startd,
            5 => Kind::Collector,
            6 => Kind::Negotiator,
            _ => Kind::None,
        }
    }
}

/// The version attributes every daemon ad carries.
fn versions(ad: &mut Ad) {
    ad.insert_str("CondorVersion", &crate::version::version_string());
    ad.insert_str("CondorPlatform", &crate::version::platform_string());
}

/// A station's schedd ad, reachable at `address`.
pub fn schedd_ad(name: &str, address: &str) -> Ad {
    let mut ad = Ad::new();
    ad.insert_str("MyType", "Scheduler");
    ad.insert_str("Name", name);
    ad.insert_str("Machine", name);
    ad.insert_str("MyAddress", address);
    ad.insert_str("ScheddIpAddr", address);
    versions(&mut ad);
    ad
}

/// A station's master ad.
pub fn master_ad(name: &str, address: &str) -> Ad {
    let mut ad = schedd_ad(name, address);
    ad.insert_str("MyType", "DaemonMaster");
    ad.remove("ScheddIpAddr");
    ad
}

/// The coordinator's ad as collector (or negotiator).
pub fn coordinator_ad(my_type: &str, url: &str) -> Ad {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', ':'])
        .next()
        .unwrap_or(url);
    let mut ad = Ad::new();
    ad.insert_str("MyType", my_type);
    ad.insert_str("Name", host);
    ad.insert_str("Machine", host);
    ad.insert_str("MyAddress", url);
    versions(&mut ad);
    ad
}

/// The ads of `kind` in a pool whose stations advertised `stations`.
pub fn pool_ads(kind: Kind, stations: &[StationAd], coordinator: Option<&str>) -> Vec<Ad> {
    let mut out = Vec::new();
    let wants = |k: Kind| kind == k || kind == Kind::Any;
    if wants(Kind::Startd) {
        for s in stations.iter().filter(|s| !s.submit_only) {
            let mut ad = gleaner_proto::matchmaking::machine_ad(s);
            ad.insert_str("MyAddress", &s.address);
            ad.insert_str("SlotType", "Static");
            versions(&mut ad);
            out.push(ad);
        }
    }
    if wants(Kind::Schedd) {
        for s in stations.iter().filter(|s| !s.execute_only) {
            out.push(schedd_ad(&s.name, &s.address));
        }
    }
    if wants(Kind::Master) {
        for s in stations {
            out.push(master_ad(&s.name, &s.address));
        }
    }
    if let Some(url) = coordinator {
        if wants(Kind::Collector) {
            out.push(coordinator_ad("Collector", url));
        }
        if wants(Kind::Negotiator) {
            out.push(coordinator_ad("Negotiator", url));
        }
    }
    out
}

/// `ads` that `constraint` selects, cut to `projection`.
pub fn select(ads: Vec<Ad>, constraint: Option<&Expr>, projection: &[String]) -> Vec<Ad> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    ads.into_iter()
        .filter(|ad| {
            constraint.is_none_or(|c| {
                let v = EvalContext::new(now)
                    .with_my(ad)
                    .with_target_fallback(false)
                    .eval(c);
                matches!(v, Value::Bool(true))
                    || matches!(v, Value::Int(i) if i != 0)
                    || matches!(v, Value::Real(r) if r != 0.0)
            })
        })
        .map(|ad| crate::schedd::project(ad, projection))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_classad::parse_expr;

    #[test]
    fn kinds_follow_htcondors_numbers() {
        assert_eq!(Kind::from_ad_type(0), Kind::Startd);
        assert_eq!(Kind::from_ad_type(1), Kind::Schedd);
        assert_eq!(Kind::from_ad_type(10), Kind::Any);
        assert_eq!(Kind::from_ad_type(16), Kind::None);
        assert_eq!(Kind::from_daemon_type(3), Kind::Schedd);
        assert_eq!(Kind::from_daemon_type(5), Kind::Collector);
    }

    #[test]
    fn coordinator_and_schedd_ads() {
        let c = coordinator_ad("Collector", "https://central.example:9618");
        assert_eq!(
            c.get("Name").map(gleaner_classad::unparse_expr).unwrap(),
            "\"central.example\""
        );
        let ads = pool_ads(Kind::Any, &[], Some("http://127.0.0.1:9618"));
        assert_eq!(ads.len(), 2);
        let s = schedd_ad("ws1", "unix:/run/gleaner/ws1.sock");
        let picked = select(
            vec![s, c],
            Some(&parse_expr("MyType == \"Scheduler\"").unwrap()),
            &["Name".into(), "MyAddress".into()],
        );
        assert_eq!(picked.len(), 1);
        assert_eq!(
            picked[0].to_old_syntax(),
            "Name = \"ws1\"\nMyAddress = \"unix:/run/gleaner/ws1.sock\"\n"
        );
    }
}
