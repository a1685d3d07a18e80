"""implicitmem-v6 fixes issue #52's findings on implicitmem in its specs, pools and templates.
Each class of finding has a test here, on instances `memspec generate` renders under the
release's seed: priming passages written whole and shown in order (no two sharing a sentence),
a cleanup control arm with one right first move, the paper's conditioning categories, the
paper's count of 18 task families, conditioning wording that overlaps less than version 5's,
and the memoryless shortcuts and planted leaks the audit must catch on the new families."""

from __future__ import annotations

import itertools
import json
import re
from functools import cache

import pytest
import yaml

from conftest import REPO, run_cli
from memspec.analysis.scoring import is_correct
from memspec.audit.run import audit_instances, describe_failure
from memspec.formats.release_checks import mean_pairwise_jaccard, phase_words

SEED = "80641"  # implicitmem-v6's release seed, as v4's and v5's
RELEASE = yaml.safe_load((REPO / "specs/releases/implicitmem-v6.yaml").read_text())
GROUPS = {f["family"]: f["groups"] for f in RELEASE["families"]}
PASSAGES = yaml.safe_load(
    (REPO / "specs/pools/implicitmem/v6/priming/passages.yaml").read_text())["items"]
PRIMING = sorted(f for f in GROUPS if f.startswith("implicitmem.priming6."))
CONDITIONING = sorted(f for f in GROUPS if f.startswith("implicitmem.conditioning6."))
#: Version 6's conditioning families and their version 5 twins (the four new in version 6
#: have none).
TWINS = {f: f.replace("conditioning6", "conditioning5") for f in CONDITIONING
         if f.rsplit(".", 1)[1] in {"api_timeout", "jargon", "protocol", "schedule", "cleanup"}}


@cache
def _generate(family: str, groups: int) -> tuple[dict, ...]:
    result = run_cli("generate", family, "--seed", SEED, "--groups", str(groups))
    assert result.returncode == 0, result.stderr
    return tuple(json.loads(line) for line in result.stdout.splitlines())


def _family(family: str) -> tuple[dict, ...]:
    return _generate(family, GROUPS[family])


def _phase(instance: dict, name: str) -> list[dict]:
    return next(p["messages"] for p in instance["phases"] if p["phase"] == name)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]


def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"\w+", text)}


# --- 1. coherent priming passages -------------------------------------------------------

def test_the_pool_holds_four_written_passages_for_each_of_five_themes() -> None:
    themes = {p["theme"] for p in PASSAGES}
    assert len(themes) == 5 and len(PASSAGES) == 20
    assert all(sum(p["theme"] == t for p in PASSAGES) == 4 for t in themes)
    # Each passage carries enough of its theme's lexicon to be about it, and each control
    # note none of it (the audit checks the built release's control arms the same way).
    for p in PASSAGES:
        assert len(_words(p["scene"]) & set(p["lexicon"])) >= 3, p["key"]
        assert not _words(p["note"]) & set(p["lexicon"]), p["key"]


def test_no_two_passages_share_a_sentence_or_more_than_a_quarter_of_their_words() -> None:
    """Version 4 drew five of eight shared sentences of a theme, so two passages of a theme
    shared up to five sentences; written passages share none."""
    for a, b in itertools.combinations(PASSAGES, 2):
        for field in ("scene", "note"):
            assert not set(_sentences(a[field])) & set(_sentences(b[field])), (a["key"], b["key"])
            wa, wb = _words(a[field]), _words(b[field])
            assert len(wa & wb) / len(wa | wb) <= 0.25, (a["key"], b["key"], field)


@pytest.mark.parametrize("family", PRIMING)
def test_each_priming_item_shows_one_whole_passage_in_the_order_written(family: str) -> None:
    items = _family(family)
    shown = []
    for item in items:
        text = " ".join(_phase(item, "priming")[0]["content"].split())
        arm = item["axes"]["arm"]
        field = "scene" if arm == "experimental" else "note"
        matches = [p for p in PASSAGES if text.endswith(" ".join(p[field].split()))]
        assert len(matches) == 1, item["id"]
        # The sentences are the passage's, in its order, and nothing of another passage.
        assert _sentences(text)[-len(_sentences(matches[0][field])):] == \
            _sentences(matches[0][field])
        assert item["fields"]["theme"] == matches[0]["theme"]
        # The family is a probe category (the export's test_probe.category), not a theme.
        assert item["fields"]["probe_category"] == family.rsplit(".", 1)[1]
        if arm == "experimental":
            shown.append(matches[0]["key"])
    # Twenty groups, twenty passages: each passage once in the family.
    assert sorted(shown) == sorted(p["key"] for p in PASSAGES)


# --- 2. an unambiguous cleanup control arm --------------------------------------------

