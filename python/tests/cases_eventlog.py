"""Differential cases for ``htcondor2.JobEventLog``: the events of
``sample.log`` (written by the test, in the station's format and a few
of HTCondor's own) as each reader sees them."""

import os

import htcondor2 as h

CASES = []


def events():
    path = os.path.join(os.getcwd(), "sample.log")
    out = []
    for e in h.JobEventLog(path).events(stop_after=0):
        out.append({"type": int(e.type), "cluster": e.cluster, "proc": e.proc,
                    "timestamp": e.timestamp, "attrs": {k: e[k] for k in e}})
    return out


CASES.append(("events", events))


def first_str():
    path = os.path.join(os.getcwd(), "sample.log")
    e = next(h.JobEventLog(path).events(stop_after=0))
    return [str(e), repr(e)]


CASES.append(("first event text", first_str))


def missing():
    return h.JobEventLog(os.path.join(os.getcwd(), "no-such.log"))


CASES.append(("missing file", missing))
