"""Score the labelled answer corpus (tests/answer_corpus/*.jsonl) with memspec's own scorer and
report how often its verdict agrees with the labels.

    python scripts/answer_corpus.py                       # every corpus file, releases in dist/
    python scripts/answer_corpus.py --dist /tmp/dist      # releases built somewhere else
    python scripts/answer_corpus.py --map trustgap-v4=dist/trustgap-v5   # onto a later version
    python scripts/answer_corpus.py --reading-of example-v3=example-v5
                                       # read each family as its later version declares
    python scripts/answer_corpus.py --format json         # the same numbers as JSON
    python scripts/answer_corpus.py --format markdown     # the per-family table of
                                                          # docs/scoring.md
    python scripts/answer_corpus.py --show-disagreements  # each response the scorer reads
                                                          # otherwise than its label

Each record names a response written the way chat assistants answer, the instance it answers
(release, family, id, group, variant) and the verdict a careful reader of the design gives it:
``right``, ``wrong``, ``abstain`` (declined, asked or hedged) or ``judge`` (a family only a
judge scores). Records marked ``ambiguous`` are counted apart and left out of agreement, as
``judge`` ones are.

The response is scored as ``memspec score`` scores it: ``memspec.analysis.score.outcome`` on
the instance read from the built release (no abstain pattern beyond the instance's own). Its
verdict is ``abstain`` when the outcome is not answered, else ``right`` or ``wrong`` by its
correctness, ``judge`` when only a judge can say.

An instance is found by its id; where a later version of a release renamed ids (its family
files being copies), by the family whose name equals the record's with version digits set
aside, then the same group and variant (see tests/answer_corpus/README.md).

Exit status 0 whatever the agreement (this script measures; the corpus test asserts), 2 on a
corpus or release it cannot read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memspec.analysis.score import outcome
from memspec.release.release_data import release_sources

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "answer_corpus"
LABELS = ("right", "wrong", "abstain", "judge")
STYLES = ("terse", "markdown_preamble", "other_words", "habitual", "hedge",
          "rejected_then_answer")
FIELDS = ("release", "family", "id", "group", "variant", "style", "response", "label")


class CorpusError(Exception):
    """A corpus record or a release that cannot be read."""


def load_corpus(folder: Path = CORPUS) -> list[dict[str, Any]]:
    """Every record of every ``*.jsonl`` file in ``folder``, in file then line order, each
    checked for its fields, style and label (a bad one is named by file and line)."""
    records = []
    for path in sorted(folder.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{where}: not JSON ({exc.msg})") from None
            missing = [f for f in FIELDS if f not in record]
            if missing:
                raise CorpusError(f"{where}: missing {', '.join(missing)}")
            if record["style"] not in STYLES:
                raise CorpusError(f"{where}: unknown style {record['style']!r}")
            if record["label"] not in LABELS:
                raise CorpusError(f"{where}: unknown label {record['label']!r}")
            if record.get("ambiguous") and not record.get("why"):
                raise CorpusError(f"{where}: an ambiguous record says why")
            records.append({**record, "where": where})
    return records


def family_key(family: str) -> str:
    """A family's name with its version digits set aside ("memorychecks.v4.binding.x" and
    "memorychecks.v5.binding.x" meet; so do "memory_trust4" and "memory_trust5")."""
    segments = [s for s in family.split(".") if not re.fullmatch(r"v\d+", s)]
    return ".".join(re.sub(r"\d+$", "", s) for s in segments)


class ReleaseIndex:
    """The instances of one built release, found by id or by (family, group, variant)."""

    def __init__(self, folder: Path) -> None:
        try:
            _, sources = release_sources(folder, check=False)
        except Exception as exc:  # memspec's own errors name the folder
            raise CorpusError(str(exc)) from None
        self.folder = folder
        self.by_id: dict[str, Mapping[str, Any]] = {}
        self.by_place: dict[tuple[str, int, str], Mapping[str, Any]] = {}
        #: Each family's (versions aside) declared reading block, from its first instance.
        self.readings: dict[str, Mapping[str, Any]] = {}
        for read in sources.values():
            for instance in read():
                self.by_id[instance["id"]] = instance
                place = (family_key(instance["family"]), instance["group"], instance["variant"])
                self.by_place.setdefault(place, instance)
                if "reading" in instance["answer"]:
                    self.readings.setdefault(place[0], instance["answer"]["reading"])

    def find(self, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The record's instance: same id, else same family (versions aside), group and
        variant."""
        found = self.by_id.get(record["id"])
        if found is not None and found["family"] == record["family"]:
            return found
        return self.by_place.get((family_key(record["family"]), record["group"],
                                  record["variant"]))


#: With ``--reading``: the reading block given to every programmatic answer that has none,
#: to measure the reading stage on instances frozen without it.
READING = {"version": 2}


#: ``reading`` that scores every answer without the reading stage (main's old scorer).
UNREAD: Mapping[str, Any] = {}


