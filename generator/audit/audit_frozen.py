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


#: The columns of a frozen summary that are verdicts: whether the family passed, and each
#: area of the exact audits (the adversaries' description is a measurement, which the
#: encoder's floating point and later memspecs may word or draw otherwise).
VERDICT_KEYS = ("passed", "balance", "leakage", "counterfeit", "declared", "coverage")


def as_frozen_notes(summary: Sequence[Mapping[str, Any]], differences: Sequence[str],
                    manifest: Mapping[str, Any], compared: str | None, rules: int) -> list[str]:
    """What ``memspec audit --as-frozen`` says of its reproduction, in words: that the
    release was frozen before any audit (nothing to reproduce), that the comparison could
    not run (``compared`` says why), or whether every family's verdict is the recorded one,
    naming each that is not."""
    if not manifest.get("audit"):
        return [f"the release was frozen before memspec audited releases (its manifest, "
                f"version {manifest.get('manifest_version', 1)}, records no audit): there is no "
                f"verdict to reproduce; this is the verdict of the first rules ({rules})"]
    if compared is not None:
        return [f"not compared with the verdicts frozen in the manifest: {compared}"]
    differing = sorted({d for d in differences
                        if d.split(": ", 1)[1].split(" ", 1)[0] in VERDICT_KEYS})
    if not differing:
        frozen = len(manifest["audit"].get("summary", ())) or len(summary)
        return [f"as frozen by rules {rules}: every verdict of the {frozen} families and "
                "pooled units the manifest records is reproduced"]
    return [f"NOT REPRODUCED by rules {rules}: {d}" for d in differing]
