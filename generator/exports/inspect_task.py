"""inspect_ai tasks for one memspec release, written beside its samples by `memspec export`.

    inspect eval task.py@memspec_release --model PROVIDER/MODEL [-T family=ID] [-T split=NAME]
        [-T memory=full|none|bm25|PATH.py:CLASS] [-T memory_k=5] [-T judged=true]
    inspect eval task.py@memspec_judged --model PROVIDER/MODEL [-T grader=PROVIDER/MODEL]

Needs inspect_ai and the standard library only: the scoring code is in memspec_scoring.py
beside this file, the memory systems in memspec_memory.py, and the release's design (its axes
and contrasts) in design.json. memspec_release holds the programmatically scored items and
scores the first attempt as `memspec score` does (with `-T judged=true` it holds the
judge-scored items too, answered but left unscored, for `memspec judge-requests`);
memspec_judged (written only where the release has judge-scored items) asks a grader model
for a rating on the item's rubric and scale. `-T memory=NAME` hands the phases before the
probe to a memory system and answers the probe with what it recalls (see memspec_memory.py).

A release with splits runs its `test` split unless `-T split=NAME` (or `-T split=all`) says
otherwise. The metrics take the group as the unit (its rotations averaged), or the cluster
that `-T cluster=KEY` names (a metadata key, e.g. `family`): the mean and its standard error
over units, the same per level of every axis, and every contrast of the design (treatment -
control for paired arms) paired by unit.
"""
# This file is the template of the exported task.py: memspec reads its text, never imports it.

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, metric, scorer
from inspect_ai.solver import TaskState, generate, solver

HERE = Path(__file__).parent
SAMPLES = str(HERE / "samples.jsonl")
DESIGN = json.loads((HERE / "design.json").read_text(encoding="utf-8"))
ALL_SPLITS = "all"
# inspect counts tokens with tiktoken's o200k_base (its mock model, for every answer), which
# tiktoken downloads the first time; the export carries the file in tiktoken/, read as
# tiktoken's cache where no other cache is named, so the task runs without the network.
if (HERE / "tiktoken").is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(HERE / "tiktoken"))


def _beside(name: str) -> Any:
    """A module beside this file, loaded by path (no package, no sys.path)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scoring() -> Any:
    """memspec_scoring.py beside this file."""
    return _beside("memspec_scoring")


def _dataset(judged: bool, family: str | None, split: str | None, both: bool = False):
    dataset = json_dataset(SAMPLES, name=DESIGN["release"])
    kind = dataset.filter(lambda s: both or (s.metadata["scorer"] == "judge") == judged)
    if split is None and len(DESIGN["splits"]) > 1 and "test" in DESIGN["splits"]:
        split = "test"  # a release with splits: its test split unless asked otherwise
    wanted = None if split == ALL_SPLITS else split
    # One family, or several separated by commas.
    families = None if family is None else set(str(family).split(","))
    chosen = kind.filter(lambda s: (families is None or s.metadata["family"] in families)
                         and wanted in (None, s.metadata["split"]))
    if len(chosen) == 0 and (family, wanted) != (None, None):
        families = sorted({s.metadata["family"] for s in kind})
        splits = sorted({s.metadata["split"] for s in kind})
        raise ValueError(
            f"{DESIGN['release']} has no "
            f"{'judge-scored' if judged else 'programmatically scored'} item with "
            f"family={family!r} and split={wanted!r}; its families: "
            f"{', '.join(families) or '(none)'}; its splits: {', '.join(splits) or '(none)'}")
    return chosen


# Statistics on the design's unit: each unit's (group's, or cluster's) mean first, then the
# mean and standard error over units, as `memspec score` takes them; items of one group are
# rotations of one scenario and are not independent.

def _value(score: Any) -> float | None:
    value = score.score.value
    if isinstance(value, str):
        return 1.0 if value == CORRECT else 0.0
    value = float(value)
    return None if math.isnan(value) else value


def _unit(score: Any, cluster: str | None) -> str:
    metadata = score.sample_metadata or {}
    return str(metadata.get(cluster)) if cluster else str(metadata.get("unit"))


def _mean_se(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def _unit_means(scores: list[Any], cluster: str | None) -> list[float]:
    by_unit: dict[str, list[float]] = {}
    for score in scores:
        value = _value(score)
        if value is not None:
            by_unit.setdefault(_unit(score, cluster), []).append(value)
    return [sum(v) / len(v) for v in by_unit.values()]


@metric
def unit_mean(cluster: str | None = None):
    """The mean over units of each unit's mean score, and its standard error."""

    def compute(scores: list[Any]) -> dict[str, float]:
        mean, se = _mean_se(_unit_means(scores, cluster))
        return {"mean": mean, "stderr": se}

    return compute


