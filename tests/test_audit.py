"""``memspec audit``: memoryless adversaries must not beat chance on any bundled release, and
must catch releases flawed in the way each is built to catch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from conftest import REPO, run_cli
from generator.audit import audit_instances

RELEASES = sorted(p.stem for p in (REPO / "specs" / "releases").glob("*.yaml"))


@pytest.mark.parametrize("name", RELEASES)
def test_every_bundled_release_passes_its_audit(built_dist: Path, name: str) -> None:
    result = run_cli("audit", str(built_dist / name), "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and not any(row["failed"] for row in report["rows"])


def _item(family: str, group: int, probe: str, options: list[str], gold: int) -> dict:
    return {"id": f"{family}-{group:05d}-base", "family": family, "group": group,
            "phases": [{"phase": "probe", "messages": [{"role": "user", "content": probe}]}],
            "answer": {"scorer": "choice", "options": options, "gold": options[gold],
                       "gold_index": gold}}


NOUNS = ["anchor", "basket", "candle", "drawer", "easel", "funnel", "garnet", "hinge",
         "ingot", "jigsaw", "kettle", "ladder", "magnet", "napkin", "oyster", "pulley",
         "quiver", "ribbon", "saddle", "thimble", "urchin", "violin", "walnut", "yarrow"]


def _options(group: int) -> list[str]:
    return [NOUNS[(group + k * 7) % len(NOUNS)] for k in range(3)]


def test_a_fair_family_passes() -> None:
    items = [_item("lab.fair", g, "Which one did I lend you?", _options(g), g % 3)
             for g in range(24)]
    report = audit_instances(items)
    assert report.ok
    for row in report.rows:
        assert row.trials == 24 and row.hits <= 12, row


def test_gold_always_first_is_caught_by_the_position_prior() -> None:
    items = [_item("lab.first", g, "Which one did I lend you?", _options(g), 0)
             for g in range(24)]
    report = audit_instances(items)
    assert not report.ok
    failed = {r.check for r in report.rows if r.failed}
    # Caught by the position prior and by the classifier (which learns position from the
    # other folds); the length and word adversaries break ties at random, not by position.
    assert failed == {"position_prior", "probe_classifier"}
    row = next(r for r in report.rows if r.check == "position_prior")
    assert row.hits == 24
    assert row.p_value == pytest.approx(binomtest(24, 24, 1 / 3, alternative="greater").pvalue)


def test_a_probe_that_names_the_answer_is_caught_by_lexical_overlap() -> None:
    items = []
    for g in range(24):
        options = _options(g)
        gold = g % 3
        items.append(_item("lab.leaky", g, f"Was it the {options[gold]} I lent you last week?",
                           options, gold))
    report = audit_instances(items)
    failed = {r.check for r in report.rows if r.failed}
    # The words give it away (to the embedding model too); position and length do not.
    assert {"lexical_overlap", "embedding_nearest"} <= failed
    assert not failed & {"position_prior", "longest_option", "shortest_option"}


def test_a_longer_right_answer_is_caught_by_the_length_adversary() -> None:
    items = []
    for g in range(24):
        options = _options(g)
        gold = g % 3
        options[gold] = f"the {options[gold]} with the brass handle"
        items.append(_item("lab.long", g, "Which one did I lend you?", options, gold))
    failed = {r.check for r in audit_instances(items).rows if r.failed}
    assert {"longest_option", "probe_classifier"} <= failed
    assert "position_prior" not in failed


def test_audit_cli_exits_1_on_a_flawed_release(project_copy: Path, tmp_path: Path) -> None:
    family = project_copy / "specs/families/example/meeting_room.yaml"
    text = family.read_text()
    # Without its rotations the right room always comes first.
    text = text.replace("""      rotation:
        values: [r0, r1, r2]
        transform: {name: rotate, args: {slot: options}}
""", "")
    text = text[:text.index("checks:")].replace('  evidence: "{{ current }}"\n', "")
    family.write_text(text)
    release = project_copy / "specs/releases/flawed-v1.yaml"
    release.write_text("name: flawed\nversion: v1\nseed: 3\ndescription: gold first\n"
                       "families:\n  - family: example.choice.meeting_room\n    groups: 30\n")
    out = tmp_path / "out"
    refused = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    assert "audit: position_prior beats chance on example.choice.meeting_room: 30/30" in \
        refused.stderr
    assert "--allow-audit-failures" in refused.stderr
    assert not out.exists() and not (project_copy / "manifests/flawed-v1.json").exists()

    allowed = run_cli("freeze", str(release), "--out", str(out), "--allow-audit-failures",
                      root=project_copy)
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: audit failure recorded: position_prior" in allowed.stderr
    manifest = json.loads((project_copy / "manifests/flawed-v1.json").read_text())
    recorded = {(f["check"], f["family"]) for f in manifest["audit"]["failures"]}
    assert ("position_prior", "example.choice.meeting_room") in recorded
    card = (out / "flawed-v1" / "README.md").read_text()
    assert "## Audit failures" in card and "| position_prior |" in card
    # Pinned like everything else: the release rebuilds byte for byte, failures and all.
    rebuilt = run_cli("verify", str(out / "flawed-v1"), "--regenerate", root=project_copy)
    assert rebuilt.returncode == 0, rebuilt.stderr

    result = run_cli("audit", str(out / "flawed-v1"), root=project_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "position_prior beats chance on example.choice.meeting_room: 30/30" in result.stderr


def test_without_the_audit_extra_the_embedding_adversary_is_reported_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import generator.audit as audit

    monkeypatch.setattr(audit, "_embedding_available", lambda: False)
    items = [_item("lab.fair", g, "Which one did I lend you?", _options(g), g % 3)
             for g in range(24)]
    report = audit.audit_instances(items)
    assert report.unavailable == ["embedding_nearest (install memspec[audit])"]
    assert "embedding_nearest" not in {r.check for r in report.rows}
    assert report.ok and len(report.rows) == 6
