//! `reservations.json`: the reservation role's durable state (the market's
//! tables and money, the current slot's binding, the replacement counters),
//! written atomically like `fairness.json` after every change and before
//! a session's acknowledgement is sent, so an acknowledged reservation
//! survives a crash. Read at start; a file that fails the market's checks
//! (schema, parameters, every invariant) stops the coordinator with its
//! path and the reason rather than losing reservations or money silently.

use crate::CoordinatorError;
use crate::persist::write_atomic;
use crate::pool::partition::PartitionState;
use std::path::{Path, PathBuf};

const FILE: &str = "reservations.json";

pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// The saved state, or `None` before the first save.
pub fn load(dir: &Path) -> Result<Option<PartitionState>, CoordinatorError> {
    let path = path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CoordinatorError::Io { path, source }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CoordinatorError::State {
            path,
            why: e.to_string(),
        })
}

pub fn save(dir: &Path, state: &PartitionState) -> Result<(), CoordinatorError> {
    write_atomic(dir, FILE, state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::partition::{Partition, Seen};
    use crate::reserve_config::ReservationsConfig;
    use gleaner_core::reservation::session::{RequestEntry, RequestOp};
    use gleaner_core::reservation::{Class, Request};
    use gleaner_core::time::Time;

    #[test]
    fn round_trip_keeps_reservations_money_and_binding() {
        let d = tempfile::tempdir().unwrap();
        assert!(load(d.path()).unwrap().is_none());
        let cfg = ReservationsConfig {
            reservable_share: crate::reserve_config::ShareConfig::All(1.0),
            accounts: [("alice".to_string(), "a".to_string())].into(),
            ..Default::default()
        };
        let mut p = Partition::new(&cfg, 1, None).unwrap();
        let now = Time::from_secs(1_800_000_000);
        for n in ["a", "b", "c"] {
            p.observe(
                n,
                Seen {
                    hosting: true,
                    donated: false,
                },
                now,
            );
        }
        let slot = p.market().slot_of(now) + 1;
        let start = p.market().slot_start(slot);
        let stop = p.market().slot_start(slot + 1);
        let acks = p.sync(
            "alice",
            &[RequestEntry {
                row: 1,
                op: RequestOp::Add(Request {
                    user: "alice".into(),
                    start,
                    stop,
                    lower: 2,
                    upper: 2,
                    class: Class::Second,
                    specific: vec![],
                    preempt: false,
                }),
            }],
            now,
        );
        assert!(acks[0].accepted, "{acks:?}");
        p.advance(start);
        assert_eq!(p.bound().len(), 2);
        save(d.path(), &p.state()).unwrap();
        let back = Partition::new(&cfg, 1, load(d.path()).unwrap()).unwrap();
        assert_eq!(back.bound(), p.bound());
        assert_eq!(
            serde_json::to_value(back.market()).unwrap(),
            serde_json::to_value(p.market()).unwrap()
        );
        // Other parameters under the same file are refused, naming why.
        let other = ReservationsConfig {
            discount_rate: 0.25,
            ..cfg.clone()
        };
        let e = Partition::new(&other, 1, load(d.path()).unwrap())
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("other [reservations] parameters"),
            "{e}"
        );
        // A tampered file is refused.
        let text = std::fs::read_to_string(path(d.path())).unwrap();
        let tampered = text.replacen("\"p_d\": ", "\"p_d\": 9", 1);
        std::fs::write(path(d.path()), tampered).unwrap();
        let loaded = load(d.path());
        let refused = match loaded {
            Err(_) => true,
            Ok(s) => Partition::new(&cfg, 1, s).is_err(),
        };
        assert!(refused);
    }
}
