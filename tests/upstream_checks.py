"""Re-implementations of what the public loaders of two benchmarks check of their data, written
from the facts of their layouts (MemoryBench at commit
9a33aae9d0c1d0c472527ab5bb8c7e2be3263e23: its dataset loader, base dataset class, registry,
the dataset classes a registry entry resolves to and what each reads to score, and feedback
consumers; ImplicitMemBench: its files as a harness that loads them reads them).
Standard library and ``datasets`` only, so that they run where memspec is not installed.
Each returns the problems found (empty where the export passes)."""

from __future__ import annotations

import ast
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The MemoryBench commit whose code these checks re-implement (and the export follows).
MEMORYBENCH_COMMIT = "9a33aae9d0c1d0c472527ab5bb8c7e2be3263e23"
REGISTRY_KEYS = ("dataset_name", "task_tag", "domain_tag", "test_metrics", "max_output_len",
                 "class_name", "dataset_size", "random_seed", "sample_count")
DOMAINS = ("Open-Domain", "Legal", "Academic&Knowledge")
TASK_FORMATS = ("Long-Short", "Short-Long", "Long-Long", "Short-Short")
ROLES = ("system", "user", "assistant")


def _to_object(row: dict[str, Any]) -> dict[str, Any]:
    """What MemoryBench's loader does to each row: string columns named dialog*,
    implicit_feedback*, input_chat_messages and info become objects (a Python literal first,
    else JSON)."""
    for column, value in list(row.items()):
        if (column.startswith(("dialog", "implicit_feedback"))
                or column in ("input_chat_messages", "info")) and isinstance(value, str):
            try:
                row[column] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                with contextlib.suppress(ValueError):
                    row[column] = json.loads(value)
    return row


def _messages(messages: Any, where: str) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return [f"{where}: not a non-empty list of messages"]
    return [f"{where}[{i}]: role {m.get('role')!r}" for i, m in enumerate(messages)
            if not isinstance(m, dict) or m.get("role") not in ROLES
            or not isinstance(m.get("content"), str)]


def memorybench_problems(folder: Path) -> list[str]:
    """A MemoryBench dataset folder as its loader reads it: every registry entry's dataset
    loads with ``datasets.load_dataset(folder, name)`` into train and test; rows carry the
    required columns, test_idx unique across both splits, the test prompt last; feedback
    records carry implicit_actions (a list) and satisfaction_score; each entry's class_name is
    an upstream dataset class that takes its name, gives its test_metrics and finds in every
    row what it reads to score it."""
    import tempfile

    with tempfile.TemporaryDirectory() as cache:  # nothing stale from an earlier load
        return _memorybench_problems(folder, cache)


def _memorybench_problems(folder: Path, cache: str) -> list[str]:
    import datasets

    problems: list[str] = []
    registry = json.loads((folder / "configs" / "datasets" / "each.json").read_text())
    for name, entry in registry.items():
        missing = [k for k in REGISTRY_KEYS if k not in entry]
        if missing or entry["dataset_name"] != name:
            problems.append(f"each.json {name}: missing {missing} or a different name")
        if entry.get("domain_tag") not in DOMAINS or entry.get("task_tag") not in TASK_FORMATS:
            problems.append(f"each.json {name}: tags {entry.get('domain_tag')!r}, "
                            f"{entry.get('task_tag')!r}")
        if not isinstance(entry.get("test_metrics"), list):
            problems.append(f"each.json {name}: test_metrics is not a list")
        loaded = datasets.load_dataset(str(folder), name, cache_dir=cache)
        if sorted(loaded) != ["test", "train"]:
            problems.append(f"{name}: splits {sorted(loaded)}")
            continue
        seen: set[int] = set()
        rows: list[dict[str, Any]] = []
        for split in ("train", "test"):
            for row in loaded[split]:
                row = _to_object(dict(row))
                rows.append(row)
                where = f"{name}/{split}/{row.get('test_idx')}"
                for column in ("test_idx", "dataset_name", "info", "lang"):
                    if column not in row:
                        problems.append(f"{where}: no {column}")
                if "input_prompt" not in row and "input_chat_messages" not in row:
                    problems.append(f"{where}: neither input_prompt nor input_chat_messages")
                if row["test_idx"] in seen:
                    problems.append(f"{where}: duplicate test_idx found {row['test_idx']}")
                seen.add(row["test_idx"])
                if row["dataset_name"] not in registry:
                    problems.append(f"{where}: dataset_name not in each.json")
                messages = row["input_chat_messages"]
                problems += _messages(messages, f"{where} input_chat_messages")
                if messages and messages[-1].get("role") != "user":
                    problems.append(f"{where}: the test prompt is not the last message")
                if not isinstance(row["info"], dict):
                    problems.append(f"{where}: info is not an object")
                for record in row.get("implicit_feedback") or []:
                    if not isinstance(record.get("implicit_actions"), list) or \
                            "satisfaction_score" not in record or "round" not in record:
                        problems.append(f"{where}: feedback record {record}")
        if len(rows) != entry.get("dataset_size"):
            problems.append(f"{name}: {len(rows)} rows, each.json says "
                            f"{entry.get('dataset_size')}")
        problems += upstream_class_problems(folder, registry, name, rows)
    return problems


