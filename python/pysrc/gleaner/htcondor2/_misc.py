"""``htcondor2``'s module functions, and the classes for daemons a
Gleaner pool does not have (each raises ``NotImplementedError`` saying
why and what to use instead)."""

import sys
import time

from gleaner import _native

from ._enums import LogLevel, SubsystemType
from ._param import param

HTCondorException = _native.HTCondorException


def version():
    """``$CondorVersion: 25.0.0 ... BuildID: Gleaner-... $``."""
    return _native._version()


def platform():
    """``$CondorPlatform: X86_64-Linux_Gleaner $``."""
    return _native._platform()


def reload_config(root_config_file=None):
    """Re-reads the configuration, forgetting in-memory changes to
    ``param``."""
    param.reload()


def set_subsystem(name, daemon_type=SubsystemType.Auto):
    """Which subsystem's knobs (``NAME.KNOB``) ``param`` prefers."""
    if isinstance(name, str):
        param._subsystem = name
    else:
        raise TypeError("name must be a string")


_debug = {"stderr": False, "log": None}


def enable_debug(flags=None):
    """Sends ``log()`` messages to standard error."""
    _debug["stderr"] = True


def disable_debug():
    _debug["stderr"] = False


def enable_log():
    """Sends ``log()`` messages to ``param["TOOL_LOG"]``, if set (the file
    is created with a first line saying so)."""
    path = param.get("TOOL_LOG")
    _debug["log"] = path if isinstance(path, str) and path else None
    if _debug["log"]:
        log(LogLevel.Always, f"logging enabled by {sys.argv[0] or 'python'} (Gleaner's htcondor2)")


def log(level, message):
    """Writes ``message`` where ``enable_debug``/``enable_log`` said."""
    line = f"{time.strftime('%m/%d/%y %H:%M:%S')} {message}\n"
    if _debug["stderr"]:
        sys.stderr.write(line)
    if _debug["log"]:
        with open(_debug["log"], "a") as f:
            f.write(line)


def reload_config_usermaps():
    return None


def load_a_config_usermap_file(*args, **kwargs):
    return None


def set_ready_state(state="Ready"):
    """Tells a condor_master the daemon is ready: no master here."""
    return None


def send_alive(ad=None, pid=None, timeout=None):
    return None


def _no_daemon(what, instead):
    raise NotImplementedError(f"{what}: a Gleaner pool has no such daemon; {instead}")


def ping(location, authz=None, security=None):
    """Checks a daemon can be reached and who it takes the caller for."""
    from ._schedd import Schedd

    owner = Schedd(location if location else None)._native.owner()
    from gleaner.classad2 import ClassAd

    return ClassAd({"MyRemoteUserName": owner, "AuthorizationSucceeded": True})


def send_command(ad, dc, target=None):
    _no_daemon("send_command", "stop or restart the pool with `glean up` / systemctl")


class SecurityContext:
    """Credentials for daemons: a Gleaner client uses the token in
    ``$GLEAN_HOME`` (or the user socket)."""

    def __init__(self, token=None):
        self._token = token

    @property
    def preferred_token(self):
        return self._token


class RemoteParam:
    def __init__(self, location):
        _no_daemon("RemoteParam", "a station's settings are its station.toml (glean station --check-config)")


class Negotiator:
    def __init__(self, location=None):
        _no_daemon("Negotiator", "the coordinator's Up-Down table is `glean userprio`")


class Startd:
    def __init__(self, location=None):
        _no_daemon("Startd", "drain or vacate a station with `glean drain` / `glean vacate`")


class Credd:
    def __init__(self, location=None):
        _no_daemon("Credd", "Gleaner jobs carry no stored credentials")


class Placementd:
    def __init__(self, location=None):
        _no_daemon("Placementd", "tokens are issued with `glean token create`")


class DAGMan:
    def __init__(self, dag_id):
        _no_daemon("DAGMan", "a station runs DAGs itself: `glean dag status|rm`")


class CredCheck:
    def __init__(self, services, url_or_error):
        self._services = services
        self._url_or_error = url_or_error

    def __bool__(self):
        return False

    @property
    def present(self):
        return False

    @property
    def url(self):
        return None

    @property
    def error(self):
        return None

    @property
    def services(self):
        return self._services
