"""Checks over a whole release, declared in its file: the lexical variety of a phase within
each family (the mean word Jaccard similarity of every two groups), counted as instances are
written and decided once every family is."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import CheckFailed, Problem
from .spec import FamilySpec, ReleaseSpec

#: A word: a run of Unicode word characters (letters, digits, underscore), compared casefolded.
_WORD = re.compile(r"\w+")
#: How many pair similarities are worked out at once (a block of rows against every group).
_BLOCK_CELLS = 1 << 21


def phase_words(instance: Mapping[str, Any], phase: str) -> set[str]:
    """The casefolded words of the messages of ``phase`` in ``instance``."""
    for entry in instance["phases"]:
        if entry["phase"] == phase:
            return {w.casefold() for m in entry["messages"] for w in _WORD.findall(m["content"])}
    return set()


@dataclass(frozen=True)
class VarietyResult:
    """What one lexical_variety check found on one family."""

    check: int  # its index in the release's checks
    family: str
    phase: str
    groups: int
    mean: float  # mean Jaccard similarity over every two groups
    bound: float
    most_alike: tuple[int, int, float] | None  # the two groups most alike, and how much

    @property
    def passed(self) -> bool:
        return self.mean <= self.bound


def mean_pairwise_jaccard(word_sets: Sequence[set[str]]
                          ) -> tuple[float, tuple[int, int, float] | None]:
    """The mean Jaccard similarity |a ∩ b| / |a ∪ b| over every two of ``word_sets`` (two
    empty sets count as identical), and the most alike two (indices and similarity; the
    first such pair in order). Every similarity is one IEEE division and they are summed
    exactly (``math.fsum``), so the mean is the same on every machine."""
    # Imported here: every command that loads a release file imports this module, and only a
    # release that declares a variety check needs them (they cost a quarter second to import).
    import numpy as np
    from scipy import sparse

    n = len(word_sets)
    if n < 2:
        return 0.0, None
    vocabulary: dict[str, int] = {}
    rows, cols = [], []
    for index, words in enumerate(word_sets):
        for word in sorted(words):
            rows.append(index)
            cols.append(vocabulary.setdefault(word, len(vocabulary)))
    matrix = sparse.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)),
                               shape=(n, max(len(vocabulary), 1)))
    sizes = np.asarray(matrix.sum(axis=1)).ravel()
    block = max(1, _BLOCK_CELLS // n)
    partial_sums: list[float] = []
    best: tuple[int, int, float] | None = None
    for start in range(0, n - 1, block):
        stop = min(start + block, n - 1)
        shared = (matrix[start:stop] @ matrix.T).toarray()
        union = sizes[start:stop, None] + sizes[None, :] - shared
        with np.errstate(divide="ignore", invalid="ignore"):
            similarity = np.where(union == 0, 1.0, shared / np.maximum(union, 1))
        for offset, row in enumerate(similarity):
            later = row[start + offset + 1:]  # each pair once: the groups after this one
            partial_sums.append(math.fsum(later.tolist()))
            top = int(np.argmax(later))
            if best is None or later[top] > best[2]:
                best = (start + offset, start + offset + 1 + top, float(later[top]))
    return math.fsum(partial_sums) / (n * (n - 1) / 2), best


class ReleaseChecks:
    """The checks a release declares, fed every instance as it is written."""

    def __init__(self, release: ReleaseSpec) -> None:
        self.release = release
        #: For each check, family -> group -> the words of the phase in the group's instances.
        self._words: list[dict[str, dict[int, set[str]]]] = [{} for _ in release.checks]
        self._families = [set(c.get("families", ())) for c in release.checks]

    def __bool__(self) -> bool:
        return bool(self.release.checks)

    def add(self, instance: Mapping[str, Any]) -> None:
        family = instance["family"]
        for index, check in enumerate(self.release.checks):
            if self._families[index] and family not in self._families[index]:
                continue
            groups = self._words[index].setdefault(family, {})
            groups.setdefault(instance["group"], set()).update(
                phase_words(instance, check["phase"]))

    def results(self) -> list[VarietyResult]:
        """Every check's outcome on every family it covers, in declaration order."""
        out = []
        for index, check in enumerate(self.release.checks):
            for family, groups in self._words[index].items():
                mean, best = mean_pairwise_jaccard([groups[g] for g in sorted(groups)])
                if best is not None:
                    ordered = sorted(groups)
                    best = (ordered[best[0]], ordered[best[1]], best[2])
                out.append(VarietyResult(index, family, check["phase"], len(groups), mean,
                                         float(check["max_jaccard"]), best))
        return out

    def refuse_failures(self, results: Sequence[VarietyResult]) -> None:
        """Raise CheckFailed, located at each failed check in the release file."""
        problems = []
        for result in results:
            if result.passed:
                continue
            line, col = self.release.located.where(("checks", result.check))
            alike = (f"; most alike: groups {result.most_alike[0]} and {result.most_alike[1]} "
                     f"({result.most_alike[2]:.3f})" if result.most_alike else "")
            problems.append(Problem(
                f"lexical_variety: {result.family}: mean word Jaccard of phase "
                f"{result.phase!r} between every two of its {result.groups} groups is "
                f"{result.mean:.3f}, above max_jaccard {result.bound:g}{alike}",
                self.release.located.file, line, col, ("checks", result.check)))
        if problems:
            raise CheckFailed(problems)


def release_check_problems(release: ReleaseSpec, families: Sequence[FamilySpec]
                           ) -> list[Problem]:
    """Declared checks that name a family the release does not hold, or a phase a checked
    family's paradigm does not have: such a check would silently check nothing."""
    problems = []
    by_id = {f.family_id: f for f in families}
    for index, check in enumerate(release.checks):
        where = ("checks", index)
        for position, family_id in enumerate(check.get("families", ())):
            if family_id not in {e.family_id for e in release.families}:
                line, col = release.located.where((*where, "families", position))
                problems.append(Problem(f"lexical_variety names family {family_id!r}, which "
                                        "the release does not hold", release.located.file,
                                        line, col, (*where, "families", position)))
        checked = check.get("families") or [e.family_id for e in release.families]
        lacking = [f for f in checked
                   if f in by_id and check["phase"] not in by_id[f].paradigm.phases]
        if lacking:
            line, col = release.located.where((*where, "phase"))
            problems.append(Problem(f"lexical_variety: phase {check['phase']!r} is not a "
                                    f"phase of {', '.join(lacking)}", release.located.file,
                                    line, col, (*where, "phase")))
    return problems


def card_lines(results: Sequence[VarietyResult]) -> list[str]:
    """The card's section on the release's checks (none for a release that declares none)."""
    if not results:
        return []
    lines = ["", "## Release checks", "",
             "Lexical variety: within each family, the mean word Jaccard similarity "
             "(|A ∩ B| / |A ∪ B| of the casefolded words) of a phase between every two "
             "groups, at most the declared bound.", "",
             "| family | phase | groups | mean Jaccard | bound | most alike groups |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        alike = (f"{r.most_alike[0]}, {r.most_alike[1]} ({r.most_alike[2]:.3f})"
                 if r.most_alike else "")
        lines.append(f"| `{r.family}` | {r.phase} | {r.groups} | {r.mean:.3f} | "
                     f"{r.bound:g} | {alike} |")
    return lines
