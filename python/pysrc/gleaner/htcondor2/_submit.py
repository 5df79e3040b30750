"""``htcondor2.Submit``: a submit description, as a mapping of submit
commands to their values plus one queue statement.

What the description means is decided by Gleaner's own submit parser
(the same one ``glean submit`` uses) when it is expanded, asked for its
items or submitted; this class is the mapping around it."""

import os
import random
from collections.abc import MutableMapping
from pathlib import PurePath

from gleaner import _native

from ._enums import SubmitMethod


def _dict_value(value):
    """A value of ``Submit(dict)``: as HTCondor's, numbers, booleans and
    paths are written as their text and a ClassAd as its one-line form;
    anything else must be a string. (``submit[key] = value`` takes
    strings only.)"""
    from gleaner.classad2 import ClassAd

    if isinstance(value, ClassAd):
        return repr(value)
    if isinstance(value, (bool, int, float, PurePath)):
        return str(value)
    if not isinstance(value, str):
        raise TypeError("value must be a string")
    return value


class Submit(MutableMapping):
    """A submit description.

    ``Submit()`` is empty; ``Submit(text)`` reads a submit-file text
    (``key = value`` lines and one ``queue`` statement); ``Submit(dict)``
    and ``Submit(key=value, ...)`` set commands. Values are strings.
    ``queue=`` sets the queue statement's arguments."""

    def __init__(self, input=None, queue=None, **kwargs):
        if input is None or isinstance(input, dict):
            self._desc = _native._SubmitDesc()
            for key, value in (input or {}).items():
                if not isinstance(key, str):
                    raise TypeError("key must be a string")
                if key.casefold() == "queue":
                    raise ValueError("the queue statement can not be specified in a dictionary")
                self._desc.set(key, _dict_value(value))
        elif isinstance(input, str):
            self._desc = _native._SubmitDesc(input)
        else:
            raise TypeError("input must be a dictionary mapping string to strings, or a string")
        self.update(kwargs)
        if queue is not None:
            self._desc.set_qargs(queue)
        self._submit_method = None

    # The mapping.

    def __getitem__(self, key):
        value = self._desc.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        self._desc.set(key, value)

    def __delitem__(self, key):
        # HTCondor 25's Submit has no deletion either.
        raise NotImplementedError("Submit objects do not support deleting keys")

    def __iter__(self):
        return iter(self._desc.keys())

    def __len__(self):
        return len(self._desc)

    def __contains__(self, key):
        return isinstance(key, str) and self._desc.get(key) is not None

    def __str__(self):
        return str(self._desc)

    def __repr__(self):
        return f"Submit({self})"

    # The description.

    def expand(self, attr: str) -> str:
        """The value of ``attr`` with its macros expanded (as the first job
        of a cluster would see them)."""
        return self._desc.expand(attr, os.getcwd())

    def getQArgs(self) -> str:
        """The arguments of the queue statement."""
        return self._desc.qargs()

    def setQArgs(self, args: str):
        """Replaces the queue statement's arguments (``queue`` itself may
        be included)."""
        if not isinstance(args, str):
            raise TypeError("args must be a string")
        self._desc.set_qargs(args)

    def itemdata(self, qargs=None):
        """An iterator over the items of the queue statement (``qargs`` if
        given), each a dict of the statement's variables; ``None`` when the
        statement names no items."""
        items = self._desc.itemdata(os.getcwd(), qargs)
        return None if items is None else iter(items)

    def getSubmitMethod(self) -> int:
        """How the jobs say they were submitted."""
        if self._submit_method is None:
            return int(SubmitMethod.PythonBindings)
        return int(self._submit_method)

    def setSubmitMethod(self, method_value=-1, allow_reserved_values=False):
        """Sets what the jobs' ``JobSubmitMethod`` would record."""
        value = int(method_value)
        if 0 <= value < 100 and not allow_reserved_values:
            raise ValueError("Submit method value must be 100 or greater, or allow_reserved_values must be True.")
        self._submit_method = value

    def issue_credentials(self):
        """Gleaner pools issue no OAuth credentials: nothing to do."""
        return None

    def jobs(self, count=0, itemdata=None, clusterid=1, procid=0, qdate=0, owner=""):
        """The job ads this description would queue, without submitting."""
        raise NotImplementedError(
            "Submit.jobs() is not provided; `glean submit --dry-run FILE` prints the job ads "
            "a submit file would queue"
        )

    def procs(self, count=0, itemdata=None, clusterid=1, procid=0, qdate=0, owner=""):
        """The proc ads this description would queue, without submitting."""
        return self.jobs(count, itemdata, clusterid, procid, qdate, owner)

    @staticmethod
    def from_dag(filename, options={}):
        """A description that submits a DAG: Gleaner runs DAGs in the
        station (``glean dag submit``), not as a job."""
        raise NotImplementedError(
            "Submit.from_dag() is not provided: a Gleaner station runs DAGs itself; submit "
            "with `glean dag submit FILE` (or condor_submit_dag)"
        )

    @staticmethod
    def from_dag_options():
        raise NotImplementedError("Submit.from_dag_options() is not provided (see from_dag)")

    # For Schedd.submit.

    def _text(self, count, itemdata, queue):
        if itemdata is not None:
            itemdata = list(itemdata)
        return self._desc.submit_text(count, itemdata, queue)

    def _seed(self):
        return random.getrandbits(63)
