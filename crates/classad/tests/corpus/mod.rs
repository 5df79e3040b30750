//! Deterministic (seeded) generator of ClassAd expressions for the differential test.
//!
//! It mixes a fixed list of hand-picked edge cases with random expression trees over every
//! operator, literal kind, `MY.`/`TARGET.` references into the fixed ads below, lists, nested
//! ads, selection, subscripts and the built-in functions that HTCondor's ClassAd library
//! provides. Constructs with a documented deviation (hex literals, `random()`, the value of
//! `time()`, `unparse()` of lists/ads, `stringList*`) are left out.

/// The `MY` ad every corpus expression is evaluated against.
pub const MY_AD: &str = r#"[ a = 1; b = a + 1; s = "Hello"; c = c + 1; r = 2.5; l = { 1,a,"x" }; n = [ x = 1; y = x + a ]; z = undefined; e = error; t = true; neg = -3; big = 9223372036854775807; f = 0.0; lst = { 3,1.5,2 }; strs = { "b","A","c" }; ads = { [ k = 1 ],[ k = 2 ] }; ci = "hello"; w = TARGET.a + a; 'odd name' = 42; nested = [ inner = [ deep = a + 100 ]; up = a ] ]"#;

/// The `TARGET` ad.
pub const TARGET_AD: &str = r#"[ a = 10; m = 2048; s = "World"; t = MY.a; u = s; Memory = 4096; Arch = "X86_64"; r = -1.5; q = b ]"#;

/// Fixed `time()` used on the Rust side (HTCondor uses the clock, so only
/// clock-independent uses of `time()` appear in the corpus).
pub const NOW: i64 = 1_800_000_000;

/// A small, dependency-free PRNG (SplitMix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "10",
    "-1",
    "-7",
    "100",
    "1024",
    "-3",
    "63",
    "64",
    "65",
    "9223372036854775807",
    "-9223372036854775808",
];
const REALS: &[&str] = &[
    "0.0", "1.5", "-2.25", "2.5", "0.1", "1e10", "1E-3", "3.0", "-0.0", ".5", "1e308", "123.456",
    "-1e308", "2.0",
];
const STRS: &[&str] = &[
    r#""abc""#,
    r#""ABC""#,
    r#""""#,
    r#""Hello""#,
    r#""hello""#,
    r#""a\"b""#,
    r#""x\ty""#,
    r#""1.5""#,
    r#""12""#,
    r#""true""#,
    r#""a,b,c""#,
    r#""line\n""#,
    r#""back\\slash""#,
    r#""X86_64""#,
    r#""  42xyz""#,
    r#""\101\102""#,
];
const ATTRS: &[&str] = &[
    "a",
    "b",
    "s",
    "c",
    "r",
    "l",
    "n",
    "z",
    "e",
    "t",
    "neg",
    "big",
    "f",
    "lst",
    "strs",
    "ads",
    "ci",
    "w",
    "missing",
    "A",
    "S",
    "MY.a",
    "MY.s",
    "MY.missing",
    "TARGET.a",
    "TARGET.m",
    "TARGET.s",
    "TARGET.t",
    "TARGET.u",
    "TARGET.Memory",
    "TARGET.arch",
    "TARGET.r",
    "TARGET.q",
    "TARGET.missing",
    "target.A",
    "my.R",
    "m",
    "Memory",
    "u",
];
const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "%", "<<", ">>", ">>>", "<", "<=", ">", ">=", "==", "!=", "=?=", "=!=",
    "is", "isnt", "&", "^", "|", "&&", "||",
];

