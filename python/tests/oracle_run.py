"""Runs one module of differential cases with whichever ``classad2`` and
``htcondor2`` the interpreter imports, and prints each case's result as
JSON: run once with HTCondor's own modules (the oracle) and once with
Gleaner's, and compared by ``test_differential.py``.

Usage: python oracle_run.py CASES_MODULE [DIR]   (DIR: the cases' working
directory, for files they write)"""

import importlib
import json
import os
import sys


def norm(v):
    """A value as comparable JSON: its type and its printed form."""
    import classad2

    if isinstance(v, classad2.Value):
        return ["Value", v.name]
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", v]
    if isinstance(v, float):
        return ["float", repr(v)]
    if isinstance(v, str):
        return ["str", v]
    if isinstance(v, classad2.ExprTree):
        return ["ExprTree", str(v)]
    if isinstance(v, classad2.ClassAd):
        return ["ClassAd", {k: norm(v[k]) for k in v}]
    if isinstance(v, (list, tuple)):
        return ["list", [norm(x) for x in v]]
    if isinstance(v, dict):
        return ["dict", {k: norm(x) for k, x in v.items()}]
    if v is None:
        return ["None"]
    return ["other", type(v).__name__, repr(v)]


def run(module_name, workdir=None):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    if workdir:
        os.chdir(workdir)
    mod = importlib.import_module(module_name)
    out = {}
    for name, case in mod.CASES:
        try:
            out[name] = norm(case())
        except Exception as e:  # the exception's class is the result
            out[name] = ["raises", type(e).__name__]
    return out


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None), sort_keys=True))
