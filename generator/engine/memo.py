"""Results of templates and expressions kept by their inputs: the values of the names they read.

In the sandbox a render is a pure function of the names it reads: nothing random, no clock, no
state that outlives a render, no file but the ones an include names (those are not kept). So
the same values give the same result, and a group that meets values an earlier group met (a
team and a setting drawn from small pools) is given that group's answer texts and probe
without rendering them again. Only results are kept, never errors: a render that fails fails
every time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..core.canonical import SCALARS, TEXT

T = TypeVar("T")


def _same(value: T) -> T:
    return value




class InputMemo:
    """The results of one template or expression (or of a step built on them), by the values
    of the names it reads in the context it runs over.

    A key is made of those values: a string as it is, any other scalar with its type (``1``,
    ``1.0`` and ``True`` are equal in Python and print differently), and a list or dict by its
    identity. Lists and dicts are pool items and the values drawn or derived from them, which
    nothing changes once drawn (templates run in an immutable sandbox, transforms work on
    copies); a key of a few object ids costs next to nothing, where a key of their text cost as
    much as a short render. The memo holds on to every object its keys name, so an id is never
    reused while it is a key. Values equal but not identical miss, which costs a render, not a
    wrong result.

    Which names count is worked out once something has run ``WARMUP`` times (a command that
    renders a few groups, as validate does, never pays for the analysis). A memo whose keys
    seldom repeat (interference drawn afresh for every group) stops trying after a trial."""

    #: Runs after which the names are worked out and results start being kept.
    WARMUP = 128
    #: Lookups after which a memo that hit fewer than ``MIN_HIT_SHARE`` of them stops trying:
    #: long enough for values drawn from pools of a few hundred combinations to start
    #: repeating (420 of them give a fifth of hits over the first 256 draws, three fifths over
    #: the first 1,024, and nearly all after).
    TRIAL = 1024
    MIN_HIT_SHARE = 0.2
    #: Lookups after which a memo that has not hit once stops: what it kept meanwhile (a
    #: rendered phase of fifteen turns each time) is let go early.
    FIRST_HIT_WITHIN = 256
    #: Results kept at most; once full, it starts again from none.
    ENTRIES = 2048

    __slots__ = ("_find_names", "names", "active", "_results", "_runs", "_lookups", "_hits")

    def __init__(self, find_names: Callable[[], tuple[str, ...] | None]) -> None:
        """``find_names`` gives what the results depend on, or None where they cannot be kept
        (a template that reaches other files, one that could not be analysed)."""
        self._find_names = find_names
        self.names: tuple[str, ...] | None = None
        self.active = True
        #: Each result with the values its key was made of (held, so their ids stay theirs).
        self._results: dict[tuple, tuple[Any, list[Any]]] = {}
        self._runs = self._lookups = self._hits = 0

    def key(self, context: Mapping[str, Any]) -> tuple | None:
        """The key of ``context``'s values, or None where nothing is kept (still warming up,
        inactive, or a name the context lacks: the render then fails with its own error)."""
        values = self._values(context)
        return None if values is None else _key_of(values)

    def _values(self, context: Mapping[str, Any]) -> list[Any] | None:
        if not self.active:
            return None
        names = self.names
        if names is None:
            self._runs += 1
            if self._runs < self.WARMUP:
                return None
            names = self.names = self._find_names()
            if names is None:
                self.active = False
                return None
        try:
            return [context[name] for name in names]
        except KeyError:
            return None

    def result(self, context: Mapping[str, Any], compute: Callable[[Mapping[str, Any]], T],
               copy: Callable[[T], T | None] = _same) -> T:
        """``compute(context)``, or what it gave before for the same values of the names.
        ``copy`` gives what is kept of a result and what is handed out of a kept one (None: a
        result not to keep); results that callers may change are kept and handed out as
        copies."""
        if not self.active:
            return compute(context)
        if self.names is None:  # warming up
            values = self._values(context)
            if values is None:
                return compute(context)
        else:
            try:
                values = list(map(context.__getitem__, self.names))
            except KeyError:  # a name the context lacks: the render fails with its own error
                return compute(context)
        key = _key_of(values)
        # get() written out for a hit: every group of a family asks its memos a few times.
        entry = self._results.get(key)
        if entry is not None:
            self._lookups += 1
            self._hits += 1
            return copy(entry[0])  # type: ignore[no-any-return]  # a kept result copies
        self.get(key)  # the miss counted, and the trial judged
        result = compute(context)
        keep = None if result is None else copy(result)
        if keep is not None:
            self.put(key, keep, values)
        return result

    def get(self, key: tuple) -> Any:
        """The result kept under ``key``, or None (results are never None)."""
        self._lookups += 1
        entry = self._results.get(key)
        if entry is not None:
            self._hits += 1
            return entry[0]
        lookups = self._lookups
        if (lookups == self.FIRST_HIT_WITHIN and not self._hits) or (
                lookups == self.TRIAL and self._hits < self.MIN_HIT_SHARE * self.TRIAL):
            self.active = False
            self._results.clear()
        return None

    def put(self, key: tuple, result: Any, values: list[Any]) -> None:
        """Keep ``result`` (not None) under ``key``, made of ``values``."""
        if not self.active:
            return
        if len(self._results) >= self.ENTRIES:
            self._results.clear()
        self._results[key] = (result, values)


def _key_of(values: list[Any]) -> tuple:
    """A key that two lists of values share only if they are the same: equal scalars of the
    same type (floats by their text: ``0.0`` and ``-0.0`` are equal and print differently),
    and the very same lists and dicts."""
    key = []
    for value in values:  # a loop, not a generator: a key is made for every lookup
        kind = type(value)
        key.append(value if kind is str else (float, repr(value)) if kind is float else
                   (kind, value) if kind in SCALARS else id(value))
    return tuple(key)


def is_plain(value: Any) -> bool:
    """Whether ``value`` is plain data throughout (strings, numbers, booleans, None, and lists
    and dicts of them, keys strings): what a memo may keep and copy."""
    kind = type(value)
    if kind in SCALARS:
        return True
    if kind is list:  # a list or dict of scalars (most are) is told in C
        return SCALARS.issuperset(map(type, value)) or all(is_plain(item) for item in value)
    if kind is dict:
        return TEXT.issuperset(map(type, value)) and (
            SCALARS.issuperset(map(type, value.values()))
            or all(is_plain(item) for item in value.values()))
    return False
