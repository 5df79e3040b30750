"""Reads a user log with HTCondor's own reader and prints one JSON object per event.

Usage: python3 htcondor_user_log.py LOG
Each line: {"type": N, "cluster": C, "proc": P, "timestamp": T, "ad": {...}}.
Exit 3 when htcondor2 cannot be imported; a read error propagates (exit 1).
"""
import json
import sys

try:
    import htcondor2
except ImportError as e:
    print(f"cannot import htcondor2: {e}", file=sys.stderr)
    sys.exit(3)

for ev in htcondor2.JobEventLog(sys.argv[1]).events(0):
    ad = {}
    for k in ev.keys():
        v = ev[k]
        ad[k] = v if isinstance(v, (bool, int, float, str)) else str(v)
    print(json.dumps({
        "type": int(ev.type),
        "cluster": ev.cluster,
        "proc": ev.proc,
        "timestamp": ev.timestamp,
        "ad": ad,
    }))
