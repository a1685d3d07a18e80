"""Tools for the exported inspect task: where an item's answer is a function call, the
functions its answer names are offered to the model as tools; the first call the model makes
is recorded (never run: a call has no side effect) and ends the sample, and it is scored as
the text ``name(value, ...)``, each value as JSON in the order the tool declares them.

A sample's ``tools`` metadata (JSON text, written by `memspec export --format inspect`)
declares them: ``[{"name": NAME, "parameters": [PARAMETER, ...]}, ...]``, the parameters
named as the answer's calls name them (``arg1``, ``arg2`` … where they are positional).

Needs inspect_ai and the standard library only; copied beside the task as memspec_tools.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from inspect_ai.tool import ToolDef, ToolParam, ToolParams


def declared(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tools a sample declares (none where its answer is no call)."""
    return json.loads(metadata.get("tools") or "[]")


def _never_run(name: str) -> Any:
    async def execute(**arguments: Any) -> str:
        # The sample ends at the model's first call (generate with tool_calls="none"), so
        # this never runs; were it called, it would do nothing.
        return ""

    execute.__name__ = name
    return execute


def tool_defs(metadata: Mapping[str, Any]) -> list[Any]:
    """The sample's declared tools as inspect tools, each parameter a string."""
    return [ToolDef(_never_run(tool["name"]), name=tool["name"],
                    description=f"Call {tool['name']}.",
                    parameters=ToolParams(
                        properties={p: ToolParam(type="string", description=p)
                                    for p in tool["parameters"]},
                        required=list(tool["parameters"]))).as_tool()
            for tool in declared(metadata)]


def call_text(function: str, arguments: Mapping[str, Any],
              tools: list[dict[str, Any]]) -> str:
    """A tool call as the text the scorer reads: ``function(value, ...)``, the values in the
    order the tool declares its parameters (those it does not declare after them, in the
    order given)."""
    order = next((t["parameters"] for t in tools if t["name"] == function), [])
    names = [p for p in order if p in arguments] + [a for a in arguments if a not in order]
    values = ", ".join(json.dumps(arguments[n], ensure_ascii=False) for n in names)
    return f"{function}({values})"
