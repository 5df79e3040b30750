"""``htcondor2.Collector``: the pool's ads. A Gleaner pool's coordinator
is its collector and negotiator; each station is a schedd (its home
side), a startd (its host side) and its own master."""

from gleaner import _native
from gleaner.classad2 import ExprTree

from ._enums import AdType, DaemonType


def _coordinator_of(pool):
    """A coordinator URL from ``Collector(pool)``'s argument, if it is one."""
    if pool is None:
        return None
    if isinstance(pool, (list, tuple)):
        pool = pool[0] if pool else None
        return _coordinator_of(pool)
    if isinstance(pool, str):
        return pool if "://" in pool else None
    if hasattr(pool, "get"):
        address = pool.get("MyAddress")
        return address if isinstance(address, str) and "://" in address else None
    raise TypeError("pool must be a string, a ClassAd or a list of strings")


class Collector:
    """The pool's collector: ``$GLEAN_HOME/pool.toml``'s coordinator, or
    the one ``pool`` names by URL."""

    def __init__(self, pool=None, security=None, _home=None):
        self._native = _native._Collector(_coordinator_of(pool), _home)

    def query(self, ad_type=AdType.Any, constraint=None, projection=None, statistics=None):
        """The ads of ``ad_type`` that ``constraint`` selects, with the
        ``projection`` attributes (all when None or empty)."""
        if isinstance(constraint, ExprTree):
            constraint = str(constraint)
        elif constraint is not None and not isinstance(constraint, str):
            raise TypeError("constraint must be a string or an ExprTree")
        projection = [] if projection is None else [str(p) for p in projection]
        return self._native.query(int(ad_type), constraint, projection)

    def locate(self, daemon_type, name=None):
        """The ad of a daemon of ``daemon_type`` (named ``name``; the
        user's own schedd when looking for a schedd with no name)."""
        ads = self._native.locate_all(int(daemon_type), name)
        if not ads:
            from ._misc import HTCondorException

            what = DaemonType(int(daemon_type)).name
            raise HTCondorException(
                f"Unable to find the {what} daemon" + (f" named {name}" if name else "")
            )
        return ads[0]

    def locateAll(self, daemon_type):
        """The ads of every daemon of ``daemon_type``."""
        return self._native.locate_all(int(daemon_type), None)

    def directQuery(self, daemon_type, name=None, projection=None, statistics=None):
        """The daemon's own ad (here, the collector's copy of it)."""
        ad = self.locate(daemon_type, name)
        if projection:
            wanted = {p.lower() for p in projection}
            for key in [k for k in ad if k.lower() not in wanted]:
                del ad[key]
        return ad

    def advertise(self, ad_list, command="UPDATE_AD_GENERIC", use_tcp=True):
        raise NotImplementedError(
            "Collector.advertise: a Gleaner coordinator takes ads only from its stations"
        )
