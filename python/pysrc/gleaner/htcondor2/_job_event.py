"""``htcondor2.JobEventLog`` and ``JobEvent``: a job event log (the file a
job's ``log =`` names) read event by event as it grows. The station
writes it in HTCondor's format; the reader is Gleaner's
(``gleaner_python::eventlog``)."""

import time
from collections.abc import Mapping

from gleaner import _native

from ._enums import JobEventType


class JobEvent(Mapping):
    """One event: a mapping of its attributes (HTCondor's names:
    ``ReturnValue``, ``HoldReason``, ...) with ``type``, ``cluster``,
    ``proc`` and ``timestamp``."""

    def __init__(self, data, event_text):
        self._data = data
        self._event_text = event_text

    @property
    def type(self):
        """The event's type (a ``JobEventType``)."""
        return JobEventType(self._data["EventTypeNumber"])

    @property
    def cluster(self):
        return self._data.get("Cluster", -1)

    @property
    def proc(self):
        return self._data.get("Proc", -1)

    @property
    def timestamp(self):
        """When it happened (seconds since the epoch); ``EventTime`` is in
        local time."""
        when = time.strptime(self._data["EventTime"][:19], "%Y-%m-%dT%H:%M:%S")
        return int(time.mktime(when))

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return (
            f"JobEvent(type={int(self.type)}, cluster={self.cluster}, proc={self.proc}, "
            f"timestamp={self.timestamp})"
        )

    def __str__(self):
        return self._event_text


class JobEventLog:
    """An iterator over the events of a job event log. ``events(None)``
    waits for each next event; ``events(0)`` returns what is there;
    ``events(n)`` waits up to ``n`` seconds for a new one."""

    def __init__(self, filename):
        if not isinstance(filename, str):
            raise TypeError("filename must be a string")
        if len(filename) == 0:
            raise ValueError("filename must not be empty")
        self._filename = filename
        self._deadline = 0
        self._log = _native._EventLog(filename)

    def events(self, stop_after=None):
        """This log as an iterator that waits ``stop_after`` seconds (for
        ever when None) for each next event."""
        if stop_after is None:
            self._deadline = 0
        elif isinstance(stop_after, int):
            # A deadline of 0 means for ever: never wait when asked not to.
            self._deadline = max(time.time() + stop_after, 1e-9)
        else:
            raise TypeError("deadline must be an integer")
        return self

    def close(self):
        """No more events from this log."""
        self._log.close()

    def __iter__(self):
        return self

    def __next__(self):
        got = self._log.next(float(self._deadline))
        if got is None:
            raise StopIteration
        text, data = got
        return JobEvent(data, text)

    def __enter__(self):
        self._deadline = 0
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False

    def __getstate__(self):
        return ({"_filename": self._filename, "_deadline": self._deadline}, self._log.offset())

    def __setstate__(self, state):
        fields, offset = state
        self._filename = fields["_filename"]
        self._deadline = fields["_deadline"]
        self._log = _native._EventLog(self._filename)
        self._log.set_offset(offset)
