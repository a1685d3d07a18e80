"""Chunks rendered on a Dask distributed cluster (``--engine dask``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from ..core.errors import SpecError
from ..core.extras import extra_requirements
from .parallel_chunks import ChunkJob, ChunkResult
from .parallel_executor import Executor, ordered_results
from .parallel_worker import render_chunk_alone


class DaskCluster(Executor):
    """Chunks on a Dask distributed cluster: the scheduler at ``address``, or, without one, a
    local cluster of ``workers`` processes started for the run. Every worker must see the
    project at the same path; each checks that its specs and templates are the ones this
    process has (``tree_fingerprint``) before it renders anything."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SpecError.single("--engine dask needs Dask distributed (the dask extra): "
                                   f"pip install {extra_requirements('dask', 'distributed')}"
                                   ) from None
        self.cluster = None
        if address is None:
            # No dashboard: nothing here reads it. The scheduler still serves its health
            # routes over HTTP, by default on port 8787: on a port the system picks instead,
            # since two clusters at once (two builds on one machine) would otherwise print a
            # "port already in use" warning among a command's error lines.
            # Its workers' logs silenced: a chunk that fails (a template over its budget) is
            # reported once, as a located error, not also as a worker's traceback.
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        scheduler_kwargs={"dashboard_address": ":0"},
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

        return ordered_results(submit, jobs, self.in_flight)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
