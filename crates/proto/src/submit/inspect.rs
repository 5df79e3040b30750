//! What a submit description says without queueing it, for HTCondor's
//! Python API (`htcondor2.Submit.expand` and `Submit.itemdata`): the
//! value of a command with its macros expanded, and the items a queue
//! statement binds. Both read with the submit language's own expander
//! and queue parser, so they mean what a submission would.

use super::expand::{Budget, Builtins, Expander};
use super::queue::{QueueCtx, parse_queue};
use super::source::Reader;
use super::{
    Assignment, BUILTINS, LocalFs, ProcBinding, SubmitContext, SubmitErrorKind, SubmitFs,
    custom_attr_name,
};
use crate::limits::MAX_SUBMISSION_BYTES;
use std::collections::BTreeMap;

/// The macro table of `commands` (`key`, value) as the parser builds it.
fn table(commands: &[(String, String)]) -> BTreeMap<String, Assignment> {
    let mut vars = BTreeMap::new();
    for (seq, (k, v)) in commands.iter().enumerate() {
        let key = k.trim();
        let table_key = match custom_attr_name(key) {
            Some(attr) => format!("+{}", attr.to_ascii_lowercase()),
            None => key.to_ascii_lowercase(),
        };
        if BUILTINS.contains(&table_key.as_str()) {
            continue;
        }
        vars.insert(
            table_key,
            Assignment {
                name: key.to_string(),
                value: v.trim().to_string(),
                line: 0,
                file: None,
                seq: u32::try_from(seq).unwrap_or(u32::MAX),
            },
        );
    }
    vars
}

/// `text` with its macros expanded against `commands`, as the first proc
/// of cluster 1 sees them (`$(Cluster)` 1, `$(Process)` 0, no item).
pub fn expand_macros(
    commands: &[(String, String)],
    text: &str,
    ctx: &SubmitContext,
) -> Result<String, SubmitErrorKind> {
    let vars = table(commands);
    let budget = Budget::new();
    let binding = ProcBinding::default();
    let dir = ctx.dir.as_ref().map(|d| d.to_string_lossy().into_owned());
    let expander = Expander::new(
        &vars,
        &ctx.env,
        Some(Builtins {
            cluster: 1,
            process: 0,
            binding: &binding,
            node: None,
        }),
        &budget,
    )
    .with_seed(ctx.seed)
    .with_dir(dir.as_deref());
    expander.expand(text, 0)
}

/// The items of the queue statement `queue ARGS` (with `rows`, the lines
/// of its `from (` block, if it has one): the variables' values for each
/// item, keyed by the variables' names as written (`Item` when it names
/// none), in item order. `None` for a statement that binds no items
/// (`queue 3`).
pub fn queue_items(
    commands: &[(String, String)],
    args: &str,
    rows: Option<&[String]>,
    ctx: &SubmitContext,
) -> Result<Option<Vec<BTreeMap<String, String>>>, SubmitErrorKind> {
    let vars = table(commands);
    let budget = Budget::new();
    let expander = Expander::new(&vars, &ctx.env, None, &budget);
    let mut block = String::new();
    if let Some(rows) = rows {
        for r in rows {
            block.push_str(r);
            block.push('\n');
        }
        block.push_str(")\n");
    }
    let mut reader = Reader::new(&block, None);
    let local = ctx.dir.as_ref().map(|d| LocalFs { dir: d.clone() });
    let fs: Option<&dyn SubmitFs> = local.as_ref().map(|l| l as &dyn SubmitFs);
    let mut qctx = QueueCtx {
        reader: &mut reader,
        expander: &expander,
        fs,
        room: MAX_SUBMISSION_BYTES,
    };
    let procs = parse_queue(args, &mut qctx)?;
    let names = written_names(args);
    // One entry per item: the first step of each.
    let items: Vec<BTreeMap<String, String>> = procs
        .iter()
        .filter(|p| p.step == 0 && !p.items.is_empty())
        .map(|p| {
            p.items
                .iter()
                .map(|(k, v)| {
                    let shown = names
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(k))
                        .cloned()
                        .unwrap_or_else(|| "Item".to_string());
                    (shown, v.clone())
                })
                .collect()
        })
        .collect();
    if items.is_empty() && procs.iter().all(|p| p.items.is_empty()) {
        return Ok(None);
    }
    Ok(Some(items))
}

/// The variable names of a queue statement as written (before `from`,
/// `in` or `matching`, after the count).
fn written_names(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in args.split(|c: char| c == ',' || c.is_whitespace()) {
        if ["from", "in", "matching"]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k))
        {
            break;
        }
        if !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()) {
            out.push(w.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    // What htcondor2.Submit.expand and itemdata give for the same text.
    #[test]
    fn expand_as_the_python_api_does() {
        let ctx = SubmitContext::new("t", "alice");
        let c = cmds(&[("foo", "1"), ("bar", "2"), ("baz", "$(foo)")]);
        assert_eq!(expand_macros(&c, "$(baz)", &ctx).unwrap(), "1");
        assert_eq!(
            expand_macros(&c, "$(Cluster).$(Process)", &ctx).unwrap(),
            "1.0"
        );
        assert_eq!(expand_macros(&c, "$(JobId).log", &ctx).unwrap(), "1.0.log");
    }

    #[test]
    fn items_as_the_python_api_gives_them() {
        let ctx = SubmitContext::new("t", "alice");
        let items = queue_items(&[], "3 x in (a, b)", None, &ctx)
            .unwrap()
            .unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["x"], "a");
        let rows = vec![" x 1".to_string(), " y 2".to_string()];
        let items = queue_items(&[], "a,b from (", Some(&rows), &ctx)
            .unwrap()
            .unwrap();
        assert_eq!(items[1]["a"], "y");
        assert_eq!(items[1]["b"], "2");
        let items = queue_items(&[], "from (", Some(&rows), &ctx)
            .unwrap()
            .unwrap();
        assert_eq!(items[0]["Item"], "x 1");
        assert_eq!(queue_items(&[], "2", None, &ctx).unwrap(), None);
    }
}
