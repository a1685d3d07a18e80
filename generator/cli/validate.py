"""``memspec validate``: load every spec and render groups of every family, as its freeze will."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.canonical import dumps
from ..core.errors import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_OK,
    CheckFailed,
    MemspecError,
    Problem,
    ProblemCollector,
    SpecError,
)
from ..engine.generate import FamilyGenerator
from ..engine.parallel import available_cores, forked_map
from ..engine.render import Renderer
from ..release.release_families import load_release_families
from ..spec.catalog import Catalog, yaml_files
from ..spec.pool_coverage import PoolCoverage
from ..spec.release_of import ReleaseSeed, release_seeds
from ..spec.scaffold_files import check_scaffold_file
from ..spec.spec import FamilyLoader, FamilySpec, load_paradigm, load_release
from ..spec.spec_family import ParadigmUnusable
from ..spec.yamlsafe import load_yaml_file

#: Seed used to render the proof groups of each family.
VALIDATION_SEED = 0
#: Most groups rendered to see every design of a family at least once, and to draw every
#: item of its pools; and most instances rendered for the pools' sake (a family of many
#: variants a group stops sooner).
VALIDATION_MAX_GROUPS = 64
VALIDATION_MAX_INSTANCES = 80
#: Most items a note on a family's undrawn pool items names, and most families noted one by
#: one (more are summed up in one line).
_NOTE_ITEMS = 3
_NOTED_FAMILIES = 3


#: The kinds of file a report counts (releases are counted when they are checked, last).
_COUNTED = ("family", "paradigm", "pool", "export", "scaffold")


@dataclass
class ValidationReport:
    families: int = 0
    paradigms: int = 0
    pools: int = 0
    releases: int = 0
    exports: int = 0
    scaffolds: int = 0
    instances: int = 0
    problems: list[Problem] = field(default_factory=list)
    exit_code: int = EXIT_OK
    notes: list[str] = field(default_factory=list)

    def count(self, kind: str, instances: int = 0) -> None:
        """One more file of ``kind`` (family, paradigm, pool or export) validated."""
        if kind == "family":
            self.families += 1
            self.instances += instances
        elif kind == "paradigm":
            self.paradigms += 1
        elif kind == "pool":
            self.pools += 1
        elif kind == "export":
            self.exports += 1
        elif kind == "scaffold":
            self.scaffolds += 1

    def add(self, err: MemspecError) -> None:
        self.problems.extend(err.problems)
        code = EXIT_CHECK_FAILED if isinstance(err, CheckFailed) else EXIT_BAD_INPUT
        self.exit_code = max(self.exit_code, code)


def _kind(path: Path, catalog: Catalog) -> str | None:
    """What a YAML file is: by its folder under specs/, else by its top-level keys."""
    specs = catalog.project.specs.resolve()
    try:
        top = path.resolve().relative_to(specs).parts[0]
    except (ValueError, IndexError):
        top = ""
    by_folder = {"families": "family", "paradigms": "paradigm", "pools": "pool",
                 "releases": "release", "exports": "export", "scaffolds": "scaffold"}
    if top in by_folder:
        return by_folder[top]
    data = load_yaml_file(path, catalog.project.display(path)).data
    if isinstance(data, dict):
        for key in ("family", "paradigm", "pool", "export"):
            if key in data:
                return key
        if "families" in data:
            return "release"
    return None


def _expand(paths: list[Path], catalog: Catalog, problems: list[Problem]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += yaml_files(path, problems, catalog.project.display)
        else:
            files.append(path)
    return files


@dataclass
class _FileResult:
    """What validating one file gave: its kind, instances rendered, or the error it raised."""

    kind: str | None
    instances: int = 0
    error: MemspecError | None = None
    #: Of a family: its id and the names of the fields it gives every instance.
    family_fields: tuple[str, tuple[str, ...]] | None = None
    #: What a person should know that is no error (pool items no rendered group drew).
    notes: tuple[str, ...] = ()


class _FileValidator:
    """Validates one spec file by its kind (releases only say so: they are checked last).
    One per process, so its caches (pools, compiled templates) serve every file it sees."""

    def __init__(self, catalog: Catalog, explain: bool,
                 releases: dict[str, ReleaseSeed] | None = None) -> None:
        self.catalog = catalog
        self.explain = explain
        #: The release each family is frozen in: validate renders its groups under its seed,
        #: as the freeze will, and none past its count (a family may be written for exactly
        #: that many).
        self.releases = releases or {}
        self._loader: FamilyLoader | None = None
        self._renderer: Renderer | None = None

    def __call__(self, path: Path) -> _FileResult:
        if self._loader is None or self._renderer is None:
            self._loader = self.catalog.loader(explain=self.explain, probe_patterns=True)
            self._renderer = Renderer(self.catalog.project)
        kind = None
        try:
            kind = _kind(path, self.catalog)
            if kind == "family":
                family = self._loader.load(path)
                instances, notes = self._render_family(family)
                return _FileResult(kind, instances, notes=notes,
                                   family_fields=(family.family_id, tuple(family.fields)))
            if kind == "paradigm":
                load_paradigm(path, self.catalog.project)
            elif kind == "pool":
                self._loader.pool_file(path)
            elif kind == "export":
                # Imported here: validating a family (the author's loop) reads no export.
                from ..exports.export import check_export_file

                check_export_file(path, self.catalog.project, self._renderer)
            elif kind == "scaffold":
                check_scaffold_file(path, self.catalog)
        except MemspecError as err:
            return _FileResult(kind, error=err)
        return _FileResult(kind)

    @staticmethod
    def _drawable(generator: FamilyGenerator, candidates: list[int],
                  drawn: dict[int, dict[str, Any]], unbounded: bool) -> list[int]:
        """The candidate groups whose slots can be drawn, drawn into ``drawn``. A family no
        release holds may be written for a number of groups that validate cannot know (an
        expression that indexes by ``group``): there, the first group that cannot be drawn
        ends the candidates; in a release's groups, it is the error it is."""
        for index, group in enumerate(candidates):
            if group in drawn:
                continue
            try:
                drawn[group] = generator.slots(group)
            except MemspecError:
                if not unbounded:
                    raise
                return candidates[:index]
        return candidates

    def _render_family(self, family: FamilySpec) -> tuple[int, tuple[str, ...]]:
        """Render groups of ``family``, under the seed of the release that holds it and no
        further than its groups: the first ones until every design has rendered (a design
        with `when` may skip the first group), then, among the groups whose draws are
        looked at (VALIDATION_MAX_GROUPS at most), the one that draws the most pool items
        none rendered has drawn, and so on until every item is drawn or
        VALIDATION_MAX_INSTANCES are rendered. The instances rendered, and a note naming
        the pool items no rendered group drew (a whole run checks them)."""
        assert self._renderer is not None
        release = self.releases.get(family.family_id,
                                    ReleaseSeed(VALIDATION_SEED, None, VALIDATION_MAX_GROUPS))
        generator = FamilyGenerator(family, self._renderer, release.seed)
        designs = {d.name for d in family.designs}
        coverage = PoolCoverage(family)
        seen: set[str] = set()
        candidates = list(range(min(VALIDATION_MAX_GROUPS,
                                    release.groups or VALIDATION_MAX_GROUPS)))
        drawn: dict[int, dict[str, Any]] = {}
        instances = rendered_groups = 0
        while candidates:
            if seen >= designs:
                if coverage.complete or instances >= VALIDATION_MAX_INSTANCES:
                    break
                candidates = self._drawable(generator, candidates, drawn,
                                            release.release is None)
                if not candidates:
                    break
                gains = [(coverage.new_items(drawn[group]), -group) for group in candidates]
                best, negative = max(gains)
                if best == 0:
                    break
                group = -negative
            else:
                group = candidates[0]
            candidates.remove(group)
            rendered = generator.group(group)
            rendered_groups += 1
            instances += len(rendered)
            seen.update(i["design"] for i in rendered)
            coverage.add(drawn.get(group) or generator.slots(group))
        # The family-scope checks (balanced) are not finished: they hold over a whole run,
        # and a few groups of one need not be balanced (a value fixed per group, rotated
        # across groups, is not). Their 'of' has been evaluated on every instance above.
        looked_at = min(VALIDATION_MAX_GROUPS, release.groups or VALIDATION_MAX_GROUPS)
        if release.release is not None and release.groups == looked_at:
            # Every group the freeze renders was looked at: what it draws that no rendered
            # group drew is exactly what validate leaves unchecked.
            left: dict[str, set[str]] = {}
            for group in candidates:
                if group not in drawn:
                    drawn[group] = generator.slots(group)
                for file, keys in coverage.drawn_left(drawn[group]).items():
                    left.setdefault(file, set()).update(keys)
            missing = {file: [coverage.item(file, key) for key in sorted(keys)]
                       for file, keys in sorted(left.items())}
            scope = f"that release {release.release} draws"
        else:
            missing = coverage.missing()
            scope = "of its pools"
        if not missing:
            return instances, ()
        items = [item for found in missing.values() for item in found]
        shown = ", ".join(repr(item) if isinstance(item, str) else dumps(item)[:60] + "…"
                          for item in items[:_NOTE_ITEMS])
        note = (f"{family.family_id}: {len(items)} item(s) {scope} not drawn in the "
                f"{rendered_groups} group(s) validate rendered under "
                f"{release.describe()}, so not checked here ("
                + ", ".join(f"{file}: {len(found)}" for file, found in missing.items())
                + f"), e.g. {shown}; a whole run (`memspec generate`, freeze) checks them")
        return instances, (note,)


