"""Top-level names for Gleaner's modules: ``htcondor2`` is
``gleaner.htcondor2`` and ``classad2`` is ``gleaner.classad2``, submodules
included (``htcondor2.personal`` is ``gleaner.htcondor2.personal``, not a
second copy with classes of its own)."""

import importlib
import importlib.abc
import importlib.util
import sys


class _Loader(importlib.abc.Loader):
    def __init__(self, real_name):
        self._real_name = real_name

    def create_module(self, spec):
        module = importlib.import_module(self._real_name)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import machinery has just set the alias's spec on the real
        # module: give it back its own (reload and relative imports use it).
        module.__spec__ = self._real_spec


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``ALIAS.x`` as ``REAL.x``."""

    def __init__(self, alias, real):
        self._prefix = alias + "."
        self._real = real

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self._prefix):
            return None
        real_name = self._real + fullname[len(self._prefix) - 1:]
        if importlib.util.find_spec(real_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(real_name))


def alias(name, real):
    """Makes ``name`` (and its submodules) the module ``real``."""
    module = importlib.import_module(real)
    sys.modules[name] = module
    if not any(isinstance(f, _Finder) and f._prefix == name + "." for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(name, real))
    return module
