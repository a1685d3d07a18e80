"""memspec's speed and memory on the machine at hand, measured in one run.

    python bench/bench.py                 # every measurement, a table, bench/results.json
    python bench/bench.py --only a,e      # some of them
    python bench/bench.py --rss-max 100000  # peak memory up to 10^5 instances only

(a) and (b) compare two sides run in turns, several times, so that on a shared machine a busy
moment falls on one run, not on one side of the comparison. (a) takes many short rounds
(--rounds of --floor-groups groups), since speed there comes and goes in bursts of
milliseconds, and compares the sides within each round: the median of the rounds' ratios
counts. (b) takes a few pairs of long runs (--repeats) and compares the sides within each
pair in the same way.

(a) generation rate against the floor of this stack: the family's compiled Jinja templates
    (its phases and the answer texts written in its YAML) rendered with the same values and
    json-dumped, with nothing else (target >= 0.75);
(b) speed-up of `memspec generate` from 1 to 2 worker processes on --worker-groups groups
    (target >= 1.7x), beside the start-up every run pays (a run of one group) and a control:
    the speed-up of the groups' two halves run as independent `--shard` processes, the most
    that two workers could get on this machine at that moment (its outputs take about 6 GB
    of the temporary folder, $TMPDIR, until they are compared);
(c) peak RSS of `memspec generate` at 10^4, 10^5 and 10^6 instances (target: flat within
    20% and under 200 MB), and of a first `memspec freeze`, audit included, of a release of
    2,000 and 8,000 groups of a choice family (18,000 and 72,000 instances);
(d) `memspec verify` throughput against coreutils `sha256sum -c` on the same release, a
    large one (about 150 MB) made for the purpose, and the largest bundled one (target >= 0.9x);
(e) `memspec validate` of every bundled spec (target under 2 s), with the cache of compiled
    code filled, as every run after the first finds it; the first run is reported beside it;
(f) the README's main job, `memspec build` (the newest version of each bundled release, built
    and verified), into a fresh output folder each run: the median wall and CPU (user +
    system) seconds of --build-runs runs with the cache of compiled code filled (target
    <= 20 s), and the first run, with it empty, as right after installing.

Every run uses a cache of compiled code of its own, in a temporary folder. Measurements not
asked for with --only keep their earlier results in the JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memspec.core.code_cache import CACHE_DIR_VARIABLE  # noqa: E402 (after the path is set)
from memspec.formats.manifest import sha256_file  # noqa: E402

#: A procedural family: a rule with worked examples, 15 unrelated turns, a probe.
PROCEDURAL = "implicitmem.procedural.cache_key_prefix"
#: One variant per group, so groups = instances for the memory runs.
SMALL = "example.procedural.reversed_copy"
RELEASE = "trustgap-v3"
#: A family of choice items: the audit's adversaries draw one per group of it.
CHOICE = "example.choice.meeting_room"


def _peak_rss_kib(*args: str) -> tuple[float, int]:
    """Wall seconds and the peak RSS (KiB) of a `memspec` run and its children, measured by
    the kernel (getrusage of a fresh child process tree)."""
    code = ("import resource, subprocess, sys, time;"
            "t = time.perf_counter();"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
            "e = time.perf_counter() - t;"
            "print(r.returncode, e, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    result = subprocess.run([sys.executable, "-c", code, sys.executable, "-m",
                             "memspec.cli", *args], cwd=REPO, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, check=True)
    returncode, elapsed, rss = result.stdout.split()
    if returncode != "0":
        raise SystemExit(f"memspec {' '.join(args)} failed: {result.stderr[-2000:]}")
    return float(elapsed), int(rss)


def _answer_templates(generator: Any) -> dict[str, Any]:
    """The family's other templates, written inline in its YAML: the answer's texts
    (gold, example, distractors, policy hints) and the fields, compiled as memspec does."""
    family = generator.family
    texts = {}
    for key in ("gold", "rubric", "example", "remembered", "evidence", "prior"):
        if key in family.answer:
            texts[key] = generator._inline(family.answer[key], ("answer", key), key)
    for key, text in family.answer.get("distractors", {}).items():
        texts[key] = generator._inline(text, ("answer", "distractors", key), key)
    for key, text in family.fields.items():
        texts[key] = generator._inline(text, ("fields", key), key)
    return texts


def bench_floor(groups: int, rounds: int, family_id: str = PROCEDURAL,
                warmup: int = 1000) -> dict[str, Any]:
    """(a) memspec's own loop against rendering the same templates and dumping JSON.

    In ``rounds`` short rounds of ``groups`` groups each, the two sides taken in turns (which
    goes first alternating), every round on new groups. On a machine shared with others,
    speed comes and goes in bursts of milliseconds, so the two sides are compared within a
    round, where they ran under the same conditions: the ratio is the median over the rounds
    of memspec's rate over the floor's. Beside it, the interquartile range of those ratios,
    and the ratio of each side's best round (which pairs moments that may lie apart, and so
    swings far more from one run to the next). memspec first renders ``warmup`` groups, as a
    long run has (its memos keep answers met before)."""
    from memspec.engine.generate import FamilyGenerator
    from memspec.engine.parallel import chunk_jobs, render_chunk
    from memspec.engine.render import Renderer
    from memspec.engine.sampling import sample_slots
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    project = Project(REPO)
    family = Catalog.load(project).family(family_id)
    generator = FamilyGenerator(family, Renderer(project), 7)

    def run_memspec(first: int, count: int) -> tuple[int, float]:
        # What `memspec generate` runs in one process: the groups in chunks, each rendered,
        # checked and written to canonical JSON lines.
        start = time.perf_counter()
        instances = 0
        for job in chunk_jobs(REPO, family, generator.seed, first, count):
            instances += render_chunk(job, generator).count
        return instances, time.perf_counter() - start

    run_memspec(10**7, warmup)
    # The same values: the contexts memspec renders from, worked out before the clock starts.
    contexts: dict[int, list[dict[str, Any]]] = {}
    for first in range(1, 1 + rounds * groups, groups):
        contexts[first] = []
        for g in range(first, first + groups):
            slots = sample_slots(generator.family, generator.renderer, generator.seed, g)
            contexts[first] += [generator._variant_context(slots, v, g)
                                for v in generator.variants]
    phases = generator._phase_templates
    texts = _answer_templates(generator)

    def run_floor(first: int) -> tuple[int, float]:
        start = time.perf_counter()
        for context in contexts[first]:
            json.dumps(_floor_render(context, phases, texts, generator.phrasing),
                       sort_keys=True, ensure_ascii=False)
        return len(contexts[first]), time.perf_counter() - start

    run_floor(1)
    memspec_rates, floor_rates = [], []
    for turn, first in enumerate(contexts):
        if turn % 2 == 0:
            made, memspec_s = run_memspec(first, groups)
            rendered, floor_s = run_floor(first)
        else:
            rendered, floor_s = run_floor(first)
            made, memspec_s = run_memspec(first, groups)
        memspec_rates.append(made / memspec_s)
        floor_rates.append(rendered / floor_s)
    memspec_rate, floor_rate = max(memspec_rates), max(floor_rates)
    paired = sorted(m / f for m, f in zip(memspec_rates, floor_rates, strict=True))
    return {"family": family_id, "groups_per_round": groups, "rounds": rounds,
            "memspec_per_s": round(memspec_rate, 1), "floor_per_s": round(floor_rate, 1),
            "ratio": round(statistics.median(paired), 3),
            "ratio_quartiles": [round(q, 3) for q in statistics.quantiles(paired, n=4)[::2]],
            "best_round_ratio": round(memspec_rate / floor_rate, 3), "target": ">= 0.75",
            "stages_us": _stages(generator, 1000, 3, phases, texts)}


def _stages(generator: Any, groups: int, repeats: int, phases: dict[str, Any],
            texts: dict[str, Any]) -> dict[str, float]:
    """Where an instance's time goes, in microseconds, best of ``repeats`` turns of new groups
    each: memspec's loop cut into its stages, and the floor's into rendering and dumping."""
    best: dict[str, float] = {}
    for turn in range(1, repeats + 1):
        numbers = range(10**6 * turn, 10**6 * turn + groups)
        for stage, seconds in _stage_turn(generator, numbers, phases, texts).items():
            best[stage] = min(best.get(stage, float("inf")), seconds)
    return {stage: round(seconds / groups * 1e6, 1) for stage, seconds in best.items()}


def _stage_turn(generator: Any, numbers: range, phases: dict[str, Any],
                texts: dict[str, Any]) -> dict[str, float]:
    """Seconds of each stage over the groups ``numbers`` (one variant each)."""
    from memspec.core.canonical import dump_instance_bytes
    from memspec.engine.sampling import sample_slots

    family, variant = generator.family, generator.variants[0]
    seconds: dict[str, float] = {}

    def timed(stage: str, work: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = work()
        seconds[stage] = time.perf_counter() - start
        return result

    slots = timed("draw slots", lambda: [
        sample_slots(family, generator.renderer, generator.seed, g, generator._slot_cache)
        for g in numbers])
    pairs = list(zip(slots, numbers, strict=True))
    contexts = [generator._variant_context(s, variant, g) for s, g in pairs]
    timed("render phases, split messages", lambda: [
        [generator._render_phase(name, c) for name in family.paradigm.phases] for c in contexts])
    timed("render answer, check it scores", lambda: [generator._answer(c) for c in contexts])
    rendered = timed("whole instance (the two above, schema)", lambda: [
        generator.render_variant(s, variant, g) for s, g in pairs])
    timed("paradigm's checks", lambda: [generator.checks.check_group([r]) for r in rendered])
    timed("canonical JSON", lambda: [dump_instance_bytes(r.instance,
                                                         checked=generator.json_checked)
                                     for r in rendered])
    out = timed("floor: render", lambda: [
        _floor_render(c, phases, texts, generator.phrasing) for c in contexts])
    timed("floor: json.dumps", lambda: [json.dumps(r, sort_keys=True, ensure_ascii=False)
                                        for r in out])
    return seconds


def _floor_render(context: dict[str, Any], phases: dict[str, Any], texts: dict[str, Any],
                  phrasing: Callable[[str, int], int]) -> dict[str, Any]:
    """The floor's work on one instance, up to its JSON: the same templates (the phrasing of
    each phase that the instance's group renders), rendered."""
    rendered: dict[str, Any] = {"phases": [], "id": context["family"], "group": context["group"]}
    for name, phrasings in phases.items():
        template = phrasings[0] if len(phrasings) == 1 else \
            phrasings[phrasing(name, context["group"])]
        if isinstance(template, list):
            messages = [{"role": role, "content": compiled.template.render(context)}
                        for role, _, compiled in template]
        else:
            messages = [{"text": template.template.render(context)}]
        rendered["phases"].append({"phase": name, "messages": messages})
    rendered["answer"] = {key: compiled.template.render(context)
                          for key, compiled in texts.items()}
    return rendered


