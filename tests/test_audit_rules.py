"""The audit's rules: one definition of what a memoryless system sees, applied by the view and
every adversary; rules that have versions, so that a release is audited again by the rules it
was frozen with (``--as-frozen``) and an author is told what changed; and the notes ``score``
prints under its first table."""

from __future__ import annotations

import copy
import json
from dataclasses import fields

import pytest
from test_audit_corpus import GROUPS, _choice, _options, _user
from test_audit_corpus_declared import declared_chance_hides_echo

from conftest import run_cli
from memspec.audit.audit_frozen import VERDICT_KEYS
from memspec.audit.audit_rules import CURRENT_RULES, FIRST_RULES, RULE_VERSIONS, running_by
from memspec.audit.audit_view import item_view, visible_phases
from memspec.audit.run import audit_instances, predictors
from memspec.audit.score_notes import (
    convention_baselines,
    convention_notes,
    pooled_row_notes,
)

LOOKUP = {"role": "tool", "content": "ledger -> the basket is on loan"}
CALL = {"role": "assistant", "content": "lookup('loans')"}
RESULT = {"role": "tool", "content": "loans -> anchor, basket"}


def _remembering(result: str) -> dict:
    """A choice item whose memory phase holds a lookup handed in first, then the remembered
    session's own call and the tool result returned to it."""
    item = _choice("lab.seen", 0, _options(0), 0)
    history = item["phases"][0]["messages"]
    item["phases"][0]["messages"] = [LOOKUP, *history, CALL, {**RESULT, "content": result}]
    return item


def test_a_memory_phase_shows_its_lookups_but_not_its_own_calls_results() -> None:
    item = _remembering(RESULT["content"])
    shown = [m for p in visible_phases(item) for m in p["messages"]]
    assert LOOKUP in shown and not any(m["content"] == RESULT["content"] for m in shown)
    with running_by(1):  # as releases frozen before rules 2 were audited
        shown = [m for p in visible_phases(item) for m in p["messages"]]
    assert LOOKUP in shown and any(m["content"] == RESULT["content"] for m in shown)


def test_no_adversary_reads_what_the_view_hides() -> None:
    """Two items that differ only in what the remembered session's call returned have the
    same view, and every option-picking adversary picks alike on them."""
    one, two = _remembering("loans -> anchor"), _remembering("loans -> candle, garnet")
    assert item_view(one) == item_view(two)
    family = {"lab.seen": [item_view(_choice("lab.seen", g, _options(g), g % 3))
                           for g in range(1, GROUPS)]}
    picks = [{name: predict({"lab.seen": [*family["lab.seen"], item_view(item)]})
              [item["id"]] for name, predict in predictors().items()
              if not name.startswith("embedding")} for item in (one, two)]
    assert picks[0] == picks[1]


def test_the_rules_a_release_was_frozen_with_reproduce_its_verdict() -> None:
    """A declared chance that hides an echo leak passed the rules the bundled releases were
    frozen by and fails today's; run as frozen, the audit gives the frozen verdict, and run
    by today's rules it says what changed since."""
    items = declared_chance_hides_echo(True)
    manifest = {"audit": {"failures": []}}  # frozen before the rules were recorded
    frozen = audit_instances(items, rules_version=1)
    today = audit_instances(items, manifest=manifest)
    assert frozen.ok and frozen.rules == 1
    assert not today.ok and today.rules == CURRENT_RULES
    assert any("declared chance" in change for change in today.rules_changes)
    as_recorded = audit_instances(items, manifest={"audit": {"failures": [], "rules": 2}},
                                  rules_version=2)
    assert as_recorded.rules_changes == []


def _pooled(view: bool, g: int) -> dict:
    item = _choice("lab.mixed", g, _options(g), g % 3,
                   probe=[{"role": "tool", "content": f"ledger: {_options(g)[g % 3]}"}]
                   if view else [_user("Think back.")])
    item["id"] += "-view" if view else "-memory"
    item["fields"] = {"suite": "safety" if view else "memory"}
    if view:
        item["answer"]["evidence"] = item["answer"]["gold"]
    return item


