"""Gleaner's Python API: HTCondor 25's ``htcondor2`` and ``classad2``
modules backed by a Gleaner pool (``gleaner.htcondor2``,
``gleaner.classad2``; also importable as ``htcondor2`` and ``classad2``).
See docs/python.md."""
