"""Any list of items mapped over forked processes (validation and verification use it), and
how many cores this process may use."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from typing import Any


def available_cores() -> int:
    """The cores this process may run on (its affinity where the platform says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: The work of the current forked_map, inherited by its forked workers.
_FORKED_WORK: tuple[Callable[[Any], Any], list[Any]] | None = None


def _run_forked(index: int) -> Any:
    assert _FORKED_WORK is not None
    function, items = _FORKED_WORK
    return function(items[index])


def forked_map(function: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    """``[function(item) for item in items]``, on up to ``workers`` forked processes.

    Forked workers start with everything this process has loaded, the function and items
    included, so only an index goes out and only a result comes back (results must pickle).
    Items are handed out one at a time, so slow ones do not queue behind each other, and
    results come back in order. Where fork is unavailable, or one worker would do, the items
    run here."""
    global _FORKED_WORK
    workers = min(workers, len(items))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items]
    _FORKED_WORK = (function, items)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return list(pool.imap(_run_forked, range(len(items)), chunksize=1))
    finally:
        _FORKED_WORK = None
