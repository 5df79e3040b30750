"""``htcondor2.Schedd`` and ``SubmitResult``: a Gleaner station's queue,
through its user API (the user socket, or its URL and the user's token;
found as the ``glean`` command finds it, from ``$GLEAN_HOME/pool.toml``).
"""

import os
import warnings

from gleaner import _native
from gleaner.classad2 import ClassAd, ExprTree

from ._enums import JobAction, QueryOpt, TransactionFlag
from ._submit import Submit

_NO_ITEMDATA = object()


class SubmitResult:
    """What ``Schedd.submit`` queued."""

    def __init__(self, clusterID, procID, num_procs, clusterAd, spooled_proc_ads=None):
        self._cluster = clusterID
        self._first_proc = procID
        self._num_procs = num_procs
        self._clusterad = clusterAd

    def cluster(self) -> int:
        """The cluster id."""
        return self._cluster

    def clusterad(self) -> ClassAd:
        """The first job's ad, as the station queued it."""
        return self._clusterad

    def first_proc(self) -> int:
        """The first proc id."""
        return self._first_proc

    def num_procs(self) -> int:
        """How many procs (jobs) were queued."""
        return self._num_procs

    def __int__(self):
        return self._cluster

    def __str__(self):
        return (
            f"Submitted {self._num_procs} jobs into cluster {self._cluster},"
            f"{self._first_proc} :\n{self._clusterad}"
        )

    def __repr__(self):
        return (
            f"SubmitResult(clusterID={self._cluster}, procID={self._first_proc}, "
            f"num_procs={self._num_procs})"
        )


def _address_of(location):
    """Where a location ad (from ``Collector.locate``) says the schedd is."""
    if location is None:
        return None
    if isinstance(location, str):
        return location
    for key in ("MyAddress", "ScheddIpAddr"):
        if key in location:
            return location[key]
    raise ValueError("the location ClassAd has no MyAddress")


def _constraint_text(constraint):
    if constraint is None:
        return None
    if isinstance(constraint, ExprTree):
        return str(constraint)
    if isinstance(constraint, str):
        return constraint
    if isinstance(constraint, bool):
        return "true" if constraint else "false"
    raise TypeError("constraint must be a string or an ExprTree")


def _projection(projection):
    if projection is None:
        return []
    if isinstance(projection, str):
        raise TypeError("projection must be a list of strings")
    return [str(p) for p in projection]


