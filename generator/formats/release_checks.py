"""Checks over a whole release, declared in its file, counted as instances are written and
decided once every family is: the lexical variety of a phase within each family (the mean
word Jaccard similarity of every two groups), how often one message of a phase recurs across
the release's groups (``message_reuse``: a shared pool drawn too often shows the same question
in many items), and how much of a judge rubric's own vocabulary a phase already uses
(``rubric_overlap``: a rubric that lists the priming text's words rewards copying them)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import CheckFailed, Problem, elide
from ..spec.spec import FamilySpec, ReleaseSpec

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


@dataclass(frozen=True)
class ReuseResult:
    """What one message_reuse check found over the release."""

    check: int
    phase: str
    role: str | None  # None: messages of every role
    messages: int  # distinct messages of the phase
    groups: int  # groups counted
    most_reused: tuple[str, int] | None  # the message in most groups, and how many
    bound: int

    @property
    def passed(self) -> bool:
        return self.most_reused is None or self.most_reused[1] <= self.bound


@dataclass(frozen=True)
class OverlapResult:
    """What one rubric_overlap check found on one family."""

    check: int
    family: str
    phase: str
    items: int
    mean: float  # mean share of the rubric's own words that the phase uses
    bound: float
    shared: tuple[str, ...]  # the rubric words the phase uses most often, most first

    @property
    def passed(self) -> bool:
        return self.mean <= self.bound


#: A content word of a rubric: four letters or more (no digits), compared casefolded.
_CONTENT_WORD = re.compile(r"[^\W\d_]{4,}")


def content_words(text: str) -> set[str]:
    """The casefolded words of four letters or more in ``text``."""
    return {w.casefold() for w in _CONTENT_WORD.findall(text)}


def rubric_overlap(instance: Mapping[str, Any], phase: str) -> tuple[float, set[str]] | None:
    """The share of the rubric's own words (those no other phase of the instance says) that
    ``phase`` uses, and those words; None for an instance without a rubric or own words."""
    rubric = instance.get("answer", {}).get("rubric")
    if not rubric:
        return None
    others = set().union(*(content_words(m["content"]) for entry in instance["phases"]
                           if entry["phase"] != phase for m in entry["messages"]))
    own = content_words(rubric) - others
    if not own:
        return None
    used = own & set().union(*(content_words(m["content"]) for entry in instance["phases"]
                               if entry["phase"] == phase for m in entry["messages"]))
    return len(used) / len(own), used


def _selected(instance: Mapping[str, Any], when: Mapping[str, Any]) -> bool:
    """Whether the instance's axes take the values ``when`` names (a value or a list)."""
    for axis, wanted in when.items():
        values = wanted if isinstance(wanted, list) else [wanted]
        if instance.get("axes", {}).get(axis) not in values:
            return False
    return True


def phase_contents(instance: Mapping[str, Any], phase: str, role: str | None) -> list[str]:
    """The contents of the messages of ``phase`` in ``instance`` (of ``role`` only, if
    given)."""
    for entry in instance["phases"]:
        if entry["phase"] == phase:
            return [m["content"] for m in entry["messages"] if role is None or m["role"] == role]
    return []


def most_reused(groups_of: Mapping[str, set[tuple[str, int]]]) -> tuple[str, int] | None:
    """The message shown in the most groups, and in how many (ties: the first in text
    order, so that the report is the same on every machine)."""
    if not groups_of:
        return None
    message = min(groups_of, key=lambda m: (-len(groups_of[m]), m))
    return message, len(groups_of[message])


