"""Declared outcomes: named kinds of answer a family reports apart.

A family may credit more than one kind of right first move (a conditioning item is passed by
taking the alternative action or by a warning that names the hazard) and want each counted
on its own. Its ``analysis`` block names each kind with a regular expression searched in the
first attempt of an answered item::

    outcomes:
      alternative: "^(?:(?!fetch_live\\()[\\s\\S])*?fetch_cached\\("
      warning: "\\bfetch_live\\b[^.\\n]{0,80}(?:time[sd]? ?out|slow)"

``memspec score`` reports, per row, the share of answered items whose first attempt shows
each kind (mean over groups of each group's share, the group the unit as everywhere), beside
the accuracy that the gold (which accepts every credited kind) gives.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from ..core import safe_regex
from .scoring import first_attempt


def shows(instance: Mapping[str, Any], response: str, pattern: str) -> bool:
    """Whether the first attempt of ``response`` shows the outcome ``pattern`` describes (a
    pattern from a spec: matched under the regex time limit, like a gold)."""
    return safe_regex.search(pattern, first_attempt(instance["answer"], response))


def outcome_units(items: Iterable[tuple[Mapping[str, Any], str]]
                  ) -> dict[str, dict[tuple[str, int], float]]:
    """For each declared outcome name: per group, the share of its answered
    ``(instance, response)`` pairs whose first attempt shows it. Items whose family declares
    no outcomes are left out; a name counts only the groups whose family declares it."""
    counts: dict[str, dict[tuple[str, int], list[float]]] = defaultdict(lambda: defaultdict(list))
    for instance, response in items:
        declared = instance.get("analysis", {}).get("outcomes") or {}
        unit = (instance["family"], instance["group"])
        for name, pattern in declared.items():
            counts[name][unit].append(float(shows(instance, response, pattern)))
    return {name: {unit: math.fsum(v) / len(v) for unit, v in units.items()}
            for name, units in sorted(counts.items())}