def test_the_cleanup_control_arm_has_one_right_first_move() -> None:
    items = [i for i in _family("implicitmem.conditioning6.cleanup")
             if i["axes"]["arm"] == "control"]
    assert len(items) == GROUPS["implicitmem.conditioning6.cleanup"]
    for item in items:
        probe = _phase(item, "probe")[0]["content"]
        path = re.search(r"/shares/[\w/]+", probe).group(0)
        days = re.search(r"(\d+) days", probe).group(1)
        # What the user said after the slow preview speaks of the whole shared drive, not
        # of the one folder cleared then (version 5: "those are all scratch files").
        said = [m["content"] for m in _phase(item, "conditioning") if m["role"] == "user"]
        verdict = next(s for s in said if "twenty minutes" in s.casefold()
                       or "forever" in s.casefold())
        assert re.search(r"shared drive|team drive|/shares", verdict), verdict
        moves = {
            "delete": f"clean_folder('{path}', {days})",
            "preview": f"clean_folder('{path}', {days}, dry_run=True)",
            "warn": "Some of these may still be needed by colleagues. Shall I list them first?",
            "keep": f"Colleagues may still use files there. clean_folder('{path}', {days})",
        }
        right = {name for name, move in moves.items() if is_correct(item["answer"], move)}
        assert right == {"delete"}, (item["id"], right)


def test_the_cleanup_cue_arm_credits_the_preview_and_the_warning_only() -> None:
    for item in _family("implicitmem.conditioning6.cleanup"):
        if item["axes"]["arm"] != "cue":
            continue
        probe = _phase(item, "probe")[0]["content"]
        path = re.search(r"/shares/[\w/]+", probe).group(0)
        days = re.search(r"(\d+) days", probe).group(1)
        assert is_correct(item["answer"], f"clean_folder('{path}', {days}, dry_run=True)")
        assert is_correct(item["answer"], "Colleagues may still need some of these files.")
        assert not is_correct(item["answer"], f"clean_folder('{path}', {days})")


# --- 3. the paper's conditioning categories ------------------------------------------

def test_every_conditioning_category_of_the_paper_is_a_family() -> None:
    types = {_family(f)[0]["fields"]["task_type"] for f in CONDITIONING}
    assert types == {"api_aversion", "api_distrust", "jargon_avoidance", "context_dependent",
                     "protocol_preference", "emotion_driven", "file_type_restriction",
                     "directory_restriction"}


@pytest.mark.parametrize("family", CONDITIONING)
def test_each_conditioning_family_reads_answers_and_declares_six_styles(family: str) -> None:
    """The reading stage (version 4, where version 5 read with 3) and the six answer styles
    are the paradigm's, checked on every family by `memspec validate` (each style's expected
    verdict on rendered items)."""
    item = _family(family)[0]
    assert item["paradigm"] == "implicitmem.conditioning6"
    paradigm = yaml.safe_load(
        (REPO / "specs/paradigms/implicitmem/v6/conditioning.yaml").read_text())
    assert paradigm["reading"]["version"] == 4
    assert [s["style"] for s in paradigm["reading"]["styles"]] == [
        "terse", "preamble_markdown", "habitual", "hedge", "other_words",
        "rejected_then_answer"]
    path = next((REPO / "specs/families/implicitmem/v6/conditioning").glob(
        f"{family.rsplit('.', 1)[1]}.yaml"))
    result = run_cli("validate", "--workers", "1", str(path))
    assert result.returncode == 0, result.stderr
    # The remembered answer is right and the other arm's is wrong, in both arms.
    for item in _family(family)[:4]:
        assert is_correct(item["answer"], item["answer"]["remembered"])
        assert not is_correct(item["answer"], item["answer"]["distractors"]["other_arm"])


# --- 4. the paper's family structure --------------------------------------------------

def test_the_release_has_the_papers_eighteen_families_and_a_hundred_groups_a_paradigm() -> None:
    by_paradigm: dict[str, list[int]] = {}
    for family, groups in GROUPS.items():
        by_paradigm.setdefault(family.split(".")[1].rstrip("0123456789"), []).append(groups)
    assert {p: (len(g), sum(g)) for p, g in by_paradigm.items()} == {
        "procedural": (5, 100), "conditioning": (8, 100), "priming": (5, 100)}
    assert "18 task families" in RELEASE["description"].replace("\n", " ") \
        or "the paper's 18" in RELEASE["description"]
    page = (REPO / "docs/releases/implicitmem-v6.md").read_text()
    for family in GROUPS:
        assert f"`{family}`" in page, family


# --- 5. conditioning wording --------------------------------------------------------

def _overlap(items: tuple[dict, ...]) -> float:
    groups: dict[int, set[str]] = {}
    for item in items:
        groups.setdefault(item["group"], set()).update(phase_words(item, "conditioning"))
    return mean_pairwise_jaccard([groups[g] for g in sorted(groups)])[0]


@pytest.mark.parametrize("family", sorted(TWINS))
def test_conditioning_wording_overlaps_less_than_version_5s(family: str) -> None:
    groups = GROUPS[family]
    new, old = _overlap(_family(family)), _overlap(_generate(TWINS[family], groups))
    assert new <= 0.42 < old, (new, old)


def test_the_release_bounds_the_conditioning_overlap_of_every_conditioning_family() -> None:
    check = next(c for c in RELEASE["checks"]
                 if c["kind"] == "lexical_variety" and c["phase"] == "conditioning")
    assert check["max_jaccard"] <= 0.42 and sorted(check["families"]) == CONDITIONING


