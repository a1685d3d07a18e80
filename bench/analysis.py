"""CPU seconds and peak memory of the analysis commands on the largest bundled release.

    python bench/analysis.py                       # every measurement, a table, results.json
    python bench/analysis.py --only score,abstain  # some of them
    python bench/analysis.py --runs 5              # runs per figure (the median counts)

A benchmark author's loop (freeze, read the report, score, go again) on a shared machine:
each command runs --runs times as a fresh process, and its figure is the median of the CPU
seconds (user + system, of the process and its children, from the kernel) and of the peak
RSS. Wall time says nothing on a machine others share, so it is not a target. Every figure
is also given as a ratio to a baseline run in the same invocation, in turns with the command,
so that a busy moment falls on both: the interpreter's start-up (`python -c pass`) for
`--version` and `--help`, and reading the release's data files with the standard library
(`json.loads` of every line) for the commands that read a release.

score      `memspec score` of the random policy's responses (target <= 2 s, <= 200 MB)
abstain    `memspec score` of random letters with "I don't know." on about half the items
           that show memory, seeded (target < 5 s; <= 2 s and <= 200 MB whatever the
           abstention pattern)
audit      `memspec audit` with the project's specs at hand, as a freeze runs it, every family
           audited (its cached results removed before each run; target <= 6 s, <= 250 MB);
           and again with the cache of the run before (nothing changed since)
draft      `freeze --draft` of a release of one 200-item family (implicitmem-v6's poem
           priming, 100 groups; the author's loop) with its audit, with the audit's cache
           emptied before each run and with the cache of the run before (target <= 3 s)
report     `memspec report` (target <= 4 s)
startup    `memspec --version` and `memspec --help` (target <= 0.12 s each)
validate   `memspec validate` of one family file (target <= 0.5 s)
linear     score, report, audit (cold: its cached results removed before each run) and
           verify of a release frozen with twice the groups of each family, against the
           release itself (target: <= 2.2x the CPU); freezing it takes a minute or two, into
           the temporary folder

Each figure says whether its target is met; a figure that misses its target is printed as
FAILED, and with --check the bench then exits with status 1. --release names another
bundled release (a small one for a quick run).

The release is the project's dist/trustgap-v6 when it is built there (`memspec build`), else
it is frozen into the temporary folder first. Results go to bench/results.json under
"analysis", with the machine, the commit and the load average when each ran.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RELEASE = "trustgap-v6"
#: A family file of that release, for `validate` of one family.
FAMILY_FILE = "specs/families/trustgap/v6/airline.yaml"
#: The family a draft is frozen of, and its groups (2 instances a group: 200 instances).
DRAFT_FAMILY, DRAFT_GROUPS = "implicitmem.priming6.poem", 100
ABSTAIN = "I don't know."
MEASUREMENTS = ("score", "abstain", "audit", "report", "startup", "validate", "linear",
                "draft")
#: The commands `linear` times on the release and on its double.
LINEAR_COMMANDS = ("score", "report", "audit", "verify")
#: The largest ratio of CPU seconds the doubled release may take (linear in its input).
LINEAR_TARGET = 2.2
#: The folders of the audit's cached results (each family's, the picks across families).
AUDIT_CACHE = ("audit-family", "audit-family-reads", "audit-picks")


def run_measured(args: list[str], cwd: Path = REPO) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of one fresh process tree running ``args``, measured
    by the kernel in a child of its own (so that nothing run before counts)."""
    code = ("import resource, subprocess, sys;"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
            "print(r.returncode, u.ru_utime + u.ru_stime, u.ru_maxrss)")
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                            text=True, stdin=subprocess.DEVNULL, check=True, env=_ENVIRONMENT)
    returncode, cpu, rss = result.stdout.split()
    if returncode != "0":
        raise SystemExit(f"{' '.join(args)} failed with status {returncode}")
    return float(cpu), int(rss) / 1024


#: The environment of the measured processes: Python writes and reads its compiled modules
#: (__pycache__), as in an installed copy, even where the caller's environment turns that
#: off (PYTHONDONTWRITEBYTECODE), which would make every run compile every module it imports
#: (a fifth of a short command).
_ENVIRONMENT = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def memspec(*args: str) -> list[str]:
    """The command line of ``memspec ARGS`` in this interpreter."""
    return [sys.executable, "-m", "memspec.cli", *args]


