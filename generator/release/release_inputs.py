"""What a release was made from: the SHA-256 of every spec, pool and template it read, here or
in the processes that rendered its instances, as its manifest records them under ``inputs``."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import SpecError
from ..engine.render import Renderer
from ..formats.manifest import sha256_file
from ..spec.project import LIBRARY_PREFIX, Project
from ..spec.spec import FamilySpec, ReleaseSpec
from ..spec.yamlsafe import read_digest


def with_rendered_inputs(inputs: Mapping[str, str], rendered: Mapping[str, str],
                          project: Project) -> dict[str, str]:
    """The inputs a build records, with the templates that rendered its instances in other
    processes; each must still be a file of the project that hashes the same."""
    merged = dict(inputs)
    for name, digest in rendered.items():
        path = project.resolve_inside(project.root, name, "input")
        if sha256_file(path) != digest:
            raise SpecError.single("changed since the shards were rendered (render them "
                                   "again)", name)
        merged[name] = digest
    return dict(sorted(merged.items()))



def input_hashes(project: Project, release: ReleaseSpec, families: list[FamilySpec],
                  renderer: Renderer, rendered: Mapping[str, str] | None = None
                  ) -> dict[str, str]:
    """SHA-256 of every file a release was made from, by its path in the project: the release
    spec, its families, their paradigms and pools, and the templates ``renderer`` read or the
    groups fetched in whichever process rendered them (``rendered``: display name to the
    digest of the bytes that process read, as ``add_fetched`` gathers them). A file of
    memspec's library is named ``memspec:`` and its path in the library, so a release made
    with library items records which, by hash."""
    root = project.root
    paths = {release.path}
    for family in families:
        paths.add(family.path)
        paths.add(family.paradigm.path)
        paths.update(project.path_of(pool.file) for pool in family.pools.values())
    paths.update(renderer.loaded_files())
    elsewhere = {project.path_of(name).resolve(): digest
                 for name, digest in (rendered or {}).items()}
    paths.update(elsewhere)
    hashes = {}
    for path in paths:
        display = project.display(path.resolve())
        if not display.startswith(LIBRARY_PREFIX):
            try:
                display = path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                raise SpecError.single("a release must live inside the project it is built "
                                       f"from ({root})", str(path)) from None
        # The bytes that were parsed and rendered, read once, here or in the process that
        # rendered with them (a worker's include); both, they must be the same bytes.
        here, there = read_digest(path), elsewhere.get(path.resolve())
        if here and there and here != there:
            raise SpecError.single("changed while the release was rendered: this process "
                                   "and a worker read different bytes of it (render again)",
                                   display)
        hashes[display] = here or there or sha256_file(path)
    return dict(sorted(hashes.items()))

