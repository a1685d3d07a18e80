"""Writing a release's files into a folder: every family's instances generated (here or in
other processes) and written with their hashes, checked as they go (duplicate content, split
overlap, the release's declared checks), audited, and followed by the charts, the loader
exports and the card; the manifest that pins them is returned, not written."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..audit.audit_family_part import data_digests
from ..audit.audit_refusal import refusal
from ..audit.audit_rules import changed_since
from ..audit.run import audit_families
from ..core.canonical import dump_pretty_bytes
from ..core.errors import CheckFailed
from ..core.limits import CommandBudget
from ..core.writeback import StreamedFile
from ..engine.content_index import ContentIndex, records_from_files, written_content_key
from ..engine.generate import FamilyGenerator
from ..engine.parallel import (
    ChunkResult,
    Executor,
    InProcess,
    add_fetched,
    chunk_jobs,
    fingerprint_for,
    shard_groups,
)
from ..engine.render import Renderer
from ..formats.card import render_card
from ..formats.loader_exports import LoaderExports
from ..formats.manifest import CARD_FILE, CROISSANT_FILE, environment, sums_text
from ..formats.release_checks import ReleaseChecks, card_lines
from ..formats.release_layouts import LATEST_LAYOUT, ReleaseLayout, release_layout
from ..spec.catalog import Catalog
from ..spec.instances import family_sources
from ..spec.spec import FamilySpec, ReleaseFamily, ReleaseSpec
from .release_families import SplitContent, load_release_families, refuse_field_clash
from .release_inputs import input_hashes, with_rendered_inputs
from .release_stats import ReleaseStats

PLOTS_DIR = "plots"
#: Told (name, groups done) as each chunk of a family is written, and (phase, 0) as each
#: later phase begins (the audit, the charts and card, the seal), so that a person watching
#: sees what a long freeze is doing after its last group.
Progress = Callable[[str, int], None]


#: Where a family's instances come from while a release is written: (groups done, chunk)
#: pairs, in order, given the family, its release entry and a generator for it.
ChunkSource = Callable[[FamilySpec, ReleaseFamily, FamilyGenerator],
                       Iterator[tuple[int, ChunkResult]]]


def rendered_chunks(executor: Executor, root: Path, seed: int,
                    shard: tuple[int, int] = (0, 1)) -> ChunkSource:
    """Instances rendered by ``executor`` (this process's generator when it renders here):
    every group of a family, or only the run of them that ``shard`` (I, N) takes."""
    fingerprint = fingerprint_for(executor, root)

    def source(family: FamilySpec, entry: ReleaseFamily, generator: FamilyGenerator
               ) -> Iterator[tuple[int, ChunkResult]]:
        first, count = shard_groups(0, entry.groups, shard)
        jobs = chunk_jobs(root, family, seed, first, count, entry, fingerprint,
                          executor.workers)
        for job, chunk in zip(jobs, executor.map(jobs, generator, keep=True), strict=True):
            yield job.count, chunk

    return source



class _HashingWriter:
    """Writes a file while hashing it, so nothing is read twice."""

    def __init__(self, path: Path) -> None:
        self.handle = StreamedFile(path)
        self.digest = hashlib.sha256()
        self.size = 0
        self.records = 0

    def write(self, data: bytes) -> None:
        self.handle.write(data)
        self.digest.update(data)
        self.size += len(data)
        self.records += 1

    def close(self) -> dict[str, Any]:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        return {"sha256": self.digest.hexdigest(), "bytes": self.size, "records": self.records}


def write_release_files(catalog: Catalog, release: ReleaseSpec, folder: Path,
                        progress: Progress | None = None, *,
                        refuse_audit_failures: bool = False,
                        committed: Mapping[str, Any] | None = None,
                        source: ChunkSource | None = None,
                        rendered_inputs: Mapping[str, str] | None = None,
                        draft: bool = False) -> dict[str, Any]:
    """Generate and write data files, charts and the card into ``folder``; return the
    manifest (without writing it). Raises on any spec error or failed check.
    A ``draft`` (of the latest layout only) is marked so in its manifest and its card.

    A ``committed`` manifest fixes the layout (its ``manifest_version``) and the audit's
    outcome: the manifest pins every data byte, so an audit of the same bytes could only
    repeat it. Otherwise the release gets the latest layout and is audited; a failed audit
    raises when ``refuse_audit_failures``, else its failures are recorded in the manifest and
    the card.

    Instances come from ``source`` (by default rendered here); ``rendered_inputs`` are the
    hashes of the templates that rendered them elsewhere (see ``shards``)."""
    project = catalog.project
    source = source or rendered_chunks(InProcess(), project.root, release.seed)
    layout = committed["manifest_version"] if committed is not None else LATEST_LAYOUT
    features = release_layout(layout)  # what this layout writes beyond the data and card
    families = load_release_families(catalog, release)
    renderer = Renderer(project)
    (folder / "data").mkdir(parents=True)
    files: dict[str, dict[str, Any]] = {}
    family_counts: dict[str, dict[str, Any]] = {}
    seen_content = ContentIndex()
    templates: dict[str, str] = {}  # fetched by include, import or extends, in any process
    stats = ReleaseStats()
    release_checks = ReleaseChecks(release)
    checking = bool(release_checks)  # most releases declare none: one test, not one a line
    exports = LoaderExports(folder, release, layout) if features.loader_exports else None
    total = 0
    for index, (family, entry) in enumerate(zip(families, release.families, strict=True)):
        refuse_field_clash(release, index, family)
        generator = FamilyGenerator(family, renderer, release.seed)
        name = f"data/{family.family_id}.jsonl"
        writer = _HashingWriter(folder / name)
        splits = SplitContent(entry, family)
        if exports:
            exports.start(family)
        try:
            for done, chunk in source(family, entry, generator):
                generator.checks.add_tallies(chunk.tallies)
                add_fetched(templates, chunk.templates)
                for line, instance in chunk.records():
                    splits.add(instance)
                    seen_content.add(written_content_key(instance))
                    writer.write(line)
                    if features.charts:
                        stats.add(instance)
                    if exports:
                        exports.add(instance)
                    if checking:
                        release_checks.add(instance)
                if progress:
                    progress(family.family_id, done)
            generator.checks.finish()
        finally:
            info = writer.close()
            if exports:
                exports.finish()
        files[name] = info
        family_counts[family.family_id] = {
            "groups": entry.groups, "instances": info["records"],
            "paradigm": family.paradigm.paradigm_id, "version": family.version,
            **({"fields": dict(entry.fields)} if entry.fields else {}),
            **({"splits": splits.counts} if entry.splits else {}),
        }
        total += info["records"]
    if progress:
        progress("checking for duplicate content", 0)
    _refuse_duplicate_content(seen_content, [folder / name for name in files], families)
    checked = release_checks.results()
    release_checks.refuse_failures(checked)
    data_hashes = {name: info["sha256"] for name, info in files.items()}
    root = hashlib.sha256(sums_text(data_hashes).encode("utf-8")).hexdigest()
    counts = {"instances": total, "groups": sum(e.groups for e in release.families),
              "families": family_counts}
    inputs = input_hashes(project, release, families, renderer, templates)
    if rendered_inputs is not None:
        inputs = with_rendered_inputs(inputs, rendered_inputs, project)
    if committed is not None:
        audit = dict(committed.get("audit", {"failures": []}))
    else:
        if progress:
            progress("auditing (memoryless adversaries, leaks, balance)", 0)
        audit = _audit(catalog, release, folder, files,
                       {"seed": release.seed, "counts": counts, "inputs": inputs}, features,
                       refuse_audit_failures)
    if progress:
        progress("writing the charts and the card", 0)
    charts = stats.charts() if features.charts else {}
    if charts:
        (folder / PLOTS_DIR).mkdir()
    for chart_name, svg in charts.items():
        files[f"{PLOTS_DIR}/{chart_name}"] = _write_file(folder / PLOTS_DIR / chart_name,
                                                         svg.encode("utf-8"))
    descriptions = {f.family_id: f.description for f in families}
    configs = []
    if exports:
        data_files = {name: files[name] for name in data_hashes}
        files.update(exports.files)
        configs = exports.configs(project.display(release.path))
        document = exports.croissant(root, data_files, descriptions)
        files[CROISSANT_FILE] = _write_file(folder / CROISSANT_FILE,
                                            dump_pretty_bytes(document))
    card = render_card(release, counts, root, descriptions,
                       project.display(release.path), audit["failures"], layout=layout,
                       audit_summary=audit.get("summary", ()),
                       audit_unavailable=audit.get("unavailable", ()),
                       audit_exempt=audit.get("exempt", {}),
                       audit_unattacked=audit.get("unattacked", {}),
                       audit_rules=audit.get("rules", 1),
                       audit_conventions=audit.get("conventions", {}),
                       charts=[f"{PLOTS_DIR}/{name}" for name in charts], configs=configs,
                       checks=card_lines(checked), draft=draft)
    files[CARD_FILE] = _write_file(folder / CARD_FILE, card.encode("utf-8"))
    return {
        "manifest_version": layout,
        "release": release.name,
        "version": release.version,
        "seed": release.seed,
        "root_sha256": root,
        "files": dict(sorted(files.items())),
        "counts": counts,
        "inputs": inputs,
        "environment": environment(),
        **({"audit": audit} if features.audit_summary or audit["failures"] else {}),
        **({"draft": True} if draft else {}),
    }


def _refuse_duplicate_content(index: ContentIndex, data_files: list[Path],
                              families: list[FamilySpec]) -> None:
    """Refuse a release in which two instances have the same phases and answer."""
    found = index.first_duplicate(records_from_files(data_files, written_content_key))
    if found is not None:
        instance, earlier = found
        file = next(f.file for f in families if f.family_id == instance["family"])
        raise CheckFailed.single(f"duplicate content: {instance['id']} has the same phases "
                                 f"and answer as {earlier['id']} (two groups drew the same "
                                 "values: are the family's pools large enough for the groups "
                                 "the release asks of it?)", file)


def _write_file(path: Path, data: bytes) -> dict[str, Any]:
    path.write_bytes(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def _earlier_manifest(catalog: Catalog, release: ReleaseSpec
                      ) -> tuple[str, dict[str, Any]] | None:
    """The committed manifest of the release's newest version before this one, with its
    name (None if there is none): what its audit ran by tells the author of a refused freeze
    what changed since."""
    def number(version: str) -> int | None:
        return int(version[1:]) if version[:1] == "v" and version[1:].isdigit() else None

    mine = number(release.version)
    folder = catalog.project.manifests
    earlier = sorted((n, path) for path in (folder.glob(f"{release.name}-v*.json")
                                            if mine is not None and folder.is_dir() else ())
                     if (n := number(path.stem[len(release.name) + 1:])) is not None
                     and n < mine)
    if not earlier:
        return None
    path = earlier[-1][1]
    return path.stem, json.loads(path.read_text(encoding="utf-8"))


def _audit(catalog: Catalog, release: ReleaseSpec, folder: Path,
           files: Mapping[str, Any], manifest: Mapping[str, Any], layout: ReleaseLayout,
           refuse_failures: bool) -> dict[str, Any]:
    """Audit the data files just written, streamed from disk a family at a time; what the
    manifest records of the outcome."""
    with CommandBudget("the audit of the release", catalog.project.display(release.path)):
        sources = family_sources(folder, files)
        report = audit_families(sources, catalog=catalog, manifest=manifest,
                                digests=data_digests(files))
        conventions = report.conventions
    failures = report.failures()
    if failures and refuse_failures:
        earlier = _earlier_manifest(catalog, release)
        raise refusal(report, catalog, catalog.project.display(release.path),
                      "; a system without memory could pass. Fix the family, or freeze with "
                      "--allow-audit-failures to publish it with the failure recorded",
                      changed_since(*earlier) if earlier else ())
    return {"failures": failures, **({"summary": report.summary()} if layout.audit_summary else {}),
            # The rules it ran by, so that `memspec audit --as-frozen` can run by them again.
            "rules": report.rules,
            # Each dataset's convention baseline, which the card shows.
            **({"conventions": conventions} if conventions else {}),
            # Recorded only when some adversary could not run, so that the card says so.
            **({"unavailable": report.unavailable} if report.unavailable else {}),
            # And the families no adversary covers that say why, so that the card lists them.
            **({"exempt": report.exempt} if report.exempt else {}),
            # And the items no adversary could attack (judge-scored), with why.
            **({"unattacked": report.unattacked} if report.unattacked else {})}

