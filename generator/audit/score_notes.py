"""What the first screen of ``memspec score`` says beside its table, so that a pooled number is
not read for what it is not: every row that pools items whose evidence is in view (a system
without memory is meant to answer them) with items that need memory, with the key that sets
them apart; and each dataset's convention baseline, the score of a system that knows only the
dataset's answer form.

The convention baseline is the score of a system that has seen one other item of the dataset
rightly answered and answers each item in its form, reading no memory
(``audit_convention``): where every item wants the same form (a feedback dataset with one
constant answer convention), it scores 1, and a score that high needs none of the user's
sessions. What a system scores up to the baseline the dataset's convention explains; only
what it scores above it can come from the sessions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..analysis.score_grouping import key_value, report_rows
from .audit_convention import convention_hits, convention_score
from .audit_view import evidence_shown, is_memory_item

Item = Mapping[str, Any]
#: Keys tried, beside every axis and field, to set evidence-in-view items apart.
_KEYS = ("family", "design", "variant")


def _kind(item: Item) -> str | None:
    """"view" for an item whose evidence is in view, "memory" for one that needs memory,
    None for one neither (judge-scored)."""
    if evidence_shown(item) is True:
        return "view"
    return "memory" if is_memory_item(item) else None


def _separating_key(items: Sequence[Item], kinds: Sequence[str | None]) -> str | None:
    """A key whose every value holds items of one kind only (the fewest values first)."""
    keys = sorted({k for i in items for k in (*i.get("axes", {}), *i.get("fields", {}))})
    best: tuple[int, str] | None = None
    for key in [*keys, *_KEYS]:
        seen: dict[str, set[str]] = defaultdict(set)
        for item, kind in zip(items, kinds, strict=True):
            if kind is not None:
                seen[key_value(item, key)].add(kind)
        if len(seen) > 1 and all(len(k) == 1 for k in seen.values()) and \
                (best is None or len(seen) < best[0]):
            best = (len(seen), key)
    return best[1] if best else None


def pooled_row_notes(instances: Sequence[Item], by: Sequence[str]) -> list[str]:
    """One line per row of the report (as ``by`` groups it) that pools items whose evidence
    is in view with items that need memory, saying how many of each and where to look."""
    kinds = [_kind(i) for i in instances]
    if "view" not in kinds or "memory" not in kinds:
        return []
    key = _separating_key(instances, kinds)
    look = (f"score with --by {key} to see them apart" if key else
            "score with --by a key that sets them apart")
    notes = []
    rows = report_rows(instances, by)
    mixed = [(row, indices) for row, indices in rows
             if any(kinds[i] == "view" for i in indices)
             and any(kinds[i] == "memory" for i in indices)]
    if len(rows) > 1 and mixed == rows[:1]:
        return []  # the rows below the overall one already show them apart
    for row, indices in mixed:
        view = sum(kinds[i] == "view" for i in indices)
        memory = sum(kinds[i] == "memory" for i in indices)
        if view and memory:
            name = ", ".join(f"{k}={v}" for k, v in row.items()) or "all"
            notes.append(f"row {name} pools {view} items whose evidence is in view (a system "
                         f"without memory is meant to answer them) with {memory} that need "
                         f"memory: its scores, a memoryless one's too, mix both; {look}")
    return notes


def _datasets(instances: Sequence[Item]) -> dict[str, list[Item]]:
    """The datasets (families) the convention learner answers, in order: each family's
    scorable items, where it has two or more (one to learn from, one to answer)."""
    by_family: dict[str, list[Item]] = defaultdict(list)
    for item in instances:
        if item["answer"]["scorer"] != "judge":
            by_family[item["family"]].append(item)
    return {family: items for family, items in sorted(by_family.items()) if len(items) >= 2}


def convention_baselines(instances: Sequence[Item]) -> dict[str, float]:
    """Per dataset (family) of scorable items, in order, the share the convention learner
    answers rightly (``audit_convention.convention_score``)."""
    return {family: convention_score(items) for family, items in _datasets(instances).items()}


def family_convention_baseline(instances: Iterable[Item]) -> float | None:
    """``convention_baselines`` of one family's instances, read once as a stream (at most
    three held, so an audit's memory stays flat): None where it has fewer than two scorable
    items."""
    hits = convention_hits(item for item in instances if item["answer"]["scorer"] != "judge")
    return sum(hits) / len(hits) if len(hits) >= 2 else None


def convention_rows(instances: Sequence[Item], by: Sequence[str]
                    ) -> list[tuple[dict[str, str], float | None]]:
    """The convention baseline of every row of a score report (as ``by`` groups it, the
    overall row first): the share of the row's scorable items that the convention learner,
    learning within each item's own dataset, answers rightly (None where the row has none),
    so that each row's score is read beside what its datasets' conventions explain."""
    hits = {item["id"]: hit for items in _datasets(instances).values()
            for item, hit in zip(items, convention_hits(items), strict=True)}
    out: list[tuple[dict[str, str], float | None]] = []
    for row, indices in report_rows(instances, by):
        mine = [hits[instances[i]["id"]] for i in indices if instances[i]["id"] in hits]
        out.append((row, sum(mine) / len(mine) if mine else None))
    return out


#: What a convention baseline is, said once under a table of them.
CONVENTIONS_NOTE = ("convention baseline: the score of a system that has seen one other item of "
                    "the dataset rightly answered and answers in its form, knowing nothing of "
                    "the user's sessions; a score up to it on the dataset is explained by the "
                    "dataset's convention, only what is above it can come from the sessions")

#: From this convention baseline on, the score line names the dataset.
CONVENTION_NOTED = 0.5


def convention_notes(instances: Sequence[Item]) -> list[str]:
    """The datasets whose convention baseline reaches ``CONVENTION_NOTED``, in words."""
    return [f"convention baseline of {family}: {score:.3f} (a system that has seen one other "
            "item of the dataset answered, and answers in its form, knowing nothing of the "
            f"user's sessions: a score up to {score:.3f} on this dataset is explained by its "
            "convention; only what is above it can come from the sessions)"
            for family, score in convention_baselines(instances).items()
            if score >= CONVENTION_NOTED]