def _memspec_together(*commands: list[str]) -> float:
    """Wall seconds until every one of ``commands`` (each `memspec` arguments), started
    together as separate processes, has finished."""
    started = time.perf_counter()
    running = [subprocess.Popen([sys.executable, "-m", "memspec.cli", *args], cwd=REPO,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE) for args in commands]
    for args, process in zip(commands, running, strict=True):
        _, stderr = process.communicate()
        if process.returncode:
            raise SystemExit(f"memspec {' '.join(args)} failed: {stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def bench_workers(groups: int, tmp: Path, repeats: int) -> dict[str, Any]:
    """(b) wall time of `memspec generate` on 1 and 2 worker processes.

    ``repeats`` pairs of runs, one on each side, which goes first alternating, so that a
    machine slowing down or speeding up over a pair favours neither side. As in (a), the two
    sides are compared within a pair: the speed-up is the median of the pairs' ratios, with
    their interquartile range; beside it, the ratio of each side's best run.

    Each pair also runs the control: the two halves of the groups as two independent
    processes started together (`--shard 0/2` and `--shard 1/2`, whose outputs concatenated
    are the whole). That is what two workers would take if handing work out and back cost
    nothing, each process paying its own start-up and warm-up as a worker does, on this
    machine at that moment; the median of the pairs' one-worker time over it is the best
    speed-up the machine allows the run. Then a run of one group: the start-up that every
    run pays and no number of workers shortens."""
    runs: dict[str, list[float]] = {"1": [], "2": [], "shards": []}
    start_up = float("inf")
    generate = ["generate", PROCEDURAL, "--groups", str(groups)]
    for pair in range(repeats):
        for side in ("1", "2", "shards") if pair % 2 == 0 else ("shards", "2", "1"):
            if side == "shards":
                seconds = _memspec_together(
                    *([*generate, "--shard", f"{part}/2", "--out", str(tmp / f"shard{part}")]
                      for part in (0, 1)))
            else:
                seconds, _ = _peak_rss_kib(*generate, "--workers", side,
                                           "--out", str(tmp / f"workers{side}.jsonl"))
            runs[side].append(seconds)
        seconds, _ = _peak_rss_kib("generate", PROCEDURAL, "--out", str(tmp / "one.jsonl"),
                                   "--groups", "1")
        start_up = min(start_up, seconds)
    outputs = [tmp / name for name in ("workers1.jsonl", "workers2.jsonl", "shard0", "shard1")]
    # Compared by digest, read in chunks: each output is gigabytes.
    whole = sha256_file(outputs[0])
    same = whole == sha256_file(outputs[1])
    same_shards = whole == sha256_file(*outputs[2:])
    output_mb = round(outputs[0].stat().st_size / 1e6)
    for output in outputs:  # gigabytes, which the measurements after this one need not share
        output.unlink()

    def ratios(side: str) -> list[float]:
        return sorted(one / other for one, other in zip(runs["1"], runs[side], strict=True))

    paired, control = ratios("2"), ratios("shards")
    quartiles = statistics.quantiles(paired, n=4)[::2] if len(paired) > 1 else paired * 2
    return {"family": PROCEDURAL, "groups": groups, "pairs": repeats,
            "seconds_1": round(min(runs["1"]), 2), "seconds_2": round(min(runs["2"]), 2),
            "median_seconds_1": round(statistics.median(runs["1"]), 2),
            "median_seconds_2": round(statistics.median(runs["2"]), 2),
            "speedup": round(statistics.median(paired), 3),
            "speedup_quartiles": [round(q, 3) for q in quartiles],
            "best_run_speedup": round(min(runs["1"]) / min(runs["2"]), 3),
            "two_shards_speedup": round(statistics.median(control), 3),
            "of_two_shards": round(statistics.median(
                shards / two for two, shards in zip(runs["2"], runs["shards"], strict=True)),
                3),
            "start_up_s": round(start_up, 2), "output_mb": output_mb,
            "identical_bytes": same and same_shards, "target": ">= 1.7"}


def bench_rss(sizes: list[int], tmp: Path) -> dict[str, Any]:
    """(c) peak RSS of `memspec generate` as the number of instances grows."""
    # One group first, so that every measured run finds the code cache filled, as every run
    # after the first does: compiling the schemas' validators alone peaks 20 MiB higher.
    _peak_rss_kib("generate", SMALL, "--groups", "1", "--out", str(tmp / "warm.jsonl"))
    rows = {}
    for size in sizes:
        out = tmp / f"rss{size}.jsonl"
        seconds, rss = _peak_rss_kib("generate", SMALL, "--groups", str(size), "--out",
                                     str(out))
        rows[str(size)] = {"seconds": round(seconds, 1), "peak_rss_mib": round(rss / 1024, 1),
                           "bytes": out.stat().st_size}
        out.unlink()
    peaks = [row["peak_rss_mib"] for row in rows.values()]
    return {"family": SMALL, "sizes": rows, "growth": round(max(peaks) / min(peaks) - 1, 3),
            "target": "growth <= 0.20 and peak < 200 MiB"}


def _project_with_release(tmp: Path, name: str, family: str, groups: int) -> Path:
    """A copy of the project with one more release, ``<name>-v1``: ``groups`` groups of
    ``family``."""
    project = tmp / f"{name}-project"
    for folder in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / folder, project / folder)
    (project / "specs" / "releases" / f"{name}-v1.yaml").write_text(
        f"name: {name}\nversion: v1\nseed: 7\nlicense: CC-BY-4.0\npublished: '2026-12-01'\n"
        "description: A large release for measuring memspec.\n"
        f"families:\n  - family: {family}\n    groups: {groups}\n", encoding="utf-8")
    return project


