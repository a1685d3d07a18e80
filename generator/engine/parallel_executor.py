"""What runs chunk jobs (an ``Executor``), the one that runs them in this process, and how
results of jobs running side by side come back in job order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .parallel_chunks import ChunkJob, ChunkResult
from .parallel_worker import render_chunk, tree_fingerprint


class Executor:
    """Runs chunk jobs and yields their results in job order."""

    #: The project's ``tree_fingerprint`` where the executor already took it (workers forked
    #: with the project), else "".
    fingerprint = ""
    #: How many chunks it renders at once (its worker processes).
    workers = 1

    def map(self, jobs: Iterable[ChunkJob], local: Any = None, keep: bool = False
            ) -> Iterator[ChunkResult]:
        """Results of ``jobs`` in order; ``local`` is the jobs' FamilyGenerator in this
        process, which an executor that renders here uses instead of loading the specs, and
        then hands out the instances too with ``keep`` (as ``render_chunk``). A result is
        the caller's until it asks for the next: its ``data`` may be lent, not copied."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the executor's processes, if any."""


class InProcess(Executor):
    """Every chunk in this process, one after another."""

    def map(self, jobs: Iterable[ChunkJob], local: Any = None, keep: bool = False
            ) -> Iterator[ChunkResult]:
        for job in jobs:
            yield render_chunk(job, local, keep)


def fingerprint_for(executor: Executor, root: Path) -> str:
    """What chunk jobs carry for ``executor``: nothing when they render in this process,
    else the project's ``tree_fingerprint``, which each worker checks (workers forked with
    the project already know it)."""
    if isinstance(executor, InProcess):
        return ""
    return executor.fingerprint or tree_fingerprint(root)


def ordered_results(submit: Callable[[ChunkJob, int], Any], jobs: Iterable[ChunkJob],
                    in_flight: int, receive: Callable[[Any, int], ChunkResult] | None = None
                    ) -> Iterator[ChunkResult]:
    """Submit jobs (``submit(job, position)``, a future back) keeping ``in_flight`` of them
    running; yield their results in job order, each passed through ``receive(result,
    position)``. The job that takes a yielded result's place goes out only when the next
    result is asked for, so job ``n + in_flight`` may reuse what job ``n``'s result holds."""
    pending: deque[tuple[int, Any]] = deque()
    iterator = enumerate(jobs)
    for position, job in iterator:
        pending.append((position, submit(job, position)))
        if len(pending) >= in_flight:
            break
    while pending:
        position, future = pending.popleft()
        result = future.result()
        yield result if receive is None else receive(result, position)
        for next_position, job in iterator:
            pending.append((next_position, submit(job, next_position)))
            break
