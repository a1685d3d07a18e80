"""Reading a responses file: JSONL lines ``{"id": INSTANCE_ID, "response": TEXT}``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ..core.errors import Problem, ProblemCollector, SpecError, lookalike_note

#: Environment variable: the largest responses or judgments file read, in bytes.
RESPONSES_BYTES_VARIABLE = "MEMSPEC_RESPONSES_BYTES"
#: Its default: a gigabyte and more, where a spec file may have 4 MiB. A model's answers to
#: a large release, a sentence of rationale each, run to tens of megabytes; the file is read
#: a line at a time, so the limit bounds time, not memory.
DEFAULT_RESPONSES_BYTES = 1 << 30


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


def responses_limit() -> int:
    """The largest responses or judgments file read: ``$MEMSPEC_RESPONSES_BYTES``, else
    ``DEFAULT_RESPONSES_BYTES``."""
    text = os.environ.get(RESPONSES_BYTES_VARIABLE, "").strip()
    if not text:
        return DEFAULT_RESPONSES_BYTES
    if not text.isdigit() or not 0 < int(text) <= 1 << 50:
        raise SpecError.single(f"${RESPONSES_BYTES_VARIABLE} must be a whole number of bytes "
                               f"above 0, not {text[:40]!r}")
    return int(text)


def jsonl_lines(path: Path, display: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSONL file a model or a judge wrote, with their numbers, read
    one at a time (memory holds a line, not the file) under ``responses_limit``: a file
    over it, a byte-order mark, a NUL or bytes that are not UTF-8 are errors at their line
    and column."""
    limit = responses_limit()
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise SpecError.single("file not found", display) from None
    except OSError as exc:
        raise SpecError.single(f"cannot read file: {exc.strerror}", display) from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise SpecError.single(f"file is {size:,} bytes, over the {limit:,}-byte limit "
                                   f"(${RESPONSES_BYTES_VARIABLE} sets it)", display, 1, 1)
        read = 0
        for number, raw in enumerate(handle, start=1):
            read += len(raw)
            if read > limit:  # grew while being read
                raise SpecError.single(f"file is over the {limit:,}-byte limit", display,
                                       number, 1)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raise SpecError.single("file starts with a byte-order mark; save it as UTF-8 "
                                       "without BOM", display, 1, 1)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SpecError.single(f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                                       display, number, exc.start + 1) from None
            if "\x00" in line:
                raise SpecError.single("line contains a NUL character", display, number,
                                       line.index("\x00") + 1)
            if line.strip():
                # Without its line ending: an error at the end of a cut-off line is placed
                # at the end of that line, not at column 1 of a line after it.
                yield number, line.rstrip("\r\n")


#: Problems read in a responses file before the rest of it is left unread: far more than a
#: person reads, and a file of a million bad lines is refused in a second, not in a minute.
MAX_BAD_LINES = 100_000


def _lines_from(path: Path, number: int) -> int:
    """How many lines ``path`` holds from its line ``number`` on, counted at C speed."""
    total, ends_open = 0, False
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            total += chunk.count(b"\n")
            ends_open = not chunk.endswith(b"\n")
    return total + (1 if total and ends_open else 0) - number + 1


def jsonl_records(path: Path, display: str,
                  problems: ProblemCollector | None = None) -> Iterator[tuple[int, object]]:
    """The parsed records of a JSONL file (``jsonl_lines``), with their line numbers; a line
    that is not strict JSON is added to ``problems`` (or skipped, where another reader of the
    same file reports it) and not given. Once ``problems`` holds ``MAX_BAD_LINES``, the rest
    of the file is counted, not read, and that is a problem of its own."""
    for number, line in jsonl_lines(path, display):
        if problems is not None and problems.total >= MAX_BAD_LINES:
            problems.add(Problem(f"reading stopped after {MAX_BAD_LINES:,} problems; the "
                                 f"{_lines_from(path, number):,} lines from here on were not "
                                 "read", display, number, 1))
            return
        try:
            yield number, parse_strict_json(line, display, number)
        except SpecError as err:
            if problems is not None:
                problems.extend(err)


#: The decoder of ``parse_strict_json``, made once: ``json.loads`` with hooks makes a new one
#: for every line it reads.
_STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_parse_int,
                                object_pairs_hook=_refuse_repeated_keys)


def parse_strict_json(text: str, display: str, line: int = 1) -> object:
    """``text`` as strict JSON: no NaN or infinity, no huge integer, no key given twice (which
    of the two would count?), no nesting too deep to read. Anything else is a SpecError at
    ``display:line`` (and the column, where the parser knows it)."""
    try:
        return _STRICT_JSON.decode(text)
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


class Responses(dict[str, str]):
    """Responses by instance id, as read from a file: where each stands there
    (``place``) is kept, so that an error about an item can point at its line."""

    def __init__(self, display: str) -> None:
        super().__init__()
        self.display = display
        #: The line of each response, by instance id.
        self.lines: dict[str, int] = {}

    def place(self, instance_id: str) -> tuple[str, int] | None:
        """The file and line of the response to ``instance_id``, if it has one."""
        line = self.lines.get(instance_id)
        return None if line is None else (self.display, line)


def response_place(responses: Mapping[str, str], instance_id: str) -> tuple[str, int] | None:
    """Where the response to ``instance_id`` stands in the file it was read from; None for
    responses that were not read from one, or that hold none for it."""
    return responses.place(instance_id) if isinstance(responses, Responses) else None


def load_responses(path: Path, known_ids: Iterable[str]) -> Responses:
    """Responses by instance id, with the line of each. Invalid lines, unknown ids and
    duplicates are errors naming their line, all reported at once."""
    display = str(path)
    if not path.exists():
        raise SpecError.single("responses file not found", display)
    known = set(known_ids)
    responses = Responses(display)
    first_line = responses.lines
    problems = ProblemCollector()  # a flood of bad lines is counted, not kept
    unknown = 0
    for number, record in jsonl_records(path, display, problems):
        wrong = _shape_problem(record)
        if wrong is not None:
            problems.add(Problem('each line must be {"id": string, "response": string}: '
                                    + wrong, display, number, 1))
            continue
        try:
            record["response"].encode("utf-8")
        except UnicodeEncodeError:
            problems.add(Problem("response holds a lone surrogate (\\ud800-\\udfff), which "
                                    "is not text", display, number, 1))
            continue
        instance_id = record["id"]
        if instance_id not in known:
            unknown += 1
            problems.add(Problem(f"unknown instance id {instance_id!r}"
                                    f"{lookalike_note(instance_id)}", display, number, 1))
        elif instance_id in responses:
            problems.add(Problem(f"duplicate response for {instance_id!r} (first on line "
                                    f"{first_line[instance_id]})", display, number, 1))
        else:
            responses[instance_id] = record["response"]
            first_line[instance_id] = number
    if unknown and not responses:
        # Said first, once: every id is foreign, which is one mistake, not many.
        read = "read" if problems.total > MAX_BAD_LINES else "in this file"
        problems.add(Problem(f"none of the {unknown:,} ids {read} is an instance of this "
                             "release: are these the responses to another release, or another "
                             "version of it?", display))
    problems.raise_if_any()
    return responses
