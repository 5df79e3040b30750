//! The retries that raise a job's memory or disk request after an eviction
//! for using too much (`retry_request_memory`, `_max`, `_increase`,
//! `retry_request_disk`, `request_memory = 1GB, 2GB`), recorded as
//! HTCondor's submit records them: a job transform run on eviction
//! (`TransformOnEvict`, `TransformBody_RequestMemory`) and the values it
//! reads (`RetryRequestMemory`, or `MaxRequestMemory` and
//! `NextRequestMemory`). Gleaner does not run the transform: a warning says
//! so.

use super::build::parse_size;
use super::{Assignment, ErrorSink};
use crate::job::JobDescription;
use gleaner_classad::{Ad, EvalContext, Value, parse_expr, quote_string, unparse_expr};

/// The resource a retry raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resource {
    Memory,
    Disk,
}

impl Resource {
    fn attr(self) -> &'static str {
        match self {
            Resource::Memory => "RequestMemory",
            Resource::Disk => "RequestDisk",
        }
    }

    /// Bytes per unit of the request (MiB, KiB).
    fn unit(self) -> u64 {
        match self {
            Resource::Memory => 1024 * 1024,
            Resource::Disk => 1024,
        }
    }

    /// HTCondor's vacate sub-code of an eviction for using too much.
    fn subcode(self) -> u32 {
        match self {
            Resource::Memory => 102,
            Resource::Disk => 104,
        }
    }
}

/// A sequence of sizes, possibly ending with an expression (HTCondor's
/// `parse_expr_sequence`).
fn sequence(line: &str, unit: u64) -> Result<(Vec<u64>, Option<String>), String> {
    let mut seq = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let (item, after) = match rest.split_once(',') {
            Some((i, a)) => (i.trim(), Some(a)),
            None => (rest, None),
        };
        match parse_size(item, unit, unit) {
            Ok(n) => seq.push(n),
            Err(_) => {
                return match parse_expr(rest) {
                    Ok(e) => Ok((seq, Some(unparse_expr(&e)))),
                    Err(_) => Err(format!(
                        "{rest} is invalid: it must be an expression or a number"
                    )),
                };
            }
        }
        rest = after.map(str::trim).unwrap_or("");
    }
    Ok((seq, None))
}

/// Records the retry of resource `r` whose request is `initial`: `line`
/// the sizes (and last expression) it goes through, `incr` an increase
/// per retry (bounded by `line`'s value, when given), as HTCondor's
/// `SetBuiltInOnEvictCheck`.
pub(super) fn record(
    r: Resource,
    initial: u64,
    line: &str,
    incr: Option<&str>,
    d: &mut JobDescription,
    errs: &mut ErrorSink,
    a: &Assignment,
) -> Result<(), String> {
    let attr = r.attr();
    let (mut seq, last) = sequence(line, r.unit())?;
    let mut prev = 0;
    for v in &seq {
        if *v <= prev {
            return Err(format!(
                "it must be an increasing sequence of values, but {v} is not greater than {prev}"
            ));
        }
        prev = *v;
    }
    // The last value (or expression) is the most the retries reach.
    let (max, max_is_expr) = match (last, seq.pop()) {
        (Some(e), v) => {
            seq.extend(v);
            (Some(e), true)
        }
        (None, Some(v)) => (Some(v.to_string()), false),
        (None, None) if incr.is_none() => return Ok(()),
        (None, None) => (None, false),
    };
    let body = if let (false, Some(m)) = (seq.is_empty(), &max) {
        // Through the sequence, one step per eviction.
        let items: Vec<String> = seq.iter().map(u64::to_string).collect();
        d.custom_attrs.insert(
            format!("Retry{attr}"),
            format!("{{{},{m}}}", items.join(",")),
        );
        format!(
            "EVALSET {attr} Retry{attr}[Retry{attr}Index?:0]\u{1e}EVALSET Retry{attr}Index \
             MIN({{size(Retry{attr})-1, (Retry{attr}Index?:0)+1}})"
        )
    } else if let Some(incr) = incr {
        let next = match parse_size(incr, r.unit(), r.unit()) {
            Ok(0) => return Err(increment_error(attr)),
            Ok(n) => format!("{attr} + {n}"),
            Err(_) => match parse_expr(incr) {
                Ok(e) if names(incr, attr) => unparse_expr(&e),
                _ => return Err(increment_error(attr)),
            },
        };
        match &max {
            Some(m) => {
                d.custom_attrs.insert(format!("Max{attr}"), m.clone());
                d.custom_attrs.insert(format!("Next{attr}"), next);
                format!("EVALSET {attr} MIN({{Next{attr}, Max{attr}}})")
            }
            // No maximum: the increase once, worked out now.
            None => {
                let mut ad = Ad::new();
                ad.insert_int(attr, i64::try_from(initial).unwrap_or(i64::MAX));
                let e = parse_expr(&next).map_err(|_| increment_error(attr))?;
                match EvalContext::new(0).with_my(&ad).eval(&e) {
                    Value::Int(v) => format!("SET {attr} {v}"),
                    _ => {
                        return Err(format!(
                            "the retry increment ({incr}) must evaluate to an integer at submit \
                             time"
                        ));
                    }
                }
            }
        }
    } else {
        let verb = if max_is_expr { "EVALSET" } else { "SET" };
        format!("{verb} {attr} {}", max.unwrap_or_default())
    };
    let lines = format!(
        "REQUIREMENTS (VacateReasonCode==21 || VacateReasonCode == 34) && VacateReasonSubCode == \
         {}\u{1e}{body}",
        r.subcode()
    );
    d.custom_attrs
        .insert(format!("TransformBody_{attr}"), quote_string(&lines));
    let mut on_evict: Vec<String> = d
        .custom_attrs
        .get("TransformOnEvict")
        .and_then(|v| {
            gleaner_classad::EvalContext::new(0)
                .eval(&parse_expr(v).ok()?)
                .as_str()
                .map(str::to_string)
        })
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    if !on_evict.iter().any(|x| x.eq_ignore_ascii_case(attr)) {
        on_evict.push(attr.to_string());
    }
    d.custom_attrs
        .insert("TransformOnEvict".into(), quote_string(&on_evict.join(" ")));
    errs.warn_at(
        a,
        format!(
            "{} is recorded as HTCondor records it (TransformOnEvict) but has no effect: \
             Gleaner does not raise a job's {attr} after an eviction",
            a.name
        ),
    );
    Ok(())
}

fn increment_error(attr: &str) -> String {
    format!("the retry increment must be a positive number or an expression that references {attr}")
}

/// Whether expression text names attribute `attr` (any case).
fn names(text: &str, attr: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w.eq_ignore_ascii_case(attr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_of_sizes_end_in_an_expression() {
        assert_eq!(
            sequence("2G, 8 gb", 1024 * 1024).unwrap(),
            (vec![2048, 8192], None)
        );
        assert_eq!(
            sequence("2G, MAX({RequestMemory, MemoryUsage}) * 2", 1024 * 1024).unwrap(),
            (
                vec![2048],
                Some("MAX({ RequestMemory,MemoryUsage }) * 2".into())
            )
        );
        assert!(sequence("2G, 3 +", 1024).is_err());
    }
}
