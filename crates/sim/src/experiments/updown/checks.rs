//! The claims of Mutka 1988 §4.4.3 (seeds/000_14c1149197e96532.txt
//! L711–744) about Up-Down, Random and Round-Robin on the Table 4.4 pool,
//! as checks with the thesis's words and numbers. Shared by `updown` (the
//! bare allocator) and `pool` (the production coordinator).
//!
//! Readings (ours, stated in each check): "nearly constant" and "steady"
//! mean the largest value over the sweep is at most 1.2 times the
//! smallest; "a significant loss" and "suffers" mean the value at the
//! largest K is at most half (RCWR) or four fifths (medium RCWR) of that at
//! K = 2; "nearly zero" heavy waiting is under 5 % of the time; "nearly the
//! same" is within 10 %; the printed percentages 54/44/41 are met within
//! half a point plus twice the standard deviation over seeds; "as much as
//! 25–50 %" is a largest improvement between 22.5 and 52.5 % (the printed
//! numbers to the nearest 5).

use super::{POLICIES, RunSummary, SweepPoint, point};
use crate::experiments::Check;
use crate::experiments::profile::claims::mean_sd;
use crate::metrics::mean;
use crate::papers::T;
use gleaner_core::alloc::AllocatorKind;

fn check(name: String, source: &str, passed: bool, paper: &str, model: String, tol: &str) -> Check {
    Check {
        name: format!("{name} ({T} {source})"),
        passed,
        detail: format!("paper: {paper}; model: {model}; tolerance: {tol}"),
    }
}

/// The sweep's K values, sorted.
fn ks(pts: &[SweepPoint]) -> Vec<u32> {
    let mut v: Vec<u32> = pts.iter().map(|p| p.heavy_jobs).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// (smallest, largest) over K of `g` under policy `p`.
fn span(pts: &[SweepPoint], p: AllocatorKind, g: fn(&RunSummary) -> f64) -> (f64, f64) {
    ks(pts)
        .iter()
        .filter_map(|k| point(pts, p, *k).map(|x| g(&x.mean)))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        })
}

