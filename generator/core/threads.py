"""The native thread pools (BLAS, OpenMP) held to one thread while a command's numeric work
runs.

On a machine that others share, a pool of several threads spends CPU time waiting for its
threads at every step (they spin, then sleep), and the audit's numeric steps are small: its
classifiers fit a few hundred rows, and the text encoder embeds a few hundred short texts.
One thread does the same arithmetic in the same order (the same bits: tested on the bundled
releases' audits) for less CPU time, and on a loaded machine in less wall time too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_thread() -> Iterator[None]:
    """Every BLAS and OpenMP pool loaded in this process held to one thread inside the
    block, restored after it (a pool loaded inside the block is not held: load what the
    block runs on first)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield
