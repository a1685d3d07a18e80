"""The reading stage against the labelled corpus (tests/answer_corpus/): responses written the
way assistants answer, labelled by each design's intent, scored on the instances they were
written for with the reading stage applied (``scripts/answer_corpus.py --reading``). No
reply labelled an abstention is ever scored right, and where the answer is a choice the
reading agrees with the labels on 99% of the unambiguous ones."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import answer_corpus  # noqa: E402

#: The releases whose newer version reads choices with the stage (and so must agree).
CHOICE_RELEASES = ("trustgap-v4", "memorychecks-v4")


#: example: the records written for example-v4's instances are scored on example-v5 (which
#: draws what v4 drew), and those written for example-v3's are read with the reading blocks
#: example-v5's families declare (the same instances, read as the newest version reads).
EXAMPLE_MAP = {"example-v4": "example-v5"}
EXAMPLE_READING_OF = {"example-v3": "example-v5"}


#: Releases whose records were written for their own (newest) instances, tested apart below.
OWN_RELEASES = ("trustgap-v5", "memorychecks-v5")


#: Releases whose records were written for their own items after they were frozen with reading
#: version 4 (scored as built, each family's declared reading), tested apart at the end.
V6_OWN = ("feedback-v6", "implicitmem-v6")

#: Releases whose records were written for their own items after reading version 5 existed
#: (so in no verdict file of the earlier versions), tested apart at the end.
V8_OWN = ("feedback-v8",)


@pytest.fixture(scope="module")
def indexes() -> dict[Path, answer_corpus.ReleaseIndex]:
    """The built releases read so far, by folder, shared by every scoring of the corpus in
    this module: each release's instances are read from the session's build once, not once
    per scoring (nothing here changes them)."""
    return {}


@pytest.fixture(scope="module")
def scored(built_dist: Path, indexes: dict) -> list[dict]:
    records = [r for r in answer_corpus.load_corpus()
               if r["release"] not in OWN_RELEASES + V6_OWN + V8_OWN]
    return answer_corpus.score_corpus(
        records, built_dist, {old: built_dist / new for old, new in EXAMPLE_MAP.items()},
        answer_corpus.READING,
        {old: built_dist / new for old, new in EXAMPLE_READING_OF.items()}, indexes=indexes)


def _counted(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["label"] != "judge" and not r.get("ambiguous")]


@pytest.fixture(scope="module")
def own(built_dist: Path, indexes: dict) -> dict[str, list[dict]]:
    """The records written for trustgap-v5's and memorychecks-v5's own instances, scored as
    the releases were frozen (reading version 2) and as reading version 4 reads the same
    declarations."""
    records = [r for r in answer_corpus.load_corpus() if r["release"] in OWN_RELEASES]
    return {"frozen": answer_corpus.score_corpus(records, built_dist, {}, indexes=indexes),
            "version 4": answer_corpus.score_corpus(records, built_dist, {}, version=4,
                                                    indexes=indexes)}


@pytest.mark.parametrize("release", OWN_RELEASES)
def test_the_newest_choice_releases_agree_on_replies_written_for_their_own_instances(
        own: dict[str, list[dict]], built_dist: Path, release: str) -> None:
    """Six styles over every family. As frozen, the only disagreements are replies with
    "either" (a decision after a neutral pair abstains; a hedge between two options that are
    sentences is read as its first), the class reading version 4 fixes: over the rest they
    agree on 99%, and read with version 4 on 99% of all, no abstention scored right."""
    frozen = _counted([r for r in own["frozen"] if r["release"] == release])
    families = {r["family"] for r in own["frozen"] if r["release"] == release}
    assert len(frozen) >= 140
    assert families == {p.stem for p in (built_dist / release / "data").glob("*.jsonl")}
    assert {r["style"] for r in frozen} == set(answer_corpus.STYLES)
    missed = [r for r in frozen if r["scored"] != r["label"]]
    assert all("either" in r["response"].lower() for r in missed), missed
    rest = [r for r in frozen if "either" not in r["response"].lower()]
    assert sum(r["scored"] == r["label"] for r in rest) / len(rest) >= 0.99
    four = _counted([r for r in own["version 4"] if r["release"] == release])
    assert sum(r["scored"] == r["label"] for r in four) / len(four) >= 0.99, [
        (r["where"], r["label"], r["scored"]) for r in four if r["scored"] != r["label"]]
    assert not [r for r in four if r["label"] == "abstain" and r["scored"] == "right"]


def test_the_corpus_is_large_and_covers_every_style(scored: list[dict]) -> None:
    assert len(scored) >= 1000
    assert {r["style"] for r in scored} == set(answer_corpus.STYLES)


def test_no_reply_labelled_an_abstention_is_scored_right(scored: list[dict]) -> None:
    wrongly = [r["where"] for r in _counted(scored)
               if r["label"] == "abstain" and r["scored"] == "right"]
    assert wrongly == []


def test_no_hedge_style_reply_of_a_choice_release_is_scored_right_unless_labelled(
        scored: list[dict]) -> None:
    hedges = [r for r in _counted(scored)
              if r["style"] == "hedge" and r["release"] in CHOICE_RELEASES]
    assert hedges and all(r["scored"] != "right" or r["label"] == "right" for r in hedges)


@pytest.mark.parametrize("release", CHOICE_RELEASES)
def test_choice_releases_agree_with_the_labels(scored: list[dict], release: str) -> None:
    counted = _counted([r for r in scored if r["release"] == release])
    agree = sum(r["scored"] == r["label"] for r in counted)
    assert len(counted) >= 90
    assert agree / len(counted) >= 0.99, [
        (r["where"], r["label"], r["scored"]) for r in counted if r["scored"] != r["label"]]


def test_example_agrees_with_the_labels_as_its_newest_version_reads(
        scored: list[dict]) -> None:
    counted = _counted([r for r in scored if r["release"].startswith("example-")])
    agree = sum(r["scored"] == r["label"] for r in counted)
    assert len(counted) >= 110
    assert agree / len(counted) >= 0.99, [
        (r["where"], r["label"], r["scored"]) for r in counted if r["scored"] != r["label"]]


def test_either_replies_are_read_by_what_follows_the_pair(scored: list[dict]) -> None:
    """A real hedge ("It's either A or B") abstains; a decision after a neutral either
    ("You could book either X or Y, but the directory says X") is read."""
    either = [r for r in _counted(scored) if r["release"] == "example-v4"
              and "either" in r["response"].lower()]
    assert {r["label"] for r in either} == {"right", "wrong", "abstain"}
    assert len(either) >= 10
    assert [(r["where"], r["scored"]) for r in either if r["scored"] != r["label"]] == []


#: Releases whose newer version fixes golds in its specs (and reads with the stage it
#: declares): the records written for the older one are scored on the newer one by family,
#: group and variant, as ``scripts/answer_corpus.py --map OLD=dist/NEW`` does.
MAPPED_RELEASES = {"implicitmem-v4": "implicitmem-v5", "feedback-v4": "feedback-v5"}


@pytest.fixture(scope="module")
def mapped(built_dist: Path, indexes: dict) -> list[dict]:
    records = [r for r in answer_corpus.load_corpus() if r["release"] in MAPPED_RELEASES]
    mapping = {old: built_dist / new for old, new in MAPPED_RELEASES.items()}
    return answer_corpus.score_corpus(records, built_dist, mapping, indexes=indexes)


@pytest.mark.parametrize("release", sorted(MAPPED_RELEASES))
def test_newer_versions_agree_with_the_labels_written_for_the_older(
        mapped: list[dict], release: str) -> None:
    counted = _counted([r for r in mapped if r["release"] == release])
    agree = sum(r["scored"] == r["label"] for r in counted)
    assert len(counted) >= 90
    assert agree / len(counted) >= 0.99, [
        (r["where"], r["label"], r["scored"]) for r in counted if r["scored"] != r["label"]]
    assert not [r["where"] for r in counted
                if r["label"] == "abstain" and r["scored"] == "right"]


_TABLE = re.compile(r"```sh\n(?P<command>python scripts/answer_corpus\.py --format markdown "
                    r"[^\n]*)\n```\n\n<!-- answer-corpus-family-table[^\n]*-->\n"
                    r"(?P<table>.*?)\n<!-- /answer-corpus-family-table -->", re.S)


def test_the_per_family_table_of_the_scoring_page_is_the_scripts_output(
        built_dist: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/scoring.md's per-family agreement table equals what the command above it prints
    on the built releases, so it cannot go stale."""
    found = _TABLE.search((REPO / "docs" / "scoring.md").read_text(encoding="utf-8"))
    assert found, "docs/scoring.md has no per-family table under its command"
    args = shlex.split(found["command"])[2:]
    assert answer_corpus.main([*args, "--dist", str(built_dist)]) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    assert printed == found["table"]
    assert printed.splitlines()[-1].startswith("| all | ")


