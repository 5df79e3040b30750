//! The ClassAd parser, printer and evaluator (job and machine ads, the
//! `requirements`/`rank` of submit files, station `START` policies,
//! `glean q -constraint`).
//!
//! The input is an expression, or an ad when it starts with `[` or has a
//! `Name = expr` line. Invariants: no panic and bounded depth; printing an
//! expression and reading it back gives the same text again (the tree
//! survives `unparse`, as the crate documents); evaluation against fixed
//! MY/TARGET ads terminates; an ad's printed form reads back to an ad with
//! the same printed form; matchmaking against a fixed machine terminates.

#![no_main]

use gleaner_classad::{Ad, EvalContext, matches, parse_expr, rank, unparse_expr};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const NOW: i64 = 1_700_000_000;

fn fixed() -> &'static (Ad, Ad) {
    static ADS: OnceLock<(Ad, Ad)> = OnceLock::new();
    ADS.get_or_init(|| {
        let job = Ad::parse(
            "Owner = \"alice\"\nRequestMemory = 512\nRequestCpus = 1\nCmd = \"/bin/sleep\"\n\
             Requirements = TARGET.Memory >= MY.RequestMemory && TARGET.Arch == \"X86_64\"\n\
             Rank = TARGET.Mips\nArgs = { \"a\", 2, 3.5, [ x = 1 ] }\nSelf = MY.Self + 1",
        )
        .expect("fixed job ad");
        let machine = Ad::parse(
            "[ Name = \"ws1\"; Arch = \"X86_64\"; OpSys = \"LINUX\"; Memory = 2048; Cpus = 4; \
             Mips = 1500; Start = TARGET.Owner =!= \"mallory\"; Requirements = Start; \
             Nested = [ a = 1; b = { 1, 2, undefined } ] ]",
        )
        .expect("fixed machine ad");
        (job, machine)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = gleaner_fuzz::text(data) else {
        return;
    };
    let (job, machine) = fixed();

    if let Ok(e) = parse_expr(text) {
        let printed = unparse_expr(&e);
        let reread = match parse_expr(&printed) {
            Ok(r) => r,
            Err(err) => panic!("{text:?} printed as {printed:?}, which does not parse: {err}"),
        };
        assert_eq!(
            printed,
            unparse_expr(&reread),
            "printing {text:?} twice gives different text"
        );
        let ctx = EvalContext::new(NOW).with_my(job).with_target(machine);
        let v = ctx.eval(&e);
        let _ = v.unparse();
        let _ = ctx.swapped().eval(&e);
        let _ = gleaner_classad::analyze_requirements(&e, job, machine, NOW);
    }

    if let Ok(ad) = Ad::parse(text) {
        let printed = gleaner_classad::unparse::unparse_ad(&ad);
        let reread = match Ad::parse(&printed) {
            Ok(r) => r,
            Err(err) => panic!("ad {text:?} printed as {printed:?}, which does not parse: {err}"),
        };
        assert_eq!(printed, gleaner_classad::unparse::unparse_ad(&reread));
        let _ = ad.to_old_syntax();
        let ctx = EvalContext::new(NOW).with_my(&ad).with_target(machine);
        for (name, _) in ad.iter().take(32) {
            let _ = ctx.eval_attr(name);
        }
        let _ = matches(&ad, machine, NOW);
        let _ = rank(&ad, machine, NOW);
        let _ = matches(machine, &ad, NOW);
    }
});
