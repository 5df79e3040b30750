//! `$$(attr)`, `$$(attr:default)` and `$$([expression])`: values taken
//! from the machine a job is matched with, filled in when the job is
//! placed (HTCondor fills them in at match time). The submit parser copies
//! them through; the host that accepts the job substitutes them from its
//! own machine ad ([`substitute`]) in the job's arguments, environment and
//! custom attributes; a job whose references without default a host
//! cannot fill does not match there ([`required_attrs`]).

use gleaner_classad::{Ad, EvalContext, Value};

/// One `$$(…)` reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchRef {
    /// The attribute name, or the expression inside `[…]`.
    pub what: String,
    /// `[expression]` rather than an attribute name.
    pub expression: bool,
    pub default: Option<String>,
}

/// Every `$$(…)` in `text`, or why one is malformed.
pub fn references(text: &str) -> Result<Vec<MatchRef>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(p) = rest.find("$$(") {
        let after = &rest[p + 3..];
        let end = close(after).ok_or_else(|| {
            let shown: String = rest[p..].chars().take(40).collect();
            format!("unclosed \"{shown}\"")
        })?;
        out.push(parse_ref(&after[..end]));
        rest = &after[end + 1..];
    }
    Ok(out)
}

/// The end of a `$$(` reference: the `)` that closes it (brackets of an
/// expression may hold parentheses).
fn close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn parse_ref(inner: &str) -> MatchRef {
    let t = inner.trim();
    if let Some(e) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return MatchRef {
            what: e.to_string(),
            expression: true,
            default: None,
        };
    }
    match t.split_once(':') {
        Some((n, d)) => MatchRef {
            what: n.trim().to_string(),
            expression: false,
            default: Some(d.to_string()),
        },
        None => MatchRef {
            what: t.to_string(),
            expression: false,
            default: None,
        },
    }
}

/// `text` with each `$$(…)` replaced by `undefined`, for a syntax check of
/// an expression that holds them.
pub fn neutral(text: &str) -> Result<String, String> {
    replace(text, |_| Ok("undefined".to_string()))
}

fn replace(
    text: &str,
    mut f: impl FnMut(&MatchRef) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find("$$(") {
        out.push_str(&rest[..p]);
        let after = &rest[p + 3..];
        let end = close(after).ok_or_else(|| {
            let shown: String = rest[p..].chars().take(40).collect();
            format!("unclosed \"{shown}\"")
        })?;
        out.push_str(&f(&parse_ref(&after[..end]))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A value as text: strings without quotes, as HTCondor substitutes them.
fn as_text(v: &Value) -> Option<String> {
    if v.is_undefined() || v.is_error() {
        return None;
    }
    Some(match v.as_str() {
        Some(s) => s.to_string(),
        None => v.unparse(),
    })
}

/// `text` with every `$$(…)` filled in from `machine` (the host's ad; an
/// expression is evaluated with the machine as `TARGET`). A reference the
/// machine cannot fill and that has no default is an error naming it.
pub fn substitute(text: &str, machine: &Ad, now_unix: i64) -> Result<String, String> {
    substitute_in(text, machine, machine, now_unix)
}

/// [`substitute`] for a job whose ad is `job`: an expression is evaluated
/// in the job's ad with the machine as `TARGET`, as HTCondor's schedd
/// does (`$$([JobBatchName])` is the job's batch name).
pub fn substitute_in(text: &str, job: &Ad, machine: &Ad, now_unix: i64) -> Result<String, String> {
    if !text.contains("$$(") {
        return Ok(text.to_string());
    }
    replace(text, |r| {
        let value = if r.expression {
            let e = gleaner_classad::parse_expr(&r.what)
                .map_err(|e| format!("$$([{}]): {e}", r.what))?;
            let ctx = EvalContext::new(now_unix).with_my(job).with_target(machine);
            as_text(&ctx.eval(&e))
        } else {
            let ctx = EvalContext::new(now_unix).with_my(machine);
            as_text(&ctx.eval_attr(&r.what))
        };
        match (value, &r.default) {
            (Some(v), _) => Ok(v),
            (None, Some(d)) => Ok(d.clone()),
            (None, None) => Err(format!(
                "$$({}) has no value on this machine and no default",
                if r.expression {
                    format!("[{}]", r.what)
                } else {
                    r.what.clone()
                }
            )),
        }
    })
}

/// The machine attributes `text` needs filled in (references without a
/// default), so that matching avoids machines without them.
pub fn required_attrs(text: &str) -> Vec<String> {
    references(text)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| !r.expression && r.default.is_none())
        .map(|r| r.what)
        .collect()
}

/// `text` with each `$$(attr)` written as the machine's attribute
/// (`TARGET.attr`, or with a default `ifThenElse(isUndefined(TARGET.attr),
/// default, TARGET.attr)`), so that a `requirements` or `rank` that uses
/// them is evaluated against each candidate machine. `$$([expr])`
/// becomes `(expr)` with the machine as target.
pub fn as_target_refs(text: &str) -> String {
    replace(text, |r| {
        Ok(if r.expression {
            format!("({})", r.what)
        } else {
            match &r.default {
                Some(d) => format!(
                    "ifThenElse(isUndefined(TARGET.{n}), {d}, TARGET.{n})",
                    n = r.what
                ),
                None => format!("TARGET.{}", r.what),
            }
        })
    })
    .unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Ad {
        let mut ad = Ad::new();
        ad.insert_str("OpSys", "LINUX");
        ad.insert_str("Arch", "X86_64");
        ad.insert_int("Memory", 2048);
        ad
    }

    #[test]
    fn fills_names_defaults_and_expressions() {
        let m = machine();
        assert_eq!(
            substitute("prog.$$(OpSys).$$(Arch)", &m, 0).unwrap(),
            "prog.LINUX.X86_64"
        );
        assert_eq!(
            substitute("mem=$$(Memory) gpu=$$(GPUs:none)", &m, 0).unwrap(),
            "mem=2048 gpu=none"
        );
        assert_eq!(substitute("$$([Memory / 2])", &m, 0).unwrap(), "1024");
        let e = substitute("$$(wontbethere)", &m, 0).unwrap_err();
        assert!(e.contains("wontbethere"), "{e}");
        assert_eq!(substitute("no refs $(x)", &m, 0).unwrap(), "no refs $(x)");
        // In the job's ad, with the machine as TARGET (HTCondor's DAGMan
        // tests print `$$([JobBatchName])` and `$$([DAGParentNodeNames])`).
        let mut job = Ad::new();
        job.insert_str("JobBatchName", "nightly");
        assert_eq!(
            substitute_in(
                "$$([JobBatchName]) $$([TARGET.Memory * 2]) $$(Arch)",
                &job,
                &m,
                0
            )
            .unwrap(),
            "nightly 4096 X86_64"
        );
    }

    #[test]
    fn references_and_required_attributes() {
        let t = "MEMORY=$$(memory)|MACHINE=$$(machine)|WONTBE=$$(wontbethere:/be/here/now)";
        assert_eq!(references(t).unwrap().len(), 3);
        assert_eq!(required_attrs(t), ["memory", "machine"]);
        assert!(references("$$(open").is_err());
        assert_eq!(neutral("Arch == $$(Arch)").unwrap(), "Arch == undefined");
        assert_eq!(as_target_refs("Arch == $$(Arch)"), "Arch == TARGET.Arch");
    }
}