def verdict(instance: Mapping[str, Any], response: str,
            reading: Mapping[str, Any] | None = None) -> str:
    """What ``memspec score`` makes of ``response``: abstain, right, wrong, unscorable (the
    reading stage could not place it) or judge. With ``reading``, a programmatic answer
    without a reading block is read with that one; with ``UNREAD``, every answer is scored
    without the stage, its own reading block set aside."""
    answer = instance["answer"]
    if reading is UNREAD:
        instance = {**instance, "answer": {k: v for k, v in answer.items() if k != "reading"}}
        reading = None
    if reading is not None and answer["scorer"] != "judge" and "reading" not in answer:
        instance = {**instance, "answer": {**answer, "reading": dict(reading)}}
    scored = outcome(instance, response)
    if not scored.answered:
        return "abstain"
    if scored.unscorable:
        return "unscorable"
    if scored.correct is None:
        return "judge"
    return "right" if scored.correct else "wrong"


def score_corpus(records: Iterable[Mapping[str, Any]], dist: Path,
                 mapping: Mapping[str, Path], reading: Mapping[str, Any] | None = None,
                 reading_of: Mapping[str, Path] | None = None,
                 version: int | None = None,
                 indexes: dict[Path, ReleaseIndex] | None = None) -> list[dict[str, Any]]:
    """Each record with the scorer's verdict added (``scored``); a record whose instance is
    not in its release is an error. ``reading_of`` names, per release, a later built
    version whose families' declared reading blocks replace the instances' own (the same
    replies on the same instances, read as the later version reads them); ``version``
    replaces the reading version of every block (what a newer reading makes of them).
    ``indexes`` holds the releases already read, by folder, and gains those read here: a
    caller that scores several times over the same built releases reads each once."""
    indexes = {} if indexes is None else indexes

    def index(folder: Path) -> ReleaseIndex:
        if folder not in indexes:
            indexes[folder] = ReleaseIndex(folder)
        return indexes[folder]

    scored = []
    for record in records:
        release = record["release"]
        found = index(mapping.get(release, dist / release))
        instance = found.find(record)
        if instance is None:
            raise CorpusError(f"{record['where']}: no instance {record['id']} (or "
                              f"{record['family']} group {record['group']} variant "
                              f"{record['variant']}) in {found.folder}")
        declared = (index(reading_of[release]).readings.get(family_key(record["family"]))
                    if reading_of and release in reading_of else None)
        if declared is not None and reading is not UNREAD:
            instance = {**instance, "answer": {**instance["answer"], "reading": declared}}
        if version is not None and "reading" in instance["answer"] and reading is not UNREAD:
            # What a later reading version makes of the same declaration.
            answer = instance["answer"]
            instance = {**instance, "answer": {**answer, "reading": {**answer["reading"],
                                                                      "version": version}}}
        scored.append({**record, "scored": verdict(instance, record["response"], reading)})
    return scored


