"""Audits that read the specs a release was built from.

Each group's slot values are drawn again from the specs (the same seed gives the same values;
the messages and answers, which these audits do not read, are not rendered again), and every
check the family and its paradigm declare is run on the instances that were shipped,
with those slot values: balance, forbidden lexicon, arms identical where they must be. The
variants the designs declare are compared with the ones shipped, and every counterfeit memory
is measured against the record it forges: its length, and the named entities it must not
share. The specs must be the very files the release was built from (their SHA-256 is in the
manifest); otherwise these audits are skipped, and the report says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..core.errors import CheckFailed, MemspecError, SpecError
from ..core.transforms import Transform, get_transform
from ..engine.checks import CheckRunner, RenderedVariant, mentions
from ..engine.generate import FamilyGenerator
from ..engine.render import Renderer
from ..formats.manifest import sha256_file
from ..spec.catalog import Catalog
from ..spec.instances import phase_messages
from ..spec.spec import FamilySpec, TransformRef, Variant
from .audit_rules import rules
from .audit_structure import Finding

Item = Mapping[str, Any]

#: A counterfeit's length may differ from the record it forges by this share at most.
LENGTH_TOLERANCE = 0.05

#: The area each kind of declared check belongs to in the audit table.
_AREAS = {"balanced": "balance: declared", "forbidden_words": "leakage: lexicon"}
_OTHER_AREA = "declared: other checks"


def specs_mismatch(catalog: Catalog, manifest: Mapping[str, Any]) -> str | None:
    """Why the project's specs cannot stand for the release's, or None if they can."""
    project = catalog.project
    for relative, digest in sorted(manifest.get("inputs", {}).items()):
        try:
            path = project.resolve_inside(project.root, relative, "input")
        except SpecError:  # missing, or a path that leaves the project
            return f"{relative} is not in this project"
        if sha256_file(path) != digest:
            return f"{relative} differs from the file the release was built from"
    if not manifest.get("inputs"):
        return "the manifest records no inputs"
    return None


def _runner(family: FamilySpec, renderer: Renderer, area: str) -> CheckRunner:
    """The family's checks of one area, to run on their own."""
    chosen = tuple(c for c in family.checks if _AREAS.get(c[0]["kind"], _OTHER_AREA) == area)
    return CheckRunner(chosen, renderer, family.file)


def _first_problems(err: MemspecError, limit: int = 2) -> str:
    return "; ".join(p.message for p in err.problems[:limit]) + (
        f"; and {len(err.problems) - limit} more" if len(err.problems) > limit else "")


def _phase_chars(item: Item, phases: Iterable[str]) -> int:
    return sum(len(m["content"]) for p in phases for m in phase_messages(item, p))


def _reference(family: FamilySpec, variants: Iterable[Variant], variant: Variant,
               axis: str) -> str | None:
    """The name of the variant a forgery on ``axis`` is measured against: the same values on
    the other axes, and on ``axis`` the first value that forges nothing."""
    design = next(d for d in family.designs if d.name == variant.design)
    spec = next(a for a in design.axes if a.name == axis)
    plain = [v for v in spec.values if v not in spec.value_transforms]
    if spec.transform is not None or not plain:
        return None
    wanted = {**variant.axes, axis: plain[0]}
    return next((v.name for v in variants
                 if v.design == variant.design and dict(v.axes) == wanted), None)


def _shape(item: Item, phases: Iterable[str]) -> str:
    """The format of an item's ``phases``: their messages' roles and line counts."""
    return ", ".join(f"{m['role']} of {len(m['content'].splitlines())} lines"
                     for p in phases for m in phase_messages(item, p))


def _entities(values: Iterable[Any]) -> set[str]:
    """The named entities among forged values: each non-empty value, whole. (Their words
    alone would flag "Mill Lane" for forging "Station Lane".)"""
    return {v for v in values if isinstance(v, str) and v.strip()}


