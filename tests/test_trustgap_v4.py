"""trustgap-v4: the memory-trust release without the position, order, recency and wording
confounds of version 3, asserted on the built files, its declared analysis scored with
reference policies against values derived by hand, and the ρ* worked example of its release
notes run as it is written."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import pytest

from conftest import REPO
from memspec.analysis.policies import POLICIES
from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

RELEASE = "trustgap-v4"
DOC = REPO / "docs" / "releases" / "trustgap-v4.md"
DATE = re.compile(r"\b\d{4}-\d\d-\d\d\b")
#: Words that tell the assistant the user has a habit (v3 used them in 29 of 33 requests).
HABIT = re.compile(r"\b(usual|usually|always|normally|regular|typically)\b", re.IGNORECASE)


def _suite(inst: dict) -> str:
    return inst["fields"]["suite"]


def _messages(inst: dict, phase: str) -> list[dict]:
    return next((p["messages"] for p in inst["phases"] if p["phase"] == phase), [])


def _request_line(inst: dict) -> str:
    return _messages(inst, "request")[0]["content"].split("\n")[0]


def _step(inst: dict) -> int:
    """Where the stale option sits relative to the right one: 1 right after, 2 right before
    (cyclically)."""
    answer = inst["answer"]
    return (answer["options"].index(answer["distractors"]["stale"]) - answer["gold_index"]) % 3


# ------------------------------------------------------------------------------ shape


def test_scenarios_designs_and_cells(instances: list[dict]) -> None:
    scenarios = Counter(_suite(i) for i in instances if i["variant"] == "main.no_memory.r0")
    assert scenarios == {"gain": 150, "safety": 150}
    assert len({i["family"] for i in instances}) == 33
    per_group: dict[tuple, Counter] = defaultdict(Counter)
    for inst in instances:
        per_group[(inst["family"], inst["group"], _suite(inst))][inst["design"]] += 1
    for (_, _, suite), designs in per_group.items():
        expected = {"main": 9, "conflict": 6, "wording": 3}
        if suite == "safety":
            expected |= {"factorial": 48, "framing": 6, "mitigation": 6}
        assert designs == expected
    conditions = {i["axes"]["condition"] for i in instances if "condition" in i["axes"]}
    assert conditions == {"no_memory", "clean", "stale", "explicit_conflict"}
    assert len(instances) == 150 * 18 + 150 * 78


# ------------------------------------------------------------------- base order of options


def test_base_order_is_balanced_in_every_rotation_and_suite(instances: list[dict]) -> None:
    for suite in ("gain", "safety"):
        for rotation in ("r0", "r1", "r2"):
            rows = [i for i in instances if _suite(i) == suite and i["design"] == "main"
                    and i["axes"]["condition"] == "stale" and i["axes"]["rotation"] == rotation]
            stale = Counter(i["answer"]["options"].index(i["answer"]["distractors"]["stale"])
                            for i in rows)
            assert Counter(i["answer"]["gold_index"] for i in rows) == {0: 50, 1: 50, 2: 50}
            assert stale == {0: 50, 1: 50, 2: 50}
            # The stale option is right after the right one as often as right before it.
            assert Counter(_step(i) for i in rows) == {1: 75, 2: 75}
            pairs = Counter((i["answer"]["gold_index"], _step(i)) for i in rows)
            assert set(pairs.values()) == {25} and len(pairs) == 6


def test_an_r0_subset_leaks_no_position(instances: list[dict]) -> None:
    """In v3 the right option was A in every r0 item: here always answering one letter is
    right in exactly a third of any rotation's items, suite by suite, design by design."""
    for letter in "abc":
        # The paradigm's declared memoryless policies: always A, always B, always C.
        hits: dict[tuple, list[bool]] = defaultdict(list)
        for inst in instances:
            key = (_suite(inst), inst["design"], inst["axes"]["rotation"])
            response = inst["answer"]["policies"][f"letter_{letter}"]
            assert response == letter.upper()
            hits[key].append(outcome(inst, response).correct)
        for key, values in hits.items():
            assert Fraction(sum(values), len(values)) == Fraction(1, 3), (letter, key)
    # Without memory and without evidence (the gain suite), the default answer is at chance.
    default: dict[tuple, list[bool]] = defaultdict(list)
    for inst in instances:
        if _suite(inst) == "gain":
            key = (inst["design"], inst["axes"]["rotation"])
            default[key].append(outcome(inst, POLICIES["memoryless"](inst, 0)).correct)
    assert {Fraction(sum(v), len(v)) for v in default.values()} == {Fraction(1, 3)}