#: The releases refrozen to read with reading version 4 before their first publication, and
#: the built releases whose items the corpus's records were written for: memorychecks-v6
#: holds memorychecks-v5's items under new ids; implicitmem-v6's reading blocks are read on
#: implicitmem-v5's items (its procedural items are version 5's, its conditioning families
#: version 5's tasks in new wordings), where the records written for version 4 are scored;
#: feedback-v6's on feedback-v5's items (new data on the same datasets' designs); trustgap-v6
#: holds trustgap-v5's items under new ids (version 5, read with version 2, agrees on 97.2%,
#: every miss a decision after a neutral "either").
REFROZEN = {"memorychecks-v5": ("memorychecks-v6", "memorychecks-v6"),
            "implicitmem-v4": ("implicitmem-v5", "implicitmem-v6"),
            "feedback-v4": ("feedback-v5", "feedback-v6"),
            "trustgap-v5": ("trustgap-v6", "trustgap-v6")}


@pytest.fixture(scope="module")
def refrozen(built_dist: Path, indexes: dict) -> list[dict]:
    records = [r for r in answer_corpus.load_corpus() if r["release"] in REFROZEN]
    return answer_corpus.score_corpus(
        records, built_dist, {old: built_dist / on for old, (on, _) in REFROZEN.items()}, None,
        {old: built_dist / of for old, (_, of) in REFROZEN.items()}, indexes=indexes)


