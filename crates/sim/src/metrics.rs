//! Metrics: Mutka's performance criteria and the profiling statistics.
//!
//! **Scheduling criteria** (Mutka & Livny 1987b,
//! seeds/004_8811df6e42c9e111.txt L142; Mutka 1988
//! seeds/000_14c1149197e96532.txt L255, L579, L711; spec
//! mutka-livny-1987.md §2.5), per home station `i` over the run:
//!
//! - remote cycle wait ratio `RCWR_i = E_i / W_i`, `E_i = ∫ nᵢ(t) dt` (nodes
//!   allocated), `W_i = ∫ 1[wantᵢ(t) ∧ nᵢ(t) = 0] dt`. Higher is better. A
//!   group's value is the arithmetic mean of its stations' values (T:L711);
//!   stations that never waited (`W_i = 0`, ratio undefined) are left out of
//!   the mean.
//! - remote cycle percentage `RCP_i = 100 · remote CPU / (local + remote CPU)`
//!   of the station's background jobs (T:L715).
//! - remote response ratio: over jobs that finished at a remote location,
//!   the mean of `(f − a)/s` (per-job reading, default) and `E[f − a]/E[s]`
//!   (ratio of means), both reported (spec §3.2 cautions).
//!
//! Plus Chapter 5's per-job job wait ratio, leverage and checkpoint rate
//! (T:L758, L789, L819), and the profiling statistics of Chapter 3 / Mutka &
//! Livny 1987a: per-station monthly availability (Table 1), hourly
//! utilisation histograms (Table 2), system utilisation SU_l (Table 3),
//! "< t+1" interval ECDFs, hyperexponential weight fits with fixed means,
//! interval labels and their transition matrices.

use crate::availability::{Hyperexp, Interval, State, month_of, month_start};
use gleaner_core::time::{Dur, Time};

// ---------------------------------------------------------------------------
// Scheduling criteria
// ---------------------------------------------------------------------------

/// One finished job, as recorded by the simulator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobRecord {
    pub arrival: Time,
    pub finish: Time,
    /// Service demand.
    pub demand: Dur,
    /// True if the job completed while running on another station's node.
    pub finished_remote: bool,
    /// CPU time the job got on other stations' nodes.
    pub remote_cpu: Dur,
    /// Time the job spent queued (running nowhere, not in transfer).
    pub queued: Dur,
    /// Of `queued`, the time before the job first ran anywhere (the rest is
    /// time back in the queue after a vacate or preemption).
    pub first_wait: Dur,
    /// Remote placements (each costs one JobTransferCost).
    pub placements: u32,
    /// Local capacity spent supporting remote execution (transfer costs).
    pub support: Dur,
    /// Time stopped on a host whose owner returned, before resuming there
    /// or leaving (Condor-1988's suspend, Mutka 1988 L841); not in `queued`.
    pub suspended: Dur,
}

/// Time-integrated accounting of one home station.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StationAccount {
    /// `E_i`: node-seconds allocated to the station.
    pub remote_alloc: f64,
    /// `W_i`: seconds wanting with no node allocated (weighted, see
    /// [`StationAccount::accrue`]).
    pub wait: f64,
    /// Seconds the station wanted remote cycles at all.
    pub want: f64,
    /// CPU seconds of the station's jobs executed remotely.
    pub remote_cpu: f64,
    /// CPU seconds of the station's jobs executed on its own host.
    pub local_cpu: f64,
    /// Finished jobs.
    pub jobs: Vec<JobRecord>,
}

impl StationAccount {
    /// Adds `dt` during which the station held `nodes` remote nodes (may be
    /// fractional under processor sharing), wanted remote cycles with weight
    /// `want` (0 or 1) and waited with weight `wait` (the part of the
    /// wanting time without allocation; 1 when wanting with no node).
    pub fn accrue(&mut self, dt: Dur, nodes: f64, want: f64, wait: f64) {
        let s = dt.as_secs_f64();
        self.remote_alloc += nodes * s;
        self.want += want * s;
        self.wait += wait * s;
    }

    /// Remote cycle wait ratio; `None` if the station never waited.
    pub fn rcwr(&self) -> Option<f64> {
        (self.wait > 0.0).then(|| self.remote_alloc / self.wait)
    }

    /// Share of the wanted time that was served (the "percentage of its
    /// request" of S:L160).
    pub fn request_satisfaction(&self) -> Option<f64> {
        (self.want > 0.0).then(|| (self.want - self.wait) / self.want)
    }

