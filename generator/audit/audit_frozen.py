"""How an audit of a release compares with the one frozen into its manifest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Why an audit of a release can differ from the one frozen with it.
FROZEN_AUDIT_NOTE = (
    "manifest.json and the card keep the audit as it ran when the release was frozen; the "
    "text-embedding adversary's floating-point scores can tip a near tie the other way on "
    "another machine, and a later memspec may draw or score an adversary otherwise")


def frozen_differences(summary: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]
                       ) -> list[str]:
    """Where an audit's ``summary`` differs from the one the release's manifest froze, in
    words (``FROZEN_AUDIT_NOTE`` says why they can differ), so that a reader comparing the
    card with this audit knows which numbers are which."""
    frozen = {row.get("family"): row for row in manifest.get("audit", {}).get("summary", ())}
    notes = []
    for row in summary:
        before = frozen.get(row["family"])
        if before is None:
            continue
        for key in sorted(row):
            # A column the frozen audit did not have yet is new, not a difference.
            if key != "family" and key in before and before[key] != row[key]:
                notes.append(f"{row['family']}: {key} {row[key]!r} here, {before.get(key)!r} "
                             "when the release was frozen")
    return notes
