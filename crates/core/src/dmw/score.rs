//! DMW scores: the printed UMol score and the proposed heterogeneous index.
//!
//! Neeracher 1998, seeds/001_c7470f9b5ea54797.txt §4.4.2 (L1192–1202) and
//! §4.5.3 (L1305–1331).

use serde::{Deserialize, Serialize};

/// Memory component of the UMol score, exactly as printed.
///
/// Neeracher 1998 (seeds/001_c7470f9b5ea54797.txt L1192–1196): σ_μ = 120 if
/// μ > 200000, μ/50 if μ < 5000, 100 + μ/10000 otherwise, μ in KB. Note the
/// jump from 99.98 to 100.5 at μ = 5000. Negative and NaN inputs count as no
/// free memory.
pub fn sigma_mu(mu_kb: f64) -> f64 {
    let mu = if mu_kb.is_nan() { 0.0 } else { mu_kb.max(0.0) };
    if mu > 200_000.0 {
        120.0
    } else if mu < 5_000.0 {
        mu / 50.0
    } else {
        100.0 + mu / 10_000.0
    }
}

/// Load component of the UMol score, exactly as printed, on the weighted
/// load λ_w = λ/w_h.
///
/// Neeracher 1998 (L1192–1198): σ_λ = 0 if λ_w > 4.9, 121 − 35·λ_w if
/// λ_w < 0.6, 112 − 20·λ_w otherwise. The two printed quirks are kept on
/// purpose: σ_λ(0) = 121 exceeds the stated 0…120 scale (L1200), and σ_λ
/// drops from 14 to 0 just above 4.9. Negative loads count as zero; NaN counts
/// as hopelessly overloaded.
pub fn sigma_lambda_umol(lambda_w: f64) -> f64 {
    if lambda_w.is_nan() {
        return 0.0;
    }
    let l = lambda_w.max(0.0);
    if l > 4.9 {
        0.0
    } else if l < 0.6 {
        121.0 - 35.0 * l
    } else {
        112.0 - 20.0 * l
    }
}

/// The printed UMol score σ = σ_μ(μ) + σ_λ(λ_w) (L1194), range 0…241.
pub fn sigma_umol(mu_kb: f64, lambda_w: f64) -> f64 {
    sigma_mu(mu_kb) + sigma_lambda_umol(lambda_w)
}

/// The proposed heterogeneous performance index σ_λ = β·n/max(n, λ+1): the
/// share of a CPU of speed β that a new CPU-bound job would get.
///
/// Neeracher 1998 (L1311–1319): CPU time is shared equally, the new job adds
/// 1 to λ, and one job cannot use more than one processor, so the index is
/// flat (= β) until λ+1 reaches n. `cpus = 0` is treated as 1; negative loads
/// as 0; a non-finite or non-positive β or a NaN load gives 0.
pub fn sigma_lambda_hetero(beta: f64, cpus: u32, lambda: f64) -> f64 {
    if !beta.is_finite() || beta <= 0.0 || lambda.is_nan() {
        return 0.0;
    }
    let n = f64::from(cpus.max(1));
    let l = lambda.max(0.0);
    beta * n / n.max(l + 1.0)
}

/// Which load index ranks and filters hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadIndex {
    /// DMW's UMol as implemented: σ = σ_μ(μ) + σ_λ(λ/w_h), threshold
    /// λ_w < `lambda_thresh` (L1192–1202).
    Umol,
    /// The proposed index (L1319) combined with memory: see [`Score`].
    #[default]
    Heterogeneous,
}

