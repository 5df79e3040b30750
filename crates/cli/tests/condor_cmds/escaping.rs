//! Terminal injection: a user's job whose arguments, file names, batch
//! name, own attributes and hold reason carry ESC/BEL/OSC/CSI sequences,
//! C1 controls and bidi overrides. Nothing of it reaches another user's
//! or the owner's terminal raw, through any listing: `glean q --all`,
//! `glean q -af`, `glean history --all`, `glean dag status` and every
//! `condor_*` view. The text is still there, escaped.

use crate::common::TestOwner;
use crate::pool::{Pool, ok, stderr, stdout};
use std::process::Output;

/// The characters a terminal acts on: C0 but newline and tab, DEL, C1,
/// and the bidi/invisible format characters.
fn unsafe_chars(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t')
                || matches!(
                    *c,
                    '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}'
                )
        })
        .collect()
}

fn clean(what: &str, o: &Output) {
    for (stream, text) in [("stdout", stdout(o)), ("stderr", stderr(o))] {
        let bad = unsafe_chars(&text);
        assert!(
            bad.is_empty(),
            "{what} printed {bad:?} raw on {stream}:\n{text}"
        );
    }
}

#[test]
fn user_text_never_reaches_a_terminal_raw() {
    if gleaner_testkit::skip_unless_root("runs jobs as test users on a personal pool") {
        return;
    }
    let pool = Pool::start(1);
    let mallory = TestOwner::new("ccesc").unwrap();
    let viewer = TestOwner::new("ccview").unwrap();
    let work = pool.root.join("evil");
    mallory.dir(&work).unwrap();
    let seen = pool.root.join("seen");
    viewer.dir(&seen).unwrap();

    let title = "\x1b]0;owned\x07";
    let clear = "\x1b[2J\x1b[H";
    let c1 = "\u{9b}31m";
    let bidi = "\u{202e}exe.txt";
    let sub = format!(
        "executable = /bin/sleep\n\
         arguments = \"300 {title} {clear}\"\n\
         output = out{clear}.txt\n\
         error = err{bidi}\n\
         batch_name = evil{c1}name\n\
         +Note = \"hi{title}there\"\n\
         queue\n"
    );
    mallory.write(&work.join("evil.sub"), sub).unwrap();
    let out = pool.condor(&mallory, &work, "condor_submit", &["evil.sub"]);
    assert!(out.status.success(), "{out:?}");
    let reason = format!("reason{title}{clear}\x1b]8;;http://evil/\x07link\x1b]8;;\x07");
    let held = pool.condor(&mallory, &work, "condor_hold", &["1.0", "-reason", &reason]);
    assert!(held.status.success(), "{held:?}");
    // A DAG whose node name and file carry them too.
    mallory
        .write(&work.join("n.sub"), "executable = /bin/true\nqueue\n")
        .unwrap();
    mallory
        .write(&work.join("d.dag"), "JOB A\u{9b}2J n.sub\n")
        .unwrap();
    let _ = pool.glean(&mallory, &work, &["dag", "submit", "d.dag"]);

    // Every listing another user (and the owner) can make.
    let condor_views: &[(&str, &[&str])] = &[
        ("condor_q", &["-allusers"]),
        ("condor_q", &["-allusers", "-nobatch"]),
        ("condor_q", &["-allusers", "-hold"]),
        ("condor_q", &["-allusers", "-long"]),
        ("condor_q", &["-allusers", "-json"]),
        (
            "condor_q",
            &[
                "-allusers",
                "-af",
                "Args",
                "Arguments",
                "Out",
                "Err",
                "JobBatchName",
                "Note",
                "HoldReason",
            ],
        ),
        ("condor_q", &["-allusers", "-af:V", "Args", "HoldReason"]),
        ("condor_q", &["-allusers", "-af:r", "Note"]),
        (
            "condor_q",
            &[
                "-allusers",
                "-format",
                "%s\\n",
                "HoldReason",
                "-format",
                "%-20s|\\n",
                "JobBatchName",
            ],
        ),
        ("condor_q", &["-allusers", "-format", "%c\\n", "JobPrio"]),
    ];
    for who in [&viewer, &mallory] {
        for (tool, args) in condor_views {
            let o = pool.condor(who, &seen, tool, args);
            assert!(o.status.success(), "{tool} {args:?}: {o:?}");
            clean(&format!("{tool} {args:?}"), &o);
        }
        for args in [
            &["q", "--all"][..],
            &[
                "q",
                "--all",
                "-af",
                "Args",
                "Out",
                "Err",
                "JobBatchName",
                "Note",
                "HoldReason",
            ],
            &["q", "--all", "-l"],
            &["q", "--all", "--json"],
            &["q", "--all", "--page", "1"],
            &["dag", "status"],
        ] {
            let o = pool.glean(who, &seen, args);
            clean(&format!("glean {args:?}"), &o);
        }
    }
    // The text is there, escaped (not dropped).
    let af = ok(pool.condor(&viewer, &seen, "condor_q", &["1", "-af", "HoldReason"]));
    assert_eq!(
        af,
        "reason\\x1b]0;owned\\x07\\x1b[2J\\x1b[H\\x1b]8;;http://evil/\\x07link\\x1b]8;;\\x07\n"
    );
    let af = ok(pool.condor(
        &viewer,
        &seen,
        "condor_q",
        &["1", "-af", "JobBatchName", "Err"],
    ));
    assert_eq!(af, "evil\\u{009b}31mname err\\u{202e}exe.txt\n");

    // A job whose JobPrio is ESC's code, printed with %c: escaped too.
    let e = pool.condor(&mallory, &work, "condor_qedit", &["1.0", "JobPrio", "27"]);
    assert!(e.status.success(), "{e:?}");
    let c = ok(pool.condor(
        &viewer,
        &seen,
        "condor_q",
        &["1", "-format", "%c\\n", "JobPrio"],
    ));
    assert_eq!(c, "\\x1b\n");

    // History, once removed.
    ok(pool.condor(&mallory, &work, "condor_rm", &["1"]));
    for who in [&viewer, &mallory] {
        for (tool, args) in [
            ("condor_history", &[][..]),
            ("condor_history", &["-long"]),
            ("condor_history", &["-af", "Args", "HoldReason", "Note"]),
        ] {
            let o = pool.condor(who, &seen, tool, args);
            assert!(o.status.success(), "{tool} {args:?}: {o:?}");
            clean(&format!("{tool} {args:?}"), &o);
        }
        for args in [
            &["history", "--all"][..],
            &["history", "--all", "-af", "Args"],
        ] {
            clean(&format!("glean {args:?}"), &pool.glean(who, &seen, args));
        }
    }
    // Errors that quote user text are escaped as well.
    let o = pool.condor(
        &viewer,
        &seen,
        "condor_q",
        &["-constraint", "Owner == \"\x1b]0;x\x07"],
    );
    clean("condor_q with a bad constraint", &o);
}
