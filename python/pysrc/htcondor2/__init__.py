"""``htcondor2``: HTCondor 25's Python API, provided by Gleaner (the same
module as ``gleaner.htcondor2``, submodules included)."""

from gleaner._alias import alias as _alias

_alias(__name__, "gleaner.htcondor2")