/// Generates one random expression of at most `depth` levels.
pub fn gen_expr(rng: &mut Rng, depth: usize) -> String {
    if depth == 0 || rng.chance(25) {
        return gen_leaf(rng);
    }
    match rng.below(12) {
        0..=3 => {
            let op = rng.pick(BINOPS);
            format!(
                "{} {} {}",
                gen_expr(rng, depth - 1),
                op,
                gen_expr(rng, depth - 1)
            )
        }
        4 => {
            let op = rng.pick(&["-", "!", "~", "+"]);
            let inner = gen_expr(rng, depth - 1);
            if rng.chance(50) {
                format!("{op}({inner})")
            } else {
                format!("{op}{}", gen_leaf(rng))
            }
        }
        5 => format!(
            "{} ? {} : {}",
            gen_expr(rng, depth - 1),
            gen_expr(rng, depth - 1),
            gen_expr(rng, depth - 1)
        ),
        6 => format!("({})", gen_expr(rng, depth - 1)),
        7 | 8 => gen_call(rng, depth - 1),
        9 => {
            let n = rng.below(4);
            let items: Vec<String> = (0..n).map(|_| gen_expr(rng, depth - 1)).collect();
            let list = format!("{{{}}}", items.join(", "));
            match rng.below(3) {
                0 => list,
                1 => format!(
                    "{list}[{}]",
                    rng.pick(&["0", "1", "2", "-1", "a", "undefined"])
                ),
                _ => format!("size({list})"),
            }
        }
        10 => {
            let inner = gen_expr(rng, depth - 1);
            match rng.below(6) {
                0 => format!("[p = {inner}; q = p].q"),
                1 => format!("[p = {inner}].p"),
                2 => format!("[a = {inner}; p = a + 1].p"),
                3 => format!("[p = {inner}][\"P\"]"),
                // Shadow MY attributes so that scope resolution inside nested ads is exercised.
                _ => format!(
                    "[a = {}; s = {}; p = {inner}].p",
                    gen_leaf(rng),
                    gen_leaf(rng)
                ),
            }
        }
        _ => {
            let base = rng.pick(&[
                "n",
                "ads",
                "l",
                "lst",
                "[x = 5]",
                "z",
                "a",
                "{[k = a], [k = r]}",
            ]);
            match rng.below(2) {
                0 => format!("{base}.{}", rng.pick(&["x", "y", "k", "a", "missing", "X"])),
                _ => format!(
                    "{base}[{}]",
                    rng.pick(&["0", "1", "2", "3", "\"x\"", "\"Y\"", "1.0", "true"])
                ),
            }
        }
    }
}

fn gen_leaf(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 | 1 => rng.pick(INTS).to_string(),
        2 => rng.pick(REALS).to_string(),
        3 | 4 => rng.pick(STRS).to_string(),
        5 => rng
            .pick(&[
                "true",
                "false",
                "undefined",
                "error",
                "TRUE",
                "Undefined",
                "ERROR",
                "False",
            ])
            .to_string(),
        _ => rng.pick(ATTRS).to_string(),
    }
}

