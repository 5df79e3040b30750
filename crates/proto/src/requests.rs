//! A job's resource requests — `request_cpus`, `request_memory`,
//! `request_disk`, `request_gpus` — and its GPU constraint `require_gpus`,
//! as HTCondor has them: a constant, or a ClassAd expression kept as
//! written in the job ad (`RequestMemory = ifThenElse(MemoryUsage =!=
//! undefined, MemoryUsage * 2, 1024)`, `RequestCpus = Cpus`) and evaluated
//! against each machine when the job is matched, as HTCondor's negotiator
//! and startd evaluate them.
//!
//! One function writes them into a job ClassAd ([`insert`]: the job ad of
//! `glean q -l` and the class ad the matchmaker matches both use it), and
//! one evaluates them against a machine ([`amounts`]): the fit check (the
//! coordinator's and the host's admission) and the starter's limits take
//! their numbers from it. Memory is in MiB, disk in KiB, as in HTCondor.

use crate::job::JobDescription;
use crate::matchmaking::JobClass;
use gleaner_classad::{Ad, EvalContext, Value};
use serde::{Deserialize, Serialize};

/// Requests written as expressions, by resource; `None` where the request
/// is the constant beside it (or none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestExprs {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<String>,
    /// `require_gpus` (with `gpus_minimum_*` folded in, as HTCondor folds
    /// them): what each GPU given to the job must be, evaluated in each GPU's
    /// ad of the machine (`AvailableGPUs`, `crate::gpus`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub require_gpus: Option<String>,
}

impl RequestExprs {
    /// No expression at all: every request is a constant.
    pub fn is_empty(&self) -> bool {
        *self == RequestExprs::default()
    }

    /// The expressions, for scanning what they refer to.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        [
            &self.cpus,
            &self.memory,
            &self.disk,
            &self.gpus,
            &self.require_gpus,
        ]
        .into_iter()
        .flatten()
        .map(String::as_str)
    }
}

/// One job's requests: the constants, and the expressions that replace
/// them.
#[derive(Clone, Copy, Debug)]
pub struct Requests<'a> {
    pub cpus: u32,
    pub memory_mb: Option<u64>,
    pub disk_kb: Option<u64>,
    pub gpus: u32,
    pub exprs: &'a RequestExprs,
}

impl<'a> Requests<'a> {
    /// A job's requests.
    pub fn of(d: &'a JobDescription) -> Self {
        Requests {
            cpus: d.request_cpus,
            memory_mb: d.request_memory_mb,
            disk_kb: d.request_disk_kb,
            gpus: d.request_gpus,
            exprs: &d.request_exprs,
        }
    }

    /// A job class's requests (every job of the class has them).
    pub fn of_class(c: &'a JobClass) -> Self {
        Requests {
            cpus: c.request_cpus,
            memory_mb: c.request_memory_mb,
            disk_kb: c.request_disk_kb,
            gpus: c.request_gpus,
            exprs: &c.request_exprs,
        }
    }
}

/// `expr` as an expression, or as a string when it does not parse (so
/// that it still shows, and matches nothing).
fn insert_expr(ad: &mut Ad, name: &str, expr: &str) {
    if ad.insert(name, expr).is_err() {
        ad.insert_str(name, expr);
    }
}

/// Writes the requests into a job ClassAd with HTCondor's names:
/// `RequestCpus` (always, at least 1), `RequestMemory` and `RequestDisk`
/// (when requested), `RequestGPUs` (when GPUs are requested) and
/// `RequireGPUs`; an expression as written, a constant as a number.
pub fn insert(ad: &mut Ad, r: Requests<'_>) {
    let e = r.exprs;
    match &e.cpus {
        Some(x) => insert_expr(ad, "RequestCpus", x),
        None => ad.insert_int("RequestCpus", i64::from(r.cpus.max(1))),
    }
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    for (name, expr, constant) in [
        ("RequestMemory", &e.memory, r.memory_mb),
        ("RequestDisk", &e.disk, r.disk_kb),
    ] {
        match (expr, constant) {
            (Some(x), _) => insert_expr(ad, name, x),
            (None, Some(v)) => ad.insert_int(name, int(v)),
            (None, None) => {}
        }
    }
    match &e.gpus {
        Some(x) => insert_expr(ad, "RequestGPUs", x),
        None if r.gpus > 0 => ad.insert_int("RequestGPUs", i64::from(r.gpus)),
        None => {}
    }
    if let Some(x) = &e.require_gpus {
        insert_expr(ad, "RequireGPUs", x);
    }
}

/// What one job takes of one machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amounts {
    pub cpus: u32,
    pub memory_mb: Option<u64>,
    pub disk_kb: Option<u64>,
    pub gpus: u32,
}

/// A request whose expression gives no amount on a machine (undefined, or
/// not a number), and what it gave.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{attr} is {value} here")]
pub struct NoAmount {
    pub attr: String,
    pub value: String,
}