@pytest.mark.parametrize("release", sorted(REFROZEN))
def test_the_releases_read_with_reading_version_4_agree_with_the_labels(
        refrozen: list[dict], release: str) -> None:
    """memorychecks-v6, implicitmem-v6, feedback-v6 and trustgap-v6 read every reply as reading
    version 4 does (with the keys their families declare beside it): on the replies written
    for their items (or version 5's) they agree with the labels on 99%, and no abstention is
    scored right."""
    counted = _counted([r for r in refrozen if r["release"] == release])
    assert len(counted) >= 90
    agree = sum(r["scored"] == r["label"] for r in counted)
    assert agree / len(counted) >= 0.99, [
        (r["where"], r["label"], r["scored"]) for r in counted if r["scored"] != r["label"]]
    assert not [r["where"] for r in counted
                if r["label"] == "abstain" and r["scored"] == "right"]


#: What the frozen v6 releases' own scoring makes of the replies written for their items,
#: measured, not hoped for: (counted, agreeing) and every disagreement by instance and style.
#: feedback-v6 misses replies a reader accepts: an opener line before the answer (a
#: "Let's check the numbers:" line, a "## Answer" heading, a question restated with its
#: imperial figure), a markdown table cell or bullet, a neighbouring number set aside in
#: words the reading does not know ("looks close but isn't it", "is the one before it",
#: "looks similar, but"), a note whose content ("the landlord isn't responsible if ...")
#: is set aside as a rejected mention, leaving it under the forty words asked for, a roast
#: chicken told as "the bird", and a clarifying question after "Happy to summarise, but".
#: implicitmem-v6 misses calls with keyword arguments where the pattern wants the literal
#: positional value, and a question opening with "Just to check:".
V6_MEASURED = {
    "feedback-v6": ((140, 128), {
        ("feedback.v6.declarative.clause_pack-00030-base", "markdown_preamble"),
        ("feedback.v6.declarative.clause_pack-00030-base", "rejected_then_answer"),
        ("feedback.v6.declarative.clause_notes-00030-base", "terse"),
        ("feedback.v6.declarative.handbook_guides-00000-base", "markdown_preamble"),
        ("feedback.v6.declarative.handbook_guides-00030-base", "rejected_then_answer"),
        ("feedback.v6.declarative.study_digest-00030-base", "markdown_preamble"),
        ("feedback.v6.declarative.study_notes-00000-base", "hedge"),
        ("feedback.v6.declarative.study_titles-00000-base", "rejected_then_answer"),
        ("feedback.v6.procedural.metric_replies-00000-base", "markdown_preamble"),
        ("feedback.v6.procedural.prose_steps-00030-base", "markdown_preamble"),
        ("feedback.v6.procedural.verdict_label-00000-base", "markdown_preamble"),
        ("feedback.v6.procedural.verdict_label-00030-base", "markdown_preamble")}),
    "implicitmem-v6": ((151, 144), {
        ("implicitmem.conditioning6.api_timeout-00000-cue", "other_words"),
        ("implicitmem.conditioning6.api_timeout-00000-control", "other_words"),
        ("implicitmem.conditioning6.cleanup-00000-control", "other_words"),
        ("implicitmem.conditioning6.directory-00000-control", "other_words"),
        ("implicitmem.conditioning6.protocol-00000-cue", "other_words"),
        ("implicitmem.conditioning6.protocol-00000-control", "other_words"),
        ("implicitmem.procedural6.reversed_copy-00000-base", "hedge")}),
}