/// Score configuration: which index to use and the placement thresholds.
///
/// **Combination in [`LoadIndex::Heterogeneous`].** The proposed index only
/// covers CPU; memory still matters (L1043). We use
/// σ = σ_λ^het · σ_μ(μ)/120, i.e. σ_μ normalised to 0…1 scales the expected
/// CPU share. Above 200 MB free the factor is 1, at 100 MB ≈ 0.92, at
/// 5000 KB ≈ 0.84, and it falls linearly to 0 below 5000 KB, so memory
/// mostly breaks near-ties in speed while a host with no free memory scores
/// 0. The unit of σ stays "reference-workload executions per time unit".
/// The hard memory gate is the μ threshold, not the score.
///
/// **Thresholds.** A host is *acceptable* for normal apportioning when
/// μ > `mu_thresh_kb` and, for `Umol`, λ_w < `lambda_thresh`, or, for
/// `Heterogeneous`, σ_λ^het ≥ `sigma_thresh`. Following L1321, the default
/// `sigma_thresh` = 1.0 is the index of an unloaded reference host
/// (β = 1, one CPU, λ = 0): any host that would give a new job at least the
/// speed of an idle 60 MHz SuperSPARC is acceptable. Because this lets fast
/// hosts accept several jobs (L1325), it must be combined with job limits
/// (L1327), which the [`Umpire`] always enforces.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Score {
    pub index: LoadIndex,
    /// Upper bound (exclusive) on λ_w for [`LoadIndex::Umol`]; 0.6 in
    /// UMol (L1202).
    pub lambda_thresh: f64,
    /// Lower bound (inclusive) on σ_λ^het for [`LoadIndex::Heterogeneous`].
    pub sigma_thresh: f64,
    /// Lower bound (exclusive) on normalised free memory in KB. UMol used
    /// 5000; the author recommends at least 20000 (L1329–1330), our default.
    pub mu_thresh_kb: f64,
}

impl Default for Score {
    fn default() -> Self {
        Score {
            index: LoadIndex::Heterogeneous,
            lambda_thresh: 0.6,
            sigma_thresh: 1.0,
            mu_thresh_kb: 20_000.0,
        }
    }
}

impl Score {
    /// UMol exactly as run in 1998: printed σ, λ_w < 0.6, μ > 5000 KB
    /// (L1192–1202).
    pub fn umol_1998() -> Self {
        Score {
            index: LoadIndex::Umol,
            lambda_thresh: 0.6,
            sigma_thresh: 1.0,
            mu_thresh_kb: 5_000.0,
        }
    }

    /// The score σ of a host (higher is better).
    pub fn sigma(&self, spec: &HostSpec, load: &HostLoad) -> f64 {
        match self.index {
            LoadIndex::Umol => sigma_umol(load.free_mem_kb, spec.weighted_load(load.load)),
            LoadIndex::Heterogeneous => {
                sigma_lambda_hetero(spec.speed, spec.cpus, load.load)
                    * (sigma_mu(load.free_mem_kb) / 120.0)
            }
        }
    }

    /// Whether the host meets the placement thresholds (see the type docs).
    pub fn acceptable(&self, spec: &HostSpec, load: &HostLoad) -> bool {
        // NaN memory fails `>`, as it should.
        let enough_memory = load.free_mem_kb > self.mu_thresh_kb;
        if !enough_memory {
            return false;
        }
        match self.index {
            LoadIndex::Umol => spec.weighted_load(load.load) < self.lambda_thresh,
            LoadIndex::Heterogeneous => {
                sigma_lambda_hetero(spec.speed, spec.cpus, load.load) >= self.sigma_thresh
            }
        }
    }
}

/// Static description of a host, as in DMW's host database (L1098–1103,
/// L1291, Table 7.4).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// β: single-CPU speed relative to the reference workload (L1313).
    pub speed: f64,
    /// n: number of CPUs.
    pub cpus: u32,
    /// w_h: the legacy load weight, λ_w = λ/w_h (L1096). Non-positive or
    /// non-finite weights are treated as 1.
    pub weight: f64,
    /// Global limit on concurrent guest jobs from all schedulers (L1285–1291).
    pub job_limit: u32,
}

impl HostSpec {
    /// A host of speed β with `cpus` CPUs, job limit = #CPUs (L1291) and
    /// legacy weight w_h = β (the customer-set weight played the role of a
    /// speed factor, L1096).
    pub fn new(speed: f64, cpus: u32) -> Self {
        HostSpec {
            speed,
            cpus,
            weight: speed,
            job_limit: super::rules::job_limit(None, cpus),
        }
    }

    pub fn with_job_limit(mut self, limit: u32) -> Self {
        self.job_limit = limit;
        self
    }

    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = weight;
        self
    }

    /// λ_w = λ / w_h (L1096).
    pub fn weighted_load(&self, load: f64) -> f64 {
        let w = if self.weight.is_finite() && self.weight > 0.0 {
            self.weight
        } else {
            1.0
        };
        load / w
    }
}

/// One measurement of a host, as the monitor ("Mole") reports it (L1524–1528).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostLoad {
    /// λ: the raw load average (which average is the caller's choice; the
    /// source leaves it open, spec §9 item 1).
    pub load: f64,
    /// μ: normalised free memory in KB (L1493–1505).
    pub free_mem_kb: f64,
}
