"""Reading the instances of a built release, in file order, after checking its sums."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ..core.collector import collector_paused, set_apart_from_collector
from ..core.errors import SpecError
from ..core.json_files import read_json_file
from ..formats.manifest import MANIFEST_FILE
from ..spec.catalog import Catalog
from ..spec.instances import family_sources
from .verify import verify_release


def load_release_instances(folder: Path, catalog: Catalog | None = None,
                           check: bool = True, without: tuple[str, ...] = (),
                           held: bool = False
                           ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest and every instance of a built release (data files in manifest order).

    With ``check``, the folder must first pass verification, against the project's committed
    manifest when ``catalog`` has one for it: scoring a tampered release would give numbers
    nobody can reproduce. Releases the project does not know are checked against themselves.
    The keys named in ``without`` are left out of every instance as it is read (``score``
    reads no phase: the messages are most of an instance once its analysis block is shared).
    ``held``: the caller is a command that holds the instances to its end, so everything alive
    is set apart from the collector's walks (``gc.freeze``); a library caller, which may go on
    making and dropping cycles for a long time, leaves it unset."""
    manifest, sources = release_sources(folder, catalog, check)
    shared: dict[bytes, Any] = {}
    instances = []
    with collector_paused():
        for read in sources.values():
            for instance in read():
                for key in without:
                    instance.pop(key, None)
                instances.append(_share_analysis(instance, shared))
    if held:
        set_apart_from_collector()
    return manifest, instances


def _share_analysis(instance: dict[str, Any], shared: dict[bytes, Any]) -> dict[str, Any]:
    """``instance`` with its analysis block replaced by an equal one read before, if any.

    A family's analysis block (its contrasts, factorials, audit) is the same in each of its
    instances and is most of an instance's size once parsed: the largest bundled release's
    14,400 instances held 340 MB, 100 MB with one block each family. Blocks are the same
    when their JSON is the same bytes and they compare equal (so that 1 and true, or NaN and
    null, stay apart).
    Nothing that reads a release changes an instance's analysis block."""
    block = instance.get("analysis")
    if not isinstance(block, dict):
        return instance
    try:
        key = orjson.dumps(block)
    except orjson.JSONEncodeError:
        return instance  # an integer past 64 bits: kept as it is
    first = shared.setdefault(key, block)
    if first is not block and first == block:
        instance["analysis"] = first
    return instance


def release_sources(folder: Path, catalog: Catalog | None = None, check: bool = True
                    ) -> tuple[dict[str, Any], dict[str, Callable[[], Iterator[dict[str, Any]]]]]:
    """The manifest of a built release and, per data file (one per family, named by it, in
    manifest order), a function that streams its instances: checked as
    ``load_release_instances`` checks, but nothing is held in memory. Instances of a release
    the project has no committed manifest for are checked against the instance schema as
    they are read: their bytes are only checked against themselves."""
    if not folder.is_dir():
        raise SpecError.single("release folder not found", str(folder))
    anchor = None
    if check:
        anchor = catalog if catalog is not None and _committed(folder, catalog) else None
        report = verify_release(folder, anchor)
        if not report.ok:  # a release that does not verify is bad input to what reads it
            raise SpecError(report.problems)
    manifest_path = folder / MANIFEST_FILE
    manifest = read_json_file(manifest_path)
    return manifest, family_sources(folder, sorted(manifest["files"]), validate=anchor is None)


def _committed(folder: Path, catalog: Catalog) -> bool:
    """Whether the project holds a committed manifest for the release in ``folder``."""
    try:
        manifest = read_json_file(folder / MANIFEST_FILE)
        name = f"{manifest['release']}-{manifest['version']}"
    except (SpecError, KeyError, TypeError):
        return True  # let verification report the broken manifest
    return (catalog.project.manifests / f"{name}.json").is_file()