def _scale_release(tmp: Path, groups: int) -> Path:
    """A release large enough that reading it, not starting up, is what a verify of it
    costs; frozen, it is returned as a release folder."""
    project = _project_with_release(tmp, "scale", PROCEDURAL, groups)
    _peak_rss_kib("--root", str(project), "freeze", "scale-v1", "--workers", "2",
                  "--out", str(project / "dist"))
    return project / "dist" / "scale-v1"


def bench_freeze_rss(sizes: list[int], tmp: Path) -> dict[str, Any]:
    """(c, freeze) peak RSS of a first `memspec freeze` (written, hashed and audited, the
    audit's adversaries included) of a release of one choice family, as its groups grow."""
    rows = {}
    for groups in sizes:
        project = _project_with_release(tmp, f"rss{groups}", CHOICE, groups)
        seconds, rss = _peak_rss_kib("--root", str(project), "freeze", f"rss{groups}-v1",
                                     "--workers", "2", "--out", str(project / "dist"))
        manifest = json.loads((project / "manifests" / f"rss{groups}-v1.json").read_text())
        rows[str(groups)] = {"instances": manifest["counts"]["instances"],
                             "seconds": round(seconds, 1), "peak_rss_mib": round(rss / 1024, 1)}
        shutil.rmtree(project)
    peaks = [row["peak_rss_mib"] for row in rows.values()]
    return {"family": CHOICE, "groups": rows, "growth": round(max(peaks) / min(peaks) - 1, 3),
            "target": "growth <= 0.20 and peak < 200 MiB"}


