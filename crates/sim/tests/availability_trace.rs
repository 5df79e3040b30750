//! Trace CSV replay/export: round trip and error reporting (file and line).

use gleaner_core::time::Time;
use gleaner_sim::SimError;
use gleaner_sim::availability::{Model, State, Trace};

#[test]
fn export_then_import_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let t = Trace::generate(
        &Model::parse("m3").unwrap(),
        9,
        5,
        Time(10 * 86_400_000_000),
    );
    let p = dir.path().join("t.csv");
    t.write_csv(&p).unwrap();
    let back = Trace::load(&p).unwrap();
    assert_eq!(back, t);
    // Writing again gives the same bytes.
    let p2 = dir.path().join("t2.csv");
    back.write_csv(&p2).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&p2).unwrap());
    assert!(
        std::fs::read_to_string(&p)
            .unwrap()
            .starts_with("station,start,end,state\n")
    );
}

#[test]
fn parses_names_decimals_comments_and_gaps() {
    let text = "# recorded on ws01/ws02\nstation,start,end,state\nws01,0,60.5,AV\nws02,0,30,na\n\nws01,100,200,NA\n";
    let t = Trace::parse(text.as_bytes(), "mem.csv").unwrap();
    assert_eq!(t.names, vec!["ws01", "ws02"]);
    assert_eq!(t.stations[0][0].end, Time(60_500_000));
    assert_eq!(t.stations[1][0].state, State::Na);
    // The gap 60.5–100 s is NA in the contiguous view.
    let c = t.contiguous(0, Time::from_secs(300));
    assert_eq!(c[1].state, State::Na);
    assert_eq!(c[1].start, Time(60_500_000));
    assert_eq!(c.last().unwrap().end, Time::from_secs(300));
}

fn err_of(text: &str) -> (String, u64, String) {
    match Trace::parse(text.as_bytes(), "bad.csv") {
        Err(SimError::Trace { path, line, msg }) => (path, line, msg),
        other => panic!("expected a trace error, got {other:?}"),
    }
}

#[test]
fn errors_name_the_file_and_line() {
    let (p, l, m) = err_of("station,begin,end,state\n");
    assert_eq!((p.as_str(), l), ("bad.csv", 1));
    assert!(m.contains("header"), "{m}");
    let (_, l, m) = err_of("station,start,end,state\na,0,10,AV\na,10,20,XX\n");
    assert_eq!(l, 3);
    assert!(m.contains("AV or NA"), "{m}");
    let (_, l, m) = err_of("station,start,end,state\na,0,10,AV\nb,0,5,NA\na,5,20,NA\n");
    assert_eq!(l, 4);
    assert!(m.contains("overlaps"), "{m}");
    let (_, l, m) = err_of("station,start,end,state\na,-3,10,AV\n");
    assert_eq!(l, 2);
    assert!(m.contains("start"), "{m}");
    let (_, l, m) = err_of("station,start,end,state\na,10,10,AV\n");
    assert_eq!(l, 2);
    assert!(m.contains("≤"), "{m}");
    let (_, l, _) = err_of("station,start,end,state\na,0,10\n");
    assert_eq!(l, 2);
    // The Display form carries file and line too.
    let e = Trace::parse(
        "station,start,end,state\n\nx,1,2,AV\nx,1.5,3,NA\n".as_bytes(),
        "f.csv",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string().split(':').take(2).collect::<Vec<_>>(),
        vec!["f.csv", " line 4"]
    );
    // Missing file.
    let e = Trace::load(std::path::Path::new("/nonexistent/x.csv")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/x.csv"));
}
