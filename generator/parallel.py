"""Rendering a family's groups on several processes, byte-identical to one.

Groups are independent: each draws from a random stream keyed by the seed, the family and its
own index, never from what came before. So a family's groups can be cut into chunks, rendered
anywhere, and joined in order. Only the family-scope checks (``balanced``) need every group;
their tallies are counts, and counts add up.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import mmap
import multiprocessing
import os
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .canonical import dump_instance_bytes, normalize
from .errors import SpecError
from .limits import rendering_alone
from .spec import FamilySpec, ReleaseFamily

#: Instances a chunk aims at: enough that handing a chunk over (pickling its job and result,
#: a future, waking the writer, two threads of the pool) costs little next to rendering it,
#: few enough that a few chunks per worker in flight take little memory. (Measured, 60,000
#: groups on two workers: chunks of 256 instances cost the writing process 1.1 s of CPU
#: time, chunks of 1,024 0.8 s.)
CHUNK_INSTANCES = 1024
#: Most groups in a chunk (for families of one instance a group).
MAX_CHUNK_GROUPS = 256
#: Chunks each worker gets at the least: a run too small for that many chunks of the usual
#: size is cut finer, so that no worker waits while another renders the whole run.
MIN_CHUNKS_PER_WORKER = 4
#: Groups of a chunk whose slots are drawn one after another before they are rendered
#: (``FamilyGenerator.group_batch``): few enough that their values take little memory.
STAGED_GROUPS = 16


def chunk_groups(variants: int, groups: int, workers: int) -> int:
    """Groups per chunk for a family of (at most) ``variants`` instances a group; on several
    ``workers``, few enough that a run of ``groups`` gives each some chunks."""
    size = max(1, min(MAX_CHUNK_GROUPS, CHUNK_INSTANCES // max(1, variants)))
    if workers > 1:
        size = min(size, max(1, -(-groups // (MIN_CHUNKS_PER_WORKER * workers))))
    return size


@dataclass(frozen=True)
class ChunkJob:
    """Groups ``start .. start+count-1`` of one family, with the fields a release adds."""

    root: str
    family: str
    seed: int
    start: int
    count: int
    entry: ReleaseFamily | None = None
    fingerprint: str = ""  # of the project's specs and templates, as the submitter sees them


@dataclass
class ChunkResult:
    """One chunk rendered: its instances as canonical JSON lines, joined, and the family-scope
    check tallies of its groups; rendered in this process, the instances themselves too."""

    #: The chunk's lines, in order, each ending in a newline. From forked workers, a view of
    #: the memory they wrote it into, which holds only until the next result is asked for.
    data: bytes | memoryview
    count: int  # how many lines
    tallies: dict[int, Counter]
    instances: list[dict[str, Any]] | None = None
    #: The templates the chunk's groups fetched through include, import or extends, as
    #: (display name, SHA-256 of the bytes read and rendered, or ""): which a group reaches
    #: can depend on its values, and a release must pin them whichever process rendered the
    #: group, by the bytes that process read.
    templates: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of_lines(cls, lines: list[bytes], tallies: dict[int, Counter],
                 instances: list[dict[str, Any]] | None = None,
                 templates: tuple[tuple[str, str], ...] = ()) -> ChunkResult:
        """A chunk made of ``lines`` (each ending in a newline)."""
        return cls(b"".join(lines), len(lines), tallies, instances, templates)

    def lines(self) -> list[bytes]:
        """Each instance's line, newline included. A canonical line holds no other newline
        (JSON escapes one in a string), so splitting at newlines gives the lines back."""
        return list(io.BytesIO(self.data))

    def records(self) -> Iterator[tuple[bytes, dict[str, Any]]]:
        """Each instance's line with the instance (parsed back if it came from elsewhere)."""
        if self.instances is not None:
            return zip(self.lines(), self.instances, strict=True)
        return ((line, json.loads(line)) for line in self.lines())


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (shard I of N, counting from 0) as a pair; a clear error otherwise."""
    index, sep, total = text.partition("/")
    if not sep or not index.isdigit() or not total.isdigit() or int(total) < 1 or \
            int(index) >= int(total):
        raise SpecError.single(f"--shard must be I/N with 0 <= I < N, got {text!r}")
    return int(index), int(total)


def shard_groups(start: int, count: int, shard: tuple[int, int]) -> tuple[int, int]:
    """The contiguous run of groups shard ``I/N`` of ``count`` groups from ``start`` takes:
    the shards in order cover every group once."""
    index, total = shard
    first = start + count * index // total
    last = start + count * (index + 1) // total
    return first, last - first


@dataclass(frozen=True)
class ChunkJobs:
    """A family's groups cut into chunks, in order. Each job is made when an iteration
    reaches it, so a million groups take no more memory than sixteen; it may be iterated
    more than once."""

    root: str
    family: str
    seed: int
    start: int
    count: int
    entry: ReleaseFamily | None
    fingerprint: str
    size: int  # groups per chunk

    def __iter__(self) -> Iterator[ChunkJob]:
        end = self.start + self.count
        for first in range(self.start, end, self.size):
            yield ChunkJob(self.root, self.family, self.seed, first,
                           min(self.size, end - first), self.entry, self.fingerprint)


def chunk_jobs(root: Path, family: FamilySpec, seed: int, start: int, count: int,
               entry: ReleaseFamily | None = None, fingerprint: str = "", workers: int = 1
               ) -> ChunkJobs:
    """A family's groups cut into chunks of about ``CHUNK_INSTANCES`` instances, in order,
    for ``workers`` to render (``fingerprint``: the project's ``tree_fingerprint``, which a
    worker in another process checks before it renders). Where chunks fall changes no byte
    of the output."""
    return ChunkJobs(str(root), str(family.path), seed, start, count, entry, fingerprint,
                     chunk_groups(len(family.variants()), count, workers))


def fingerprint_for(executor: Executor, root: Path) -> str:
    """What chunk jobs carry for ``executor``: nothing when they render in this process,
    else the project's ``tree_fingerprint``, which each worker checks (workers forked with
    the project already know it)."""
    if isinstance(executor, InProcess):
        return ""
    return executor.fingerprint or tree_fingerprint(root)


def tree_fingerprint(root: Path | str) -> str:
    """SHA-256 over every file of the project's specs/ and templates/ (path and content): a
    worker whose copy differs from the submitter's must not render."""
    digest = hashlib.sha256()
    base = Path(root)
    for folder in ("specs", "templates"):
        for path in sorted((base / folder).rglob("*")):
            if path.is_file():
                digest.update(path.relative_to(base).as_posix().encode("utf-8") + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


# In each worker process: the project's catalog and renderer, and one generator per family
# and seed, loaded once per version of the project (its fingerprint), so a worker reads the
# specs once however many chunks it renders, and a long-lived worker never serves stale ones.
_PROJECTS: dict[tuple[str, str], tuple[Any, Any]] = {}
_GENERATORS: dict[tuple[str, str, str, int], Any] = {}


def _generator(job: ChunkJob) -> Any:
    from .catalog import Catalog
    from .generate import FamilyGenerator
    from .project import Project
    from .render import Renderer

    version = (job.root, job.fingerprint)
    if version not in _PROJECTS:
        if job.fingerprint and tree_fingerprint(job.root) != job.fingerprint:
            raise SpecError.single(
                f"a worker sees other specs or templates under {job.root} than the process "
                "that sent it work; every worker needs the same project at the same path")
        project = Project(Path(job.root))
        _PROJECTS[version] = (Catalog.load(project), Renderer(project))
    key = (*version, job.family, job.seed)
    if key not in _GENERATORS:
        catalog, renderer = _PROJECTS[version]
        _GENERATORS[key] = FamilyGenerator(catalog.family(job.family), renderer, job.seed)
    return _GENERATORS[key]


def render_chunk(job: ChunkJob, generator: Any = None, keep: bool = False) -> ChunkResult:
    """Render one chunk, in whichever process runs it (with ``generator``, that one); with
    ``keep``, the result holds the instances besides their lines. Kept, a chunk's instances
    stay in memory until the chunk is done, where each would be let go once written: only a
    caller that reads them (a freeze) asks for them."""
    generator = generator or _generator(job)
    generator.renderer.take_fetched()  # what earlier work fetched is not this chunk's
    lines, instances = [], []
    end = job.start + job.count
    with generator.budget_session():
        for first in range(job.start, end, STAGED_GROUPS):
            batch = generator.group_batch(first, min(STAGED_GROUPS, end - first))
            for group_index, group in enumerate(batch, start=first):
                for instance in group:
                    if job.entry is not None:
                        instance["fields"] = normalize(dict(sorted(
                            {**instance["fields"], **job.entry.release_fields(group_index)}
                            .items())))
                    # Generated instances are normal, and what is not rendered text in them
                    # the generator checked as it made it.
                    lines.append(dump_instance_bytes(instance, checked=generator.json_checked))
                    if keep:
                        instances.append(instance)
    return ChunkResult.of_lines(lines, generator.checks.take_tallies(),
                                instances if keep else None,
                                tuple(generator.renderer.take_fetched()))


def add_fetched(templates: dict[str, str], fetched: Iterable[tuple[str, str]]) -> None:
    """Add a chunk's fetched templates (``ChunkResult.templates``) to ``templates`` (display
    name to digest), refusing one read as other bytes by another chunk: it was edited while
    the release was rendered, and its instances were not all rendered from the same text."""
    for name, digest in fetched:
        known = templates.setdefault(name, digest)
        if digest and known and known != digest:
            raise SpecError.single("changed while the release was rendered: processes read "
                                   "different bytes of it (render again)", name)
        templates[name] = known or digest


def render_chunk_alone(job: ChunkJob) -> ChunkResult:
    """``render_chunk`` on a thread that is not its process's main one (a Dask worker's),
    alone in its process while it renders, so that each group's memory budget holds there
    as in a worker process (``rendering_alone``)."""
    with rendering_alone():
        return render_chunk(job)


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
            _PROJECTS[(root, self.fingerprint)] = (catalog,
                                                    renderer or Renderer(catalog.project))
            _SLOTS = self.slots
            try:
                self.pool.submit(int).result()  # fork every worker now, while one thread runs
            finally:
                del _PROJECTS[(root, self.fingerprint)]  # this process renders nothing of it
                _SLOTS = None

    def map(self, jobs: Iterable[ChunkJob], local: Any = None, keep: bool = False
            ) -> Iterator[ChunkResult]:
        slots = self.slots
        if slots is None:
            return _ordered(lambda job, _: self.pool.submit(render_chunk, job), jobs,
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

        return _ordered(submit, jobs, self.in_flight, receive)

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)
        if self.slots is not None:
            self.slots.close()


def _ordered(submit: Callable[[ChunkJob, int], Any], jobs: Iterable[ChunkJob], in_flight: int,
             receive: Callable[[Any, int], ChunkResult] | None = None
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


class DaskCluster(Executor):
    """Chunks on a Dask distributed cluster: the scheduler at ``address``, or, without one, a
    local cluster of ``workers`` processes started for the run. Every worker must see the
    project at the same path; each checks that its specs and templates are the ones this
    process has (``tree_fingerprint``) before it renders anything."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SpecError.single("--engine dask needs Dask distributed: pip install -e "
                                   "'.[dask]' in memspec's checkout") from None
        self.cluster = None
        if address is None:
            # No dashboard: it would open a port, and nothing here reads it.
            # Its workers' logs silenced: a chunk that fails (a template over its budget) is
            # reported once, as a located error, not also as a worker's traceback.
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        silence_logs=logging.CRITICAL)
            self.client = Client(self.cluster)
        else:
            self.client = Client(address)
        self.workers = max(workers, len(self.client.scheduler_info()["workers"]))
        self.in_flight = 3 * self.workers

    def map(self, jobs: Iterable[ChunkJob], local: Any = None, keep: bool = False
            ) -> Iterator[ChunkResult]:
        def submit(job: ChunkJob, _position: int) -> Any:
            return self.client.submit(render_chunk_alone, job, pure=False)

        return _ordered(submit, jobs, self.in_flight)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


ENGINES = ("local", "dask")


def executor_for(workers: int, engine: str = "local", address: str | None = None,
                 catalog: Any = None, renderer: Any = None) -> Executor:
    """Where chunks are rendered: with the ``local`` engine, in this process for one worker,
    else on a pool of ``workers`` processes (handed ``catalog`` and ``renderer``, this
    process's, where they can be; see ``Processes``); with ``dask``, on a Dask cluster."""
    if workers < 1:
        raise SpecError.single(f"--workers must be at least 1, got {workers}")
    if engine not in ENGINES:
        raise SpecError.single(f"unknown engine {engine!r}; known engines: "
                               + ", ".join(ENGINES))
    if address is not None and engine != "dask":
        raise SpecError.single("--scheduler needs --engine dask")
    if engine == "dask":
        return DaskCluster(workers, address)
    return InProcess() if workers == 1 else Processes(workers, catalog, renderer)


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
