"""Mutation testing of generator/: one small change to a core module at a time, run against
the fast tests mapped to that module, to find behaviour no test pins down.

    python scripts/mutate.py --list                          # every mutant, numbered
    python scripts/mutate.py --module generator/analysis/stats.py     # every mutant of one module
    python scripts/mutate.py --sample 40 --seed 1            # 40 mutants a module, seeded
    python scripts/mutate.py --module generator/analysis/scoring.py --only scoring.py:first_choice#3

Mutants are made from the module's syntax tree, each a change a careless edit could make:
a comparison flipped or loosened (``<`` / ``<=``, ``==`` / ``!=``, ``in`` / ``not in``),
``and`` for ``or``, an arithmetic operator swapped, a ``not`` dropped, a whole-number constant
off by one, ``True`` for ``False``, ``min`` for ``max``, a returned value replaced by None.
Only the changed expression's text is replaced in the source, so every other line keeps its
place. Strings, docstrings and type annotations are never mutated.

Each mutant is written into a private copy of the project (the tests run from it, with
PYTHONPATH pointing at it, also for the command-line runs they start) and the module's tests
run with ``-n 0 -x -q -p no:cacheprovider``: a test failing kills it, a run past its time
limit counts as killed by timeout, and a mutant the whole mapped set passes survives.
Mutants listed in ``scripts/mutation-equivalent.toml`` (no observable change, with the
reason) are not run.

The order of mutants is fixed (by position in the file); ``--sample N --seed S`` keeps the
N whose SHA-256 of ``S:id`` is smallest, the same N on every machine. Modules and their
tests are in ``scripts/mutation.toml``. Exit status: 0, or 1 when a module's kill rate is
below ``--fail-under``. Needs only the standard library and pytest.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "scripts" / "mutation.toml"
EQUIVALENT = ROOT / "scripts" / "mutation-equivalent.toml"
PYTEST_FLAGS = ("-n", "0", "-x", "-q", "-p", "no:cacheprovider")

_COMPARE_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
_BINOP_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
    ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr, ast.LShift: ast.RShift,
}
_NAME_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True)
class Mutant:
    """One change to one module: ``id`` names it stably (module, enclosing function, the
    how-many-th mutant there), so that it keeps its name when other functions change."""

    id: str
    module: str
    line: int
    description: str
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str
    #: first and last line of the innermost statement holding the change: a test that runs
    #: none of these lines cannot tell the mutant from the original.
    statement: tuple[int, int] = (0, 0)


def _mutations(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(description, mutated copy of ``node``) for each mutation ``node`` admits."""
    def copy() -> ast.AST:
        return ast.parse(ast.unparse(node), mode="eval").body

    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            swap = _COMPARE_SWAPS.get(type(op))
            if swap is not None:
                new = copy()
                new.ops[index] = swap()
                yield f"{type(op).__name__} -> {swap.__name__}", new
    elif isinstance(node, ast.BoolOp):
        new = copy()
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"{type(node.op).__name__} -> {type(new.op).__name__}", new
    elif isinstance(node, ast.BinOp):
        swap = _BINOP_SWAPS.get(type(node.op))
        if swap is not None:
            new = copy()
            new.op = swap()
            yield f"{type(node.op).__name__} -> {swap.__name__}", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", node.operand
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            yield f"{node.value} -> {not node.value}", ast.Constant(not node.value)
        elif isinstance(node.value, int):
            yield f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1)
            if node.value != 0:
                yield f"{node.value} -> {node.value - 1}", ast.Constant(node.value - 1)
        elif isinstance(node.value, float):
            yield f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1)
    elif isinstance(node, ast.Name) and node.id in _NAME_SWAPS and \
            isinstance(node.ctx, ast.Load):
        yield f"{node.id} -> {_NAME_SWAPS[node.id]}", ast.Name(_NAME_SWAPS[node.id], ast.Load())


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes never mutated: docstrings, annotations, and everything under them."""
    skip: set[int] = set()

    def under(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            under(node.returns)
            for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs,
                        node.args.vararg, node.args.kwarg]:
                if arg is not None:
                    under(arg.annotation)
        elif isinstance(node, ast.AnnAssign):
            under(node.annotation)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            under(node)  # a docstring or a bare string
        elif isinstance(node, ast.JoinedStr):
            under(node)  # message text: a changed word is not a changed behaviour
    return skip


def mutants_of(module: str, source: str | None = None) -> list[Mutant]:
    """Every mutant of ``module`` (a path relative to the project), in source order: of
    ``source``, else of the work tree's file."""
    if source is None:
        source = (ROOT / module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    skip = _skipped(tree)
    found: list[tuple[tuple[int, int], str, str, ast.AST, str, tuple[int, int]]] = []

    def visit(node: ast.AST, scope: str, statement: tuple[int, int]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            lines = (child.lineno, child.end_lineno) if isinstance(child, ast.stmt) \
                else statement
            if id(child) not in skip and hasattr(child, "end_col_offset"):
                for description, new in _mutations(child):
                    found.append(((child.lineno, child.col_offset), inner or "<module>",
                                  description, child, _unparse(new), lines))
            if isinstance(child, ast.Return) and child.value is not None and \
                    not (isinstance(child.value, ast.Constant) and child.value.value is None):
                found.append(((child.value.lineno, child.value.col_offset),
                              inner or "<module>", "return None", child.value, "None", lines))
            visit(child, inner, lines)

    visit(tree, "", (0, 0))
    found.sort(key=lambda f: (f[0], f[2]))
    counts: dict[str, int] = {}
    stem = Path(module).name
    mutants = []
    for _, scope, description, node, replacement, lines in found:
        counts[scope] = counts.get(scope, 0) + 1
        mutants.append(Mutant(f"{stem}:{scope}#{counts[scope]}", module, node.lineno,
                              description, (node.lineno, node.col_offset),
                              (node.end_lineno, node.end_col_offset), replacement, lines))
    return mutants


def _unparse(node: ast.AST) -> str:
    # Parenthesised, so that the replacement binds as the expression it replaces did.
    return f"({ast.unparse(node)})"


def mutated_source(mutant: Mutant, source: str | None = None) -> str:
    """The module's source (``source``, else the work tree's file) with the mutant's
    expression replaced, every other byte kept."""
    if source is None:
        source = (ROOT / mutant.module).read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    (start_line, start_col), (end_line, end_col) = mutant.start, mutant.end
    # Columns are UTF-8 byte offsets in the syntax tree.
    first = lines[start_line - 1].encode("utf-8")
    last = lines[end_line - 1].encode("utf-8")
    head = first[:start_col].decode("utf-8")
    tail = last[end_col:].decode("utf-8")
    return "".join([*lines[:start_line - 1], head, mutant.replacement, tail, *lines[end_line:]])


def pick(mutants: list[Mutant], sample: int | None, seed: int) -> list[Mutant]:
    """The ``sample`` mutants whose SHA-256 of ``seed:id`` is smallest (all without a sample),
    kept in source order."""
    if sample is None or sample >= len(mutants):
        return mutants
    ranked = sorted(mutants, key=lambda m: hashlib.sha256(f"{seed}:{m.id}".encode()).digest())
    chosen = {m.id for m in ranked[:sample]}
    return [m for m in mutants if m.id in chosen]


def load_config() -> tuple[dict[str, list[str]], dict[str, str]]:
    """(tests by module, reason by equivalent mutant id)."""
    config = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    modules = {name: list(entry["tests"]) for name, entry in config["modules"].items()}
    equivalent = {}
    if EQUIVALENT.is_file():
        for entry in tomllib.loads(EQUIVALENT.read_text(encoding="utf-8")).get("mutant", []):
            equivalent[entry["id"]] = entry["reason"]
    return modules, equivalent


def _run_tests(copy_root: Path, tests: list[str], timeout: float,
               extra_env: dict[str, str] | None = None,
               flags: tuple[str, ...] = PYTEST_FLAGS) -> tuple[str, float]:
    """Run ``tests`` with ``copy_root`` first on the path: ("passed" | "failed" | "timeout",
    seconds)."""
    env = {**os.environ, "PYTHONPATH": str(copy_root), "PYTHONDONTWRITEBYTECODE": "1",
           **(extra_env or {})}
    env.pop("MEMSPEC_ROOT", None)
    began = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", *flags, *tests],
                                cwd=copy_root, env=env, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - began
    elapsed = time.monotonic() - began
    if result.returncode == 5:
        raise SystemExit(f"no tests collected by {' '.join(tests)}")
    return ("passed" if result.returncode == 0 else "failed"), elapsed


def _copy_project(into: Path, source: Path = ROOT) -> Path:
    """A private copy of the project (of ``source``, a copy of it taken when the run began)
    to run mutants in; the path of its root."""
    # The whole project, not generator/ alone: ``python -m`` puts the working folder first
    # on the path, and the tests run the command line from the project's root, so both must
    # be the copy for the mutant to be what runs.
    copy_root = into / "project"
    shutil.copytree(source, copy_root, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", "dist", "build", ".ruff_cache", ".venv",
        ".pytest_cache", ".hypothesis"))
    # The import name is memspec: the copy's package folder answers to it first.
    if not (copy_root / "memspec").exists():
        (copy_root / "memspec").symlink_to("generator", target_is_directory=True)
    return copy_root


class Coverage:
    """Which of a module's mapped tests run each of its lines, from one traced run of them
    (scripts/mutation_trace.py). Used only to choose what to run first: a mutant the tests
    that run its statement do not kill is run again against every mapped test."""

    def __init__(self, by_line: dict[int, list[str]], order: dict[str, int]) -> None:
        self.by_line = by_line
        self.order = order

    @classmethod
    def measure(cls, copy_root: Path, module: str, tests: list[str],
                timeout: float) -> Coverage | None:
        """Trace one run of ``tests``; None when the traced run fails (then every mutant
        runs every test)."""
        trace_dir = copy_root.parent / "trace"
        trace_dir.mkdir()
        shutil.copyfile(ROOT / "scripts" / "mutation_trace.py", trace_dir / "sitecustomize.py")
        out = trace_dir / "lines.tsv"
        env = {"PYTHONPATH": os.pathsep.join([str(trace_dir), str(copy_root)]),
               "MEMSPEC_MUTATION_TARGET": os.path.realpath(copy_root / module),
               "MEMSPEC_MUTATION_OUT": str(out)}
        flags = tuple(f for f in PYTEST_FLAGS if f != "-x") + ("-p", "sitecustomize")
        status, _ = _run_tests(copy_root, tests, timeout, env, flags)
        if status != "passed" or not out.is_file():
            return None
        by_line: dict[int, list[str]] = {}
        order: dict[str, int] = {}
        for row in out.read_text(encoding="utf-8").splitlines():
            line, _, test = row.partition("\t")
            order.setdefault(test, len(order))
            by_line.setdefault(int(line), []).append(test)
        return cls(by_line, order)

    def tests_for(self, mutant: Mutant) -> list[str] | None:
        """The tests that run the mutant's statement, in the order they ran; None when
        every test depends on it (a line run at import) or no test runs it."""
        first, last = mutant.statement
        found: set[str] = set()
        for line in range(first, last + 1):
            found.update(self.by_line.get(line, ()))
        if not found or "" in found:
            return None
        return sorted(found, key=self.order.__getitem__)


class Worker:
    """A process serving one copy's test runs (scripts/mutation_worker.py): it keeps the
    libraries the tests import loaded and forks a fresh child for each run."""

    def __init__(self, copy_root: Path, tests: list[str]) -> None:
        env = {**os.environ, "PYTHONPATH": str(copy_root), "PYTHONDONTWRITEBYTECODE": "1",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        env.pop("MEMSPEC_ROOT", None)
        self.copy_root = copy_root
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "mutation_worker.py"), *tests],
            cwd=copy_root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True)
        if json.loads(self.process.stdout.readline() or "{}").get("ready") is not True:
            raise SystemExit(f"the test worker in {copy_root} did not start")

    def run(self, tests: list[str], timeout: float) -> str:
        """"passed", "failed" or "timeout" of one run of ``tests`` (pytest's PYTEST_FLAGS)."""
        request = {"tests": tests, "flags": list(PYTEST_FLAGS), "timeout": timeout}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline() or "{}")
        if answer.get("status") == "no tests":
            raise SystemExit(f"no tests collected by {' '.join(tests)}")
        if "status" not in answer:
            raise SystemExit(f"the test worker in {self.copy_root} stopped")
        return answer["status"]

    def close(self) -> None:
        """End the worker."""
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _judge(worker: Worker, mutant: Mutant, original: str, tests: list[str],
           coverage: Coverage | None, limit: float) -> str:
    """Apply ``mutant`` in the worker's copy and run its tests: "killed", "timeout" or
    "survived". The tests that run its statement go first; a mutant they miss faces every
    mapped test, so the choice saves time and never decides an outcome."""
    target = worker.copy_root / mutant.module
    target.write_text(mutated_source(mutant, original), encoding="utf-8")
    try:
        chosen = coverage.tests_for(mutant) if coverage is not None else None
        outcome = worker.run(chosen or tests, limit)
        if outcome == "passed" and chosen is not None:
            outcome = worker.run(tests, limit)
    finally:
        target.write_text(original, encoding="utf-8")
    return {"failed": "killed", "passed": "survived"}.get(outcome, outcome)


