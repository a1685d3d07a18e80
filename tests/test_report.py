"""``memspec report`` and ``memspec preview`` in a real headless browser (Debian's chromium,
driven by Playwright): the pages load with no console error and no request beyond the file
itself, and show what they should."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from test_spec_language import tree  # noqa: F401

from conftest import REPO, bundled_release, release_instances, run_cli
from memspec.engine.checks import messages_tokens

ARTIFACTS = REPO / "tests" / "artifacts"


class Loaded:
    """A page opened from a file, with everything it logged and requested."""

    def __init__(self, browser, path: Path, screenshot: str) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.console: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")
        # Every folded section opened, as a reader would to look at all of it.
        self.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        ARTIFACTS.mkdir(exist_ok=True)
        self.screenshot = ARTIFACTS / screenshot
        self.page.screenshot(path=str(self.screenshot), full_page=False)

    def count(self, selector: str) -> int:
        return self.page.locator(selector).count()


def test_the_report_loads_clean_and_shows_every_family(browser, built_dist: Path,
                                                        tmp_path: Path) -> None:
    release = bundled_release(built_dist, "memorychecks-v1")
    out = tmp_path / "report.html"
    result = run_cli("report", str(release), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "audit passed" in result.stdout
    instances = release_instances(release)
    manifest = json.loads((release / "manifest.json").read_text())

    loaded = Loaded(browser, out, "report-memorychecks-v1.png")
    assert loaded.console == []
    assert loaded.requests == [out.as_uri()], "the page fetched something"
    assert loaded.screenshot.stat().st_size > 10_000
    families = manifest["counts"]["families"]
    assert loaded.count("section.family") == len(families)
    first_group = Counter(i["family"] for i in instances if i["group"] == 0)
    assert loaded.count(".instance") == sum(min(n, 12) for n in first_group.values())
    # One row per adversary and family (and the paradigm pooled) that had a cue to pick by,
    # as the audit finds them, and every chart drawn: gold positions, and a length histogram
    # per phase.
    from memspec.audit.run import audit_instances

    adversary_rows = loaded.page.locator("details#audit table").first.locator("tbody tr")
    assert adversary_rows.count() == len(audit_instances(instances).rows)
    # Sorted from the strongest adversary: p after Holm never falls down the table.
    holm = [float(cells[6]) for cells in (row.locator("td").all_text_contents()
                                          for row in adversary_rows.all())]
    assert holm == sorted(holm)
    pairs = {(i["family"], p["axis"], p["a"], p["b"]) for i in instances
             for p in i["analysis"].get("paired", [])}
    assert loaded.count("svg") == 1 + len({p["phase"] for i in instances for p in i["phases"]
                                           if p["messages"]}) + len(pairs)
    assert "The audit passed." in loaded.page.inner_text("body")
    bars = loaded.page.locator("svg rect title").all_text_contents()
    assert "memorychecks.binding.topic_partner: option A 72" in bars
    # A table of contents whose every entry leads to its section, and every chart says what
    # it counts.
    links = loaded.page.locator("nav.contents a").evaluate_all("a => a.map(x => x.hash)")
    assert links[:6] == ["#counts", "#balance", "#lengths", "#arms", "#audit", "#examples"]
    # And under the examples, a link to each family's own.
    assert links[6:] == [f"#family-{family}" for family in sorted(families)]
    assert all(loaded.page.locator(f'[id="{anchor[1:]}"]').count() == 1 for anchor in links)
    body = loaded.page.inner_text("body")
    assert body.count("What the chart counts") == 1 and body.count("What the charts count") == 1
    # Each family's lengths, phase by phase, besides the pooled histograms.
    lengths = loaded.page.locator("h3:has-text('Lengths per family') + div table tbody tr")
    assert lengths.count() == len({(i["family"], p["phase"]) for i in instances
                                   for p in i["phases"] if p["messages"]})


def test_the_report_shows_feedback_actions_lettered_options_and_near_misses() -> None:
    from memspec.audit.run import AuditReport, AuditRow
    from memspec.release.html_page import instance_html
    from memspec.report.report import _audit_section

    instance = {"id": "f-00000-base", "variant": "base", "phases": [],
                "feedback": [{"action": "like", "round": 1, "terminated": False},
                             {"action": "copy", "round": 2, "terminated": True}],
                "answer": {"scorer": "choice", "gold": "Granite Room", "gold_index": 2,
                           "options": ["Room 6E", "Atrium", "Granite Room"]}}
    card = instance_html(instance)
    assert "round 1: like; round 2: copy (the session ends)" in card
    assert "A) Room 6E; B) Atrium; C) Granite Room" in card and "<b>gold</b>: C) Granite" in card
    rows = [AuditRow("weak", "f", 10, 30, 1 / 3, 0.6, 1.0),
            AuditRow("near", "f", 16, 30, 1 / 3, 0.01, 0.08),
            AuditRow("strong", "f", 29, 30, 1 / 3, 1e-9, 1e-8)]
    html = "".join(_audit_section(AuditReport(rows=rows)))
    assert html.index(">strong<") < html.index(">near<") < html.index(">weak<")
    assert 'class="near">near miss (p 0.01 before Holm)' in html
    assert "(1 here)" in html and 'class="fail">FAIL' in html
    # The terminal's table says the same, in the same order.
    from rich.console import Console

    from memspec.report.report_format import audit_table

    console = Console(width=200, record=True)
    console.print(audit_table(AuditReport(rows=rows)))
    lines = [line for line in console.export_text().splitlines() if "│ f " in line]
    assert [line.split("│")[1].strip() for line in lines] == ["strong", "near", "weak"]
    assert "near miss (p 0.01 before Holm)" in lines[1]


def test_the_report_sets_paired_arms_side_by_side_with_the_group_as_unit(
        browser, built_dist: Path, tmp_path: Path) -> None:
    release = bundled_release(built_dist, "example-v3")
    out = tmp_path / "report.html"
    assert run_cli("report", str(release), "--out", str(out)).returncode == 0
    instances = release_instances(release)
    loaded = Loaded(browser, out, "report-arms-example-v3.png")
    assert loaded.console == []
    charts = loaded.page.locator("details#arms div.charts").first.locator("svg")
    # The one paired family: its judged treatment beside its control.
    assert charts.count() == 1
    assert charts.locator("title").first.text_content() == \
        "example.priming.harbour_fog: arm = experimental vs control"
    bars = charts.locator("rect title").all_text_contents()
    notes = charts.locator("text[fill='#555']").all_text_contents()
    paired = [i for i in instances if i["family"] == "example.priming.harbour_fog"]
    phases = sorted({p["phase"] for i in paired for p in i["phases"]})
    assert len(bars) == 2 * len(phases) and len(notes) == len(phases)
    groups = sorted({i["group"] for i in paired})
    def words(i: dict, phase: str) -> list[str]:
        return [m["content"] for p in i["phases"] if p["phase"] == phase for m in p["messages"]]

    for phase, note in zip(phases, notes, strict=True):
        by_arm = {(i["group"], i["axes"]["arm"]): i for i in paired}
        for arm in ("experimental", "control"):
            # One instance a group and arm here: the mean over groups of its tokens.
            mean = sum(messages_tokens(p["messages"]) for g in groups
                       for p in by_arm[g, arm]["phases"] if p["phase"] == phase) / len(groups)
            assert f"{phase}: {arm} {mean:.1f}".removesuffix(".0") + " tokens" in bars
        same = sum(words(by_arm[g, "experimental"], phase) == words(by_arm[g, "control"], phase)
                   for g in groups)
        assert note == f"same text in {same}/{len(groups)} groups"
    # Only the priming text differs between the arms; interference and probe are shared.
    assert notes == ["same text in 12/12 groups", "same text in 0/12 groups",
                     "same text in 12/12 groups"]
    body = loaded.page.inner_text("body")
    assert "What the paired-arm charts count" in body


def test_arm_comparisons_average_within_a_group_before_across_groups() -> None:
    from memspec.release.arm_charts import compare_arms

    def item(group: int, arm: str, rotation: str, words: int) -> dict:
        return {"family": "f", "group": group, "axes": {"arm": arm, "rotation": rotation},
                "analysis": {"paired": [{"axis": "arm", "a": "x", "b": "y"}]},
                "phases": [{"phase": "probe", "messages": [
                    {"role": "user", "content": " ".join(["w"] * words)}]}]}

    # At each level of the other axes (here one rotation), arm by arm over the groups.
    instances = [item(0, "x", "r0", 2), item(0, "y", "r0", 2), item(1, "x", "r0", 9),
                 item(1, "y", "r0", 1)]
    rows = compare_arms(instances)[0].rows
    assert [(r.level, r.means, r.groups, r.same) for r in rows] == \
        [("rotation=r0", (5.5, 1.5), 2, 1)]
    # Group 0 has two variants of arm x (2 and 4 tokens, mean 3), group 1 one (9 tokens): the
    # mean of group means is 6, not the instance mean 5.
    pooled = [dict(i, axes={"arm": i["axes"]["arm"]}) for i in instances]
    pooled.insert(1, item(0, "x", "r1", 4) | {"axes": {"arm": "x"}})
    (row,) = compare_arms(pooled)[0].rows
    assert row.level == "all" and row.means == ((3 + 9) / 2, 1.5) and row.same == 0


@pytest.mark.parametrize("width", [1400, 800])
def test_report_and_preview_fit_the_window_with_variants_in_a_grid(
        browser, built_dist: Path, tmp_path: Path, width: int) -> None:
    report, preview = tmp_path / "report.html", tmp_path / "preview.html"
    assert run_cli("report", str(bundled_release(built_dist, "example-v3")), "--out",
                   str(report)).returncode == 0
    # A family of 72 variants (a condition crossed with option rotations, four designs).
    assert run_cli("preview", "trustgap.memory_trust.airline", "--groups", "1", "--out",
                   str(preview)).returncode == 0
    for path in (report, preview):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(path.as_uri())
        page.screenshot(path=str(ARTIFACTS / f"{path.stem}-{width}.png"), full_page=False)
        # Nothing runs off the side: every variant is on the page, none behind a scrollbar.
        overflowing = page.evaluate(
            "() => [...document.querySelectorAll('body *')].filter(e => "
            "e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.tagName)")
        assert overflowing == [] and page.evaluate(
            "document.documentElement.scrollWidth <= window.innerWidth"), path
        if path == preview:
            # A row per condition, and every variant of the group shown.
            rows = page.locator(".axis-row > h4").all_text_contents()
            assert rows and all(r.startswith("design = ") or r.startswith("condition = ")
                                for r in rows)
            group = run_cli("generate", "trustgap.memory_trust.airline", "--groups", "1")
            assert page.locator(".instance").count() == len(group.stdout.splitlines()) > 12
        page.close()


def test_the_report_is_the_same_bytes_every_time(built_dist: Path, tmp_path: Path) -> None:
    release = bundled_release(built_dist, "example-v1")
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    for out in (first, second):
        assert run_cli("report", str(release), "--out", str(out)).returncode == 0
    assert first.read_bytes() == second.read_bytes()


def test_the_preview_sets_arms_side_by_side_and_marks_only_what_differs(
        browser, tmp_path: Path) -> None:
    out = tmp_path / "preview.html"
    result = run_cli("preview", "implicitmem.priming.alchemy", "--groups", "2", "--out",
                     str(out))
    assert result.returncode == 0, result.stderr
    loaded = Loaded(browser, out, "preview-implicitmem-priming-alchemy.png")
    assert loaded.console == [] and loaded.requests == [out.as_uri()]
    assert loaded.count("section.group") == 2
    for group in range(2):
        row = loaded.page.locator(f'section.group[data-group="{group}"] .variants')
        ids = [row.locator(".instance").nth(k).get_attribute("data-id") for k in range(2)]
        assert ids == [f"implicitmem.priming.alchemy-{group:05d}-experimental",
                       f"implicitmem.priming.alchemy-{group:05d}-control"]
        # Side by side: the control's card starts to the right of the experimental one.
        boxes = [row.locator(".instance").nth(k).bounding_box() for k in range(2)]
        assert boxes[1]["x"] >= boxes[0]["x"] + boxes[0]["width"]
        assert abs(boxes[1]["y"] - boxes[0]["y"]) < 1
        control = row.locator(".instance").nth(1)
        # The priming differs between the arms; the interference and probe are identical.
        phases = control.locator(".phase")
        assert phases.nth(0).locator("mark").count() > 0
        assert phases.nth(1).locator("mark").count() == 0
        assert phases.nth(2).locator("mark").count() == 0
        assert row.locator(".instance").nth(0).locator("mark").count() == 0
    assert loaded.count(".problems") == 0


def test_the_preview_lists_failing_checks_instead_of_stopping(project_copy: Path,
                                                              tmp_path: Path) -> None:
    family = project_copy / "specs/families/implicitmem/priming/alchemy.yaml"
    text = family.read_text().replace("tolerance: 0.3", "tolerance: 0.001")
    family.write_text(text)
    out = tmp_path / "preview.html"
    result = run_cli("preview", "implicitmem.priming.alchemy", "--out", str(out),
                     root=project_copy)
    assert result.returncode == 0, result.stderr
    html = out.read_text()
    assert '<div class="problems">' in html and "check length_ratio failed" in html
    assert html.count('<section class="group"') == 3


def test_report_and_preview_refuse_bad_input_with_exit_2(tmp_path: Path) -> None:
    missing = run_cli("report", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.html"))
    assert missing.returncode == 2 and "release folder not found" in missing.stderr
    unknown = run_cli("preview", "no.such.family", "--out", str(tmp_path / "p.html"))
    assert unknown.returncode == 2 and "no.such.family" in unknown.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "p.html").exists()


def test_highlight_marks_changed_phrases_whole_and_escapes() -> None:
    from memspec.release.html_page import highlight

    assert highlight("the cat sat on the mat", "the dog sat on a mat") == \
        "the <mark>cat</mark> sat on <mark>the</mark> mat"
    assert highlight("a new <b> phrase here.", "a <b> here.") == \
        "a <mark>new</mark> &lt;b&gt; <mark>phrase</mark> here."
    assert highlight("one two three", "zero") == "<mark>one two three</mark>"
    assert highlight("same", "same") == "same" and highlight("x & y", None) == "x &amp; y"


def test_the_preview_keeps_a_group_to_its_time_budget(project_copy: Path,
                                                      tmp_path: Path) -> None:
    probe = project_copy / "templates" / "example" / "reversed_copy" / "probe.j2"
    probe.write_text(probe.read_text() + "{% for i in range(10000) %}{% for j in range(10000) %}"
                     "{% endfor %}{% endfor %}\n")
    out = tmp_path / "preview.html"
    result = run_cli("preview", "example.procedural.reversed_copy", "--out", str(out),
                     root=project_copy, env={"MEMSPEC_GROUP_SECONDS": "1"}, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "probe.j2:5:1: group 0 took longer than 1 s" in result.stderr
    assert not out.exists()


def test_the_preview_leaves_balance_to_the_whole_release(tree: Path,  # noqa: F811
                                                          tmp_path: Path) -> None:
    # A balance that one group cannot hold (both variants draw the same first word): the
    # preview names it as a check of the whole release, with its counts, and fails nothing;
    # a run of that one group is refused for it, so the check is real.
    family = tree / "specs/families/lab/recall_words.yaml"
    family.write_text(family.read_text() + "checks:\n  - {kind: balanced, of: \"words[0]\", "
                      "values: [apple, brick, cloud]}\n")
    out = tmp_path / "preview.html"
    result = run_cli("preview", "lab.recall.words", "--groups", "1", "--out", str(out),
                     root=tree)
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "Checks that fail" not in page and "unbalanced" not in page
    assert "Checks that need the whole release" in page and "<code>words[0]</code>" in page
    assert "not over the 1 group(s) shown here" in page
    generated = run_cli("generate", "lab.recall.words", "--groups", "1", root=tree)
    assert generated.returncode == 1 and "is unbalanced" in generated.stderr
