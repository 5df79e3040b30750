//! Linger-Longer's migration arithmetic (Ryu & Hollingsworth,
//! seeds/002_34f613b0a80e1e58.txt L63–L89; spec `linger-longer.md` §1.4, §3,
//! §7.1 R1–R4).
//!
//! Notation of the paper (L67, L79):
//! - `h`: average local (owner) CPU utilisation of the non-idle node, `0..=1`;
//! - `l`: average local utilisation of an idle node (the destination), `0..=1`;
//! - `T_migr`: time from stopping at the source to running at the destination;
//! - `T_lingr`: how long the guest lingers before migrating;
//! - `T_nidle`: length of the non-idle episode.
//!
//! Every function is total: NaN or out-of-range utilisations never panic.
//! Finite utilisations are clamped to `0..=1`; a NaN utilisation means "no
//! estimate", and the functions answer "never migrate" (the guest keeps
//! lingering at strict low priority, which never hurts the owner).

use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// Clamps a utilisation to `0..=1`; NaN stays NaN.
fn unit(x: f64) -> f64 {
    if x.is_nan() { x } else { x.clamp(0.0, 1.0) }
}

/// The factor `k = (1-l)/(h-l)` of Eq. 3 and 4 (L77, L83), or `None` when
/// migration can never pay off (`h ≤ l`, or an input is NaN).
pub fn linger_factor(h: f64, l: f64) -> Option<f64> {
    let (h, l) = (unit(h), unit(l));
    if h.is_nan() || l.is_nan() || h <= l {
        // Spec linger-longer.md §1.4 [derived]: with h ≤ l the destination
        // is no better than staying, so the linger time is infinite.
        return None;
    }
    Some((1.0 - l) / (h - l))
}

/// Eq. 4 (seeds/002_34f613b0a80e1e58.txt L83): `T_lingr = (1-l)/(h-l) · T_migr`.
///
/// Returns [`Dur::MAX`] ("never migrate") when `h ≤ l` or an input is NaN;
/// saturates at [`Dur::MAX`] when the product overflows. Rounded to the
/// microsecond.
pub fn linger_time(h: f64, l: f64, t_migr: Dur) -> Dur {
    match linger_factor(h, l) {
        Some(k) if t_migr != Dur::MAX => Dur::from_secs_f64(k * t_migr.as_secs_f64()),
        _ => Dur::MAX,
    }
}

/// Eq. 3 (L77): migration after lingering `t_lingr` pays off (the guest
/// finishes no later than by staying, `t_f2 ≤ t_f1`) iff
/// `T_nidle ≥ T_lingr + (1-l)/(h-l) · T_migr`. Never true when `h ≤ l`.
pub fn migration_pays_off(t_nidle: Dur, t_lingr: Dur, t_migr: Dur, h: f64, l: f64) -> bool {
    match linger_factor(h, l) {
        Some(k) => t_nidle.as_secs_f64() >= t_lingr.as_secs_f64() + k * t_migr.as_secs_f64(),
        None => false,
    }
}

/// Eq. 2 (L73): `t_f2 − t_f1 = (t4 − t2)(1−h)/(1−l) − (t4 − t3)`, in seconds,
/// written with `t4 − t2 = T_nidle − T_lingr` and `t4 − t3 = T_nidle −
/// T_lingr − T_migr`. Negative means migrating finishes the guest earlier.
///
/// For analysis tools. Unlike [`migration_pays_off`] it does not assume
/// `h > l`. Returns `+∞` when `l ≥ 1` (an idle node that gives no cycles)
/// and NaN when `h` or `l` is NaN.
pub fn completion_delta(t_nidle: Dur, t_lingr: Dur, t_migr: Dur, h: f64, l: f64) -> f64 {
    let (h, l) = (unit(h), unit(l));
    if h.is_nan() || l.is_nan() {
        return f64::NAN;
    }
    if l >= 1.0 {
        return f64::INFINITY;
    }
    let after_linger = t_nidle.as_secs_f64() - t_lingr.as_secs_f64(); // t4 - t2
    let after_arrival = after_linger - t_migr.as_secs_f64(); // t4 - t3
    after_linger * (1.0 - h) / (1.0 - l) - after_arrival
}

/// The episode predictor (L81, after Harchol-Balter & Downey and Leland &
/// Ott): an episode that has lasted `age` is predicted to last `2 · age` in
/// total, i.e. the median remaining life equals the current age.
pub fn predicted_episode_total(age: Dur) -> Dur {
    age + age
}

/// Median remaining life of an episode of age `age` (L81): `age` itself.
pub fn predicted_episode_remaining(age: Dur) -> Dur {
    age
}

/// Linger-Longer's rule (spec R4): migrate at the first instant when the
/// episode age reaches `T_lingr`. With the predictor `T_nidle = 2·age`, this
/// is exactly when Eq. 3 starts to hold (L81–L83). Never true when `h ≤ l`.
/// Whether a free idle destination exists is the caller's business.
pub fn linger_expired(age: Dur, h: f64, l: f64, t_migr: Dur) -> bool {
    let t = linger_time(h, l, t_migr);
    t != Dur::MAX && age >= t
}

