"""How a score report is computed: the options of its bootstrap, corrections and
simultaneous intervals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScoreOptions:
    """How a report is computed: the bootstrap's clusters, resamples and seed; the correction
    for multiple tests and its scope (every test of the report, or each row alone); the
    family-wise error rate the corrections and the simultaneous intervals hold."""

    cluster: str | None = None
    resamples: int = 2000
    seed: int = 0
    correction: str = "holm"
    scope: str = "report"
    alpha: float = 0.05
    #: Analysis blocks given for the run (``score --analysis``), beside the families' own.
    analysis: tuple[Mapping[str, Any], ...] = ()


#: Scopes of a correction: every test of the report together, or each row's tests alone.
SCOPES = ("report", "row")
#: Metrics whose intervals are made simultaneous across the rows of a report.
SIMULTANEOUS = ("delta_mem",)