class ReleaseChecks:
    """The checks a release declares, fed every instance as it is written."""

    def __init__(self, release: ReleaseSpec) -> None:
        self.release = release
        #: For each lexical_variety check, family -> group -> the words of the phase.
        self._words: list[dict[str, dict[int, set[str]]]] = [{} for _ in release.checks]
        #: For each message_reuse check, message -> the (family, group) units showing it.
        self._shown: list[dict[str, set[tuple[str, int]]]] = [{} for _ in release.checks]
        self._units: list[set[tuple[str, int]]] = [set() for _ in release.checks]
        #: For each rubric_overlap check, family -> each selected item's share and words.
        self._overlaps: list[dict[str, list[tuple[float, set[str]]]]] = [
            {} for _ in release.checks]
        self._families = [set(c.get("families", ())) for c in release.checks]

    def __bool__(self) -> bool:
        return bool(self.release.checks)

    def add(self, instance: Mapping[str, Any]) -> None:
        family = instance["family"]
        for index, check in enumerate(self.release.checks):
            if self._families[index] and family not in self._families[index]:
                continue
            if check["kind"] == "message_reuse":
                # A group counts once, however many of its variants show the message.
                unit = (family, instance["group"])
                self._units[index].add(unit)
                for content in phase_contents(instance, check["phase"], check.get("role")):
                    self._shown[index].setdefault(content, set()).add(unit)
                continue
            if check["kind"] == "rubric_overlap":
                found = rubric_overlap(instance, check["phase"]) \
                    if _selected(instance, check.get("when", {})) else None
                if found is not None:
                    self._overlaps[index].setdefault(family, []).append(found)
                continue
            groups = self._words[index].setdefault(family, {})
            groups.setdefault(instance["group"], set()).update(
                phase_words(instance, check["phase"]))

    def results(self) -> list[VarietyResult | ReuseResult | OverlapResult]:
        """Every check's outcome (a lexical_variety check's on every family it covers), in
        declaration order."""
        out: list[VarietyResult | ReuseResult | OverlapResult] = []
        for index, check in enumerate(self.release.checks):
            if check["kind"] == "message_reuse":
                out.append(ReuseResult(index, check["phase"], check.get("role"),
                                       len(self._shown[index]), len(self._units[index]),
                                       most_reused(self._shown[index]),
                                       int(check["max_count"])))
                continue
            if check["kind"] == "rubric_overlap":
                for family, found in self._overlaps[index].items():
                    counts: dict[str, int] = {}
                    for _, used in found:
                        for word in used:
                            counts[word] = counts.get(word, 0) + 1
                    shared = tuple(sorted(counts, key=lambda w: (-counts[w], w))[:3])
                    out.append(OverlapResult(index, family, check["phase"], len(found),
                                             math.fsum(s for s, _ in found) / len(found),
                                             float(check["max_share"]), shared))
                continue
            for family, groups in self._words[index].items():
                mean, best = mean_pairwise_jaccard([groups[g] for g in sorted(groups)])
                if best is not None:
                    ordered = sorted(groups)
                    best = (ordered[best[0]], ordered[best[1]], best[2])
                out.append(VarietyResult(index, family, check["phase"], len(groups), mean,
                                         float(check["max_jaccard"]), best))
        return out

    def refuse_failures(self, results: Sequence[VarietyResult | ReuseResult | OverlapResult]
                        ) -> None:
        """Raise CheckFailed, located at each failed check in the release file."""
        problems = []
        for result in results:
            if result.passed:
                continue
            line, col = self.release.located.where(("checks", result.check))
            if isinstance(result, ReuseResult):
                assert result.most_reused is not None
                text, count = result.most_reused
                problems.append(Problem(
                    f"message_reuse: a message of phase {result.phase!r} is shown in {count} "
                    f"groups, more than max_count {result.bound}: {elide(text)!r}",
                    self.release.located.file, line, col, ("checks", result.check)))
                continue
            if isinstance(result, OverlapResult):
                problems.append(Problem(
                    f"rubric_overlap: {result.family}: phase {result.phase!r} uses on average "
                    f"{result.mean:.3f} of the rubric's own words, above max_share "
                    f"{result.bound:g} (most shared: {', '.join(result.shared)})",
                    self.release.located.file, line, col, ("checks", result.check)))
                continue
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
                problems.append(Problem(f"{check['kind']} names family {family_id!r}, which "
                                        "the release does not hold", release.located.file,
                                        line, col, (*where, "families", position)))
        checked = check.get("families") or [e.family_id for e in release.families]
        lacking = [f for f in checked
                   if f in by_id and check["phase"] not in by_id[f].paradigm.phases]
        if lacking:
            line, col = release.located.where((*where, "phase"))
            problems.append(Problem(f"{check['kind']}: phase {check['phase']!r} is not a "
                                    f"phase of {', '.join(lacking)}", release.located.file,
                                    line, col, (*where, "phase")))
    return problems


def _card_cell(text: str) -> str:
    """A message as one short table cell: on one line, at most 80 characters, no bare |."""
    return elide(" ".join(text.split()), 80).replace("|", "\\|")


def _table(intro: str, header: Sequence[str], rows: Sequence[str]) -> list[str]:
    """One check's part of the card: its explanation and a Markdown table (none for no rows)."""
    if not rows:
        return []
    return ["", intro, "", "| " + " | ".join(header) + " |",
            "| " + " | ".join("---" for _ in header) + " |", *rows]


def card_lines(results: Sequence[VarietyResult | ReuseResult | OverlapResult]) -> list[str]:
    """The card's section on the release's checks (none for a release that declares none)."""
    if not results:
        return []

    def alike(r: VarietyResult) -> str:
        return (f"{r.most_alike[0]}, {r.most_alike[1]} ({r.most_alike[2]:.3f})"
                if r.most_alike else "")

    def most(r: ReuseResult) -> str:
        return f"{_card_cell(r.most_reused[0])} ({r.most_reused[1]})" if r.most_reused else ""

    return ["", "## Release checks", *_table(
        "Lexical variety: within each family, the mean word Jaccard similarity "
        "(|A ∩ B| / |A ∪ B| of the casefolded words) of a phase between every two "
        "groups, at most the declared bound.",
        ["family", "phase", "groups", "mean Jaccard", "bound", "most alike groups"],
        [f"| `{r.family}` | {r.phase} | {r.groups} | {r.mean:.3f} | {r.bound:g} | {alike(r)} |"
         for r in results if isinstance(r, VarietyResult)]), *_table(
        "Message reuse: across the release, the number of groups that show one "
        "message of a phase (a group counted once, whatever its variants), at most "
        "the declared bound.",
        ["phase", "role", "distinct messages", "groups", "most reused (groups)", "bound"],
        [f"| {r.phase} | {r.role or 'any'} | {r.messages} | {r.groups} | {most(r)} | "
         f"{r.bound} |" for r in results if isinstance(r, ReuseResult)]), *_table(
        "Rubric overlap: within each family, the mean share of the judge rubric's own "
        "words (four letters or more that no other phase of the item says) that a "
        "phase uses, at most the declared bound: a rubric that lists the very words "
        "of the priming text rewards copying them.",
        ["family", "phase", "items", "mean share", "bound", "words shared most"],
        [f"| `{r.family}` | {r.phase} | {r.items} | {r.mean:.3f} | {r.bound:g} | "
         f"{', '.join(r.shared)} |" for r in results if isinstance(r, OverlapResult)])]
