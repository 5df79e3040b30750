"""``classad2``: HTCondor 25's ClassAd API, provided by Gleaner (the
same module as ``gleaner.classad2``)."""

import sys as _sys

import gleaner.classad2 as _impl

_sys.modules[__name__] = _impl
