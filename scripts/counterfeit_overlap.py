"""How much each counterfeit memory document of a built release shares with the real one.

    python scripts/counterfeit_overlap.py dist/memorychecks-v4 \
        --columns date,time,kind,person,place,topic

For every family whose instances vary along --axis (default: document), in every value of
--split (an instance field, default: corpus), the document of each axis value is compared
with the --reference value's (default: veridical): its length ratio, and per column the
number of distinct values it shares with the real document, and the number of rows equal to
the real document's row at the same position in --same (default: time,kind). A document's
rows are its lines that start with an ISO date and hold one '|'-separated field per column.
Also counts, over every document shown, the rows of each kind in --kind-column, with the
earliest and latest time of each (the kind rule of a diary, read off the released bytes).

Needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

ROW = re.compile(r"\d{4}-\d\d-\d\d\|")


def _phase(instance: dict, name: str) -> str:
    return "\n".join(m["content"] for p in instance["phases"] if p["phase"] == name
                     for m in p["messages"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("release", type=Path)
    parser.add_argument("--columns", required=True)
    parser.add_argument("--axis", default="document")
    parser.add_argument("--phase", default="document")
    parser.add_argument("--reference", default="veridical")
    parser.add_argument("--split", default="corpus")
    parser.add_argument("--same", default="time,kind")
    parser.add_argument("--kind-column", default="kind")
    args = parser.parse_args()
    columns = args.columns.split(",")
    same = args.same.split(",")
    documents: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for path in sorted((args.release / "data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            inst = json.loads(line)
            value = inst["axes"].get(args.axis)
            text = _phase(inst, args.phase)
            if value is not None and text:
                key = (inst["family"], inst["fields"].get(args.split, ""))
                documents[key][value] = text
    times: dict[str, list[str]] = defaultdict(list)
    for (family, split), docs in sorted(documents.items()):
        reference = docs.get(args.reference)
        rows = {v: [dict(zip(columns, r.split("|"), strict=False)) for r in t.splitlines()
                    if ROW.match(r) and r.count("|") == len(columns) - 1]
                for v, t in docs.items()}
        for value in sorted(docs):
            for row in rows[value]:
                if args.kind_column in row and "time" in row:
                    times[row[args.kind_column]].append(row["time"])
            real = rows.get(args.reference, [])
            if reference is None or value == args.reference or not real:
                continue  # no reference, or documents of other columns
            shared = {c: len({r[c] for r in real} & {r[c] for r in rows[value]})
                      for c in columns}
            slot = sum(all(a.get(c) == b.get(c) for c in same)
                       for a, b in zip(real, rows[value], strict=False))
            print(f"{family} {args.split}={split} {value}: length ratio "
                  f"{len(docs[value]) / len(reference):.3f}, {len(rows[value])} rows; shared "
                  + ", ".join(f"{c} {n}/{len({r[c] for r in real})}" for c, n in shared.items())
                  + f"; rows equal in {'+'.join(same)} at the same position: {slot}")
    for kind, found in sorted(times.items()):
        print(f"kind {kind}: {len(found)} rows shown, times {min(found)} to {max(found)}")


if __name__ == "__main__":
    main()