def run_module(module: str, tests: list[str], mutants: list[Mutant],
               equivalent: dict[str, str], log: list[dict], jobs: int = 1,
               source: Path = ROOT) -> dict[str, int]:
    """Run every mutant of ``module`` on ``jobs`` private copies (of ``source``) at once; a
    tally of the outcomes."""
    tally = {"killed": 0, "timeout": 0, "survived": 0, "equivalent": 0}
    outcomes: dict[str, str] = {}
    printing = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="memspec-mutants-") as tmp:
        copies = [_copy_project(Path(tmp) / str(n), source)
                  for n in range(max(1, jobs))]
        status, baseline = _run_tests(copies[0], tests, timeout=1800)
        if status != "passed":
            raise SystemExit(f"{module}: its tests fail without any mutant ({status})")
        limit = 3 * baseline + 10
        # Mutants are made of this text, the copy's: the work tree's file may be edited
        # while a run goes on, and its lines then no longer where the mutants point.
        original = (copies[0] / module).read_text(encoding="utf-8")
        made = {m.id: m for m in mutants_of(module, original)}
        if any(made.get(m.id) != m for m in mutants) or any(
                (c / module).read_text(encoding="utf-8") != original for c in copies):
            raise SystemExit(f"{module} changed while the run started: run it again")
        to_run = [m for m in mutants if m.id not in equivalent]
        coverage = Coverage.measure(copies[0], module, tests, timeout=10 * limit) \
            if to_run else None
        print(f"{module}: {len(mutants)} mutants, tests {baseline:.1f} s unmutated, "
              f"{jobs} at once, {'by' if coverage else 'without'} line coverage", flush=True)
        workers = [Worker(copy_root, tests) for copy_root in copies] if to_run else []
        free: queue.SimpleQueue[Worker] = queue.SimpleQueue()
        for worker in workers:
            free.put(worker)

        def run(mutant: Mutant) -> None:
            if mutant.id in equivalent:
                outcome = "equivalent"
            else:
                worker = free.get()
                try:
                    outcome = _judge(worker, mutant, original, tests, coverage, limit)
                finally:
                    free.put(worker)
            with printing:
                outcomes[mutant.id] = outcome
                print(f"  {outcome:10} {mutant.id:44} line {mutant.line}: "
                      f"{mutant.description}", flush=True)

        try:
            with ThreadPoolExecutor(max_workers=len(copies)) as pool:
                for future in [pool.submit(run, m) for m in mutants]:
                    future.result()
        finally:
            for worker in workers:
                worker.close()
    for mutant in mutants:
        tally[outcomes[mutant.id]] += 1
        log.append({"id": mutant.id, "line": mutant.line,
                    "description": mutant.description, "outcome": outcomes[mutant.id]})
    return tally


