//! The checkpoint transfer rate for Linger-Longer's `T_migr` (issue #6,
//! item 3): measured here, advertised, and the pool's median (the
//! coordinator's `ckpt_rate`) as the fallback.
//!
//! `T_migr = Suspend_Time(src) + Process_size / Network_Bandwidth +
//! Resume_Time(dst)` (Ryu & Hollingsworth, Eq. 5,
//! seeds/002_34f613b0a80e1e58.txt L87). Each station measures the bandwidth
//! term on its own checkpoint transfers ([`crate::checkpoint::RateMeter`])
//! and advertises it as [`CHECKPOINT_TRANSFER_RATE_ATTR`]; the coordinator
//! answers every ad with the median of the current ads' rates, which the
//! host keeps as the fallback for its guests' `T_migr` until it has
//! measured its own.

use gleaner_core::eviction::Estimates;
use gleaner_core::linger::MigrationCost;
use gleaner_proto::wire::{CHECKPOINT_TRANSFER_RATE_ATTR, StationAd};

/// This station's own measured checkpoint transfer rate, bytes/s: the
/// host's (checkpoints its starter shipped home or fetched, the transfers a
/// migration from here makes) when it has one, else the home's
/// (checkpoints its jobs' hosts sent it).
pub fn own_rate(host: Option<f64>, home: Option<f64>) -> Option<f64> {
    host.or(home)
}

/// Puts the station's own rate into its ad, when it has one. An owner's
/// `[attrs]` entry of the same name wins (an administrator may pin it).
pub fn add_to_ad(rate: Option<f64>, ad: &mut StationAd) {
    if let Some(r) = rate {
        ad.attrs
            .entry(CHECKPOINT_TRANSFER_RATE_ATTR.to_string())
            .or_insert_with(|| format!("{}", r.round() as u64));
    }
}

/// The estimates a new guest's eviction ladder starts from: `base` with
/// `T_migr` from `rate` (the host's own, else the pool's; `None` keeps
/// `base`) and the size of the checkpoint the guest was restored from (else
/// the paper's 8 MB image, seeds/002_34f613b0a80e1e58.txt L189).
pub fn initial_estimates(
    rate: Option<f64>,
    image_bytes: Option<u64>,
    base: Estimates,
) -> Option<Estimates> {
    let rate = rate.filter(|r| r.is_finite() && *r > 0.0)?;
    let cost = MigrationCost {
        image_bytes: image_bytes.unwrap_or(MigrationCost::default().image_bytes),
        bandwidth_bytes_per_s: rate,
        ..MigrationCost::default()
    };
    Some(Estimates {
        t_migr: cost.t_migr(),
        ..base
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::RateMeter;
    use gleaner_core::time::Dur;

    #[test]
    fn initial_estimates_use_the_rate_and_the_restored_size() {
        let base = Estimates {
            h: 0.5,
            ..Estimates::default()
        };
        assert_eq!(initial_estimates(None, Some(1), base), None);
        assert_eq!(initial_estimates(Some(0.0), Some(1), base), None);
        let e = initial_estimates(Some(1e6), Some(3_000_000), base).unwrap();
        assert_eq!(e.t_migr, Dur::from_secs_f64(3.0));
        assert_eq!(e.h, 0.5);
        // No checkpoint yet: the paper's 8 MB image at the measured rate.
        let e = initial_estimates(Some(4e6), None, base).unwrap();
        assert_eq!(e.t_migr, Dur::from_secs_f64(2.0));
    }

    #[test]
    fn the_host_rate_is_advertised_before_the_home_rate() {
        assert_eq!(own_rate(Some(2.0), Some(1.0)), Some(2.0));
        assert_eq!(own_rate(None, Some(1.0)), Some(1.0));
        let mut ad: StationAd = serde_json::from_value(serde_json::json!({
            "name": "ws", "address": "", "state": "AV", "cpus": 1,
            "memory_mb": 1024, "disk_free_kb": 0, "arch": "X86_64",
            "opsys": "LINUX", "sent_at": 0
        }))
        .unwrap();
        add_to_ad(Some(1234.4), &mut ad);
        assert_eq!(ad.attrs[CHECKPOINT_TRANSFER_RATE_ATTR], "1234");
        // A value already there (the owner's `[attrs]`) wins.
        add_to_ad(Some(99.0), &mut ad);
        assert_eq!(ad.attrs[CHECKPOINT_TRANSFER_RATE_ATTR], "1234");
    }

    #[test]
    fn pool_rate_is_the_fallback_for_t_migr() {
        let m = RateMeter::default();
        m.set_pool(Some(8e6));
        let e = initial_estimates(m.get(), None, Estimates::default()).unwrap();
        assert_eq!(e.t_migr, Dur::from_secs_f64(1.0));
        m.record(4_000_000, std::time::Duration::from_secs(1));
        let e = initial_estimates(m.get(), None, Estimates::default()).unwrap();
        assert_eq!(e.t_migr, Dur::from_secs_f64(2.0));
    }
}