def test_score_names_a_pooled_row_that_mixes_evidence_in_view_with_memory() -> None:
    items = [_pooled(view, g) for g in range(6) for view in (True, False)]
    notes = pooled_row_notes(items, [])
    assert notes == ["row all pools 6 items whose evidence is in view (a system without "
                     "memory is meant to answer them) with 6 that need memory: its scores, a "
                     "memoryless one's too, mix both; score with --by suite to see them apart"]
    # Grouped by the key that sets them apart, the rows show them apart: nothing to say;
    # grouped by one that does not, each row that pools both is named.
    assert pooled_row_notes(items, ["suite"]) == []
    by_group = pooled_row_notes(items, ["group"])
    assert len(by_group) == 7 and by_group[1].startswith("row group=lab.mixed#0 pools 1 ")
    assert pooled_row_notes([i for i in items if i["fields"]["suite"] == "memory"], []) == []


def test_the_convention_baseline_is_one_where_every_item_wants_one_answer() -> None:
    """A dataset whose every item is right in one constant form is passed by a system that
    has seen one of its items; one whose answers differ is not."""
    constant = [copy.deepcopy(_choice("lab.form", g, _options(g), g % 3)) for g in range(6)]
    for item in constant:
        item["answer"] = {"scorer": "regex", "gold": r"^Verdict: ", "example": "Verdict: yes"}
    varied = [_choice("lab.varied", g, _options(g), g % 3) for g in range(6)]
    assert convention_baselines(constant + varied) == {"lab.form": 1.0, "lab.varied": 0.0}
    assert [n.split(":")[0] for n in convention_notes(constant + varied)] == [
        "convention baseline of lab.form"]


def test_the_rules_are_a_table_each_version_keeping_what_the_one_before_turned_on() -> None:
    """Rules 1 turn nothing on; each later version keeps every feature of the one before;
    a version the table lacks is refused by name."""
    names = [f.name for f in fields(RULE_VERSIONS[FIRST_RULES]) if f.name != "version"]
    assert not any(getattr(RULE_VERSIONS[FIRST_RULES], name) for name in names)
    for version in range(FIRST_RULES + 1, CURRENT_RULES + 1):
        before, now = RULE_VERSIONS[version - 1], RULE_VERSIONS[version]
        assert all(getattr(now, name) for name in names if getattr(before, name))
        assert any(getattr(now, name) != getattr(before, name) for name in names)
    with pytest.raises(ValueError, match=f"no audit rules {CURRENT_RULES + 1} "), \
            running_by(CURRENT_RULES + 1):
        pass




def test_as_frozen_gives_an_older_release_the_verdicts_recorded_at_its_freeze(
        tmp_path) -> None:
    """example-v3, frozen before the manifest recorded the audit's rules, is rebuilt byte
    for byte from its committed manifest and audited as frozen: by rules 0, it passes as it
    passed, every family with the verdict of every area its manifest records. A plain audit
    runs today's rules and lists what changed."""
    built = run_cli("freeze", "example-v3", "--out", str(tmp_path))
    assert built.returncode == 0, built.stderr
    release = tmp_path / "example-v3"
    manifest = json.loads((release / "manifest.json").read_text())
    assert "rules" not in manifest["audit"]
    as_frozen = run_cli("audit", str(release), "--as-frozen", "--format", "json")
    assert as_frozen.returncode == 0, as_frozen.stderr
    report = json.loads(as_frozen.stdout)
    assert report["rules"] == FIRST_RULES and report["rules_changes"] == []
    assert report["ok"] is (not manifest["audit"]["failures"])
    assert report["specs_skipped"] is None and report["unavailable"] == []
    # Compared with the summary frozen into the manifest, no verdict differs (the
    # adversaries' description may: the audit of that day ran no open-item policies).
    differing = {d.split(": ")[1].split(" ")[0] for d in report["frozen_differences"]}
    assert not differing & set(VERDICT_KEYS), report["frozen_differences"]
    today = run_cli("audit", str(release), "--format", "json")
    assert json.loads(today.stdout)["rules"] == CURRENT_RULES
    assert json.loads(today.stdout)["rules_changes"], today.stdout