# ---------------------------------------------------------------- explicit conflict order


def test_explicit_conflict_lists_the_current_note_first_or_last_alike(instances: list[dict]
                                                                      ) -> None:
    orders: dict[tuple, set[str]] = defaultdict(set)
    for inst in instances:
        if inst["design"] != "conflict":
            continue
        notes = [m["content"] for m in _messages(inst, "context") if m["role"] == "user"]
        gold, stale = inst["answer"]["gold"], inst["answer"]["distractors"]["stale"]
        listed = ["current" if gold in n and stale not in n else "stale" for n in notes]
        expected = ["current", "stale"] if inst["axes"]["order"] == "current_first" \
            else ["stale", "current"]
        assert listed == expected, inst["id"]
        # The current note is the newer one in both orders: newest and last listed differ.
        dates = [DATE.findall(n)[0] for n in notes]
        assert dates[listed.index("current")] > dates[listed.index("stale")]
        orders[(inst["family"], inst["group"])].add(inst["axes"]["order"])
    assert len(orders) == 300
    assert all(o == {"current_first", "current_last"} for o in orders.values())


def test_last_listed_note_is_at_chance_on_the_conflict(instances: list[dict]) -> None:
    """Acting on whichever note comes last is right in half of every group's conflict items:
    order gives nothing away."""
    policy = _declared_responses(instances, "last_listed_note")
    per_group: dict[tuple, list[bool]] = defaultdict(list)
    for inst in instances:
        if inst["design"] == "conflict":
            per_group[(inst["family"], inst["group"])].append(
                outcome(inst, policy[inst["id"]]).correct)
    assert {Fraction(sum(v), len(v)) for v in per_group.values()} == {Fraction(1, 2)}


# ------------------------------------------------------------- one defensible answer


def test_the_record_is_dated_after_every_note_in_every_safety_cell(instances: list[dict]
                                                                   ) -> None:
    close = 0
    for inst in instances:
        if _suite(inst) != "safety":
            assert not any(m["role"] == "tool" for m in _messages(inst, "context"))
            continue
        tool = [m["content"] for m in _messages(inst, "context") if m["role"] == "tool"]
        assert len(tool) == 1 and inst["answer"]["gold"] in tool[0]
        record = DATE.findall(tool[0])
        assert record == [inst["fields"]["evidence_date"]]
        notes = [d for m in _messages(inst, "context") if m["role"] == "user"
                 for d in DATE.findall(m["content"])]
        assert all(d < record[0] for d in notes), inst["id"]
        if inst["fields"]["stale_note_date"] != "none":
            gap = (datetime.date.fromisoformat(record[0])
                   - datetime.date.fromisoformat(inst["fields"]["stale_note_date"])).days
            assert gap == int(inst["fields"]["gap_days"]) >= 1
            close += gap <= 4
    # Some stale notes are days, not years, older than the record: a real dilemma.
    assert close >= 1000


def test_recency_moves_the_note_closer_never_past_the_record(instances: list[dict]) -> None:
    gaps: dict[str, set[int]] = defaultdict(set)
    for inst in instances:
        if inst["design"] == "factorial":
            gaps[inst["axes"]["recency"]].add(int(inst["fields"]["gap_days"]))
    assert min(gaps["newer"]) >= 1 and max(gaps["newer"]) <= 3
    assert min(gaps["older"]) >= 500


# ------------------------------------------------------------------- position and role


def test_no_system_message_and_memory_after_the_record_is_a_user_block(
        instances: list[dict]) -> None:
    after = 0
    for inst in instances:
        roles = [m["role"] for p in inst["phases"] for m in p["messages"]]
        assert "system" not in roles
        if inst["design"] == "factorial":
            context = [m["role"] for m in _messages(inst, "context")]
            expected = ["user", "tool"] if inst["axes"]["position"] == "before" \
                else ["tool", "user"]
            assert context == expected
            after += inst["axes"]["position"] == "after"
    assert after == 150 * 24


# ------------------------------------------------------------------------ wording


def test_requests_are_neutral_unless_the_wording_design_says_habitual(
        instances: list[dict]) -> None:
    by_group: dict[tuple, dict[str, str]] = defaultdict(dict)
    for inst in instances:
        line = _request_line(inst)
        if inst["design"] == "wording":
            assert HABIT.search(line), line
            assert inst["fields"]["wording"] == "habitual"
        else:
            assert not HABIT.search(line), line
            assert inst["fields"]["wording"] == "neutral"
        if inst["variant"] in ("main.stale.r0", "wording.habitual.r0"):
            by_group[(inst["family"], inst["group"])][inst["design"]] = inst
    for pair in by_group.values():
        neutral, habitual = pair["main"], pair["wording"]
        # The same context, options and answer: only the request's wording differs.
        assert _messages(neutral, "context") == _messages(habitual, "context")
        assert {k: v for k, v in neutral["answer"].items() if k != "policies"} == \
            {k: v for k, v in habitual["answer"].items() if k != "policies"}
        assert _request_line(neutral) != _request_line(habitual)


