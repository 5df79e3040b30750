//! The schedd's operations (`htcondor2.Schedd`) over the station's user
//! API (`gleaner_station::client`): submitting a description through
//! Gleaner's own submit parser, querying job ads (`gleaner_proto::job_ad`,
//! the ads `glean q -l` shows) with a ClassAd constraint and projection,
//! acting on jobs, and reading the history.
//!
//! The station answers with job records; the ads are built here from
//! them, as the CLI builds them. A query asks for each candidate job's
//! details only when the constraint or projection needs an attribute the
//! job list does not carry, and only for the clusters a constraint such
//! as `ClusterId == 12` allows.

use crate::jobspec::{JobSpec, Target, clusters_of};
use crate::refs;
use futures_util::StreamExt;
use gleaner_classad::{Ad, EvalContext, Expr, Value};
use gleaner_proto::api::{ActionResponse, JobInfo, SubmitBody};
use gleaner_proto::job::{JobDescription, JobId};
use gleaner_proto::job_ad::{detail_ad, job_ad};
use gleaner_proto::submit::{SubmitContext, parse_submit};
use gleaner_proto::wire::PROTOCOL_VERSION;
use gleaner_station::client::{ClientError, JobQuery, StationClient};
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::OnceCell;

/// Why a schedd operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheddError {
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The submit description does not parse (every problem, file:line).
    #[error("{0}")]
    Submit(String),
    /// An action this pool has no way to carry out.
    #[error("{0}")]
    Unsupported(String),
}

/// Job details fetched at once.
const CONCURRENT_DETAILS: usize = 8;

/// Attributes a job's ad takes from the job list alone (`JobInfo`): a
/// query that needs no others reads no job's details.
const LIST_ATTRS: &[&str] = &[
    "mytype",
    "targettype",
    "clusterid",
    "procid",
    "jobstatus",
    "owner",
    "user",
    "qdate",
    "enteredcurrentstatus",
    "numjobstarts",
    "jobstartdate",
    "jobcurrentstartdate",
    "completiondate",
    "remotehost",
    "lastremotehost",
    "holdreason",
    "holdreasoncode",
    "holdreasonsubcode",
    "exitbysignal",
    "exitcode",
    "exitsignal",
    "numstartfailures",
    "numjobcompletions",
    "deferraltime",
];

/// A job-ad query.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pub constraint: Option<Expr>,
    /// Attributes to return (empty: all).
    pub projection: Vec<String>,
    /// At most this many ads.
    pub limit: Option<usize>,
}

impl Query {
    /// Whether the job list's attributes answer this query.
    fn list_suffices(&self) -> bool {
        if self.projection.is_empty() {
            return false;
        }
        let mut names: BTreeSet<String> = self
            .projection
            .iter()
            .map(|p| p.to_ascii_lowercase())
            .collect();
        if let Some(c) = &self.constraint {
            for n in refs::names(c) {
                let bare = n.rsplit('.').next().unwrap_or(&n).to_ascii_lowercase();
                names.insert(bare);
            }
        }
        names.iter().all(|n| LIST_ATTRS.contains(&n.as_str()))
    }
}

/// When the history stops (`Schedd.history(since=…)`): at this cluster,
/// this job, or the first ad that makes the expression true (which is
/// not returned).
#[derive(Clone, Debug)]
pub enum Since {
    Cluster(u64),
    Job(JobId),
    Expr(Expr),
}

/// What `Schedd.act` reports (HTCondor's result ad).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActTotals {
    pub error: u64,
    pub success: u64,
    pub not_found: u64,
    pub bad_status: u64,
    pub already_done: u64,
    pub permission_denied: u64,
    pub job_ads: u64,
    pub changed_ads: u64,
}

