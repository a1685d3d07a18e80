"""A release frozen in shards, on machines that share nothing but the project, and the shards
merged into the release one freeze would have made.

Shard I of N holds, for every family, the I-th of N contiguous runs of its groups, rendered as
a freeze renders them, and the counts the family-wide checks need. ``merge`` reads the shards
back in order in place of rendering, and everything after rendering (duplicate and split
checks, the family-wide checks, Parquet, Croissant, charts, card, audit, manifest) is the one
code path a freeze takes, so the merged manifest equals the unsharded one.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.canonical import dump_pretty_bytes
from ..core.errors import SpecError
from ..core.writeback import StreamedFile
from ..engine.parallel import ChunkResult, Executor, add_fetched, shard_groups
from ..engine.render import Renderer
from ..spec.catalog import Catalog
from ..spec.schemas import read_json_as
from ..spec.spec import FamilySpec, ReleaseFamily, ReleaseSpec

SHARD_FILE = "shard.json"
_LINES_PER_CHUNK = 1000


def shard_folder_name(full_name: str, shard: tuple[int, int]) -> str:
    """``<name>-<version>.shard-<I>-of-<N>``."""
    return f"{full_name}.shard-{shard[0]}-of-{shard[1]}"


def write_shard(catalog: Catalog, release: ReleaseSpec, shard: tuple[int, int], folder: Path,
                executor: Executor) -> dict[str, Any]:
    """Render shard ``I/N`` of every family of ``release`` into ``folder`` (data files and
    shard.json); return what shard.json records."""
    from ..engine.generate import FamilyGenerator
    from .freezing import input_hashes, load_release_families, rendered_chunks

    project = catalog.project
    families = load_release_families(catalog, release)
    renderer = Renderer(project)
    source = rendered_chunks(executor, project.root, release.seed, shard)
    (folder / "data").mkdir(parents=True)
    recorded: dict[str, Any] = {}
    templates: dict[str, str] = {}  # fetched by include, import or extends, in any process
    for family, entry in zip(families, release.families, strict=True):
        generator = FamilyGenerator(family, renderer, release.seed)
        first, count = shard_groups(0, entry.groups, shard)
        tallies: dict[int, Counter] = {}
        digest, instances = hashlib.sha256(), 0
        with StreamedFile(folder / "data" / f"{family.family_id}.jsonl") as handle:
            for _, chunk in source(family, entry, generator):
                add_fetched(templates, chunk.templates)
                handle.write(chunk.data)
                digest.update(chunk.data)
                instances += chunk.count
                for index, counts in chunk.tallies.items():
                    tallies.setdefault(index, Counter()).update(counts)
        recorded[family.family_id] = {
            "start": first, "groups": count, "instances": instances,
            "sha256": digest.hexdigest(),
            "tallies": {str(i): dict(sorted(c.items())) for i, c in sorted(tallies.items())}}
    document = {"release": release.name, "version": release.version, "seed": release.seed,
                "shard": list(shard), "families": recorded,
                "inputs": input_hashes(project, release, families, renderer, templates)}
    (folder / SHARD_FILE).write_bytes(dump_pretty_bytes(document))
    return document


@dataclass(frozen=True)
class Shard:
    """A shard folder and what its shard.json says."""

    folder: Path
    record: dict[str, Any]

    @property
    def index(self) -> int:
        return self.record["shard"][0]


def load_shards(folders: Sequence[Path]) -> list[Shard]:
    """The shards of one release, in order; refuses a missing, repeated or foreign shard."""
    shards = []
    for folder in folders:
        record = read_json_as(folder / SHARD_FILE, "shard", "a shard of a release")
        shards.append(Shard(folder, record))
    if not shards:
        raise SpecError.single("merge needs the folders of a release's shards")
    first = shards[0].record
    for shard in shards[1:]:
        for name in ("release", "version", "seed"):
            if shard.record[name] != first[name]:
                raise SpecError.single(
                    f"shards of different builds: {name} differs from {shards[0].folder}",
                    str(shard.folder / SHARD_FILE))
    cuts = sorted({s.record["shard"][1] for s in shards})
    if len(cuts) > 1:
        raise SpecError.single("shards of different cuts: into "
                               + " and into ".join(map(str, cuts))
                               + " shards; merge the shards of one cut")
    total = first["shard"][1]
    indices = sorted(s.record["shard"][0] for s in shards)
    if indices != list(range(total)):
        raise SpecError.single(f"merge needs each of the {total} shards once; got shards "
                               + ", ".join(str(i) for i in indices))
    return sorted(shards, key=lambda s: s.index)


class ShardSource:
    """Instances of every family read back from its shards in order, as the chunks a freeze
    would have rendered; each shard's data is checked against its recorded SHA-256."""

    def __init__(self, shards: Sequence[Shard]) -> None:
        self.shards = list(shards)

    def __call__(self, family: FamilySpec, entry: ReleaseFamily,
                 generator: Any) -> Iterator[tuple[int, ChunkResult]]:
        for shard in self.shards:
            info = shard.record["families"].get(family.family_id)
            if info is None:
                raise SpecError.single(f"shard has no family {family.family_id}",
                                       str(shard.folder / SHARD_FILE))
            path = shard.folder / "data" / f"{family.family_id}.jsonl"
            tallies = {int(i): Counter(c) for i, c in info["tallies"].items()}
            digest, lines = hashlib.sha256(), []
            try:
                with path.open("rb") as handle:
                    for line in handle:
                        digest.update(line)
                        lines.append(line)
                        if len(lines) == _LINES_PER_CHUNK:
                            yield 0, ChunkResult.of_lines(lines, tallies)
                            lines, tallies = [], {}
            except OSError as exc:
                raise SpecError.single(f"cannot read shard data: {exc}", str(path)) from None
            if digest.hexdigest() != info["sha256"]:
                # A shard that does not match its own record is bad input to the merge.
                raise SpecError.single("shard data differs from its shard.json (changed "
                                       "after it was written?)", str(path))
            yield info["groups"], ChunkResult.of_lines(lines, tallies)