/// A number of units from a value, as HTCondor's integer evaluation reads
/// it (a real is truncated, a boolean is 0 or 1, below zero is zero).
fn units(v: &Value) -> Option<u64> {
    let n = match v {
        Value::Int(i) => *i as f64,
        Value::Real(r) if r.is_finite() => *r,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => return None,
    };
    Some(if n <= 0.0 {
        0
    } else {
        n.trunc().min(u64::MAX as f64) as u64
    })
}

/// The requests' amounts on the machine whose ad is `machine`, with the
/// job's ad `job_ad` (written by [`insert`]) as `MY`, at UNIX second
/// `now_unix`. Constants are taken as they are without reading `machine`.
pub fn amounts(
    r: Requests<'_>,
    job_ad: &Ad,
    machine: &Ad,
    now_unix: i64,
) -> Result<Amounts, NoAmount> {
    let e = r.exprs;
    let mut a = Amounts {
        cpus: r.cpus.max(1),
        memory_mb: r.memory_mb,
        disk_kb: r.disk_kb,
        gpus: r.gpus,
    };
    if e.cpus.is_none() && e.memory.is_none() && e.disk.is_none() && e.gpus.is_none() {
        return Ok(a);
    }
    let ctx = EvalContext::new(now_unix)
        .with_my(job_ad)
        .with_target(machine);
    let eval = |attr: &str| -> Result<u64, NoAmount> {
        let v = ctx.eval_attr(attr);
        units(&v).ok_or_else(|| NoAmount {
            attr: attr.to_string(),
            value: v.unparse(),
        })
    };
    if e.cpus.is_some() {
        a.cpus = u32::try_from(eval("RequestCpus")?)
            .unwrap_or(u32::MAX)
            .max(1);
    }
    if e.memory.is_some() {
        a.memory_mb = Some(eval("RequestMemory")?);
    }
    if e.disk.is_some() {
        a.disk_kb = Some(eval("RequestDisk")?);
    }
    if e.gpus.is_some() {
        a.gpus = u32::try_from(eval("RequestGPUs")?).unwrap_or(u32::MAX);
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(exprs: RequestExprs) -> JobDescription {
        let mut d = JobDescription::new("alice", "/bin/true");
        d.request_exprs = exprs;
        d
    }

    fn ad_of(d: &JobDescription) -> Ad {
        let mut ad = Ad::new();
        insert(&mut ad, Requests::of(d));
        ad
    }

    #[test]
    fn expressions_are_evaluated_against_the_machine() {
        let d = job(RequestExprs {
            cpus: Some("Cpus > 8 ? 8 : Cpus".into()),
            memory: Some("ifThenElse(MemoryUsage =!= undefined, MemoryUsage * 2, 1024)".into()),
            disk: Some("TARGET.Disk / 2".into()),
            gpus: Some("countMatches(RequireGPUs, AvailableGPUs) >= 1 ? 1 : 0".into()),
            require_gpus: Some("Capability > 4".into()),
        });
        let job_ad = ad_of(&d);
        let mut m = Ad::new();
        m.insert_int("Cpus", 12);
        m.insert_int("Disk", 1001);
        m.insert("GPUs_GPU_a", "[ Capability = 7.5 ]").unwrap();
        m.insert("AvailableGPUs", "{ GPUs_GPU_a }").unwrap();
        let a = amounts(Requests::of(&d), &job_ad, &m, 0).unwrap();
        assert_eq!(
            a,
            Amounts {
                cpus: 8,
                memory_mb: Some(1024),
                disk_kb: Some(500),
                gpus: 1
            }
        );
        // A machine without GPUs: the job asks for none there.
        let mut plain = Ad::new();
        plain.insert_int("Cpus", 2);
        plain.insert_int("Disk", 10);
        let a = amounts(Requests::of(&d), &job_ad, &plain, 0).unwrap();
        assert_eq!((a.cpus, a.gpus), (2, 0));
        // A request that is no number is refused with what it gave.
        let bad = job(RequestExprs {
            memory: Some("NoSuchAttr".into()),
            ..Default::default()
        });
        assert_eq!(
            amounts(Requests::of(&bad), &ad_of(&bad), &m, 0),
            Err(NoAmount {
                attr: "RequestMemory".into(),
                value: "undefined".into()
            })
        );
    }

    #[test]
    fn constants_are_numbers_in_the_ad() {
        let mut d = JobDescription::new("alice", "/bin/true");
        d.request_memory_mb = Some(512);
        let ad = ad_of(&d);
        assert_eq!(
            ad.get("RequestMemory")
                .map(gleaner_classad::unparse_expr)
                .as_deref(),
            Some("512")
        );
        assert_eq!(
            ad.get("RequestCpus")
                .map(gleaner_classad::unparse_expr)
                .as_deref(),
            Some("1")
        );
        assert!(ad.get("RequestGPUs").is_none());
        assert!(ad.get("RequestDisk").is_none());
        let a = amounts(Requests::of(&d), &ad, &Ad::new(), 0).unwrap();
        assert_eq!(a.memory_mb, Some(512));
    }
}
