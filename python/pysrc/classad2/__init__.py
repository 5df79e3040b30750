"""``classad2``: HTCondor 25's ClassAd API, provided by Gleaner (the same
module as ``gleaner.classad2``)."""

from gleaner._alias import alias as _alias

_alias(__name__, "gleaner.classad2")
