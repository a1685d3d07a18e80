"""Layout 10: the rest of the answer in croissant.json, so that every field of the JSONL line
is described (the messages by their own record set, from layout 8).

Up to layout 9 the answer's typed keys, its distractors and its policies were fields; three of
its keys were left to the JSONL: the declared ``reading`` (its version, ``keep_lists``,
``signatures`` ...), ``unordered_args`` and the ``candidates`` the task shows (a list of
objects, each a ``value`` and its ``features``). Here the reading is a field
``answer_reading`` with one sub-field per key, ``unordered_args`` a sub-field of ``answer`` and
the candidates a repeated field ``answer_candidates``, one record per candidate, its
``features`` a repeated sub-field: shapes mlcroissant reads back as the JSONL has them
(tests/test_croissant_answer.py). Their types are the instance schema's, so a list that is
empty in every instance (a candidate without features) is described as one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .croissant_analysis import json_path

#: Answer keys layout 10 adds to the ``answer`` field, with their Croissant type.
EXTRA_ANSWER_TYPES = {"unordered_args": "sc:Boolean"}
#: The keys of a declared reading (instance.schema.json admits no others): (type, repeated).
READING_TYPES = {"version": ("sc:Integer", False), "keep_lists": ("sc:Boolean", False),
                 "keep_rejected": ("sc:Boolean", False), "keep_openers": ("sc:Boolean", False),
                 "questions": ("sc:Text", False), "openers": ("sc:Text", True),
                 "abstain": ("sc:Text", True), "signature": ("sc:Text", False),
                 "signatures": ("sc:Text", True), "unplaced": ("sc:Text", False)}
#: The keys of a candidate: its value and the features a constraint may rule it out by.
CANDIDATE_TYPES = {"value": ("sc:Text", False), "features": ("sc:Text", True)}


class AnswerShape:
    """The keys of the answer's reading, and whether candidates appear, gathered over a
    family's instances."""

    def __init__(self) -> None:
        self.reading: set[str] = set()
        self.candidates = False

    def observe(self, answer: Mapping[str, Any]) -> None:
        """Gather what one instance's answer holds."""
        reading = answer.get("reading")
        if isinstance(reading, Mapping):
            self.reading.update(key for key in reading if key in READING_TYPES)
        self.candidates = self.candidates or "candidates" in answer


def answer_fields(family: str, file: str, shape: AnswerShape,
                  make_field: Callable[..., dict[str, Any]],
                  make_group: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    """The fields ``answer_reading`` and ``answer_candidates`` (each only where some
    instance has it), in the shapes ``make_field`` and ``make_group`` give."""
    fields = []
    if shape.reading:
        fields.append(make_group(family, "answer_reading", [
            make_field(family, f"answer_reading/{key}", kind, file, "answer",
                       json_path(("reading", key)), repeated=repeated)
            for key, (kind, repeated) in READING_TYPES.items() if key in shape.reading],
            "how a response is read before it is scored (docs/scoring.md, reading answers): "
            "one sub-field per key, a list repeated"))
    if shape.candidates:
        fields.append(make_group(family, "answer_candidates", [
            make_field(family, f"answer_candidates/{key}", kind, file, "answer",
                       (json_path(("candidates",)), json_path((key,))), repeated=repeated)
            for key, (kind, repeated) in CANDIDATE_TYPES.items()],
            "the candidates the task shows, one record per candidate, with the features a "
            "constraint may rule it out by", repeated=True))
    return fields
