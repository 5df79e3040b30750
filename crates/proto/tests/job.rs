//! Job ids, state codes, the transition table, argument quoting.

use gleaner_proto::job::{
    ArgsError, JobDescription, JobEventKind, JobId, JobState, JobStateKind, format_arguments,
    parse_arguments, parse_environment,
};
use proptest::prelude::*;

#[test]
fn job_id_display_parse_serde() {
    let id = JobId::new(12, 0);
    assert_eq!(id.to_string(), "12.0");
    assert_eq!("12.0".parse::<JobId>(), Ok(id));
    assert_eq!(serde_json::to_string(&id).unwrap(), "\"12.0\"");
    assert_eq!(
        serde_json::from_str::<JobId>("\"7.3\"").unwrap(),
        JobId::new(7, 3)
    );
    for bad in [
        "",
        "12",
        "12.",
        ".0",
        "a.b",
        "+1.0",
        "1.-1",
        "1.2.3",
        "99999999999999999999.0",
    ] {
        assert!(bad.parse::<JobId>().is_err(), "{bad:?}");
    }
    assert!(JobId::new(2, 9) < JobId::new(10, 0));
}

#[test]
fn htcondor_status_codes() {
    let codes: Vec<(JobStateKind, u8)> = JobStateKind::ALL.iter().map(|k| (*k, k.code())).collect();
    assert_eq!(
        codes,
        vec![
            (JobStateKind::Idle, 1),
            (JobStateKind::Running, 2),
            (JobStateKind::Suspended, 7),
            (JobStateKind::Held, 5),
            (JobStateKind::Completed, 4),
            (JobStateKind::Removed, 3),
        ]
    );
    for k in JobStateKind::ALL {
        assert_eq!(JobStateKind::from_code(k.code()), Some(k));
        assert_eq!(k.name().parse::<JobStateKind>(), Ok(k));
        assert_eq!(k.code().to_string().parse::<JobStateKind>(), Ok(k));
    }
    assert_eq!(JobStateKind::from_code(6), None);
    assert_eq!("H".parse::<JobStateKind>(), Ok(JobStateKind::Held));
    assert!("zombie".parse::<JobStateKind>().is_err());
    assert_eq!(JobState::Completed { exit_code: 3 }.code(), 4);
}

#[test]
fn transition_table() {
    use JobStateKind::*;
    let legal = [
        (Idle, Running),
        (Idle, Held),
        (Idle, Removed),
        (Running, Idle),
        (Running, Suspended),
        (Running, Held),
        (Running, Completed),
        (Running, Removed),
        (Suspended, Idle),
        (Suspended, Running),
        (Suspended, Held),
        (Suspended, Removed),
        (Held, Idle),
        (Held, Removed),
    ];
    for from in JobStateKind::ALL {
        for to in JobStateKind::ALL {
            assert_eq!(
                from.can_transition_to(to),
                legal.contains(&(from, to)),
                "{from} -> {to}"
            );
            assert_eq!(
                from.transition_event(to).is_some(),
                from.can_transition_to(to)
            );
        }
    }
    assert_eq!(Idle.transition_event(Running), Some(JobEventKind::Started));
    assert_eq!(
        Suspended.transition_event(Running),
        Some(JobEventKind::Resumed)
    );
    assert_eq!(Running.transition_event(Idle), Some(JobEventKind::Evicted));
    assert_eq!(Held.transition_event(Idle), Some(JobEventKind::Released));
    assert_eq!(
        Running.transition_event(Completed),
        Some(JobEventKind::Completed)
    );
    // condor_rm of a completed job is an error.
    let err = JobState::Completed { exit_code: 0 }
        .check_transition(&JobState::Removed)
        .unwrap_err();
    assert_eq!(err.to_string(), "job cannot go from completed to removed");
    assert!(JobState::Removed.is_terminal());
}

#[test]
fn state_serde_is_tagged() {
    let s = JobState::Held {
        reason: "disk full".into(),
    };
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#"{"state":"held","reason":"disk full"}"#);
    assert_eq!(serde_json::from_str::<JobState>(&json).unwrap(), s);
    assert_eq!(
        serde_json::to_string(&JobState::Idle).unwrap(),
        r#"{"state":"idle"}"#
    );
    assert_eq!(s.to_string(), "held (disk full)");
}

#[test]
fn arguments_new_and_old_style() {
    assert_eq!(
        parse_arguments(r#""3 simple arguments""#).unwrap(),
        vec!["3", "simple", "arguments"]
    );
    assert_eq!(
        parse_arguments(r#""one 'two with spaces' 3""#).unwrap(),
        vec!["one", "two with spaces", "3"]
    );
    assert_eq!(
        parse_arguments(r#""one ""two"" 'spacey ''quoted'' argument'""#).unwrap(),
        vec!["one", "\"two\"", "spacey 'quoted' argument"]
    );
    assert_eq!(parse_arguments(r#""a '' b""#).unwrap(), vec!["a", "", "b"]);
    assert_eq!(
        parse_arguments("old style \\\"q\\\"").unwrap(),
        vec!["old", "style", "\"q\""]
    );
    assert_eq!(parse_arguments("").unwrap(), Vec::<String>::new());
    assert_eq!(
        parse_arguments(r#""a 'b""#),
        Err(ArgsError::UnterminatedQuote)
    );
    assert_eq!(
        parse_arguments(r#""a b"#),
        Err(ArgsError::UnterminatedDoubleQuote)
    );
    assert_eq!(parse_arguments(r#""a" b"#), Err(ArgsError::TrailingText));
}

#[test]
fn environment_styles() {
    let e = parse_environment(r#""A=1 B='two words' C=""#).unwrap();
    assert_eq!(e.get("A").unwrap(), "1");
    assert_eq!(e.get("B").unwrap(), "two words");
    assert_eq!(e.get("C").unwrap(), "");
    let e = parse_environment("A=1;B=x=y").unwrap();
    assert_eq!(e.get("B").unwrap(), "x=y");
    assert!(matches!(
        parse_environment("NOEQUALS"),
        Err(ArgsError::NotAssignment(_))
    ));
}

#[test]
fn description_serde_round_trip_and_defaults() {
    let mut d = JobDescription::new("bob", "/bin/sleep");
    d.arguments = vec!["10".into()];
    d.custom_attrs.insert("Project".into(), "\"x\"".into());
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(serde_json::from_str::<JobDescription>(&json).unwrap(), d);
    // Missing fields take defaults, so older records stay readable.
    let min: JobDescription = serde_json::from_str(r#"{"owner":"bob","executable":"x"}"#).unwrap();
    assert_eq!(min.executable, "x");
}

proptest! {
    #[test]
    fn format_then_parse_is_identity(args in prop::collection::vec("[ -~]{0,12}", 0..6)) {
        let text = format_arguments(&args);
        prop_assert_eq!(parse_arguments(&text).unwrap(), args);
    }

    #[test]
    fn parsing_never_panics(s in "(?s).{0,200}") {
        let _ = parse_arguments(&s);
        let _ = parse_environment(&s);
        let _ = s.parse::<JobId>();
        let _ = s.parse::<JobStateKind>();
    }
}