@dataclass(frozen=True)
class UpstreamClass:
    """One dataset class of MemoryBench (src/dataset/<module>.py at the commit above): the
    metrics its evaluate_single returns (a registry's test_metrics must be among them, or
    evaluate_and_summary fails), and what it reads of a record."""

    metrics: frozenset[str]
    reads: Callable[[dict[str, Any]], list[str]]
    name_rule: Callable[[str], bool] = lambda name: True


def _text_at(row: dict[str, Any], *path: str) -> list[str]:
    value: Any = row
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return [] if isinstance(value, str) and value.strip() else [f"{'.'.join(path)} is no text"]


def _checklist(row: dict[str, Any]) -> list[str]:
    items = (row.get("info") or {}).get("checklist")
    if not isinstance(items, list) or not items or not all(
            isinstance(i, dict) and str(i.get("checklist_id", "")).isdigit() for i in items):
        return ["info.checklist is no non-empty list of items with a checklist_id"]
    return []


def _locomo(row: dict[str, Any]) -> list[str]:
    info = row.get("info") or {}
    return ([] if info.get("category") in (1, 2, 3, 4, 5) and "evidence" in info
            else ["info.category (1-5) or info.evidence missing"])


#: Upstream's dataset classes, by the class_name a registry entry gives (resolved as
#: src.dataset.<class_name>). DialSim compares the response with info.golden_answer, then asks
#: a judge, replacing a placeholder by the question: the user prompt, which must then be text
#: (input_prompt; a list of messages stops it with a TypeError). HelloBench's judge rates
#: info.checklist item by item. LexEval (ROUGE-L) and WritingPrompts (METEOR) compare with
#: info.golden_answer; NFCats' judge reads the prompt and response only; Locomo needs a name
#: ending in -0 to -9 and a category.
UPSTREAM_CLASSES = {
    "DialSim.DialSim_Dataset": UpstreamClass(
        frozenset({"accuracy"}),
        lambda row: _text_at(row, "info", "golden_answer") + _text_at(row, "input_prompt")),
    "HelloBench.HelloBench_Dataset": UpstreamClass(
        frozenset({"avg_score", "checklist_evaluation", "checklist"}), _checklist),
    "LexEval.LexEval_Dataset": UpstreamClass(
        frozenset({"rougel", "golden_answer"}), lambda row: _text_at(row, "info", "golden_answer")),
    "WritingPrompts.WritingPrompts_Dataset": UpstreamClass(
        frozenset({"meteor"}), lambda row: _text_at(row, "info", "golden_answer")),
    "NFCats.NFCats_Dataset": UpstreamClass(frozenset({"score"}), lambda row: []),
    "Locomo.Locomo_Dataset": UpstreamClass(
        frozenset({"f1", "golden_answer", "evidence"}),
        lambda row: _text_at(row, "info", "golden_answer") + _locomo(row),
        lambda name: name.rsplit("-", 1)[-1] in tuple("0123456789")),
}
#: Names upstream's loader treats apart: it then also loads corpus/<name>.jsonl.
CORPUS_NAMES = ("Locomo", "DialSim")


def dialsim_exact(response: str, golden_answer: str) -> bool:
    """DialSim's first rule: the response is the golden answer, case and surrounding space
    aside, with or without a final full stop (anything else goes to its judge)."""
    said, gold = response.lower().strip(), golden_answer.lower().strip()
    return said in (gold, f"{gold}.")


