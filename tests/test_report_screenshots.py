"""The release report looks as it did: a fixed report (one group of two bundled example
families under a fixed seed) is opened in the headless browser at 1,400 and 800 px, and its
whole-page screenshot is compared with the reference committed in tests/screenshots/ (the
screenshot as compared: scaled down).

Fonts are drawn a little differently from one machine to another (anti-aliasing, hinting), so
the two images are compared as Chromium scales them down (8 pixels to 1, averaged) and in
grey: a block counts as changed when its grey level moved by more than ``BLOCK_TOLERANCE``,
and at most ``CHANGED_SHARE`` of the blocks may change. A moved section, a missing chart or a
changed colour moves far more.

After an intended change of the report's look, write the references anew and commit them:

    MEMSPEC_UPDATE_SCREENSHOTS=1 python -m pytest -n 0 tests/test_report_screenshots.py
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from memspec.audit.run import AuditReport, AuditRow
from memspec.engine.generate import FamilyGenerator
from memspec.engine.render import Renderer
from memspec.report.report import render_report
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

REFERENCES = REPO / "tests" / "screenshots"
ARTIFACTS = REPO / "tests" / "artifacts"
UPDATE = os.environ.get("MEMSPEC_UPDATE_SCREENSHOTS") == "1"
#: How many pixels a side of a compared block holds.
SCALE = 8
#: How far (of 255) a block's grey level may move before it counts as changed.
BLOCK_TOLERANCE = 24
#: The share of blocks that may change.
CHANGED_SHARE = 0.01

#: Decodes PNGs (base64, each with the factor to scale it down by) in the page, and returns
#: each scaled down: its grey levels and the scaled image as a PNG (base64).
_SCALED_GREY = """async (images) => {
  const out = [];
  for (const [data, scale] of images) {
    const image = new Image();
    image.src = "data:image/png;base64," + data;
    await image.decode();
    const w = Math.ceil(image.width / scale), h = Math.ceil(image.height / scale);
    const canvas = document.createElement("canvas");
    canvas.width = w; canvas.height = h;
    const context = canvas.getContext("2d");
    context.imageSmoothingEnabled = true; context.imageSmoothingQuality = "high";
    context.drawImage(image, 0, 0, w, h);
    const rgba = context.getImageData(0, 0, w, h).data;
    const grey = [];
    for (let i = 0; i < rgba.length; i += 4) {
      grey.push(Math.round(0.299 * rgba[i] + 0.587 * rgba[i + 1] + 0.114 * rgba[i + 2]));
    }
    out.push({width: w, height: h, grey: grey,
              png: canvas.toDataURL("image/png").split(",")[1]});
  }
  return out;
}"""


@pytest.fixture(scope="module")
def fixed_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a small fixed release: group 0 of a choice family (its three conditions,
    under the first option rotation) and of a paired family, under seed 7, with a fixed
    audit."""
    project = Project(REPO)
    catalog, renderer = Catalog.load(project), Renderer(project)
    families = ("example.choice.meeting_room", "example.priming.harbour_fog")
    instances = [i for f in families
                 for i in FamilyGenerator(catalog.family(f), renderer, 7).group(0)
                 if i["axes"].get("rotation", "r0") == "r0"]
    counts = {i["family"]: {"paradigm": i["paradigm"], "version": i["family_version"],
                            "groups": 1, "instances": sum(j["family"] == i["family"]
                                                          for j in instances)}
              for i in instances}
    manifest = {"release": "fixture", "version": 1, "seed": 7, "root_sha256": "0" * 64,
                "counts": {"instances": len(instances), "groups": 2, "families": counts}}
    audit = AuditReport(rows=[
        AuditRow("position_prior", families[0], 2, 6, 1 / 3, 0.68, 1.0),
        AuditRow("longest_option", families[0], 4, 6, 1 / 3, 0.1, 0.2)])
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_report(manifest, instances, audit), encoding="utf-8")
    return path


def scaled(browser, images: list[tuple[bytes, int]]) -> list[tuple[np.ndarray, bytes]]:
    """Each PNG scaled down by its factor (by Chromium): its grey levels and its PNG."""
    page = browser.new_page()
    try:
        decoded = page.evaluate(_SCALED_GREY, [[base64.b64encode(png).decode(), factor]
                                               for png, factor in images])
    finally:
        page.close()
    return [(np.array(d["grey"], dtype=np.int16).reshape(d["height"], d["width"]),
             base64.b64decode(d["png"])) for d in decoded]


def changed_share(grey: np.ndarray, reference: np.ndarray) -> float:
    """The share of blocks whose grey level moved by more than the tolerance from
    ``reference``; 1.0 when the two differ in size."""
    if grey.shape != reference.shape:
        return 1.0
    return float(np.mean(np.abs(grey - reference) > BLOCK_TOLERANCE))


