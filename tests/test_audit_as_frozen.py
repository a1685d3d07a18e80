"""Every bundled release audited by the rules it was frozen with gives the verdicts its
manifest records; the earlier rules are the audit as it was (rules 0: choice items only, no
coverage check, two theme words for a control-arm leak), chosen by what the manifest records;
and the convention baseline is shown by ``audit`` and beside each row of ``score``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_audit_corpus import _open

from conftest import REPO, bundled_release, release_instances, run_cli
from memspec.audit.audit_frozen import VERDICT_KEYS, as_frozen_notes
from memspec.audit.audit_rules import CURRENT_RULES, FIRST_RULES, frozen_rules
from memspec.audit.run import audit_instances
from memspec.audit.score_notes import convention_baselines

#: Every committed release, by name.
RELEASES = sorted(p.stem for p in (REPO / "manifests").glob("*.json"))


def test_the_rules_of_a_release_are_those_its_manifest_records() -> None:
    """Recorded rules win; a manifest of versions 2 and 3 was frozen by rules 0, one of
    versions 4 to 6 by rules 1, and one frozen before the audit (version 1) records none."""
    assert frozen_rules({"manifest_version": 8, "audit": {"rules": 2}}) == 2
    assert frozen_rules({"manifest_version": 3, "audit": {"summary": []}}) == 0
    assert frozen_rules({"manifest_version": 2, "audit": {"summary": []}}) == 0
    assert frozen_rules({"manifest_version": 4, "audit": {"summary": []}}) == 1
    assert frozen_rules({"manifest_version": 1}) == FIRST_RULES == 0
    by_release = {name: frozen_rules(json.loads((REPO / "manifests" / f"{name}.json")
                                                .read_text())) for name in RELEASES}
    assert by_release["feedback-v3"] == by_release["implicitmem-v3"] == 0
    assert by_release["trustgap-v4"] == 1 and by_release["trustgap-v6"] == CURRENT_RULES


def _echo_family() -> list[dict]:
    """Open items whose right answer is the remembered session's last reply: the echo
    policies of rules 1 find it; rules 0 attacked choice items only."""
    items = []
    for g in range(30):
        answer = f"Use the blue ledger for batch {g}."
        items.append(_open("lab.echo", g, [{"role": "user", "content": "Which ledger?"},
                                           {"role": "assistant", "content": answer}],
                           "Which ledger again?", rf"^Use the blue ledger for batch {g}\.",
                           answer))
    return items


def test_rules_0_attack_choice_items_only_and_check_no_coverage() -> None:
    items = _echo_family()
    zero, one = audit_instances(items, rules_version=0), audit_instances(items,
                                                                         rules_version=1)
    assert zero.ok and zero.rows == [] and zero.summary()[0]["adversaries"] == \
        "no memory-only choice items"
    assert not one.ok and any(r.check.startswith("echo_") and r.failed for r in one.rows)


def test_as_frozen_says_what_it_reproduced_and_what_it_did_not() -> None:
    summary = [{"family": "a", "passed": True}, {"family": "b", "passed": True}]
    manifest = {"manifest_version": 3, "audit": {"summary": summary, "failures": []}}
    assert as_frozen_notes(summary, ["a: adversaries 'x' here, 'y' when the release was "
                                     "frozen"], manifest, None, 0) == [
        "as frozen by rules 0: every verdict of the 2 families and pooled units the manifest "
        "records is reproduced"]
    differs = ["b: passed False here, True when the release was frozen"]
    assert as_frozen_notes(summary, differs, manifest, None, 0) == [
        "NOT REPRODUCED by rules 0: " + differs[0]]
    assert "not compared" in as_frozen_notes(summary, differs, manifest, "seed 3", 0)[0]
    assert "no verdict to reproduce" in as_frozen_notes(summary, [], {"manifest_version": 1},
                                                        None, 0)[0]


@pytest.mark.parametrize("name", RELEASES)
def test_every_bundled_release_gets_its_frozen_verdicts_as_frozen(built_dist: Path,
                                                                 name: str) -> None:
    """Every version of every bundled release, audited ``--as-frozen``, passes as it passed,
    and no family's verdict (whether it passed, each area) differs from its manifest's."""
    release = bundled_release(built_dist, name)
    manifest = json.loads((release / "manifest.json").read_text())
    result = run_cli("audit", str(release), "--as-frozen", "--format", "json", timeout=1200)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["rules"] == frozen_rules(manifest)
    if not manifest.get("audit"):
        assert "no verdict to reproduce" in report["as_frozen"][0]
        return
    assert report["ok"] is (not manifest["audit"]["failures"])
    differing = [d for d in report["frozen_differences"]
                 if d.split(": ", 1)[1].split(" ", 1)[0] in VERDICT_KEYS]
    assert differing == [] and report["as_frozen"][0].startswith(
        f"as frozen by rules {report['rules']}: every verdict"), report["as_frozen"]


def test_audit_and_score_show_each_datasets_convention_baseline(built_dist: Path,
                                                                tmp_path: Path) -> None:
    """``audit`` prints every dataset's convention baseline as today's learner measures it,
    and ``score`` gives each row its own beside its scores: the one-convention feedback
    datasets at 1, whatever the memoryless system scored. (feedback-v6's card keeps what it
    was frozen with, the word-for-word copy's baseline, on those four datasets.)"""
    release = bundled_release(built_dist, "feedback-v6")
    manifest = json.loads((release / "manifest.json").read_text())
    audited = run_cli("audit", str(release), "--format", "json", timeout=1200)
    assert audited.returncode == 0, audited.stderr[-2000:]
    conventions = json.loads(audited.stdout)["conventions"]
    assert conventions == convention_baselines(release_instances(release))
    one_form = {f"feedback.v6.procedural.{name}" for name in
                ("prose_steps", "quote_first", "summary_line", "verdict_label")}
    recorded = manifest["audit"]["conventions"]
    assert {f for f in conventions if conventions[f] != recorded[f]} == one_form
    assert all(conventions[f] == 1.0 > recorded[f] for f in one_form)
    table = run_cli("audit", str(release), timeout=1200)
    assert "convention baseline" in table.stdout and "quote_first" in table.stdout
    responses = tmp_path / "memoryless.jsonl"
    made = run_cli("respond", str(release), "--policy", "memoryless", "--out", str(responses))
    assert made.returncode == 0, made.stderr
    scored = run_cli("score", str(release), str(responses), "--by", "family", "--format",
                     "json", "--resamples", "200")
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    rows = {g["key"]["family"]: g["metrics"] for g in report["groups"]}
    assert {f: m["convention"] for f, m in rows.items()} == conventions
    assert rows["feedback.v6.procedural.verdict_label"]["accuracy"] == 0.0
    overall = sum(conventions.values()) / len(conventions)  # 40 items each
    assert report["overall"]["convention"] == pytest.approx(overall)
    shown = run_cli("score", str(release), str(responses), "--by", "family",
                    "--resamples", "200")
    assert "convention" in shown.stdout.splitlines()[1]


def test_a_refused_freeze_says_what_changed_since_the_version_before(tmp_path: Path) -> None:
    """The version before was frozen by older rules (its manifest's version says which): the
    refusal of this one ends with what the audit changed since and what to declare."""
    from test_audit_located import LEAK, _project

    release = _project(tmp_path, LEAK)
    text = release.read_text().replace("version: v1", "version: v2")
    later = release.with_name("notes-v2.yaml")
    later.write_text(text)
    release.unlink()
    (tmp_path / "manifests" / "notes-v1.json").write_text(json.dumps(
        {"manifest_version": 4, "audit": {"failures": [], "summary": []}}))
    result = run_cli("freeze", str(later), "--out", str(tmp_path / "out"), root=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "echo_last_reply beats chance on lab.notes.folders" in result.stderr
    assert (f"notes-v1 was frozen by the audit's rules 1; this freeze runs rules "
            f"{CURRENT_RULES}") in result.stderr
    assert "audit rules 2: a tool result returned to a call the remembered session made is " \
        "memory" in result.stderr
    assert not (tmp_path / "out").exists()
