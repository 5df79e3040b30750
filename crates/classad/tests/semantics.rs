//! Unit tests of parsing, evaluation, ads, matching and printing.

use gleaner_classad::{
    Ad, ConjunctResult, EvalContext, Value, analyze_requirements, eval_command, matches,
    parse_expr, rank, unparse_expr,
};

fn ev(src: &str) -> String {
    eval_command(src, None, None, 1_700_000_000).expect("parses")
}

fn ev_with(src: &str, my: &str, target: &str) -> String {
    let my = Ad::parse(my).expect("my");
    let target = Ad::parse(target).expect("target");
    eval_command(src, Some(&my), Some(&target), 1_700_000_000).expect("parses")
}

#[test]
fn literals_and_printing() {
    assert_eq!(ev("1 + 2"), "3");
    assert_eq!(ev("3.0"), "3.000000000000000E+00");
    assert_eq!(ev("0.1"), "1.000000000000000E-01");
    assert_eq!(ev("1e100"), "1.000000000000000E+100");
    assert_eq!(ev("-0.0"), "-0.0");
    assert_eq!(ev("0.0"), "0.0");
    assert_eq!(ev("-1.0/0"), "real(\"-INF\")");
    assert_eq!(ev("0.0/0"), "real(\"NaN\")");
    assert_eq!(ev(r#""a\"b\\c\n""#), r#""a\"b\\c\n""#);
    assert_eq!(ev(r#""é""#), r#""\303\251""#);
    assert_eq!(ev("{1, 2}"), "{ 1,2 }");
    assert_eq!(ev("{}"), "{  }");
    assert_eq!(ev("[a = 1; b = a + 1]"), "[ a = 1; b = a + 1 ]");
    assert_eq!(ev("[]"), "[  ]");
    assert_eq!(ev("undefined"), "undefined");
    assert_eq!(ev("ERROR"), "error");
    assert_eq!(ev("010"), "10");
}

/// Found by the `classad_parse_eval` fuzz target: `1 .p` printed as `1.p`,
/// which does not parse (a real needs a digit after the point); and, with
/// the first fix, `1e348 .p` printed as `real("INF") .p` and then as
/// `real("INF").p`.
#[test]
fn selection_from_a_number_prints_and_reads_back() {
    for src in ["1 .p", "2.5 .p", "[ a = 1 ] + 1 .p", "(1).p"] {
        let e = parse_expr(src).expect("parses");
        let printed = unparse_expr(&e);
        let again = parse_expr(&printed).unwrap_or_else(|err| panic!("{printed:?}: {err}"));
        assert_eq!(e, again, "{src:?} printed as {printed:?}");
    }
    assert_eq!(unparse_expr(&parse_expr("1 .p").expect("parses")), "1 .p");
    assert_eq!(unparse_expr(&parse_expr("x1.p").expect("parses")), "x1.p");
    // An infinite literal prints as a call, which needs no space.
    let inf = unparse_expr(&parse_expr("1e348 .p").expect("parses"));
    assert_eq!(inf, "real(\"INF\").p");
    assert_eq!(unparse_expr(&parse_expr(&inf).expect("parses")), inf);
}

#[test]
fn arithmetic() {
    assert_eq!(ev("10 / 3"), "3");
    assert_eq!(ev("-7 / 2"), "-3");
    assert_eq!(ev("-7 % 2"), "-1");
    assert_eq!(ev("1 / 0"), "error");
    assert_eq!(ev("5 % 0"), "error");
    assert_eq!(ev("1.0 / 0"), "error");
    assert_eq!(ev("1 + 1.5"), "2.500000000000000E+00");
    assert_eq!(ev("true + 1"), "2");
    assert_eq!(ev("\"a\" + 1"), "error");
    assert_eq!(ev("9223372036854775807 + 1"), "-9223372036854775808");
    assert_eq!(ev("-9223372036854775808 / -1"), "9223372036854775807");
    assert_eq!(ev("1 << 70"), "64");
    assert_eq!(ev("-8 >>> 1"), "9223372036854775804");
    assert_eq!(ev("7.5 % 2"), "error");
}

#[test]
fn three_valued_logic() {
    assert_eq!(ev("false && undefined"), "false");
    assert_eq!(ev("true && undefined"), "undefined");
    assert_eq!(ev("undefined || true"), "true");
    assert_eq!(ev("undefined || false"), "undefined");
    assert_eq!(ev("undefined && error"), "error");
    assert_eq!(ev("false && error"), "false");
    assert_eq!(ev("error || true"), "error");
    assert_eq!(ev("true || error"), "true");
    assert_eq!(ev("1 && true"), "true");
    assert_eq!(ev("\"x\" && true"), "error");
    assert_eq!(ev("!undefined"), "undefined");
    assert_eq!(ev("undefined ? 1 : 2"), "undefined");
    assert_eq!(ev("error ? 1 : 2"), "error");
    assert_eq!(ev("true ? 1 : 1/0"), "1");
}

#[test]
fn comparisons() {
    assert_eq!(ev(r#""abc" == "ABC""#), "true");
    assert_eq!(ev(r#""abc" =?= "ABC""#), "false");
    assert_eq!(ev(r#""abc" is "abc""#), "true");
    assert_eq!(ev(r#""abc" < "ABD""#), "true");
    assert_eq!(ev(r#"1 < "a""#), "error");
    assert_eq!(ev("undefined == undefined"), "undefined");
    assert_eq!(ev("undefined =?= undefined"), "true");
    assert_eq!(ev("x =!= undefined"), "false");
    assert_eq!(ev("1 =?= 1.0"), "false");
    assert_eq!(ev("1 == 1.0"), "true");
    assert_eq!(ev("{1} == {1}"), "error");
}

#[test]
fn precedence() {
    assert_eq!(ev("1 + 2 * 3"), "7");
    assert_eq!(ev("(1 + 2) * 3"), "9");
    assert_eq!(ev("1 << 2 + 1"), "8");
    assert_eq!(ev("1 | 2 ^ 3 & 4"), "3");
    assert_eq!(ev("1 & 3 == 3"), "error");
    assert_eq!(ev("1 ? 2 : 0 ? 4 : 5"), "2");
    assert_eq!(ev("0 ? 2 : 0 ? 4 : 5"), "5");
    assert_eq!(ev("- 2 * 3"), "-6");
    assert_eq!(ev("!false && false"), "false");
    assert_eq!(ev("10 - 2 - 3"), "5");
}

#[test]
fn scoping_and_lazy_references() {
    let my = "[ a = 1; b = a + 1; c = c + 1; d = e; e = d; s = \"x\"; n = [ x = 1; y = x + a ] ]";
    let target = "[ a = 10; m = 2048; t = MY.a; Memory = 4096 ]";
    assert_eq!(ev_with("b", my, target), "2");
    assert_eq!(ev_with("B", my, target), "2");
    assert_eq!(ev_with("MY.a + TARGET.a", my, target), "11");
    assert_eq!(ev_with("TARGET.t", my, target), "10");
    assert_eq!(ev_with("c", my, target), "undefined");
    assert_eq!(ev_with("d", my, target), "undefined");
    assert_eq!(ev_with("n.y", my, target), "2");
    assert_eq!(ev_with("n.a", my, target), "1");
    assert_eq!(ev_with("[q = a].q", my, target), "1");
    // Unscoped names fall back to TARGET in the CLI (matchmaking semantics).
    assert_eq!(ev_with("Memory", my, target), "4096");
    assert_eq!(ev_with("MY.Memory", my, target), "undefined");
    let my_ad = Ad::parse(my).expect("my");
    let t_ad = Ad::parse(target).expect("target");
    let no_fallback = EvalContext::new(0)
        .with_my(&my_ad)
        .with_target(&t_ad)
        .with_target_fallback(false);
    assert!(
        no_fallback
            .eval(&parse_expr("Memory").expect("parse"))
            .is_undefined()
    );
}

#[test]
fn lists_and_ads() {
    assert_eq!(ev("{1, 2, 3}[1]"), "2");
    assert_eq!(ev("{1, 2, 3}[3]"), "error");
    assert_eq!(ev("{[a = 1], [a = 2]}.a"), "{ 1,2 }");
    assert_eq!(ev("[a = 1][\"A\"]"), "1");
    assert_eq!(ev("{1 + 1, 2}"), "{ 1 + 1,2 }");
    assert_eq!(ev("size({1, 2})"), "2");
}

#[test]
fn builtins() {
    assert_eq!(ev("ifThenElse(1 > 0, \"y\", \"n\")"), "\"y\"");
    assert_eq!(ev("isUndefined(foo)"), "true");
    assert_eq!(ev("member(\"A\", {\"a\", \"b\"})"), "true");
    assert_eq!(ev("identicalMember(\"A\", {\"a\"})"), "false");
    assert_eq!(
        ev("strcat(\"a\", 1, 2.5, true)"),
        "\"a12.500000000000000E+00true\""
    );
    assert_eq!(ev("substr(\"abcdef\", -2)"), "\"ef\"");
    assert_eq!(ev("toUpper(\"aBc\")"), "\"ABC\"");
    assert_eq!(ev("int(\"12.7\")"), "12");
    assert_eq!(ev("real(3)"), "3.000000000000000E+00");
    assert_eq!(ev("string(1.5)"), "\"1.500000000000000E+00\"");
    assert_eq!(ev("round(2.5)"), "2");
    assert_eq!(ev("floor(-2.5)"), "-3");
    assert_eq!(ev("pow(2, 10)"), "1024");
    assert_eq!(ev("pow(-2, 3)"), "-7");
    assert_eq!(ev("regexp(\"^a.c$\", \"ABC\", \"i\")"), "true");
    assert_eq!(ev("regexps(\"b(.)\", \"abc\", \"x\\\\1y\")"), "\"xcy\"");
    assert_eq!(ev("sum({1, 2.5})"), "3.500000000000000E+00");
    assert_eq!(ev("avg({1, 2})"), "1.500000000000000E+00");
    assert_eq!(ev("max({})"), "undefined");
    assert_eq!(ev("time()"), "1700000000");
    assert_eq!(ev("noSuchFunction(1)"), "error");
    assert_eq!(ev("stringListMember(\"b\", \"a, b,c\")"), "true");
    assert_eq!(ev("stringListSize(\"a, b,c\")"), "3");
    assert_eq!(ev("eval(\"1 + 2\")"), "3");
    assert_eq!(ev("unparse(x)"), "\"\"");
    assert_eq!(ev_with("unparse(b)", "b = a + 1", "[]"), "\"a + 1\"");
}

#[test]
fn parse_errors_name_positions() {
    let e = parse_expr("1 + * 2").expect_err("bad");
    assert_eq!(e.offset, 4);
    assert_eq!(e.column, 5);
    let e = parse_expr("a &&\n  (b").expect_err("bad");
    assert_eq!(e.line, 2);
    assert_eq!(e.column, 5);
    assert!(e.to_string().contains("line 2, column 5"), "{e}");
    let e = parse_expr("\"open").expect_err("bad");
    assert_eq!(e.offset, 0);
    assert!(parse_expr("5.").is_err());
    assert!(parse_expr("0x10").is_err());
    assert!(parse_expr("").is_err());
    let e = Ad::parse("A = 1\nB = (2\n").expect_err("bad");
    assert!(e.to_string().contains("line 2, column 7"), "{e}");
}

#[test]
fn deep_nesting_is_rejected_not_overflowed() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(parse_expr(&deep).is_err());
    let deep = format!("{}1", "-".repeat(100_000));
    assert!(parse_expr(&deep).is_err());
    let deep = format!("{}1{}", "{".repeat(100_000), "}".repeat(100_000));
    assert!(parse_expr(&deep).is_err());
    let long = vec!["1"; 100_000].join(" + ");
    assert!(parse_expr(&long).is_err());
    // A long chain of attribute indirections evaluates to error instead of overflowing.
    let mut ad = Ad::new();
    for i in 0..5000 {
        ad.insert(&format!("a{i}"), &format!("a{} + 1", i + 1))
            .expect("insert");
    }
    ad.insert_int("a5000", 0);
    let v = EvalContext::new(0).with_my(&ad).eval_attr("a0");
    assert!(v.is_error(), "{v}");
    // Moderately deep expressions still work.
    let ok = format!("{}1{}", "(".repeat(60), ")".repeat(60));
    assert_eq!(ev(&ok), "1");
}

#[test]
fn ad_files_old_and_new() {
    let old = "# a comment\nMemory = 2048\n\nArch = \"X86_64\"\nRequirements = TARGET.Memory >= 1024 && Arch == \"x86_64\"\n";
    let ad = Ad::parse(old).expect("old");
    assert_eq!(ad.len(), 3);
    assert!(ad.contains("memory"));
    let new = "[ Memory = 2048; Arch = \"X86_64\"; Requirements = TARGET.Memory >= 1024 ]";
    let ad2 = Ad::parse(new).expect("new");
    assert_eq!(ad2.len(), 3);
    assert_eq!(
        ad2.to_string(),
        "[ Arch = \"X86_64\"; Memory = 2048; Requirements = TARGET.Memory >= 1024 ]"
    );
    let reparsed = Ad::parse(&ad.to_old_syntax()).expect("roundtrip");
    assert_eq!(reparsed, ad);
    assert!(Ad::parse("= 3").is_err());
    let commented = Ad::parse("# slot ad\n[ Cpus = 4; // cores\n  Memory = 2048 /* MiB */ ]\n")
        .expect("comments");
    assert_eq!(commented.len(), 2);
    assert!(Ad::parse("true = 3").is_err());
}

#[test]
fn matchmaking() {
    let job = Ad::parse(
        "Requirements = TARGET.Memory >= RequestMemory && Arch == \"X86_64\"\nRequestMemory = 1024\nRank = Memory / 1024\nOwner = \"alice\"",
    )
    .expect("job");
    let big = Ad::parse("[ Memory = 4096; Arch = \"X86_64\"; Requirements = TARGET.Owner != \"mallory\"; Rank = 0 ]").expect("big");
    let small =
        Ad::parse("[ Memory = 512; Arch = \"X86_64\"; Requirements = true ]").expect("small");
    let picky =
        Ad::parse("[ Memory = 8192; Arch = \"X86_64\"; Requirements = TARGET.Owner == \"bob\" ]")
            .expect("picky");
    assert!(matches(&job, &big, 0));
    assert!(!matches(&job, &small, 0));
    assert!(!matches(&job, &picky, 0));
    assert_eq!(rank(&job, &big, 0), 4.0);
    assert_eq!(rank(&big, &job, 0), 0.0);
    let norank = Ad::parse("Rank = \"high\"").expect("ad");
    assert_eq!(rank(&norank, &big, 0), 0.0);
    // Missing Requirements never matches.
    assert!(!matches(
        &job,
        &Ad::parse("Memory = 4096\nArch = \"X86_64\"").expect("ad"),
        0
    ));

    let req = job.get("Requirements").expect("req").clone();
    let report = analyze_requirements(&req, &job, &small, 0);
    assert_eq!(report.len(), 2);
    assert_eq!(report[0].result, ConjunctResult::False);
    assert!(report[0].blocks_match);
    assert_eq!(report[0].expr, "TARGET.Memory >= RequestMemory");
    assert_eq!(report[1].result, ConjunctResult::True);
    let report = analyze_requirements(&req, &job, &Ad::new(), 0);
    assert_eq!(report[0].result, ConjunctResult::Undefined);
    assert_eq!(report[1].result, ConjunctResult::Undefined);
}

#[test]
fn value_accessors() {
    let v = EvalContext::new(0).eval(&parse_expr("1.5 * 2").expect("parse"));
    assert_eq!(v.as_f64(), Some(3.0));
    assert_eq!(v.type_name(), "real");
    assert!(matches!(v, Value::Real(_)));
}

/// Worst-case evaluation depth must fit comfortably in a small thread stack.
#[test]
fn deep_evaluation_fits_in_a_small_stack() {
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let mut ad = Ad::new();
            for i in 0..50 {
                let mut e = format!("a{}", i + 1);
                for _ in 0..40 {
                    e = format!("ifThenElse(true, strcat({e}), {{[x = 1]}}[0].x)");
                }
                ad.insert(&format!("a{i}"), &e).expect("insert");
            }
            ad.insert_int("a50", 7);
            let v = EvalContext::new(0).with_my(&ad).eval_attr("a0");
            assert!(v.is_error(), "{v}");
            let deep = format!("{}1{}", "[a = ".repeat(60), "]".repeat(60));
            parse_expr(&deep).expect("60 nested ads parse");
            let deep = format!("{}1{}", "-(".repeat(60), ")".repeat(60));
            assert_eq!(
                EvalContext::new(0)
                    .eval(&parse_expr(&deep).expect("parse"))
                    .unparse(),
                "1"
            );
        })
        .expect("spawn");
    handle.join().expect("no stack overflow");
}

#[test]
fn types_are_thread_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Ad>();
    assert_send_sync::<Value>();
    assert_send_sync::<EvalContext>();
    assert_send_sync::<gleaner_classad::Expr>();
}

/// Reference cycles evaluate to `undefined` (as in HTCondor), within one
/// ad and across the two ads of a match; the same attribute name in the
/// other ad, or at the same position of another ad, is no cycle.
#[test]
fn cycles_are_undefined_and_only_cycles() {
    assert_eq!(ev_with("MY.a", "a = b\nb = a", "x = 1"), "undefined");
    assert_eq!(ev_with("MY.x", "x = x + 1", "x = 1"), "undefined");
    assert_eq!(ev_with("MY.x", "x = TARGET.x", "x = MY.x"), "undefined");
    assert_eq!(ev_with("MY.x", "x = TARGET.x + 1", "x = 5"), "6");
    // `y` of my ad and `z` of the target are both at position 0: told
    // apart, and a cycle through both still found.
    assert_eq!(ev_with("MY.y", "y = TARGET.z", "z = 2 * MY.w\nw = 1"), "2");
    assert_eq!(ev_with("MY.y", "y = TARGET.z", "z = TARGET.y"), "undefined");
}

/// A slot taken with `slot_of` replaces the value in place until the ad's
/// positions change (a removal) or it is used on other contents (a copy
/// being written); then it changes nothing and a new lookup is needed.
#[test]
fn slots_replace_in_place_until_positions_change() {
    use gleaner_classad::{Expr, Literal};
    let int = |v| Expr::Lit(Literal::Int(v));
    let mut ad = Ad::parse("A = 1\nDisk = 2\nC = 3").expect("ad");
    let slot = ad.slot_of("disk").expect("bound");
    assert!(ad.replace_at(slot, int(20)));
    assert_eq!(ad.get("Disk"), Some(&int(20)));
    // A copy shares the contents: writing through the slot would change
    // both, so the slot is refused and the copy keeps its value.
    let copy = ad.clone();
    assert!(!ad.replace_at(slot, int(21)));
    drop(copy);
    assert!(ad.replace_at(slot, int(22)));
    // Another ad with the same layout is not this ad.
    let mut other = Ad::parse("A = 1\nDisk = 2\nC = 3").expect("ad");
    assert!(!other.replace_at(slot, int(23)));
    assert_eq!(other.get("Disk"), Some(&int(2)));
    // A removal moves positions: the old slot is stale.
    ad.remove("A");
    assert!(!ad.replace_at(slot, int(24)));
    assert_eq!(ad.get("Disk"), Some(&int(22)));
    assert_eq!(ad.get("C"), Some(&int(3)));
    let slot = ad.slot_of("Disk").expect("bound");
    assert!(ad.replace_at(slot, int(25)));
    assert_eq!(ad.get("Disk"), Some(&int(25)));
    assert_eq!(ad.get("C"), Some(&int(3)));
}

/// `countMatches` and `evalInEachContext`, as HTCondor 25 evaluates them
/// (registered by its `htcondor2` module; values recorded from it): the
/// expression in each nested ad's scope, an attribute reference standing
/// for its expression, an undefined list giving 0 (or undefined), an
/// element that is not an ad no match (error).
#[test]
fn count_matches_and_eval_in_each_context() {
    let my = "[ ads = { [ k = 1 ],[ k = 2 ] }; jt = k > 1; g1 = [ Capability = 7.5 ]; \
              g2 = [ Capability = 8.6 ]; av = { g1,g2 }; n = 5 ]";
    let cases = [
        ("countMatches(k > 1, ads)", "1"),
        ("countMatches(k, ads)", "2"),
        ("evalInEachContext(k * 2, ads)", "{ 2,4 }"),
        ("countMatches(jt, ads)", "1"),
        ("countMatches(k > 1, nope)", "0"),
        ("evalInEachContext(k, nope)", "undefined"),
        ("countMatches(1, {1,2})", "0"),
        ("evalInEachContext(1, {1,2})", "{ error,error }"),
        ("countMatches(Capability > 8, av)", "1"),
        (
            "evalInEachContext(Capability, av)",
            "{ 7.500000000000000E+00,8.600000000000000E+00 }",
        ),
        ("countMatches(k > n, ads)", "0"),
        ("countMatches(Capability > 8, {g1, nope, g2})", "1"),
        (
            "evalInEachContext(Capability, {g1, nope, 3})",
            "{ 7.500000000000000E+00,undefined,error }",
        ),
        ("countMatches(k)", "error"),
    ];
    for (expr, want) in cases {
        assert_eq!(ev_with(expr, my, "[]"), want, "{expr}");
    }
    // In a match, the constraint names the job's attributes too.
    let job = "[ RequestGPUs = 1; RequireGPUs = Capability >= MinCap; MinCap = 8 ]";
    let machine = "[ GPUs_GPU_1 = [ Capability = 7.5 ]; GPUs_GPU_2 = [ Capability = 8.6 ]; \
                   AvailableGPUs = { GPUs_GPU_1,GPUs_GPU_2 } ]";
    assert_eq!(
        ev_with(
            "countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)",
            job,
            machine
        ),
        "1"
    );
}
