//! The parallel universe: `universe = parallel` with `machine_count = k`
//! (HTCondor's convention) makes one job of k members started and stopped
//! together. Gleaner makes each member a proc of the cluster, proc id =
//! rank = `$(Node)`, so each runs as its own guest with its own job id;
//! the `queue` statement must therefore make one proc. Gleaner's own keys
//! choose the gang policy (Ryu & Hollingsworth §5, seeds/002… L286;
//! `gleaner_core::gang`): `gang_policy = linger | reconfigure`,
//! `gang_on_eviction = suspend | vacate`, `gang_min`, `gang_shape`.

use super::expand::{Budget, Expander};
use super::{Assignment, QueueBatch, SubmitErrorKind, keys};
use crate::job::{Gang, GangPolicyKind, MAX_MACHINE_COUNT};
use gleaner_core::gang::{OnEviction, Shape};
use std::collections::BTreeMap;

/// A problem with a batch's parallel settings: where, and what.
pub(super) struct GangError {
    pub(super) file: Option<String>,
    pub(super) line: usize,
    pub(super) kind: SubmitErrorKind,
}

/// The latest assignment of command `name` (under any of its names).
fn command<'a>(batch: &'a QueueBatch, name: &str) -> Option<&'a Assignment> {
    batch
        .vars
        .values()
        .filter(|a| !a.name.starts_with('+') && keys::canonical(&a.name) == name)
        .max_by_key(|a| a.seq)
}

fn at(a: &Assignment, kind: SubmitErrorKind) -> GangError {
    GangError {
        file: a.file.clone(),
        line: a.line,
        kind,
    }
}

fn bad(a: &Assignment, reason: impl Into<String>) -> GangError {
    at(
        a,
        SubmitErrorKind::BadValue {
            key: a.name.clone(),
            reason: reason.into(),
        },
    )
}

/// The gang of `batch`, `None` for a vanilla batch. Values may use macros
/// (not the per-proc built-ins: every member shares them).
pub(super) fn gang_of(
    batch: &QueueBatch,
    batches: usize,
    env: &BTreeMap<String, String>,
) -> Result<Option<Gang>, GangError> {
    let budget = Budget::new();
    let ex = Expander::new(&batch.vars, env, None, &budget);
    let value = |a: &Assignment| -> Result<String, GangError> {
        ex.expand(&a.value, 0)
            .map(|v| v.trim().to_ascii_lowercase())
            .map_err(|k| at(a, k))
    };
    let universe = match command(batch, "universe") {
        Some(a) => value(a)?,
        None => String::new(),
    };
    let count = command(batch, "machine_count");
    if universe != "parallel" {
        // HTCondor refuses machine_count outside the parallel universe;
        // so do the gang keys.
        if let Some(a) = count {
            return Err(bad(a, "machine_count needs universe = parallel"));
        }
        for k in ["gang_policy", "gang_on_eviction", "gang_min", "gang_shape"] {
            if let Some(a) = command(batch, k) {
                return Err(bad(a, format!("{k} needs universe = parallel")));
            }
        }
        return Ok(None);
    }
    let queue_at = GangError {
        file: batch.file.clone(),
        line: batch.line,
        kind: SubmitErrorKind::Malformed(String::new()),
    };
    let Some(count) = count else {
        let a = command(batch, "universe");
        return Err(match a {
            Some(a) => bad(a, "universe = parallel needs machine_count = k"),
            None => queue_at,
        });
    };
    let k: u32 = match value(count)?.parse() {
        Ok(k) if (1..=MAX_MACHINE_COUNT).contains(&k) => k,
        _ => {
            return Err(bad(
                count,
                format!("expected a whole number of machines from 1 to {MAX_MACHINE_COUNT}"),
            ));
        }
    };
    if batches != 1 || batch.procs.len() != 1 {
        return Err(GangError {
            kind: SubmitErrorKind::Unsupported(
                "a parallel job is one `queue` of one job: its machine_count members become \
                 procs 0 to k-1 of the cluster (one submit file per parallel job)"
                    .into(),
            ),
            ..queue_at
        });
    }
    let mut gang = Gang {
        machine_count: k,
        policy: GangPolicyKind::Linger,
        on_eviction: OnEviction::Suspend,
        min: 1,
        shape: Shape::Any,
    };
    if let Some(a) = command(batch, "gang_policy") {
        gang.policy = match value(a)?.as_str() {
            "linger" | "ll-k" | "llk" => GangPolicyKind::Linger,
            "reconfigure" | "reconfiguration" => GangPolicyKind::Reconfigure,
            v => return Err(bad(a, format!("\"{v}\" (expected linger or reconfigure)"))),
        };
    }
    if let Some(a) = command(batch, "gang_on_eviction") {
        gang.on_eviction = match value(a)?.as_str() {
            "suspend" => OnEviction::Suspend,
            "vacate" => OnEviction::Vacate,
            v => return Err(bad(a, format!("\"{v}\" (expected suspend or vacate)"))),
        };
    }
    let reconfig_only = |a: &Assignment, key: &str| -> Result<(), GangError> {
        if gang.policy == GangPolicyKind::Reconfigure {
            Ok(())
        } else {
            Err(bad(
                a,
                format!("{key} applies to gang_policy = reconfigure only"),
            ))
        }
    };
    if let Some(a) = command(batch, "gang_min") {
        reconfig_only(a, "gang_min")?;
        gang.min = match value(a)?.parse() {
            Ok(m) if (1..=k).contains(&m) => m,
            _ => return Err(bad(a, format!("expected a whole number from 1 to {k}"))),
        };
    }
    if let Some(a) = command(batch, "gang_shape") {
        reconfig_only(a, "gang_shape")?;
        gang.shape = match value(a)?.as_str() {
            "any" => Shape::Any,
            "power_of_two" => Shape::PowerOfTwo,
            "square" => Shape::Square,
            v => {
                return Err(bad(
                    a,
                    format!("\"{v}\" (expected any, power_of_two or square)"),
                ));
            }
        };
    }
    if gang.policy == GangPolicyKind::Reconfigure && gang.shape.floor(k) < gang.min {
        let a = command(batch, "gang_min").unwrap_or(count);
        return Err(bad(
            a,
            format!(
                "no member count from gang_min {} to machine_count {k} fits gang_shape",
                gang.min
            ),
        ));
    }
    Ok(Some(gang))
}

/// How many jobs `batch` makes: its procs, or a parallel job's members.
pub(super) fn jobs_of(batch: &QueueBatch, batches: usize, env: &BTreeMap<String, String>) -> u32 {
    match gang_of(batch, batches, env) {
        Ok(Some(g)) => g.machine_count,
        _ => u32::try_from(batch.procs.len()).unwrap_or(u32::MAX),
    }
}