def _best_of(runs: int, command: list[str], cwd: Path) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def bench_verify(tmp: Path, groups: int, release: str = RELEASE) -> dict[str, Any]:
    """(d) `memspec verify` against `sha256sum -c` on the same release: a large one made
    for the purpose (its data is what both must read), and a bundled one, by default the
    largest of an earlier layout (where starting Python is most of memspec's time). Best of
    three runs each."""
    rows = {}
    _peak_rss_kib("build", release, "--out", str(tmp))
    for label, folder in (("large", _scale_release(tmp, groups)), ("bundled", tmp / release)):
        project = folder.parent.parent if label == "large" else REPO
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        coreutils = _best_of(3, ["sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS"],
                             folder)
        memspec = _best_of(3, [sys.executable, "-m", "memspec.cli", "--root", str(project),
                               "verify", str(folder)], REPO)
        rows[label] = {"release": folder.name, "bytes": size, "sha256sum_s": round(coreutils, 3),
                       "memspec_verify_s": round(memspec, 3),
                       "ratio": round(coreutils / memspec, 3)}
    return {**rows, "target": ">= 0.9"}


def bench_validate(tmp: Path, runs: int = 3) -> dict[str, Any]:
    """(e) `memspec validate` of every bundled spec: once with an empty cache of compiled
    code (the first run after installing or upgrading memspec), then the best of ``runs``
    runs with it filled (every run after)."""
    os.environ[CACHE_DIR_VARIABLE] = str(tmp / "validate-cache")
    cold = _peak_rss_kib("validate")[0]
    warm = min(_peak_rss_kib("validate")[0] for _ in range(runs))
    os.environ[CACHE_DIR_VARIABLE] = str(tmp / "cache")
    return {"seconds": round(warm, 2), "seconds_cold_cache": round(cold, 2),
            "target": "< 2 s"}


