"""A group rendered for a person to read: every variant, phase by phase."""

from __future__ import annotations

import textwrap
from typing import Any

from ..core.errors import printable


def format_group(instances: list[dict[str, Any]], width: int = 100) -> str:
    """Plain text of one group's instances (the CLI adds colour on a terminal); every line
    ``printable``, so no text of a spec or pool sends an escape sequence to the terminal."""
    out: list[str] = []
    for inst in instances:
        axes = ", ".join(f"{k}={v}" for k, v in inst["axes"].items()) or "no axes"
        out += ["=" * width, f"{inst['id']}   [{inst['design']}: {axes}]", "=" * width]
        for entry in inst["phases"]:
            phase, messages = entry["phase"], entry["messages"]
            out.append(f"--- {phase} ({len(messages)} message{'s' if len(messages) != 1 else ''})")
            for message in messages:
                who = message["role"] + (f" ({message['name']})" if "name" in message else "")
                out.append(f"[{who}]")
                for paragraph in message["content"].split("\n"):
                    out += textwrap.wrap(paragraph, width - 4, initial_indent="    ",
                                         subsequent_indent="    ") or [""]
        answer = inst["answer"]
        out.append(f"--- answer ({answer['scorer']})")
        for key in ("gold", "options", "gold_index", "example", "distractors", "rubric"):
            if key in answer:
                out.append(f"    {key}: {answer[key]}")
        if inst["fields"]:
            out.append(f"--- fields: {inst['fields']}")
        out.append("")
    return "\n".join(map(printable, out))
