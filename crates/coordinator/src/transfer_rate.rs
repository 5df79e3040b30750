//! The pool's checkpoint transfer rate (issue #6, item 3).
//!
//! Linger-Longer's migrate decision needs `T_migr = Suspend_Time +
//! Process_size / Network_Bandwidth + Resume_Time` (Ryu & Hollingsworth,
//! Eq. 5, seeds/002_34f613b0a80e1e58.txt L87). A host measures the bandwidth
//! term from its own checkpoint transfers, but a host that has not moved a
//! checkpoint yet has no measurement. Each station therefore advertises its
//! own rate as [`CHECKPOINT_TRANSFER_RATE_ATTR`], and the coordinator hands
//! the median of the current ads back in every [`AdvertiseReply`]: the
//! measured rate of this pool, robust to one station on a slow link or one
//! lucky loopback transfer.
//!
//! [`AdvertiseReply`]: gleaner_proto::wire::AdvertiseReply

use gleaner_proto::wire::{CHECKPOINT_TRANSFER_RATE_ATTR, StationAd};

/// The rate an ad advertises, bytes/s: a positive finite number, else none
/// (a missing, unparsable or nonsensical value is ignored, never an error:
/// one bad station must not spoil the pool's figure).
pub(crate) fn advertised_rate(ad: &StationAd) -> Option<f64> {
    let text = ad.attrs.get(CHECKPOINT_TRANSFER_RATE_ATTR)?;
    let v: f64 = text.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// Median of `values` (the mean of the two middle ones for an even count);
/// `None` when empty. Reorders `values`.
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let (_, &mut hi, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        return Some(hi);
    }
    // The lower middle is the largest of the lower half.
    let lo = values[..n / 2]
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .unwrap_or(hi);
    Some(lo + (hi - lo) / 2.0)
}

/// The pool's rate from the ads the coordinator holds, rounded to whole
/// bytes/s as the reply carries it.
pub(crate) fn pool_rate<'a>(ads: impl Iterator<Item = &'a StationAd>) -> Option<u64> {
    let mut rates: Vec<f64> = ads.filter_map(advertised_rate).collect();
    // `as` saturates; the rates are positive and finite.
    median(&mut rates).map(|m| m.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(rate: Option<&str>) -> StationAd {
        let mut ad = crate::matchmaker::tests::host("s", 1, 1024, 1.0);
        if let Some(r) = rate {
            ad.attrs
                .insert(CHECKPOINT_TRANSFER_RATE_ATTR.to_string(), r.to_string());
        }
        ad
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [5.0]), Some(5.0));
        assert_eq!(median(&mut [9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut [1e9, 1e9]), Some(1e9));
    }

    #[test]
    fn pool_rate_ignores_stations_without_a_sane_rate() {
        let ads = [
            ad(Some("1000")),
            ad(None),
            ad(Some("3000")),
            ad(Some("fast")),
            ad(Some("-5")),
            ad(Some("0")),
            ad(Some("inf")),
        ];
        assert_eq!(pool_rate(ads.iter()), Some(2000));
        assert_eq!(pool_rate([ad(None), ad(Some("x"))].iter()), None);
        assert_eq!(pool_rate(std::iter::empty()), None);
        // One station on a slow link does not drag the pool's figure down.
        let ads = [ad(Some("1")), ad(Some("50000000")), ad(Some("60000000"))];
        assert_eq!(pool_rate(ads.iter()), Some(50_000_000));
    }

    #[test]
    fn median_splits_random_values() {
        // Deterministic pseudo-random lists of 1..40 values (xorshift).
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..500 {
            let n = (next() % 40 + 1) as usize;
            // Few distinct values, so ties are common.
            let mut v: Vec<f64> = (0..n).map(|_| (next() % 16) as f64 * 1e6).collect();
            let m = median(&mut v.clone()).unwrap();
            v.sort_by(f64::total_cmp);
            let below = v.iter().filter(|x| **x < m).count();
            let above = v.iter().filter(|x| **x > m).count();
            assert!(below <= n / 2 && above <= n / 2, "{v:?} -> {m}");
            let expect = if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            };
            assert_eq!(m, expect, "{v:?}");
        }
    }
}