@metric
def axis_means(axis: str, cluster: str | None = None):
    """The unit mean and its standard error at each level of one axis."""

    def compute(scores: list[Any]) -> dict[str, float]:
        levels: dict[str, list[Any]] = {}
        for score in scores:
            level = (score.sample_metadata or {}).get(f"axis_{axis}")
            if level is not None:
                levels.setdefault(str(level), []).append(score)
        result = {}
        for level, members in levels.items():
            mean, se = _mean_se(_unit_means(members, cluster))
            result[f"{axis}={level}"] = mean
            result[f"{axis}={level} stderr"] = se
        return result

    return compute


def _selected(metadata: dict[str, Any], selector: dict[str, str]) -> bool:
    return all(str(metadata.get(key)) == value for key, value in selector.items())


def _side(members: list[Any], selectors: list[dict[str, str]]) -> float | None:
    """The mean over ``selectors``' cells of each cell's mean; None if a cell is empty."""
    cells = []
    for selector in selectors:
        values = [v for s in members if _selected(s.sample_metadata or {}, selector)
                  for v in [_value(s)] if v is not None]
        if not values:
            return None
        cells.append(sum(values) / len(values))
    return sum(cells) / len(cells)


@metric
def contrast(name: str, a: list[dict[str, str]], b: list[dict[str, str]],
             cluster: str | None = None):
    """One contrast of the design, paired by unit: per unit the mean over the ``a`` cells
    less the mean over the ``b`` cells (a unit lacking a cell left out); their mean and its
    standard error."""

    def compute(scores: list[Any]) -> dict[str, float]:
        by_unit: dict[str, list[Any]] = {}
        for score in scores:
            by_unit.setdefault(str((score.sample_metadata or {}).get("unit")), []).append(score)
        differences: dict[str, list[float]] = {}
        for members in by_unit.values():
            plus, minus = _side(members, a), _side(members, b)
            if plus is not None and minus is not None:
                key = _unit(members[0], cluster)
                differences.setdefault(key, []).append(plus - minus)
        mean, se = _mean_se([sum(d) / len(d) for d in differences.values()])
        return {name: mean, f"{name} stderr": se}

    return compute


def _metrics(dataset: Any, cluster: str | None) -> list[Any]:
    """The metrics of the items chosen: overall, per axis, and each contrast they hold."""
    keys = {key for sample in dataset for key in sample.metadata}
    chosen = [unit_mean(cluster)]
    chosen += [axis_means(axis, cluster) for axis in DESIGN["axes"] if f"axis_{axis}" in keys]
    for entry in DESIGN["contrasts"]:
        needed = {key for selector in entry["a"] + entry["b"] for key in selector}
        if needed <= keys and any(_selected(s.metadata, entry["a"][0]) for s in dataset):
            chosen.append(contrast(entry["name"], entry["a"], entry["b"], cluster))
    return chosen


def _response(state: TaskState) -> str:
    """The first completion, or the first tool call the model made (as ``name(value, ...)``),
    which ended the sample."""
    message = state.output.message if state.output.choices else None
    if message is not None and message.tool_calls:
        call = message.tool_calls[0]
        tools = _beside("memspec_tools")
        return tools.call_text(call.function, call.arguments, tools.declared(state.metadata))
    return state.output.completion