@pytest.fixture(scope="module")
def v6_own(built_dist: Path, indexes: dict) -> list[dict]:
    records = [r for r in answer_corpus.load_corpus() if r["release"] in V6_OWN]
    return answer_corpus.score_corpus(records, built_dist, {}, indexes=indexes)


@pytest.mark.parametrize("release", V6_OWN)
def test_the_v6_releases_read_the_replies_written_for_their_own_items_as_measured(
        v6_own: list[dict], built_dist: Path, release: str) -> None:
    """Every family of the release, both splits or both arms, six styles. Agreement is below
    99% (feedback-v6 128 of 140, implicitmem-v6 144 of 151); the misses are listed above and
    none is an abstention scored right or a wrong answer scored right. Judge-scored families
    are routed to the judge."""
    rows = [r for r in v6_own if r["release"] == release]
    assert {r["family"] for r in rows} == {
        p.stem for p in (built_dist / release / "data").glob("*.jsonl")}
    assert {r["style"] for r in rows} == set(answer_corpus.STYLES)
    assert all(r["scored"] == "judge" for r in rows if r["label"] == "judge")
    counted = _counted(rows)
    (size, agree), misses = V6_MEASURED[release]
    assert (len(counted), sum(r["scored"] == r["label"] for r in counted)) == (size, agree)
    assert {(r["id"], r["style"]) for r in counted if r["scored"] != r["label"]} == misses
    assert not [r["where"] for r in counted
                if r["label"] in ("abstain", "wrong") and r["scored"] == "right"]


#: The replies written for the v6 releases' own items, scored on their version 7 twins (the
#: same items under new ids, read with reading version 5): (counted, agreeing) and every
#: disagreement left. The one left is a roast chicken told as "the bird", which prose_steps'
#: pattern (it wants the word) cannot place: a judge's reading.
V7_OF = {"feedback-v6": "feedback-v7", "implicitmem-v6": "implicitmem-v7"}
V7_MEASURED = {
    "feedback-v6": ((140, 139), {
        ("feedback.v6.procedural.prose_steps-00030-base", "markdown_preamble")}),
    "implicitmem-v6": ((151, 151), set()),
}


@pytest.fixture(scope="module")
def v7_own(built_dist: Path, indexes: dict) -> list[dict]:
    records = [r for r in answer_corpus.load_corpus() if r["release"] in V7_OF]
    return answer_corpus.score_corpus(records, built_dist,
                                      {old: built_dist / new for old, new in V7_OF.items()},
                                      indexes=indexes)


@pytest.mark.parametrize("release", sorted(V7_OF))
def test_the_v7_releases_read_the_replies_written_for_the_v6_items(
        v7_own: list[dict], release: str) -> None:
    """Reading version 5 fixes every miss of version 4 on these replies but one (feedback-v6
    128 -> 139 of 140, implicitmem-v6 144 -> 151 of 151), and scores no abstention and no
    wrong answer right."""
    counted = _counted([r for r in v7_own if r["release"] == release])
    (size, agree), misses = V7_MEASURED[release]
    assert (len(counted), sum(r["scored"] == r["label"] for r in counted)) == (size, agree)
    assert {(r["id"], r["style"]) for r in counted if r["scored"] != r["label"]} == misses
    assert not [r["where"] for r in counted
                if r["label"] in ("abstain", "wrong") and r["scored"] == "right"]


#: What every corpus reply reads as under reading versions 2, 3 and 4, as the code read them
#: before reading version 5 was added (one letter a reply, in corpus order: right, wrong,
#: abstain, unscorable, judge), each record scored on the release it was written for.
FROZEN_VERDICTS = REPO / "tests" / "answer_corpus" / "verdicts-v2-v4.json"


