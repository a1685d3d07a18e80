"""Files written front to back whose bytes go to disk while they are written.

A long output (a million instances is gigabytes) left to the page cache piles up dirty pages
the system writes out only when it must, and the sync that makes the file durable then waits
for all of them at once, after the last instance is rendered. Asking for write-back every few
megabytes spreads that writing over the run, so the final sync waits for the last few only,
and lets the cache drop what has reached the disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

#: Bytes written between two requests for write-back: enough that a request is rare (a few
#: a second at full speed), few enough that what is left for the final sync is small.
WRITE_BEHIND_BYTES = 16 << 20


class StreamedFile:
    """A file opened for writing (``wb``) that starts write-back of its bytes as it grows.

    Every ``step`` bytes it advises the system that the bytes since its last advice are not
    needed in memory (``POSIX_FADV_DONTNEED``): Linux starts writing them back without
    waiting, and drops from the cache the pages of the window before, which are on disk by
    then. Where the advice is unavailable it is an ordinary file. The bytes written are the
    same either way; only when they reach the disk changes."""

    def __init__(self, path: Path, step: int = WRITE_BEHIND_BYTES) -> None:
        self.handle = path.open("wb")
        self.step = step
        self.written = 0
        self.advised = 0  # bytes before this offset have had write-back asked for
        self.dropped = 0  # bytes before this offset have been advised twice

    def write(self, data: bytes | memoryview) -> int:
        """Write ``data``; every ``step`` bytes, ask for write-back of what came before."""
        count = self.handle.write(data)
        self.written += count
        if self.written - self.advised >= self.step:
            self._advise()
        return count

    def _advise(self) -> None:
        self.handle.flush()  # the advice covers what the system has, not this buffer
        if hasattr(os, "posix_fadvise"):
            # From the start of the window before: its pages, written back since the last
            # advice, leave the cache; this window's start their way to the disk.
            os.posix_fadvise(self.handle.fileno(), self.dropped, self.written - self.dropped,
                             os.POSIX_FADV_DONTNEED)
        self.dropped, self.advised = self.advised, self.written

    def flush(self) -> None:
        """Hand what is buffered to the system."""
        self.handle.flush()

    def fileno(self) -> int:
        """The file's descriptor."""
        return self.handle.fileno()

    def close(self) -> None:
        """Close the file (unsynced: callers that need it durable sync first)."""
        self.handle.close()

    def __enter__(self) -> StreamedFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