def in_turns(command: list[str], baseline: list[str], runs: int) -> dict[str, Any]:
    """The command and its baseline, run in turns ``runs`` times each: medians of the CPU
    seconds and peak RSS, and the median of the per-pair ratios of CPU seconds. Each runs
    once first, unmeasured, so that the caches of compiled code (memspec's and Python's) are
    filled, as every run after a user's first finds them."""
    run_measured(command)
    run_measured(baseline)
    pairs = []
    for _ in range(runs):
        pairs.append((run_measured(command), run_measured(baseline)))
    cpu = [c for (c, _), _ in pairs]
    return {"cpu_s": round(statistics.median(cpu), 3),
            "cpu_s_runs": [round(c, 3) for c in cpu],
            "peak_rss_mib": round(statistics.median(r for (_, r), _ in pairs), 1),
            "baseline_cpu_s": round(statistics.median(b for _, (b, _) in pairs), 3),
            "baseline_peak_rss_mib": round(statistics.median(r for _, (_, r) in pairs), 1),
            "ratio_to_baseline": round(statistics.median(c / b for (c, _), (b, _) in pairs), 2),
            "load_average": load_average()}


def without_audit_cache(command: list[str], cache: Path, verdict_ok: bool = False) -> list[str]:
    """``command``, run after the audit's cached results in ``cache`` are removed (the cache
    of compiled code stays, as a user's does): an audit of every family. With
    ``verdict_ok``, status 1 (an audit that found a failure: a verdict, not a failed run)
    counts as a finished run."""
    status = "(lambda s: 0 if s == 1 else s)" if verdict_ok else "(lambda s: s)"
    code = ("import shutil, subprocess, sys;"
            f"[shutil.rmtree(sys.argv[1] + '/' + name, ignore_errors=True) for name in "
            f"{AUDIT_CACHE!r}];"
            f"sys.exit({status}(subprocess.call(sys.argv[2:])))")
    return [sys.executable, "-c", code, str(cache), *command]


def judged(figure: dict[str, Any], cpu_max: float, rss_max: float | None = None
           ) -> dict[str, Any]:
    """``figure`` with whether it meets its target: at most ``cpu_max`` CPU seconds (and
    ``rss_max`` MiB of peak RSS, where given)."""
    met = figure["cpu_s"] <= cpu_max and (rss_max is None
                                          or figure["peak_rss_mib"] <= rss_max)
    return {**figure, "met": met}


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (what `uptime` shows)."""
    return [round(x, 2) for x in os.getloadavg()]


def reading_baseline(release: Path) -> list[str]:
    """A process that reads every line of the release's data files with ``json.loads``."""
    code = ("import json, pathlib, sys;"
            "[json.loads(line) for p in sorted(pathlib.Path(sys.argv[1]).glob('data/*.jsonl'))"
            " for line in p.open('rb')]")
    return [sys.executable, "-c", code, str(release)]


def abstaining_responses(release: Path, out: Path, seed: int = 1) -> int:
    """Random letters, with "I don't know." instead on about half the items that show
    memory (a context phase with messages), from one seeded stream in file order; the
    number of abstentions."""
    rng = random.Random(seed)
    abstained = 0
    with out.open("w", encoding="utf-8") as handle:
        for data in sorted((release / "data").glob("*.jsonl")):
            for line in data.open("rb"):
                instance = json.loads(line)
                shows_memory = any(p["messages"] for p in instance["phases"]
                                   if p["phase"] == "context")
                letters = len(instance["answer"].get("options") or "ABC")
                if shows_memory and rng.random() < 0.5:
                    response, abstained = ABSTAIN, abstained + 1
                else:
                    response = chr(ord("A") + rng.randrange(letters))
                handle.write(json.dumps({"id": instance["id"], "response": response}) + "\n")
    return abstained


def respond(release: Path, out: Path) -> None:
    """The random policy's responses (seed 1) to every instance of ``release``."""
    subprocess.run(memspec("respond", str(release), "--policy", "random", "--seed", "1",
                           "--out", str(out)), cwd=REPO, check=True, stdin=subprocess.DEVNULL)