@scorer(metrics=[unit_mean()])
def memspec_answer():
    """Right or wrong, as `memspec score` decides it (only the first attempt counts)."""
    is_correct = _scoring().is_correct

    async def score(state: TaskState, target: Target) -> Score:
        answer = json.loads(state.metadata["answer"])
        response = _response(state)
        right = is_correct(answer, response)
        if right is None:  # a judge-scored item: rated from the log by a judge, not here
            return Score(value=float("nan"), answer=response,
                         explanation="judge-scored: see memspec judge-requests")
        return Score(value=CORRECT if right else INCORRECT, answer=response,
                     explanation=f"{answer['scorer']} against {target.text!r}")

    return score


@solver
def memory_solver(memory: str = "full", k: int = 5):
    """The phases before the probe handed to the memory system ``memory`` (a new one for
    each sample), the probe answered with what it recalls in front of it."""
    memories = _beside("memspec_memory")
    system_class = memories.memory_class(memory)

    async def solve(state: TaskState, generate_next: Any) -> TaskState:
        # The messages only: the generate solver after this one answers them.
        state.messages = memories.with_memory(state.messages,
                                              int(state.metadata["probe_messages"]),
                                              system_class(k=k))
        return state

    return solve


@solver
def offer_tools():
    """Where the answer is a function call, the functions it names offered as tools (see
    memspec_tools.py); the generate after it stops at the model's first call."""
    tools = _beside("memspec_tools")

    async def solve(state: TaskState, generate_next: Any) -> TaskState:
        state.tools = tools.tool_defs(state.metadata)
        return state

    return solve


# --- programmatic task ---
@task
def memspec_release(family: str | None = None, split: str | None = None,
                    cluster: str | None = None, memory: str = "full", memory_k: int = 5,
                    judged: bool = False) -> Task:
    """Every programmatically scored item (of one family or split, if asked; with
    ``judged``, every judge-scored one too, left unscored), answered through the memory
    system ``memory``."""
    dataset = _dataset(False, family, split, both=judged)
    # tool_calls="none": a call the model makes is recorded, never run, and ends the sample.
    return Task(dataset=dataset,
                solver=[memory_solver(memory, memory_k), offer_tools(),
                        generate(tool_calls="none")],
                scorer=memspec_answer(),
                metrics=_metrics(dataset, cluster))
# --- end programmatic task ---


# --- judged task ---
JUDGE_PROMPT = """You are rating a response against a rubric.

Rubric: {rubric}

Response:
{response}

Reply with the rating alone, a whole number from {low} to {high}."""


@scorer(metrics=[unit_mean()])
def memspec_judge(grader: str | None = None):
    """The grader's rating of the response on the item's rubric and scale."""

    async def score(state: TaskState, target: Target) -> Score:
        low, high = json.loads(state.metadata.get("analysis_judge_scale") or "[1, 10]")
        prompt = JUDGE_PROMPT.format(rubric=target.text, response=state.output.completion,
                                     low=low, high=high)
        reply = (await get_model(grader).generate(prompt)).completion
        found = re.search(r"-?\d+", reply)
        rating = int(found.group()) if found else None
        if rating is None or not low <= rating <= high:
            return Score(value=float("nan"), answer=state.output.completion,
                         explanation=f"no rating from {low} to {high} in {reply!r}")
        return Score(value=float(rating), answer=state.output.completion, explanation=reply)

    return score


@task
def memspec_judged(family: str | None = None, split: str | None = None,
                   grader: str | None = None, cluster: str | None = None) -> Task:
    """Every judge-scored item, rated by ``grader`` (default: the model under evaluation)."""
    dataset = _dataset(True, family, split)
    return Task(dataset=dataset, solver=generate(), scorer=memspec_judge(grader),
                metrics=_metrics(dataset, cluster))
# --- end judged task ---
