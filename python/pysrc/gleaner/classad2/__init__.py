"""HTCondor 25's ``classad2`` API over Gleaner's ClassAd language.

The language itself (parsing, evaluation, printing) is Gleaner's Rust
crate ``gleaner-classad``, reached through ``gleaner._native``; this file
adds the Python side of the API: the ``ClassAd`` mapping, the ``Value``
and ``ParserType`` enums and the parsing functions' handling of files and
iterators.
"""

import enum as _enum
from collections.abc import MutableMapping as _MutableMapping

from gleaner import _native

ClassAdException = _native.ClassAdException
ExprTree = _native.ExprTree
quote = _native.quote
unquote = _native.unquote

__all__ = [
    "ClassAd",
    "ClassAdException",
    "ExprTree",
    "Parser",
    "ParserType",
    "Value",
    "lastError",
    "parseAds",
    "parseNext",
    "parseOne",
    "quote",
    "unquote",
    "version",
]


class Value(_enum.IntEnum):
    """The two ClassAd values that are not data: ``error`` and ``undefined``."""

    Error = 1
    Undefined = 2


class ParserType(_enum.IntEnum):
    """Which syntax a text of ads is in."""

    Auto = -1
    Old = 0
    XML = 1
    JSON = 2
    New = 3
    FileAuto = 4


Parser = ParserType


class ClassAd(_native._ClassAdCore, _MutableMapping):
    """A ClassAd: a mapping from case-insensitive attribute names to
    expressions. ``ClassAd()`` is empty; ``ClassAd(text)`` parses the new
    syntax (``[ a = 1; b = a + 1 ]``); ``ClassAd(dict)`` converts each
    value (``int``, ``float``, ``str``, ``bool``, ``list``, ``dict``,
    ``ExprTree``, ``Value``).

    ``ad[key]`` gives literals as Python values and anything else as an
    ``ExprTree``; ``ad.eval(key)`` evaluates."""

    __slots__ = ()
    # The core's __eq__ (same attributes and expressions) comes first in
    # the method order; a ClassAd is mutable, so not hashable.
    __hash__ = None


def _text_of(input):
    """The text of a string, a file-like object or an iterable of lines."""
    if isinstance(input, str):
        return input
    if hasattr(input, "read"):
        return input.read()
    return "".join(input)


def parseAds(input, parser=ParserType.Auto):
    """Every ad in ``input`` (a string or a file), one after another."""
    return iter(_native._parse_ads(_text_of(input), int(parser)))


def parseNext(input, parser=ParserType.Auto):
    """The first ad of ``input`` (a string or a file; a file is read to its
    end)."""
    ads = _native._parse_ads(_text_of(input), int(parser))
    if not ads:
        raise StopIteration
    return ads[0]


def parseOne(input, parser=ParserType.Auto):
    """Every ad of ``input`` (a string, a file or an iterable of lines)
    merged into one ad."""
    return _native._parse_one(_text_of(input), int(parser))


def version():
    """The HTCondor version whose ClassAd language this is."""
    return _native._classad_version()


def lastError():
    """HTCondor's last ClassAd error: always empty here (every error is
    raised as an exception)."""
    return ""
