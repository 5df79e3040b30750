//! The dot file (`DOT`), as DAGMan draws a DAG for Graphviz
//! (`Dag::DumpDotFile`).

use super::ctime;
use crate::dag::run::{Run, Status};

/// The dot file's text at `now`; `include`: the header file's text.
pub fn dot_file(run: &Run, now: u64, include: Option<(&str, &str)>) -> String {
    let mut o = String::from("digraph DAG {\n");
    o.push_str(&format!(
        "    label=\"DAGMan Job status at {}\";\n\n",
        ctime(now)
    ));
    if let Some((name, text)) = include {
        o.push_str(&format!("// Beginning of commands included from {name}.\n"));
        o.push_str(text);
        if !text.ends_with('\n') {
            o.push('\n');
        }
        o.push_str(&format!("// End of commands included from {name}.\n\n"));
    }
    let spec = run.spec();
    for (i, n) in spec.nodes.iter().enumerate() {
        let name = &n.name;
        let s = run.node(i).map_or(Status::NotReady, |r| r.status);
        let line = match s {
            Status::Ready => format!("shape=ellipse label=\"{name} (I)\""),
            Status::PreRun => format!("shape=ellipse label=\"{name} (Pre)\" style=dotted"),
            Status::Submitted => format!("shape=ellipse label=\"{name} (R)\" peripheries=2"),
            Status::PostRun => format!("shape=ellipse label=\"{name} (Post)\" style=dotted"),
            Status::Done => format!("shape=ellipse label=\"{name} (Done)\" style=bold"),
            Status::Error => format!("shape=box label=\"{name} (E)\""),
            _ => format!("shape=ellipse label=\"{name} (I)\""),
        };
        o.push_str(&format!("    \"{name}\" [{line}];\n"));
    }
    o.push('\n');
    for n in &spec.nodes {
        for &c in &n.children {
            o.push_str(&format!(
                "    \"{}\" -> \"{}\";\n",
                n.name, spec.nodes[c as usize].name
            ));
        }
    }
    o.push_str("}\n");
    o
}