def _timed_memspec(*args: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, of it and its children, as the kernel
    counts them) of one `memspec` run."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "memspec.cli", *args], cwd=REPO,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            errors.seek(0)
            raise SystemExit(f"memspec {' '.join(args)} failed: "
                             f"{errors.read().decode()[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def bench_build(tmp: Path, runs: int, releases: list[str]) -> dict[str, Any]:
    """(f) `memspec build` (of ``releases``, by default what the README's line builds) into
    a fresh folder each run: first with an empty cache of compiled code, then ``runs`` times
    with it filled; the medians of those count."""
    os.environ[CACHE_DIR_VARIABLE] = str(tmp / "build-cache")

    def build(run: str) -> tuple[float, float]:
        out = tmp / f"build-{run}"
        try:
            return _timed_memspec("build", *releases, "--out", str(out))
        finally:
            shutil.rmtree(out, ignore_errors=True)

    cold = build("cold")
    warm = [build(str(run)) for run in range(runs)]
    os.environ[CACHE_DIR_VARIABLE] = str(tmp / "cache")
    return {"releases": releases or "newest of each", "runs": runs,
            "seconds": round(statistics.median(wall for wall, _ in warm), 2),
            "cpu_seconds": round(statistics.median(cpu for _, cpu in warm), 2),
            "seconds_all": [round(wall, 2) for wall, _ in warm],
            "cpu_seconds_all": [round(cpu, 2) for _, cpu in warm],
            "seconds_cold_cache": round(cold[0], 2),
            "cpu_seconds_cold_cache": round(cold[1], 2), "target": "<= 20 s"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="a,b,c,d,e,f", help="which measurements, e.g. a,c")
    parser.add_argument("--floor-groups", type=int, default=200,
                        help="groups of one round of (a)")
    parser.add_argument("--rounds", type=int, default=60,
                        help="rounds of (a), the two sides taken in turns; the median of the "
                             "rounds' ratios counts")
    parser.add_argument("--family", default=PROCEDURAL,
                        help=f"the family of (a) (default {PROCEDURAL})")
    parser.add_argument("--repeats", type=int, default=7,
                        help="pairs of runs of (b), the two sides in turns; the median of the "
                             "pairs' ratios counts")
    parser.add_argument("--freeze-groups", default="2000,8000",
                        help="release sizes (groups) for the freeze memory runs of (c)")
    parser.add_argument("--worker-groups", type=int, default=240_000,
                        help="groups for (b), about 1.9 GB: a long run, as the runs that "
                             "workers are for, where what every run pays once (start-up, "
                             "about 0.4 s, and warm-up), which no worker shortens, is about "
                             "1%% of the one-worker time")
    parser.add_argument("--verify-groups", type=int, default=20000,
                        help="groups of the large release for (d): about 150 MB")
    parser.add_argument("--verify-release", default=RELEASE,
                        help=f"the bundled release of (d) (default {RELEASE})")
    parser.add_argument("--rss-max", type=int, default=1_000_000,
                        help="largest instance count for (c)")
    parser.add_argument("--validate-runs", type=int, default=3,
                        help="runs of (e) with the code cache filled; the best counts")
    parser.add_argument("--build-runs", type=int, default=3,
                        help="runs of (f) with the code cache filled; their median counts")
    parser.add_argument("--build-releases", default="",
                        help="releases (f) builds, e.g. example-v3 (default: what the "
                             "README's `memspec build` builds)")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results.json")
    args = parser.parse_args()
    wanted = set(args.only.split(","))
    results: dict[str, Any] = {"machine": {
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "platform": platform.platform(), "processor": platform.processor() or "unknown",
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
                            1)}}
    with tempfile.TemporaryDirectory(prefix="memspec-bench-") as name:
        tmp = Path(name)
        # A cache of compiled code of the bench's own, so that no run depends on what earlier
        # commands left in the user's cache.
        os.environ[CACHE_DIR_VARIABLE] = str(tmp / "cache")
        if "a" in wanted:
            results["a_floor"] = bench_floor(args.floor_groups, args.rounds, args.family)
        if "b" in wanted:
            results["b_workers"] = bench_workers(args.worker_groups, tmp,
                                                 args.repeats)
        if "c" in wanted:
            sizes = [n for n in (10_000, 100_000, 1_000_000) if n <= args.rss_max]
            results["c_rss"] = bench_rss(sizes, tmp)
            results["c_freeze_rss"] = bench_freeze_rss(
                [int(n) for n in args.freeze_groups.split(",")], tmp)
        if "d" in wanted:
            results["d_verify"] = bench_verify(tmp, args.verify_groups,
                                              args.verify_release)
        if "e" in wanted:
            results["e_validate"] = bench_validate(tmp, args.validate_runs)
        if "f" in wanted:
            results["f_build"] = bench_build(tmp, args.build_runs,
                                             [r for r in args.build_releases.split(",") if r])
        shutil.rmtree(tmp, ignore_errors=True)
    earlier = json.loads(args.json.read_text()) if args.json.is_file() else {}
    args.json.write_text(json.dumps({**earlier, **results}, indent=2, sort_keys=True) + "\n")
    _print_table(results)


