"""``memspec export RELEASE --format inspect``: a release as an inspect_ai dataset and task.

Writes ``samples.jsonl`` (one sample per instance: ``id``, ``input`` the message list,
``target`` the gold, flat ``metadata``) and ``task.py``, whose tasks read it. Programmatic
items are scored as ``memspec score`` scores them (the scoring code is memspec's own, imported
by the task, so the two cannot drift apart); judge items go to a second task, rated by a
grader model on the family's rubric and scale.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .canonical import dump_bytes
from .export import write_all
from .parquet_export import split_of

SAMPLES_FILE = "samples.jsonl"
TASK_FILE = "task.py"


def _messages(instance: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every message of every phase in order, as inspect's chat messages. A tool's message
    becomes a user's, as in the example of docs/scoring.md: chat APIs take a tool message only in
    answer to a tool call the model made, and an instance's tool results answer none."""
    return [{"role": "user" if message["role"] == "tool" else message["role"],
             "content": message["content"]}
            for phase in instance["phases"] for message in phase["messages"]]


def _flat_metadata(instance: Mapping[str, Any], release: str) -> dict[str, Any]:
    """Plain values only: the instance's coordinates, its axes and fields (prefixed), the
    scorer kind, and the whole answer as JSON text (what the task's scorer reads)."""
    metadata: dict[str, Any] = {
        "release": release, "family": instance["family"], "paradigm": instance["paradigm"],
        "group": instance["group"], "design": instance["design"],
        "variant": instance["variant"], "split": split_of(instance),
        "scorer": instance["answer"]["scorer"],
        "answer": json.dumps(instance["answer"], sort_keys=True, ensure_ascii=False),
        "analysis": json.dumps(instance.get("analysis", {}), sort_keys=True, ensure_ascii=False),
    }
    for name, value in sorted(instance["axes"].items()):
        metadata[f"axis_{name}"] = value
    for name, value in sorted(instance.get("fields", {}).items()):
        metadata[f"field_{name}"] = value
    return metadata


def inspect_sample(instance: Mapping[str, Any], release: str) -> dict[str, Any]:
    """One instance as an inspect_ai sample record."""
    answer = instance["answer"]
    target = answer.get("gold", answer.get("rubric", ""))
    return {"id": instance["id"], "input": _messages(instance), "target": target,
            "metadata": _flat_metadata(instance, release)}


def write_inspect(manifest: Mapping[str, Any], instances: Sequence[Mapping[str, Any]],
                  out_dir: Path) -> list[Path]:
    """Write the samples and the task file into ``out_dir``, both or neither; return the
    paths written."""
    release = f"{manifest['release']}-{manifest['version']}"
    return write_all(out_dir, {
        SAMPLES_FILE: b"".join(dump_bytes(inspect_sample(i, release)) for i in instances),
        TASK_FILE: _TASK_SOURCE.replace("RELEASE_NAME", release).encode("utf-8")})


_TASK_SOURCE = '''"""inspect_ai tasks for the memspec release RELEASE_NAME (by `memspec export`).

    inspect eval task.py@memspec_release --model PROVIDER/MODEL [-T family=ID] [-T split=NAME]
    inspect eval task.py@memspec_judged --model PROVIDER/MODEL [-T grader=PROVIDER/MODEL]

memspec_release holds the programmatically scored items and scores the first attempt exactly
as `memspec score` does (it imports memspec's scoring: install memspec where inspect runs).
memspec_judged holds the judge-scored items; a grader model rates each response on the
item's rubric, and the score is the rating on the family's scale.
"""

import json
import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import get_model
from inspect_ai.scorer import (CORRECT, INCORRECT, Score, Target, accuracy, mean, scorer,
                               stderr)
from inspect_ai.solver import TaskState, generate

SAMPLES = str(Path(__file__).parent / "samples.jsonl")


def _dataset(judged: bool, family: str | None, split: str | None):
    dataset = json_dataset(SAMPLES, name="RELEASE_NAME")
    kind = dataset.filter(lambda s: (s.metadata["scorer"] == "judge") == judged)
    chosen = kind.filter(lambda s: family in (None, s.metadata["family"])
                         and split in (None, s.metadata["split"]))
    if len(chosen) == 0 and (family, split) != (None, None):
        families = sorted({s.metadata["family"] for s in kind})
        splits = sorted({s.metadata["split"] for s in kind})
        raise ValueError(
            f"RELEASE_NAME has no {'judge-scored' if judged else 'programmatically scored'} "
            f"item with family={family!r} and split={split!r}; its families: "
            f"{', '.join(families) or '(none)'}; its splits: {', '.join(splits) or '(none)'}")
    return chosen


@scorer(metrics=[accuracy(), stderr()])
def memspec_answer():
    """Right or wrong, as `memspec score` decides it (only the first attempt counts)."""
    from generator.scoring import is_correct

    async def score(state: TaskState, target: Target) -> Score:
        answer = json.loads(state.metadata["answer"])
        response = state.output.completion
        right = is_correct(answer, response)
        return Score(value=CORRECT if right else INCORRECT, answer=response,
                     explanation=f"{answer['scorer']} against {target.text!r}")

    return score


JUDGE_PROMPT = """You are rating a response against a rubric.

Rubric: {rubric}

Response:
{response}

Reply with the rating alone, a whole number from {low} to {high}."""


@scorer(metrics=[mean(), stderr()])
def memspec_judge(grader: str | None = None):
    """The grader's rating of the response on the item's rubric and scale."""

    async def score(state: TaskState, target: Target) -> Score:
        analysis = json.loads(state.metadata.get("analysis", "{}"))
        low, high = analysis.get("judge_scale", [1, 10])
        prompt = JUDGE_PROMPT.format(rubric=target.text, response=state.output.completion,
                                     low=low, high=high)
        reply = (await get_model(grader).generate(prompt)).completion
        found = re.search(r"-?\\d+", reply)
        rating = int(found.group()) if found else None
        if rating is None or not low <= rating <= high:
            return Score(value=float("nan"), answer=state.output.completion,
                         explanation=f"no rating from {low} to {high} in {reply!r}")
        return Score(value=float(rating), answer=state.output.completion, explanation=reply)

    return score


@task
def memspec_release(family: str | None = None, split: str | None = None) -> Task:
    """Every programmatically scored item (optionally one family or split)."""
    return Task(dataset=_dataset(False, family, split), solver=generate(),
                scorer=memspec_answer())


@task
def memspec_judged(family: str | None = None, split: str | None = None,
                   grader: str | None = None) -> Task:
    """Every judge-scored item, rated by ``grader`` (default: the model under evaluation)."""
    return Task(dataset=_dataset(True, family, split), solver=generate(),
                scorer=memspec_judge(grader))
'''
