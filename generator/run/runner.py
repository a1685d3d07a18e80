"""Running a release on models and memory systems: the release's exported inspect task run by
inspect_ai's own ``eval_set`` (its providers, concurrency, retries, rate limits, caching,
progress display and logs), one eval set a memory system, each in its own folder of the log
folder, so that running the same command again resumes each from its logs: samples already
answered are taken from them, not asked again."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import CheckFailed, SpecError
from ..core.limits import CommandBudget
from ..exports.export_inspect import TASK_FILE, write_inspect
from ..exports.offline_tokenizer import arrange_tokenizer

#: The folder of the log folder the task is exported to (the same for every run, which is
#: how inspect knows a task it ran before).
TASK_FOLDER = "task"
#: The folder of the log folder that holds tiktoken's cache (unless $TIKTOKEN_CACHE_DIR
#: names one).
TOKENIZER_FOLDER = "tiktoken"
#: The task of the exported file that is run.
TASK_NAME = "memspec_release"


@dataclass(frozen=True)
class RunPlan:
    """What to run: the models (``PROVIDER/MODEL`` as inspect names them), the memory
    systems, and inspect's options."""

    models: list[str]
    memories: list[str]
    log_dir: Path
    memory_k: int = 5
    limit: int | None = None
    families: list[str] | None = None
    split: str | None = None
    seed: int | None = None
    max_connections: int | None = None
    model_base_url: str | None = None
    display: str | None = None


def memory_folder(memory: str) -> str:
    """The log folder's subfolder of one memory system's eval set."""
    return "memory-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", memory).strip("_")


def _task_args(plan: RunPlan, memory: str, judged: bool) -> dict[str, Any]:
    args: dict[str, Any] = {"memory": memory, "memory_k": plan.memory_k, "judged": judged}
    if plan.split:  # else the task's own choice: the test split of a release with splits
        args["split"] = plan.split
    if plan.families:
        args["family"] = ",".join(plan.families)
    return args


def release_of(manifest: Mapping[str, Any]) -> str:
    """The release's name and version, as its folder is named."""
    return f"{manifest['release']}-{manifest['version']}"


def run_release(manifest: Mapping[str, Any], instances: Sequence[Mapping[str, Any]],
                plan: RunPlan) -> list[Path]:
    """Run every model with every memory system on the release and return the logs (one a
    model and memory system). An eval set that does not finish is an error that says to run
    the command again: it resumes from the logs."""
    try:
        from inspect_ai import eval_set
    except ImportError:
        raise SpecError.single("memspec run needs inspect_ai: pip install 'memspec[run]'"
                               ) from None
    known = {i["family"] for i in instances}
    unknown = [f for f in plan.families or [] if f not in known]
    if unknown:
        raise SpecError.single(f"--family {unknown[0]!r} is no family of this release (its "
                               f"families: {', '.join(sorted(known))})")
    if all(i["answer"]["scorer"] == "judge" for i in instances):
        raise SpecError.single("every item of this release is judge-scored: its exported task "
                               "has memspec_judged alone (run it with inspect eval)")
    # The tokenizer's cache in the log folder: a run writes nothing outside it.
    arrange_tokenizer(plan.log_dir / TOKENIZER_FOLDER)
    task_dir = plan.log_dir / TASK_FOLDER
    # The export is under memspec's budget; the model calls are under inspect's own limits.
    with CommandBudget("run", release_of(manifest)):
        write_inspect(manifest, instances, task_dir)
    judged = any(i["answer"]["scorer"] == "judge" for i in instances)
    logs: list[Path] = []
    for memory in plan.memories:
        folder = plan.log_dir / memory_folder(memory)
        options: dict[str, Any] = {"limit": plan.limit, "max_connections": plan.max_connections,
                                   "seed": plan.seed, "model_base_url": plan.model_base_url,
                                   "display": plan.display}
        try:
            success, results = eval_set(
                tasks=[f"{task_dir / TASK_FILE}@{TASK_NAME}"], log_dir=str(folder),
                model=plan.models, task_args=_task_args(plan, memory, judged),
                **{k: v for k, v in options.items() if v is not None})
        except Exception as exc:
            # What inspect refuses before it runs anything (a provider's package missing, an
            # unknown model, a log folder of another run) is said as an error, not a trace.
            if type(exc).__name__ != "PrerequisiteError":
                raise
            raise SpecError.single(re.sub(r"\[/?\w+\]", "", str(exc)).strip(),
                                   str(folder)) from None
        if not success:
            failed = [r for r in results if r.status != "success"]
            reason = next((r.error.message for r in failed if r.error), "interrupted")
            raise CheckFailed.single(
                f"the run of memory system {memory!r} did not finish ({len(failed)} of "
                f"{len(results)} tasks: {reason.strip().splitlines()[0][:200]}); run the "
                "same command again to resume it from its logs", str(folder))
        logs += [Path(r.location) for r in results]
    return logs
