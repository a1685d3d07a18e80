"""A group rendered for a person to read: every variant, phase by phase."""

from __future__ import annotations

import textwrap
from typing import Any

from ..core.errors import printable

#: The answer's keys a reader is shown, in this order.
_ANSWER_KEYS = ("gold", "options", "gold_index", "example", "distractors", "rubric")


def format_group(instances: list[dict[str, Any]], width: int = 100,
                 differences: bool = False) -> str:
    """Plain text of one group's instances (the CLI adds colour on a terminal); every line
    ``printable``, so no text of a spec or pool sends an escape sequence to the terminal.

    With ``differences``, every variant after the first shows only the messages, answer and
    fields that differ from the first variant's (a phase that does not differ is one line):
    the arms of a group are meant to differ only where the manipulation is, and a reader of
    a few dozen variants sees that at once."""
    out: list[str] = []
    first = instances[0] if instances else None
    for inst in instances:
        against = first if differences and inst is not first else None
        axes = ", ".join(f"{k}={v}" for k, v in inst["axes"].items()) or "no axes"
        out += ["=" * width, f"{inst['id']}   [{inst['design']}: {axes}]", "=" * width]
        out += _phases(inst, against, width)
        answer = inst["answer"]
        if against is None or answer != against["answer"]:
            out.append(f"--- answer ({answer['scorer']})")
            out += [f"    {key}: {answer[key]}" for key in _ANSWER_KEYS if key in answer]
        else:
            out.append(f"--- answer as in {against['id']}")
        if inst["fields"] and (against is None or inst["fields"] != against["fields"]):
            out.append(f"--- fields: {inst['fields']}")
        out.append("")
    return "\n".join(map(printable, out))


def _phases(inst: dict[str, Any], against: dict[str, Any] | None, width: int) -> list[str]:
    """The lines of an instance's phases; with ``against``, only the messages that differ
    from those at the same place of the same phase there."""
    out: list[str] = []
    other = {e["phase"]: e["messages"] for e in against["phases"]} if against else {}
    for entry in inst["phases"]:
        phase, messages = entry["phase"], entry["messages"]
        count = f"{len(messages)} message{'s' if len(messages) != 1 else ''}"
        before = other.get(phase)
        if against is not None and before == messages:
            out.append(f"--- {phase} ({count}, as in {against['id']})")
            continue
        out.append(f"--- {phase} ({count})")
        for number, message in enumerate(messages, start=1):
            if before is not None and number <= len(before) and before[number - 1] == message:
                continue
            who = message["role"] + (f" ({message['name']})" if "name" in message else "")
            place = f"{number}/{len(messages)} " if before is not None else ""
            out.append(f"[{place}{who}]")
            for paragraph in message["content"].split("\n"):
                out += textwrap.wrap(paragraph, width - 4, initial_indent="    ",
                                     subsequent_indent="    ") or [""]
    return out