def the_release(tmp: Path, release: str = RELEASE) -> Path:
    """dist/<release> when built, else the release frozen into ``tmp``."""
    built = REPO / "dist" / release
    if (built / "manifest.json").is_file():
        return built
    subprocess.run(memspec("freeze", release, "--out", str(tmp)), cwd=REPO, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return tmp / release


def doubled_release(tmp: Path, release: str = RELEASE) -> tuple[Path, Path]:
    """The release with twice the groups of every family (the first half its own groups),
    frozen as a draft in a copy of the project: the same instances, twice as many. Returns
    the release folder and its project (the spec audits read the project)."""
    project = tmp / "doubled-project"
    for part in ("specs", "templates"):
        shutil.copytree(REPO / part, project / part)
    shutil.copy(REPO / "memspec.yaml", project / "memspec.yaml")
    name, version = release.rsplit("-", 1)
    text = (REPO / "specs" / "releases" / f"{release}.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^(\s*groups: )(\d+)$", lambda m: f"{m[1]}{2 * int(m[2])}", text)
    text = re.sub(rf"(?m)^version: {version}$", "version: v904", text, count=1)
    (project / "specs" / "releases" / f"{name}-v904.yaml").write_text(text, encoding="utf-8")
    # The group's time budget is wall time: on a machine others load, a group of this
    # setup (not measured) may take longer than a user's would.
    subprocess.run(memspec("--root", str(project), "freeze", f"{name}-v904", "--draft",
                           "--allow-audit-failures", "--out", str(tmp / "doubled")),
                   cwd=REPO, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   env={**_ENVIRONMENT, "MEMSPEC_GROUP_SECONDS": "600"})
    return tmp / "doubled" / f"{name}-v904", project


def bench(only: set[str], runs: int, linear_commands: list[str],
          release_name: str = RELEASE) -> dict[str, Any]:
    """Every measurement asked for, as a dict of results."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memspec-bench-") as name:
        tmp = Path(name)
        _ENVIRONMENT["MEMSPEC_CACHE_DIR"] = os.environ["MEMSPEC_CACHE_DIR"] = str(tmp / "cache")
        release = the_release(tmp, release_name)
        reading = reading_baseline(release)
        start = [sys.executable, "-c", "pass"]
        random_file = tmp / "random.jsonl"
        if only & {"score", "linear"}:
            respond(release, random_file)
        if "score" in only:
            results["score"] = judged(
                {**in_turns(memspec("score", str(release), str(random_file), "--format",
                                    "json"), reading, runs),
                 "target": "<= 2 s CPU and <= 200 MiB"}, 2, 200)
        if "abstain" in only:
            abstaining = tmp / "abstaining.jsonl"
            count = abstaining_responses(release, abstaining)
            results["score_abstaining"] = judged({
                **in_turns(memspec("score", str(release), str(abstaining), "--format", "json"),
                           reading, runs),
                "abstentions": count, "target": "<= 2 s CPU and <= 200 MiB"}, 2, 200)
        if "audit" in only:
            audit = memspec("audit", str(release), "--format", "json")
            results["audit"] = judged(
                {**in_turns(without_audit_cache(audit, tmp / "cache"), reading, runs),
                 "target": "<= 6 s CPU and <= 250 MiB"}, 6, 250)
            results["audit, cached"] = {**in_turns(audit, reading, runs),
                                        "target": "(none: the release unchanged since)"}
        if "draft" in only:
            results.update(draft_freeze(tmp, runs))
        if "report" in only:
            results["report"] = judged(
                {**in_turns(memspec("report", str(release), "--out", str(tmp / "report.html")),
                            reading, runs), "target": "<= 4 s CPU"}, 4)
        if "startup" in only:
            for flag in ("--version", "--help"):
                results[f"memspec {flag}"] = judged(
                    {**in_turns(memspec(flag), start, runs), "target": "<= 0.12 s CPU"}, 0.12)
        if "validate" in only:
            results["validate one family"] = judged({
                **in_turns(memspec("validate", FAMILY_FILE, "--workers", "1"), start, runs),
                "family_file": FAMILY_FILE, "target": "<= 0.5 s CPU"}, 0.5)
        if "linear" in only:
            doubled, project = doubled_release(tmp, release_name)
            results["linear"] = linear(release, doubled, project, random_file, tmp, runs,
                                       set(linear_commands))
    return results


def draft_freeze(tmp: Path, runs: int) -> dict[str, Any]:
    """`freeze --draft` of a release of one family (``DRAFT_FAMILY``) in a copy of the
    project, every family audited (the audit's cache emptied first) and with the cache of
    the run before, in turns: the second's ratio is to the first."""
    project = tmp / "draft-project"
    for part in ("specs", "templates"):
        shutil.copytree(REPO / part, project / part)
    shutil.copy(REPO / "memspec.yaml", project / "memspec.yaml")
    (project / "specs" / "releases" / "draft-v1.yaml").write_text(
        f"name: draft\nversion: v1\nseed: 5\ndescription: one family, as an author drafts "
        f"it\nfamilies:\n  - family: {DRAFT_FAMILY}\n    groups: {DRAFT_GROUPS}\n",
        encoding="utf-8")
    freeze = memspec("--root", str(project), "freeze", "draft-v1", "--draft",
                     "--allow-audit-failures", "--out", str(tmp / "drafts"))
    cold = without_audit_cache(freeze, tmp / "cache")
    measured = in_turns(freeze, cold, runs)
    instances = json.loads((tmp / "drafts" / "draft-v1" / "manifest.json").read_text(
        encoding="utf-8"))["counts"]["instances"]
    common = {"family": DRAFT_FAMILY, "instances": instances, "target": "<= 3 s CPU"}
    return {"freeze --draft": judged({**common, "cpu_s": measured["baseline_cpu_s"],
                                      "peak_rss_mib": measured["baseline_peak_rss_mib"],
                                      "baseline_cpu_s": None, "ratio_to_baseline": None,
                                      "load_average": measured["load_average"]}, 3),
            "freeze --draft, cached": judged({**common, **measured, "baseline":
                                              "the same freeze, every family audited"}, 3)}


def linear(release: Path, doubled: Path, project: Path, responses: Path, tmp: Path,
           runs: int, which: set[str]) -> dict[str, Any]:
    """score, report, audit (cold) and verify of the doubled release against the release, in
    turns: the median of the pairs' ratios of CPU seconds (target <= LINEAR_TARGET)."""
    doubled_responses = tmp / "doubled-random.jsonl"
    respond(doubled, doubled_responses)
    cache = tmp / "cache"
    # Each command of a release, its responses and the project it was frozen from.
    commands: dict[str, Callable[[Path, Path, Path], list[str]]] = {
        "score": lambda rel, resp, root: memspec("score", str(rel), str(resp), "--format",
                                                 "json"),
        "report": lambda rel, resp, root: memspec("--root", str(root), "report", str(rel),
                                                  "--out", str(tmp / "linear.html")),
        "audit": lambda rel, resp, root: without_audit_cache(
            memspec("--root", str(root), "audit", str(rel), "--format", "json"), cache,
            verdict_ok=True),
        "verify": lambda rel, resp, root: memspec("--root", str(root), "verify", str(rel),
                                                  "--allow-draft"),
    }
    found: dict[str, Any] = {}
    for name, command in commands.items():
        if name not in which:
            continue
        measured = in_turns(command(doubled, doubled_responses, project),
                            command(release, responses, REPO), runs)
        found[name] = {"cpu_s_doubled": measured["cpu_s"],
                       "cpu_s_release": measured["baseline_cpu_s"],
                       "ratio": measured["ratio_to_baseline"],
                       "met": measured["ratio_to_baseline"] <= LINEAR_TARGET,
                       "load_average": measured["load_average"],
                       "target": f"<= {LINEAR_TARGET}"}
    return found


def verdict(met: bool) -> str:
    """How a figure against its target is printed: a miss stands out."""
    return "met" if met else "FAILED"


def machine() -> dict[str, Any]:
    """Where the figures were taken: the machine, Python and the commit."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
            "python": platform.python_version(),
            "commit": commit + (" (with uncommitted changes)" if dirty else ""),
            "max_rss_unit": "MiB", "cpu": "user + system seconds of the process tree"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(MEASUREMENTS),
                        help=f"comma-separated: {', '.join(MEASUREMENTS)}")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--linear", default=",".join(LINEAR_COMMANDS),
                        help="the commands `linear` runs on both releases "
                             f"({', '.join(LINEAR_COMMANDS)})")
    parser.add_argument("--release", default=RELEASE,
                        help=f"the bundled release measured (default {RELEASE})")
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 when a figure misses its target")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results.json")
    args = parser.parse_args()
    only = {m.strip() for m in args.only.split(",") if m.strip()}
    unknown = only - set(MEASUREMENTS)
    if unknown:
        parser.error(f"unknown measurement(s): {', '.join(sorted(unknown))}")
    linear_commands = [c.strip() for c in args.linear.split(",") if c.strip()]
    if set(linear_commands) - set(LINEAR_COMMANDS):
        parser.error(f"--linear takes {', '.join(LINEAR_COMMANDS)}")
    results = bench(only, args.runs, linear_commands, args.release)
    failed = []
    for name, figure in results.items():
        if name == "linear":
            for command, entry in figure.items():
                print(f"{command} of twice the groups: {entry['cpu_s_doubled']} s against "
                      f"{entry['cpu_s_release']} s, {entry['ratio']}x "
                      f"(target {entry['target']}: {verdict(entry['met'])}; "
                      f"load {entry['load_average']})")
                failed += [f"{command} of twice the groups"] * (not entry["met"])
            continue
        print(f"{name}: {figure['cpu_s']} s CPU, {figure['peak_rss_mib']} MiB, "
              f"{figure['ratio_to_baseline']}x its baseline ({figure['baseline_cpu_s']} s) "
              f"(target {figure['target']}: {verdict(figure['met'])}; "
              f"load {figure['load_average']})")
        failed += [name] * (not figure["met"])
    stored = json.loads(args.json.read_text(encoding="utf-8")) if args.json.is_file() else {}
    analysis = stored.get("analysis", {})
    analysis.update(results)
    analysis["taken_on"] = machine()
    stored["analysis"] = analysis
    args.json.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if failed:
        print(f"FAILED targets: {', '.join(failed)}")
        if args.check:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
