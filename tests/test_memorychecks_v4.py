"""memorychecks-v4: the three checks as the design runs them, asserted on the built files and
scored with the reference policies and with synthetic judgments (statistics checked against
scipy and statsmodels)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import binomtest, hypergeom
from scipy.stats import t as student_t
from statsmodels.stats.weightstats import ttost_paired

from conftest import REPO, run_cli
from memspec.spec.schemas import schema_errors

RELEASE = "memorychecks-v4"
OPEN = "memorychecks.v4.counterfeit.open_input"
RECOGNITION = "memorychecks.v4.recognition.altered_detail"
CONTROL = "memorychecks.v4.recognition.plausible_control"
BINDING = "memorychecks.v4.binding.topic_partner"
FOREIGN = ("foreign_1", "foreign_2", "foreign_3")
SCRAMBLED = ("scrambled_1", "scrambled_2", "scrambled_3")
CONDITIONS = ("veridical", *FOREIGN, *SCRAMBLED, "none")
LIFE = ("date", "time", "kind", "person", "place", "topic")
JUDGES = ("judge_1", "judge_2", "judge_3")


def _pool(name: str) -> list[str]:
    return yaml.safe_load((REPO / "specs" / "pools" / "memorychecks" / name).read_text())["items"]


def _phase(inst: dict, name: str) -> str:
    return "\n".join(m["content"] for p in inst["phases"] if p["phase"] == name
                     for m in p["messages"])


def _records(text: str) -> list[dict[str, str]]:
    rows = [line.split("|") for line in text.splitlines()
            if re.match(r"\d{4}-\d\d-\d\d\|", line)]
    return [dict(zip(LIFE, row, strict=True)) for row in rows]


def _documents(instances: list[dict], family: str) -> dict[str, dict[str, str]]:
    """Corpus -> condition -> the one document every probe of the corpus is shown."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for inst in instances:
        if inst["family"] == family:
            seen[(inst["fields"]["corpus"], inst["axes"]["document"])].add(
                _phase(inst, "document"))
    assert all(len(texts) == 1 for texts in seen.values()), "a corpus shares its documents"
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for (corpus, condition), texts in seen.items():
        out[corpus][condition] = texts.pop()
    return out


def test_counts_of_every_check(instances: list[dict]) -> None:
    counts = Counter((i["family"], i["fields"]["corpus"], i["axes"]["document"])
                     for i in instances)
    for corpus in ("A", "B"):
        for condition in CONDITIONS:
            assert counts[(OPEN, corpus, condition)] == 7
            assert counts[(RECOGNITION, corpus, condition)] == 24
        for condition in ("veridical", "none"):
            assert counts[(CONTROL, corpus, condition)] == 24
        for condition in ("veridical", "corrupted", "none"):
            assert counts[(BINDING, corpus, condition)] == 24
    assert len(instances) == 2 * (7 * 8 + 24 * 8 + 24 * 2 + 24 * 3)


def test_check1_is_open_inputs_under_eight_documents_with_a_rubric(instances: list[dict]
                                                                   ) -> None:
    items = [i for i in instances if i["family"] == OPEN]
    by_group: dict[int, list[dict]] = defaultdict(list)
    for inst in items:
        by_group[inst["group"]].append(inst)
        assert inst["answer"]["scorer"] == "judge" and "0 to 10" in inst["answer"]["rubric"]
        panel = inst["analysis"]["judge_panel"]
        assert panel["judges"] == list(JUDGES) and len(panel["judges"]) >= 3
        assert panel["anchor"] == {"axis": "document", "value": "veridical"}
        # The design's bound of 0.10 of the scale, on the rubric's 0-10.
        assert panel["equivalence"]["bound"] == 1.0
        assert inst["analysis"]["judge_scale"] == [0, 10]
    requests = {corpus: set() for corpus in ("A", "B")}
    for group in by_group.values():
        assert sorted(i["axes"]["document"] for i in group) == sorted(CONDITIONS)
        asked = {_phase(i, "probe") for i in group}
        assert len(asked) == 1, "every document condition asks the very same request"
        requests[group[0]["fields"]["corpus"]] |= asked
    assert all(len(asked) == 7 for asked in requests.values())
    # An open request names no one and nothing, so that any life can answer it.
    docs = _documents(instances, OPEN)
    for corpus, asked in requests.items():
        names = {r[c] for r in _records(docs[corpus]["veridical"]) for c in
                 ("person", "place", "topic")}
        assert not any(name in text for name in names for text in asked)


