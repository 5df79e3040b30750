//! Property tests: the parser never panics, and printing then re-parsing is stable.

#[allow(dead_code)]
mod corpus;

use gleaner_classad::{Ad, EvalContext, parse_expr, unparse_expr};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_never_panic(s in ".{0,200}") {
        if let Ok(e) = parse_expr(&s) {
            let _ = EvalContext::new(0).eval(&e).unparse();
        }
        let _ = Ad::parse(&s);
    }

    #[test]
    fn operator_soup_never_panics(s in "[-+*/%<>=!?:&|^~(){}\\[\\];.,a-c0-9\" ]{0,120}") {
        if let Ok(e) = parse_expr(&s) {
            let _ = EvalContext::new(0).eval(&e).unparse();
        }
    }

    #[test]
    fn generated_expressions_round_trip(seed in any::<u64>(), depth in 1usize..5) {
        let mut rng = corpus::Rng::new(seed);
        let src = corpus::gen_expr(&mut rng, depth);
        let e1 = parse_expr(&src).expect("corpus expressions parse");
        let printed = unparse_expr(&e1);
        let e2 = parse_expr(&printed).expect("printed form parses");
        prop_assert_eq!(&e1, &e2, "printed: {}", printed);
        prop_assert_eq!(unparse_expr(&e2), printed);
        // Evaluation is unaffected by the round trip.
        let my = Ad::parse(corpus::MY_AD).expect("my");
        let target = Ad::parse(corpus::TARGET_AD).expect("target");
        let ctx = EvalContext::new(corpus::NOW).with_my(&my).with_target(&target);
        prop_assert_eq!(ctx.eval(&e1).unparse(), ctx.eval(&e2).unparse());
    }

    #[test]
    fn literals_round_trip(i in any::<i64>(), r in any::<f64>(), s in any::<String>()) {
        for src in [i.to_string(), gleaner_classad::format_real(r), gleaner_classad::quote_string(&s)] {
            let e = parse_expr(&src).expect("literal parses");
            let v = EvalContext::new(0).eval(&e);
            prop_assert_eq!(v.unparse(), src);
        }
    }
}