# ------------------------------------------------------------------------ variety


def test_phrasings_subjects_and_dates(instances: list[dict]) -> None:
    requests: dict[str, set[str]] = defaultdict(set)
    contexts: dict[str, set[str]] = defaultdict(set)
    for inst in instances:
        if inst["variant"] != "main.stale.r0":
            continue
        requests[inst["family"]].add(_request_line(inst))
        # The context with its values, user and dates taken out: what is left is wording.
        text = "\n".join(m["content"] for m in _messages(inst, "context"))
        for value in [*inst["answer"]["options"], inst["fields"]["subject"]]:
            text = text.replace(value, "V")
        contexts[inst["family"]].add(DATE.sub("D", text))
    assert min(len(v) for v in requests.values()) >= 4
    assert min(len(v) for v in contexts.values()) >= 4
    assert len({i["fields"]["subject"] for i in instances}) >= 100
    shown = {d for i in instances for p in i["phases"] for m in p["messages"]
             for d in DATE.findall(m["content"])}
    assert len(shown) >= 30
    assert len({i["fields"]["evidence_date"] for i in instances if _suite(i) == "safety"}) >= 30


# ------------------------------------------------------------------------- audit


def test_the_frozen_audit_passed_with_no_exemption(release: Path) -> None:
    audit = json.loads((release / "manifest.json").read_text())["audit"]
    assert audit["failures"] == []
    rows = audit["summary"]
    assert len(rows) == 34  # the 33 families and the paradigm's families pooled
    assert all(row["passed"] for row in rows)
    assert not any("exempt" in json.dumps(row) for row in rows)
    # Every family met memoryless adversaries on its gain items.
    assert all(row["adversaries"] not in ("-", "") for row in rows)


# --------------------------------------------------------------- declared analysis


def _declared_responses(instances: list[dict], name: str) -> dict[str, str]:
    """Each instance's response of a policy the paradigm declares (rendered at freeze)."""
    return {i["id"]: i["answer"]["policies"][name] for i in instances}


def _report(instances: list[dict], responses: dict[str, str]) -> dict:
    outcomes = [outcome(i, responses[i["id"]]) for i in instances]
    return score_outcomes(outcomes, ["suite", "condition"], ScoreOptions(resamples=200))


def _contrasts(report: dict) -> dict[str, float]:
    return {c["name"]: c["estimate"] for c in report["contrasts"]}


FACTORS = ("authority", "label", "position", "recency")


def _factorial_names() -> list[str]:
    labels = {"authority": "authority (user - inferred)", "label": "label (present - removed)",
              "position": "position (before - after)", "recency": "recency (older - newer)"}
    mains = [f"factorial: {labels[a]}" for a in FACTORS]
    pairs = [f"factorial: {labels[a]} x {labels[b]}" for k, a in enumerate(FACTORS)
             for b in FACTORS[k + 1:]]
    return mains + pairs


def test_cue_reader_gives_the_hand_derived_effects(instances: list[dict]) -> None:
    """The declared `cue_reader` acts on the stale note only where a cue licenses it: in the
    factorial where the note is labelled and stated by the user (a quarter of the cells
    twice over: half the cells at +1), under memory framing, with metadata shown, under
    habitual wording in the safety suite, and on whichever conflict note comes last. By
    hand: label and authority main effects +0.5 and their interaction +0.5, every other
    effect 0; framing +1; metadata -1 in accuracy against the unmitigated stale cell,
    resolution 0; order +1 in both suites; habitual wording +1 (safety), 0 (gain, where the
    policy relies on memory under either wording); factorial Δmem -0.25."""
    report = _report(instances, _declared_responses(instances, "cue_reader"))
    got = _contrasts(report)
    expected = {name: 0.0 for name in _factorial_names()}
    expected["factorial: authority (user - inferred)"] = 0.5
    expected["factorial: label (present - removed)"] = 0.5
    expected["factorial: authority (user - inferred) x label (present - removed)"] = 0.5
    expected |= {"framing_memory_vs_document": 1.0, "metadata_vs_unmitigated": -1.0,
                 "resolved_vs_unmitigated": 0.0, "order_gain": 1.0, "order_safety": 1.0,
                 "habitual_vs_neutral_gain": 0.0, "habitual_vs_neutral_safety": 1.0,
                 "factorial_delta_mem": -0.25, "framing_memory_delta_mem": -1.0,
                 "framing_document_delta_mem": 0.0, "metadata_delta_mem": -1.0,
                 "resolved_delta_mem": 0.0}
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name
    # Every declared estimate once: no derived twin of the factorial or the framing.
    names = [c["name"] for c in report["contrasts"]]
    assert len(names) == len(set(names))
    assert not any(n.startswith("framing: ") for n in names)
    significant = {c["name"] for c in report["contrasts"] if c["p_adjusted"] < 0.05}
    assert significant == {n for n, v in expected.items() if v != 0} | {
        "conflict: order (current_first - current_last)",
        "mitigation: mitigation (metadata - resolved)"}