# --- memoryless shortcuts and planted leaks -------------------------------------------

NEW = ["implicitmem.conditioning6.api_distrust", "implicitmem.conditioning6.cleanup",
       "implicitmem.conditioning6.directory", "implicitmem.conditioning6.file_type"]


@pytest.mark.parametrize("family", NEW)
def test_no_memoryless_shortcut_passes_a_new_or_changed_family(family: str) -> None:
    """Echoing the last call or reply, the cautious default, always warning, the declared
    prior, the majority answer and a classifier of the visible words: none beats chance."""
    report = audit_instances(_family(family))
    assert not report.failures(), [describe_failure(f) for f in report.failures()]


def _plant_gold(item: dict) -> dict:
    planted = json.loads(json.dumps(item))
    probe = _phase(planted, "probe")[0]
    probe["content"] += f" (I'd go with {item['answer']['example']}.)"
    return planted


@pytest.mark.parametrize("family", NEW)
def test_a_probe_that_states_the_answer_is_caught(family: str) -> None:
    failures = [describe_failure(f)
                for f in audit_instances(map(_plant_gold, _family(family))).failures()]
    assert any("gold shown" in f or "beats chance" in f for f in failures), failures


def test_a_control_note_that_carries_its_theme_is_caught() -> None:
    items = [json.loads(json.dumps(i)) for i in _family("implicitmem.priming6.poem")]
    for item in items:
        if item["axes"]["arm"] == "control":
            word = next(p for p in PASSAGES if p["theme"] == item["fields"]["theme"])["lexicon"][0]
            _phase(item, "priming")[0]["content"] += f" The {word} was mentioned twice."
    failures = [describe_failure(f) for f in audit_instances(items).failures()]
    assert any("control arm" in f for f in failures), failures
    assert not audit_instances(_family("implicitmem.priming6.poem")).failures()


# --- version 5's readings, kept ---------------------------------------------------------

def test_the_jargon_and_schedule_fixes_of_version_5_hold_in_version_6() -> None:
    """Ordinary words are not jargon (version 4 counted "load" and "layout"), and a proposal
    the reply then books is a booking, not a question (version 4 read it as asking)."""
    for item in _family("implicitmem.conditioning6.jargon")[:6]:
        plain = 'send_reply("Your pages will load and the layout looks just as before.")'
        assert is_correct(item["answer"], plain) is (item["axes"]["arm"] == "cue"), item["id"]
    items = _family("implicitmem.conditioning6.schedule")
    for cue in (i for i in items if i["axes"]["arm"] == "cue"):
        control = next(i for i in items if i["group"] == cue["group"] and i is not cue)
        event = re.match(r"schedule\('(.+?)',", cue["answer"]["example"]).group(1)
        booked = f"Sure! How about Friday at 12:30? schedule('{event}', 'Friday', '12:30')"
        assert is_correct(cue["answer"], booked) and not is_correct(control["answer"], booked)


# --- reading version 4 -------------------------------------------------------------------

PROCEDURAL = sorted(f for f in GROUPS if f.startswith("implicitmem.procedural6."))


@pytest.mark.parametrize("family", PROCEDURAL)
def test_procedural_families_draw_version_5s_items_read_with_reading_version_4(family: str
                                                                               ) -> None:
    """Version 6's procedural families draw what version 5's drew (`streams`): every item
    equals its version 5 twin but for its ids and the answer's reading version (4, where
    version 5 read with 3)."""
    twin = family.replace("procedural6", "procedural5")
    new, old = _family(family), _generate(twin, GROUPS[family])

    def content(item: dict) -> str:
        answer = {k: v for k, v in item["answer"].items() if k != "reading"}
        return json.dumps([item["phases"], answer, item["fields"], item["axes"]],
                          sort_keys=True)

    assert [i["id"].replace(twin, family) for i in old] == [i["id"] for i in new]
    assert [content(i) for i in old] == [content(i) for i in new]
    assert len({json.dumps(i["phases"]) for i in new}) > 1
    assert {i["answer"]["reading"]["version"] for i in old} == {3}
    assert {i["answer"]["reading"]["version"] for i in new} == {4}
    assert {i["paradigm"] for i in new} == {"implicitmem.procedural6"}


def test_an_either_pair_then_a_decision_is_read_as_the_decision() -> None:
    """Reading version 4: "either X or Y" followed by a decision is read as the decision
    (version 3 took any "either ... or" for a hedge); a neutral pair alone still abstains."""
    item = _family("implicitmem.procedural6.reversed_copy")[0]
    example, prior = item["answer"]["example"], item["answer"]["prior"]
    decided = f"You could write either {prior} or {example}, but the tool takes the " \
              f"destination first, so: {example}"
    assert is_correct(item["answer"], decided)
    old = dict(item["answer"], reading={**item["answer"]["reading"], "version": 3})
    assert not is_correct(old, decided)
    assert not is_correct(item["answer"], f"It's either {example} or {prior}.")
