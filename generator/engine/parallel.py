"""Rendering a family's groups on several processes, byte-identical to one.

Groups are independent: each draws from a random stream keyed by the seed, the family and its
own index, never from what came before. So a family's groups can be cut into chunks, rendered
anywhere, and joined in order. Only the family-scope checks (``balanced``) need every group;
their tallies are counts, and counts add up.

The interface the rest of the package imports from: chunk jobs and results
(``parallel_chunks``), rendering one chunk (``parallel_worker``), the executors that run them
(``parallel_executor``, ``parallel_processes``, ``parallel_dask``) and a plain map over forked
processes (``parallel_forked``). Which executor a run gets is chosen here.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import SpecError
from .parallel_chunks import (
    CHUNK_INSTANCES,
    MAX_CHUNK_GROUPS,
    MIN_CHUNKS_PER_WORKER,
    ChunkJob,
    ChunkJobs,
    ChunkResult,
    add_fetched,
    chunk_groups,
    chunk_jobs,
    parse_shard,
    shard_groups,
)
from .parallel_dask import DaskCluster
from .parallel_executor import Executor, InProcess, fingerprint_for
from .parallel_forked import available_cores, forked_map
from .parallel_processes import SLOT_BYTES, Processes, SharedSlots
from .parallel_worker import STAGED_GROUPS, render_chunk, render_chunk_alone, tree_fingerprint

__all__ = [
    "CHUNK_INSTANCES",
    "ENGINES",
    "MAX_CHUNK_GROUPS",
    "MIN_CHUNKS_PER_WORKER",
    "SLOT_BYTES",
    "STAGED_GROUPS",
    "ChunkJob",
    "ChunkJobs",
    "ChunkResult",
    "DaskCluster",
    "Executor",
    "InProcess",
    "Processes",
    "SharedSlots",
    "add_fetched",
    "available_cores",
    "chunk_groups",
    "chunk_jobs",
    "executor_for",
    "fingerprint_for",
    "forked_map",
    "parse_shard",
    "render_chunk",
    "render_chunk_alone",
    "shard_groups",
    "tree_fingerprint",
]


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
