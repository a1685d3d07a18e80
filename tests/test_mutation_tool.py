"""The mutation tool (scripts/mutate.py) is sound: its mutants are real one-expression changes
in a fixed order, its sample is seeded, every module's mapped tests and every listed
equivalent mutant exist, and a known mutant is killed by its module's tests."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import mutate  # noqa: E402


def test_every_mutant_changes_one_expression_and_still_compiles() -> None:
    module = "generator/analysis/scoring.py"
    original = (REPO / module).read_text(encoding="utf-8")
    mutants = mutate.mutants_of(module)
    assert len(mutants) > 50
    assert len({m.id for m in mutants}) == len(mutants)
    assert mutate.mutants_of(module) == mutants  # the same, in the same order, every time
    for mutant in mutants:
        source = mutate.mutated_source(mutant)
        assert source != original, mutant.id
        ast.parse(source)
        changed = [n for n, (a, b) in enumerate(zip(original.splitlines(), source.splitlines(),
                                                    strict=False), start=1) if a != b]
        assert changed and changed[0] == mutant.line, mutant.id
    kinds = {m.description.split(" -> ")[0] for m in mutants}
    assert {"Lt", "Eq", "And", "Or", "return None", "drop not", "Sub", "0", "1"} <= kinds


def test_strings_docstrings_and_annotations_are_never_mutated() -> None:
    for mutant in mutate.mutants_of("generator/analysis/stats.py"):
        assert not mutant.replacement.startswith(("('", '("')), mutant.id
        assert "Sequence" not in mutant.replacement and "float |" not in mutant.replacement


def test_the_sample_is_seeded_and_kept_in_source_order() -> None:
    mutants = mutate.mutants_of("generator/analysis/stats.py")
    first = mutate.pick(mutants, 20, 1)
    assert len(first) == 20 and mutate.pick(mutants, 20, 1) == first
    assert first == [m for m in mutants if m in first]
    assert mutate.pick(mutants, 20, 2) != first
    assert mutate.pick(mutants, None, 1) == mutants


def test_the_configuration_names_tests_and_mutants_that_exist() -> None:
    modules, equivalent = mutate.load_config()
    assert {"generator/analysis/scoring.py", "generator/analysis/stats.py",
            "generator/analysis/score.py",
            "generator/release/verify.py", "generator/engine/sampling.py", "generator/core/rng.py",
            "generator/core/canonical.py", "generator/analysis/group_tests.py"} <= set(modules)
    for module, tests in modules.items():
        assert (REPO / module).is_file()
        for test in tests:
            path, _, name = test.partition("::")
            assert (REPO / path).is_file(), test
            if name:
                assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8"), test
    ids = {m.id for module in modules for m in mutate.mutants_of(module)}
    stale = sorted(set(equivalent) - ids)
    assert not stale, f"equivalent mutants that no longer exist: {stale}"
    assert all(reason.strip() for reason in equivalent.values())


def test_a_mutant_reading_the_wrong_option_is_killed(tmp_path: Path) -> None:
    # "B" read as option index 3 instead of 1: the scoring tests must notice.
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "mutate.py"), "--module",
         "generator/analysis/scoring.py",
         "--only", "scoring.py:first_choice#3", "--json", str(tmp_path / "out.json")],
        capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "killed     scoring.py:first_choice#3" in result.stdout
    assert "100%" in result.stdout


class _Runs:
    """A stand-in for a test worker: answers each run from ``answers`` (a run's outcome by
    its tests) and records what it was asked to run."""

    def __init__(self, copy_root: Path, answers: dict[tuple[str, ...], str]) -> None:
        self.copy_root = copy_root
        self.answers = answers
        self.asked: list[tuple[str, ...]] = []

    def run(self, tests: list[str], timeout: float) -> str:
        self.asked.append(tuple(tests))
        return self.answers[tuple(tests)]


def test_a_mutant_the_tests_of_its_statement_miss_faces_every_mapped_test(
        tmp_path: Path) -> None:
    module = "generator/analysis/scoring.py"
    (tmp_path / module).parent.mkdir(parents=True)
    original = (REPO / module).read_text(encoding="utf-8")
    (tmp_path / module).write_text(original, encoding="utf-8")
    mutant = next(m for m in mutate.mutants_of(module) if m.id == "scoring.py:first_choice#3")
    first, last = mutant.statement
    assert first <= mutant.line <= last
    coverage = mutate.Coverage({mutant.line: ["t::near"]}, {"t::near": 0, "t::far": 1})
    every = ["t::near", "t::far"]
    # Missed by the test that runs its line, caught by another: killed, not survived.
    worker = _Runs(tmp_path, {("t::near",): "passed", tuple(every): "failed"})
    assert mutate._judge(worker, mutant, original, every, coverage, 10) == "killed"
    assert worker.asked == [("t::near",), tuple(every)]
    # Caught by the test that runs its line: the others are not run.
    worker = _Runs(tmp_path, {("t::near",): "failed"})
    assert mutate._judge(worker, mutant, original, every, coverage, 10) == "killed"
    assert worker.asked == [("t::near",)]
    # Passed by every test: survived; a run past its limit: a timeout.
    worker = _Runs(tmp_path, {("t::near",): "passed", tuple(every): "passed"})
    assert mutate._judge(worker, mutant, original, every, coverage, 10) == "survived"
    worker = _Runs(tmp_path, {("t::near",): "timeout"})
    assert mutate._judge(worker, mutant, original, every, coverage, 10) == "timeout"
    # A line no test runs, or one run at import, faces every test at once.
    for by_line in ({}, {mutant.line: ["", "t::near"]}):
        worker = _Runs(tmp_path, {tuple(every): "passed"})
        assert mutate._judge(worker, mutant, original, every,
                             mutate.Coverage(by_line, {"": 0, "t::near": 1}), 10) == "survived"
        assert worker.asked == [tuple(every)]
    assert (tmp_path / module).read_text(encoding="utf-8") == original  # put back each time


def test_the_trace_names_the_tests_that_run_each_line(tmp_path: Path) -> None:
    module = "generator/analysis/scoring.py"
    tests = ["tests/test_answer_reading.py::test_malformed_choice_responses",
             "tests/test_answer_reading.py::test_canonical_text_keeps_the_argument_order_unless_asked"]
    copy_root = mutate._copy_project(tmp_path)
    coverage = mutate.Coverage.measure(copy_root, module, tests, timeout=600)
    assert coverage is not None
    source = (REPO / module).read_text(encoding="utf-8").splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(source, start=1) if line.startswith(text))

    choosing = set(coverage.by_line[line_of("    lowered = response.casefold()")])
    assert choosing and all("test_malformed_choice_responses[" in t for t in choosing)
    canonical = set(coverage.by_line[line_of("def canonical_text(") + 3])
    assert any("unless_asked" in t for t in canonical)
    # Lines run at import (a def, a module constant) are every test's.
    assert "" in coverage.by_line[line_of("def first_choice(")]
    assert "" in coverage.by_line[line_of("_FENCE = ")]
    # A mutant inside first_choice is tried on the choice tests first, in the order they ran.
    mutant = next(m for m in mutate.mutants_of(module) if m.id == "scoring.py:first_choice#3")
    chosen = coverage.tests_for(mutant)
    assert chosen and set(chosen) <= choosing | set(coverage.by_line[mutant.line])
    assert chosen == sorted(chosen, key=coverage.order.__getitem__)
