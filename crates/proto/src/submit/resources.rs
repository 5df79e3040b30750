//! The resource requests of a proc as HTCondor's submit reads them:
//! `request_cpus`, `request_memory`, `request_disk`, `request_gpus` as a
//! number (with a unit for memory and disk) or a ClassAd expression kept
//! for match time (`crate::requests`), `undefined` for none; `require_gpus`
//! and the `gpus_minimum_*`/`gpus_maximum_capability` constraints folded
//! into `RequireGPUs` as HTCondor folds them; and the retries that raise
//! memory or disk after an eviction for using too much
//! (`retry_request_memory*`, `retry_request_disk`, `request_memory = a, b`),
//! recorded as HTCondor records them (`submit/retry_request.rs`).

use super::build::{check_expression, parse_size};
use super::retry_request;
use super::{Assignment, ErrorSink, SubmitErrorKind};
use crate::job::JobDescription;
use std::collections::BTreeMap;

/// The commands this module reads.
pub(super) const COMMANDS: &[&str] = &[
    "request_cpus",
    "request_memory",
    "request_disk",
    "request_gpus",
    "require_gpus",
    "gpus_minimum_capability",
    "gpus_maximum_capability",
    "gpus_minimum_memory",
    "gpus_minimum_runtime",
    "retry_request_memory",
    "retry_request_memory_max",
    "retry_request_memory_increase",
    "retry_request_disk",
];

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// The commands' expanded values, by command.
#[derive(Default)]
pub(super) struct Resources {
    given: BTreeMap<&'static str, (String, Assignment)>,
}

fn bad(errs: &mut ErrorSink, a: &Assignment, reason: String) {
    errs.push_at(
        a,
        SubmitErrorKind::BadValue {
            key: a.name.clone(),
            reason,
        },
    );
}

/// `value` as an expression kept for match time, or why not.
fn expression(value: &str) -> Result<String, String> {
    check_expression(value).map(|()| value.to_string())
}

impl Resources {
    /// Records command `name` (one of [`COMMANDS`]); an empty value counts
    /// as not given, as in HTCondor.
    pub(super) fn gather(&mut self, name: &str, value: &str, a: &Assignment) {
        if let Some(cmd) = COMMANDS.iter().find(|c| **c == name)
            && !value.is_empty()
        {
            self.given.insert(cmd, (value.to_string(), a.clone()));
        }
    }

    fn get(&self, name: &str) -> Option<&(String, Assignment)> {
        self.given.get(name)
    }

    /// Sets the description's requests, and records the attributes
    /// HTCondor writes for GPU constraints and retries.
    pub(super) fn finish(&self, d: &mut JobDescription, errs: &mut ErrorSink) {
        if let Some((v, a)) = self.get("request_cpus") {
            match v.parse::<u32>() {
                Ok(n) if n >= 1 => d.request_cpus = n,
                Ok(_) => bad(errs, a, format!("\"{v}\" is not a positive whole number")),
                Err(_) if v.eq_ignore_ascii_case("undefined") => {}
                Err(_) => match expression(v) {
                    Ok(e) => d.request_exprs.cpus = Some(e),
                    Err(r) => bad(errs, a, r),
                },
            }
        }
        for (cmd, unit, retry) in [
            ("request_memory", MIB, retry_request::Resource::Memory),
            ("request_disk", KIB, retry_request::Resource::Disk),
        ] {
            let Some((v, a)) = self.get(cmd) else {
                continue;
            };
            if v.eq_ignore_ascii_case("undefined") {
                continue;
            }
            // `a, b, c`: the request, then what retries raise it to.
            let (first, rest) = match v.split_once(',') {
                Some((f, r)) => (f.trim(), Some(r.trim())),
                None => (v.as_str(), None),
            };
            match parse_size(first, unit, unit) {
                Ok(n) => {
                    match retry {
                        retry_request::Resource::Memory => d.request_memory_mb = Some(n),
                        retry_request::Resource::Disk => d.request_disk_kb = Some(n),
                    }
                    let retries = match rest {
                        Some(r) if !r.is_empty() => Some((r, a, None)),
                        _ => self.retries_of(retry, errs),
                    };
                    if let Some((line, a, incr)) = retries
                        && let Err(reason) = retry_request::record(retry, n, line, incr, d, errs, a)
                    {
                        bad(errs, a, reason);
                    }
                }
                // Not a size: an expression, kept for match time.
                Err(size_err) => match expression(v) {
                    Ok(e) => match retry {
                        retry_request::Resource::Memory => d.request_exprs.memory = Some(e),
                        retry_request::Resource::Disk => d.request_exprs.disk = Some(e),
                    },
                    Err(_) => bad(errs, a, size_err),
                },
            }
        }
        if let Some((v, a)) = self.get("request_gpus") {
            match v.parse::<u32>() {
                Ok(n) => d.request_gpus = n,
                Err(_) if v.eq_ignore_ascii_case("undefined") => return,
                Err(_) => match expression(v) {
                    Ok(e) => d.request_exprs.gpus = Some(e),
                    Err(r) => return bad(errs, a, r),
                },
            }
            self.gpu_constraints(d, errs);
        }
    }

