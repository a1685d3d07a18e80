"""Responses read from inspect eval logs (``.eval`` and ``.json``, through inspect_ai's own
reader): a sample is the response to the instance of its id, its first completion the first
attempt; a sample that errored, hit a limit, was cut short or was refused is counted apart,
by kind, and scored as having no response (never as a wrong one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.responses import Responses
from ..core.errors import Problem, ProblemCollector, SpecError, lookalike_note

#: The file names inspect gives its logs.
LOG_SUFFIXES = (".eval", ".json")
#: What a sample's limit is counted as, by inspect's limit type.
LIMIT_KINDS = {"time": "timeout", "working": "timeout", "token": "truncated",
               "context": "truncated", "message": "limit", "turn": "limit", "cost": "limit",
               "operator": "cancelled", "custom": "limit"}
#: What a completion's stop reason is counted as, where it is not an answer.
STOP_KINDS = {"max_tokens": "truncated", "model_length": "truncated",
              "content_filter": "refused"}
#: The kinds of sample that have no response, in the order reports list them.
ISSUE_KINDS = ("error", "timeout", "truncated", "refused", "limit", "cancelled")


def _inspect_log() -> Any:
    """inspect_ai's log module, or a clear error where it is not installed."""
    try:
        from inspect_ai import log
    except ImportError:
        raise SpecError.single("reading inspect eval logs needs inspect_ai: pip install "
                               "'memspec[run]'") from None
    return log


def is_log(path: Path) -> bool:
    """Whether ``path`` is read as inspect logs: a folder, or a file named as inspect names
    its logs (a responses file is JSONL)."""
    return path.is_dir() or path.suffix in LOG_SUFFIXES


def log_files(path: Path) -> list[Path]:
    """The log files ``path`` names: itself, or the logs in a folder (inspect's listing)."""
    if not path.exists():
        raise SpecError.single("log file not found", str(path))
    if not path.is_dir():
        return [path]
    found = sorted(Path(info.name.removeprefix("file://"))
                   for info in _inspect_log().list_eval_logs(str(path), recursive=False))
    if not found:
        raise SpecError.single("no inspect eval log in this folder", str(path))
    return found


@dataclass
class RunLog:
    """The responses of one model (with one memory system) read from its logs."""

    label: str
    responses: Responses
    logs: list[str] = field(default_factory=list)
    #: The kind of every sample without a response (error, timeout, ...), by instance id.
    issues: dict[str, str] = field(default_factory=dict)
    #: Why, by instance id (the error's message, the limit, the stop reason).
    reasons: dict[str, str] = field(default_factory=dict)

    def summary(self, instances: int) -> dict[str, Any]:
        """What the report says of the run: its logs, how many samples it ran of the
        release's ``instances``, and each kind of sample with no response, with its ids."""
        kinds = {kind: sorted(i for i, k in self.issues.items() if k == kind)
                 for kind in ISSUE_KINDS}
        return {"model": self.label, "logs": self.logs,
                "samples": len(self.responses) + len(self.issues),
                "not_run": instances - len(self.responses) - len(self.issues),
                "issues": {kind: len(ids) for kind, ids in kinds.items()},
                "issue_ids": {kind: ids for kind, ids in kinds.items() if ids}}


def sample_response(sample: Any) -> tuple[str | None, str | None, str]:
    """``(response, issue kind, reason)`` of one sample: the first completion (its first tool
    call where the model called one) and no issue, or no response and what kept it from one."""
    if sample.error is not None:
        return None, "error", sample.error.message.strip().splitlines()[0][:200]
    if sample.limit is not None:
        return None, LIMIT_KINDS.get(sample.limit.type, "limit"), \
            f"{sample.limit.type} limit {sample.limit.limit:g}"
    output = sample.output
    stop = output.choices[0].stop_reason if output.choices else output.stop_reason
    if stop in STOP_KINDS:
        return None, STOP_KINDS[stop], f"stop reason {stop}"
    message = output.choices[0].message if output.choices else None
    if message is not None and message.tool_calls:
        # Imported here: it imports inspect_ai, an optional dependency.
        from ..exports.inspect_tools import call_text, declared

        call = message.tool_calls[0]
        return call_text(call.function, call.arguments, declared(sample.metadata)), None, ""
    return output.completion, None, ""


def _label(eval_spec: Any) -> str:
    """A log's model, with its memory system where it names one other than the full
    history."""
    memory = eval_spec.task_args.get("memory", "full")
    if memory == "full":
        return eval_spec.model
    k = eval_spec.task_args.get("memory_k")
    return f"{eval_spec.model} [{memory}{'' if k is None or memory == 'none' else f' k={k}'}]"


def read_run_logs(paths: Iterable[Path], known_ids: Iterable[str]) -> list[RunLog]:
    """The responses of every model in the logs ``paths`` name (files or folders), one
    ``RunLog`` per model and memory system, in the order first seen. A sample of an unknown
    instance, or one given twice for one model, is an error naming its log; only the first
    epoch of a sample counts."""
    reader = _inspect_log()
    known = set(known_ids)
    runs: dict[str, RunLog] = {}
    problems = ProblemCollector()
    for path in paths:
        for file in log_files(path):
            display = str(file)
            try:
                log = reader.read_eval_log(display, exclude_fields={"events", "store"})
            except Exception as exc:  # inspect's reader raises many kinds; all mean unreadable
                raise SpecError.single(f"not an inspect eval log inspect_ai can read: "
                                       f"{str(exc).splitlines()[0][:200] if str(exc) else exc!r}",
                                       display) from None
            label = _label(log.eval)
            run = runs.setdefault(label, RunLog(label, Responses(display)))
            run.logs.append(display)
            for number, sample in enumerate(log.samples or [], start=1):
                if sample.epoch != 1:
                    continue
                instance_id = str(sample.id)
                if instance_id not in known:
                    problems.add(Problem(f"sample {instance_id!r} is no instance of this "
                                         f"release{lookalike_note(instance_id)}", display,
                                         number, 1))
                    continue
                if instance_id in run.responses or instance_id in run.issues:
                    problems.add(Problem(f"sample {instance_id!r} of {label} is given twice "
                                         "(two logs of one run?)", display, number, 1))
                    continue
                response, kind, reason = sample_response(sample)
                if kind is None:
                    run.responses[instance_id] = response or ""
                    run.responses.lines[instance_id] = number
                else:
                    run.issues[instance_id] = kind
                    run.reasons[instance_id] = reason
    problems.raise_if_any()
    return list(runs.values())


def scored_instances(instances: Iterable[Mapping[str, Any]], run: RunLog
                     ) -> list[Mapping[str, Any]]:
    """The instances a run holds a sample of (answered or not), in the release's order."""
    return [i for i in instances if i["id"] in run.responses or i["id"] in run.issues]