class _Forgeries:
    """Length ratios and surviving entities of one family's counterfeits."""

    def __init__(self, family: FamilySpec) -> None:
        self.family = family
        self.variants = {(v.design, v.name): v for v in family.variants()}
        self.ratios: list[tuple[float, str, str]] = []
        self.shared: list[str] = []
        self.formats: list[str] = []  # the first few counterfeits formatted otherwise
        self.format_count = 0
        self.count = 0

    def _forgeries(self, variant: Variant) -> Iterator[tuple[str, TransformRef, Transform]]:
        """The axes on which a transform made ``variant``'s value (a counterfeit of any kind:
        forged, scrambled, substituted ...; under rules 0, only a transform that forges),
        with the transform."""
        design = next(d for d in self.family.designs if d.name == variant.design)
        every = rules().every_transform_counterfeit
        for axis in design.axes:
            ref = axis.value_transforms.get(variant.axes[axis.name])
            transform = get_transform(ref.name) if ref else None
            if ref is not None and transform is not None and \
                    (every or transform.forges is not None):
                yield axis.name, ref, transform

    def measure(self, slots: Mapping[str, Any], rendered: Sequence[RenderedVariant],
                shipped: Mapping[str, Item]) -> None:
        ids = {r.instance["variant"]: r.instance["id"] for r in rendered}
        for r in rendered:
            variant = self.variants[(r.instance["design"], r.instance["variant"])]
            for axis, ref, transform in self._forgeries(variant):
                reference = _reference(self.family, self.variants.values(), variant, axis)
                forged = shipped.get(r.instance["id"])
                original = shipped.get(ids.get(reference, ""))
                if forged is not None and original is not None:
                    forges = transform.forges(ref.args) if transform.forges else None
                    self._compare(forged, original, transform.foreign, forges, slots,
                                  ref.name)

    def _compare(self, forged: Item, original: Item, foreign: bool,
                 forges: tuple[str, list[str]] | None, slots: Mapping[str, Any],
                 transform: str) -> None:
        names = [p["phase"] for p in forged["phases"]]
        differing = [n for n in names
                     if phase_messages(forged, n) != phase_messages(original, n)]
        if not differing:
            return
        self.count += 1
        base = _phase_chars(original, differing)
        ratio = _phase_chars(forged, differing) / base if base else float("inf")
        self.ratios.append((ratio, f"{forged['id']} ({transform})", original["id"]))
        shape = _shape(forged, differing)
        if shape != _shape(original, differing) and len(self.formats) < 3:
            self.formats.append(f"{forged['id']} ({transform}) has {shape}, "
                                f"{original['id']} {_shape(original, differing)}")
        if shape != _shape(original, differing):
            self.format_count += 1
        if not foreign or forges is None:
            return
        slot, columns = forges
        rows = slots.get(slot, [])
        originals = _entities(row.get(c) for row in rows if isinstance(row, Mapping)
                              for c in columns)
        text = "\n".join(m["content"] for n in differing for m in phase_messages(forged, n))
        survivors = sorted(e for e in originals
                           if mentions(text, e, ignore_case=False))
        if survivors:
            self.shared.append(f"{forged['id']} keeps {', '.join(survivors[:3])}")

    def findings(self, family: str) -> list[Finding]:
        if not self.count:
            return []
        worst = max(self.ratios, key=lambda r: abs(r[0] - 1))
        far = [r for r in self.ratios if abs(r[0] - 1) > LENGTH_TOLERANCE]
        low, high = min(r[0] for r in self.ratios), max(r[0] for r in self.ratios)
        detail = (f"{len(far)} counterfeits outside ±{LENGTH_TOLERANCE:.0%}; worst: "
                  f"{worst[1]} is {worst[0]:.3f}x the length of {worst[2]}") if far else ""
        return [
            Finding("counterfeit: length", family, not far,
                    f"{self.count} counterfeits, length ratio {low:.3f} to {high:.3f}",
                    detail),
            Finding("counterfeit: shared entities", family, not self.shared,
                    f"{len(self.shared)} of {self.count} keep an original entity",
                    "; ".join(self.shared[:3])),
            Finding("counterfeit: format", family, not self.format_count,
                    f"{self.format_count} of {self.count} formatted otherwise than the "
                    "veridical record", "; ".join(self.formats)),
        ]


def _by_group(items: Iterable[Item]) -> Iterator[tuple[int, dict[str, Item]]]:
    """The instances of each group together, by id, from instances in order of their group."""
    group: int | None = None
    batch: dict[str, Item] = {}
    for item in items:
        if item["group"] != group:
            if batch:
                yield group, batch  # type: ignore[misc]
            group, batch = item["group"], {}
        batch[item["id"]] = item
    if batch:
        yield group, batch  # type: ignore[misc]


