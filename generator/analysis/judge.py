"""Judge requests for the items a program cannot score (and for programmatically scored items
whose answer also carries a rubric, where a design wants a judge's rating beside the
program's verdict), and folding judgments back in.

Paired judge items (e.g. the experimental and control arms of a priming pair) go to the judge
side by side in one request, their A/B order drawn from a seeded stream, so the judge cannot
tell which arm is which; the unblinding map is written beside the requests.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import Problem, ProblemCollector, SpecError
from ..core.limits import working_on
from ..core.rng import KeyedRandom
from ..spec.instances import all_messages, pair_key
from ..spec.yamlsafe import read_text
from .responses import jsonl_records, parse_strict_json, response_place

INSTRUCTIONS_SINGLE = ("Score the response against the rubric. Reply with JSON "
                       '{"score": NUMBER} and nothing else.')
INSTRUCTIONS_PAIR = ("Score each of the two responses, A and B, against the rubric, "
                     'independently. Reply with JSON {"scores": {"A": NUMBER, "B": NUMBER}} '
                     "and nothing else.")


def task_prompt(instance: Mapping[str, Any]) -> str:
    """The last user message: the task the response answers."""
    users = [m["content"] for m in all_messages(instance) if m["role"] == "user"]
    return users[-1] if users else ""


def build_requests(instances: Sequence[Mapping[str, Any]], responses: Mapping[str, str],
                   seed: int) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]]]:
    """Requests for every instance with a rubric (every judge-scored one, and a programmatically
    scored one whose answer also declares a rubric; where its reading says ``unplaced:
    judge``, only a response the reader cannot place) that has a response, and the
    unblinding map from request id to which instance is behind each slot."""
    requests: list[dict[str, Any]] = []
    unblind: dict[str, dict[str, str]] = {}
    pairs: dict[tuple, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for inst in instances:
        working_on(f"instance {inst['id']}", response_place(responses, inst["id"]))
        answer = inst["answer"]
        if "rubric" not in answer or inst["id"] not in responses:
            continue
        if answer.get("reading", {}).get("unplaced") == "judge" and \
                not _unplaced(answer, responses[inst["id"]]):
            continue  # the reader placed it: scored offline, no judge needed
        if inst.get("analysis", {}).get("judge_panel"):
            continue  # judged by the family's panel, below
        declared = inst.get("analysis", {}).get("judge_pairs")
        if declared and inst["axes"].get(declared["axis"]) in (declared["treatment"],
                                                               declared["control"]):
            role = "treatment" if inst["axes"][declared["axis"]] == declared["treatment"] \
                else "control"
            pairs[pair_key(inst, declared["axis"])][role] = inst
            continue
        request_id = _request_id(len(requests))
        requests.append({"request_id": request_id, "instructions": INSTRUCTIONS_SINGLE,
                         "rubric": answer["rubric"], "task": task_prompt(inst),
                         "response": responses[inst["id"]]})
        unblind[request_id] = {"response": inst["id"]}
    for key in sorted(pairs, key=lambda k: json.dumps(k)):
        arms = pairs[key]
        if len(arms) != 2:
            continue  # an arm without its partner is judged with the singles below
        treatment, control = arms["treatment"], arms["control"]
        working_on(f"instance {treatment['id']}", response_place(responses, treatment["id"]))
        request_id = _request_id(len(requests))
        first = KeyedRandom(seed, ("judge", "order", treatment["id"])).randbelow(2)
        a, b = (treatment, control) if first == 0 else (control, treatment)
        requests.append({"request_id": request_id, "instructions": INSTRUCTIONS_PAIR,
                         "rubric": treatment["answer"]["rubric"], "task": task_prompt(treatment),
                         "responses": {"A": responses[a["id"]], "B": responses[b["id"]]}})
        unblind[request_id] = {"A": a["id"], "B": b["id"]}
    for key in sorted(pairs, key=lambda k: json.dumps(k)):
        if len(pairs[key]) == 1:
            inst = next(iter(pairs[key].values()))
            working_on(f"instance {inst['id']}", response_place(responses, inst["id"]))
            request_id = _request_id(len(requests))
            requests.append({"request_id": request_id, "instructions": INSTRUCTIONS_SINGLE,
                             "rubric": inst["answer"]["rubric"], "task": task_prompt(inst),
                             "response": responses[inst["id"]]})
            unblind[request_id] = {"response": inst["id"]}
    from .judge_panel import panel_requests  # it builds on this module's helpers

    panel, panel_unblind = panel_requests(instances, responses, seed, len(requests))
    return requests + panel, {**unblind, **panel_unblind}


def _unplaced(answer: Mapping[str, Any], response: str) -> bool:
    """Whether the reading stage cannot place ``response`` (it goes to the judge)."""
    from .reading import read  # only answers that route replies to a judge need it

    return read(answer, response).verdict == "unscorable"


def _request_id(index: int) -> str:
    # Opaque on purpose: an id naming the instance would tell the judge which arm is which.
    return f"req-{index + 1:06d}"


#: Largest judge score taken, either way: beyond it, sums and variances of scores lose all
#: precision or overflow, and no judge's scale goes near it.
MAX_JUDGE_SCORE = 1e12


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def load_judgments(path: Path, unblind_path: Path,
                   scales: Mapping[str, Sequence[float] | None], *,
                   allow_missing: bool = False) -> dict[str, float]:
    """Judge scores by instance id, unblinded; malformed lines, and scores outside their
    family's scale, are errors naming the line.

    ``scales`` holds every instance of the release being scored, by id, with its family's
    judge scale (low, high) or None. The unblinding map must name only those instances, and
    every request in it must have its judgment, unless ``allow_missing``: a metric computed
    from the judgments that happened to come back would not say so."""
    instance_ids = scales.keys()
    unblind = parse_strict_json(read_text(unblind_path, str(unblind_path)), str(unblind_path))
    if isinstance(unblind, dict):
        # A judge panel's requests (judge_panel.load_panel_judgments reads their lines).
        panel = {k for k, v in unblind.items() if isinstance(v, dict) and "judge" in v
                 and set(v) == {"judge", "A", "B"} and all(isinstance(x, str)
                                                          for x in v.values())}
        instance_panel = {i for k in panel for i in (unblind[k]["A"], unblind[k]["B"])}
        unblind = {k: v for k, v in unblind.items() if k not in panel}
    else:
        panel, instance_panel = set(), set()
    if not isinstance(unblind, dict) or not all(
            isinstance(v, dict) and v and set(v) <= {"response", "A", "B"}
            and all(isinstance(x, str) for x in v.values()) for v in unblind.values()):
        raise SpecError.single("not an unblinding map written by judge-requests",
                               str(unblind_path))
    foreign = sorted(({i for slots in unblind.values() for i in slots.values()}
                      | instance_panel) - set(instance_ids))
    if foreign:
        raise SpecError.single(f"the unblinding map names instances this release does not "
                               f"hold ({len(foreign)} in all; first: {', '.join(foreign[:3])})",
                               str(unblind_path))
    scores: dict[str, float] = {}
    problems = ProblemCollector()  # a flood of bad lines is counted, not kept
    display = str(path)
    for number, record in jsonl_records(path, display, problems):
        request_id = record.get("request_id") if isinstance(record, dict) else None
        if isinstance(request_id, str) and request_id in panel:
            continue  # a panel request: judge_panel reads it
        slots = unblind.get(request_id) if isinstance(request_id, str) else None
        if slots is None:
            problems.add(Problem(f"unknown request_id {request_id!r}", display, number, 1))
            continue
        if "response" in slots:
            if not is_number(record.get("score")):
                problems.add(Problem('expected {"request_id", "score": NUMBER}', display,
                                        number, 1))
                continue
            given = {"response": record["score"]}
        else:
            pair = record.get("scores")
            if not isinstance(pair, dict) or set(pair) != {"A", "B"} or \
                    not all(is_number(v) for v in pair.values()):
                problems.add(Problem('expected {"request_id", "scores": {"A": NUMBER, '
                                        '"B": NUMBER}}', display, number, 1))
                continue
            given = pair
        for slot, instance_id in slots.items():
            working_on(f"instance {instance_id}", (display, number))
            if instance_id in scores:
                problems.add(Problem(f"a second judgment for {instance_id}", display,
                                        number, 1))
            score, scale = float(given[slot]), scales[instance_id]
            if abs(score) > MAX_JUDGE_SCORE:
                problems.add(Problem(f"judge score {score:g} for {instance_id} is too large "
                                     f"(at most {MAX_JUDGE_SCORE:g} either way)", display,
                                     number, 1))
                continue
            if scale and not scale[0] <= score <= scale[1]:
                problems.add(Problem(
                    f"judge score {score:g} for {instance_id} is outside the family's scale "
                    f"{scale[0]:g}..{scale[1]:g}", display, number, 1))
            scores[instance_id] = score
    problems.raise_if_any()
    missing = [request for request, slots in unblind.items()
               if not all(i in scores for i in slots.values())]
    if missing and not allow_missing:
        raise SpecError.single(f"{len(missing)} of {len(unblind)} judge requests have no "
                               f"judgment (first: {', '.join(missing[:3])}); pass "
                               "--allow-missing to leave their items unjudged", display)
    return scores