impl ActTotals {
    /// HTCondor's attribute names.
    pub fn to_ad(self) -> Ad {
        let mut ad = Ad::new();
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        ad.insert_int("TotalError", int(self.error));
        ad.insert_int("TotalSuccess", int(self.success));
        ad.insert_int("TotalNotFound", int(self.not_found));
        ad.insert_int("TotalBadStatus", int(self.bad_status));
        ad.insert_int("TotalAlreadyDone", int(self.already_done));
        ad.insert_int("TotalPermissionDenied", int(self.permission_denied));
        ad.insert_int("TotalJobAds", int(self.job_ads));
        ad.insert_int("TotalChangedAds", int(self.changed_ads));
        ad
    }

    fn add_response(&mut self, r: &ActionResponse, only: Option<&BTreeSet<JobId>>) {
        let counted = |id: &JobId| only.is_none_or(|o| o.contains(id));
        let changed = r.changed.iter().filter(|j| counted(j)).count() as u64;
        let skipped = r.skipped.iter().filter(|(j, _)| counted(j)).count() as u64;
        self.success += changed;
        self.changed_ads += changed;
        self.bad_status += skipped;
        self.job_ads += changed + skipped;
    }

    fn add_failure(&mut self, e: &ClientError) -> Result<(), ()> {
        match e.status() {
            Some(404) => self.not_found += 1,
            Some(401 | 403) => self.permission_denied += 1,
            Some(_) => self.error += 1,
            // The station could not be reached: the call fails.
            None => return Err(()),
        }
        Ok(())
    }
}

/// `Schedd.act`'s actions that the station carries out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Hold,
    Release,
    Remove,
}

impl Action {
    /// From `htcondor2.JobAction`'s numbers; the others (vacate, suspend,
    /// continue) are the execute side's and no user endpoint does them.
    pub fn from_code(code: i64) -> Result<Action, ScheddError> {
        match code {
            1 => Ok(Action::Hold),
            2 => Ok(Action::Release),
            3 | 4 => Ok(Action::Remove),
            5 | 6 => Err(ScheddError::Unsupported(
                "JobAction.Vacate: a Gleaner job is vacated by its host's owner policy or by an \
                 administrator (glean vacate), not by its submitter"
                    .into(),
            )),
            8 | 9 => Err(ScheddError::Unsupported(
                "JobAction.Suspend/Continue: a Gleaner guest is suspended and resumed by its \
                 host's eviction ladder when the owner comes and goes, not on request"
                    .into(),
            )),
            n => Err(ScheddError::Unsupported(format!("unknown job action {n}"))),
        }
    }
}

/// `POST /v1/jobs/{id}/edit`'s body (the station's `condor_qedit`
/// endpoint): attributes and their new values as ClassAd expressions.
#[derive(Clone, Debug, serde::Serialize)]
struct EditRequest<'a> {
    attrs: Vec<(&'a str, &'a str)>,
    dry_run: bool,
}

/// Its answer: the jobs edited.
#[derive(Clone, Debug, serde::Deserialize)]
struct EditResponse {
    jobs: Vec<JobId>,
}

/// Whether a constraint's value selects an ad (HTCondor's `EvalBool`:
/// true, or a non-zero number).
fn selects(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Real(r) => *r != 0.0,
        _ => false,
    }
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn holds(ad: &Ad, e: &Expr, now: i64) -> bool {
    let ctx = EvalContext::new(now)
        .with_my(ad)
        .with_target_fallback(false);
    selects(&ctx.eval(e))
}

/// `ad` cut down to `projection` (names as the ad spells them); all of it
/// when the projection is empty.
pub fn project(ad: Ad, projection: &[String]) -> Ad {
    if projection.is_empty() {
        return ad;
    }
    let mut out = Ad::new();
    for p in projection {
        if let Some(e) = ad.get(p) {
            let name = ad
                .iter()
                .map(|(n, _)| n)
                .find(|n| n.eq_ignore_ascii_case(p))
                .unwrap_or(p);
            out.insert_expr(name, e.clone());
        }
    }
    out
}

/// The ad of a job from its list entry alone (the attributes of
/// [`LIST_ATTRS`] are right; the others are not to be read).
fn list_ad(info: &JobInfo) -> Ad {
    job_ad(info, &JobDescription::new(info.owner.clone(), ""), &[])
}