    /// `retry_request_memory` (a list, or a last expression), else
    /// `retry_request_memory_max` and `_increase`; `retry_request_disk`.
    fn retries_of(
        &self,
        r: retry_request::Resource,
        errs: &mut ErrorSink,
    ) -> Option<(&str, &Assignment, Option<&str>)> {
        match r {
            retry_request::Resource::Disk => self
                .get("retry_request_disk")
                .map(|(v, a)| (v.as_str(), a, None)),
            retry_request::Resource::Memory => {
                let incr = self.get("retry_request_memory_increase");
                if let Some((v, a)) = self.get("retry_request_memory") {
                    if let Some((_, ia)) = incr {
                        errs.warn_at(
                            ia,
                            "retry_request_memory_increase is ignored because \
                             retry_request_memory is given, as in HTCondor"
                                .into(),
                        );
                    }
                    return Some((v.as_str(), a, None));
                }
                let max = self.get("retry_request_memory_max");
                match (max, incr) {
                    (Some((m, a)), i) => Some((m.as_str(), a, i.map(|(v, _)| v.as_str()))),
                    (None, Some((i, a))) => Some(("", a, Some(i.as_str()))),
                    (None, None) => None,
                }
            }
        }
    }

    /// `require_gpus` with the `gpus_*` constraints folded in (each only
    /// where `require_gpus` does not name the property itself), and the
    /// constraints' own attributes, as HTCondor writes them.
    fn gpu_constraints(&self, d: &mut JobDescription, errs: &mut ErrorSink) {
        let require = match self.get("require_gpus") {
            Some((v, a)) => match expression(v) {
                Ok(e) => Some(e),
                Err(r) => return bad(errs, a, r),
            },
            None => None,
        };
        let names = require
            .as_deref()
            .map(|r| r.to_ascii_lowercase())
            .unwrap_or_default();
        let mentions = |prop: &str| {
            names
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == prop)
        };
        let mut clauses: Vec<&str> = Vec::new();
        let mut record = |attr: &str, value: String| {
            d.custom_attrs.insert(attr.to_string(), value);
        };
        if let Some((v, a)) = self.get("gpus_minimum_capability") {
            match expression(v) {
                Ok(e) => record("GPUsMinCapability", e),
                Err(r) => return bad(errs, a, r),
            }
            if !mentions("capability") {
                clauses.push("Capability >= GPUsMinCapability");
            }
        }
        if let Some((v, a)) = self.get("gpus_maximum_capability") {
            match expression(v) {
                Ok(e) => record("GPUsMaxCapability", e),
                Err(r) => return bad(errs, a, r),
            }
            if !mentions("capability") {
                clauses.push("Capability <= GPUsMaxCapability");
            }
        }
        if let Some((v, a)) = self.get("gpus_minimum_memory") {
            match parse_size(v, MIB, MIB) {
                Ok(n) => record("GPUsMinMemory", n.to_string()),
                Err(size_err) => match expression(v) {
                    Ok(e) => record("GPUsMinMemory", e),
                    Err(_) => return bad(errs, a, size_err),
                },
            }
            if !mentions("globalmemorymb") {
                clauses.push("GlobalMemoryMb >= GPUsMinMemory");
            }
        }
        if let Some((v, a)) = self.get("gpus_minimum_runtime") {
            match runtime_version(v)
                .map(|n| n.to_string())
                .map_or_else(|| expression(v), Ok)
            {
                Ok(e) => record("GPUsMinRuntime", e),
                Err(r) => return bad(errs, a, r),
            }
            if !mentions("maxsupportedversion") {
                clauses.push("MaxSupportedVersion >= GPUsMinRuntime");
            }
        }
        d.request_exprs.require_gpus = match (require, clauses.is_empty()) {
            (r, true) => r,
            (Some(r), false) => Some(format!("{} && {}", and_operand(&r), clauses.join(" && "))),
            (None, false) => Some(clauses.join(" && ")),
        };
    }
}

/// A CUDA runtime version as HTCondor canonicalises it: `12.1` → 12010,
/// `12` → 12000, `12010` (already canonical, above 1000) as it is.
fn runtime_version(v: &str) -> Option<i64> {
    let (major, minor) = match v.split_once('.') {
        Some((a, b)) => (a.parse::<i64>().ok()?, Some(b.parse::<i64>().ok()?)),
        None => (v.parse::<i64>().ok()?, None),
    };
    match minor {
        None if major > 1000 => Some(major),
        None => Some(major * 1000),
        Some(m) if (0..100).contains(&m) => Some(major * 1000 + m * 10),
        Some(_) => None,
    }
}

/// `e` as an operand of `&&`: parenthesised unless it binds at least as
/// tightly (HTCondor's `check_expr_and_wrap_for_op`).
fn and_operand(e: &str) -> String {
    use gleaner_classad::{BinOp, Expr};
    match gleaner_classad::parse_expr(e) {
        Ok(Expr::Binary(BinOp::Or | BinOp::Elvis, ..)) | Ok(Expr::Cond(..)) => format!("({e})"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_versions_as_htcondor_writes_them() {
        assert_eq!(runtime_version("12.2"), Some(12020));
        assert_eq!(runtime_version("12010"), Some(12010));
        assert_eq!(runtime_version("9"), Some(9000));
        assert_eq!(runtime_version("x"), None);
        assert_eq!(and_operand("A || B"), "(A || B)");
        assert_eq!(and_operand("A && B"), "A && B");
    }
}
