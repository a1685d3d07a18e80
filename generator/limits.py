"""Budgets that keep a hostile spec from hanging or exhausting the machine."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import resource
except ImportError:  # not on every platform; budgets then fall back to none
    resource = None  # type: ignore[assignment]

#: Seconds one group of one family may take to render and check ($MEMSPEC_GROUP_SECONDS).
GROUP_SECONDS = float(os.environ.get("MEMSPEC_GROUP_SECONDS", "20"))
#: Megabytes of memory one group may take on top of what the process holds when it starts
#: ($MEMSPEC_GROUP_MEGABYTES). A render is at most a few million characters, so this is
#: generous; it is there so that a template doubling a string in a loop, or asking for a
#: gigabyte of padding in one call, fails at once instead of driving the machine out of memory.
GROUP_MEGABYTES = int(os.environ.get("MEMSPEC_GROUP_MEGABYTES", "512"))
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class BudgetExceeded(Exception):
    """Work took longer than its time budget."""

    #: (file, line, column) of the template line that was running when time ran out, if a
    #: template was: set by the renderer on the way out.
    where: tuple[str, int, int] | None = None


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


#: /proc/self/statm of this process, opened once: (pid, descriptor). A forked child inherits
#: its parent's, which names the parent, so the pid says whose it is.
_statm: tuple[int, int] | None = None


def _address_space() -> int | None:
    """Bytes of address space this process maps now (Linux), or None where unknown.

    Read once per group, so the file stays open and is read again from its start (the
    kernel writes it afresh on every read)."""
    global _statm
    try:
        pid = os.getpid()
        if _statm is None or _statm[0] != pid:
            _statm = (pid, os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))
        return int(os.pread(_statm[1], 128, 0).split()[0]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def memory_budget(megabytes: int) -> Iterator[None]:
    """Make allocations in this block fail with MemoryError once the process maps
    ``megabytes`` more than it did on entry.

    Sets the soft RLIMIT_AS for the block and restores it after. The limit is the whole
    process's, so, as for ``time_budget``, only the main thread sets one (threads rendering side
    by side would undo each other's); there, and where the limit or the current size cannot be
    known (another platform), the block runs unbudgeted. A MemoryError that reaches the caller
    is a refusal of the input, not a crash: the budget is far above what any real render
    needs."""
    main = threading.current_thread() is threading.main_thread()
    now = _address_space() if resource is not None and main else None
    if now is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = now + megabytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        yield  # a tighter limit is already in force
        return
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
