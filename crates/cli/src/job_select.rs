//! HTCondor's selection and formatting options of `glean q` and
//! `glean history`: `-constraint EXPR` (a ClassAd expression over each
//! job's ad), `-af ATTR…` (autoformat: those attributes or expressions,
//! one job a line) and `-l` (the whole job ad). The ads come from
//! [`gleaner_proto::job_ad`], the one mapping to HTCondor's attribute names.

use crate::output::{JobList, Output};
use anyhow::Context;
use clap::Args;
use gleaner_classad::{Ad, EvalContext, Expr, Value, parse_expr};
use gleaner_proto::api::{JobDetail, JobInfo};
use gleaner_proto::job_ad::detail_ad;
use gleaner_station::client::{ClientError, StationClient};
use std::ffi::OsString;

/// The options, spelled `--constraint`, `--af`, `--long`/`-l` or, as
/// HTCondor users type them, `-constraint`, `-af`, `-long` (see
/// [`htcondor_spellings`]).
#[derive(Args, Debug, Clone, Default)]
pub struct AdArgs {
    /// Only jobs whose job ad makes EXPR true (condor_q -constraint), e.g.
    /// 'JobStatus == 5 && Owner == "alice"'. HTCondor attribute names.
    /// Given more than once, every one must hold.
    #[arg(long, value_name = "EXPR")]
    pub constraint: Vec<String>,
    /// Print these attributes (or expressions) of each job's ad, space
    /// separated, one job a line (condor_q -af).
    #[arg(long = "af", visible_alias = "autoformat", value_name = "ATTR", num_args = 1..)]
    pub af: Vec<String>,
    /// Print each job's whole ClassAd (condor_q -l).
    #[arg(short = 'l', long = "long")]
    pub long: bool,
}

impl AdArgs {
    pub(crate) fn active(&self) -> bool {
        !self.constraint.is_empty() || !self.af.is_empty() || self.long
    }
}

/// Rewrites HTCondor's single-dash long options (`-constraint`, `-af`,
/// `-long`, `-allusers`, …) into this command line's `--` form, up to a
/// lone `--`; everything else is passed through unchanged.
pub fn htcondor_spellings(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut done = false;
    args.into_iter()
        .map(|a| {
            if done {
                return a;
            }
            let new = match a.to_str() {
                Some("--") => {
                    done = true;
                    None
                }
                Some("-constraint" | "-const") => Some("--constraint"),
                Some("-af" | "-autoformat") => Some("--af"),
                Some("-long") => Some("--long"),
                Some("-allusers") => Some("--all"),
                _ => None,
            };
            new.map_or(a, OsString::from)
        })
        .collect()
}

/// Whether a constraint's value selects the job: HTCondor's `EvalBool`
/// (true, or a non-zero number).
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

fn eval(ad: &Ad, e: &Expr, now: i64) -> Value {
    let mut ctx = EvalContext::new(now);
    ctx.my = Some(ad.clone());
    // A job ad stands alone: no match partner to fall back to.
    ctx.target_fallback = false;
    ctx.eval(e)
}

fn parse(what: &str, text: &str) -> anyhow::Result<Expr> {
    parse_expr(text).with_context(|| format!("invalid {what} expression {text:?}"))
}

/// Prints `jobs` as `args` ask: the usual table when no option is given,
/// else each job's ad (fetched from the station) filtered by the
/// constraint, then printed whole (`-l`), as columns (`-af`) or as the
/// table of the jobs that matched.
pub fn print_jobs(
    rt: &tokio::runtime::Runtime,
    client: &StationClient,
    jobs: Vec<JobInfo>,
    args: &AdArgs,
    list: JobList,
    out: &dyn Output,
) -> anyhow::Result<()> {
    if !args.active() {
        out.jobs(&jobs, list);
        return Ok(());
    }
    // Every expression is checked before anything is fetched.
    let constraints = args
        .constraint
        .iter()
        .map(|c| parse("-constraint", c))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let columns = args
        .af
        .iter()
        .map(|a| parse("-af", a))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let now = now_unix();
    let mut selected: Vec<(JobDetail, Ad)> = Vec::new();
    for j in &jobs {
        let d = match rt.block_on(client.job(&j.id.to_string())) {
            Ok(d) => d,
            // Gone between the listing and now (e.g. removed): not shown.
            Err(ClientError::Api { status: 404, .. }) => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot read job {}", j.id)),
        };
        let ad = detail_ad(&d);
        if constraints.iter().all(|c| selects(&eval(&ad, c, now))) {
            selected.push((d, ad));
        }
    }
    if args.long {
        let ads: Vec<Ad> = selected.into_iter().map(|(_, ad)| ad).collect();
        out.job_ads(&ads);
    } else if !columns.is_empty() {
        let rows: Vec<Vec<Value>> = selected
            .iter()
            .map(|(_, ad)| columns.iter().map(|c| eval(ad, c, now)).collect())
            .collect();
        out.autoformat(&args.af, &rows);
    } else {
        let infos: Vec<JobInfo> = selected.into_iter().map(|(d, _)| d.job).collect();
        out.jobs(&infos, list);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_dash_spellings() {
        let a = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            htcondor_spellings(a(&[
                "glean",
                "q",
                "-constraint",
                "X",
                "-af",
                "A",
                "B",
                "-l"
            ])),
            a(&["glean", "q", "--constraint", "X", "--af", "A", "B", "-l"])
        );
        assert_eq!(
            htcondor_spellings(a(&["glean", "--", "-af"])),
            a(&["glean", "--", "-af"])
        );
    }

    #[test]
    fn constraint_truth_is_evalbool() {
        assert!(selects(&Value::Bool(true)));
        assert!(selects(&Value::Int(2)));
        assert!(!selects(&Value::Undefined));
        assert!(!selects(&Value::Str("true".into())));
    }
}
