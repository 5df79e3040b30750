#!/usr/bin/env python3
"""Differential-test oracle: evaluates ClassAd expressions with HTCondor's own library.

Reads one JSON object per line on stdin:
    {"expr": "...", "my": "[ ... ]" | null, "target": "[ ... ]" | null}
and writes one JSON object per line on stdout:
    {"ok": true, "result": "<value printed by the module>"}
    {"ok": false, "error": "parse"}   (the expression does not parse)

The value is computed with ExprTree(expr).simplify(my, target), which evaluates the expression
with `my` as MY (and the scope of unscoped names) and `target` as TARGET, and is printed with
the module's own repr() (its compact ClassAd unparser).

HTCondor 25.x wheels (`pip install htcondor`) ship the module as `classad2`; older ones as
`classad`. Both are accepted.
"""

import json
import sys

try:
    import classad2 as classad  # HTCondor >= 24
except ImportError:  # pragma: no cover - older wheels
    import classad  # type: ignore


def main() -> int:
    ads = {}

    def ad(text):
        if text is None:
            return None
        if text not in ads:
            ads[text] = classad.ClassAd(text)
        return ads[text]

    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        try:
            tree = classad.ExprTree(req["expr"])
        except Exception:  # the module raises ClassAdException (or ValueError) on syntax errors
            out.write(json.dumps({"ok": False, "error": "parse"}) + "\n")
            continue
        try:
            value = tree.simplify(ad(req.get("my")), ad(req.get("target")))
            out.write(json.dumps({"ok": True, "result": repr(value)}) + "\n")
        except Exception as exc:  # evaluation itself should never raise; report it
            out.write(json.dumps({"ok": False, "error": "exception: %s" % exc}) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
