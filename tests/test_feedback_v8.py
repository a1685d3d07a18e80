"""feedback-v8: version 7's declarative records unchanged; metric_replies' requests hold no part
of their answer; and in every procedural dataset two conventions, each held by a random half
of the users, so that only a user's own sessions say which form passes."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import REPO, bundled_releases, release_instances
from memspec.analysis.score import outcome

PROCEDURAL = ("metric_replies", "prose_steps", "summary_line", "quote_first", "verdict_label")
#: Units and numbers a request would name if it held the quantity its answer converts.
UNIT_OR_NUMBER = re.compile(
    r"\d|\b(?:miles?|mph|pounds?|lbs?|feet|foot|ft|inch(?:es)?|ounces?|oz|gallons?|pints?|yards?"
    r"|fahrenheit|celsius|km|kilomet(?:er|re)s?|met(?:er|re)s?|cm|mm|kg|kilo(?:gram)?s?"
    r"|grams?|lit(?:er|re)s?|degrees?)\b|°", re.I)


@pytest.fixture(scope="module")
def built(built_dist: Path) -> Path:
    """feedback-v7 and -v8, built and verified against their committed manifests: the
    session's one build of every bundled release, not built a second time here (read only)."""
    return bundled_releases(built_dist, "feedback-v7", "feedback-v8")


@pytest.fixture(scope="module")
def v8(built: Path) -> list[dict]:
    return release_instances(built / "feedback-v8")


def _family(instances: list[dict], name: str) -> list[dict]:
    return [i for i in instances if i["family"].endswith(f".procedural.{name}")]


def _task(instance: dict) -> str:
    return next(p for p in instance["phases"] if p["phase"] == "task")["messages"][0]["content"]


def _without_ids(instance: dict) -> str:
    """An instance as text with every version segment of its ids set aside."""
    return re.sub(r"feedback\.v\d+\.", "feedback.", json.dumps(instance, sort_keys=True))


def test_the_declarative_records_are_version_7s(built: Path, v8: list[dict]) -> None:
    v7 = {i["id"].replace(".v7.", "."): i for i in release_instances(built / "feedback-v7")}
    declarative = [i for i in v8 if ".declarative." in i["family"]]
    assert len(declarative) == 7 * 40
    assert all(_without_ids(i) == _without_ids(v7[i["id"].replace(".v8.", ".")])
               for i in declarative)


def test_no_metric_request_names_a_unit_or_a_value(built: Path, v8: list[dict]) -> None:
    """Version 7 asked "How far is a 10-mile run?" (a quantity the answer only converts):
    every one of its 40 requests names a unit and a number. Version 8's name neither."""
    old = _family(release_instances(built / "feedback-v7"), "metric_replies")
    assert all(UNIT_OR_NUMBER.search(_task(i)) for i in old)
    new = _family(v8, "metric_replies")
    assert len(new) == 40
    assert [_task(i) for i in new if UNIT_OR_NUMBER.search(_task(i))] == []


@pytest.mark.parametrize("name", PROCEDURAL)
def test_each_convention_is_held_by_half_the_users(v8: list[dict], name: str) -> None:
    """Ten users a dataset, five of each convention, one convention for all four of a user's
    records (three training records and the test record)."""
    by_user: dict[str, set[str]] = defaultdict(set)
    for instance in _family(v8, name):
        by_user[instance["fields"]["user"]].add(instance["fields"]["preference"])
    assert len(by_user) == 10 and all(len(held) == 1 for held in by_user.values())
    assert sorted(Counter(next(iter(h)) for h in by_user.values()).values()) == [5, 5]


@pytest.mark.parametrize("name", PROCEDURAL)
def test_only_the_users_own_form_passes(v8: list[dict], name: str) -> None:
    """On every record the user's form (the gold's example) is right and the other half's
    form (the distractor the family declares) wrong: a system that answers every user of the
    dataset in one form is right on exactly half of them."""
    records = _family(v8, name)
    for instance in records:
        assert outcome(instance, instance["answer"]["example"]).correct, instance["id"]
        other = instance["answer"]["distractors"]
        form = other.get("other_system") or other.get("other_form") or other["other_label"]
        assert outcome(instance, form).correct is False, instance["id"]
    # One fixed form (the first user's) for every record: right for exactly half.
    first = {i["fields"]["user"]: i for i in records}["0"]["fields"]["preference"]
    assert sum(i["fields"]["preference"] == first for i in records) == 20