def _life_documents(instances: list[dict]) -> dict[str, dict[str, str]]:
    return {**{f"open {c}": d for c, d in _documents(instances, OPEN).items()},
            **{f"probe {c}": d for c, d in _documents(instances, RECOGNITION).items()}}


def test_foreign_lives_are_independent_agents_of_the_same_shape(instances: list[dict]
                                                                 ) -> None:
    topics = len(_pool("topics.yaml"))
    for where, docs in _life_documents(instances).items():
        real = _records(docs["veridical"])
        assert len(real) == 72
        for condition in FOREIGN:
            forged = _records(docs[condition])
            assert len(forged) == 72 and len(docs[condition].splitlines()) == \
                len(docs["veridical"].splitlines())
            assert abs(len(docs[condition]) / len(docs["veridical"]) - 1) <= 0.05, where
            for column in ("person", "place"):
                assert not {r[column] for r in real} & {r[column] for r in forged}
            # Their own timeline: the when and what of v3's forgeries were the real ones.
            assert [(r["date"], r["time"], r["kind"]) for r in forged] != \
                [(r["date"], r["time"], r["kind"]) for r in real]
            same_slot = sum(a["time"] == b["time"] and a["kind"] == b["kind"]
                            for a, b in zip(real, forged, strict=True))
            assert same_slot <= 12, f"{where} {condition}: {same_slot} rows at the real slot"
            # Topics from a stream of their own: the overlap of two independent draws of 72
            # from the pool is hypergeometric; it must lie in its central 99.9%.
            shared = len({r["topic"] for r in real} & {r["topic"] for r in forged})
            low, high = hypergeom(topics, 72, 72).interval(0.999)
            assert low <= shared <= high, f"{where} {condition}: {shared} topics shared"


def test_scrambles_keep_the_entries_but_no_original_triple(instances: list[dict]) -> None:
    for docs in _life_documents(instances).values():
        real = _records(docs["veridical"])
        triples = {(r["date"], r["person"], r["place"]) for r in real}
        for condition in SCRAMBLED:
            rows = _records(docs[condition])
            assert sorted(r["topic"] for r in rows) == sorted(r["topic"] for r in real)
            assert not triples & {(r["date"], r["person"], r["place"]) for r in rows}


def test_every_life_keeps_the_meaning_of_its_kinds(instances: list[dict]) -> None:
    eateries, venues = set(_pool("v4/eateries.yaml")), set(_pool("v4/venues.yaml"))
    lunches = 0
    for docs in _life_documents(instances).values():
        for condition in ("veridical", *FOREIGN, *SCRAMBLED):
            for row in _records(docs[condition]):
                assert "07:00" <= row["time"] <= "21:55", row
                if row["kind"] == "lunch":
                    lunches += 1
                    assert "12:00" <= row["time"] <= "13:55", row
                    if condition not in SCRAMBLED:  # a scramble moves places on purpose
                        assert row["place"] in eateries, row
                elif condition not in SCRAMBLED:
                    assert row["place"] in venues, row
    assert lunches == 4 * 7 * 18  # four corpora of seven documents, 18 lunches each


def test_binding_crosses_partner_and_position_with_partners_of_one_gender(
        instances: list[dict]) -> None:
    women, men = set(_pool("v4/women.yaml")), set(_pool("v4/men.yaml"))
    probes = [i for i in instances if i["family"] == BINDING
              and i["axes"]["document"] == "veridical"]
    cells = Counter((i["fields"]["corpus"], i["answer"]["gold"] == i["fields"]["partner_a"],
                     i["answer"]["gold_index"]) for i in probes)
    assert cells == {(c, p, g): 6 for c in ("A", "B") for p in (True, False) for g in (0, 1)}
    for corpus, pool in (("A", women), ("B", men)):
        mine = [i for i in probes if i["fields"]["corpus"] == corpus]
        partners = {mine[0]["fields"]["partner_a"], mine[0]["fields"]["partner_b"]}
        assert partners <= pool
        history = [line.split("|") for line in mine[0]["fields"]["history"].splitlines()]
        assert Counter(row[2] for row in history) == {p: 72 for p in partners}
        assert len({_phase(i, "probe") for i in mine}) == 24


