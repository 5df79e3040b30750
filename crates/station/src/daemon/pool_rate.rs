//! The pool-measured checkpoint transfer rate for Linger-Longer's `T_migr`
//! (issue #6, item 3).
//!
//! `T_migr = Suspend_Time(src) + Process_size / Network_Bandwidth +
//! Resume_Time(dst)` (Ryu & Hollingsworth, Eq. 5,
//! seeds/002_34f613b0a80e1e58.txt L87). Each station measures the bandwidth
//! term on its own checkpoint transfers ([`crate::checkpoint::RateMeter`]) and advertises it as
//! [`CHECKPOINT_TRANSFER_RATE_ATTR`]; the coordinator answers every ad with
//! the median of the current ads' rates, which this station keeps as the
//! fallback for the hosts' `T_migr` until it has measured its own.

use super::Station;
use gleaner_core::eviction::Estimates;
use gleaner_core::linger::MigrationCost;
use gleaner_proto::wire::{AdvertiseReply, CHECKPOINT_TRANSFER_RATE_ATTR, StationAd};

/// This station's own measured checkpoint transfer rate, bytes/s: its
/// starter's (checkpoints it shipped home or fetched, the transfers a
/// migration from here makes) when it has one, else its home side's
/// (checkpoints its jobs' hosts sent it).
pub(crate) fn own_rate(st: &Station) -> Option<f64> {
    st.starter
        .as_ref()
        .and_then(|s| s.rate.own())
        .or_else(|| st.ckpt.rate.own())
}

/// Puts the station's own rate into its ad, when it has one. An owner's
/// `[attrs]` entry of the same name wins (an administrator may pin it).
pub(crate) fn add_to_ad(st: &Station, ad: &mut StationAd) {
    if let Some(r) = own_rate(st) {
        ad.attrs
            .entry(CHECKPOINT_TRANSFER_RATE_ATTR.to_string())
            .or_insert_with(|| format!("{}", r.round() as u64));
    }
}

/// Keeps the pool's rate from an advertise reply for both meters.
pub(crate) fn apply_reply(st: &Station, reply: &AdvertiseReply) {
    let pool = reply.checkpoint_transfer_rate.map(|r| r as f64);
    st.ckpt.rate.set_pool(pool);
    if let Some(s) = &st.starter {
        s.rate.set_pool(pool);
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
