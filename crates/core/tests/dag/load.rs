//! DAG files into one DAG: HTCondor's commands, includes, splices, pins,
//! `ALL_NODES`, join nodes, several files as one, rescue files; every
//! error with its file and line.

use crate::sim::{spec, try_spec};
use gleaner_core::dag::command::{Capture, EdgeKind, NodeKind, ScriptKind};
use gleaner_core::dag::spec::{Submit, Var};
use gleaner_core::dag::{LoadOptions, apply_rescue, load};
use proptest::prelude::*;
use std::collections::HashMap;

fn errors(files: &[(&str, &str)]) -> Vec<String> {
    match try_spec(files) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.0.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn the_whole_language_in_one_file() {
    let s = spec(&[(
        "x.dag",
        r#"
CONFIG x.config
JOB A a.sub DIR sub
JOB B b.sub NOOP
Job C {
  executable = /bin/true
}
SUBMIT-DESCRIPTION Shared {
  executable = /bin/echo
  queue
}
JOB D Shared
FINAL F f.sub
SERVICE S s.sub
SUBDAG EXTERNAL E inner.dag DIR deep
PARENT A CHILD B C
WEAK PARENT B C CHILD D
PRIORITY_PARENT A CHILD E
SCRIPT DEFER 3 10 PRE A pre.sh $JOB $RETRY
SCRIPT DEBUG dbg.log STDERR POST A post.sh $RETURN
SCRIPT HOLD A hold.sh
PRE_SKIP A 9
RETRY A 2 UNLESS-EXIT 4
ABORT-DAG-ON B 7 RETURN 3
VARS A x = "1" job="$(JOB)" +Attr="\"v\""
VARS ALL_NODES APPEND common="c"
PRIORITY D 5
CATEGORY C light
MAXJOBS light 1
DONE C
SAVE_POINT_FILE D
DOT x.dot UPDATE DONT-OVERWRITE INCLUDE head.dot
NODE_STATUS_FILE x.status 30 ALWAYS-UPDATE
JOBSTATE_LOG x.jobstate
SET_JOB_ATTR TestNumber = 17
ENV SET A=1;B=2
ENV GET HOME PATH
"#,
    )]);
    let a = &s.nodes[s.find("A").unwrap()];
    assert_eq!(a.dir, "/w/sub");
    assert_eq!(a.submit, Submit::File("a.sub".into()));
    assert_eq!(a.retries, 2);
    assert_eq!(a.unless_exit, Some(4));
    assert_eq!(a.pre_skip, Some(9));
    let pre = a.script(ScriptKind::Pre).unwrap();
    assert_eq!(pre.command, "pre.sh $JOB $RETRY");
    assert_eq!(pre.defer, Some((3, 10)));
    let post = a.script(ScriptKind::Post).unwrap();
    assert_eq!(post.debug, Some(("/w/sub/dbg.log".into(), Capture::Stderr)));
    assert!(a.script(ScriptKind::Hold).is_some());
    assert_eq!(
        a.vars,
        vec![
            Var {
                key: "x".into(),
                value: "1".into(),
                prepend: true
            },
            Var {
                key: "job".into(),
                value: "$(JOB)".into(),
                prepend: true
            },
            Var {
                key: "My.Attr".into(),
                value: "\"v\"".into(),
                prepend: true
            },
            Var {
                key: "common".into(),
                value: "c".into(),
                prepend: false
            },
        ]
    );
    let b = &s.nodes[s.find("B").unwrap()];
    assert!(b.noop);
    assert_eq!(b.abort_on, Some((7, Some(3))));
    let c = &s.nodes[s.find("C").unwrap()];
    assert!(c.done);
    assert_eq!(c.category.as_deref(), Some("light"));
    assert!(matches!(&c.submit, Submit::Inline { text, .. } if text.contains("/bin/true")));
    let d = &s.nodes[s.find("D").unwrap()];
    assert!(matches!(&d.submit, Submit::Inline { name, .. } if name == "Shared"));
    assert_eq!(d.priority, 5);
    assert_eq!(d.save_point.as_deref(), Some("D-x.dag.save"));
    let weak: Vec<EdgeKind> = d.parents.iter().map(|p| p.kind).collect();
    assert_eq!(weak, vec![EdgeKind::Weak, EdgeKind::Weak]);
    let e = &s.nodes[s.find("E").unwrap()];
    assert_eq!(e.kind, NodeKind::Subdag);
    assert_eq!(e.submit, Submit::Dag("inner.dag".into()));
    assert_eq!(e.parents[0].kind, EdgeKind::Priority);
    // ALL_NODES: JOB nodes only, not FINAL or SERVICE.
    for n in ["F", "S"] {
        assert!(s.nodes[s.find(n).unwrap()].vars.is_empty(), "{n}");
    }
    assert_eq!(s.maxjobs.get("light"), Some(&1));
    assert_eq!(s.config.as_deref(), Some("/w/x.config"));
    assert_eq!(s.set_job_attrs, vec![("TestNumber".into(), "17".into())]);
    assert_eq!(s.env.set.len(), 2);
    assert_eq!(s.env.get, vec!["HOME".to_string(), "PATH".into()]);
    let dot = s.dot.as_ref().unwrap();
    assert!(dot.update && !dot.overwrite);
    assert_eq!(s.status_file.as_ref().unwrap().min_update, 30);
    assert_eq!(s.jobstate_log.as_deref(), Some("/w/x.jobstate"));
}

#[test]
fn splices_name_their_nodes_and_connect_through_their_ends() {
    let s = spec(&[
        (
            "top.dag",
            "JOB X x.sub\nJOB Y x.sub\nSPLICE DIAMOND diamond.dag DIR d\nPARENT X CHILD DIAMOND\nPARENT DIAMOND CHILD Y\nVARS ALL_NODES v=\"1\"\n",
        ),
        (
            "d/diamond.dag",
            "JOB A a.sub\nJOB B a.sub\nJOB C a.sub\nJOB D a.sub DIR sub\nPARENT A CHILD B C\nPARENT B C CHILD D\nCATEGORY A cat\nMAXJOBS cat 2\n",
        ),
    ]);
    let names: Vec<&str> = s.user_nodes().map(|(_, n)| n.name.as_str()).collect();
    assert_eq!(
        names,
        ["X", "Y", "DIAMOND+A", "DIAMOND+B", "DIAMOND+C", "DIAMOND+D"]
    );
    let a = s.find("DIAMOND+A").unwrap();
    let d = s.find("DIAMOND+D").unwrap();
    assert_eq!(s.nodes[a].parents[0].node as usize, s.find("X").unwrap());
    let y = s.find("Y").unwrap();
    assert_eq!(s.nodes[y].parents[0].node as usize, d);
    assert_eq!(s.nodes[a].dir, "/w/d");
    assert_eq!(s.nodes[d].dir, "/w/d/sub");
    // The top file's ALL_NODES does not reach the splice's nodes.
    assert!(s.nodes[a].vars.is_empty());
    assert_eq!(s.nodes[a].category.as_deref(), Some("DIAMOND+cat"));
    assert_eq!(s.maxjobs.get("DIAMOND+cat"), Some(&2));
    assert_eq!(s.nodes.iter().filter(|n| n.join).count(), 0);
    // A many-to-many dependence goes through one join node.
    let j = spec(&[(
        "x.dag",
        "JOB A a\nJOB B b\nJOB C c\nJOB D d\nPARENT A B CHILD C D\n",
    )]);
    let joins: Vec<usize> = (0..j.nodes.len()).filter(|&i| j.nodes[i].join).collect();
    assert_eq!(joins.len(), 1);
    assert_eq!(
        j.nodes[j.find("C").unwrap()].parents[0].node as usize,
        joins[0]
    );
    assert_eq!(j.nodes[joins[0]].parents.len(), 2);
}

#[test]
fn the_same_splice_twice_and_pins() {
    let s = spec(&[
        (
            "top.dag",
            "SPLICE S1 s.dag\nSPLICE S2 s.dag\nCONNECT S1 S2\n",
        ),
        (
            "s.dag",
            "JOB A a.sub\nJOB B a.sub\nPIN_IN A 1\nPIN_IN B 2\nPIN_OUT A 1\nPIN_OUT B 2\n",
        ),
    ]);
    let a2 = s.find("S2+A").unwrap();
    let b2 = s.find("S2+B").unwrap();
    assert_eq!(
        s.nodes[a2].parents[0].node as usize,
        s.find("S1+A").unwrap()
    );
    assert_eq!(
        s.nodes[b2].parents[0].node as usize,
        s.find("S1+B").unwrap()
    );
    let e = errors(&[
        (
            "top.dag",
            "SPLICE S1 s.dag\nSPLICE S2 s.dag\nCONNECT S1 S2\n",
        ),
        ("s.dag", "JOB A a.sub\nPIN_OUT A 1\n"),
    ]);
    assert!(e[0].contains("no PIN_IN"), "{e:?}");
}

#[test]
fn includes_and_several_dag_files() {
    let s = spec(&[
        ("a.dag", "JOB A a.sub\nINCLUDE b.dag\nPARENT A CHILD B\n"),
        ("b.dag", "JOB B b.sub\n"),
    ]);
    assert_eq!(s.nodes.len(), 2);
    let files: HashMap<String, String> = [
        ("/w/one.dag", "JOB A a.sub\nVARS ALL_NODES v=\"1\"\n"),
        ("/w/two.dag", "JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let mut read = |p: &str| files.get(p).cloned().ok_or_else(|| "missing".to_string());
    let s = load(
        &["one.dag".into(), "two.dag".into()],
        &LoadOptions::new("/w"),
        &mut read,
    )
    .unwrap();
    let names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["0.A", "1.A", "1.B"]);
    assert!(s.nodes[1].vars.is_empty(), "ALL_NODES stays in its file");
}

#[test]
fn errors_name_file_line_and_keyword() {
    let e = errors(&[(
        "x.dag",
        "JOB A a.sub\nFROB A\nPARENT A CHILD Z\nRETRY Q 1\nJOB A b.sub\nDATA D d.sub\nVARS A queue=\"1\"\n",
    )]);
    assert_eq!(
        e,
        vec![
            "/w/x.dag:2: unknown keyword \"FROB\": not a DAG command",
            "/w/x.dag:3: unknown child node Z",
            "/w/x.dag:4: RETRY: unknown node Q",
            "/w/x.dag:5: node A is already declared",
            "/w/x.dag:6: DATA: DATA nodes ran Stork data-placement jobs, which HTCondor removed (HTCondor 25 refuses DATA too); declare the transfer as a JOB node",
            "/w/x.dag:7: VARS: invalid VARS name \"queue\": a name cannot begin with \"queue\" (syntax: VARS <node> [PREPEND|APPEND] key1=\"value1\" [key2=\"value2\" …])",
        ]
    );
    // A cycle loads (DAGMan finds it when the DAG can go no further),
    // with a warning naming it.
    let s = spec(&[(
        "x.dag",
        "JOB A a\nJOB B a\nPARENT A CHILD B\nPARENT B CHILD A\n",
    )]);
    let c = s.cycle.as_ref().expect("a cycle");
    assert!(
        c.to_string()
            .starts_with("/w/x.dag:1: warning: dependency cycle: A -> B -> A;"),
        "{c}"
    );
    assert_eq!(s.warnings, std::slice::from_ref(c));
    let e = errors(&[("x.dag", "SPLICE S x.dag\n")]);
    assert!(e[0].contains("splices itself"), "{e:?}");
    let e = errors(&[("x.dag", "FINAL F f\nFINAL G g\n")]);
    assert!(e[0].contains("a second FINAL node"), "{e:?}");
    let e = errors(&[("x.dag", "INCLUDE missing.dag\n")]);
    assert_eq!(
        e,
        vec!["/w/x.dag:1: cannot read /w/missing.dag: no such file"]
    );
    let e = errors(&[("x.dag", "JOB A a\nFINAL F f\nPARENT A CHILD F\n")]);
    assert!(e[0].contains("FINAL node F cannot have parents"), "{e:?}");
}

#[test]
fn rescue_files_mark_nodes_done_and_set_retries() {
    let mut s = spec(&[("x.dag", "JOB A a\nJOB B b\nPARENT A CHILD B\nRETRY B 3\n")]);
    let n = apply_rescue(
        &mut s,
        "/w/x.dag.rescue001",
        "# Rescue DAG file\n# Nodes that failed: 1\n#   B,<ENDLIST>\n\nDONE A\nRETRY B 1 UNLESS-EXIT 2\n",
    )
    .unwrap();
    assert_eq!(n, 1);
    assert!(s.nodes[0].done);
    assert_eq!(s.nodes[1].retries, 1);
    let e = apply_rescue(&mut s, "r", "DONE Z\nJOB C c\n").unwrap_err();
    assert_eq!(e.0.len(), 2);
}

/// Lines built from the language's own words, to reach deep parser paths.
fn dagish_line() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("JOB".to_string()),
        Just("PARENT".to_string()),
        Just("CHILD".to_string()),
        Just("SCRIPT".to_string()),
        Just("PRE".to_string()),
        Just("RETRY".to_string()),
        Just("VARS".to_string()),
        Just("SPLICE".to_string()),
        Just("INCLUDE".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("ALL_NODES".to_string()),
        Just("k = \"v\"".to_string()),
        Just("\"a b".to_string()),
        Just("\\".to_string()),
        "[a-c]",
        "[0-9]{1,3}",
        ".{0,4}",
    ];
    proptest::collection::vec(word, 0..7).prop_map(|w| w.join(" "))
}

proptest! {
    /// No input makes the loader panic, and every error names a line of
    /// the file (or none, for whole-file problems).
    #[test]
    fn loader_never_panics(lines in proptest::collection::vec(dagish_line(), 0..20)) {
        let text = lines.join("\n");
        let n = text.lines().count();
        let mut read = |p: &str| if p == "/w/x.dag" { Ok(text.clone()) } else { Err("no".to_string()) };
        if let Err(e) = load(&["x.dag".into()], &LoadOptions::new("/w"), &mut read) {
            prop_assert!(!e.0.is_empty());
            for err in &e.0 {
                prop_assert!(err.loc.line <= n.max(1), "line {} of {}", err.loc.line, n);
            }
        }
    }
}
