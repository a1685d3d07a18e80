"""Matching values by length: give each original the unused candidate closest to it in length.

A counterfeit memory must keep the length of the record it imitates (within a few percent):
both the ``counterfeit`` transform and the ``match_lengths`` template filter pick their
strangers this way, so the two never differ in how "closest" is decided.
"""

from __future__ import annotations

from collections.abc import Sequence


def closest_lengths(originals: Sequence[str], candidates: Sequence[str]) -> dict[str, str]:
    """A one-to-one map from each distinct original to a candidate: the longest original
    first, each takes the unused candidate whose length is closest to its own (ties go to
    the candidate listed first, so the order of ``candidates`` decides them). Candidates
    equal to an original are never used; too few candidates is a ValueError."""
    distinct = list(dict.fromkeys(originals))
    taken = set(distinct)
    pool = [c for c in dict.fromkeys(candidates) if c not in taken]
    if len(pool) < len(distinct):
        raise ValueError(f"{len(pool)} candidates for {len(distinct)} values to match")
    mapping: dict[str, str] = {}
    for value in sorted(distinct, key=len, reverse=True):
        best = min((c for c in pool if c not in mapping.values()),
                   key=lambda c, v=value: abs(len(c) - len(v)))
        mapping[value] = best
    return mapping


def match_lengths(candidates: Sequence[str], originals: Sequence[str]) -> list[str]:
    """The template filter ``candidates | match_lengths(originals)``: for each original, in
    order, its length-matched candidate (``closest_lengths``). Draw the candidates at random
    (a pool slot with a count) and the matches are random strangers of the originals'
    lengths: an independent cast whose names take as much room as the real one's."""
    if not all(isinstance(v, str) for v in [*candidates, *originals]):
        raise TypeError("match_lengths needs lists of strings")
    mapping = closest_lengths(originals, candidates)
    return [mapping[value] for value in originals]
