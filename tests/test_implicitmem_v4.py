"""implicitmem-v4, asserted on the built release: the design's counts and protocol, the
variety and interference the issue asks for, conditioning that a cautious default cannot pass,
and the design's headline numbers computed by ``memspec score`` (reference policies' scores
worked out by hand)."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from conftest import REPO, bundled_release, run_cli
from memspec.engine.checks import approx_tokens
from memspec.spec.instances import phase_messages

RELEASE = "implicitmem-v4"
PROCEDURAL, CONDITIONING, PRIMING = ("implicitmem.procedural", "implicitmem.conditioning",
                                     "implicitmem.priming")
_WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def built(built_dist: Path) -> Path:
    """The release from the session's one build of every bundled release (verified byte for
    byte against its committed manifest), not built a second time here."""
    return bundled_release(built_dist, RELEASE)


@pytest.fixture(scope="module")
def instances(built: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((built / "data").glob("*.jsonl"))
            for line in path.read_text().splitlines()]


def _text(inst: dict, phase: str) -> str:
    return "\n".join(m["content"] for m in phase_messages(inst, phase))


def _families(instances: list[dict], paradigm: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for inst in instances:
        if inst["paradigm"] == paradigm:
            out[inst["family"]].append(inst)
    return out


def _family_spec(family: str) -> dict:
    path = next(p for p in (REPO / "specs/families/implicitmem/v4").rglob("*.yaml")
                if yaml.safe_load(p.read_text())["family"] == family)
    return yaml.safe_load(path.read_text())


def test_one_hundred_groups_per_paradigm(instances: list[dict]) -> None:
    groups = Counter()
    for paradigm in (PROCEDURAL, CONDITIONING, PRIMING):
        groups[paradigm] = len({(i["family"], i["group"]) for i in instances
                                if i["paradigm"] == paradigm})
    assert groups == {PROCEDURAL: 100, CONDITIONING: 100, PRIMING: 100}
    assert [len(_families(instances, p)) for p in (PROCEDURAL, CONDITIONING, PRIMING)] == \
        [5, 5, 10]
    # Conditioning and priming groups hold two arms each.
    assert Counter(i["paradigm"] for i in instances) == \
        {PROCEDURAL: 100, CONDITIONING: 200, PRIMING: 200}


def test_procedural_interference_is_400_to_650_tokens_of_fifteen_turns(
        instances: list[dict]) -> None:
    for family, items in _families(instances, PROCEDURAL).items():
        seen = set()
        for inst in items:
            turns = phase_messages(inst, "interference")
            assert [m["role"] for m in turns] == ["user", "assistant"] * 15
            assert 400 <= approx_tokens(_text(inst, "interference")) <= 650, inst["id"]
            seen.add(tuple(m["content"] for m in turns))
        assert len(seen) == len(items), family  # no two groups share their interference


def test_no_interference_question_recurs_more_than_five_times(instances: list[dict],
                                                              built: Path) -> None:
    # v3 showed one question in 41 items; here each group counts once (its arms share it).
    per_group = {(i["family"], i["group"]): tuple(
        m["content"] for m in phase_messages(i, "interference") if m["role"] == "user")
        for i in instances}
    uses = Counter(q for questions in per_group.values() for q in questions)
    assert max(uses.values()) <= 5, uses.most_common(3)
    # The release checks it at freeze (message_reuse) and its card says so.
    card = (built / "README.md").read_text()
    most = max(uses.values())
    assert re.search(rf"\| interference \| user \| {len(uses)} \| {len(per_group)} \| .* "
                     rf"\({most}\) \| 5 \|", card), card
    procedural = Counter(q for (family, _), qs in per_group.items()
                         if family.startswith(PROCEDURAL) for q in qs)
    assert set(procedural.values()) == {5}  # 20 groups x 15 turns over 60 questions each


def test_procedural_interference_stays_on_the_rule_s_topic(instances: list[dict]) -> None:
    # Topical, not a shared pool of lifestyle questions: each family's questions are its own.
    owners: dict[str, set[str]] = defaultdict(set)
    for inst in instances:
        if inst["paradigm"] == PROCEDURAL:
            for m in phase_messages(inst, "interference"):
                owners[m["content"]].add(inst["family"])
    assert all(len(families) == 1 for families in owners.values())
    # And they invite the habit without stating the rule: no probe-forbidden phrase of the
    # family (its rule_phrases) is a word of the family's SQL, copy or naming answers' keys...
    # checked where it matters most: the house form itself never appears in the interference.
    houses = {"implicitmem.procedural.find_query": r"\bFIND\s+\w+\s+WHERE\b",
              "implicitmem.procedural.reversed_copy": r"\bcopy_file\(",
              "implicitmem.procedural.commit_subject": r"\[[A-Z]+-\d+\]",
              "implicitmem.procedural.date_style": r"\b\d\d\.\d\d\.\d{4}\b",
              "implicitmem.procedural.kebab_keys": r"\b[a-z]+-[a-z]+-[a-z]+:"}
    for inst in instances:
        if inst["family"] in houses:
            assert not re.search(houses[inst["family"]], _text(inst, "interference")), inst["id"]


def _fixed_words(phrasing: dict) -> set[str]:
    text = " ".join(m["text"] for m in phrasing["messages"])
    return {w.casefold() for w in _WORD.findall(re.sub(r"\{\{.*?\}\}", " ", text))}


def _phrasing_of(inst: dict, phase: str, phrasings: list[dict]) -> int:
    """The phrasing whose fixed words the rendered phase holds (the most specific one)."""
    words = {w.casefold() for w in _WORD.findall(_text(inst, phase))}
    fitting = [k for k, p in enumerate(phrasings) if _fixed_words(p) <= words]
    assert fitting, inst["id"]
    return max(fitting, key=lambda k: len(_fixed_words(phrasings[k])))


@pytest.mark.parametrize("paradigm,phases", [(PROCEDURAL, ("learning", "probe")),
                                             (CONDITIONING, ("probe",)),
                                             (PRIMING, ("probe",))])
def test_phrasings_are_several_and_balanced(instances: list[dict], paradigm: str,
                                            phases: tuple[str, ...]) -> None:
    for family, items in _families(instances, paradigm).items():
        spec = _family_spec(family)
        for phase in phases:
            phrasings = spec["phases"][phase]["phrasings"]
            assert len(phrasings) >= (4 if paradigm != PRIMING else 3), (family, phase)
            drawn = Counter(_phrasing_of(i, phase, phrasings)
                            for i in {i["group"]: i for i in items}.values())
            counts = [drawn[k] for k in range(len(phrasings))]
            assert max(counts) - min(counts) <= 1 and min(counts) >= 1, (family, phase, counts)


def test_conditioning_phases_have_four_balanced_phrasings(instances: list[dict]) -> None:
    # Template phrasings: each opens its system message in its own words.
    for family, items in _families(instances, CONDITIONING).items():
        assert len(_family_spec(family)["phases"]["conditioning"]["phrasings"]) >= 4
        openings = Counter(phase_messages(i, "conditioning")[0]["content"].split("\n")[0]
                           for i in {i["group"]: i for i in items}.values())
        assert len(openings) >= 4 and max(openings.values()) - min(openings.values()) <= 1, \
            (family, openings)


def _mean_jaccard(word_sets: list[set[str]]) -> float:
    pairs = list(itertools.combinations(word_sets, 2))
    return sum(len(a & b) / len(a | b) for a, b in pairs) / len(pairs)


def test_probe_word_jaccard_within_each_family_is_at_most_half(instances: list[dict],
                                                                built: Path) -> None:
    card = (built / "README.md").read_text()
    by_family: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for inst in instances:
        by_family[inst["family"]][inst["group"]] |= {
            w.casefold() for w in _WORD.findall(_text(inst, "probe"))}
    for family, groups in by_family.items():
        mean = _mean_jaccard([groups[g] for g in sorted(groups)])
        assert mean <= 0.5, family
        # The card reports the same figure (v3: 0.72-0.88 on its procedural families).
        assert f"| `{family}` | probe | {len(groups)} | {mean:.3f} | 0.5 |" in card


def test_conditioning_arms_share_everything_but_the_outcomes(instances: list[dict]) -> None:
    for items in _families(instances, CONDITIONING).values():
        arms: dict[int, dict[str, dict]] = defaultdict(dict)
        for inst in items:
            arms[inst["group"]][inst["axes"]["arm"]] = inst
        for pair in arms.values():
            cue, control = pair["cue"], pair["control"]
            for phase in ("interference", "probe"):
                assert phase_messages(cue, phase) == phase_messages(control, phase)
            assert phase_messages(cue, "conditioning") != phase_messages(control, "conditioning")
            # The assistant acts (a call) and reports; its own prose never narrates a lesson.
            for inst in (cue, control):
                for m in phase_messages(inst, "conditioning"):
                    if m["role"] == "assistant" and not re.match(r"\w+\(", m["content"]):
                        assert not re.search(r"(?i)\b(?:this time|from now on|instead|again|"
                                             r"next time|sorry|I'll|I will|let me)\b",
                                             m["content"]), (inst["id"], m["content"])
            assert {len(phase_messages(cue, "interference"))} <= {4, 5, 6}


def test_every_item_is_labelled_and_the_design_s_task_types_are_there(
        instances: list[dict]) -> None:
    assert {i["fields"]["adaptation"] for i in instances} == {"inhibition", "preference"}
    kinds = {i["fields"]["task_type"] for i in instances if i["paradigm"] == CONDITIONING}
    assert {"api_aversion", "jargon_avoidance", "context_dependent", "emotion_driven",
            "protocol_preference"} == kinds
    labels = {i["fields"]["adaptation"] for i in instances
              if i["paradigm"] in (PROCEDURAL, CONDITIONING)}
    assert labels == {"inhibition", "preference"}


def _respond(built: Path, policy: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{policy}.jsonl"
    result = run_cli("respond", str(built), "--policy", policy, "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def _score(built: Path, responses: Path, *args: str) -> dict:
    result = run_cli("score", str(built), str(responses), "--format", "json", *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _report(instances: list[dict], respond, by: list[str]) -> dict[tuple, dict]:
    """What ``memspec score --by BY`` reports for these responses (the same functions, called
    in this process: a subprocess per policy would cost the file a minute)."""
    from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

    outcomes = [outcome(i, respond(i)) for i in instances]
    report = score_outcomes(outcomes, by, ScoreOptions(resamples=200))
    return {tuple(sorted(g["key"].items())): g["metrics"] for g in report["groups"]}


def _policy(name: str):
    from memspec.analysis.policies import POLICIES

    if name in POLICIES:
        return lambda i: POLICIES[name](i, 0)
    return lambda i: i["answer"]["policies"][name]


def test_memoryless_shortcuts_score_exactly_chance_on_conditioning(
        instances: list[dict]) -> None:
    # By hand: every conditioning probe is the same in both arms, and the arms' right first
    # moves exclude each other, so a policy blind to the conditioning phase is right in one
    # arm of each group at most: the declared default (the habitual action), the cautious
    # default, always acting and never acting are each right in exactly one: 0.5 in every
    # family.
    conditioning = [i for i in instances if i["paradigm"] == CONDITIONING]
    by_group = {(i["family"], i["group"], i["axes"]["arm"]): i for i in conditioning}

    def arm_answer(arm_kind: str):
        def respond(inst: dict) -> str:
            arms = inst["analysis"]["audit"]["arms"]
            return by_group[(inst["family"], inst["group"], arms[arm_kind][0])][
                "answer"]["example"]
        return respond

    policies = {"memoryless": _policy("memoryless"),
                "cautious_default": _policy("cautious_default"),
                "always_act": arm_answer("act"), "never_act": arm_answer("dont")}
    for name, respond in policies.items():
        rows = _report(conditioning, respond, ["family"])
        for family in _families(instances, CONDITIONING):
            assert rows[(("family", family),)]["accuracy"] == 0.5, (name, family)
    # Always acting shows the learned behaviour in neither arm or in both alike: hit rate =
    # false-alarm rate, so hit - FA = 0 and d' = 0.
    for key, metrics in _report(conditioning, policies["always_act"], ["family"]).items():
        assert metrics["hit_rate"] == metrics["false_alarm_rate"], key
        assert metrics["hit_minus_fa"] == 0 and metrics["d_prime"] == pytest.approx(0), key


def test_reference_policies_on_every_paradigm(instances: list[dict]) -> None:
    oracle = _report(instances, _policy("oracle"), ["paradigm"])
    memoryless = _report(instances, _policy("memoryless"), ["paradigm"])
    follower = _report(instances, _policy("memory-follower"), ["paradigm"])
    for paradigm in (PROCEDURAL, CONDITIONING):
        key = (("paradigm", paradigm),)
        assert oracle[key]["accuracy"] == 1.0 and follower[key]["accuracy"] == 1.0
    # The declared default is the habit: wrong on every procedural item, right in the
    # control arm of conditioning only.
    assert memoryless[(("paradigm", PROCEDURAL),)]["accuracy"] == 0.0
    assert memoryless[(("paradigm", CONDITIONING),)]["accuracy"] == 0.5
    assert oracle[(("paradigm", CONDITIONING),)]["hit_rate"] == 1.0
    assert oracle[(("paradigm", CONDITIONING),)]["false_alarm_rate"] == 0.0


def test_the_audit_passes_with_no_exemption(built: Path) -> None:
    result = run_cli("audit", str(built), "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and not report["exempt"]
    ran = {(r["family"], r["check"]) for r in report["rows"]}
    conditioning = {r["family"] for r in report["rows"]
                    if r["family"].startswith(CONDITIONING + ".")}
    assert len(conditioning) == 5
    for family in conditioning:
        for adversary in ("declared_prior", "echo_last_call", "echo_probe", "always_act",
                          "never_act", "declared:cautious_default"):
            assert (family, adversary) in ran, (family, adversary)


def test_warnings_and_alternatives_are_credited_and_reported_apart(
        instances: list[dict]) -> None:
    # In the cue arm of the API-aversion family, a warning that names the failing tool is as
    # right as the alternative call; the report counts the two kinds apart.
    items = [i for i in instances if i["family"] == "implicitmem.conditioning.api_timeout"]

    def respond(inst: dict) -> str:
        if inst["axes"]["arm"] == "cue" and inst["group"] % 2 == 0:
            return "Careful: stock_level has been timing out all day. Use the snapshot?"
        return inst["answer"]["example"]

    rows = _report(items, respond, ["arm"])
    cue, control = rows[(("arm", "cue"),)], rows[(("arm", "control"),)]
    assert cue["accuracy"] == 1.0 and control["accuracy"] == 1.0
    assert cue["outcomes"]["warning"]["rate"] == 0.5
    assert cue["outcomes"]["alternative"]["rate"] == 0.5
    assert control["outcomes"]["warning"]["rate"] == 0.0
    assert control["outcomes"]["alternative"]["rate"] == 0.0


def test_headline_scores_are_declared_and_computed(built: Path, instances: list[dict],
                                                   tmp_path: Path) -> None:
    # By hand: the oracle is right on every procedural and conditioning item (100%); a judge
    # giving the experimental arm 7 and the control arm 3 on the 1-10 scale puts the Priming
    # Influence Score at 4/9 of the scale (44.4%); overall = (100 + 100 + 44.4) / 3.
    oracle = _respond(built, "oracle", tmp_path)
    requests = tmp_path / "requests.jsonl"
    assert run_cli("judge-requests", str(built), str(oracle), "--out",
                   str(requests)).returncode == 0
    unblind_path = tmp_path / "requests.jsonl.unblind.json"
    unblind = json.loads(unblind_path.read_text())
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"request_id": rid, "scores": {
        slot: 7 if iid.endswith("experimental") else 3 for slot, iid in slots.items()}}) + "\n"
        for rid, slots in unblind.items()))
    report = _score(built, oracle, "--judgments", str(judgments), "--unblind",
                    str(unblind_path))
    summaries = {s["name"]: s for s in report["summaries"]}
    overall = summaries["overall"]
    assert overall["parts"][PRIMING] == {"metric": "influence_percent",
                                         "percent": pytest.approx(400 / 9)}
    assert overall["parts"][PROCEDURAL]["percent"] == 100.0
    assert overall["score"] == pytest.approx((200 + 400 / 9) / 3)
    assert set(summaries["adaptation"]["parts"]) == {"inhibition", "preference"}
    assert all(p["percent"] == 100.0 for p in summaries["adaptation"]["parts"].values())
    # The memoryless policy: 0% procedural, 50% conditioning; inhibition and preference are
    # each the mean over their groups (procedural ones at 0, conditioning ones at 0.5).
    from memspec.analysis.score import ScoreOptions, outcome, score_outcomes

    memoryless = score_outcomes([outcome(i, _policy("memoryless")(i)) for i in instances], [],
                                ScoreOptions(resamples=200))
    parts = {s["name"]: s for s in memoryless["summaries"]}["adaptation"]["parts"]
    groups = Counter((i["fields"]["adaptation"], i["paradigm"]) for i in instances
                     if i["paradigm"] != PRIMING and i["axes"].get("arm") != "control")
    for label, part in parts.items():
        conditioning, procedural = groups[(label, CONDITIONING)], groups[(label, PROCEDURAL)]
        assert part["percent"] == pytest.approx(50 * conditioning / (conditioning + procedural))


def _content_words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[^\W\d_]+", text) if len(w) >= 4}


def test_priming_themes_forms_fresh_writing_and_a_drift_rubric(instances: list[dict],
                                                               built: Path) -> None:
    families = _families(instances, PRIMING)
    assert len(families) >= 10
    overlaps = []
    for family, items in families.items():
        forms = {_text(i, "probe").split(",")[0].split(" about ")[0] for i in items}
        assert len(forms) >= 3, family
        lexicon = _family_spec(family)["slots"]["lexicon"]["value"]
        for inst in items:
            probe = _text(inst, "probe")
            assert re.search(r"(?i)\b(?:from scratch|fresh|original)\b", probe), inst["id"]
            rubric = inst["answer"]["rubric"]
            assert "not the vocabulary" in rubric
            # The rubric lists no imagery: none of the theme's lexicon but the title's words.
            title = _content_words(inst["fields"]["theme"])
            assert not (_content_words(rubric) - title) & {w.casefold() for w in lexicon}
            if inst["axes"]["arm"] == "experimental":
                words = _content_words(rubric) - _content_words(probe)
                overlaps.append(len(words & _content_words(_text(inst, "priming")))
                                / len(words))
    # Share of the rubric's own words that the evocative text uses (v3: 0.14 on average);
    # the release checks it per family at freeze (rubric_overlap) and its card reports it.
    assert sum(overlaps) / len(overlaps) < 0.08
    card = (built / "README.md").read_text()
    for family in families:
        assert re.search(rf"\| `{re.escape(family)}` \| priming \| 10 \| 0\.0\d\d \| 0\.1 \|",
                         card), family
