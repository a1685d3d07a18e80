"""Chunks rendered on a pool of local worker processes, forked with the project where they can
be, writing each chunk's lines into memory shared with the writing process."""

from __future__ import annotations

import mmap
import multiprocessing
import sys
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from .parallel_chunks import ChunkJob, ChunkResult
from .parallel_executor import Executor, ordered_results
from .parallel_worker import LOADED_PROJECTS, render_chunk, tree_fingerprint

#: Bytes of shared memory a forked worker writes one chunk's lines into: a slot for each
#: chunk in flight, more than a chunk of the bundled families' largest instances takes
#: (1,024 of 11 KB). The writer writes the lines from there, copying nothing itself, where
#: pickled through a pipe they would be copied four times and wake it once for every 64 KiB.
#: Only the pages written take memory. A chunk larger than its slot goes the pickled way.
SLOT_BYTES = 16 << 20


class SharedSlots:
    """Memory shared with the workers forked after it is made, in ``count`` slots of ``size``
    bytes. It is reserved, not taken: a page is backed only once something is written to it."""

    def __init__(self, count: int, size: int) -> None:
        self.size = size
        self.area = mmap.mmap(-1, count * size)  # anonymous and shared: forked workers see it
        self.lent: dict[int, memoryview] = {}  # slot: the view of it handed out, if any

    def put(self, slot: int, data: bytes) -> bool:
        """Write ``data`` into ``slot``; False, and nothing written, if it does not fit."""
        if len(data) > self.size:
            return False
        start = slot * self.size
        self.area[start:start + len(data)] = data
        return True

    def lend(self, slot: int, length: int) -> memoryview:
        """The first ``length`` bytes of ``slot``, not copied: the view holds until the slot
        is reclaimed (``reclaim``), and is released then, so that a caller who kept it finds
        it released rather than holding another chunk's bytes."""
        self.reclaim(slot)
        start = slot * self.size
        with memoryview(self.area) as whole:  # the slice outlives it and pins the memory
            self.lent[slot] = whole[start:start + length]
        return self.lent[slot]

    def reclaim(self, slot: int) -> None:
        """Release the view of ``slot`` handed out, if any, before the slot is written again."""
        view = self.lent.pop(slot, None)
        if view is not None:
            view.release()

    def close(self) -> None:
        """Release every view handed out and unmap the memory (in this process)."""
        for slot in list(self.lent):
            self.reclaim(slot)
        self.area.close()


#: In a forked worker: the slots of the executor that forked it.
_SLOTS: SharedSlots | None = None


def _render_into_slot(job: ChunkJob, slot: int) -> tuple[ChunkResult, int]:
    """``render_chunk`` in a forked worker, with the chunk's lines written into ``slot`` of
    the shared memory where they fit: the result, emptied of them, and their length (-1: the
    lines did not fit and travel in the result)."""
    result = render_chunk(job)
    if _SLOTS is None or not _SLOTS.put(slot, result.data):
        return result, -1
    length = len(result.data)
    result.data = b""
    return result, length


class Processes(Executor):
    """Chunks on a pool of worker processes. At most a few chunks per worker are in flight,
    so memory stays flat however many groups there are.

    On Linux, when this process runs a single thread, the workers are forked at once, with
    ``catalog`` and ``renderer`` (the project as this process loaded it) handed down: they
    start rendering without reading a spec or compiling a template again, and write each
    chunk's lines into memory shared with this process (``SharedSlots``). Otherwise they come
    from a fork server, which a lock held by another thread of this process cannot reach, and
    load the project themselves."""

    def __init__(self, workers: int, catalog: Any = None, renderer: Any = None,
                 slot_bytes: int = SLOT_BYTES) -> None:
        global _SLOTS
        self.workers = workers
        self.in_flight = 3 * workers
        self.slots: SharedSlots | None = None
        fork = sys.platform == "linux" and threading.active_count() == 1 and catalog is not None
        context = multiprocessing.get_context("fork" if fork else "forkserver")
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        if fork:
            from .render import Renderer

            root = str(catalog.project.root)
            self.fingerprint = tree_fingerprint(root)
            self.slots = SharedSlots(self.in_flight, slot_bytes)
            LOADED_PROJECTS[(root, self.fingerprint)] = (catalog,
                                                         renderer or Renderer(catalog.project))
            _SLOTS = self.slots
            try:
                self.pool.submit(int).result()  # fork every worker now, while one thread runs
            finally:
                del LOADED_PROJECTS[(root, self.fingerprint)]  # this process renders nothing of it
                _SLOTS = None

    def map(self, jobs: Iterable[ChunkJob], local: Any = None, keep: bool = False
            ) -> Iterator[ChunkResult]:
        slots = self.slots
        if slots is None:
            return ordered_results(lambda job, _: self.pool.submit(render_chunk, job), jobs,
                                   self.in_flight)

        def submit(job: ChunkJob, position: int) -> Future:
            slot = position % self.in_flight
            slots.reclaim(slot)  # the result handed out from it has been dealt with
            return self.pool.submit(_render_into_slot, job, slot)

        def receive(sent: tuple[ChunkResult, int], position: int) -> ChunkResult:
            result, length = sent
            if length >= 0:
                # Lent, not copied: the writer's one copy is into its file.
                result.data = slots.lend(position % self.in_flight, length)
            return result

        return ordered_results(submit, jobs, self.in_flight, receive)

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)
        if self.slots is not None:
            self.slots.close()
