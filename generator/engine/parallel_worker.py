"""Rendering one chunk of a family's groups, in whichever process runs it (this one, a worker
process, a Dask worker), with the project loaded once per worker."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..core.canonical import dump_instance_bytes, normalize
from ..core.errors import SpecError
from ..core.limits import rendering_alone
from .parallel_chunks import ChunkJob, ChunkResult

#: Groups of a chunk whose slots are drawn one after another before they are rendered
#: (``FamilyGenerator.group_batch``): few enough that their values take little memory.
STAGED_GROUPS = 16


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
# (``Processes`` puts this process's project here while it forks its workers.)
LOADED_PROJECTS: dict[tuple[str, str], tuple[Any, Any]] = {}
_GENERATORS: dict[tuple[str, str, str, int], Any] = {}


def _generator(job: ChunkJob) -> Any:
    from ..spec.catalog import Catalog
    from ..spec.project import Project
    from .generate import FamilyGenerator
    from .render import Renderer

    version = (job.root, job.fingerprint)
    if version not in LOADED_PROJECTS:
        if job.fingerprint and tree_fingerprint(job.root) != job.fingerprint:
            raise SpecError.single(
                f"a worker sees other specs or templates under {job.root} than the process "
                "that sent it work; every worker needs the same project at the same path")
        project = Project(Path(job.root))
        LOADED_PROJECTS[version] = (Catalog.load(project), Renderer(project))
    key = (*version, job.family, job.seed)
    if key not in _GENERATORS:
        catalog, renderer = LOADED_PROJECTS[version]
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
                    lines.append(dump_instance_bytes(instance, checked=generator.json_checked,
                                                     repeated=generator.repeated_texts))
                    if keep:
                        instances.append(instance)
    return ChunkResult.of_lines(lines, generator.checks.take_tallies(),
                                instances if keep else None,
                                tuple(generator.renderer.take_fetched()))


def render_chunk_alone(job: ChunkJob) -> ChunkResult:
    """``render_chunk`` on a thread that is not its process's main one (a Dask worker's),
    alone in its process while it renders, so that each group's memory budget holds there
    as in a worker process (``rendering_alone``)."""
    with rendering_alone():
        return render_chunk(job)