    /// Remote cycle percentage (0–100); `None` without any CPU.
    pub fn rcp(&self) -> Option<f64> {
        let t = self.remote_cpu + self.local_cpu;
        (t > 0.0).then(|| 100.0 * self.remote_cpu / t)
    }

    fn remote_jobs(&self) -> impl Iterator<Item = &JobRecord> {
        self.jobs.iter().filter(|j| j.finished_remote)
    }

    /// Remote response ratio, mean over remote-finished jobs of `(f−a)/s`.
    pub fn rrr_mean_of_ratios(&self) -> Option<f64> {
        mean(
            self.remote_jobs().map(|j| {
                j.finish.since(j.arrival).as_secs_f64() / j.demand.as_secs_f64().max(1e-6)
            }),
        )
    }

    /// Remote response ratio as `E[f−a] / E[s]` over remote-finished jobs.
    pub fn rrr_ratio_of_means(&self) -> Option<f64> {
        let (mut num, mut den) = (0.0, 0.0);
        for j in self.remote_jobs() {
            num += j.finish.since(j.arrival).as_secs_f64();
            den += j.demand.as_secs_f64();
        }
        (den > 0.0).then(|| num / den)
    }

    /// Mean job wait ratio (queued time / service time) over finished jobs
    /// (Mutka 1988 Fig. 5.3, T:L789).
    pub fn job_wait_ratio(&self) -> Option<f64> {
        mean(
            self.jobs
                .iter()
                .map(|j| j.queued.as_secs_f64() / j.demand.as_secs_f64().max(1e-6)),
        )
    }

    /// Leverage as a ratio of totals: remote CPU consumed / local capacity
    /// spent supporting it (T:L758, L829; the thesis leaves per-job vs
    /// total open — see [`leverage_per_job`](Self::leverage_per_job)).
    pub fn leverage(&self) -> Option<f64> {
        let sup: f64 = self.jobs.iter().map(|j| j.support.as_secs_f64()).sum();
        let rem: f64 = self.jobs.iter().map(|j| j.remote_cpu.as_secs_f64()).sum();
        (sup > 0.0).then(|| rem / sup)
    }

    /// Leverage as the mean of per-job ratios (jobs with remote support only).
    pub fn leverage_per_job(&self) -> Option<f64> {
        mean(
            self.jobs
                .iter()
                .filter(|j| !j.support.is_zero())
                .map(|j| j.remote_cpu.as_secs_f64() / j.support.as_secs_f64()),
        )
    }

    /// Checkpoint rate: moves after the initial placement per hour of remote
    /// execution (T:L819).
    pub fn checkpoint_rate(&self) -> Option<f64> {
        let moves: u32 = self
            .jobs
            .iter()
            .map(|j| j.placements.saturating_sub(1))
            .sum();
        let hours: f64 = self
            .jobs
            .iter()
            .map(|j| j.remote_cpu.as_secs_f64())
            .sum::<f64>()
            / 3600.0;
        (hours > 0.0).then(|| moves as f64 / hours)
    }
}

/// Arithmetic mean of the finite values; `None` if there are none.
pub fn mean(vals: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for v in vals {
        if v.is_finite() {
            s += v;
            n += 1;
        }
    }
    (n > 0).then(|| s / n as f64)
}

/// Group value of a per-station metric: the mean over the stations that
/// have a value (T:L711).
pub fn group_mean<'a>(
    accounts: impl IntoIterator<Item = &'a StationAccount>,
    f: impl Fn(&StationAccount) -> Option<f64>,
) -> Option<f64> {
    mean(accounts.into_iter().filter_map(f))
}

// ---------------------------------------------------------------------------
// Profiling statistics
// ---------------------------------------------------------------------------

/// Time in state `s` within `[from, to)` of a contiguous interval list.
pub fn time_in(ivs: &[Interval], s: State, from: Time, to: Time) -> Dur {
    // Binary search for the first interval ending after `from`.
    let i0 = ivs.partition_point(|iv| iv.end <= from);
    let mut tot = 0u64;
    for iv in &ivs[i0..] {
        if iv.start >= to {
            break;
        }
        if iv.state == s {
            let a = iv.start.max(from);
            let b = iv.end.min(to);
            tot += b.since(a).0;
        }
    }
    Dur(tot)
}

