"""The wording overlap of one phase within each family of a built release: the mean word
Jaccard similarity between every two groups (a group's words are those of every variant),
worked out by the function the release check ``lexical_variety`` uses, and the most alike two
groups. Also, for a priming release, the most sentences any two passages of the phase share.

    python scripts/phase_overlap.py dist/implicitmem-v6 --phase conditioning
    python scripts/phase_overlap.py dist/implicitmem-v5 --phase conditioning --family conditioning5
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memspec.formats.release_checks import mean_pairwise_jaccard, phase_words


def family_overlap(path: Path, phase: str) -> tuple[int, float, tuple[int, int, float] | None]:
    """Groups, mean pairwise Jaccard and the most alike pair of ``phase`` in one family file."""
    groups: dict[int, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        instance = json.loads(line)
        groups.setdefault(instance["group"], set()).update(phase_words(instance, phase))
    ordered = sorted(groups)
    if not any(groups.values()):
        return len(ordered), 0.0, None  # the family has no such phase
    mean, best = mean_pairwise_jaccard([groups[g] for g in ordered])
    return len(ordered), mean, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", type=Path, help="a built release folder (dist/<name>-<version>)")
    parser.add_argument("--phase", required=True, help="the phase to compare")
    parser.add_argument("--family", default="", help="only families whose id contains this")
    args = parser.parse_args()
    print(f"{'family':<44} {'groups':>6} {'mean':>6} {'max':>6}")
    for path in sorted((args.release / "data").glob("*.jsonl")):
        family = path.name[:-len(".jsonl")]
        if args.family not in family:
            continue
        groups, mean, best = family_overlap(path, args.phase)
        if mean == 0.0 and best is None:
            continue
        top = f"{best[2]:.3f}" if best else "-"
        print(f"{family:<44} {groups:>6} {mean:>6.3f} {top:>6}")


if __name__ == "__main__":
    main()
