"""The command that runs models on a release: run (through inspect_ai, then scored)."""


from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import SpecError
from .cli_common import ScoreFormat, _check_seed, _pins_if_any, _run, app, out

#: The memory systems a run compares unless told.
DEFAULT_MEMORY = "full"


def _names(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated option values, in order, each once."""
    return list(dict.fromkeys(v.strip() for value in values or [] for v in value.split(",")
                              if v.strip()))


def _memory_system(name: str) -> str:
    """A memory system's name as the task takes it: a ``PATH.py:CLASS`` with its path made
    absolute (inspect runs a task from the task's own folder)."""
    path, sep, attribute = name.rpartition(":")
    if sep and path.endswith(".py"):
        return f"{Path(path).resolve()}:{attribute}"
    return name


@app.command(short_help="Run models on a release (inspect_ai) and score them.")
def run(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    model: Annotated[list[str], typer.Option(
        help="Model as inspect_ai names it, PROVIDER/MODEL (repeatable, or comma-separated): "
             "mockllm/model, openai/gpt-4o, openai-api/NAME/MODEL for an OpenAI-compatible "
             "server ...")],
    memory: Annotated[list[str] | None, typer.Option(
        help="Memory systems to compare (repeatable, or comma-separated): full (the whole "
             "history in context), none (the probe alone), bm25 (BM25 over earlier turns), "
             "or FILE.py:CLASS (a memory system of your own).")] = None,
    memory_k: Annotated[int, typer.Option(
        min=1, max=1000, help="Passages a retrieval memory (bm25) places before the probe.")]
    = 5,
    limit: Annotated[int | None, typer.Option(
        min=1, help="Run the first N items only (of each model and memory system).")] = None,
    family: Annotated[list[str] | None, typer.Option(
        help="Run these families only (repeatable, or comma-separated).")] = None,
    split: Annotated[str | None, typer.Option(
        help="Split to run, or all (default: the test split of a release with splits).")]
    = None,
    seed: Annotated[int | None, typer.Option(
        help="The models' sampling seed, where the provider takes one; also the bootstrap's "
             "(0 if not given).")] = None,
    max_connections: Annotated[int | None, typer.Option(
        min=1, help="Most requests at once to a model's provider (inspect's default if not "
                    "given).")] = None,
    log_dir: Annotated[Path, typer.Option(
        help="Folder of the run's logs: running the same command again resumes from them.")]
    = Path("logs"),
    model_base_url: Annotated[str | None, typer.Option(
        help="Base address of the model's API (a local OpenAI-compatible server).")] = None,
    by: Annotated[str | None, typer.Option(
        help="Group the scores by these keys (comma-separated), as score --by.")] = None,
    output_format: Annotated[ScoreFormat, typer.Option(
        "--format", help="Scores printed as table, json, csv or html.")] = "table",
    display: Annotated[str | None, typer.Option(
        help="inspect's progress display: full, rich, plain, log or none.")] = None,
) -> None:
    """Run every model with every memory system on a release through inspect_ai (its
    providers, concurrency, retries, caching and logs), then score the logs as `memspec score`
    does: one report, the models and memory systems side by side. The logs, the exported
    task, scores.json and report.html are in --log-dir."""
    from ..core.canonical import dump_pretty_bytes
    from ..release.release_atomic import atomic_write_bytes
    from ..release.release_data import load_release_instances
    from ..report.score_page import render_scores
    from ..run.runner import RunPlan, run_release
    from .cli_analysis import with_conventions
    from .cli_scoring import ScoreSettings, print_report, read_inputs, score_runs

    def action() -> None:
        if seed is not None:
            _check_seed(seed)
        models = _names(model)
        memories = [_memory_system(m) for m in _names(memory) or [DEFAULT_MEMORY]]
        if not models:
            raise SpecError.single("--model names no model")
        manifest, instances = load_release_instances(release_dir, _pins_if_any(), held=True)
        plan = RunPlan(models, memories, log_dir, memory_k, limit, _names(family) or None,
                       split, seed, max_connections, model_base_url, display)
        logs = run_release(manifest, instances, plan)
        keys = [k.strip() for k in (by or "").split(",") if k.strip()]
        settings = ScoreSettings(keys, seed=seed or 0)
        report = score_runs(read_inputs(logs, instances, settings), settings)
        # The convention baseline beside every row, as `memspec score` gives it.
        with_conventions(report, release_dir, instances, keys)
        title = f"Scores: {manifest['release']}-{manifest['version']}"
        atomic_write_bytes(log_dir / "scores.json", dump_pretty_bytes(report))
        atomic_write_bytes(log_dir / "report.html",
                           render_scores(report, title).encode("utf-8"))
        print_report(report, output_format, title)
        if output_format == "table":
            out.print(f"logs, scores.json and report.html in {log_dir}", markup=False)

    _run(action)