fn gen_call(rng: &mut Rng, depth: usize) -> String {
    // (name, min args, max args)
    const FUNCS: &[(&str, usize, usize)] = &[
        ("ifThenElse", 3, 3),
        ("ifthenelse", 2, 4),
        ("isUndefined", 1, 1),
        ("isError", 1, 1),
        ("isString", 1, 1),
        ("isInteger", 1, 1),
        ("isReal", 1, 1),
        ("isBoolean", 1, 1),
        ("isList", 1, 1),
        ("isClassAd", 1, 1),
        ("member", 2, 2),
        ("identicalMember", 2, 2),
        ("size", 1, 1),
        ("strcat", 0, 3),
        ("substr", 2, 3),
        ("strcmp", 2, 2),
        ("stricmp", 2, 2),
        ("toUpper", 1, 1),
        ("toLower", 1, 1),
        ("int", 1, 1),
        ("real", 1, 1),
        ("string", 1, 1),
        ("bool", 1, 1),
        ("floor", 1, 1),
        ("ceiling", 1, 1),
        ("round", 1, 1),
        ("pow", 2, 2),
        ("regexp", 2, 3),
        ("regexps", 3, 3),
        ("sum", 1, 1),
        ("avg", 1, 1),
        ("min", 1, 1),
        ("max", 1, 1),
        ("eval", 1, 1),
        ("noSuchFunction", 0, 2),
        ("abs", 1, 1),
        ("toLowerCase", 1, 1),
    ];
    let (name, lo, hi) = FUNCS[rng.below(FUNCS.len())];
    let n = lo + rng.below(hi - lo + 1);
    let mut args = Vec::with_capacity(n);
    for i in 0..n {
        let arg = match (name, i) {
            ("member" | "identicalMember" | "sum" | "avg" | "min" | "max", _)
                if (i == 1 || n == 1) && rng.chance(70) =>
            {
                gen_list_arg(rng, depth)
            }
            ("regexp" | "regexps", 0) if rng.chance(80) => rng
                .pick(&[
                    r#""a.c""#,
                    r#""^h""#,
                    r#""L+""#,
                    r#""(b)(c)""#,
                    r#""[0-9]+""#,
                    r#""(""#,
                    r#""""#,
                ])
                .to_string(),
            ("regexp", 2) | ("regexps", 3) => rng.pick(&[r#""i""#, r#""""#, r#""I""#]).to_string(),
            ("regexps", 2) if rng.chance(70) => rng
                .pick(&[r#""[\\1]""#, r#""\\2-\\1""#, r#""x""#, r#""\\0!""#])
                .to_string(),
            ("eval", 0) if rng.chance(70) => rng
                .pick(&[r#""a + 1""#, r#""1 +""#, r#""TARGET.a * 2""#, r#""s""#])
                .to_string(),
            _ => gen_expr(rng, depth),
        };
        args.push(arg);
    }
    format!("{name}({})", args.join(", "))
}

fn gen_list_arg(rng: &mut Rng, depth: usize) -> String {
    if rng.chance(30) {
        return rng
            .pick(&["l", "lst", "strs", "ads", "{}", "z", "a"])
            .to_string();
    }
    let n = rng.below(4);
    let items: Vec<String> = (0..n)
        .map(|_| {
            if rng.chance(70) {
                gen_leaf(rng)
            } else {
                gen_expr(rng, depth.min(1))
            }
        })
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// Hand-picked edge cases (most were probed against HTCondor while writing the evaluator).
pub const FIXED: &[&str] = &[
    "1+2",
    "10/3",
    "-7/2",
    "-7%2",
    "7 % -3",
    "5 % 0",
    "1/0",
    "1.0/0",
    "-1.0/0",
    "0.0/0",
    "1e308*10",
    "-1e308*10",
    "real(\"INF\") + 1",
    "real(\"-INF\")",
    "real(\"nan\")",
    "-9223372036854775808 / -1",
    "-9223372036854775808 % -1",
    "9223372036854775807 + 1",
    "1 << 63",
    "1 << 70",
    "1 << -1",
    "-8 >> 1",
    "-8 >>> 1",
    "5 & 3",
    "5 | 3",
    "5 ^ 3",
    "true & false",
    "1.5 & 1",
    "\"abc\" == \"ABC\"",
    "\"abc\" =?= \"ABC\"",
    "\"abc\" != \"ABC\"",
    "\"abc\" =!= \"ABC\"",
    "\"abc\" < \"ABD\"",
    "\"B\" < \"a\"",
    "1 < \"a\"",
    "{1} == {1}",
    "{1} =?= {1}",
    "{1} =?= 1",
    "[a=1] == [a=1]",
    "1 =?= 1.0",
    "1 == 1.0",
    "1 =?= true",
    "1 == true",
    "true + 1",
    "\"a\" + 1",
    "undefined == undefined",
    "undefined =?= undefined",
    "error =?= error",
    "error == undefined",
    "undefined + error",
    "error + undefined",
    "true && undefined",
    "false && undefined",
    "undefined || true",
    "undefined && error",
    "error && false",
    "false && error",
    "error || true",
    "true || error",
    "1 && true",
    "1.5 && true",
    "0 || false",
    "\"x\" && true",
    "!1",
    "!\"x\"",
    "!undefined",
    "!error",
    "!0.0",
    "-true",
    "-\"a\"",
    "-undefined",
    "~true",
    "~1.5",
    "~5",
    "+true",
    "+1.5",
    "+undefined",
    "1 ? 2 : 3",
    "0 ? 2 : 3",
    "\"x\" ? 1 : 2",
    "error ? 1 : 2",
    "undefined ? 1 : 2",
    "1.5 ? 1 : 2",
    "true ? undefined : 1",
    "1 ? 2 : 3 ? 4 : 5",
    "1 + 2 * 3 == 7 && 1 < 2 || false",
    "1 < 2 == true",
    "1 & 3 == 3",
    "1 | 2 ^ 3 & 4",
    "1 << 2 + 1",
    "1 =?= 1 == true",
    "1 - -1",
    "1 + +1",
    "!!true",
    "(1)",
    "((1 + 2))",
    "a",
    "b",
    "c",
    "MY.a",
    "TARGET.a",
    "t",
    "TARGET.t",
    "m",
    "TARGET.m + MY.a",
    "TARGET.u",
    "u",
    "w",
    "TARGET.q",
    "n",
    "n.y",
    "n.x",
    "n.a",
    "n.q",
    "n[\"x\"]",
    "n[\"X\"]",
    "n[1]",
    "l",
    "l[1]",
    "l[5]",
    "l[-1]",
    "l[\"x\"]",
    "l[1.5]",
    "{1,2,3}[undefined]",
    "undefined[0]",
    "{1,2}[true]",
    "[a=1][true]",
    "{[a=1],[a=2]}.a",
    "{1,[a=1]}.a",
    "{undefined}.a",
    "{}.a",
    "x.y",
    "undefined.y",
    "\"x\".y",
    "[p = a].p",
    "[a = 5; p = a].p",
    "[q = MY.a].q",
    "[q = TARGET.a].q",
    "[x = y; y = x].x",
    "{1+1, 2}",
    "{a, b}",
    "{ -1, -(3), !true, 1.5 }",
    "{}",
    "[]",
    "[a=1;b=a+1]",
    "{[a = 1 + 2], {}}",
    "0.0",
    "-0.0",
    "1e3",
    "1E3",
    ".5",
    "1.5e+2",
    "000123",
    "010",
    "TRUE",
    "Error",
    "my.a",
    "My.A",
    "target.a",
    "A",
    "\"a\\\\b\\'c\\td\"",
    "\"\\101\"",
    "\"\\1\"",
    "\"a\\x\"",
    "strcat(\"\\001\", \"\\177\", \"\\r\", \"\\b\", \"\\f\", \"'\")",
    "ifThenElse(1, 2, 3)",
    "ifThenElse(undefined, 2, 3)",
    "ifThenElse(error, 2, 3)",
    "ifThenElse(\"x\", 2, 3)",
    "ifThenElse(0.0, 2, 3)",
    "ifThenElse(true, 2)",
    "undefined ?: 3",
    "error ?: 3",
    "1 ?: 3",
    "false ?: 3",
    "nosuch ?: 4",
    "z ?: a",
    "(1 > 2) ?: 5",
    "1 ?: 2 ?: 3",
    "undefined ?: undefined ?: 7",
    "1 + 1 ?: 3",
    "1 ? 2 : 3 ?: 4",
    "undefined ?: 1 ? 8 : 9",
    "{ z ?: 1, 2 }",
    "strcat(\"a\", 1, 2.5, true)",
    "strcat(\"a\", undefined)",
    "strcat()",
    "strcat({1})",
    "strcat(undefined, error)",
    "strcat(error, undefined)",
    "size({1,2})",
    "size(\"\")",
    "size(undefined)",
    "size(1)",
    "size([a=1;b=2])",
    "substr(\"abcdef\", 2)",
    "substr(\"abcdef\", 2, 2)",
    "substr(\"abcdef\", -2)",
    "substr(\"abcdef\", 1, -1)",
    "substr(\"abcdef\", 10)",
    "substr(undefined, 1)",
    "substr(\"abc\", -10)",
    "substr(\"abc\", 1, -10)",
    "substr(12345, 1)",
    "substr(\"abc\", 1.5)",
    "toUpper(\"aBc\")",
    "toLower(\"AbC\")",
    "toupper(1)",
    "toUpper(undefined)",
    "strcmp(\"a\", \"B\")",
    "stricmp(\"a\", \"B\")",
    "strcmp(\"a\", 1)",
    "strcmp(undefined, \"a\")",
    "strcmp(error, undefined)",
    "int(\"12\")",
    "int(\"12.7\")",
    "int(\"abc\")",
    "int(-3.7)",
    "int(true)",
    "int(undefined)",
    "int(1e30)",
    "int(-1e30)",
    "int(real(\"NaN\"))",
    "int(\"  12\")",
    "int(\"12abc\")",
    "int(\"0x10\")",
    "int(\"\")",
    "real(\"1.5\")",
    "real(true)",
    "real(\"x\")",
    "real(\"1e3\")",
    "real(\" 1.5 \")",
    "real(\"1.5x\")",
    "string(1)",
    "string(true)",
    "string(undefined)",
    "string({1})",
    "string(1.5)",
    "string(-0.0)",
    "bool(\"true\")",
    "bool(\"TRUE\")",
    "bool(\"yes\")",
    "bool(1)",
    "bool(0.0)",
    "bool(\"1\")",
    "bool(\"  true\")",
    "floor(2.5)",
    "floor(-2.5)",
    "floor(3)",
    "ceiling(2.1)",
    "ceiling(\"2.1\")",
    "round(3.5)",
    "round(2.5)",
    "round(-2.5)",
    "round(2)",
    "floor(undefined)",
    "floor(true)",
    "ceiling(-0.5)",
    "round(1e30)",
    "pow(2,3)",
    "pow(2,-1)",
    "pow(2.0,3)",
    "pow(2, 0.5)",
    "pow(0, 0)",
    "pow(2, 64)",
    "pow(2, 62)",
    "pow(-8, 1.0/3)",
    "pow(-2, 3)",
    "pow(-3, 3)",
    "pow(-2, 2)",
    "pow(-1, 5)",
    "pow(0, -1)",
    "pow(\"2\", 2)",
    "pow(true, 2)",
    "pow(undefined, 1)",
    "member(1, {1,2})",
    "member(1.0, {1,2})",
    "member(\"A\", {\"a\"})",
    "identicalMember(\"A\", {\"a\"})",
    "identicalMember(1.0, {1})",
    "member(undefined, {1})",
    "member(1, undefined)",
    "member(1, 1)",
    "member({1}, {1})",
    "member(1, {})",
    "identicalMember(undefined, {undefined})",
    "identicalMember(1, undefined)",
    "identicalMember(error, {error})",
    "regexp(\"a.c\", \"abc\")",
    "regexp(\"A.C\", \"abc\")",
    "regexp(\"A.C\", \"abc\", \"i\")",
    "regexp(\"(\", \"abc\")",
    "regexp(\"a\", \"A\", \"I\")",
    "regexps(\"b(.)\", \"abc\", \"x\\\\1y\")",
    "regexps(\"z\", \"abc\", \"x\")",
    "regexp(undefined, \"a\")",
    "regexp(\"a\", 1)",
    "isUndefined(x)",
    "isError(error)",
    "isString(\"a\")",
    "isInteger(1.0)",
    "isReal(1.0)",
    "isBoolean(1)",
    "isList({})",
    "isClassAd([])",
    "isUndefined()",
    "isUndefined(1, 2)",
    "sum({1, 2.5})",
    "sum({1, \"a\"})",
    "sum({1, undefined})",
    "sum({})",
    "sum({true})",
    "sum({true, true})",
    "avg({1,2,4})",
    "avg({})",
    "avg({2, 2})",
    "avg({undefined})",
    "min({3, 1.5})",
    "min({1, 2.5})",
    "max({2, 1.5})",
    "max({})",
    "min({true})",
    "min(undefined)",
    "sum(1)",
    "max({1, error})",
    "abs(-3)",
    "min(1, 2)",
    "toLowerCase(\"X\")",
    "unknownfn(1)",
    "unparse(a)",
    "unparse(s)",
    "unparse(1+2)",
    "eval(\"1+2\")",
    "eval(\"a + 1\")",
    "eval(1)",
    "eval(\"1 +\")",
    "eval(undefined)",
    "time() > 1000000000",
    "isInteger(time())",
    "-1 >>> 0",
    "-1 >>> 64",
    "-1 >>> -1",
    "-8 >>> 65",
    "8 >>> 64",
    "-1 >>> 63",
    "-16 >>> 2",
    "16 >>> -62",
    "1 << 64",
    "-1 >> 64",
    "pow(3, 39)",
    "pow(-3, 39)",
    "pow(10, 19)",
    "min({TARGET.Memory, false})",
    "min({true, TARGET.a, 9223372036854775807})",
    "regexps(\"^h\", \"hello\", \"[\\\\1]\")",
    "1 +",
    "5.",
    "(1",
    "{1,",
    "[a = ]",
    "a b",
    "1 ? 2",
    "f(",
    "\"unterminated",
    "MY.",
    "1 === 2",
    "@",
    "a.1",
];

/// The full corpus: the fixed cases followed by `n_random` random expressions.
pub fn corpus(seed: u64, n_random: usize) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<String> = FIXED.iter().map(|s| s.to_string()).collect();
    for _ in 0..n_random {
        let depth = 1 + rng.below(4);
        out.push(gen_expr(&mut rng, depth));
    }
    out
}
