"""The time and memory budget of one block of work (a group), on the main thread or another.

Time runs out by a signal on the main thread and by a watchdog thread elsewhere; memory is held
by the process's address-space limit, set above what the process maps when the block starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from .limits_settings import group_megabytes, group_seconds

try:
    import resource
except ImportError:  # not on every platform; budgets then fall back to none
    resource = None  # type: ignore[assignment]


def one_group() -> Budget:
    """A budget of one group (``group_seconds``, ``group_megabytes``), for work that is not a
    group's but may run a stranger's code as long (compiling a template, which folds its
    constant expressions by calling filters)."""
    return Budget(group_seconds(), group_megabytes())


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class BudgetExceeded(BaseException):
    """Work took longer than its time budget.

    Not an ``Exception``: code that catches every ``Exception`` around work it calls (Jinja's
    constant folding, a filter's fallback) must not swallow it and carry on unbudgeted. Only
    the code that set the budget catches it, by name."""

    #: (file, line, column) of the template line that was running when time ran out, if a
    #: template was: set by the renderer on the way out.
    where: tuple[str, int, int] | None = None


def _alarm(signum: int, frame: object) -> None:
    _FIRED.add(threading.get_ident())
    raise BudgetExceeded


#: Threads whose budget ran out during the block they are in: on leaving it, the block fails
#: even where something in it caught the exception and went on (the budget stays fired).
_FIRED: set[int] = set()


def _raise_if_fired() -> None:
    """Raise BudgetExceeded where the running thread's budget fired during its block, whatever
    became of the exception raised then."""
    ident = threading.get_ident()
    if ident in _FIRED:
        _FIRED.discard(ident)
        raise BudgetExceeded


class _Watchdog:
    """Time budgets of threads other than the main one, where no signal reaches: one daemon
    thread raises BudgetExceeded in a thread whose deadline passed
    (``PyThreadState_SetAsyncExc``), which, like the alarm, interrupts Python code between two
    of its steps."""

    def __init__(self) -> None:
        self._deadlines: dict[int, float] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float) -> bool:
        """Give the running thread ``seconds`` from now; False (nothing done) where a block
        around this one already keeps its time."""
        with self._wake:
            ident = threading.get_ident()
            if ident in self._deadlines:
                return False
            _FIRED.discard(ident)
            self._deadlines[ident] = time.monotonic() + seconds
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="memspec-budget",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()
            return True

    def disarm(self) -> None:
        """The running thread's block is over. An exception the watchdog sent that has not
        arrived yet is withdrawn (it would land in whatever runs next); the block's exit
        raises it instead (``_raise_if_fired``)."""
        ident = threading.get_ident()
        with self._wake:
            self._deadlines.pop(ident, None)
            if ident in _FIRED:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)

    def _watch(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                for ident, deadline in list(self._deadlines.items()):
                    if deadline <= now:
                        del self._deadlines[ident]
                        _FIRED.add(ident)
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(ident), ctypes.py_object(BudgetExceeded))
                soonest = min(self._deadlines.values(), default=now + 60.0)
                self._wake.wait(max(soonest - now, 0.001))


_WATCHDOG = _Watchdog()

#: The thread that renders alone in this process (``rendering_alone``), if one does: its
#: budgets set the address-space limit though it is not the main thread.
_MEMORY_OWNER: int | None = None
_RENDERING = threading.Lock()


@contextlib.contextmanager
def rendering_alone() -> Iterator[None]:
    """Within it, the running thread is the only one of this process doing budgeted work
    (others wait to enter), so the budgets it enters may set the process's address-space
    limit as the main thread's do: one group's memory is held to its budget on a worker
    thread (a Dask worker's) as in a worker process."""
    global _MEMORY_OWNER
    with _RENDERING:
        _MEMORY_OWNER = threading.get_ident()
        try:
            yield
        finally:
            _MEMORY_OWNER = None


#: /proc/self/statm of this process, opened once (a descriptor). A forked child inherits its
#: parent's, which names the parent: the child forgets it (``os.register_at_fork``).
_statm: int | None = None


def _forget_statm() -> None:
    global _statm
    _statm = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_statm)


def _address_space() -> int | None:
    """Bytes of address space this process maps now (Linux), or None where unknown.

    Read once per group, so the file stays open and is read again from its start (the
    kernel writes it afresh on every read)."""
    global _statm
    try:
        if _statm is None:
            _statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        return int(os.pread(_statm, 128, 0).split()[0]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


class Budget:
    """The time and memory budgets of one block of work (a group), as one context manager that
    is made once and entered for every group (it is a plain class, not a generator, because it
    is entered hundreds of times a second).

    Time: SIGALRM after ``seconds`` of wall-clock time raises BudgetExceeded, which also
    interrupts a runaway regular expression. Memory: the soft RLIMIT_AS is set ``megabytes``
    above what the process maps on entry, so allocations beyond it fail with MemoryError; the
    budget is far above what any real render needs, so a MemoryError that reaches the caller is
    a refusal of the input, not a crash.

    Signals and the address-space limit belong to the whole process, so only the main thread
    sets them (threads rendering side by side would undo each other's). There, where the
    platform lacks them, or where an outer budget (a running alarm, a tighter limit) is already
    in force, the block runs without that budget.

    Setting and undoing both takes nine system calls, which a group of one instance rendered in
    a tenth of a millisecond notices. Inside ``session()`` (a chunk of groups, one after
    another) they are set once; each group then only moves its deadline and reads its address
    space."""

    #: How far a session's limit may lag what a group's would be before it is set again: the
    #: budget is hundreds of megabytes, so a few either way change nothing.
    SESSION_SLACK = 16 * 1024 * 1024
    #: Groups of a session between two reads of the address space (a system call that costs
    #: as much as a fiftieth of a small group in a long run). A group's limit then lags its
    #: own start by what the groups since the last read kept once done: results kept by
    #: their inputs, a few renders each, which for any family whose memory stays flat over a
    #: run is nothing against the slack above.
    SESSION_READ_EVERY = 32

    def __init__(self, seconds: float, megabytes: int) -> None:
        self.seconds = seconds
        self.megabytes = megabytes
        self.bytes = megabytes * 1024 * 1024
        self._alarm_set = False
        self._previous_handler: Any = None
        self._previous_limit: tuple[int, int] | None = None
        # A session's state: open, the group running in it and its deadline, and the
        # address-space limit it set (None: it set none).
        self._session = False
        self._in_group = False
        self._deadline = 0.0
        self._session_limit: int | None = None
        self._outer_limit: tuple[int, int] | None = None  # what was in force before it
        self._groups_to_read = 0  # groups of the session until the address space is read
        self._spent = 0.0  # seconds of the next block's budget taken before it (``after``)
        self._watched = False  # the watchdog keeps this block's time (not the main thread)
        self._outer: tuple[float, float] | None = None  # an outer alarm put aside: left, since

    def _usable(self) -> bool:
        """Whether this thread may set the budget's alarm: the main thread, where setitimer
        exists and no other alarm is running."""
        return (threading.current_thread() is threading.main_thread()
                and hasattr(signal, "setitimer")
                and signal.getitimer(signal.ITIMER_REAL)[0] == 0)

    def _limit_for(self, now: int, soft: int, hard: int) -> int | None:
        """The soft limit a group starting at ``now`` bytes of address space needs, or None
        where a tighter one is already in force."""
        limit = now + self.bytes
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        return limit if soft == resource.RLIM_INFINITY or soft > limit else None

    def after(self, spent: float) -> Budget:
        """The budget, for a block of work that continues one begun before it (the same
        group, in another stage), which took ``spent`` seconds of its time: entered, it
        allows only what is left."""
        self._spent = spent
        return self

    def _seconds_left(self) -> float:
        """The time the block entered now may take (what ``after`` took off, once)."""
        spent, self._spent = self._spent, 0.0
        # At least a millisecond: an alarm of zero seconds would be no alarm at all.
        return max(self.seconds - spent, 0.001) if spent else self.seconds

    def __enter__(self) -> Budget:
        if self._session:
            self._enter_in_session()
            return self
        seconds = self._seconds_left()
        self._alarm_set, self._previous_limit = False, None
        if threading.current_thread() is not threading.main_thread():
            # No signal reaches this thread: time is kept by the watchdog. The address-space
            # limit is the whole process's: set only by a thread that renders alone in its
            # process (``rendering_alone``), else memory is bounded by the size checks.
            self._watched = _WATCHDOG.arm(seconds)
            if threading.get_ident() == _MEMORY_OWNER:
                self._limit_memory()
            return self
        outer = signal.getitimer(signal.ITIMER_REAL)[0] if hasattr(signal, "setitimer") else 0
        if hasattr(signal, "setitimer") and (outer == 0 or outer > seconds):
            # An outer budget with more time left (a command's, around a group's) is put
            # aside for this block and set again, less what the block took, on leaving it.
            self._outer = (outer, time.monotonic()) if outer else None
            if not outer:  # (an outer block's fired budget stays fired through this one)
                _FIRED.discard(threading.get_ident())
            self._previous_handler = signal.signal(signal.SIGALRM, _alarm)
            try:
                signal.setitimer(signal.ITIMER_REAL, seconds)
            except (OSError, OverflowError, ValueError):
                signal.signal(signal.SIGALRM, self._previous_handler or signal.SIG_DFL)
                raise
            self._alarm_set = True
        self._limit_memory()
        return self

    def _limit_memory(self) -> None:
        """Set the soft address-space limit ``bytes`` above what the process maps now (kept
        in ``_previous_limit`` to undo), unless a tighter one is in force."""
        now = _address_space() if resource is not None else None
        if now is not None:
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = self._limit_for(now, soft, hard)
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
                self._previous_limit = (soft, hard)

    def __exit__(self, *exc_info: object) -> None:
        if self._session:
            self._in_group = False
            if exc_info[0] is None:
                _raise_if_fired()
            return
        if self._watched:
            _WATCHDOG.disarm()
            self._watched = False
        if self._previous_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, self._previous_limit)
            self._previous_limit = None
        if self._alarm_set:
            signal.setitimer(signal.ITIMER_REAL, 0)
            previous = self._previous_handler
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            self._alarm_set = False
            if self._outer is not None:
                outer, since = self._outer
                self._outer = None
                signal.setitimer(signal.ITIMER_REAL,
                                 max(outer - (time.monotonic() - since), 0.001))
        if exc_info[0] is None:
            _raise_if_fired()

    # ------------------------------------------------------------------ sessions

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """A run of groups entered one after another, each still within its own budget.

        The alarm stays armed for the whole run and its handler compares the clock with the
        running group's deadline: it fires at most ``seconds`` after it was last armed, which
        is never later than the deadline of a group that started since, and arms itself again
        for what is left (or for ``seconds`` between groups). The address-space limit is set
        again only when a group's would differ from it by more than ``SESSION_SLACK``. Where
        the budget cannot be set (another thread, another alarm, another platform), or inside
        a session already, each group does as it would on its own."""
        if self._session or not self._usable():
            yield
            return
        previous_handler = signal.signal(signal.SIGALRM, self._on_session_alarm)
        self._outer_limit = resource.getrlimit(resource.RLIMIT_AS) if resource else None
        self._session, self._in_group, self._session_limit = True, False, None
        self._groups_to_read = 0
        try:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            yield
        finally:
            self._session = self._in_group = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM,
                          signal.SIG_DFL if previous_handler is None else previous_handler)
            if self._session_limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, self._outer_limit)
            self._session_limit = self._outer_limit = None

    def _enter_in_session(self) -> None:
        _FIRED.discard(threading.get_ident())
        spent, left = self._spent, self._seconds_left()
        self._deadline = time.monotonic() + left
        self._in_group = True
        if spent:  # a group going on: its memory limit was set where it began
            if spent > self.seconds / 100:
                # The alarm may be armed for later than this deadline, by up to what was
                # spent: armed again where that is more than a blink.
                signal.setitimer(signal.ITIMER_REAL, left)
            return
        if self._groups_to_read > 0:
            self._groups_to_read -= 1
            return
        self._groups_to_read = self.SESSION_READ_EVERY - 1
        now = _address_space() if self._outer_limit is not None else None
        if now is None:
            return
        soft, hard = self._outer_limit  # type: ignore[misc]
        limit = self._limit_for(now, soft, hard)
        if limit is None:  # the limit in force before the session is the tighter: it stands
            if self._session_limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
                self._session_limit = None
        elif self._session_limit is None or \
                abs(limit - self._session_limit) > self.SESSION_SLACK:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            self._session_limit = limit

    def _on_session_alarm(self, signum: int, frame: object) -> None:
        if not self._in_group:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            return
        left = self._deadline - time.monotonic()
        if left <= 0:
            _FIRED.add(threading.get_ident())
            # Armed again before raising: were the exception swallowed, the next group would
            # otherwise run with no alarm at all.
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            raise BudgetExceeded
        signal.setitimer(signal.ITIMER_REAL, left)
