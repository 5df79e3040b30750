"""Differential cases for ``classad2``: parsing, evaluation, printing,
conversions and quoting. Each case is a function of no arguments using
only ``classad2``'s API."""

import classad2 as c

EXPRS = [
    "1 + 4",
    "ifThenElse(4 > 6, 123, 456)",
    "foo",
    '5 + "bar"',
    "ifThenElse(1, 2, 3, 4, 5)",
    "10 / 4",
    "10.0 / 4",
    "7 % 3",
    '"abc" == "ABC"',
    '"abc" =?= "ABC"',
    "undefined || true",
    "undefined && false",
    "error =?= error",
    "{1, 2, 3}[1]",
    "[a = 1; b = a + 1].b",
    'strcat("a", "b", 3)',
    'substr("hello", 1, 3)',
    "size({1, 2})",
    'toUpper("x")',
    "int(3.7)",
    "real(3)",
    "floor(-2.5)",
    "1 << 3",
    "2 ** 3",
    "isUndefined(x)",
    'regexp("^a.c$", "abc")',
    "member(2, {1, 2})",
    "1e300 * 1e300",
    "-1.0 / 0",
    "true ? 1 : 2",
    '"a\\nb"',
]

AD = "[ a = 1; b = \"foo\"; c = b; d = a + 4; l = {1, \"x\", b}; n = [x = 1; y = x]; r = 2.5; u = undefined; e = error; t = true ]"

CASES = []


def case(name):
    def add(f):
        CASES.append((name, f))
        return f

    return add


for i, text in enumerate(EXPRS):
    CASES.append((f"eval {i} {text}", lambda text=text: c.ExprTree(text).eval()))
    CASES.append((f"str {i} {text}", lambda text=text: str(c.ExprTree(text))))

for key in ["a", "b", "c", "d", "l", "n", "r", "u", "e", "t"]:
    CASES.append((f"getitem {key}", lambda key=key: c.ClassAd(AD)[key]))
    CASES.append((f"eval attr {key}", lambda key=key: c.ClassAd(AD).eval(key)))

for text in [AD, "[]", "[ l = {} ]", "[ l = { {1,2}, [a=1] } ]", "[ n = [ m = [ z = 1 ]; l = {1} ] ]",
             "[ x = {1,2}[0] ]", "[ x = f({1,2}) ]", "[ r = 1e20; s = 0.1; q = -2.0 ]", '[ s = "q\\"x" ]']:
    CASES.append((f"str ad {text}", lambda text=text: str(c.ClassAd(text))))
    CASES.append((f"repr ad {text}", lambda text=text: repr(c.ClassAd(text))))
    CASES.append((f"printOld {text}", lambda text=text: c.ClassAd(text).printOld()))
    CASES.append((f"printJson {text}", lambda text=text: c.ClassAd(text).printJson()))


@case("from dict")
def _():
    return str(c.ClassAd({"a": 1, "b": "foo", "c": c.ExprTree("b"), "d": c.ExprTree("a + 4"),
                          "f": 1.5, "g": True, "h": [1, 2], "i": {"x": 1}, "j": None}))


@case("missing key raises")
def _():
    return c.ClassAd(AD)["zz"]


@case("get default")
def _():
    return c.ClassAd(AD).get("zz", 5)


@case("case-insensitive keys")
def _():
    ad = c.ClassAd(AD)
    return ["A" in ad, ad["A"], len(ad)]


@case("lookup")
def _():
    return c.ClassAd(AD).lookup("a")


@case("lookup missing")
def _():
    return c.ClassAd(AD).lookup("zz")


@case("eval missing")
def _():
    return c.ClassAd(AD).eval("zz")


@case("update and eval")
def _():
    ad = c.ClassAd(AD)
    ad.update({"e": 8, "f": True})
    ad["g"] = c.ExprTree("b + 5")
    return [ad["g"], ad.eval("g"), ad.eval("e")]


@case("delete")
def _():
    ad = c.ClassAd(AD)
    del ad["a"]
    return [("a" in ad), ad.eval("d")]


@case("bad ad")
def _():
    return c.ClassAd("[ a = ")


@case("bad expr")
def _():
    return c.ExprTree("1 +")


@case("old syntax string refused")
def _():
    return c.ClassAd("a = 1\nb = 2")


@case("equality")
def _():
    return [c.ClassAd("[a=1]") == c.ClassAd("[ a = 1 ]"), c.ExprTree("a+4") == c.ExprTree("a + 4"),
            c.ExprTree("1") == 1]


@case("eval with scope and target")
def _():
    ad = c.ClassAd("[a=1]")
    return [c.ExprTree("a + 4").eval(ad), c.ExprTree("TARGET.x + 1").eval(ad, c.ClassAd("[x=5]")),
            c.ExprTree("x + 1").eval(ad, c.ClassAd("[x=5]"))]


@case("simplify")
def _():
    return [c.ExprTree("1 + 2 + x").simplify(), c.ExprTree("a+1").simplify(c.ClassAd("[a=1]"))]


@case("matches")
def _():
    m = c.ClassAd("[Requirements = TARGET.x > 1; x = 3]")
    j = c.ClassAd("[Requirements = TARGET.x > 2; x = 2]")
    return [m.matches(j), j.matches(m), m.symmetricMatch(j)]


@case("quote")
def _():
    return [c.quote('a"b\\c'), c.quote("h\u00e9llo\n"), c.unquote('"a\\"b"'), c.unquote('"a\\nb"')]


@case("unquote bad")
def _():
    return c.unquote("abc")


@case("parseAds old")
def _():
    return [repr(a) for a in c.parseAds("a = 1\nb = 2\n\nc = 3\n")]


@case("parseAds new")
def _():
    return [repr(a) for a in c.parseAds('[a=1] [b="]"]')]


@case("parseAds json")
def _():
    return [repr(a) for a in c.parseAds('{"a": 1, "b": "\\/Expr(a+1)\\/"}', c.ParserType.JSON)]


@case("parseOne")
def _():
    return [repr(c.parseOne("a = 1\n\nb = 2\n")), repr(c.parseOne("[a=1][b=2]"))]


@case("Value enum")
def _():
    return [int(c.Value.Error), int(c.Value.Undefined), c.Value(2).name]


@case("pickle")
def _():
    import pickle

    ad = pickle.loads(pickle.dumps(c.ClassAd(AD)))
    e = pickle.loads(pickle.dumps(c.ExprTree("a + 4")))
    return [repr(ad), str(e)]
