"""``htcondor2.personal.PersonalPool``: a personal pool of one's own, as
HTCondor's starts a ``condor_master`` under a local directory. Here it
is ``glean up`` (a coordinator and stations on this machine, state under
``local_dir``), found as the ``glean`` command on ``PATH`` (or
``$GLEAN_BIN``)."""

import enum
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from ._collector import Collector
from ._misc import HTCondorException
from ._schedd import Schedd

__all__ = ["PersonalPool", "PersonalPoolState"]


class PersonalPoolState(str, enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZED = "INITIALIZED"
    STARTING = "STARTING"
    READY = "READY"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"


def _free_ports(span):
    """A base port with the `span` ports above it free on loopback."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + span > 65000:
            continue
        try:
            held = []
            for p in range(base, base + span):
                t = socket.socket()
                held.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in held:
                t.close()
    raise HTCondorException("no free loopback ports for the personal pool")


class PersonalPool:
    """A personal Gleaner pool under ``local_dir`` (default: a fresh
    directory in the current one): ``start()``, ``stop()``, or use it as a
    context manager; ``schedd`` and ``collector`` reach it.

    ``stations`` (Gleaner's own argument) says how many stations to run
    (HTCondor's personal pool has one execute point); ``config`` entries
    are accepted and ignored but for ``NUM_CPUS``, which sets it."""

    def __init__(self, local_dir=None, config=None, raise_errors=True, detach=False,
                 use_config=True, stations=None):
        self.local_dir = Path(local_dir) if local_dir is not None else Path.cwd() / "personal-condor"
        self.config = dict(config or {})
        self.raise_errors = raise_errors
        self.detach = detach
        self._stations = stations or int(self.config.get("NUM_CPUS", 1))
        self._process = None
        self._schedd = None
        self._collector = None
        self.state = PersonalPoolState.INITIALIZED

    def __repr__(self):
        return f"PersonalPool(local_dir={self.local_dir}, state={self.state.value})"

    def _glean(self):
        exe = os.environ.get("GLEAN_BIN") or shutil.which("glean")
        if not exe:
            raise HTCondorException("the glean command is not on PATH (or set $GLEAN_BIN)")
        return exe

    def start(self):
        """Starts the pool and waits until it answers."""
        if self.state == PersonalPoolState.READY:
            return self
        self.state = PersonalPoolState.STARTING
        self.local_dir.mkdir(parents=True, exist_ok=True)
        pool_toml = self.local_dir / "pool.toml"
        if pool_toml.exists():
            pool_toml.unlink()
        port = _free_ports(2 * self._stations + 4)
        log = open(self.local_dir / "glean-up.log", "ab")
        self._process = subprocess.Popen(
            [self._glean(), "up", "--stations", str(self._stations), "--interval", "1",
             "--port", str(port)],
            env={**os.environ, "GLEAN_HOME": str(self.local_dir)},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=self.detach,
        )
        deadline = time.time() + 120
        while not pool_toml.exists():
            if self._process.poll() is not None or time.time() > deadline:
                self.state = PersonalPoolState.STOPPED
                raise HTCondorException(
                    f"the personal pool did not start; see {self.local_dir / 'glean-up.log'}"
                )
            time.sleep(0.2)
        self._schedd = Schedd(_home=str(self.local_dir))
        self._collector = Collector(_home=str(self.local_dir))
        # The station answers once its queue is open.
        while True:
            try:
                self._schedd.query("false", ["ProcId"])
                break
            except HTCondorException:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        self.state = PersonalPoolState.READY
        return self

    def stop(self):
        """Stops every daemon of the pool (as Ctrl-C stops `glean up`)."""
        if self._process is None:
            self.state = PersonalPoolState.STOPPED
            return self
        self.state = PersonalPoolState.STOPPING
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        self.state = PersonalPoolState.STOPPED
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()
        return False

    @property
    def schedd(self):
        """The pool's schedd (its first station)."""
        if self._schedd is None:
            raise HTCondorException("the personal pool is not running")
        return self._schedd

    @property
    def collector(self):
        """The pool's collector (its coordinator)."""
        if self._collector is None:
            raise HTCondorException("the personal pool is not running")
        return self._collector

    def get_config_val(self, macro, default=None):
        """A configuration value of the pool (``LOCAL_DIR`` is its
        directory)."""
        if macro.upper() == "LOCAL_DIR":
            return str(self.local_dir)
        from ._param import param

        value = param.get(macro, default)
        return default if value is None else str(value)

    def run_command(self, args, **kwargs):
        """Runs a command with this pool as its ``GLEAN_HOME``."""
        env = {**os.environ, "GLEAN_HOME": str(self.local_dir), **kwargs.pop("env", {})}
        return subprocess.run(args, env=env, capture_output=True, text=True, **kwargs)