def _family_findings(family: FamilySpec, renderer: Renderer, seed: int, groups: int,
                     items: Iterable[Item], count: int) -> list[Finding]:
    """The spec audits of one family over its ``count`` shipped instances, which come in
    order of their group: each group is drawn again and compared with what was shipped
    of it, then let go."""
    generator = FamilyGenerator(family, renderer, seed)
    areas = sorted({_AREAS.get(c[0]["kind"], _OTHER_AREA) for c in family.checks})
    runners = {area: _runner(family, renderer, area) for area in areas}
    failures: dict[str, str] = {}
    forgeries = _Forgeries(family)
    declared = shipped = 0
    missing: list[str] = []  # declared, not shipped
    extra: list[str] = []  # shipped, not declared
    batches = _by_group(items)
    waiting = next(batches, None)
    for group in range(groups):
        # Shipped groups the specs never declare (before this one: a negative group number).
        while waiting is not None and waiting[0] < group:
            shipped += len(waiting[1])
            extra += waiting[1]
            waiting = next(batches, None)
        batch: dict[str, Item] = {}
        if waiting is not None and waiting[0] == group:
            batch, waiting = waiting[1], next(batches, None)
        shipped += len(batch)
        slots, rendered = generator.group_scopes(group)
        ids = {r.instance["id"] for r in rendered}
        declared += len(ids)
        missing += ids - set(batch)
        extra += set(batch) - ids
        present = [RenderedVariant(batch[r.instance["id"]], r.context) for r in rendered
                   if r.instance["id"] in batch]
        for area, runner in runners.items():
            if area in failures:
                continue
            try:
                runner.check_group(present)
            except CheckFailed as err:
                failures[area] = _first_problems(err)
        forgeries.measure(slots, rendered, batch)
        del present, batch  # let this group go before the next one is read
    for _, batch in ([waiting] if waiting is not None else []) + list(batches):
        shipped += len(batch)
        extra += batch
    for area, runner in runners.items():
        if area not in failures:
            try:
                runner.finish()
            except CheckFailed as err:
                failures[area] = _first_problems(err)
    findings = [Finding(area, family.family_id, area not in failures,
                        f"{len(runners[area].checks)} checks on {count} instances",
                        failures.get(area, ""))
                for area in areas]
    problems = ([f"{len(missing)} declared variants missing, e.g. {min(missing)}"] if missing
                else []) + ([f"{len(extra)} undeclared instances, e.g. {min(extra)}"] if extra
                            else [])
    findings.append(Finding("balance: declared cells", family.family_id, not problems,
                            f"{declared} declared, {shipped} shipped", "; ".join(problems)))
    return findings + forgeries.findings(family.family_id)


class SpecAudit:
    """What the spec audits of a release's families share: the project's renderer and spec
    loader, the manifest's seed and family counts. Made by ``spec_audit``."""

    def __init__(self, catalog: Catalog, manifest: Mapping[str, Any]) -> None:
        self.catalog = catalog
        self.counts = manifest.get("counts", {}).get("families", {})
        self.seed = manifest["seed"]
        self.loader = catalog.loader()

    def family(self, family_id: str) -> FamilySpec:
        """The spec of ``family_id`` (raises MemspecError where it cannot be read)."""
        return self.catalog.family(family_id, self.loader)

    def findings(self, family_id: str, read: Callable[[], Iterable[Item]], count: int
                 ) -> tuple[list[Finding], str | None, list[str]]:
        """The spec audits of one family, or none and the reason the release's spec audits
        cannot run (``read`` gives its ``count`` instances afresh, in order of group); and
        the template files they read, by path. Each family has a renderer of its own, so
        that what it reads is known (a cache of its results depends on those files)."""
        info = self.counts.get(family_id)
        if info is None:
            return [], f"the manifest does not count family {family_id}", []
        renderer = Renderer(self.catalog.project)
        try:
            found = _family_findings(self.family(family_id), renderer, self.seed,
                                     info["groups"], read(), count)
        except MemspecError as err:
            return [], (f"family {family_id} cannot be rendered again: "
                        f"{_first_problems(err)}"), []
        return found, None, [str(path) for path in renderer.loaded_files()]


def spec_audit(catalog: Catalog | None, manifest: Mapping[str, Any]
               ) -> tuple[SpecAudit | None, str | None]:
    """What the spec audits of a release need, or None and why they cannot run."""
    if catalog is None:
        return None, "no project with the release's specs is at hand"
    reason = specs_mismatch(catalog, manifest)
    if reason is not None:
        return None, reason
    return SpecAudit(catalog, manifest), None


def spec_findings(catalog: Catalog | None, manifest: Mapping[str, Any],
                  families: Mapping[str, tuple[Callable[[], Iterable[Item]], int]]
                  ) -> tuple[list[Finding], str | None]:
    """The spec audits of every family, or none and the reason they cannot run.

    ``families`` gives, per family, a function that reads its instances afresh in order of
    their group, and how many there are."""
    audit, reason = spec_audit(catalog, manifest)
    if audit is None:
        return [], reason
    findings: list[Finding] = []
    for family_id in sorted(families):
        found, reason, _ = audit.findings(family_id, *families[family_id])
        if reason is not None:
            return [], reason
        findings += found
    return findings, None
