"""Oracle for `glean q|history -constraint/-af/-l`: HTCondor's own ClassAd library
(`classad2`, PyPI `htcondor`) parses the ads `glean ... -l` printed and evaluates the same
constraints and autoformat expressions over them.

stdin: {"ads": "<text of -l>", "constraints": [EXPR...], "af": [EXPR...]}
stdout: {"ads": [{"ClusterId":..,"ProcId":..,"Owner":..,"JobStatus":..,"QDate":..}...],
         "constraint": {EXPR: [[cluster, proc], ...]},
         "af": [[value, ...], ...]}   (per ad, in order; undefined -> null, error -> "error")
Exit 3 when classad2 cannot be imported.
"""
import json
import sys

try:
    import classad2
except ImportError as e:
    print(f"cannot import classad2: {e}", file=sys.stderr)
    sys.exit(3)


def plain(v):
    if v is classad2.Value.Undefined:
        return None
    if v is classad2.Value.Error:
        return "error"
    if isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def evalbool(v):
    # HTCondor's EvalBool: true, or a non-zero number.
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, classad2.Value):
        return v != 0
    return False


req = json.load(sys.stdin)
ads = list(classad2.parseAds(req["ads"], classad2.ParserType.Old))
out = {"ads": [], "constraint": {}, "af": []}
for ad in ads:
    out["ads"].append({k: plain(ad.eval(k)) for k in
                       ["ClusterId", "ProcId", "Owner", "JobStatus", "QDate"]})
for c in req["constraints"]:
    e = classad2.ExprTree(c)
    out["constraint"][c] = [[ad.eval("ClusterId"), ad.eval("ProcId")]
                            for ad in ads if evalbool(e.eval(ad))]
for ad in ads:
    out["af"].append([plain(classad2.ExprTree(a).eval(ad)) for a in req["af"]])
print(json.dumps(out))