def rendered_inputs(shards: Sequence[Shard]) -> dict[str, str]:
    """Every input any shard was rendered from (a template may be reached by some groups
    only); two shards that saw one file with different contents are refused."""
    inputs: dict[str, str] = {}
    for shard in shards:
        for name, digest in shard.record["inputs"].items():
            if inputs.setdefault(name, digest) != digest:
                raise SpecError.single(f"shards rendered from different versions of {name}",
                                       str(shard.folder / SHARD_FILE))
    return inputs


def freeze_shard(catalog: Catalog, release: ReleaseSpec, shard: tuple[int, int], out: Path,
                 executor: Executor) -> Path:
    """Write shard ``I/N`` of ``release`` to ``out/<name>-<version>.shard-I-of-N``, whole or
    not at all."""
    from .freezing import _move_into_place, _staging, refuse_to_replace_foreign

    name = shard_folder_name(release.full_name, shard)
    refuse_to_replace_foreign(out / name, lambda folder: (folder / SHARD_FILE).is_file(),
                              "a shard memspec built")
    with _staging(out, name) as staged:
        write_shard(catalog, release, shard, staged / "shard", executor)
        _move_into_place(staged / "shard", out / name)
    return out / name


def merge_shards(catalog: Catalog, folders: Sequence[Path], out: Path, *,
                 allow_audit_failures: bool = False) -> Any:
    """Assemble a release from all its shards, as ``freeze`` would have built it (the same
    checks, files and manifest; written to the project's manifests/ on a first freeze)."""
    from .freezing import find_release, freeze

    shards = load_shards(folders)
    record = shards[0].record
    release = find_release(catalog, f"{record['release']}-{record['version']}")
    if release.seed != record["seed"]:
        raise SpecError.single(f"the shards were rendered with seed {record['seed']}, the "
                               f"release now says {release.seed}",
                               catalog.project.display(release.path))
    for family in release.families:
        groups = sum(s.record["families"].get(family.family_id, {}).get("groups", 0)
                     for s in shards)
        if groups != family.groups:
            raise SpecError.single(
                f"the shards hold {groups} groups of {family.family_id}, the release "
                f"{family.groups}", catalog.project.display(release.path))
    return freeze(catalog, release, out, write_manifest=True,
                  allow_audit_failures=allow_audit_failures, source=ShardSource(shards),
                  rendered_inputs=rendered_inputs(shards))