def _print_table(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("measurement", "result", "target")
    rows = {
        "a_floor": lambda r: (f"(a) median of {r['rounds']} rounds' ratios (quartiles "
                              f"{r['ratio_quartiles'][0]}-{r['ratio_quartiles'][1]}); best "
                              f"rounds {r['memspec_per_s']}/s vs floor {r['floor_per_s']}/s "
                              f"(ratio {r['best_round_ratio']})",
                              f"ratio {r['ratio']}"),
        "b_workers": lambda r: (f"(b) {r['groups']} groups, median of {r['pairs']} pairs' "
                                f"ratios (quartiles {r['speedup_quartiles'][0]}-"
                                f"{r['speedup_quartiles'][1]}); best runs 1 worker "
                                f"{r['seconds_1']} s, 2 workers {r['seconds_2']} s (ratio "
                                f"{r['best_run_speedup']}); start-up {r['start_up_s']} s; "
                                f"two --shard processes {r['two_shards_speedup']}x, the "
                                f"workers {r['of_two_shards']} of their speed",
                                f"speed-up {r['speedup']}x"),
        "c_rss": lambda r: ("(c) peak RSS " + ", ".join(
            f"{n}: {v['peak_rss_mib']} MiB" for n, v in r["sizes"].items()),
            f"growth {r['growth']:.1%}"),
        "d_verify": lambda r: (
            f"(d) {r['large']['bytes'] / 1e6:.0f} MB: sha256sum {r['large']['sha256sum_s']} s, "
            f"verify {r['large']['memspec_verify_s']} s; {r['bundled']['release']} "
            f"({r['bundled']['bytes'] / 1e6:.0f} MB): {r['bundled']['sha256sum_s']} s vs "
            f"{r['bundled']['memspec_verify_s']} s",
            f"{r['large']['ratio']}x ({r['bundled']['ratio']}x)"),
        "c_freeze_rss": lambda r: ("(c) first freeze, audit included, peak RSS " + ", ".join(
            f"{v['instances']} instances: {v['peak_rss_mib']} MiB" for v in r["groups"].values()),
            f"growth {r['growth']:.1%}"),
        "e_validate": lambda r: ("(e) memspec validate (first run, empty code cache: "
                                 f"{r['seconds_cold_cache']} s)", f"{r['seconds']} s"),
        "f_build": lambda r: (f"(f) memspec build, median of {r['runs']} runs: CPU "
                              f"{r['cpu_seconds']} s (first run, empty code cache: "
                              f"{r['seconds_cold_cache']} s, CPU "
                              f"{r['cpu_seconds_cold_cache']} s)", f"{r['seconds']} s"),
    }
    for key, describe in rows.items():
        if key in results:
            text, value = describe(results[key])
            table.add_row(text, value, results[key]["target"])
    console = Console()
    console.print(table)
    if "stages_us" in results.get("a_floor", {}):
        stages = Table("(a) stage of one instance", "µs", title="where (a)'s time goes")
        for stage, micros in results["a_floor"]["stages_us"].items():
            stages.add_row(stage, f"{micros:g}")
        console.print(stages)


if __name__ == "__main__":
    main()