/// The claims of T:L711–744 on the sweep `pts`.
pub fn checks(pts: &[SweepPoint]) -> Vec<Check> {
    let mut out = Vec::new();
    let ks = ks(pts);
    let (Some(&k0), Some(&k1)) = (ks.first(), ks.last()) else {
        return out;
    };
    let at = |p, k, g: fn(&RunSummary) -> f64| point(pts, p, k).map_or(f64::NAN, |x| g(&x.mean));
    let steady = |p, g: fn(&RunSummary) -> f64| {
        let (lo, hi) = span(pts, p, g);
        (
            hi / lo,
            format!("{lo:.3} to {hi:.3} over K = {k0}…{k1} (×{:.2})", hi / lo),
        )
    };
    // Fig. 4.3: light RCWR.
    let (r, m) = steady(AllocatorKind::UpDown, |r| r.light_rcwr);
    out.push(check(
        "light RCWR nearly constant under Up-Down as the heavy load grows (Fig. 4.3)".into(),
        "L713",
        r <= 1.2,
        "\"LightStations in the Up-Down system maintain nearly constant quality of service\"",
        m,
        "largest ≤ 1.2 × smallest",
    ));
    for p in [AllocatorKind::Random, AllocatorKind::RoundRobin] {
        let (a, b) = (at(p, k0, |r| r.light_rcwr), at(p, k1, |r| r.light_rcwr));
        out.push(check(
            format!("light RCWR falls under {} (Fig. 4.3)", p.name()),
            "L713",
            b / a <= 0.5,
            "\"the Random and Round-Robin systems suffer a significant loss in remote cycle wait ratio\"",
            format!("K={k0} {a:.3} → K={k1} {b:.3} (×{:.2})", b / a),
            "at most half",
        ));
    }
    // Fig. 4.4: medium RCWR.
    let (r, m) = steady(AllocatorKind::UpDown, |r| r.medium_rcwr);
    out.push(check(
        "medium RCWR steady under Up-Down (Fig. 4.4)".into(),
        "L713",
        r <= 1.2,
        "\"the medium loaded users … maintain steady access to remote cycles\"",
        m,
        "largest ≤ 1.2 × smallest",
    ));
    for p in [AllocatorKind::Random, AllocatorKind::RoundRobin] {
        let (a, b) = (at(p, k0, |r| r.medium_rcwr), at(p, k1, |r| r.medium_rcwr));
        out.push(check(
            format!("medium RCWR suffers under {} (Fig. 4.4)", p.name()),
            "L713",
            b / a <= 0.8,
            "\"in the Random and Round-Robin systems, MediumStation suffers as HeavyStation increases its load\"",
            format!("K={k0} {a:.3} → K={k1} {b:.3} (×{:.2})", b / a),
            "at most four fifths",
        ));
    }
    // Heavy waiting.
    let worst = pts
        .iter()
        .map(|p| (p.mean.heavy_wait_frac, p.policy.name(), p.heavy_jobs))
        .fold((0.0f64, "", 0u32), |a, b| if b.0 > a.0 { b } else { a });
    out.push(check(
        "heavy station's wait nearly zero under every algorithm".into(),
        "L713",
        pts.iter().all(|p| p.mean.heavy_wait_frac < 0.05),
        "\"for all the algorithms, the wait time of HeavyStation is nearly zero\"",
        format!(
            "worst {:.2} % of the time ({} K={})",
            100.0 * worst.0,
            worst.1,
            worst.2
        ),
        "< 5 % of the time",
    ));
    // Fig. 4.5: light remote cycle percentage 54 / 44 / 41.
    let rcp_sd = |p, k| {
        point(pts, p, k).map_or((f64::NAN, f64::NAN), |x| {
            mean_sd(&x.runs.iter().map(|r| r.light_rcp).collect::<Vec<_>>())
        })
    };
    let mut ok = true;
    let mut worst_ud = (0.0f64, 0u32, 0.0f64);
    for &k in &ks {
        let (v, sd) = rcp_sd(AllocatorKind::UpDown, k);
        let tol = 0.5 + 2.0 * sd;
        ok &= (v - 54.0).abs() <= tol;
        if (v - 54.0).abs() >= worst_ud.0.abs() {
            worst_ud = (v - 54.0, k, tol);
        }
    }
    out.push(check(
        "light remote cycle percentage ≈ 54 % and steady under Up-Down (Fig. 4.5)".into(),
        "L715",
        ok,
        "\"the Up-Down algorithm provided remote capacity for 54% of the capacity submitted by the lightly loaded machines. This remote cycle percentage remains steady\"",
        format!(
            "{} at K = {}…{}; furthest from 54 at K={} ({:+.1})",
            ks.iter()
                .map(|k| format!("{:.1}", at(AllocatorKind::UpDown, *k, |r| r.light_rcp)))
                .collect::<Vec<_>>()
                .join("/"),
            k0,
            k1,
            worst_ud.1,
            worst_ud.0
        ),
        &format!("54 ± (0.5 + 2 sd), ≤ ±{:.1} at that K", worst_ud.2),
    ));
    for (p, target) in [
        (AllocatorKind::RoundRobin, 44.0),
        (AllocatorKind::Random, 41.0),
    ] {
        let (v, sd) = rcp_sd(p, k1);
        let tol = 0.5 + 2.0 * sd;
        out.push(check(
            format!(
                "light remote cycle percentage falls to ≈ {target} % under {} (Fig. 4.5)",
                p.name()
            ),
            "L715",
            (v - target).abs() <= tol,
            if p == AllocatorKind::RoundRobin {
                "\"the Round-Robin algorithm decreases from that level to about 44% of its cycles\""
            } else {
                "\"the Random algorithm's remote cycle percentage decreases to 41% of the cycles\""
            },
            format!("{v:.1} % at K={k1}"),
            &format!("± {tol:.1} (0.5 + 2 sd)"),
        ));
    }
    // Fig. 4.6: light remote response ratio.
    let (r, m) = steady(AllocatorKind::UpDown, |r| r.light_rrr);
    out.push(check(
        "light remote response ratio steady under Up-Down (Fig. 4.6)".into(),
        "L744",
        r <= 1.2,
        "\"the remote response ratio is steady as NumPermanent(HeavyStation) increases\"",
        m,
        "largest ≤ 1.2 × smallest",
    ));
    for p in [AllocatorKind::Random, AllocatorKind::RoundRobin] {
        let best = ks
            .iter()
            .map(|k| {
                100.0
                    * (1.0
                        - at(AllocatorKind::UpDown, *k, |r| r.light_rrr)
                            / at(p, *k, |r| r.light_rrr))
            })
            .fold(f64::NEG_INFINITY, f64::max);
        out.push(check(
            format!("Up-Down's light response ratio better than {}'s by as much as 25–50 % (Fig. 4.6)", p.name()),
            "L744",
            (22.5..=52.5).contains(&best),
            "\"an improvement in remote response ratio as much as 25-50% when compared to the Random and Round-Robin algorithms\"",
            format!("largest improvement {best:.1} %"),
            "22.5–52.5 %",
        ));
    }
    let mut spread = 0.0f64;
    for &k in &ks {
        let v: Vec<f64> = POLICIES
            .iter()
            .map(|&p| at(p, k, |r| r.heavy_rrr))
            .filter(|x| x.is_finite())
            .collect();
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(*x), b.max(*x))
            });
        spread = spread.max(hi / lo);
    }
    out.push(check(
        "heavy station's response ratio nearly the same under every algorithm (Fig. 4.6)".into(),
        "L744",
        spread <= 1.1,
        "\"the remote response ratios of the HeavyStation are nearly the same for all the algorithms\"",
        format!("largest spread across algorithms ×{spread:.3}"),
        "within 10 %",
    ));
    // Throughput.
    let mut worst_dev = (0.0f64, 0u32);
    for &k in &ks {
        let v: Vec<f64> = POLICIES
            .iter()
            .map(|&p| at(p, k, |r| r.jobs_completed))
            .filter(|x| x.is_finite())
            .collect();
        if let Some(m) = mean(v.iter().copied()) {
            for x in v {
                let d = (x / m - 1.0).abs();
                if d > worst_dev.0 {
                    worst_dev = (d, k);
                }
            }
        }
    }
    out.push(check(
        "overall throughput as good under Up-Down".into(),
        "L639",
        worst_dev.0 <= 0.03,
        "\"the overall throughput of the system will be as good when using the Up-Down algorithm\"",
        format!(
            "completed jobs differ at most {:.2} % from the mean (K={})",
            100.0 * worst_dev.0,
            worst_dev.1
        ),
        "within 3 %",
    ));
    out
}
