//! Every kind of user-log event Gleaner writes, read back by HTCondor's
//! own reader (`htcondor2.JobEventLog`, PyPI `htcondor`): the reader must
//! accept the whole log and see each event with its type, job id, time
//! and fields. Skipped (with a message) when python3 cannot import
//! `htcondor2`, unless `GLEANER_REQUIRE_ORACLE=1`.

use gleaner_core::time::Time;
use gleaner_proto::job::JobId;
use gleaner_station::home::user_log::{UserEvent, format_event};

#[test]
fn htcondor_reads_every_event_gleaner_writes() {
    let id = JobId::new(7, 2);
    let t0 = 1_763_707_800u64;
    let events = vec![
        UserEvent::Submitted {
            host: "http://127.0.0.1:9618".into(),
        },
        UserEvent::Executing { host: "x1".into() },
        UserEvent::Checkpointed {
            bytes: 4096,
            detail: "self checkpoint #1: 1 file(s), 4096 bytes in 0.010 s".into(),
        },
        UserEvent::Suspended,
        UserEvent::Unsuspended,
        UserEvent::Evicted {
            checkpointed: true,
            reason: "on x1: vacated by admin".into(),
        },
        UserEvent::Generic {
            text: "checkpoint rejected, previous kept: too big\nsecond line".into(),
        },
        UserEvent::Held {
            reason: "held by alice".into(),
            code: 1,
            subcode: 0,
        },
        UserEvent::Released {
            reason: "released by alice".into(),
        },
        UserEvent::Executing { host: "x2".into() },
        UserEvent::Evicted {
            checkpointed: false,
            reason: String::new(),
        },
        UserEvent::Terminated {
            exit_code: 3,
            detail: "on x2: stdout kept in the spool".into(),
        },
        UserEvent::Terminated {
            exit_code: -9,
            detail: String::new(),
        },
        UserEvent::Aborted {
            reason: "removed by alice".into(),
        },
        UserEvent::ShadowException {
            message: "failed to start on b: Argument list too long (E2BIG)".into(),
        },
        UserEvent::Held {
            reason: "failed to start 3 times in a row".into(),
            code: 6,
            subcode: 7,
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("job.log");
    let text: String = events
        .iter()
        .enumerate()
        .map(|(i, e)| format_event(id, Time::from_secs(t0 + i as u64), e))
        .collect();
    std::fs::write(&log, &text).unwrap();
    let Some(read) = gleaner_testkit::htcondor_user_log(&log) else {
        return;
    };
    assert_eq!(read.len(), events.len(), "{read:#?}\n{text}");
    for (i, (e, r)) in events.iter().zip(&read).enumerate() {
        assert_eq!(r["type"], u64::from(e.code()), "event {i}: {r}");
        assert_eq!(r["cluster"], 7, "{r}");
        assert_eq!(r["proc"], 2, "{r}");
        assert_eq!(r["timestamp"], t0 + i as u64, "event {i} time: {r}");
    }
    let ad = |i: usize| &read[i]["ad"];
    assert_eq!(ad(0)["SubmitHost"], "http://127.0.0.1:9618");
    assert_eq!(ad(1)["ExecuteHost"], "x1");
    assert_eq!(ad(2)["SentBytes"], 4096.0);
    assert_eq!(ad(3)["NumberOfPIDs"], 1);
    assert_eq!(ad(5)["Checkpointed"], true);
    assert_eq!(ad(5)["Reason"], "on x1: vacated by admin");
    assert_eq!(
        ad(6)["Info"],
        "checkpoint rejected, previous kept: too big|second line"
    );
    assert_eq!(ad(7)["HoldReason"], "held by alice");
    assert_eq!(ad(8)["Reason"], "released by alice");
    assert_eq!(ad(10)["Checkpointed"], false);
    assert_eq!(ad(11)["TerminatedNormally"], true);
    assert_eq!(ad(11)["ReturnValue"], 3);
    assert_eq!(ad(12)["TerminatedNormally"], false);
    assert_eq!(ad(12)["TerminatedBySignal"], 9);
    assert_eq!(ad(13)["Reason"], "removed by alice");
    assert_eq!(
        ad(14)["Message"],
        "failed to start on b: Argument list too long (E2BIG)"
    );
    assert_eq!(ad(15)["HoldReasonCode"], 6);
    assert_eq!(ad(15)["HoldReasonSubCode"], 7);
}