/// Percentage of time AV per station and month (Table 1 of P,
/// P:L243–261): `out[station][month]`, months from 0 (September) up to the
/// last month that starts before `until`; partial months count the covered
/// part only.
pub fn monthly_availability(stations: &[Vec<Interval>], until: Time) -> Vec<Vec<f64>> {
    let months = if until == Time::ZERO {
        0
    } else {
        month_of(Time(until.0 - 1)) + 1
    };
    stations
        .iter()
        .map(|ivs| {
            (0..months)
                .map(|m| {
                    let a = month_start(m);
                    let b = month_start(m + 1).min(until);
                    let len = b.since(a).0;
                    if len == 0 {
                        f64::NAN
                    } else {
                        100.0 * time_in(ivs, State::Av, a, b).0 as f64 / len as f64
                    }
                })
                .collect()
        })
        .collect()
}

/// Coefficient of variation (population standard deviation / mean) of the
/// finite values (P:L239).
pub fn cov(vals: &[f64]) -> Option<f64> {
    let v: Vec<f64> = vals.iter().copied().filter(|x| x.is_finite()).collect();
    let m = mean(v.iter().copied())?;
    if m == 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
    Some(var.sqrt() / m)
}

/// Ten 10 % bins; `p` in 0–100, the last bin includes 100.
fn bin10(p: f64) -> usize {
    ((p / 10.0).floor() as i64).clamp(0, 9) as usize
}

/// Hourly utilisation histogram of one station (Table 2, P:L268, L286–304):
/// the percentage of whole clock hours in `[0, until)` whose NA share falls
/// into each 10 % bin (0–10, …, 90–100 inclusive).
pub fn hourly_utilisation(ivs: &[Interval], until: Time) -> [f64; 10] {
    let hour = 3_600_000_000u64;
    let n = until.0 / hour;
    let mut counts = [0u64; 10];
    for h in 0..n {
        let a = Time(h * hour);
        let b = Time((h + 1) * hour);
        let na = time_in(ivs, State::Na, a, b).0 as f64 / hour as f64;
        counts[bin10(100.0 * na)] += 1;
    }
    percentages(&counts)
}

fn percentages(counts: &[u64; 10]) -> [f64; 10] {
    let tot: u64 = counts.iter().sum();
    let mut out = [0.0; 10];
    if tot > 0 {
        for (o, c) in out.iter_mut().zip(counts) {
            *o = 100.0 * *c as f64 / tot as f64;
        }
    }
    out
}

/// System utilisation distribution SU_l (Table 3, P:L280, L314–326): over
/// aligned windows of `l` in `[0, until)`, the average number of NA stations
/// divided by the number of stations, binned in 10 % bins (percent of
/// windows).
pub fn system_utilisation(stations: &[Vec<Interval>], l: Dur, until: Time) -> [f64; 10] {
    let mut counts = [0u64; 10];
    if l.0 == 0 || stations.is_empty() {
        return [0.0; 10];
    }
    let n = until.0 / l.0;
    // Walk every station's intervals once (cursor per station).
    let mut cursors = vec![0usize; stations.len()];
    for w in 0..n {
        let a = Time(w * l.0);
        let b = Time((w + 1) * l.0);
        let mut na = 0u64;
        for (s, ivs) in stations.iter().enumerate() {
            let mut i = cursors[s];
            while i < ivs.len() && ivs[i].end <= a {
                i += 1;
            }
            cursors[s] = i;
            for iv in &ivs[i..] {
                if iv.start >= b {
                    break;
                }
                if iv.state == State::Na {
                    na += iv.end.min(b).since(iv.start.max(a)).0;
                }
            }
        }
        let p = 100.0 * na as f64 / (l.0 as f64 * stations.len() as f64);
        counts[bin10(p)] += 1;
    }
    percentages(&counts)
}

/// Lengths in minutes of the intervals in state `s` (all stations pooled).
pub fn lengths_mins(stations: &[Vec<Interval>], s: State) -> Vec<f64> {
    stations
        .iter()
        .flat_map(|v| v.iter())
        .filter(|iv| iv.state == s)
        .map(|iv| iv.len().as_mins_f64())
        .collect()
}

