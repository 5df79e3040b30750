//! The claims of Ryu & Hollingsworth §7.1 (seeds/002_34f613b0a80e1e58.txt
//! L264–290) about lingering parallel jobs, measured at one setting of the
//! owner model: Fig. 11a (one nonidle node), Fig. 11b (several), Fig. 12
//! (synchronisation granularity) and Fig. 13 (LL-k against
//! reconfiguration on 32 nodes).

use super::model::{Owner, completion, slowdown};
use crate::papers::LL;
use gleaner_core::gang::GangPolicy;
use gleaner_core::rng::substream;

/// Nodes of the Fig. 13 cluster.
pub const NODES: u32 = 32;
/// Computation between synchronisations with 32 processes (L286).
pub const GRANULE_32: f64 = 0.5;
/// Fig. 11's eight-process program synchronises every 100 ms (L264).
pub const GRANULE_8: f64 = 0.1;
/// Fig. 12's granularities (s); the paper's axis is lost except 10 ms
/// (L284), which our model (no communication time) cannot show.
pub const GRANULES: [f64; 5] = [0.05, 0.1, 0.2, 0.5, 1.0];
/// Fig. 13's utilisations (L290).
pub const UTILS: [f64; 2] = [0.2, 0.4];
/// Fig. 11a's utilisations.
pub const U11A: [f64; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
/// Fig. 11b's utilisations (the paper's four levels are not given).
pub const U11B: [f64; 4] = [0.1, 0.2, 0.3, 0.4];
/// Fig. 12's nonidle counts (L284).
pub const K12: [usize; 4] = [1, 2, 4, 8];

/// The policies of Fig. 13.
pub fn policies() -> [(&'static str, GangPolicy); 4] {
    [
        ("LL-8", GangPolicy::linger(8)),
        ("LL-16", GangPolicy::linger(16)),
        ("LL-32", GangPolicy::linger(32)),
        ("reconfigure", GangPolicy::reconfigure(NODES)),
    ]
}

/// Everything measured at one owner setting (means over seeds).
#[derive(Clone, Debug)]
pub struct Point {
    pub owner: Owner,
    /// Fig. 13: completion `[u][policy][idle]`, NaN where the policy cannot
    /// start.
    pub fig13: Vec<Vec<Vec<f64>>>,
    /// Fig. 11a: slowdown with one nonidle node, per `U11A`.
    pub fig11a: Vec<f64>,
    /// Fig. 11b: slowdown `[U11B][nonidle − 1]`, 1..=8 nonidle.
    pub fig11b: Vec<Vec<f64>>,
    /// Fig. 12: slowdown `[UTILS][K12][GRANULES]`.
    pub fig12: Vec<Vec<Vec<f64>>>,
}

/// Measures `owner` with `seeds` seeds from `seed` and `steps` supersteps;
/// `local` scales every nonidle owner's utilisation (0: owners never run).
pub fn measure(owner: Owner, seed: u64, seeds: u32, steps: u32, local: f64) -> (Point, u64) {
    let mut events = 0u64;
    let avg = |f: &mut dyn FnMut(u64) -> Option<f64>, events: &mut u64| -> f64 {
        let (mut sum, mut ok) = (0.0, true);
        for s in 0..seeds {
            match f(seed + u64::from(s)) {
                Some(t) => sum += t,
                None => ok = false,
            }
            *events += u64::from(steps);
        }
        if ok { sum / f64::from(seeds) } else { f64::NAN }
    };
    let pols = policies();
    let mut fig13 = vec![vec![vec![f64::NAN; NODES as usize + 1]; pols.len()]; UTILS.len()];
    for (ui, u) in UTILS.iter().enumerate() {
        for (pi, (_, pol)) in pols.iter().enumerate() {
            for idle in 0..=NODES {
                let stream = (ui as u64) << 16 | (pi as u64) << 8 | u64::from(idle);
                fig13[ui][pi][idle as usize] = avg(
                    &mut |s| {
                        let mut rng = substream(s, stream);
                        completion(
                            owner,
                            *pol,
                            NODES,
                            GRANULE_32,
                            idle,
                            u * local,
                            steps,
                            &mut rng,
                        )
                    },
                    &mut events,
                );
            }
        }
    }
    let sd = |u: f64, k: usize, g: f64, stream: u64, events: &mut u64| {
        avg(
            &mut |s| {
                let mut rng = substream(s, stream);
                Some(slowdown(owner, g, k, u * local, steps, &mut rng))
            },
            events,
        )
    };
    let fig11a = U11A
        .iter()
        .enumerate()
        .map(|(i, u)| sd(*u, 1, GRANULE_8, 1 << 40 | i as u64, &mut events))
        .collect();
    let fig11b = U11B
        .iter()
        .enumerate()
        .map(|(i, u)| {
            (1..=8)
                .map(|k| {
                    sd(
                        *u,
                        k,
                        GRANULE_8,
                        2 << 40 | (i as u64) << 8 | k as u64,
                        &mut events,
                    )
                })
                .collect()
        })
        .collect();
    let fig12 = UTILS
        .iter()
        .enumerate()
        .map(|(ui, u)| {
            K12.iter()
                .enumerate()
                .map(|(ki, k)| {
                    GRANULES
                        .iter()
                        .enumerate()
                        .map(|(gi, g)| {
                            let stream = 3 << 40 | (ui as u64) << 16 | (ki as u64) << 8 | gi as u64;
                            sd(*u, *k, *g, stream, &mut events)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    (
        Point {
            owner,
            fig13,
            fig11a,
            fig11b,
            fig12,
        },
        events,
    )
}

/// One claim: what, where, the paper's words, the tolerance, and its test.
pub struct Claim {
    pub what: &'static str,
    pub source: String,
    pub paper: &'static str,
    pub tolerance: &'static str,
    /// Whether it holds at a point, and the measured value in words.
    pub test: fn(&Point) -> (bool, String),
}

fn max(v: impl IntoIterator<Item = f64>) -> f64 {
    v.into_iter().fold(f64::NEG_INFINITY, f64::max)
}

/// Idle counts at which LL-k (policy `pi`) beats reconfiguration at `ui`.
fn wins(p: &Point, ui: usize, pi: usize, xs: std::ops::Range<u32>) -> (usize, usize) {
    let n = xs.len();
    let w = xs
        .filter(|x| p.fig13[ui][pi][*x as usize] < p.fig13[ui][3][*x as usize])
        .count();
    (w, n)
}

/// The claims of §7.1, in the paper's order.
pub fn claims() -> Vec<Claim> {
    vec![
        Claim {
            what: "Fig. 11a: one nonidle node below 40 % local use slows the job by 1.5 at most",
            source: format!("{LL} L266, L270"),
            paper: "\"our slowdown of only 1.1 to 1.5 when the load is less than 40 percent\"",
            tolerance: "≤ 1.55 at 10–30 % (printed to 0.1)",
            test: |p| {
                let m = max(p.fig11a[..3].iter().copied());
                (m <= 1.55, format!("largest {m:.2}"))
            },
        },
        Claim {
            what: "Fig. 11a: above 50 % local use lingering slows the job dramatically",
            source: format!("{LL} L266"),
            paper: "\"at utilization above 50 percent, the slowdown is so large that lingering slows down the jobs dramatically\"",
            tolerance: "≥ 2 at 60 % (\"dramatically\": worse than halving the nodes, ours)",
            test: |p| (p.fig11a[5] >= 2.0, format!("{:.2} at 60 %", p.fig11a[5])),
        },
        Claim {
            what: "Fig. 11b: up to 20 % local use, the slowdown stays within two with any number of nonidle nodes",
            source: format!("{LL} L272"),
            paper: "\"at local utilization of up to 20 percent, the largest slowdown was a factor of two even when all eight processes are lingering\"",
            tolerance: "≤ 2.05 at 10 and 20 %, 1–8 nonidle (printed to 0.1)",
            test: |p| {
                let m = max(p.fig11b[..2].iter().flatten().copied());
                (m <= 2.05, format!("largest {m:.2}"))
            },
        },
        Claim {
            what: "Fig. 11b: above 30 % with more than two nonidle nodes the slowdown is significant",
            source: format!("{LL} L272"),
            paper: "\"when local utilization was above 30 percent, and the number of nonidle nodes is more than one or two, the slowdown to the parallel application is significant\"",
            tolerance: "≥ 1.5 at 40 % with 3 nonidle (\"significant\", ours)",
            test: |p| (p.fig11b[3][2] >= 1.5, format!("{:.2}", p.fig11b[3][2])),
        },
        Claim {
            what: "Fig. 12a: at 20 % local use, four nonidle nodes slow the job by less than 1.5",
            source: format!("{LL} L284"),
            paper: "\"even when four nodes are nonidle, the slowdown remains under a factor 1.5\"",
            tolerance: "< 1.55 at every granularity 50 ms–1 s (printed to 0.1)",
            test: |p| {
                let m = max(p.fig12[0][2].iter().copied());
                (m < 1.55, format!("largest {m:.2}"))
            },
        },
        Claim {
            what: "Fig. 12: larger synchronisation granularity, less slowdown",
            source: format!("{LL} L284"),
            paper: "\"larger synchronization granularity produces less slowdown\"",
            tolerance: "non-increasing from 50 ms to 1 s within 0.02, every curve of both panels",
            test: |p| {
                let bad = p
                    .fig12
                    .iter()
                    .flatten()
                    .filter(|c| c.windows(2).any(|w| w[1] > w[0] + 0.02))
                    .count();
                (bad == 0, format!("{bad} of 8 curves rise"))
            },
        },
        Claim {
            what: "Fig. 13a: at 20 %, LL-8 and LL-16 beat reconfiguration",
            source: format!("{LL} L290"),
            paper: "\"the Linger-Longer policy outperforms the reconfiguration when either 8 or 16 nodes are used\"",
            tolerance: "faster at every idle count where they linger (1–7, 1–15)",
            test: |p| {
                let (a, na) = wins(p, 0, 0, 1..8);
                let (b, nb) = wins(p, 0, 1, 1..16);
                (a == na && b == nb, format!("LL-8 {a}/{na}, LL-16 {b}/{nb}"))
            },
        },
        Claim {
            what: "Fig. 13b: at 40 %, reconfiguration generally faster (than LL-32)",
            source: format!("{LL} L290"),
            paper: "\"for 40 percent utilization, the reconfiguration strategy generally provides faster completion\"",
            tolerance: "faster at more than half of the idle counts 1–31",
            test: |p| {
                let (w, n) = wins(p, 1, 2, 1..32);
                let rc = n - w;
                (2 * rc > n, format!("reconfiguration faster at {rc}/{n}"))
            },
        },
        Claim {
            what: "Fig. 13a: at 20 %, LL-32 beats reconfiguration with five or fewer nonidle nodes",
            source: format!("{LL} L290"),
            paper: "\"using 32 nodes and a Linger-Longer policy outperforms reconfiguration when five or fewer nonidle nodes are used for 20 percent\"",
            tolerance: "faster at every idle count 27–31",
            test: |p| {
                let (w, n) = wins(p, 0, 2, 27..32);
                (w == n, format!("{w}/{n}"))
            },
        },
    ]
}
