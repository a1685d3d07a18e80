"""The cyclic garbage collector paused while a command builds a large tree of plain data.

Reading a release makes hundreds of thousands of dicts and lists, none of them in a cycle
(parsed JSON cannot hold one), and each few hundred of them set off a collection that walks
every container still alive: reading the largest bundled release spent about as long in the
collector as in parsing. Reference counting frees everything such a tree holds, so pausing
the collector while it is built frees the same memory and changes no result.

Once built, such a tree is still walked by every full collection the rest of the command
sets off (planning a score report's contrasts spent a tenth of a second in one): a tree a
command holds to its end is set apart from the collector's walks (``gc.freeze``), which
frees nothing less, since nothing in it is in a cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off inside the block (as it was after it: a caller that turned it
    off keeps it off)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def set_apart_from_collector() -> None:
    """Everything alive now left out of the collector's walks from here on (``gc.freeze``):
    for a command that has just read what it holds to its end (a release's instances, in no
    cycle, which reference counting frees as ever)."""
    gc.freeze()