/// Empirical CDF with Mutka's "< t+1" convention (P:L162): for each integer
/// `t` in `0..=t_max`, the fraction of lengths (minutes) `< t + 1`.
pub fn ecdf_lt_t_plus_1(lengths: &[f64], t_max: u32) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = lengths.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len().max(1) as f64;
    (0..=t_max)
        .map(|t| {
            let c = v.partition_point(|&x| x < t as f64 + 1.0);
            (t as f64, c as f64 / n)
        })
        .collect()
}

/// Least-squares weights of a hyperexponential with fixed component means
/// (Mutka's fitting method, P:L180–182): minimises `Σ_t (F(t+1) − ECDF(t))²`
/// over the given ECDF points subject to `Σ w = 1`, `w ≥ 0` (exact: every
/// active set is tried, fine for the 2–3 components used). The model CDF is
/// evaluated at `t + 1` to match the "< t+1" convention, optionally clamped
/// below `floor` minutes (then the fitted CDF is the law of `max(floor, X)`).
pub fn fit_weights(ecdf: &[(f64, f64)], means: &[f64], floor: f64) -> Option<Hyperexp> {
    let k = means.len();
    if k == 0 || k > 8 || ecdf.is_empty() {
        return None;
    }
    let basis = |t: f64, m: f64| {
        let x = t + 1.0;
        if x < floor { 0.0 } else { 1.0 - (-x / m).exp() }
    };
    let pts: Vec<(Vec<f64>, f64)> = ecdf
        .iter()
        .map(|&(t, y)| (means.iter().map(|&m| basis(t, m)).collect(), y))
        .collect();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 1u32..(1 << k) {
        let idx: Vec<usize> = (0..k).filter(|i| mask & (1 << i) != 0).collect();
        let Some(w) = constrained_ls(&pts, &idx) else {
            continue;
        };
        if w.iter().any(|&x| x < -1e-12) {
            continue;
        }
        let mut full = vec![0.0; k];
        for (j, &i) in idx.iter().enumerate() {
            full[i] = w[j].max(0.0);
        }
        let sse: f64 = pts
            .iter()
            .map(|(b, y)| {
                let f: f64 = b.iter().zip(&full).map(|(a, w)| a * w).sum();
                (f - y) * (f - y)
            })
            .sum();
        if best.as_ref().is_none_or(|(s, _)| sse < *s) {
            best = Some((sse, full));
        }
    }
    let (_, w) = best?;
    Some(Hyperexp {
        weights: w,
        means: means.to_vec(),
    })
}

/// Least squares with `Σ w = 1` over the components `idx`, by substituting
/// the last weight and solving the normal equations (Gaussian elimination).
fn constrained_ls(pts: &[(Vec<f64>, f64)], idx: &[usize]) -> Option<Vec<f64>> {
    let m = idx.len();
    if m == 1 {
        return Some(vec![1.0]);
    }
    let last = idx[m - 1];
    // y − b_last = Σ_{j<m-1} w_j (b_j − b_last)
    let d = m - 1;
    let mut a = vec![vec![0.0; d + 1]; d];
    for (b, y) in pts {
        let r: Vec<f64> = idx[..d].iter().map(|&i| b[i] - b[last]).collect();
        let yy = y - b[last];
        for p in 0..d {
            for q in 0..d {
                a[p][q] += r[p] * r[q];
            }
            a[p][d] += r[p] * yy;
        }
    }
    // Gaussian elimination with partial pivoting.
    for c in 0..d {
        let piv = (c..d).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))?;
        if a[piv][c].abs() < 1e-14 {
            return None;
        }
        a.swap(c, piv);
        let pivot_row = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot_row[c];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut w: Vec<f64> = (0..d).map(|i| a[i][d] / a[i][i]).collect();
    let s: f64 = w.iter().sum();
    w.push(1.0 - s);
    Some(w)
}

/// Largest deviations of a model CDF from an ECDF beyond `t0`: (model below
/// data, model above data), as fractions (P:L188, L194).
pub fn max_deviation(ecdf: &[(f64, f64)], model: impl Fn(f64) -> f64, t0: f64) -> (f64, f64) {
    let (mut below, mut above) = (0.0f64, 0.0f64);
    for &(t, y) in ecdf.iter().filter(|p| p.0 >= t0) {
        let f = model(t + 1.0);
        below = below.max(y - f);
        above = above.max(f - y);
    }
    (below, above)
}

