"""Reading a responses file: JSONL lines ``{"id": INSTANCE_ID, "response": TEXT}``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from .errors import Problem, SpecError
from .yamlsafe import read_text


def load_responses(path: Path, known_ids: Iterable[str]) -> dict[str, str]:
    """Responses by instance id. Invalid lines, unknown ids and duplicates are errors naming
    their line, all reported at once."""
    display = str(path)
    text = read_text(path, display) if path.exists() else None
    if text is None:
        raise SpecError.single("responses file not found", display)
    known = set(known_ids)
    responses: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems: list[Problem] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            problems.append(Problem(f"not valid JSON: {exc.msg}", display, number,
                                    getattr(exc, "colno", 1)))
            continue
        if not isinstance(record, dict) or set(record) - {"id", "response"} or \
                not isinstance(record.get("id"), str) or \
                not isinstance(record.get("response"), str):
            problems.append(Problem('each line must be {"id": string, "response": string}',
                                    display, number, 1))
            continue
        try:
            record["response"].encode("utf-8")
        except UnicodeEncodeError:
            problems.append(Problem("response holds a lone surrogate (\\ud800-\\udfff), which "
                                    "is not text", display, number, 1))
            continue
        instance_id = record["id"]
        if instance_id not in known:
            problems.append(Problem(f"unknown instance id {instance_id!r}", display, number, 1))
        elif instance_id in responses:
            problems.append(Problem(f"duplicate response for {instance_id!r} (first on line "
                                    f"{first_line[instance_id]})", display, number, 1))
        else:
            responses[instance_id] = record["response"]
            first_line[instance_id] = number
    if problems:
        raise SpecError(problems)
    return responses
