"""A panel of judges scoring every condition of a group beside its anchor condition.

A family declares ``analysis.judge_panel: {judges: [...], anchor: {axis, value}, equivalence:
{bound, alpha}}``. For each group, every judge-scored item that is not the anchor (e.g. the
response under a counterfeit memory) goes to every judge side by side with the anchor's item
(the response to the same task under the agent's own memory), as A and B in an order drawn
for that judge from a seeded stream; the requests are listed in a seeded order too, so that
neither an id nor a position tells a judge which side is which. The unblinding map says, per
request, which judge it is for and which instance is behind A and B.

Absolute judge scores drift between sessions, so a condition is compared with its anchor in
the same request: its value in a group is the mean over judges of (its score - the anchor's
score in that request). The group is the unit; the report gives each condition's judge mean,
the anchored difference with its t interval, a paired t-test of that difference against 0
(Holm-corrected across the panel's conditions) and, where the family declares a bound, the
two one-sided tests of equivalence (``equivalence.tost``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import Problem, ProblemCollector, SpecError
from ..core.limits import working_on
from ..core.rng import KeyedRandom
from ..spec.instances import pair_key
from ..spec.yamlsafe import read_text
from .equivalence import mean_and_se, t_interval, t_test_zero, tost
from .judge import INSTRUCTIONS_PAIR, MAX_JUDGE_SCORE, is_number, task_prompt
from .responses import jsonl_records, parse_strict_json, response_place
from .stats import holm

#: The key of an unblinding entry that marks it as a panel request.
JUDGE_KEY = "judge"


def panel_of(instance: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The judge panel a judge-scored instance's family declares, if any."""
    if instance["answer"]["scorer"] != "judge":
        return None
    return instance.get("analysis", {}).get("judge_panel")


def panel_requests(instances: Sequence[Mapping[str, Any]], responses: Mapping[str, str],
                   seed: int, first_index: int) -> tuple[list[dict[str, Any]],
                                                         dict[str, dict[str, str]]]:
    """The panel's requests for ``instances`` (those whose family declares a panel) that have
    a response, numbered from ``first_index``, and their unblinding map. A group whose anchor
    has no response gets no request."""
    groups: dict[tuple, dict[str, Any]] = defaultdict(lambda: {"anchor": None, "others": []})
    for inst in instances:
        panel = panel_of(inst)
        if panel is None or inst["id"] not in responses:
            continue
        axis, value = panel["anchor"]["axis"], panel["anchor"]["value"]
        slot = groups[pair_key(inst, axis)]
        if inst["axes"].get(axis) == value:
            slot["anchor"] = inst
        else:
            slot["others"].append(inst)
    pending = []
    for key in sorted(groups, key=repr):
        anchor = groups[key]["anchor"]
        if anchor is None:
            continue
        for other in sorted(groups[key]["others"], key=lambda i: i["id"]):
            working_on(f"instance {other['id']}", response_place(responses, other["id"]))
            for judge in panel_of(anchor)["judges"]:
                stream = KeyedRandom(seed, ("judge-panel", judge, other["id"]))
                a, b = (anchor, other) if stream.randbelow(2) == 0 else (other, anchor)
                request = {"judge": judge, "instructions": INSTRUCTIONS_PAIR,
                           "rubric": anchor["answer"]["rubric"], "task": task_prompt(anchor),
                           "responses": {"A": responses[a["id"]], "B": responses[b["id"]]}}
                pending.append((stream.next_u64(), request, {JUDGE_KEY: judge, "A": a["id"],
                                                             "B": b["id"]}))
    pending.sort(key=lambda p: p[0])  # a seeded order: no position gives a condition away
    requests, unblind = [], {}
    for index, (_, request, slots) in enumerate(pending, start=first_index):
        request_id = f"req-{index + 1:06d}"
        requests.append({"request_id": request_id, **request})
        unblind[request_id] = slots
    return requests, unblind


@dataclass(frozen=True)
class PanelJudgment:
    """One judge's scores of one request: the two instances behind A and B and their scores."""

    judge: str
    scores: tuple[tuple[str, float], tuple[str, float]]
    #: The judgments file and the line it was read from: where an error about it points.
    place: tuple[str, int] | None = field(default=None, compare=False)


