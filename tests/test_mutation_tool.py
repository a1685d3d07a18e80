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