def kill_rate(tally: dict[str, int]) -> float | None:
    """Killed (by a failing test or a timeout) over the mutants that are not equivalent."""
    counted = tally["killed"] + tally["timeout"] + tally["survived"]
    return None if counted == 0 else (tally["killed"] + tally["timeout"]) / counted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append",
                        help="a module of scripts/mutation.toml (repeatable; default: all)")
    parser.add_argument("--sample", type=int, help="at most this many mutants a module")
    parser.add_argument("--seed", type=int, default=0, help="which sample (default 0)")
    parser.add_argument("--only", action="append", help="run only this mutant id")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--show", help="print the changed line of this mutant id")
    parser.add_argument("--jobs", type=int, default=1,
                        help="mutants run at once, each in its own copy (default 1)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--fail-under", type=float, default=0.0,
                        help="exit 1 when a module's kill rate (0-1) is below this")
    args = parser.parse_args(argv)
    modules, equivalent = load_config()
    chosen = args.module or list(modules)
    unknown = [m for m in chosen if m not in modules]
    if unknown:
        parser.error(f"not in scripts/mutation.toml: {', '.join(unknown)}")
    # Every module runs against the project as it was when the run began: tests and modules
    # edited during a long run change nothing in it.
    snapshot_dir = tempfile.TemporaryDirectory(prefix="memspec-mutants-snapshot-")
    snapshot = _copy_project(Path(snapshot_dir.name)) if not (args.list or args.show) else ROOT
    results, log, failing = {}, [], False
    for module in chosen:
        source = (snapshot / module).read_text(encoding="utf-8")
        mutants = pick(mutants_of(module, source), args.sample, args.seed)
        if args.only:
            mutants = [m for m in mutants_of(module, source) if m.id in args.only]
        if args.show:
            for mutant in mutants_of(module):
                if mutant.id == args.show:
                    changed = mutated_source(mutant).splitlines()[mutant.line - 1]
                    print(f"{mutant.id} ({mutant.description}), line {mutant.line}:\n"
                          f"  {changed.strip()}")
            continue
        if args.list:
            for mutant in mutants:
                mark = "  (equivalent)" if mutant.id in equivalent else ""
                print(f"{mutant.id:44} line {mutant.line}: {mutant.description}{mark}")
            continue
        began = time.monotonic()
        tally = run_module(module, modules[module], mutants, equivalent, log, args.jobs,
                           snapshot)
        rate = kill_rate(tally)
        results[module] = {**tally, "kill_rate": rate,
                           "seconds": round(time.monotonic() - began, 1)}
        failing |= rate is not None and rate < args.fail_under
    if results:
        print("\nmodule                         killed timeout survived equiv  kill rate  seconds")
        for module, r in results.items():
            rate = "-" if r["kill_rate"] is None else f"{100 * r['kill_rate']:.0f}%"
            print(f"{module:30} {r['killed']:6} {r['timeout']:7} {r['survived']:8} "
                  f"{r['equivalent']:5}  {rate:>9}  {r['seconds']:7.0f}")
        print(f"{'all':30} {sum(r['seconds'] for r in results.values()):>52.0f}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "mutants": log}, indent=2) + "\n",
                             encoding="utf-8")
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
