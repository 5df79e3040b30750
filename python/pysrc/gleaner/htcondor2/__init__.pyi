# Type stubs of gleaner.htcondor2 (also importable as htcondor2).
import enum
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, Callable, Iterable, Optional, Union

from gleaner import classad2 as classad
from gleaner.classad2 import ClassAd, ExprTree

class HTCondorException(Exception): ...

class AdType(enum.IntEnum):
    Startd = 0
    Schedd = 1
    Master = 2
    StartdPrivate = 5
    Submitter = 6
    Collector = 7
    License = 8
    Any = 10
    Negotiator = 13
    HAD = 14
    Generic = 15
    Credd = 16
    Grid = 19
    Placementd = 20
    Defrag = 22
    Accounting = 23
    Slot = 24
    StartDaemon = 25

AdTypes = AdType

class DaemonType(enum.IntEnum):
    none = 0
    Any = 1
    Master = 2
    Schedd = 3
    Startd = 4
    Collector = 5
    Negotiator = 6
    Credd = 13
    Placementd = 15
    HAD = 17
    Generic = 18

DaemonTypes = DaemonType

class JobAction(enum.IntEnum):
    Hold = 1
    Release = 2
    Remove = 3
    RemoveX = 4
    Vacate = 5
    VacateFast = 6
    Suspend = 8
    Continue = 9

class JobStatus(enum.IntEnum):
    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5
    TRANSFERRING_OUTPUT = 6
    SUSPENDED = 7

class JobEventType(enum.IntEnum):
    SUBMIT = 0
    EXECUTE = 1
    EXECUTABLE_ERROR = 2
    CHECKPOINTED = 3
    JOB_EVICTED = 4
    JOB_TERMINATED = 5
    IMAGE_SIZE = 6
    SHADOW_EXCEPTION = 7
    GENERIC = 8
    JOB_ABORTED = 9
    JOB_SUSPENDED = 10
    JOB_UNSUSPENDED = 11
    JOB_HELD = 12
    JOB_RELEASED = 13
    FILE_TRANSFER = 40
    # ... and the rest of HTCondor's event numbers (see _enums.py)

class FileTransferEventType(enum.IntEnum):
    IN_QUEUED = 1
    IN_STARTED = 2
    IN_FINISHED = 3
    OUT_QUEUED = 4
    OUT_STARTED = 5
    OUT_FINISHED = 6

class QueryOpt(enum.IntFlag):
    Default = 0
    AutoCluster = 1
    GroupBy = 2
    DefaultMyJobsOnly = 4
    SummaryOnly = 8
    IncludeClusterAd = 16
    IncludeJobsetAds = 32

QueryOpts = QueryOpt

class TransactionFlag(enum.IntFlag):
    Default = 0
    NonDurable = 1
    SetDirty = 4
    ShouldLog = 8

TransactionFlags = TransactionFlag

class SubmitMethod(enum.IntEnum):
    CondorSubmit = 0
    DAGMan = 1
    PythonBindings = 2
    HTCondorJobSubmit = 3
    HTCondorDagSubmit = 4
    HTCondorJobSetSubmit = 5
    UserSet = 100

class Submit(MutableMapping[str, str]):
    def __init__(self, input: Union[dict, str, None] = None, queue: Optional[str] = None, **kwargs: str) -> None: ...
    def __getitem__(self, key: str) -> str: ...
    def __setitem__(self, key: str, value: str) -> None: ...
    def __delitem__(self, key: str) -> None: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def expand(self, attr: str) -> str: ...
    def getQArgs(self) -> str: ...
    def setQArgs(self, args: str) -> None: ...
    def itemdata(self, qargs: Optional[str] = None) -> Optional[Iterator[dict]]: ...
    def getSubmitMethod(self) -> int: ...
    def setSubmitMethod(self, method_value: Union[SubmitMethod, int] = -1, allow_reserved_values: bool = False) -> None: ...
    def issue_credentials(self) -> Optional[str]: ...
    @staticmethod
    def from_dag(filename: str, options: dict = {}) -> "Submit": ...

class SubmitResult:
    def cluster(self) -> int: ...
    def clusterad(self) -> ClassAd: ...
    def first_proc(self) -> int: ...
    def num_procs(self) -> int: ...
    def __int__(self) -> int: ...

JobSpec = Union[list[str], str, ExprTree, int]

class Schedd:
    def __init__(self, location: Optional[ClassAd] = None) -> None: ...
    def submit(self, description: Submit, count: int = 0, spool: bool = False,
               itemdata: Optional[Iterable[Union[str, dict]]] = ..., queue: Optional[str] = None) -> SubmitResult: ...
    def spool(self, result: SubmitResult) -> None: ...
    def retrieve(self, job_spec: JobSpec) -> None: ...
    def query(self, constraint: Union[str, ExprTree] = "True", projection: list[str] = [],
              callback: Optional[Callable[[ClassAd], Any]] = None, limit: int = -1,
              opts: QueryOpt = QueryOpt.Default) -> list[Any]: ...
    def xquery(self, requirements: Union[str, ExprTree] = "true", projection: list[str] = [],
               limit: int = -1, opts: QueryOpt = QueryOpt.Default, name: Optional[str] = None) -> Iterator[ClassAd]: ...
    def history(self, constraint: Union[str, ExprTree, None] = None, projection: list[str] = [],
                match: int = -1, since: Union[int, str, ExprTree, None] = None) -> list[ClassAd]: ...
    def act(self, action: JobAction, job_spec: JobSpec, reason: Optional[str] = None) -> ClassAd: ...
    def edit(self, job_spec: JobSpec, attr: str, value: Union[str, ExprTree],
             flags: TransactionFlag = TransactionFlag.Default) -> int: ...
    def reschedule(self) -> None: ...

class Collector:
    def __init__(self, pool: Union[str, ClassAd, list[str], None] = None, security: Any = None) -> None: ...
    def query(self, ad_type: AdType = AdType.Any, constraint: Union[str, ExprTree, None] = None,
              projection: Optional[list[str]] = None, statistics: Optional[str] = None) -> list[ClassAd]: ...
    def locate(self, daemon_type: DaemonType, name: Optional[str] = None) -> ClassAd: ...
    def locateAll(self, daemon_type: DaemonType) -> list[ClassAd]: ...
    def directQuery(self, daemon_type: DaemonType, name: Optional[str] = None,
                    projection: Optional[list[str]] = None, statistics: Optional[str] = None) -> ClassAd: ...

class JobEvent(Mapping[str, Any]):
    @property
    def type(self) -> JobEventType: ...
    @property
    def cluster(self) -> int: ...
    @property
    def proc(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...

class JobEventLog:
    def __init__(self, filename: str) -> None: ...
    def events(self, stop_after: Optional[int] = None) -> "JobEventLog": ...
    def close(self) -> None: ...
    def __iter__(self) -> "JobEventLog": ...
    def __next__(self) -> JobEvent: ...
    def __enter__(self) -> "JobEventLog": ...
    def __exit__(self, *args: Any) -> bool: ...

param: MutableMapping[str, Any]

def version() -> str: ...
def platform() -> str: ...
def reload_config(root_config_file: Optional[str] = None) -> None: ...
def set_subsystem(name: str, daemon_type: Any = ...) -> None: ...
def enable_debug(flags: Optional[str] = None) -> None: ...
def disable_debug() -> None: ...
def enable_log() -> None: ...
def log(level: Any, message: str) -> None: ...
def ping(location: Any, authz: Optional[str] = None, security: Any = None) -> ClassAd: ...