@pytest.mark.parametrize("version", [2, 3, 4])
def test_reading_versions_2_to_4_read_every_reply_as_before(built_dist: Path, indexes: dict,
                                                             version: int) -> None:
    """Reading version 5 changes nothing of what the frozen versions make of a reply."""
    before = json.loads(FROZEN_VERDICTS.read_text(encoding="utf-8"))
    records = [r for r in answer_corpus.load_corpus() if r["release"] not in V8_OWN]
    rows = answer_corpus.score_corpus(records, built_dist, {}, None, None, version,
                                      indexes=indexes)
    now = "".join(r["scored"][0] for r in rows)
    assert len(now) == len(before[str(version)])
    assert [r["where"] for r, was in zip(rows, before[str(version)], strict=True)
            if r["scored"][0] != was] == []


#: The replies written for feedback-v8's own items (tests/answer_corpus/feedback-v8.jsonl: the
#: five procedural datasets, a user of each convention, six styles each, and five replies
#: for the two classes fixed before publication: key terms in other word forms, right, and a
#: plain explanation of another clause, wrong): (counted, agreeing) and every disagreement
#: left (none: the plain explanation that says "specialise" and "trade" once each, which
#: summary_line's first pattern read as no mention of "specialises", agrees now).
V8_MEASURED = ((65, 65), set())


def test_feedback_v8_reads_the_replies_written_for_its_own_items(
        built_dist: Path, indexes: dict) -> None:
    """Both conventions of every procedural dataset: the user's form right, the other half's
    form ("Ruling: No." for a "Verdict:" user, metres for an imperial user) wrong."""
    records = [r for r in answer_corpus.load_corpus() if r["release"] in V8_OWN]
    counted = _counted(answer_corpus.score_corpus(records, built_dist, {}, indexes=indexes))
    (size, agree), misses = V8_MEASURED
    assert (len(counted), sum(r["scored"] == r["label"] for r in counted)) == (size, agree)
    assert {(r["id"], r["style"]) for r in counted if r["scored"] != r["label"]} == misses
    assert not [r["where"] for r in counted
                if r["label"] in ("abstain", "wrong") and r["scored"] == "right"]
    # Each of the five datasets has replies to users of both conventions.
    held: dict[str, set[str]] = {}
    for row in counted:
        data = built_dist / "feedback-v8" / "data" / f"{row['family']}.jsonl"
        for line in data.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["group"] == row["group"]:
                held.setdefault(row["family"], set()).add(record["fields"]["preference"])
    assert sorted(held) == [f"feedback.v8.procedural.{name}" for name in sorted(
        ("metric_replies", "prose_steps", "summary_line", "quote_first", "verdict_label"))]
    assert all(len(conventions) == 2 for conventions in held.values()), held


def _example(folder: Path, family: str, group: int) -> str:
    """The gold example of a base record of a built feedback release, by family and group."""
    for line in (folder / "data" / f"{family}.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["group"] == group:
            return record["answer"]["example"]
    raise AssertionError(f"{family} has no group {group}")


def test_the_replies_for_version_6_items_agree_on_the_feedback_v8_items_that_kept_them(
        built_dist: Path) -> None:
    """feedback-v8 keeps version 7's items except where a procedural user now holds the other
    convention or metric_replies asks another question: on every item whose right answer is
    version 7's, each reply written for version 6's item reads as labelled (105 of 105), and
    the items that changed are exactly groups 0 and 30 (user 0) of the three datasets where
    that user now holds the other convention."""
    records = [r for r in answer_corpus.load_corpus() if r["release"] == "feedback-v6"]
    rows = answer_corpus.score_corpus(records, built_dist,
                                      {"feedback-v6": built_dist / "feedback-v8"})
    kept, changed = [], set()
    for row in rows:
        twin = {v: row["family"].replace("feedback.v6.", f"feedback.{v}.") for v in ("v7", "v8")}
        same = (_example(built_dist / "feedback-v7", twin["v7"], row["group"])
                == _example(built_dist / "feedback-v8", twin["v8"], row["group"]))
        if same:
            kept.append(row)
        else:
            changed.add((row["family"].rsplit(".", 1)[1], row["group"]))
    counted = _counted(kept)
    assert (len(counted), sum(r["scored"] == r["label"] for r in counted)) == (105, 105)
    assert changed == {(name, group) for name in ("metric_replies", "prose_steps",
                                                  "verdict_label") for group in (0, 30)}
