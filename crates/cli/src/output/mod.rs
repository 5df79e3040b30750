//! The one output layer of `glean` (HyperQueue's `client/output` model):
//! commands build data, and the renderer chosen once in `main` prints it.
//!
//! - [`table`]: tables and sentences for people (the default).
//! - [`json`]: one JSON document per command for scripts (`--json`).
//!
//! Every byte of user-controlled text goes out through [`escape`]: table
//! cells and lines (`escape::cells`, `say!`), `-af`/`-format`/`-long`
//! ([`adformat`], over [`printf`] and [`layout`]), and JSON documents
//! (`escape::json`). HTCondor's own output formats (`condor_q`,
//! `condor_history`, …) are built from the same pieces in
//! `crate::condor`.
//!
//! Adding a format means one new file implementing [`Output`]; adding a
//! command means one method here and one in each renderer, so the table
//! and JSON views of a command can never drift apart.

pub mod adformat;
pub mod condor;
pub mod escape;
mod format;
mod json;
pub mod layout;
pub mod printf;
mod reserve;
mod table;
mod users;

use gleaner_coordinator::matchmaker::{LicenceUse, StationVerdict};
use gleaner_coordinator::tokens::{IssuedToken, RevokeOutcome, TokenRecord};
use gleaner_proto::api::{ActionResponse, JobInfo};
use gleaner_proto::job::JobId;
use gleaner_proto::wire::{PoolStatus, SubmitResponse, UserPrio};
use gleaner_station::home::dagman::{DagRmResponse, DagStatus, DagSubmitResponse};
use serde::Serialize;

pub use json::JsonOutput;
pub use table::TableOutput;

/// Which jobs a job list shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobList {
    /// `glean q`: active jobs, with a totals line.
    Queue,
    /// `glean history`: finished jobs, with their exit codes.
    History,
}

/// `glean rm|hold|release`: which action was applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobAction {
    Rm,
    Hold,
    Release,
}

impl JobAction {
    /// The past participle used in sentences (`Job 3.0 held.`).
    pub fn past(self) -> &'static str {
        match self {
            JobAction::Rm => "marked for removal",
            JobAction::Hold => "held",
            JobAction::Release => "released",
        }
    }
}

/// `glean q --analyze JOB`: one job against every station's ad.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub job: JobId,
    pub state: String,
    pub owner: String,
    pub requirements: Option<String>,
    pub concurrency_limits: Vec<String>,
    pub stations: Vec<StationVerdict>,
    pub licences: Vec<LicenceUse>,
}

/// `glean status` without a coordinator: one station's own queue counts.
#[derive(Clone, Debug, Serialize)]
pub struct LocalQueue {
    pub station: String,
    pub idle: usize,
    pub running: usize,
    pub suspended: usize,
    pub held: usize,
}

impl LocalQueue {
    pub fn count(station: &str, jobs: &[JobInfo]) -> Self {
        let n = |k: &str| jobs.iter().filter(|j| j.state.kind().name() == k).count();
        LocalQueue {
            station: station.to_string(),
            idle: n("idle"),
            running: n("running"),
            suspended: n("suspended"),
            held: n("held"),
        }
    }
}

/// `glean watch`: one cluster's jobs by state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClusterProgress {
    pub cluster: u64,
    pub total: usize,
    pub idle: usize,
    pub running: usize,
    pub suspended: usize,
    pub held: usize,
    pub completed: usize,
    pub removed: usize,
}

impl ClusterProgress {
    /// The clusters of `jobs`, in cluster order, counted by state.
    pub fn of(jobs: &[JobInfo]) -> Vec<ClusterProgress> {
        let mut by: std::collections::BTreeMap<u64, ClusterProgress> = Default::default();
        for j in jobs {
            let c = by.entry(j.id.cluster).or_insert_with(|| ClusterProgress {
                cluster: j.id.cluster,
                ..Default::default()
            });
            c.total += 1;
            match j.state.kind().name() {
                "idle" => c.idle += 1,
                "running" => c.running += 1,
                "suspended" => c.suspended += 1,
                "held" => c.held += 1,
                "completed" => c.completed += 1,
                _ => c.removed += 1,
            }
        }
        by.into_values().collect()
    }

    /// Every job completed or removed.
    pub fn done(&self) -> bool {
        self.completed + self.removed == self.total
    }
}

/// `glean q` by default: the queue by cluster, then one page of jobs
/// (issue 15, item 5: `condor_q`'s summary first, never 100 000 rows).
#[derive(Clone, Debug, Serialize)]
pub struct QueuePage {
    pub summary: gleaner_proto::api::QueueSummary,
    pub jobs: Vec<JobInfo>,
    /// 1-based.
    pub page: u64,
    pub pages: u64,
    /// Jobs the pages go through.
    pub total: u64,
}

/// How a command's result reaches the user.
pub trait Output {
    /// Whether `glean q` shows a summary and one page (a table for
    /// people), rather than every job (JSON for programs).
    fn pages(&self) -> bool {
        true
    }
    /// `glean q`: the summary and one page.
    fn queue_page(&self, page: &QueuePage);
    /// `glean submit`.
    fn submitted(&self, resp: &SubmitResponse);
    /// `glean q` and `glean history`.
    fn jobs(&self, jobs: &[JobInfo], list: JobList);
    /// `glean q|history -l`: each job's ClassAd.
    fn job_ads(&self, ads: &[gleaner_classad::Ad]);
    /// `glean q|history -af ATTR…`: per job, the value of each of
    /// `attrs` (attribute names or expressions).
    fn autoformat(&self, attrs: &[String], rows: &[Vec<gleaner_classad::Value>]);
    /// `glean rm|hold|release`.
    fn actions(&self, action: JobAction, resp: &ActionResponse);
    /// `glean q --analyze`.
    fn analysis(&self, a: &Analysis);
    /// `glean status`.
    fn pool(&self, pool: &PoolStatus);
    /// `glean status --long`: each station's machine ClassAd.
    fn machine_ads(&self, ads: &[gleaner_classad::Ad]);
    /// `glean status` when no coordinator is known.
    fn local_queue(&self, q: &LocalQueue);
    /// `glean userprio`.
    fn userprio(&self, up: &UserPrio);
    /// `glean users`: a home's users, their share and use, its limits.
    fn home_users(&self, u: &gleaner_proto::api::HomeUsers);
    /// `glean dag submit`.
    fn dag_submitted(&self, resp: &DagSubmitResponse);
    /// `glean dag status` (all of a user's DAGs).
    fn dags(&self, dags: &[DagStatus]);
    /// `glean dag status ID`.
    fn dag(&self, dag: &DagStatus);
    /// `glean dag rm`.
    fn dag_removed(&self, resp: &DagRmResponse);
    /// `glean watch`: one update of the watched clusters.
    fn progress(&self, clusters: &[ClusterProgress]);
    /// `glean classad eval`: the value in ClassAd syntax.
    fn classad_value(&self, value: &str);
    /// `glean token create`: in a table run, only the token goes to
    /// stdout (so `$(glean token create …)` captures it).
    fn token_issued(&self, issued: &IssuedToken);
    /// `glean token list` (never the tokens themselves).
    fn tokens(&self, tokens: &[TokenRecord], now_secs: u64);
    /// `glean token revoke`.
    fn token_revoked(&self, outcome: &RevokeOutcome);
    /// `glean reserve`.
    fn reserve(&self, report: &crate::reserve::Report);
}

/// The renderer for this invocation.
pub fn for_mode(json: bool) -> Box<dyn Output> {
    if json {
        Box::new(JsonOutput)
    } else {
        Box::new(TableOutput)
    }
}
