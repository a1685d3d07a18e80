"""What a release's charts show, gathered in one streaming pass over its instances."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine.checks import messages_tokens
from .charts import histogram, stacked_bars
from .html_page import option_letter


def _charted_choice(item: Mapping[str, Any]) -> bool:
    """A choice item that declares no evidence: whose gold position the chart shows. (The
    audit also checks that declared evidence is shown; the chart keeps this rule, which frozen
    releases' charts were drawn by.)"""
    answer = item["answer"]
    return bool(answer.get("options")) and "gold_index" in answer and "evidence" not in answer


@dataclass
class ReleaseStats:
    """Gold positions per family, variants per family and token lengths per phase."""

    gold_positions: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    option_counts: dict[str, int] = field(default_factory=dict)
    variants: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    #: Per phase, how many instances have each length (not every length: memory stays flat).
    phase_tokens: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, instance: Mapping[str, Any]) -> None:
        family = instance["family"]
        self.variants[family][instance["variant"]] += 1
        if _charted_choice(instance):
            answer = instance["answer"]
            self.gold_positions[family][answer["gold_index"]] += 1
            self.option_counts[family] = max(self.option_counts.get(family, 0),
                                             len(answer["options"]))
        for phase in instance["phases"]:
            if phase["messages"]:
                self.phase_tokens[phase["phase"]][messages_tokens(phase["messages"])] += 1

    @classmethod
    def of(cls, instances: Iterable[Mapping[str, Any]]) -> ReleaseStats:
        stats = cls()
        for instance in instances:
            stats.add(instance)
        return stats

    def charts(self, letters: bool = False) -> dict[str, str]:
        """SVG charts by file name: the gold's position per family (where there are choice
        items that need memory) and a token-length histogram per phase. With ``letters`` the
        positions are named as a reader of the options sees them (option A, B, …); without,
        as frozen releases' charts name them (position 0, 1, …)."""
        charts: dict[str, str] = {}
        if self.gold_positions:
            width = max(self.option_counts.values())
            rows = [(family, [counts.get(k, 0) for k in range(width)])
                    for family, counts in sorted(self.gold_positions.items())]
            charts["gold_position.svg"] = stacked_bars(
                "Position of the right option, per family", rows,
                [f"option {option_letter(k)}" if letters else f"position {k}"
                 for k in range(width)])
        for phase, tokens in sorted(self.phase_tokens.items()):
            charts[f"tokens_{phase}.svg"] = histogram(
                f"Length of phase {phase!r} (approximate tokens)", tokens, unit=" tok")
        return charts
