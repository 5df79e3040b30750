"""HTCondor 25's ``htcondor2`` API over a Gleaner pool.

``Schedd`` is the user's station (its queue, through the user API the
``glean`` command uses, found from ``$GLEAN_HOME/pool.toml``);
``Collector`` is the coordinator's view of the pool; ``Submit`` is read
and expanded by Gleaner's own submit parser; ``JobEventLog`` reads the
user logs stations write in HTCondor's format. See docs/python.md for
what is provided and what raises ``NotImplementedError``."""

from gleaner import classad2 as classad

from ._collector import Collector
from ._enums import *  # noqa: F401,F403
from ._enums import __all__ as _enum_names
from ._job_event import JobEvent, JobEventLog
from ._misc import (
    CredCheck,
    Credd,
    DAGMan,
    HTCondorException,
    Negotiator,
    Placementd,
    RemoteParam,
    SecurityContext,
    Startd,
    disable_debug,
    enable_debug,
    enable_log,
    load_a_config_usermap_file,
    log,
    ping,
    platform,
    reload_config,
    reload_config_usermaps,
    send_alive,
    send_command,
    set_ready_state,
    set_subsystem,
    version,
)
from ._param import param
from ._schedd import Schedd, SubmitResult
from ._submit import Submit

__all__ = [
    "Collector",
    "CredCheck",
    "Credd",
    "DAGMan",
    "HTCondorException",
    "JobEvent",
    "JobEventLog",
    "Negotiator",
    "Placementd",
    "RemoteParam",
    "Schedd",
    "SecurityContext",
    "Startd",
    "Submit",
    "SubmitResult",
    "classad",
    "disable_debug",
    "enable_debug",
    "enable_log",
    "load_a_config_usermap_file",
    "log",
    "param",
    "ping",
    "platform",
    "reload_config",
    "reload_config_usermaps",
    "send_alive",
    "send_command",
    "set_ready_state",
    "set_subsystem",
    "version",
] + list(_enum_names)
