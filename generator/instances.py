"""Reading instances: their phases are an ordered list, looked up by name here."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any


def read_instances(path: Path) -> Iterator[dict[str, Any]]:
    """The instances of one JSONL data file, streamed line by line."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


def family_sources(folder: Path, names: Iterable[str]
                   ) -> dict[str, Callable[[], Iterator[dict[str, Any]]]]:
    """Per data file among a release's ``names`` (``data/<family>.jsonl``), by family, a
    function that streams its instances afresh each time it is called."""
    return {name.removeprefix("data/").removesuffix(".jsonl"): partial(read_instances,
                                                                       folder / name)
            for name in names if name.startswith("data/")}


def phase_messages(instance: Mapping[str, Any], phase: str) -> list[dict[str, str]]:
    """The messages of one phase of an instance (empty if the phase rendered none)."""
    for entry in instance["phases"]:
        if entry["phase"] == phase:
            return entry["messages"]
    return []


def all_messages(instance: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every message of an instance, phase after phase, in order."""
    return [message for entry in instance["phases"] for message in entry["messages"]]


def phase_text(instance: Mapping[str, Any], phases: list[str]) -> str:
    """The contents of the named phases' messages, joined by newlines."""
    return "\n".join(m["content"] for p in phases for m in phase_messages(instance, p))
