//! Which jobs a call names: the `job_spec` of `Schedd.act`, `edit` and
//! `retrieve` (`"12.3"`, `"12"`, a list of those, a cluster number or a
//! constraint), read as HTCondor's bindings read it, and what a
//! constraint says about the clusters it can match (so a query asks the
//! station for those clusters' jobs only).

use gleaner_classad::{BinOp, Expr, Literal, parse_expr};
use gleaner_proto::job::JobId;
use std::collections::BTreeSet;

/// One job or one whole cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Job(JobId),
    Cluster(u64),
}

impl Target {
    /// The id as the station's paths take it (`12.3` or `12`).
    pub fn path_id(&self) -> String {
        match self {
            Target::Job(j) => j.to_string(),
            Target::Cluster(c) => c.to_string(),
        }
    }
}

/// A `job_spec`.
#[derive(Clone, Debug, PartialEq)]
pub enum JobSpec {
    /// Named jobs and clusters.
    Targets(Vec<Target>),
    /// Every job whose ad makes this true.
    Constraint(Expr),
}

/// Why a job_spec is unusable (HTCondor raises `ValueError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `C.P` or `C`.
fn target(s: &str) -> Option<Target> {
    let s = s.trim();
    if let Some((c, p)) = s.split_once('.') {
        if digits(c) && digits(p) {
            return s.parse().ok().map(Target::Job);
        }
        return None;
    }
    if digits(s) {
        return s.parse().ok().map(Target::Cluster);
    }
    None
}

/// A string job_spec: a job id, a cluster id, or a constraint.
pub fn from_str(s: &str) -> Result<JobSpec, SpecError> {
    if let Some(t) = target(s) {
        return Ok(JobSpec::Targets(vec![t]));
    }
    parse_expr(s).map(JobSpec::Constraint).map_err(|_| {
        SpecError(
            "The job_spec string must be a clusterID[.procID] or the string form of an ExprTree."
                .into(),
        )
    })
}

/// A list job_spec: every element a job or cluster id.
pub fn from_list(items: &[String]) -> Result<JobSpec, SpecError> {
    items
        .iter()
        .map(|s| {
            target(s).ok_or_else(|| {
                SpecError(
                    "All elements of the job_spec list must be strings of the form \
                     clusterID[.procID]"
                        .into(),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(JobSpec::Targets)
}

fn is_attr(e: &Expr, name: &str) -> bool {
    matches!(e.strip_parens(), Expr::Attr { scope: None | Some(gleaner_classad::Scope::My), name: n, .. } if n.eq_ignore_ascii_case(name))
}

fn int_lit(e: &Expr) -> Option<u64> {
    match e.strip_parens() {
        Expr::Lit(Literal::Int(i)) => u64::try_from(*i).ok(),
        _ => None,
    }
}

/// The clusters a constraint can match, when it says (`ClusterId == 12`,
/// `ClusterId =?= 12 && ProcId >= 2`, `ClusterId == 1 || ClusterId ==
/// 2`); `None` when any cluster may match.
pub fn clusters_of(e: &Expr) -> Option<BTreeSet<u64>> {
    match e.strip_parens() {
        Expr::Binary(BinOp::Eq | BinOp::Is, a, b) => {
            let (a, b) = (a.as_ref(), b.as_ref());
            let c = if is_attr(a, "ClusterId") {
                int_lit(b)
            } else if is_attr(b, "ClusterId") {
                int_lit(a)
            } else {
                None
            }?;
            Some(BTreeSet::from([c]))
        }
        Expr::Binary(BinOp::And, a, b) => match (clusters_of(a), clusters_of(b)) {
            (Some(x), Some(y)) => Some(x.intersection(&y).copied().collect()),
            (Some(x), None) | (None, Some(x)) => Some(x),
            (None, None) => None,
        },
        Expr::Binary(BinOp::Or, a, b) => {
            let (x, y) = (clusters_of(a)?, clusters_of(b)?);
            Some(x.union(&y).copied().collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_specs_as_htcondor_reads_them() {
        assert_eq!(
            from_str("12.3").unwrap(),
            JobSpec::Targets(vec![Target::Job(JobId::new(12, 3))])
        );
        assert_eq!(
            from_str("12").unwrap(),
            JobSpec::Targets(vec![Target::Cluster(12)])
        );
        assert!(matches!(
            from_str("Owner == \"a\"").unwrap(),
            JobSpec::Constraint(_)
        ));
        assert!(from_str("1 +").is_err());
        assert_eq!(
            from_list(&["1.0".into(), "2".into()]).unwrap(),
            JobSpec::Targets(vec![Target::Job(JobId::new(1, 0)), Target::Cluster(2)])
        );
        assert!(from_list(&["1.x".into()]).is_err());
        assert_eq!(Target::Cluster(4).path_id(), "4");
    }

    fn clusters(s: &str) -> Option<Vec<u64>> {
        clusters_of(&parse_expr(s).unwrap()).map(|c| c.into_iter().collect())
    }

    #[test]
    fn constraints_narrow_the_clusters() {
        assert_eq!(clusters("ClusterId == 12"), Some(vec![12]));
        assert_eq!(clusters("clusterid=?=12 && ProcID >= 2"), Some(vec![12]));
        assert_eq!(
            clusters("(ClusterId == 1) || (12 == ClusterId)"),
            Some(vec![1, 12])
        );
        assert_eq!(clusters("ClusterId == 1 || Owner == \"x\""), None);
        assert_eq!(clusters("ClusterId == 1 && ClusterId == 2"), Some(vec![]));
        assert_eq!(clusters("TARGET.ClusterId == 1"), None);
        assert_eq!(clusters("true"), None);
    }
}
