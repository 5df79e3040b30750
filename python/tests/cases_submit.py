"""Differential cases for ``htcondor2.Submit`` without a schedd: reading
a text, printing it, its keys, queue arguments, items and expansion."""

import htcondor2 as h

CASES = []


def case(name):
    def add(f):
        CASES.append((name, f))
        return f

    return add


TEXTS = [
    "\nexecutable = /bin/sleep\narguments = 5\n+Foo = \"bar\"\nMY.Bar = 3\nqueue 3 x in (a, b)\n",
    "executable = x\n  arguments  =   a b  \n# comment\nrequest_memory=1\\\n024\n",
    "executable=/bin/true\nqueue a,b from (\n x 1\n y 2\n)\n",
    "executable=/bin/true\nqueue from (\n x 1\n y 2\n)\n",
    "executable = x\nqueue 3 in (a, b)\n",
    "executable=/bin/true\nqueue 2\n",
    "executable=/bin/true\nqueue\nqueue 2\n",
    "a = $(b)\nb = 7\n",
    "executable = x\nqueue x matching *.nothing-here\n",
]

for i, text in enumerate(TEXTS):
    CASES.append((f"str {i}", lambda text=text: str(h.Submit(text))))
    CASES.append((f"qargs {i}", lambda text=text: h.Submit(text).getQArgs()))
    CASES.append((f"keys {i}", lambda text=text: list(h.Submit(text).keys())))
    CASES.append((f"itemdata {i}", lambda text=text: (lambda it: None if it is None else list(it))(h.Submit(text).itemdata())))


@case("dict and keys")
def _():
    s = h.Submit({"foo": "1", "Bar": "2"})
    s["FOO"] = "3"
    return [s.get("FOO"), "bar" in s, s["bar"], str(s), len(s)]


@case("kwargs")
def _():
    return str(h.Submit(a="1", b="2"))


@case("queue argument")
def _():
    return [str(h.Submit({"a": "b"}, queue="3")), str(h.Submit("a = 1", queue="3"))]


@case("setQArgs")
def _():
    s = h.Submit({"a": "1"})
    s.setQArgs("x in (1,2)")
    return [str(s), list(s.itemdata())]


@case("itemdata override")
def _():
    return list(h.Submit("executable = x\n").itemdata("x,y from (\n 1 2\n)"))


@case("expand")
def _():
    s = h.Submit({"foo": "1", "bar": "2", "baz": "$(foo)"})
    return [s.expand("baz"), h.Submit("a = $(b)\nb = 7\n").expand("a"),
            h.Submit("a = $(Cluster).$(Process)\n").expand("a")]


@case("expand missing")
def _():
    return h.Submit("a = $(b)\n").expand("zzz")


@case("non-string value")
def _():
    return h.Submit(executable="/bin/true", request_memory=128)


@case("include refused")
def _():
    return str(h.Submit("executable=x\ninclude : /etc/hostname\n"))


@case("plus attributes")
def _():
    return [list(h.Submit({"MY.x": "1", "+y": "2"}).keys()), str(h.Submit("+Foo = 1\nexecutable = x\n"))]


@case("delete")
def _():
    s = h.Submit({"a": "1", "b": "2"})
    del s["A"]
    return [list(s), str(s)]


@case("delete missing")
def _():
    s = h.Submit({"a": "1"})
    del s["zz"]


@case("dict values of other types")
def _():
    import pathlib

    return str(h.Submit({"request_cpus": 2, "request_memory": 1.5, "hold": True,
                         "initialdir": pathlib.Path("/tmp")}))


@case("dict with queue refused")
def _():
    return h.Submit({"executable": "x", "queue": "2"})


@case("dict with a bad value")
def _():
    return h.Submit({"executable": ["x"]})