/// A submission that was queued.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub cluster: u64,
    pub first_proc: u32,
    pub num_procs: u32,
    /// The first job's ad as the station queued it.
    pub first_ad: Ad,
    /// What the parser warned about.
    pub warnings: Vec<String>,
}

/// One station's schedd.
pub struct Schedd {
    pub client: StationClient,
    /// Who the station takes us for (asked once).
    me: OnceCell<String>,
}

impl Schedd {
    pub fn new(client: StationClient) -> Schedd {
        Schedd {
            client,
            me: OnceCell::new(),
        }
    }

    /// The user name the station queues our jobs under.
    pub async fn me(&self) -> Result<String, ClientError> {
        self.me
            .get_or_try_init(|| async { Ok(self.client.whoami().await?.name) })
            .await
            .cloned()
    }

    /// Parses `text` with Gleaner's submit parser and queues it, with
    /// `submit_dir` as the jobs' initial directory.
    pub async fn submit(
        &self,
        text: &str,
        ctx: &SubmitContext,
        submit_dir: &str,
    ) -> Result<Submitted, ScheddError> {
        let mut submission =
            parse_submit(text, ctx).map_err(|e| ScheddError::Submit(e.to_string()))?;
        let warnings = submission
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .collect();
        submission.owner = self.me().await?;
        let body = SubmitBody {
            protocol: PROTOCOL_VERSION,
            submission,
            submit_dir: Some(submit_dir.to_string()),
        };
        let resp = self.client.submit(&body).await?;
        let first = resp
            .jobs
            .first()
            .copied()
            .unwrap_or(JobId::new(resp.cluster, 0));
        let first_ad = match self.client.job(&first.to_string()).await {
            Ok(d) => detail_ad(&d),
            Err(_) => Ad::new(),
        };
        Ok(Submitted {
            cluster: resp.cluster,
            first_proc: first.proc,
            num_procs: u32::try_from(resp.jobs.len()).unwrap_or(u32::MAX),
            first_ad,
            warnings,
        })
    }