/// Interval label thresholds (P:L216–218): AV short < 9 min, medium < 75,
/// long otherwise; NA short < 21 min, long otherwise.
pub const AV_SHORT: f64 = 9.0;
pub const AV_MEDIUM: f64 = 75.0;
pub const NA_SHORT: f64 = 21.0;

/// Label of an AV length: 0 short, 1 medium, 2 long.
pub fn av_label(mins: f64) -> usize {
    if mins < AV_SHORT {
        0
    } else if mins < AV_MEDIUM {
        1
    } else {
        2
    }
}

/// Label of an NA length: 0 short, 1 long.
pub fn na_label(mins: f64) -> usize {
    usize::from(mins >= NA_SHORT)
}

/// Label statistics of a set of station histories (R-AN-6).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelStats {
    /// AV label fractions (short, medium, long).
    pub av: [f64; 3],
    /// NA label fractions (short, long).
    pub na: [f64; 2],
    /// AV→next AV label transition matrix (rows sum to 1).
    pub av_av: [[f64; 3]; 3],
    /// NA→next NA label transition matrix.
    pub na_na: [[f64; 2]; 2],
    /// AV label → label of the following NA.
    pub av_na: [[f64; 2]; 3],
    /// Pearson correlation of an AV length and the following NA length.
    pub corr_av_na: f64,
    pub n_av: usize,
    pub n_na: usize,
}

fn normalise<const N: usize>(row: [u64; N]) -> [f64; N] {
    let t: u64 = row.iter().sum();
    let mut out = [0.0; N];
    if t > 0 {
        for (o, c) in out.iter_mut().zip(row) {
            *o = c as f64 / t as f64;
        }
    }
    out
}

/// Label fractions, transition matrices and AV/NA correlation. Only
/// consecutive intervals of the same station are paired.
pub fn label_stats(stations: &[Vec<Interval>]) -> LabelStats {
    let mut av = [0u64; 3];
    let mut na = [0u64; 2];
    let mut av_av = [[0u64; 3]; 3];
    let mut na_na = [[0u64; 2]; 2];
    let mut av_na = [[0u64; 2]; 3];
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    for ivs in stations {
        let mut last_av: Option<usize> = None;
        let mut last_na: Option<usize> = None;
        let mut prev: Option<(State, f64)> = None;
        for iv in ivs {
            let m = iv.len().as_mins_f64();
            match iv.state {
                State::Av => {
                    let l = av_label(m);
                    av[l] += 1;
                    if let Some(p) = last_av {
                        av_av[p][l] += 1;
                    }
                    last_av = Some(l);
                }
                State::Na => {
                    let l = na_label(m);
                    na[l] += 1;
                    if let Some(p) = last_na {
                        na_na[p][l] += 1;
                    }
                    last_na = Some(l);
                    if let Some((State::Av, a)) = prev {
                        av_na[av_label(a)][l] += 1;
                        pairs.push((a, m));
                    }
                }
            }
            prev = Some((iv.state, m));
        }
    }
    LabelStats {
        av: normalise(av),
        na: normalise(na),
        av_av: av_av.map(normalise),
        na_na: na_na.map(normalise),
        av_na: av_na.map(normalise),
        corr_av_na: pearson(&pairs),
        n_av: av.iter().sum::<u64>() as usize,
        n_na: na.iter().sum::<u64>() as usize,
    }
}

/// Pearson correlation coefficient; 0 for fewer than two pairs.
pub fn pearson(p: &[(f64, f64)]) -> f64 {
    let n = p.len() as f64;
    if p.len() < 2 {
        return 0.0;
    }
    let mx = p.iter().map(|x| x.0).sum::<f64>() / n;
    let my = p.iter().map(|x| x.1).sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for &(x, y) in p {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        0.0
    } else {
        sxy / (sxx * syy).sqrt()
    }
}