/// Near-finished guard — an extension, **not in the paper** (spec
/// linger-longer.md §1.4 (derived)). With `w_rem` of CPU work left, and the
/// episode assumed to outlast the job, migrating beats staying iff
/// `w_rem/(1-h) > T_migr + w_rem/(1-l)`, i.e.
/// `w_rem > T_migr · (1-h)(1-l)/(h-l)`. Returns `false` (stay) when `h ≤ l`
/// or an input is NaN.
pub fn migration_beats_staying(w_rem: Dur, t_migr: Dur, h: f64, l: f64) -> bool {
    let (h, l) = (unit(h), unit(l));
    if h.is_nan() || l.is_nan() || h <= l {
        return false;
    }
    let threshold = t_migr.as_secs_f64() * (1.0 - h) * (1.0 - l) / (h - l);
    w_rem.as_secs_f64() > threshold
}

/// Eq. 5 (L87): `T_migr = Suspend_Time(src) + Process_size/Network_Bandwidth
/// + Resume_Time(dst)`.
///
/// Units: `image_bytes` in bytes and `bandwidth_bytes_per_s` in bytes per
/// second, both decimal. The paper's 8 MB image at an effective 3 Mbit/s
/// (L189, L208) is `8_000_000` bytes at `375_000` B/s: a 21.33 s transfer
/// (22.37 s if "MB" meant MiB). Suspend and resume times are not given in
/// the paper and default to zero.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MigrationCost {
    /// Fixed cost of stopping the guest at the source.
    pub suspend: Dur,
    /// Size of the process image (or checkpoint) moved, in bytes.
    pub image_bytes: u64,
    /// Effective transfer rate, in bytes per second (decimal).
    pub bandwidth_bytes_per_s: f64,
    /// Fixed cost of restarting the guest at the destination.
    pub resume: Dur,
}

impl Default for MigrationCost {
    /// The paper's cluster set-up: 8 MB at an effective 3 Mbit/s (L189, L208).
    fn default() -> Self {
        MigrationCost {
            suspend: Dur::ZERO,
            image_bytes: 8_000_000,
            bandwidth_bytes_per_s: MigrationCost::mbit_per_s(3.0),
            resume: Dur::ZERO,
        }
    }
}

impl MigrationCost {
    /// Converts a rate in Mbit/s (decimal, 10^6 bit/s) to bytes per second.
    pub fn mbit_per_s(mbit: f64) -> f64 {
        mbit * 1e6 / 8.0
    }

    /// Transfer term `size / bandwidth`. A zero-byte image costs nothing; a
    /// non-positive or NaN bandwidth makes any other transfer infinite.
    pub fn transfer(&self) -> Dur {
        if self.image_bytes == 0 {
            return Dur::ZERO;
        }
        let bw = self.bandwidth_bytes_per_s;
        if bw.is_nan() || bw <= 0.0 {
            return Dur::MAX;
        }
        Dur::from_secs_f64(self.image_bytes as f64 / bw)
    }

    /// Eq. 5: suspend + transfer + resume (saturating).
    pub fn t_migr(&self) -> Dur {
        self.suspend + self.transfer() + self.resume
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factor_table_of_the_spec() {
        // spec linger-longer.md §1.4 example table, l = 0.
        for (h, k) in [(0.1, 10.0), (0.2, 5.0), (0.5, 2.0), (0.9, 1.0 / 0.9)] {
            let got = linger_factor(h, 0.0).unwrap();
            assert!((got - k).abs() < 1e-9, "h={h}: {got} vs {k}");
        }
    }

    #[test]
    fn garbage_inputs_do_not_panic() {
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 2.0] {
            let _ = linger_time(x, 0.0, Dur::from_secs(1));
            let _ = linger_time(0.5, x, Dur::MAX);
            let _ = completion_delta(Dur::MAX, Dur::ZERO, Dur::MAX, x, x);
            let _ = migration_pays_off(Dur::MAX, Dur::MAX, Dur::MAX, x, 0.0);
            let _ = migration_beats_staying(Dur::MAX, Dur::MAX, x, 0.0);
        }
        assert_eq!(linger_time(f64::NAN, 0.0, Dur::from_secs(1)), Dur::MAX);
        // Out-of-range values are clamped: h = 2 acts as h = 1.
        assert_eq!(linger_time(2.0, 0.0, Dur::from_secs(7)), Dur::from_secs(7));
    }

    #[test]
    fn episode_predictor_doubles_the_age() {
        assert_eq!(
            predicted_episode_total(Dur::from_secs(40)),
            Dur::from_secs(80)
        );
        assert_eq!(
            predicted_episode_remaining(Dur::from_secs(40)),
            Dur::from_secs(40)
        );
        assert_eq!(predicted_episode_total(Dur::MAX), Dur::MAX);
    }
}
