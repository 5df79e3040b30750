//! Which jobs a `condor_q`, `condor_history`, `condor_rm`, … command
//! means, as HTCondor's tools take them: bare `CLUSTER` and
//! `CLUSTER.PROC` arguments and owner names (any of them), `-constraint
//! EXPR` (all of them must hold, ANDed with the rest), and by default
//! only the caller's own jobs unless owners, job ids or `-allusers` say
//! otherwise. Also fetching job ads from the station, several at a time.

use super::args::Usage;
use anyhow::Context;
use futures_util::StreamExt;
use gleaner_classad::{Ad, EvalContext, Expr, Value, parse_expr};
use gleaner_proto::api::{JobDetail, JobInfo};
use gleaner_proto::job::JobId;
use gleaner_proto::job_ad::detail_ad;
use gleaner_station::client::{ClientError, StationClient};

/// One restriction argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Id {
    Cluster(u64),
    Job(JobId),
}

/// The restriction list of a command.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub ids: Vec<Id>,
    pub owners: Vec<String>,
    pub constraints: Vec<String>,
    pub all_users: bool,
}

impl Selection {
    /// A bare argument: a cluster, a job id, or an owner's name.
    pub fn bare(&mut self, tool: &str, arg: &str) -> Result<(), Usage> {
        if arg.starts_with(|c: char| c.is_ascii_digit()) {
            self.ids.push(parse_id(tool, arg)?);
        } else {
            self.owners.push(arg.to_string());
        }
        Ok(())
    }

    /// Only the caller's own jobs (HTCondor's `CONDOR_Q_ONLY_MY_JOBS`):
    /// when neither owners, job ids nor `-allusers` were given.
    pub fn only_mine(&self) -> bool {
        !self.all_users && self.ids.is_empty() && self.owners.is_empty()
    }

    /// The constraints, parsed (an error names the one that is not an
    /// expression).
    pub fn exprs(&self, tool: &str) -> Result<Vec<Expr>, Usage> {
        self.constraints
            .iter()
            .map(|c| {
                parse_expr(c)
                    .map_err(|e| Usage::new(format!("{tool}: invalid constraint: {c} ({e})")))
            })
            .collect()
    }

    /// Whether the job's id and owner pass the restriction list.
    pub fn admits(&self, id: JobId, owner: &str) -> bool {
        let id_ok = self.ids.is_empty()
            || self.ids.iter().any(|i| match i {
                Id::Cluster(c) => *c == id.cluster,
                Id::Job(j) => *j == id,
            });
        let owner_ok = self.owners.is_empty() || self.owners.iter().any(|o| o == owner);
        id_ok && owner_ok
    }

    /// Whether the constraints hold in `ad`.
    pub fn holds(exprs: &[Expr], ad: &Ad, now: i64) -> bool {
        exprs.iter().all(|e| selects(&eval(ad, e, now)))
    }
}

/// `12` or `12.3`.
pub fn parse_id(tool: &str, arg: &str) -> Result<Id, Usage> {
    let bad = || {
        Usage::new(format!(
            "{tool}: invalid job id {arg:?}: expected CLUSTER or CLUSTER.PROC"
        ))
    };
    match arg.split_once('.') {
        None => arg.parse().map(Id::Cluster).map_err(|_| bad()),
        Some(_) => arg.parse().map(Id::Job).map_err(|_| bad()),
    }
}

/// HTCondor's `EvalBool`: true, or a non-zero number.
fn selects(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Real(r) => *r != 0.0,
        _ => false,
    }
}

pub fn eval(ad: &Ad, e: &Expr, now: i64) -> Value {
    let mut ctx = EvalContext::new(now);
    ctx.my = Some(ad.clone());
    ctx.target_fallback = false;
    ctx.eval(e)
}

/// Seconds since the epoch, now.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Requests in flight at once when reading many jobs.
const PARALLEL: usize = 16;

/// Each job's detail and ad, in the order of `jobs`; a job gone since it
/// was listed (removed, moved to history) is left out.
pub async fn details(
    client: &StationClient,
    jobs: &[JobInfo],
) -> anyhow::Result<Vec<(JobDetail, Ad)>> {
    let results: Vec<_> = futures_util::stream::iter(jobs.iter().map(|j| {
        let id = j.id.to_string();
        async move { (id.clone(), client.job(&id).await) }
    }))
    .buffered(PARALLEL)
    .collect()
    .await;
    let mut out = Vec::with_capacity(results.len());
    for (id, r) in results {
        match r {
            Ok(d) => {
                let ad = detail_ad(&d);
                out.push((d, ad));
            }
            Err(ClientError::Api { status: 404, .. }) => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot read job {id}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restrictions() {
        let mut s = Selection::default();
        assert!(s.only_mine());
        s.bare("condor_q", "12").unwrap();
        s.bare("condor_q", "13.2").unwrap();
        s.bare("condor_q", "alice").unwrap();
        assert!(!s.only_mine());
        assert!(s.admits(JobId::new(12, 7), "alice"));
        assert!(s.admits(JobId::new(13, 2), "alice"));
        assert!(!s.admits(JobId::new(13, 1), "alice"));
        assert!(!s.admits(JobId::new(12, 0), "bob"));
        assert!(s.bare("condor_q", "12.x").is_err());
        assert!(s.bare("condor_q", "1.2.3").is_err());
    }

    #[test]
    fn constraints_are_evalbool() {
        let ad = Ad::parse("[ JobStatus = 5; Owner = \"alice\" ]").unwrap();
        let s = Selection {
            constraints: vec!["JobStatus == 5".into(), "Owner == \"alice\"".into()],
            ..Default::default()
        };
        assert!(Selection::holds(&s.exprs("q").unwrap(), &ad, 0));
        let s = Selection {
            constraints: vec!["Missing".into()],
            ..Default::default()
        };
        assert!(!Selection::holds(&s.exprs("q").unwrap(), &ad, 0));
        let s = Selection {
            constraints: vec!["JobStatus ==".into()],
            ..Default::default()
        };
        let e = s.exprs("condor_q").unwrap_err();
        assert!(
            e.message.contains("invalid constraint: JobStatus =="),
            "{}",
            e.message
        );
    }
}
