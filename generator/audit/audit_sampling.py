"""The draw of ``memspec audit``: memory-dependent scorable instances by family and group (the
groups are the independent units), with what else the audit collects on the same pass.

Under rules 2 the draw is stratified: each group keeps one candidate per stratum (its arm
where the family declares act/don't-act arms, else its variant), the family's draw takes one
candidate per group with the strata dealt out evenly over its groups (a seeded shuffle of the
groups, then the strata in turn), and every stratum is also drawn whole, one instance per
group, so that a leak confined to one arm or variant is tested on its own groups. The
candidates are kept once and serve both draws. Under rules 1 a group kept one candidate,
whatever its stratum.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from ..core.rng import KeyedRandom
from .audit_responses import ArmResponses, arm_of
from .audit_rules import rules
from .audit_view import declared, is_judged, is_memory_item, item_view

Item = Mapping[str, Any]


def stratum_of(item: Item) -> str:
    """The stratum an instance is drawn in: its arm where the family declares arms, else
    its variant ("arm=act", "variant=stale")."""
    arm = arm_of(item)
    return f"arm={arm}" if arm is not None else f"variant={item.get('variant', '')}"


class GroupSampler:
    """Memory-dependent scorable instances by family, group and stratum: each candidate draws
    a number from a stream keyed by its id and the cell keeps the smallest (a uniform pick
    that needs neither the cell's size nor the other cells). Only what the adversaries read of
    a pick is kept (``item_view``). Also collected on the way: what acting and not acting look
    like in each group of a family with declared arms, each family's declared exemption, and
    which families hold judge-scored items."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._stratified = rules().stratified
        self._best: dict[tuple[str, int, str], tuple[int, Item]] = {}
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
        key = (inst["family"], inst["group"], stratum_of(inst) if self._stratified else "")
        if key not in self._best or draw < self._best[key][0]:
            self._best[key] = (draw, item_view(inst))

    def _cells(self) -> dict[str, dict[int, dict[str, tuple[int, Item]]]]:
        """The candidates by family, group and stratum."""
        cells: dict[str, dict[int, dict[str, tuple[int, Item]]]] = defaultdict(
            lambda: defaultdict(dict))
        for (family, group, stratum), best in sorted(self._best.items(),
                                                     key=lambda kv: kv[0]):
            cells[family][group][stratum] = best
        return cells

    def sampled(self) -> dict[str, list[Item]]:
        """One pick per group by family, in order of their group: the strata dealt out
        evenly over the family's groups (rules 2), else the group's one candidate."""
        sampled: dict[str, list[Item]] = defaultdict(list)
        for family, groups in self._cells().items():
            strata = sorted({s for cell in groups.values() for s in cell})
            order = KeyedRandom(self.seed, ("audit-strata", family)).shuffled(sorted(groups))
            wanted = {group: strata[index % len(strata)] for index, group in enumerate(order)}
            for group, cell in sorted(groups.items()):
                # A group may lack the stratum dealt to it (its items there show evidence):
                # then its smallest draw among the strata it has.
                pick = cell.get(wanted[group]) or min(cell.values(), key=lambda c: c[0])
                sampled[family].append(pick[1])
        return sampled

    def strata(self) -> dict[tuple[str, str], list[Item]]:
        """Each stratum of a family with several, drawn whole: one pick per group, by
        (family, stratum), in order of their group (rules 2; empty under rules 1). Families
        with declared arms are left out: within one arm a constant answer is right by
        design, and their arms are told apart by the arm classifier instead."""
        out: dict[tuple[str, str], list[Item]] = {}
        if not self._stratified:
            return out
        for family, groups in self._cells().items():
            strata = sorted({s for cell in groups.values() for s in cell})
            if len(strata) < 2 or strata[0].startswith("arm="):
                continue
            for stratum in strata:
                out[(family, stratum)] = [cell[stratum][1] for _, cell in sorted(groups.items())
                                          if stratum in cell]
        return out
