"""A family's groups cut into chunk jobs, in order, and what rendering one chunk gives back.

Groups are independent: each draws from a random stream keyed by the seed, the family and its
own index, never from what came before. So a family's groups can be cut into chunks (and a run
into shards), rendered anywhere, and joined in order.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import SpecError
from ..spec.spec import FamilySpec, ReleaseFamily

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
