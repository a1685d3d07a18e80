"""The draw of ``memspec audit``: one memory-dependent scorable instance per group, by family
(the groups are the independent units), with what else the audit collects on the same pass."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from ..core.rng import KeyedRandom
from .audit_responses import ArmResponses
from .audit_view import declared, is_judged, is_memory_item, item_view

Item = Mapping[str, Any]


class GroupSampler:
    """One memory-dependent scorable instance per group, by family: each candidate draws a
    number from a stream keyed by its id and the group keeps the smallest (a uniform pick
    that needs neither the group's size nor the other groups). Only what the adversaries read
    of a pick is kept (``item_view``). Also collected on the way: what acting and not acting
    look like in each group of a family with declared arms, each family's declared exemption,
    and which families hold judge-scored items."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._best: dict[tuple[str, int], tuple[int, Item]] = {}
        self.arms = ArmResponses()
        self.exempt: dict[str, str] = {}
        #: Per family, how many judge-scored items it holds, by variant.
        self.judged: dict[str, Counter[str]] = defaultdict(Counter)

    def add(self, inst: Item) -> None:
        self.arms.add(inst)
        if is_judged(inst):
            self.judged[inst["family"]][inst.get("variant", "")] += 1
        reason = declared(inst).get("exempt")
        if reason:
            self.exempt.setdefault(inst["family"], reason)
        # Items that show authoritative evidence (a tool holding the right value) are meant
        # to be solvable without memory, and only a judge can score a judge-scored one.
        if not is_memory_item(inst):
            return
        draw = KeyedRandom(self.seed, ("audit", inst["id"])).next_u64()
        key = (inst["family"], inst["group"])
        if key not in self._best or draw < self._best[key][0]:
            self._best[key] = (draw, item_view(inst))

    def sampled(self) -> dict[str, list[Item]]:
        """The picks by family, in order of their group."""
        sampled: dict[str, list[Item]] = defaultdict(list)
        for (family, _), (_, inst) in sorted(self._best.items()):
            sampled[family].append(inst)
        return sampled