def test_positive_control_is_a_family_of_its_own_whose_right_line_is_plausible(
        instances: list[dict]) -> None:
    probes = [i for i in instances if i["family"] == CONTROL]
    assert {i["fields"]["control"] for i in probes} == {"positive"}
    for inst in probes:
        hours = [int(h) for h in re.findall(r" at (\d\d):\d\d", inst["answer"]["gold"])]
        wrong = [int(h) for h in re.findall(r" at (\d\d):\d\d",
                                            inst["answer"]["distractors"]["night"])]
        assert hours and 7 <= hours[-1] <= 21 and wrong and 1 <= wrong[-1] <= 4
    veridical = [i for i in probes if i["axes"]["document"] == "veridical"]
    assert Counter((i["fields"]["corpus"], i["answer"]["gold_index"]) for i in veridical) == \
        {(c, g): 12 for c in ("A", "B") for g in (0, 1)}


def _respond(release: Path, policy: str, tmp_path: Path, *extra: str) -> Path:
    responses = tmp_path / f"{policy}.jsonl"
    result = run_cli("respond", str(release), "--policy", policy, "--out", str(responses),
                     *extra)
    assert result.returncode == 0, result.stderr
    return responses


def _scored(release: Path, responses: Path, by: str, *extra: str) -> dict:
    result = run_cli("score", str(release), str(responses), "--by", by, "--format", "json",
                     *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _cells(report: dict, by: str) -> dict[tuple, dict]:
    """The report's rows by the values of ``by`` (comma-separated), in that order."""
    keys = by.split(",")
    return {tuple(g["key"][k] for k in keys): g["metrics"] for g in report["groups"]}


def test_memory_follower_gives_the_hand_derived_values(release: Path, tmp_path: Path) -> None:
    report = _scored(release, _respond(release, "memory-follower", tmp_path),
                     "family,corpus,document")
    cells = _cells(report, "family,corpus,document")
    for corpus in ("A", "B"):
        # Binding: right with the veridical log, wrong with the swapped one; without a
        # document it takes the first option, which is right in 12 of 24 probes.
        assert cells[(BINDING, corpus, "veridical")]["accuracy"] == 1.0
        assert cells[(BINDING, corpus, "corrupted")]["accuracy"] == 0.0
        assert cells[(BINDING, corpus, "corrupted")]["reliance"] == 1.0
        assert cells[(BINDING, corpus, "none")]["accuracy"] == 0.5
        # Recognition: a foreign life shares no person or place with the probe, so the
        # follower has nothing to follow and takes the first option: 12 of 24.
        assert cells[(RECOGNITION, corpus, "veridical")]["accuracy"] == 1.0
        for condition in (*FOREIGN, "none"):
            assert cells[(RECOGNITION, corpus, condition)]["accuracy"] == 0.5
        for condition in SCRAMBLED:  # uninformative or misleading, never helpful
            assert cells[(RECOGNITION, corpus, condition)]["accuracy"] <= 0.5
        assert cells[(CONTROL, corpus, "veridical")]["accuracy"] == 1.0
    per_corpus = _scored(release, _respond(release, "memory-follower", tmp_path),
                         "family,corpus")
    for group in per_corpus["groups"]:
        if group["key"]["family"] != BINDING:
            continue
        mcnemar = next(t for t in group["metrics"]["tests"] if t["test"] == "mcnemar_exact")
        assert (mcnemar["a"], mcnemar["b"], mcnemar["only_a"], mcnemar["only_b"]) == \
            ("veridical", "corrupted", 24, 0)
        assert mcnemar["p_value"] == pytest.approx(binomtest(24, 24, 0.5).pvalue)
        assert mcnemar["p_value"] == pytest.approx(2 * 0.5 ** 24)
        assert mcnemar["p_adjusted"] < 1e-5


def test_memoryless_shortcuts_are_at_or_below_chance_on_the_symmetric_probes(
        release: Path, tmp_path: Path) -> None:
    """Memoryless (the first option where no prior is declared), position-biased and random
    policies: exactly 1/2 for the first two on every symmetric probe set (the right answer
    is first in half the probes of every cell), and no test against chance significant after
    Holm for any of them."""
    for policy, extra in (("memoryless", ()), ("position-biased", ()),
                          ("random", ("--seed", "7"))):
        report = _scored(release, _respond(release, policy, tmp_path, *extra),
                         "family,document")
        for (family, condition), metrics in _cells(report, "family,document").items():
            if family not in (RECOGNITION, BINDING):
                continue
            if policy != "random":
                assert metrics["accuracy"] == 0.5, (policy, family, condition)
            for test in metrics["tests"]:
                if test["test"] == "sign_flip_vs_chance":
                    assert test["p_adjusted"] > 0.05, (policy, family, condition)


def test_the_no_memory_baseline_catches_plausibility_on_the_positive_control(
        release: Path, tmp_path: Path) -> None:
    """The memoryless policy answers the positive control from its declared prior, the
    plausible line: with no document it beats chance there, and only there."""
    report = _scored(release, _respond(release, "memoryless", tmp_path), "family,document")
    cells = _cells(report, "family,document")
    control = cells[(CONTROL, "none")]
    assert control["accuracy"] == 1.0
    chance = next(t for t in control["tests"] if t["test"] == "sign_flip_vs_chance")
    assert chance["p_value"] == pytest.approx(binomtest(48, 48, 0.5).pvalue)
    assert chance["p_adjusted"] < 0.05
    assert cells[(RECOGNITION, "none")]["accuracy"] == 0.5
    plausible = _scored(release, _respond(release, "plausible_line", tmp_path), "family")
    assert _cells(plausible, "family")[(CONTROL,)]["accuracy"] == 1.0


def test_a_row_pooling_the_positive_control_leaves_it_out_of_the_chance_test(
        release: Path, tmp_path: Path) -> None:
    """Pooled by condition, the no-document row holds the positive control (which the
    memoryless policy passes by design) with the symmetric probes: the chance test there
    reads the probes alone and names the control it left apart, so the memoryless policy
    is at chance in every pooled row, as in every family's own."""
    report = _scored(release, _respond(release, "memoryless", tmp_path), "document")
    cells = _cells(report, "document")
    assert cells[("none",)]["accuracy"] > 0.6  # the control's 1.0 is in the description
    for (condition,), metrics in cells.items():
        for test in metrics["tests"]:
            if test["test"] != "sign_flip_vs_chance":
                continue
            assert test["mean"] == 0.5 and test["p_value"] == 1.0, (condition, test)
            if condition in ("none", "veridical"):
                assert test["controls_apart"] == [CONTROL]
                assert test["groups"] == 96  # the two families of symmetric probes
            else:
                assert "controls_apart" not in test
    assert schema_errors("score", report) == []
    table = run_cli("score", str(release), str(tmp_path / "memoryless.jsonl"),
                    "--by", "document")
    assert f"positive controls apart: {CONTROL}" in table.stdout


def _synthetic_judgments(unblind: dict, difference: dict[str, list[float]]) -> list[dict]:
    """Judgments in which every judge gives the veridical response of group g a base score
    and the other response that base plus ``difference[condition][g % 7 + 7 * corpus]``."""
    lines = []
    for request_id, slots in unblind.items():
        scores = {}
        for side in ("A", "B"):
            instance_id = slots[side]
            group, condition = instance_id.rsplit("-", 2)[1:]
            base = 5 + JUDGES.index(slots["judge"]) + (int(group) % 3)
            scores[side] = round(base + (0.0 if condition == "veridical"
                                         else difference[condition][int(group)]), 4)
        lines.append({"request_id": request_id, "scores": scores})
    return lines


def test_check1_equivalence_test_with_synthetic_judgments(release: Path,
                                                          tmp_path: Path) -> None:
    responses = _respond(release, "oracle", tmp_path)
    requests = tmp_path / "requests.jsonl"
    result = run_cli("judge-requests", str(release), str(responses), "--out", str(requests))
    assert result.returncode == 0, result.stderr
    sent = [json.loads(line) for line in requests.read_text().splitlines()]
    unblind = json.loads((tmp_path / "requests.jsonl.unblind.json").read_text())
    panel = {k: v for k, v in unblind.items() if "judge" in v}
    assert len(panel) == 14 * 7 * 3 == len(sent)
    assert Counter(r["judge"] for r in sent) == {j: 98 for j in JUDGES}
    # Blinded: nothing in a request names an instance or a condition, and the veridical
    # response is A in some requests and B in others, for every judge.
    for request in sent:
        assert not re.search(r"veridical|foreign|scrambled|open_input", json.dumps(request))
    for judge in JUDGES:
        sides = Counter("A" if panel[r["request_id"]]["A"].endswith("-veridical") else "B"
                        for r in sent if r["judge"] == judge)
        assert 30 <= sides["A"] <= 68, sides
    # Differences per group (14 groups): foreign_1 +-0.5 around 0 (equivalent within 1 point),
    # none 5 points below (not equivalent), every other condition exactly 0.
    alternating = [0.5 if g % 2 else -0.5 for g in range(14)]
    difference = {c: [0.0] * 14 for c in CONDITIONS}
    difference["foreign_1"], difference["none"] = alternating, [-5.0] * 14
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps(j) + "\n"
                                 for j in _synthetic_judgments(unblind, difference)))
    report = _scored(release, responses, "family", "--judgments", str(judgments),
                     "--unblind", str(tmp_path / "requests.jsonl.unblind.json"))
    assert schema_errors("score", report) == []
    entries = {e["condition"]: e for e in report["judge_panel"]}
    assert sorted(entries) == sorted(c for c in CONDITIONS if c != "veridical")
    foreign = entries["foreign_1"]
    assert foreign["groups"] == 14 and foreign["judges"] == list(JUDGES)
    assert foreign["difference"] == pytest.approx(0.0, abs=1e-9)
    # By hand: mean 0, sd 0.5 * sqrt(14/13), se = 0.5 / sqrt(13); each one-sided test
    # has t = 1 / se on 13 degrees of freedom.
    se = 0.5 / np.sqrt(13)
    expected = student_t.sf(1.0 / se, 13)
    equivalence = foreign["equivalence"]
    assert equivalence["p_value"] == pytest.approx(expected, rel=1e-6)
    assert equivalence["equivalent"] is True and equivalence["bound"] == 1.0
    half = student_t.ppf(0.95, 13) * se
    assert equivalence["ci"] == pytest.approx([-half, half], abs=1e-6)
    reference, _, _ = ttost_paired(np.array(alternating), np.zeros(14), -1.0, 1.0)
    assert equivalence["p_value"] == pytest.approx(reference, rel=1e-6)
    none = entries["none"]
    assert none["difference"] == pytest.approx(-5.0)
    assert none["equivalence"]["equivalent"] is False and none["p_adjusted"] < 0.05
    # The judge means: the veridical response's mean over judges and groups is the base.
    bases = [6 + (g % 3) for g in range(14)]
    assert foreign["anchor_mean"] == pytest.approx(np.mean(bases), abs=1e-6)
    assert none["judge_mean"] == pytest.approx(np.mean(bases) - 5, abs=1e-6)
    table = run_cli("score", str(release), str(responses), "--judgments", str(judgments),
                    "--unblind", str(tmp_path / "requests.jsonl.unblind.json")).stdout
    assert "foreign_1 - veridical" in table and "equivalent within ±1" in table


def test_the_release_passes_the_audit_with_one_explained_exemption(release: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    audit = manifest["audit"]
    assert not audit.get("failures")
    assert set(audit.get("exempt", {})) == {OPEN}
    assert "judge" in audit["exempt"][OPEN]
    summary = {row["family"]: row for row in audit["summary"]}
    assert all(row["passed"] for row in summary.values())
    # The positive control's adversaries are run and shown, against a chance of 1.
    assert "chance 1," in summary[CONTROL]["adversaries"]
    assert "chance 0.5," in summary[RECOGNITION]["adversaries"]