def load_panel_judgments(path: Path, unblind_path: Path,
                         scales: Mapping[str, Sequence[float] | None], *,
                         allow_missing: bool = False) -> list[PanelJudgment]:
    """The judgments of the panel requests in ``unblind`` (entries with a ``judge``), read
    from ``path``; every other line is left to ``judge.load_judgments``, which is called
    first and has checked the map's other entries and the instances it names. Malformed lines,
    scores outside the family's scale and a request judged twice are errors naming the line;
    a panel request without a judgment is an error unless ``allow_missing``."""
    unblind = parse_strict_json(read_text(unblind_path, str(unblind_path)), str(unblind_path))
    panel = {k: v for k, v in unblind.items() if isinstance(v, dict) and JUDGE_KEY in v} \
        if isinstance(unblind, dict) else {}
    if not panel:
        return []
    found: dict[str, PanelJudgment] = {}
    problems = ProblemCollector()
    display = str(path)
    # A line that is not JSON is reported by load_judgments, which reads every line.
    for number, record in jsonl_records(path, display):
        request_id = record.get("request_id") if isinstance(record, dict) else None
        slots = panel.get(request_id) if isinstance(request_id, str) else None
        if slots is None:
            continue
        working_on(f"instances {slots['A']} and {slots['B']}", (display, number))
        pair = record.get("scores")
        if not isinstance(pair, dict) or set(pair) != {"A", "B"} or \
                not all(is_number(v) and abs(v) <= MAX_JUDGE_SCORE for v in pair.values()):
            problems.add(Problem('expected {"request_id", "scores": {"A": NUMBER, "B": '
                                 'NUMBER}}', display, number, 1))
            continue
        if request_id in found:
            problems.add(Problem(f"a second judgment of {request_id}", display, number, 1))
            continue
        for side in ("A", "B"):
            scale = scales.get(slots[side])
            if scale and not scale[0] <= pair[side] <= scale[1]:
                problems.add(Problem(f"judge score {pair[side]:g} for {slots[side]} is outside "
                                     f"the family's scale {scale[0]:g}..{scale[1]:g}", display,
                                     number, 1))
        found[request_id] = PanelJudgment(slots[JUDGE_KEY], (
            (slots["A"], float(pair["A"])), (slots["B"], float(pair["B"]))), (display, number))
    problems.raise_if_any()
    missing = sorted(set(panel) - set(found))
    if missing and not allow_missing:
        raise SpecError.single(f"{len(missing)} of {len(panel)} judge panel requests have no "
                               f"judgment (first: {', '.join(missing[:3])}); pass "
                               "--allow-missing to leave them unjudged", display)
    return [found[k] for k in sorted(found)]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _interval(values: Sequence[float], level: float) -> list[float] | None:
    found = t_interval(values, level)
    return None if found is None else [_round(found[0]), _round(found[1])]


def panel_report(instances: Sequence[Mapping[str, Any]],
                 judgments: Sequence[PanelJudgment], by: Sequence[str] = ()
                 ) -> list[dict[str, Any]]:
    """One entry per family (and value of each ``by`` field or axis) and condition judged
    beside the anchor: the judge mean of the condition and of the anchor in the same
    requests, the anchored difference, its interval and tests. The group is the unit."""
    by_id = {i["id"]: i for i in instances}
    # (family, row key, condition) -> group -> judge -> (condition score, anchor score)
    cells: dict[tuple, dict[int, dict[str, list[tuple[float, float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    declared: dict[str, Mapping[str, Any]] = {}
    for judgment in judgments:
        (first, score_first), (second, score_second) = judgment.scores
        working_on(f"instances {first} and {second}", judgment.place)
        a, b = by_id.get(first), by_id.get(second)
        if a is None or b is None:
            continue
        panel = panel_of(a)
        if panel is None:
            continue
        axis, value = panel["anchor"]["axis"], panel["anchor"]["value"]
        if a["axes"].get(axis) == value:
            (anchor, anchor_score), (other, other_score) = (a, score_first), (b, score_second)
        else:
            (anchor, anchor_score), (other, other_score) = (b, score_second), (a, score_first)
        declared[other["family"]] = panel
        key = (other["family"], _row_key(other, by), other["axes"].get(axis))
        cells[key][other["group"]][judgment.judge].append((other_score, anchor_score))
    entries = []
    for family, row, condition in sorted(cells, key=repr):
        groups = cells[(family, row, condition)]
        panel = declared[family]
        own, anchor, differences = [], [], []
        for group in sorted(groups):
            judges = groups[group]
            # Each judge's mean over its requests of the group, then the mean over judges:
            # every judge weighs alike, whatever it returned.
            per_judge = [(sum(s for s, _ in pairs) / len(pairs),
                          sum(a for _, a in pairs) / len(pairs)) for pairs in judges.values()]
            own.append(sum(s for s, _ in per_judge) / len(per_judge))
            anchor.append(sum(a for _, a in per_judge) / len(per_judge))
            differences.append(own[-1] - anchor[-1])
        equivalence = panel.get("equivalence")
        entry: dict[str, Any] = {
            "family": family, "key": dict(row), "condition": condition,
            "anchor": panel["anchor"]["value"], "groups": len(groups),
            "judges": sorted({j for g in groups.values() for j in g}),
            "judge_mean": _round(mean_and_se(own)[0]), "judge_mean_ci": _interval(own, 0.95),
            "anchor_mean": _round(mean_and_se(anchor)[0]),
            "anchor_mean_ci": _interval(anchor, 0.95),
            "difference": _round(mean_and_se(differences)[0]),
            "difference_ci": _interval(differences, 0.95),
            "p_value": t_test_zero(differences)}
        if equivalence:
            found = tost(differences, float(equivalence["bound"]),
                         float(equivalence.get("alpha", 0.05)))
            entry["equivalence"] = {
                "test": "tost", "bound": found["bound"], "alpha": found["alpha"],
                "ci": None if found["ci"] is None else [_round(x) for x in found["ci"]],
                "p_lower": found["p_lower"], "p_upper": found["p_upper"],
                "p_value": found["p_value"], "equivalent": found["equivalent"]}
        entries.append(entry)
    # The difference tests of the panel are one family of tests (Holm); an equivalence claim
    # for every condition at once is an intersection-union test and needs no correction.
    tested = [e for e in entries if e["p_value"] is not None]
    for entry, adjusted in zip(tested, holm([e["p_value"] for e in tested]), strict=True):
        entry["p_adjusted"] = adjusted
    for entry in entries:
        entry.setdefault("p_adjusted", None)
    return entries


def _row_key(instance: Mapping[str, Any], by: Sequence[str]) -> tuple:
    """The values of the ``by`` keys (fields or axes; family and the anchor axis are the
    report's own) that split the panel's report into rows."""
    out = []
    for key in by:
        if key in ("family", "variant", "group", "design"):
            continue
        value = instance.get("fields", {}).get(key, instance["axes"].get(key))
        if value is not None:
            out.append((key, value))
    return tuple(out)