def screenshots(browser, path: Path, width: int, styles: tuple[str, ...] = ("",)) -> list[bytes]:
    """The whole page at ``width`` px, every section open, once with each of ``styles``
    added, as PNG bytes."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(path.as_uri())
        # Every section opened: the look of all of it is compared (that they are closed at
        # first is test_the_contents_stay_in_view_and_sections_fold's).
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        shots = []
        for style in styles:
            page.evaluate("""css => {
                document.getElementById("added")?.remove();
                const tag = document.createElement("style");
                tag.id = "added"; tag.textContent = css; document.head.append(tag);
            }""", style)
            shots.append(page.screenshot(full_page=True, animations="disabled"))
        return shots
    finally:
        page.close()


@pytest.mark.parametrize("width", [1400, 800])
def test_the_report_looks_as_its_reference(browser, fixed_report: Path, width: int) -> None:
    (shot,) = screenshots(browser, fixed_report, width)
    # The reference is the screenshot as compared: scaled down, small enough to commit.
    reference = REFERENCES / f"report-{width}.png"
    (grey, scaled_png), = scaled(browser, [(shot, SCALE)])
    if UPDATE or not reference.exists():
        REFERENCES.mkdir(exist_ok=True)
        reference.write_bytes(scaled_png)
        if not UPDATE:
            pytest.fail(f"no reference screenshot: wrote {reference.relative_to(REPO)}; "
                        "look at it and commit it")
    (ref_grey, _), = scaled(browser, [(reference.read_bytes(), 1)])
    share = changed_share(grey, ref_grey)
    if share > CHANGED_SHARE:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / f"report-{width}-now.png").write_bytes(shot)
    assert share <= CHANGED_SHARE, (
        f"{share:.1%} of the report at {width} px changed (see tests/artifacts/); after an "
        "intended change: MEMSPEC_UPDATE_SCREENSHOTS=1")


def test_the_comparison_sees_a_moved_section_and_forgives_a_blur(
        browser, fixed_report: Path) -> None:
    shots = screenshots(browser, fixed_report, 800, (
        "",
        # Text drawn a little softer everywhere (as another machine's anti-aliasing would).
        "body { text-shadow: 0 0 0.4px #222; }",
        # The charts moved 24 px to the right; the charts in paler colours.
        "svg { position: relative; left: 24px; }",
        ".charts svg rect { opacity: 0.3; }"))
    shot, softer, moved, recoloured = (g for g, _ in scaled(browser, [(s, SCALE) for s in shots]))
    assert changed_share(softer, shot) <= CHANGED_SHARE
    assert changed_share(moved, shot) > CHANGED_SHARE
    assert changed_share(recoloured, shot) > CHANGED_SHARE


#: Every word of the tables and the contents whose letters the browser drew on more than one
#: line (a word broken inside, "resu / lt"); a break the page offers (``<wbr>``, after a dot
#: or an underscore) ends a text node, so the parts of a long name count as words.
_BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll("td, th, nav.contents")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
                                                          .map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(word[0]);
      }
    }
  }
  return broken;
}"""


def broken_words(browser, path: Path, width: int, style: str = "") -> list[str]:
    """The words broken across lines in the page at ``width`` px, every section opened."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(path.as_uri())
        if style:
            page.add_style_tag(content=style)
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        return page.evaluate(_BROKEN_WORDS)
    finally:
        page.close()


@pytest.mark.parametrize("width", [1400, 800])
def test_no_word_of_a_table_breaks_inside(browser, fixed_report: Path, width: int) -> None:
    assert broken_words(browser, fixed_report, width) == []
    # The same page with cells that may break anywhere (as the report once had them) at a
    # width that squeezes its tables: the words the check finds broken, so it can fail.
    squeezed = broken_words(browser, fixed_report, 500,
                            "td, th, nav.contents { overflow-wrap: anywhere; "
                            "word-break: break-all; } main { max-width: 20rem; }")
    assert squeezed, "the check found no broken word even where cells break anywhere"


def test_the_contents_stay_in_view_and_sections_fold(browser, fixed_report: Path) -> None:
    for width in (1400, 800):
        page = browser.new_page(viewport={"width": width, "height": 900})
        try:
            page.goto(fixed_report.as_uri())
            # Past the summary every section is closed, each heading shown.
            opened = page.evaluate("[...document.querySelectorAll('details.section')]"
                                   ".map(d => [d.id, d.open])")
            assert opened == [["counts", True], ["balance", False], ["lengths", False],
                              ["arms", False], ["audit", False], ["examples", False]]
            # A family's link opens its section and brings its example into view; the
            # contents are still on screen after the scroll.
            family = "example.priming.harbour_fog"
            link = page.locator(f'nav.contents a[href="#family-{family}"]')
            if width == 1400:
                link.click()
                assert page.evaluate("document.querySelector('#examples').open")
                top = page.evaluate(f"document.getElementById('family-{family}')"
                                    ".getBoundingClientRect().top")
                assert 0 <= top < 900
            else:  # a bar above the page: the sections, not the families
                assert not link.is_visible()
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = "
                              "true); window.scrollTo(0, document.body.scrollHeight)")
            assert page.evaluate("window.scrollY") > 0
            box = page.locator("nav.contents").bounding_box()
            assert box is not None and 0 <= box["y"] < 900
        finally:
            page.close()
