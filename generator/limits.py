"""Budgets that keep a hostile spec from hanging or exhausting the machine."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Seconds one group of one family may take to render and check ($MEMSPEC_GROUP_SECONDS).
GROUP_SECONDS = float(os.environ.get("MEMSPEC_GROUP_SECONDS", "20"))


class BudgetExceeded(Exception):
    """Work took longer than its time budget."""


def _alarm(signum: int, frame: object) -> None:
    raise BudgetExceeded


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise BudgetExceeded in this block after ``seconds`` of wall-clock time.

    Uses SIGALRM, which also interrupts a runaway regular expression; where signals are not
    available (another thread, another platform) the block runs unbudgeted."""
    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer") or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
