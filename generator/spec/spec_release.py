"""Loading one release file: its families with their groups and splits, and its card's facts."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import Problem, ProblemCollector
from .project import Project
from .spec_files import load_checked, refuse_repeats
from .spec_types import PublishedDesign, ReleaseFamily, ReleaseSpec


def load_release(path: Path, project: Project,
                 problems: ProblemCollector | None = None) -> ReleaseSpec:
    """Load one release file. A file that fits the schema but whose entries disagree (splits
    that do not add up, say) is refused, or, given ``problems``, loaded with its problems
    added there, so that a caller checking more of it can report everything at once."""
    located = load_checked(path, project, "release")
    data = located.data
    refuse_repeats(located, "families", [f["family"] for f in data["families"]], "family")
    refuse_repeats(located, "designs", [d["key"] for d in data.get("designs", ())],
                    "design key")
    out = ProblemCollector() if problems is None else problems
    if "split" in data.get("subsets", ()):
        line, col = located.where(("subsets", data["subsets"].index("split")))
        out.add(Problem("'split' needs no subset: every split is a split of each config",
                        located.file, line, col))
    for index, entry in enumerate(data["families"]):
        where = ("families", index)
        if "splits" in entry and sum(entry["splits"].values()) != entry["groups"]:
            line, col = located.where((*where, "splits"))
            out.add(Problem(f"splits add up to {sum(entry['splits'].values())} groups, not the "
                            f"{entry['groups']} the entry has", located.file, line, col))
        if "disjoint" in entry and "splits" not in entry:
            line, col = located.where((*where, "disjoint"))
            out.add(Problem("'disjoint' needs 'splits'", located.file, line, col))
        if "split" in entry.get("fields", {}):
            line, col = located.where((*where, "fields", "split"))
            out.add(Problem("field 'split' is reserved: it is set from the entry's 'splits'",
                            located.file, line, col))
    if problems is None:
        out.raise_if_any()
    return ReleaseSpec(
        name=data["name"],
        version=data["version"],
        seed=data["seed"],
        description=data["description"],
        license=data.get("license", "CC-BY-4.0"),
        families=tuple(ReleaseFamily(f["family"], f["groups"], dict(f.get("splits", {})),
                                     tuple(f.get("disjoint", ())), dict(f.get("fields", {})))
                       for f in data["families"]),
        located=located,
        path=path,
        published=data.get("published"),
        language=tuple(data.get("language", ())),
        task_categories=tuple(data.get("task_categories", ())),
        tags=tuple(data.get("tags", ())),
        subsets=tuple(data.get("subsets", ())),
        designs=tuple(PublishedDesign(d["key"], d["title"], tuple(d["authors"]), d.get("year"),
                                      d["how"], d.get("url"), d.get("venue"))
                      for d in data.get("designs", ())),
        checks=tuple(data.get("checks", ())),
    )