/// Longest period in `[0, until)` during which fewer than `k` stations were
/// AV (R-AN-7; the paper reports 10 min for k = 1, 25 min for k = 2 and 2 h
/// for k = 3, P:L280).
pub fn longest_with_fewer_av(stations: &[Vec<Interval>], k: usize, until: Time) -> Dur {
    // Sweep over all AV start/end events.
    let mut ev: Vec<(Time, i32)> = Vec::new();
    for ivs in stations {
        for iv in ivs.iter().filter(|iv| iv.state == State::Av) {
            if iv.start < until {
                ev.push((iv.start, 1));
                ev.push((iv.end.min(until), -1));
            }
        }
    }
    ev.sort();
    let mut av = 0i64;
    let mut best = 0u64;
    let mut since: Option<Time> = Some(Time::ZERO);
    let mut i = 0;
    while i < ev.len() {
        let t = ev[i].0;
        while i < ev.len() && ev[i].0 == t {
            av += i64::from(ev[i].1);
            i += 1;
        }
        let low = (av as usize) < k || av < 0;
        match (low, since) {
            (true, None) => since = Some(t),
            (false, Some(s)) => {
                best = best.max(t.since(s).0);
                since = None;
            }
            _ => {}
        }
    }
    if let Some(s) = since {
        best = best.max(until.since(s).0);
    }
    Dur(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The processor-sharing example of Mutka & Livny 1987b S:L160 (= T:L637;
    /// spec §2.5): one remote processor, two stations each AV half the time
    /// (four equally long phases covering every AV/NA combination), user I
    /// with 2 permanent jobs, user II with 1, contended time split evenly
    /// and counted half as waiting. Expected RCWR_I = 3, RCWR_II = 1, and
    /// 75 % vs 50 % of the request satisfied.
    #[test]
    fn processor_sharing_example_gives_rcwr_3_and_1() {
        let dt = Dur::from_hours(1);
        let (mut i, mut ii) = (StationAccount::default(), StationAccount::default());
        // Phase 1: both AV. I runs one job locally and wants one more: the
        // remote processor is its alone. II runs locally, wants nothing.
        i.accrue(dt, 1.0, 1.0, 0.0);
        ii.accrue(dt, 0.0, 0.0, 0.0);
        // Phase 2: I AV, II NA. Both want the remote node: shared.
        i.accrue(dt, 0.5, 1.0, 0.5);
        ii.accrue(dt, 0.5, 1.0, 0.5);
        // Phase 3: I NA, II AV. I alone wants it (for two jobs; it holds the
        // node, so it is not waiting by the literal definition).
        i.accrue(dt, 1.0, 1.0, 0.0);
        ii.accrue(dt, 0.0, 0.0, 0.0);
        // Phase 4: both NA: shared again.
        i.accrue(dt, 0.5, 1.0, 0.5);
        ii.accrue(dt, 0.5, 1.0, 0.5);
        assert!((i.rcwr().unwrap() - 3.0).abs() < 1e-12);
        assert!((ii.rcwr().unwrap() - 1.0).abs() < 1e-12);
        assert!((i.request_satisfaction().unwrap() - 0.75).abs() < 1e-12);
        assert!((ii.request_satisfaction().unwrap() - 0.5).abs() < 1e-12);
        // Group value = mean of the station values (T:L711).
        assert!((group_mean([&i, &ii], StationAccount::rcwr).unwrap() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn rrr_rcp_and_job_metrics() {
        let mut a = StationAccount {
            remote_cpu: 30.0,
            local_cpu: 70.0,
            ..Default::default()
        };
        let job = |arr: u64, fin: u64, dem: u64, remote: bool| JobRecord {
            arrival: Time::from_secs(arr),
            finish: Time::from_secs(fin),
            demand: Dur::from_secs(dem),
            finished_remote: remote,
            remote_cpu: Dur::from_secs(if remote { dem } else { 0 }),
            queued: Dur::from_secs(fin - arr - dem),
            first_wait: Dur::from_secs(fin - arr - dem),
            placements: if remote { 2 } else { 0 },
            support: Dur::from_secs(if remote { 120 } else { 0 }),
            suspended: Dur::ZERO,
        };
        a.jobs.push(job(0, 20, 10, true)); // ratio 2
        a.jobs.push(job(0, 400, 100, true)); // ratio 4
        a.jobs.push(job(0, 1000, 10, false)); // local: excluded from RRR
        assert_eq!(a.rcp(), Some(30.0));
        assert!((a.rrr_mean_of_ratios().unwrap() - 3.0).abs() < 1e-12);
        assert!((a.rrr_ratio_of_means().unwrap() - 420.0 / 110.0).abs() < 1e-12);
        assert!((a.leverage().unwrap() - 110.0 / 240.0).abs() < 1e-12);
        // 2 moves after initial placements over 110 s of remote CPU.
        assert!((a.checkpoint_rate().unwrap() - 2.0 / (110.0 / 3600.0)).abs() < 1e-9);
        let jwr = (1.0 + 3.0 + 99.0) / 3.0;
        assert!((a.job_wait_ratio().unwrap() - jwr).abs() < 1e-12);
        assert_eq!(StationAccount::default().rcwr(), None);
    }

    fn iv(a: u64, b: u64, s: State) -> Interval {
        Interval {
            start: Time::from_secs(a * 60),
            end: Time::from_secs(b * 60),
            state: s,
        }
    }

    #[test]
    fn hourly_and_system_utilisation() {
        // Hour 0: NA 5 min (bin 0), hour 1: NA 60 min (bin 9).
        let st = [vec![
            iv(0, 55, State::Av),
            iv(55, 60, State::Na),
            iv(60, 120, State::Na),
        ]];
        let h = hourly_utilisation(&st[0], Time::from_secs(7200));
        assert_eq!(h[0], 50.0);
        assert_eq!(h[1], 0.0); // 5/60 = 8.3 % falls in bin 0
        assert_eq!(h[9], 50.0);
        let two = vec![st[0].clone(), vec![iv(0, 120, State::Av)]];
        let su = system_utilisation(&two, Dur::from_mins(60), Time::from_secs(7200));
        // Window 0: 5/120 NA → 4 % (bin 0); window 1: 50 % → bin 5.
        assert_eq!(su[0], 50.0);
        assert_eq!(su[5], 50.0);
        let ma = monthly_availability(&two, Time::from_secs(7200));
        assert_eq!(ma.len(), 2);
        assert!((ma[0][0] - 100.0 * 55.0 / 120.0).abs() < 1e-9);
        assert_eq!(ma[1][0], 100.0);
    }

    #[test]
    fn ecdf_uses_less_than_t_plus_one() {
        let e = ecdf_lt_t_plus_1(&[0.5, 1.0, 1.5, 3.0], 3);
        assert_eq!(e[0], (0.0, 0.25)); // < 1
        assert_eq!(e[1], (1.0, 0.75)); // < 2
        assert_eq!(e[2], (2.0, 0.75));
        assert_eq!(e[3], (3.0, 1.0));
    }

    #[test]
    fn weight_fit_recovers_known_mixture() {
        let truth = Hyperexp {
            weights: vec![0.32, 0.44, 0.24],
            means: vec![3.0, 25.0, 300.0],
        };
        let e: Vec<(f64, f64)> = (0..600)
            .map(|t| (t as f64, truth.cdf(t as f64 + 1.0)))
            .collect();
        let fit = fit_weights(&e, &truth.means, 0.0).unwrap();
        for (a, b) in fit.weights.iter().zip(&truth.weights) {
            assert!((a - b).abs() < 1e-6, "{:?}", fit.weights);
        }
        let (below, above) = max_deviation(&e, |t| fit.cdf(t), 5.0);
        assert!(below < 1e-6 && above < 1e-6);
    }

    #[test]
    fn labels_and_transitions() {
        // AV 5 (S), NA 30 (L), AV 100 (L), NA 7 (S), AV 5 (S).
        let st = vec![vec![
            iv(0, 5, State::Av),
            iv(5, 35, State::Na),
            iv(35, 135, State::Av),
            iv(135, 142, State::Na),
            iv(142, 147, State::Av),
        ]];
        let l = label_stats(&st);
        assert_eq!(l.n_av, 3);
        assert!((l.av[0] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(l.na, [0.5, 0.5]);
        assert_eq!(l.av_av[0], [0.0, 0.0, 1.0]);
        assert_eq!(l.av_av[2], [1.0, 0.0, 0.0]);
        assert_eq!(l.na_na[1], [1.0, 0.0]);
        assert_eq!(l.av_na[0], [0.0, 1.0]);
        assert_eq!(av_label(9.0), 1);
        assert_eq!(av_label(75.0), 2);
        assert_eq!(na_label(21.0), 1);
    }

    #[test]
    fn longest_gap_with_few_available_stations() {
        let st = vec![
            vec![
                iv(0, 10, State::Av),
                iv(10, 30, State::Na),
                iv(30, 60, State::Av),
            ],
            vec![iv(0, 20, State::Na), iv(20, 60, State::Av)],
        ];
        let until = Time::from_secs(3600);
        assert_eq!(longest_with_fewer_av(&st, 1, until), Dur::from_mins(10));
        assert_eq!(longest_with_fewer_av(&st, 2, until), Dur::from_mins(30));
    }
}
