"""``htcondor2``: HTCondor 25's Python API, provided by Gleaner (the same
module as ``gleaner.htcondor2``)."""

import sys as _sys

import gleaner.htcondor2 as _impl

_sys.modules[__name__] = _impl
