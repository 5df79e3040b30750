"""``htcondor2.param``: the configuration knobs tools read, as HTCondor
names them, for the user's Gleaner pool (``gleaner_python::param``).
Changes stay in this process's memory; ``reload_config()`` forgets
them."""

from collections.abc import MutableMapping

from gleaner import _native


def _typed(text):
    """A knob's value as HTCondor's ``param`` gives it: ``int``, ``float``
    or ``bool`` when it reads as one, else the string."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        if any(c in t for c in ".eE") and t[:1] in "+-.0123456789":
            return float(t)
    except ValueError:
        pass
    return text


class _Param(MutableMapping):
    def __init__(self):
        self._subsystem = None
        self.reload()

    def reload(self):
        self._values = {}
        for key, value in _native._param_defaults():
            self._values[key.upper()] = (key, value)

    def _find(self, key):
        key = key.upper()
        if self._subsystem:
            scoped = f"{self._subsystem.upper()}.{key}"
            if scoped in self._values:
                return self._values[scoped]
        return self._values.get(key)

    def __getitem__(self, key):
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return _typed(found[1])

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        if not isinstance(value, str):
            raise TypeError("value must be a string")
        self._values[key.upper()] = (key, value)

    def __delitem__(self, key):
        if key.upper() not in self._values:
            raise KeyError(key)
        del self._values[key.upper()]

    def __iter__(self):
        return iter([name for name, _ in self._values.values()])

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return f"<htcondor2.param: {len(self)} knobs>"


param = _Param()
