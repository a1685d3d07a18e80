"""Reading a responses file: JSONL lines ``{"id": INSTANCE_ID, "response": TEXT}``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from .errors import Problem, SpecError, lookalike_note
from .yamlsafe import read_text


class _LineError(ValueError):
    """A line that parses as JSON but is no plain JSON record."""


def _refuse_constant(name: str) -> None:
    raise _LineError(f"{name} is not JSON (no NaN or infinity)")


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 16:
        raise _LineError(f"an integer of {digits} digits is too long")
    return int(text)


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    record: dict[str, object] = {}
    for key, value in pairs:
        if key in record:
            raise _LineError(f"key {key!r} is given twice")
        record[key] = value
    return record


def parse_strict_json(text: str, display: str, line: int = 1) -> object:
    """``text`` as strict JSON: no NaN or infinity, no huge integer, no key given twice (which
    of the two would count?), no nesting too deep to read. Anything else is a SpecError at
    ``display:line`` (and the column, where the parser knows it)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_int=_parse_int,
                          object_pairs_hook=_refuse_repeated_keys)
    except json.JSONDecodeError as exc:
        raise SpecError.single(f"not valid JSON: {exc.msg}", display, line + exc.lineno - 1,
                               exc.colno) from None
    except ValueError as exc:  # JSON, but not plain JSON
        raise SpecError.single(f"not valid JSON: {exc}", display, line, 1) from None
    except RecursionError:
        raise SpecError.single("JSON nested too deeply", display, line, 1) from None


def _json_kind(value: object) -> str:
    """What JSON calls the kind of a parsed ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {dict: "an object", list: "an array", str: "a string"}.get(type(value), "a number")


def _shape_problem(record: object) -> str | None:
    """What keeps a parsed line from being a response record, in words; None if nothing."""
    if not isinstance(record, dict):
        return f"this is {_json_kind(record)}, not an object"
    extra = sorted(set(record) - {"id", "response"})
    if extra:
        return "unexpected key " + ", ".join(repr(k) for k in extra)
    for key in ("id", "response"):
        if key not in record:
            return f"no {key!r}"
        if not isinstance(record[key], str):
            return f"{key!r} is {_json_kind(record[key])}, not a string"
    return None


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
            record = parse_strict_json(line, display, number)
        except SpecError as err:
            problems += err.problems
            continue
        wrong = _shape_problem(record)
        if wrong is not None:
            problems.append(Problem('each line must be {"id": string, "response": string}: '
                                    + wrong, display, number, 1))
            continue
        try:
            record["response"].encode("utf-8")
        except UnicodeEncodeError:
            problems.append(Problem("response holds a lone surrogate (\\ud800-\\udfff), which "
                                    "is not text", display, number, 1))
            continue
        instance_id = record["id"]
        if instance_id not in known:
            problems.append(Problem(f"unknown instance id {instance_id!r}"
                                    f"{lookalike_note(instance_id)}", display, number, 1))
        elif instance_id in responses:
            problems.append(Problem(f"duplicate response for {instance_id!r} (first on line "
                                    f"{first_line[instance_id]})", display, number, 1))
        else:
            responses[instance_id] = record["response"]
            first_line[instance_id] = number
    if problems:
        raise SpecError(problems)
    return responses