    /// The full ads of `jobs`, in order; jobs gone meanwhile are left out.
    async fn details(&self, jobs: &[JobInfo]) -> Result<Vec<Ad>, ClientError> {
        let ids: Vec<String> = jobs.iter().map(|j| j.id.to_string()).collect();
        let client = &self.client;
        let fetched: Vec<Result<Option<Ad>, ClientError>> = futures_util::stream::iter(ids)
            .map(|id| async move {
                match client.job(&id).await {
                    Ok(d) => Ok(Some(detail_ad(&d))),
                    Err(ClientError::Api { status: 404, .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .buffered(CONCURRENT_DETAILS)
            .collect()
            .await;
        let mut out = Vec::with_capacity(fetched.len());
        for f in fetched {
            if let Some(ad) = f? {
                out.push(ad);
            }
        }
        Ok(out)
    }

    /// Ads of `jobs` (in order) that `q` selects, at most `q.limit`,
    /// projected; `stop` ends the walk at the first ad that makes it true
    /// (not returned).
    async fn select(
        &self,
        jobs: &[JobInfo],
        q: &Query,
        stop: Option<&Expr>,
    ) -> Result<Vec<Ad>, ClientError> {
        let now = now_unix();
        let limit = q.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let from_list = q.list_suffices()
            && stop.is_none_or(|s| {
                refs::names(s)
                    .iter()
                    .all(|n| LIST_ATTRS.contains(&n.to_ascii_lowercase().as_str()))
            });
        // Details in chunks, so that a limit stops the fetching early.
        for chunk in jobs.chunks(CONCURRENT_DETAILS * 4) {
            let ads = if from_list {
                chunk.iter().map(list_ad).collect()
            } else {
                self.details(chunk).await?
            };
            for ad in ads {
                if stop.is_some_and(|s| holds(&ad, s, now)) {
                    return Ok(out);
                }
                if q.constraint.as_ref().is_none_or(|c| holds(&ad, c, now)) {
                    out.push(project(ad, &q.projection));
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The jobs in the queue (every user's), in queue order, narrowed to
    /// the clusters `constraint` allows.
    async fn queue_jobs(&self, constraint: Option<&Expr>) -> Result<Vec<JobInfo>, ClientError> {
        let mut jobs = self.client.jobs(&JobQuery::default()).await?;
        if let Some(clusters) = constraint.and_then(clusters_of) {
            jobs.retain(|j| clusters.contains(&j.id.cluster));
        }
        jobs.sort_by_key(|j| j.id);
        Ok(jobs)
    }

    /// `Schedd.query`: ads of the jobs in the queue that `q` selects.
    pub async fn query(&self, q: &Query) -> Result<Vec<Ad>, ClientError> {
        let jobs = self.queue_jobs(q.constraint.as_ref()).await?;
        self.select(&jobs, q, None).await
    }

    /// `Schedd.history`: finished jobs, most recent first.
    pub async fn history(&self, q: &Query, since: Option<&Since>) -> Result<Vec<Ad>, ClientError> {
        let mut jobs = self.client.history(None).await?;
        let mut stop_expr = None;
        match since {
            Some(Since::Cluster(c)) => {
                if let Some(at) = jobs.iter().position(|j| j.id.cluster == *c) {
                    jobs.truncate(at);
                }
            }
            Some(Since::Job(id)) => {
                if let Some(at) = jobs.iter().position(|j| j.id == *id) {
                    jobs.truncate(at);
                }
            }
            Some(Since::Expr(e)) => stop_expr = Some(e),
            None => {}
        }
        if let Some(clusters) = q.constraint.as_ref().and_then(clusters_of) {
            jobs.retain(|j| clusters.contains(&j.id.cluster));
        }
        self.select(&jobs, q, stop_expr).await
    }

    async fn act_on(
        &self,
        action: Action,
        id: &str,
        reason: &str,
    ) -> Result<ActionResponse, ClientError> {
        let reason = Some(reason);
        match action {
            Action::Hold => self.client.hold(id, reason).await,
            Action::Release => self.client.release(id, reason).await,
            Action::Remove => self.client.rm(id, reason).await,
        }
    }

    /// The jobs and clusters `spec` names, and for a constraint the jobs
    /// it matched (what totals count): a cluster whose every queued job
    /// matched is named as one (one transaction at the station).
    async fn targets(
        &self,
        spec: &JobSpec,
    ) -> Result<(Vec<Target>, Option<BTreeSet<JobId>>), ClientError> {
        let c = match spec {
            JobSpec::Targets(t) => return Ok((t.clone(), None)),
            JobSpec::Constraint(c) => c,
        };
        let jobs = self.queue_jobs(Some(c)).await?;
        let q = Query {
            constraint: Some(c.clone()),
            projection: vec!["ClusterId".into(), "ProcId".into()],
            limit: None,
        };
        let matched: BTreeSet<JobId> = self
            .select(&jobs, &q, None)
            .await?
            .iter()
            .filter_map(|ad| {
                let int = |n: &str| match ad.get(n) {
                    Some(Expr::Lit(gleaner_classad::Literal::Int(i))) => Some(*i),
                    _ => None,
                };
                Some(JobId::new(
                    u64::try_from(int("ClusterId")?).ok()?,
                    u32::try_from(int("ProcId")?).ok()?,
                ))
            })
            .collect();
        let mut per_cluster: BTreeMap<u64, usize> = BTreeMap::new();
        for j in &jobs {
            *per_cluster.entry(j.id.cluster).or_default() += 1;
        }
        let mut matched_per: BTreeMap<u64, Vec<JobId>> = BTreeMap::new();
        for id in &matched {
            matched_per.entry(id.cluster).or_default().push(*id);
        }
        let mut targets = Vec::new();
        for (cluster, ids) in matched_per {
            if per_cluster.get(&cluster) == Some(&ids.len()) {
                targets.push(Target::Cluster(cluster));
            } else {
                targets.extend(ids.into_iter().map(Target::Job));
            }
        }
        Ok((targets, Some(matched)))
    }

    /// `Schedd.act`.
    pub async fn act(
        &self,
        action: Action,
        spec: &JobSpec,
        reason: &str,
    ) -> Result<ActTotals, ClientError> {
        let mut totals = ActTotals::default();
        let (targets, only) = self.targets(spec).await?;
        for t in targets {
            match self.act_on(action, &t.path_id(), reason).await {
                Ok(r) => totals.add_response(&r, only.as_ref()),
                Err(e) => {
                    if totals.add_failure(&e).is_err() {
                        return Err(e);
                    }
                }
            }
        }
        Ok(totals)
    }

    /// `Schedd.edit`: sets `attr` to the expression `value` in the jobs of
    /// `spec` (through the station's `condor_qedit` endpoint); the number
    /// of jobs edited.
    pub async fn edit(&self, spec: &JobSpec, attr: &str, value: &str) -> Result<u64, ScheddError> {
        let (targets, _) = self.targets(spec).await?;
        let body = EditRequest {
            attrs: vec![(attr, value)],
            dry_run: false,
        };
        let mut edited = 0u64;
        for t in targets {
            let path = format!("/v1/jobs/{}/edit", t.path_id());
            match self.client.post_json::<_, EditResponse>(&path, &body).await {
                Ok(r) => edited += r.jobs.len() as u64,
                // A station from before the endpoint: no such route.
                Err(ClientError::Api { status: 404, body })
                    if matches!(body.error.message.trim(), "" | "no such endpoint") =>
                {
                    return Err(ScheddError::Unsupported(
                        "Schedd.edit: this station has no endpoint for editing queued jobs \
                         (condor_qedit); update it"
                            .into(),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(edited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_classad::parse_expr;

    #[test]
    fn the_job_list_answers_queries_on_its_attributes() {
        let q = |c: &str, p: &[&str]| Query {
            constraint: Some(parse_expr(c).unwrap()),
            projection: p.iter().map(|s| s.to_string()).collect(),
            limit: None,
        };
        assert!(q("ClusterId == 3", &["ClusterId", "ProcId", "JobStatus"]).list_suffices());
        assert!(q("Owner == \"a\" && MY.JobStatus == 5", &["procid"]).list_suffices());
        assert!(!q("ClusterId == 3", &["Args"]).list_suffices());
        assert!(!q("Cmd == \"x\"", &["ProcId"]).list_suffices());
        // No projection: every attribute, so the details.
        assert!(!q("true", &[]).list_suffices());
    }

    #[test]
    fn projection_keeps_the_ads_spelling() {
        let ad = Ad::parse_new("[ ClusterId = 1; ProcId = 2; Cmd = \"x\" ]").unwrap();
        let p = project(ad.clone(), &["procid".into(), "Missing".into()]);
        assert_eq!(p.to_old_syntax(), "ProcId = 2\n");
        assert_eq!(project(ad.clone(), &[]), ad);
    }

    #[test]
    fn act_totals_count_only_matched_jobs() {
        let mut t = ActTotals::default();
        let r = ActionResponse {
            changed: vec![JobId::new(1, 0), JobId::new(1, 1)],
            skipped: vec![(JobId::new(1, 2), "completed".into())],
        };
        let only = BTreeSet::from([JobId::new(1, 0)]);
        t.add_response(&r, Some(&only));
        assert_eq!((t.success, t.bad_status, t.job_ads), (1, 0, 1));
        t.add_response(&r, None);
        assert_eq!((t.success, t.bad_status, t.job_ads), (3, 1, 4));
        let ad = t.to_ad();
        assert_eq!(
            ad.get("TotalSuccess")
                .map(gleaner_classad::unparse_expr)
                .unwrap(),
            "3"
        );
        assert!(Action::from_code(5).is_err());
        assert_eq!(Action::from_code(4).unwrap(), Action::Remove);
    }
}