def upstream_class_problems(folder: Path, registry: dict[str, Any], name: str,
                            rows: list[dict[str, Any]]) -> list[str]:
    """How upstream resolves a registry entry to its dataset class and whether that class can
    load and score the entry's rows (``rows`` as its loader turns them into objects)."""
    entry = registry[name]
    found = UPSTREAM_CLASSES.get(entry.get("class_name"))
    if found is None:
        return [f"each.json {name}: class_name {entry.get('class_name')!r} is no dataset class "
                f"of upstream (src.dataset.<module>.<class>: {sorted(UPSTREAM_CLASSES)})"]
    problems = []
    if not found.name_rule(name):
        problems.append(f"{name}: {entry['class_name']} refuses the name")
    if any(word in name for word in CORPUS_NAMES) and \
            not (folder / "corpus" / f"{name}.jsonl").exists():
        problems.append(f"{name}: upstream loads corpus/{name}.jsonl for this name")
    extra = set(entry.get("test_metrics") or []) - found.metrics
    if extra:
        problems.append(f"each.json {name}: {entry['class_name']} gives no {sorted(extra)}")
    for row in rows:
        problems += [f"{name}/{row.get('test_idx')}: {entry['class_name']} reads {p}"
                     for p in found.reads(row)]
        prompt = row.get("input_prompt")
        if prompt and row.get("input_chat_messages") != [{"role": "user", "content": prompt}]:
            # Upstream gives the model input_prompt where it is set: it must be the same task.
            problems.append(f"{name}/{row.get('test_idx')}: input_prompt is not the task")
    return problems


PARADIGM_FOLDERS = ("procedural_memory", "classical_conditioning", "priming")


def implicitmembench_problems(folder: Path) -> list[str]:
    """ImplicitMemBench's files as they are read: dataset/<paradigm>/<task>.json with
    instances, task_count and task_seed; string task ids unique in a file; phases of
    system/user/assistant messages only; priming pairs with both arms, a probe type and a
    prompt; conditioning files named conditioned_*; expected patterns with their accepted
    variants."""
    problems: list[str] = []
    for paradigm in PARADIGM_FOLDERS:
        for path in sorted((folder / "dataset" / paradigm).glob("*.json")):
            where = f"{paradigm}/{path.name}"
            data = json.loads(path.read_text())
            instances = data.get("instances")
            if not isinstance(instances, list) or data.get("task_count") != len(instances) \
                    or not isinstance(data.get("task_seed"), int):
                problems.append(f"{where}: not {{instances, task_count, task_seed}}")
                continue
            if paradigm == "classical_conditioning" and not path.name.startswith("conditioned_"):
                problems.append(f"{where}: a conditioning file not named conditioned_*")
            ids = [item.get("task_id") for item in instances]
            if len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
                problems.append(f"{where}: task ids not unique strings")
            for item in instances:
                at = f"{where}#{item.get('task_id')}"
                problems += (_priming(item, at) if paradigm == "priming"
                             else _learned(item, at))
    return problems


def _learned(item: dict[str, Any], at: str) -> list[str]:
    problems = []
    if not isinstance(item.get("task_name"), str) or not item["task_name"].strip():
        problems.append(f"{at}: no task_name")
    for phase in ("learning_phase", "interference_phase"):
        problems += _messages(item.get(phase), f"{at} {phase}")
    if not isinstance(item.get("test_probe"), dict) or not item["test_probe"].get("content"):
        problems.append(f"{at}: test_probe without content")
    expected = item.get("expected_pattern")
    if not isinstance(expected, dict) or not expected.get("pattern") or \
            not isinstance(expected.get("accepted_variants"), list):
        problems.append(f"{at}: expected_pattern is no pattern with accepted variants")
    return problems


def _priming(item: dict[str, Any], at: str) -> list[str]:
    problems = [f"{at}: no {key}" for key in
                ("pair_id", "task_id", "selected_source_theme", "selected_control_theme",
                 "selected_probe_id") if not isinstance(item.get(key), str)]
    probe = item.get("selected_probe_id", "")
    if not probe.replace("_", "").isalpha() or probe != probe.lower():
        problems.append(f"{at}: selected_probe_id {probe!r} is no probe type")
    for arm in ("experimental", "control"):
        instance = item.get(f"{arm}_instance") or {}
        if instance.get("group") != arm:
            problems.append(f"{at}: {arm}_instance group {instance.get('group')!r}")
        for phase in ("priming_phase", "interference_phase"):
            problems += _messages(instance.get(phase), f"{at} {arm} {phase}")
        if not (instance.get("test_probe") or {}).get("prompt"):
            problems.append(f"{at}: {arm} test_probe without prompt")
    return problems
