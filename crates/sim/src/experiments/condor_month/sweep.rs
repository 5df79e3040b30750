//! The Condor month's unsourced batch counts as a sensitivity result: the
//! light users' waiting with the heavy user's and the light users' batch
//! counts scaled (fewer, larger batches and more, smaller ones).

use super::{Outcome, Setup};
use crate::SimError;
use crate::experiments::ExperimentOpts;
use crate::experiments::report::{Report, f};
use std::fmt::Write as _;

/// (name, heavy batch-count scale, light batch-count scale).
pub(super) const POINTS: [(&str, f64, f64); 7] = [
    ("as configured (A 15; B 14, C 4, D 8, E 2)", 1.0, 1.0),
    ("heavy in 5 batches", 1.0 / 3.0, 1.0),
    ("heavy in 45 batches", 3.0, 1.0),
    ("light in half as many batches", 1.0, 0.5),
    ("light in twice as many batches", 1.0, 2.0),
    ("everyone in half as many", 0.5, 0.5),
    ("everyone in twice as many", 2.0, 2.0),
];

/// One setting's outcome over the seeds.
pub(super) struct Row {
    pub name: String,
    /// Largest light user's mean job wait ratio.
    pub largest: f64,
    /// % of light jobs that waited under 5 % of their demand.
    pub most: f64,
    /// The heavy user's mean job wait ratio.
    pub heavy: f64,
}

type One<'a> = dyn Fn(&Setup, u64) -> Result<((f64, f64), Outcome), SimError> + 'a;

/// Runs every point with the experiment's seeds.
pub(super) fn run(
    opts: &ExperimentOpts,
    base: &Setup,
    rep: &mut Report,
    one: &One,
) -> Result<Vec<Row>, SimError> {
    let mut rows = Vec::new();
    for (name, h, l) in POINTS {
        let setup = Setup {
            batch_scale: (h, l),
            ..base.clone()
        };
        let mut outs = Vec::new();
        for s in 0..opts.seeds {
            let (_, o) = one(&setup, opts.seed + u64::from(s))?;
            rep.events += o.result.events;
            outs.push(o);
        }
        let (largest, most) = super::light(&outs);
        let heavy = outs.iter().map(|o| o.users[0].0).sum::<f64>() / outs.len().max(1) as f64;
        rows.push(Row {
            name: name.to_string(),
            largest,
            most,
            heavy,
        });
        opts.progress.advance(u64::from(opts.seeds));
    }
    Ok(rows)
}

/// The sensitivity table.
pub(super) fn table(md: &mut String, rows: &[Row]) {
    let _ = writeln!(
        md,
        "\n## Sensitivity: the batch counts (ours)\n\n\
         The thesis says only that jobs arrived in batches (T:L787). The light users' waiting \
         with other batch counts (same jobs, same seeds):\n\n\
         | batches | largest light mean wait ratio | light jobs waiting < 5 % of demand | heavy mean wait ratio | \"light users did not wait\" (≤ 0.1) |\n|---|---|---|---|---|"
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} % | {} | {} |",
            r.name,
            f(r.largest, 3),
            f(r.most, 1),
            f(r.heavy, 2),
            if r.largest <= 0.1 { "holds" } else { "fails" }
        );
    }
}