class Schedd:
    """The job queue of a Gleaner station (HTCondor's *condor_schedd*).

    ``Schedd()`` is the user's own station; ``Schedd(ad)`` the one a
    ``Collector.locate`` ad names."""

    def __init__(self, location=None, _home=None):
        self._location = location
        self._native = _native._Schedd(_address_of(location), _home)
        # HTCondor's Schedd keeps its address here; tools read it.
        self._addr = self._native.address

    def __repr__(self):
        return f"Schedd({self._native.address})"

    # Submitting.

    def submit(self, description, count=0, spool=False, itemdata=_NO_ITEMDATA, queue=None):
        """Submits the jobs of ``description`` (a ``Submit``; a dict is
        taken as one). ``count`` replaces the queue statement's count,
        ``itemdata`` (an iterator of strings or of dicts) its items,
        ``queue`` the whole statement. ``spool`` needs no upload here: the
        station reads the job's files as the submitting user (see
        ``spool()``)."""
        if isinstance(description, dict):
            description = Submit(description)
        if not isinstance(description, Submit):
            raise TypeError("description must be an htcondor2.Submit object")
        if itemdata is _NO_ITEMDATA:
            itemdata = None
        if not isinstance(count, int) or count < 0:
            raise ValueError("count must be a non-negative integer")
        text = description._text(count, itemdata, queue)
        cluster, first, num, ad, notes = self._native.submit(
            text, os.getcwd(), description._seed()
        )
        for note in notes:
            warnings.warn(note)
        return SubmitResult(cluster, first, num, ad)

    def spool(self, result):
        """Uploads the input files of a ``submit(..., spool=True)``: the
        station already reads them from the submitting user's files, so
        there is nothing to upload."""
        if not isinstance(result, SubmitResult):
            raise TypeError("result must be a SubmitResult")
        return None

    def retrieve(self, job_spec):
        """Fetches the outputs of spooled jobs: a Gleaner station delivers
        every job's outputs to its submit directory as the job completes,
        so they are already there."""
        self._native.check_spec(job_spec)
        return None

    # Reading the queue.

    def query(self, constraint="True", projection=[], callback=None, limit=-1, opts=QueryOpt.Default):
        """The ads of the jobs in the queue that ``constraint`` selects (all
        users' jobs), with the ``projection`` attributes (all when empty),
        at most ``limit``; ``callback`` maps each ad (None drops it)."""
        ads = self._native.query(_constraint_text(constraint), _projection(projection), int(limit))
        if callback is not None:
            ads = [r for r in (callback(ad) for ad in ads) if r is not None]
        return ads

    def xquery(self, requirements="true", projection=[], limit=-1, opts=QueryOpt.Default, name=None):
        """Version 1's iterator form of ``query`` (not in HTCondor 25's
        API; kept for older code)."""
        return iter(self.query(requirements, projection, None, limit, opts))

    def history(self, constraint=None, projection=[], match=-1, since=None):
        """Finished jobs' ads, most recent first, that ``constraint``
        selects; at most ``match``; stopping at ``since`` (a cluster id, a
        job id ``"C.P"`` or an expression)."""
        return self._native.history(
            _constraint_text(constraint), _projection(projection), int(match), since
        )

    def jobEpochHistory(self, constraint=None, projection=[], match=-1, since=None, **kwargs):
        """One ad per run of each job: Gleaner keeps a job's runs as its
        event history, not as epoch ads."""
        raise NotImplementedError(
            "jobEpochHistory: a Gleaner station keeps no per-run epoch ads (see the job's "
            "events in its user log, or `glean q -l`)"
        )

    # Changing jobs.

    def act(self, action, job_spec, reason=None):
        """Holds, releases or removes the jobs of ``job_spec`` (``"C.P"``,
        ``"C"``, a list of those, a cluster number, or a constraint);
        returns HTCondor's totals ad."""
        if not isinstance(action, JobAction):
            raise TypeError("action must be a JobAction")
        if reason is None:
            reason = "Python-initiated action"
        elif isinstance(reason, tuple):
            reason = reason[0]
        return self._native.act(int(action), job_spec, str(reason))

    def edit(self, job_spec, attr, value, flags=TransactionFlag.Default):
        """Sets attribute ``attr`` of the jobs of ``job_spec`` to ``value``
        (a ClassAd expression: ``'"text"'`` for a string), as condor_qedit
        does; returns the number of jobs edited."""
        if not isinstance(attr, str):
            raise TypeError("attr must be a string")
        if isinstance(value, ExprTree):
            value = repr(value)
        elif not isinstance(value, str):
            raise TypeError("value must be a string or an ExprTree")
        return self._native.edit(job_spec, attr, value)

    def reschedule(self):
        """Asks for a scheduling pass: a Gleaner station advertises new
        work at once, so this does nothing."""
        return None

    def export_jobs(self, job_spec, export_dir, new_spool_dir):
        raise NotImplementedError("export_jobs: a Gleaner station's queue is not exported")

    def import_exported_job_results(self, import_dir):
        raise NotImplementedError("import_exported_job_results: see export_jobs")

    def unexport_jobs(self, job_spec):
        raise NotImplementedError("unexport_jobs: see export_jobs")

    def refreshGSIProxy(self, cluster, proc, proxy_filename, lifetime=-1):
        raise NotImplementedError("refreshGSIProxy: Gleaner jobs carry no GSI proxies")

    def get_claims(self, constraint=None, projection=[]):
        raise NotImplementedError("get_claims: a station's claims are the coordinator's (glean status)")
