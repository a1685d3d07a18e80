"""What a consumer of a release does, in an environment without memspec: every loader reads
the release folder, and every value it gives is compared with the JSONL lines. Run by the
consumer test with the interpreter of a clean virtual environment; standard library and the
loaders' packages only (no import of memspec, which must not be importable here).

    python consumer_check.py [--without=datasets,croissant] RELEASE_FOLDER [INSPECT_FOLDER]
        [MEMORYBENCH_FOLDER] [IMPLICITMEMBENCH_FOLDER]

Prints one line per check and exits 1 on the first difference. ``--without`` leaves out the
loaders named (for the bundled releases test_loaders runs them, in the same clean
environment, with more to compare)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

JSON_TEXT = ("axes", "fields", "answer", "analysis", "feedback")


def instances(release: Path) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for path in sorted((release / "data").glob("*.jsonl"))
            for i in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _named(pairs: Any) -> dict[str, str]:
    return {p["name"]: p["value"] for p in pairs or []}


def as_instance(row: dict[str, Any]) -> dict[str, Any]:
    """A Parquet row (layout 3: varying objects as JSON text; layout 4: typed) as the JSONL
    instance it must equal."""
    row = _plain(row)
    out = {k: row[k] for k in ("id", "family", "family_version", "paradigm", "group",
                               "design", "variant")}
    out["phases"] = [{"phase": p["phase"], "messages": [
        {k: v for k, v in m.items() if v is not None} for m in p["messages"]]}
        for p in row["phases"]]
    if isinstance(row["axes"], str):  # layout 3
        for key in JSON_TEXT:
            if row[key] is not None:
                out[key] = json.loads(row[key])
        return out
    answer = {k: v for k, v in row["answer"].items() if v is not None}
    if "reading" in answer:  # layout 7: the declared reading as JSON text
        answer["reading"] = json.loads(answer["reading"])
    for key in ("distractors", "policies"):
        if key in answer:
            answer[key] = _named(answer[key])
    out.update(axes=_named(row["axes"]), fields=_named(row["fields"]), answer=answer)
    if row["feedback"] is not None:
        out["feedback"] = [{k: v for k, v in r.items() if v is not None}
                           for r in row["feedback"]]
    if row["analysis"] is not None:
        out["analysis"] = json.loads(row["analysis"])
    return out


def same(rows: list[dict[str, Any]], truth: dict[str, dict[str, Any]], what: str,
         whole: bool = True) -> None:
    ids = [row["id"] for row in rows]
    if len(set(ids)) != len(ids) or (whole and sorted(ids) != sorted(truth)):
        fail(f"{what}: {len(ids)} rows, not the release's {len(truth)}")
    for row in rows:
        if as_instance(row) != truth[row["id"]]:
            fail(f"{what}: {row['id']} differs from its JSONL line")
        split = truth[row["id"]]["fields"].get("split", "test")
        if row["split"] != split:
            fail(f"{what}: {row['id']} in split {row['split']}, not {split}")
    print(f"ok {what}: {len(rows)} rows equal to the JSONL")


def fail(message: str) -> None:
    print(f"FAIL {message}")
    sys.exit(1)


def check_datasets(release: Path, truth: dict[str, dict[str, Any]]) -> None:
    from datasets import load_dataset

    header = (release / "README.md").read_text(encoding="utf-8").split("---")[1]
    configs = re.findall(r'config_name: "([^"]+)"', header)
    with tempfile.TemporaryDirectory() as cache:
        for config in configs:
            loaded = load_dataset(str(release), config, cache_dir=cache)
            rows = [row for split in loaded.values() for row in split]
            if config == "all":
                same(rows, truth, "datasets config all")
            elif not rows or any(as_instance(r) != truth[r["id"]] for r in rows):
                fail(f"datasets config {config}")
    print(f"ok datasets: {len(configs)} configs")


def check_tables(release: Path, truth: dict[str, dict[str, Any]]) -> None:
    import duckdb
    import pandas as pd
    import polars as pl

    folder = release / "parquet"
    same(pd.read_parquet(folder, dtype_backend="pyarrow").to_dict("records"), truth, "pandas")
    same(pl.read_parquet(f"{folder}/**/*.parquet").to_dicts(), truth, "polars")
    relation = duckdb.sql(f"SELECT * FROM '{folder}/**/*.parquet'")
    same([dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()],
         truth, "duckdb")


def check_croissant(release: Path, truth: dict[str, dict[str, Any]]) -> None:
    import mlcroissant as mlc

    dataset = mlc.Dataset(jsonld=str(release / "croissant.json"))  # validates, or raises
    count = messages = 0
    for record_set in dataset.metadata.record_sets:
        # Layout 8: a family's messages, one record per message, keyed by their instance.
        flattened = record_set.name.endswith("_messages")
        for record in dataset.records(record_set=record_set.uuid):
            key = next(k for k in record if k.endswith("/id"))
            if record[key].decode() not in truth:
                fail(f"croissant: {record[key]!r} is no instance")
            if flattened:
                messages += 1
            else:
                count += 1
    if count != len(truth):
        fail(f"croissant: {count} records, not {len(truth)}")
    written = sum(len(phase["messages"]) for instance in truth.values()
                  for phase in instance["phases"])
    if messages not in (0, written):
        fail(f"croissant: {messages} message records, not {written}")
    print(f"ok croissant: {count} records ({messages} messages) in "
          f"{len(dataset.metadata.record_sets)} record sets")


def check_inspect(folder: Path) -> None:
    """The exported task in inspect_ai with mockllm (usage preset: no tokenizer fetched)."""
    script = """
import sys
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage
def respond(messages, tools, tool_choice, config):
    output = ModelOutput.from_content(model="mockllm/model", content="7")
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output
for task in sys.argv[2:]:
    logs = inspect_eval(sys.argv[1] + "@" + task, model="mockllm/model", limit=8,
                        model_args={"custom_outputs": respond}, display="none",
                        log_dir=sys.argv[1] + ".logs")
    assert logs[0].status == "success", logs[0].error
    print("ok inspect", task, {k: v.value for k, v in logs[0].results.scores[0].metrics.items()
                              if k in ("mean", "stderr")})
"""
    source = (folder / "task.py").read_text(encoding="utf-8")
    tasks = [t for t in ("memspec_release", "memspec_judged") if f"def {t}(" in source]
    result = subprocess.run([sys.executable, "-c", script, str(folder / "task.py"), *tasks],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        fail(f"inspect: {result.stderr[-2000:]}")
    print(result.stdout.strip())


def main() -> None:
    for name in ("memspec", "generator"):
        try:
            __import__(name)
        except ImportError:
            continue
        fail(f"{name} is importable here: this environment is not clean")
    args = sys.argv[1:]
    without = set(args.pop(0).split("=", 1)[1].split(",")) \
        if args and args[0].startswith("--without=") else set()
    release = Path(args[0])
    truth = instances(release)
    if "datasets" not in without:
        check_datasets(release, truth)
    check_tables(release, truth)
    if "croissant" not in without:
        check_croissant(release, truth)
    extra = [Path(a) if a != "-" else None for a in args[1:4]] + [None] * 3
    if extra[0]:
        check_inspect(extra[0])
    sys.path.insert(0, str(Path(__file__).parent))
    import upstream_checks

    for folder, check in ((extra[1], upstream_checks.memorybench_problems),
                          (extra[2], upstream_checks.implicitmembench_problems)):
        if folder:
            problems = check(folder)
            if problems:
                fail(f"{check.__name__}: {problems[:5]}")
            print(f"ok {check.__name__}")


if __name__ == "__main__":
    main()