def _counted(count: int, kind: str) -> str:
    """``1 family``, ``2 families``, ``1 scaffold``, ``3 scaffolds``."""
    if count == 1:
        return f"1 {kind}"
    return f"{count} {'families' if kind == 'family' else kind + 's'}"


def validate(catalog: Catalog, paths: list[Path] | None = None,
             workers: int | None = None) -> ValidationReport:
    """Validate the given files and folders (default: all of specs/); every error is kept.

    Files are validated on ``workers`` forked processes (default: every available core), and
    families are rendered (one full group each). Releases are checked after them, loading
    only the families that were not already validated, so no problem is reported twice."""
    report = ValidationReport()
    project = catalog.project
    whole = not paths
    if whole:
        report.problems += catalog.problems
        report.problems += catalog.duplicate_family_problems()
        paths = [project.specs]
    files: list[Path] = []
    for path in _expand(paths, catalog, report.problems):
        if path.exists():
            files.append(path)
        else:
            report.problems.append(Problem("no such file or folder", str(path)))
    # Over the whole tree, paradigm problems are reported once, from the catalog.
    results = forked_map(_FileValidator(catalog, explain=not whole,
                                        releases=release_seeds(catalog)), files,
                         available_cores() if workers is None else workers)
    releases = []
    validated_families: set[Path] = set()
    # Families whose paradigm's file has errors, by paradigm and file: the file's errors are
    # reported once (from the catalog), the families that follow from them counted.
    following: dict[tuple[str, str], dict[str, int]] = {}
    fields_of: dict[str, tuple[str, ...]] = {}
    for path, result in zip(files, results, strict=True):
        if result.kind == "family":
            validated_families.add(path.resolve())
        if result.family_fields is not None:
            fields_of[result.family_fields[0]] = result.family_fields[1]
        report.notes += result.notes
        if isinstance(result.error, ParadigmUnusable) and whole:
            kinds = following.setdefault((result.error.paradigm, result.error.file), {})
            kinds[result.kind or "family"] = kinds.get(result.kind or "family", 0) + 1
            report.exit_code = max(report.exit_code, EXIT_BAD_INPUT)
        elif result.error is not None:
            report.add(result.error)
        elif result.kind == "release":
            releases.append(path)
        elif result.kind in _COUNTED:
            report.count(result.kind, result.instances)
        else:
            report.problems.append(Problem("not a family, paradigm, pool, scaffold or release spec",
                                           project.display(path), 1, 1))
    for (paradigm, file), kinds in sorted(following.items()):
        counted = " and ".join(_counted(kinds[kind], kind) for kind in ("family", "scaffold")
                               if kind in kinds)
        report.problems.append(Problem(
            f"and {counted} naming paradigm {paradigm!r}, "
            "not checked until the errors of its file are fixed", file, None, None, (), True))
    seen_releases: dict[str, str] = {}
    for path in releases:
        # The release's own problems and its families' are reported together.
        found, failure = ProblemCollector(), None
        try:
            release = load_release(path, project, found)
            if release.full_name in seen_releases:
                report.problems.append(Problem(
                    f"release {release.full_name} is also declared in "
                    f"{seen_releases[release.full_name]}", release.located.file, 1, 1))
            seen_releases.setdefault(release.full_name, release.located.file)
            checked = frozenset(
                f.family_id for f in release.families
                if len(catalog.family_paths.get(f.family_id, [])) == 1
                and catalog.family_paths[f.family_id][0].resolve() in validated_families)
            # A release's own checks need its families' paradigms: loaded (not rendered)
            # again, their problems, if any, reported once all the same.
            load_release_families(catalog, release,
                                  skip=frozenset() if release.checks else checked,
                                  fields_of={f: fields_of[f] for f in checked if f in fields_of})
        except MemspecError as err:
            failure = err
        if found.problems:
            report.add(SpecError(list(found.problems)))
        if failure is not None:
            report.add(failure)
        elif not found.problems:
            report.releases += 1
    if len(report.notes) > _NOTED_FAMILIES:
        # Over many families, one line: validating a family's file names its items.
        names = [note.split(":", 1)[0] for note in report.notes]
        report.notes = [f"{len(names)} families have pool items that no group validate "
                        f"rendered drew, so not checked here ({', '.join(names[:3])} …); "
                        "`memspec validate FAMILY_FILE` names them, and a whole run "
                        "(`memspec generate`, freeze) checks them"]
    # One file can be reached several ways (a pool two slots draw from, and the pool file
    # itself): each problem is reported once.
    report.problems = list(dict.fromkeys(report.problems))
    if report.problems and report.exit_code == EXIT_OK:
        report.exit_code = EXIT_BAD_INPUT
    return report