def test_the_convention_baselines_fell() -> None:
    """The audit's convention baseline (a system that copies the form of another test item's
    right answer) as each release's manifest records it: 1.0 on four of the five procedural
    datasets of version 7, at most 0.6 on every one of version 8."""
    def baselines(release: str) -> dict[str, float]:
        manifest = json.loads((REPO / "manifests" / f"{release}.json").read_text())
        return {k.rsplit(".", 1)[1]: v for k, v in manifest["audit"]["conventions"].items()
                if ".procedural." in k}
    assert sorted(baselines("feedback-v7").values()) == [0.0, 1.0, 1.0, 1.0, 1.0]
    assert max(baselines("feedback-v8").values()) <= 0.6
    assert set(baselines("feedback-v8")) == set(PROCEDURAL)


def _record(instances: list[dict], name: str, group: int) -> dict:
    return next(i for i in _family(instances, name) if i["group"] == group)


def _logged_replies(instance: dict) -> list[str]:
    history = next(p for p in instance["phases"] if p["phase"] == "history")["messages"]
    return [m["content"] for m in history if m["role"] == "assistant"]


def test_summary_line_counts_a_key_term_in_any_of_its_word_forms(v8: list[dict]) -> None:
    """The pattern wanted two mentions of a concept's terms as listed ("specialises"), so a
    plain explanation saying "specialise" and "trade" once each was wrong; every word form
    counts now, and a reply naming none of the terms stays wrong."""
    instance = _record(v8, "summary_line", 31)
    assert "comparative advantage" in _task(instance)
    assert instance["fields"]["preference"] == "no summary line"
    assert outcome(instance, "Two parties both come out ahead when each chooses to specialise in "
                             "what it gives up least to produce and they trade for the rest, "
                             "even if one of them is better at everything.").correct
    assert outcome(instance, "Specialization pays: each country focuses on what it is "
                             "relatively good at and then trading leaves both richer.").correct
    assert outcome(instance, "Both sides are better off when each does the work it gives up "
                             "least to do, even if one of them is better at everything.").correct \
        is False


def test_prose_steps_reads_topic_words_as_words_in_any_form(v8: list[dict]) -> None:
    """Topic words were matched as word starts: "tapered" counted as "tape" and "taping" did
    not. A list on regripping a racket that names the grip, the handle and taping is right;
    the same list with only a "tapered" end is not about the tape."""
    instance = _record(v8, "prose_steps", 0)
    assert instance["fields"]["preference"] == "a numbered list"
    steps = ("1. Unwind the old grip from the top.\n2. Clean any glue off the handle.\n"
             "3. Press the tapered end of the new grip to the bottom of the handle.\n"
             "4. Wind it up at a slight angle, overlapping each turn.")
    assert outcome(instance, steps + "\n5. Trim the excess and finish by taping it down.").correct
    assert outcome(instance, steps + "\n5. Trim the excess and press the end down.").correct \
        is False


def test_a_plain_quote_first_reply_about_another_clause_is_wrong(v8: list[dict]) -> None:
    """A plain user's reply was checked for its form and length only: a plain explanation of
    the wrong clause passed, and echoing the last logged reply reached 11 of 40. A plain reply
    must now name two of this clause's key terms: on every plain user's record its own
    clause's explanation is right and every other clause's wrong (those asked in the dataset's
    requests and every reply of the user's logs), and echoing the last logged reply is right
    on none of the 40 records (as for the quote users, whose quotation of another clause
    never was)."""
    records = _family(v8, "quote_first")
    explanations = {i["answer"]["prior"] for i in records}
    plain = [i for i in records if i["fields"]["preference"] == "no quotation first"]
    assert len(plain) == 20 and len(explanations) > 20
    for instance in plain:
        own = instance["answer"]["prior"]
        assert outcome(instance, own).correct, instance["id"]
        others = (explanations | set(_logged_replies(instance))) - {own}
        assert [e[:60] for e in sorted(others) if outcome(instance, e).correct] == [], \
            instance["id"]
    assert [i["id"] for i in records if outcome(i, _logged_replies(i)[-1]).correct] == []