def _counts(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Agreement of one slice: over unambiguous programmatic labels, with the ways it fails."""
    counted = [r for r in rows if r["label"] != "judge" and not r.get("ambiguous")]
    agree = sum(r["scored"] == r["label"] for r in counted)
    pairs = Counter((r["label"], r["scored"]) for r in counted)
    return {
        "responses": len(rows),
        "counted": len(counted),
        "agree": agree,
        "agreement": round(agree / len(counted), 4) if counted else None,
        "ambiguous": sum(bool(r.get("ambiguous")) for r in rows),
        "judge_labels": sum(r["label"] == "judge" for r in rows),
        "judge_routed": sum(r["label"] == "judge" and r["scored"] == "judge" for r in rows),
        "hedge_scored_right": sum(r["label"] == "abstain" and r["scored"] == "right"
                                  for r in rows),
        "abstain_scored_wrong": pairs[("abstain", "wrong")],
        "right_scored_wrong": pairs[("right", "wrong")],
        "right_scored_abstain": pairs[("right", "abstain")],
        "wrong_scored_right": pairs[("wrong", "right")],
        "wrong_scored_abstain": pairs[("wrong", "abstain")],
    }


def agreement_report(scored: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts overall and per release, label, style and family."""
    def grouped(key: str) -> dict[str, Any]:
        slices: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for row in scored:
            slices[row[key]].append(row)
        return {name: _counts(rows) for name, rows in sorted(slices.items())}

    return {"overall": _counts(list(scored)), "release": grouped("release"),
            "label": grouped("label"), "style": grouped("style"), "family": grouped("family")}


COLUMNS = (("responses", "n"), ("counted", "counted"), ("agree", "agree"),
           ("agreement", "agree%"), ("ambiguous", "ambig"), ("judge_labels", "judge"),
           ("judge_routed", "routed"),
           ("hedge_scored_right", "hedge→right"), ("abstain_scored_wrong", "hedge→wrong"),
           ("right_scored_wrong", "right→wrong"), ("right_scored_abstain", "right→abst"),
           ("wrong_scored_right", "wrong→right"), ("wrong_scored_abstain", "wrong→abst"))


def _table(title: str, slices: Mapping[str, Mapping[str, Any]]) -> str:
    width = max([len(title), *(len(name) for name in slices)])
    head = [title.ljust(width), *(label.rjust(max(len(label), 5)) for _, label in COLUMNS)]
    lines = ["  ".join(head), "-" * len("  ".join(head))]
    for name, counts in slices.items():
        cells = [name.ljust(width)]
        for key, label in COLUMNS:
            value = counts[key]
            text = "-" if value is None else (f"{100 * value:.1f}" if key == "agreement"
                                              else str(value))
            cells.append(text.rjust(max(len(label), 5)))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def as_text(report: Mapping[str, Any]) -> str:
    """The report as plain tables: overall, per release, label, style and family."""
    return "\n\n".join([_table("overall", {"all": report["overall"]}),
                        _table("release", report["release"]),
                        _table("label", report["label"]),
                        _table("style", report["style"]),
                        _table("family", report["family"])])


def as_markdown(before: list[Mapping[str, Any]], after: list[Mapping[str, Any]]) -> str:
    """The per-family agreement table of docs/scoring.md: unambiguous programmatic labels
    counted, agreement scored without the reading stage and with it."""
    def by_family(rows: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        return agreement_report(rows)["family"]

    old, new = by_family(before), by_family(after)

    def cell(counts: Mapping[str, Any]) -> str:
        if not counts["counted"]:
            return "-"
        return f"{100 * counts['agree'] / counts['counted']:.1f}% ({counts['agree']})"

    lines = ["| family | counted | before reading | after reading |",
             "|---|---:|---:|---:|"]
    for family, counts in new.items():
        if not counts["counted"]:
            continue  # a family only a judge scores: no offline agreement to give
        lines.append(f"| `{family}` | {counts['counted']} | {cell(old[family])} | "
                     f"{cell(counts)} |")
    total_old, total_new = _counts(list(before)), _counts(list(after))
    lines.append(f"| all | {total_new['counted']} | {cell(total_old)} | {cell(total_new)} |")
    return "\n".join(lines)


def disagreements(scored: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Unambiguous programmatic records the scorer reads otherwise than their label."""
    return [r for r in scored if r["label"] != "judge" and not r.get("ambiguous")
            and r["scored"] != r["label"]]


def _mapping(pairs: Iterable[str], dist: Path) -> dict[str, Path]:
    """RELEASE=FOLDER pairs; a FOLDER without a slash is a release name in ``dist``."""
    mapping = {}
    for pair in pairs:
        name, sep, folder = pair.partition("=")
        if not sep or not name or not folder:
            raise CorpusError(f"--map and --reading-of want RELEASE=FOLDER, not {pair!r}")
        mapping[name] = Path(folder) if "/" in folder else dist / folder
    return mapping


def main(argv: list[str] | None = None) -> int:
    """Score the corpus and print the agreement tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=REPO / "dist",
                        help="folder holding the built releases the records name")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="folder of corpus files")
    parser.add_argument("--reading", action="store_true",
                        help="read every programmatic answer with the reading stage "
                             "(reading: {version: 2}), as the releases that declare it do")
    parser.add_argument("--map", action="append", default=[], metavar="RELEASE=FOLDER",
                        help="score a release's records on another built release folder")
    parser.add_argument("--reading-of", action="append", default=[],
                        metavar="RELEASE=FOLDER",
                        help="read a release's records with the reading blocks its families "
                             "declare in a later built version")
    parser.add_argument("--reading-version", type=int, metavar="N",
                        help="read every declared reading block with reading version N")
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table",
                        help="markdown: the per-family table of docs/scoring.md (before: no "
                             "reading stage; after: as the other options say)")
    parser.add_argument("--show-disagreements", action="store_true")
    args = parser.parse_args(argv)
    try:
        records = load_corpus(args.corpus)
        indexes: dict[Path, ReleaseIndex] = {}
        scored = score_corpus(records, args.dist, _mapping(args.map, args.dist),
                              READING if args.reading else None,
                              _mapping(args.reading_of, args.dist), args.reading_version,
                              indexes)
        if args.format == "markdown":
            # Before: every record on its own release, scored without the reading stage.
            before = score_corpus(records, args.dist, {}, UNREAD, indexes=indexes)
            print(as_markdown(before, scored))
            return 0
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = agreement_report(scored)
    differing = disagreements(scored)
    if args.format == "json":
        if args.show_disagreements:
            report = {**report, "disagreements": [
                {k: r[k] for k in ("where", "family", "id", "style", "label", "scored",
                                   "response")} for r in differing]}
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    print(as_text(report))
    if args.show_disagreements:
        print(f"\n{len(differing)} disagreements")
        for r in differing:
            print(f"\n{r['where']}  {r['id']}  [{r['style']}] label={r['label']} "
                  f"scored={r['scored']}")
            print("    " + r["response"].replace("\n", "\n    "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