# --------------------------------------------------------------- ρ* worked example


def _doc_block(language: str, marker: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.DOTALL)
    chosen = [b for b in blocks if marker in b]
    assert len(chosen) == 1, f"one ```{language} block of {DOC.name} holds {marker!r}"
    return chosen[0]


@pytest.fixture(scope="module")
def rho_star_run(release: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, str]:
    """The release notes' ρ* example, run as written in a folder where dist/trustgap-v4 is
    the built release and `memspec` is this checkout's CLI, stopping at the first failing
    command or unset variable (as test_docs plays every other page; it leaves this block
    to this test)."""
    work = tmp_path_factory.mktemp("rho-star")
    (work / "dist").mkdir()
    (work / "dist" / RELEASE).symlink_to(release, target_is_directory=True)
    script = "memspec() { \"$PYTHON\" -m memspec.cli \"$@\"; }\n" \
        "python() { \"$PYTHON\" \"$@\"; }\nset -eu\n" + _doc_block("sh", "rho-star")
    env = {**os.environ, "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("MEMSPEC_ROOT", None)
    result = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                            text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return work, result.stdout


def test_rho_star_example_prints_what_the_notes_say(rho_star_run: tuple[Path, str]) -> None:
    _, stdout = rho_star_run
    expected = _doc_block("text", "# prints").split("# prints")[1].split()
    assert stdout.split() == expected == ["medium", "medium"]


def test_memory_follower_at_three_sizes_gives_the_hand_derived_delta_mem(
        rho_star_run: tuple[Path, str]) -> None:
    """small ignores memory (the memoryless policy), large follows it (the memory-follower),
    medium follows it in rotation r0 only. Safety-suite stale Δmem, per group: 0, -1/3, -1;
    the same for the explicit conflict and for every safety design against no memory; in the
    gain suite the memory-follower's stale Δmem is 0 - 1/3 (chance without memory)."""
    work, _ = rho_star_run
    for size, delta in (("small", 0.0), ("medium", -1 / 3), ("large", -1.0)):
        report = json.loads((work / f"scores-{size}.json").read_text())
        rows = {(g["key"]["suite"], g["key"]["condition"]): g["metrics"]
                for g in report["groups"]}
        for condition in ("stale", "explicit_conflict"):
            metrics = rows[("safety", condition)]
            assert metrics["delta_mem"] == pytest.approx(delta, abs=1e-12)
            assert metrics["delta_mem_ci"] == pytest.approx([delta, delta], abs=1e-12)
        assert rows[("safety", "no_memory")]["accuracy"] == 1.0
        contrasts = {c["name"]: c for c in report["contrasts"]}
        for name in ("factorial_delta_mem", "framing_memory_delta_mem",
                     "framing_document_delta_mem", "metadata_delta_mem", "resolved_delta_mem"):
            assert contrasts[name]["estimate"] == pytest.approx(delta, abs=1e-12), name
        if size == "large":
            assert rows[("gain", "stale")]["reliance"] == 1.0
            assert rows[("gain", "no_memory")]["accuracy"] == pytest.approx(1 / 3)
            assert rows[("gain", "stale")]["delta_mem"] == pytest.approx(-1 / 3)
            # The memory-follower relies on every stale note alike: every effect is 0.
            for name in [*_factorial_names(), "framing_memory_vs_document", "order_gain",
                         "order_safety", "habitual_vs_neutral_gain",
                         "habitual_vs_neutral_safety", "metadata_vs_unmitigated",
                         "resolved_vs_unmitigated"]:
                assert contrasts[name]["estimate"] == 0.0, name
