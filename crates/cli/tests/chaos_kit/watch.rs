//! What the chaos driver knows of the jobs, and the check of a short job's
//! delivered outputs.

use super::CkptWatch;
use crate::fault_pool::Pool;
use gleaner_proto::api::JobInfo;
use gleaner_proto::job::JobState;
use gleaner_station::client::JobQuery;
use std::collections::HashMap;
use std::path::Path;

/// Files being delivered: staged beside the user's outputs, in `work`
/// and the checkpointing jobs' directories under it.
pub fn staged_names(work: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(work).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains(".gleaner-") {
            v.push(name);
        } else if name.starts_with("ck") && e.file_type().is_ok_and(|t| t.is_dir()) {
            v.extend(
                staged_names(&e.path())
                    .into_iter()
                    .map(|n| format!("{name}/{n}")),
            );
        }
    }
    v
}

/// What the driver knows of the jobs.
pub struct Watch {
    pub ids: Vec<String>,
    pub states: HashMap<String, JobInfo>,
    pub ckpts: Vec<CkptWatch>,
}

impl Watch {
    pub async fn poll(&mut self, pool: &Pool) {
        let q = JobQuery {
            all: true,
            ..Default::default()
        };
        if let Ok(jobs) = pool.client.jobs(&q).await {
            for j in jobs {
                self.states.insert(j.id.to_string(), j);
            }
        }
        for c in &mut self.ckpts {
            c.done = self
                .states
                .get(&c.id)
                .is_some_and(|j| matches!(j.state, JobState::Completed { .. }));
        }
    }

    pub fn completed(&self) -> usize {
        self.ids
            .iter()
            .filter(|id| {
                self.states
                    .get(*id)
                    .is_some_and(|j| matches!(j.state, JobState::Completed { .. }))
            })
            .count()
    }

    /// Every job completed, held or removed: nothing more will happen.
    pub fn settled(&self) -> bool {
        self.ids.iter().all(|id| {
            self.states.get(id).is_some_and(|j| {
                matches!(
                    j.state,
                    JobState::Completed { .. } | JobState::Held { .. } | JobState::Removed
                )
            })
        })
    }
}

/// A short job's delivered outputs.
#[derive(Debug, Default)]
pub struct ShortOutcome {
    pub one_run: bool,
    pub side_effects: usize,
    pub problem: Option<String>,
}

pub fn check_short(work: &Path, side: &Path, p: usize) -> ShortOutcome {
    let out = std::fs::read_to_string(work.join(format!("out.{p}"))).unwrap_or_default();
    let result = std::fs::read_to_string(work.join(format!("result.{p}"))).unwrap_or_default();
    let sides = std::fs::read_to_string(side.join(format!("s.{p}"))).unwrap_or_default();
    let side_effects = sides.lines().count();
    let runs: Vec<&str> = out.lines().collect();
    let mut distinct = runs.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let nonce = runs
        .first()
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or("");
    let problem = if runs.len() != 2 || distinct.len() != 1 {
        Some(format!("stdout is not one whole run: {out:?}"))
    } else if result.trim() != nonce {
        Some(format!(
            "result {:?} is not stdout's run {nonce}",
            result.trim()
        ))
    } else if !sides.lines().any(|l| l == nonce) {
        Some(format!("run {nonce} left no side effect: {sides:?}"))
    } else {
        None
    };
    ShortOutcome {
        one_run: problem.is_none(),
        side_effects,
        problem,
    }
}
