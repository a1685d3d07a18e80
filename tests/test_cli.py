"""The command line as a user meets it: help, scaffolding, Faker pools, quiet pipes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_spec_language import tree  # noqa: F401

from conftest import REPO, run_cli, scaffold_groups
from memspec.cli.commands import app
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

COMMANDS = sorted(c.name or c.callback.__name__ for c in app.registered_commands)


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_every_command_has_help_that_fits_80_columns(command: str) -> None:
    for flag in ("--help", "-h"):
        result = run_cli(*([command] if command else []), flag, env={"COLUMNS": "80"})
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("Usage: memspec")
        # Wrapped, never cut: every flag and every word of help is there in full.
        assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
        assert "…" not in result.stdout


def test_help_lists_the_choices_and_the_parser_enforces_them() -> None:
    from typing import get_args

    from memspec.analysis.score import SCOPES
    from memspec.analysis.stats import CORRECTIONS
    from memspec.cli import commands as cli

    assert get_args(cli.Correction) == CORRECTIONS and get_args(cli.CorrectionScope) == SCOPES
    score = run_cli("score", "-h", env={"COLUMNS": "80"}).stdout
    for choices in ("<table|json|csv|html>", "<minmax|z>", "<holm|bonferroni|none>",
                    "<report|row>"):
        assert choices in score
    assert "<local|dask>" in run_cli("freeze", "-h").stdout
    refused = run_cli("score", "dist/x", "r.jsonl", "--correction", "sidak")
    assert refused.returncode == 2 and "'holm', 'bonferroni', 'none'" in refused.stderr


#: What the parser would name a value by its type alone: typer's ``<str>``, ``<int range>``,
#: ``<list[Path]>`` and click's ``TEXT``, ``INTEGER``, ``PATH``; none says what to give.
GENERIC_METAVAR = re.compile(
    r"<(?:list\[|tuple\[)?(?:str|int|float|bool|path|Path|file|uuid|datetime)(?: range)?\]?>"
    r"|\b(?:TEXT|INTEGER|FLOAT|BOOLEAN|PATH|FILENAME|DIRECTORY|UUID)\b")


def _commands() -> list[tuple[list[str], Any]]:
    """Every command of the command line (the group itself first) with its words."""
    import typer

    group = typer.main.get_command(app)
    return [([], group), *(([name], sub) for name, sub in group.commands.items())]


@pytest.mark.parametrize("words, command", _commands(),
                         ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_every_value_is_named_for_what_it_takes(words: list[str], command: Any) -> None:
    from typer.testing import CliRunner

    from memspec.cli.cli_metavars import METAVARS

    shown = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert not GENERIC_METAVAR.search(shown.output), (words, shown.output)
    rows = shown.output.split("\nArguments:")[-1]
    usage = shown.output.splitlines()[0]
    for param in command.params:
        if getattr(param, "is_flag", False):
            continue
        if param.type_descriptor.is_choice:
            named = "<" + "|".join(map(str, param.type_descriptor.choices)) + ">"
        else:  # every free value is named in the one table
            named = METAVARS[param.name]
        if param.param_type_name == "argument":
            assert named in usage and f"\n  {named}  " in rows, (param.name, usage)
        else:
            assert f"{param.opts[0]} {named}" in shown.output, (param.name, named)


def test_version() -> None:
    from memspec.spec.new_project import memspec_version

    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout == f"memspec {memspec_version()}\n"


def _complete(words: str) -> list[str]:
    """What bash completion offers after ``words`` (the last one being completed)."""
    parts = words.split(" ")
    result = run_cli(env={"_MEMSPEC_COMPLETE": "complete_bash", "COMP_WORDS": words,
                          "COMP_CWORD": str(len(parts) - 1), "MEMSPEC_ROOT": str(REPO)})
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_shell_completion_offers_commands_choices_releases_and_families() -> None:
    script = run_cli("--show-completion", "bash")
    assert "complete -o default -F _memspec_completion memspec" in script.stdout
    assert _complete("memspec bu") == ["build"]
    assert _complete("memspec score --format ") == ["table", "json", "csv", "html"]
    assert _complete("memspec freeze example-v") == ["example-v1", "example-v2", "example-v3",
                                                         "example-v4", "example-v5"]
    assert _complete("memspec show example.choice.") == ["example.choice.meeting_room"]


def test_validate_all_bundled_specs() -> None:
    result = run_cli("validate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ")


PARADIGMS = sorted(Catalog.load(Project(REPO)).paradigms)


def test_new_refuses_a_paradigm_whose_styles_need_its_families_values(
        project_copy: Path) -> None:
    """Without the scaffold file that declares them, the placeholder family lacks the values
    the paradigm's answer styles are written in: `new` refuses and writes nothing."""
    paradigm = "example.choice5"
    (project_copy / "specs" / "scaffolds" / "example" / "choice5.yaml").unlink()
    before = sorted(p.relative_to(project_copy).as_posix() for p in project_copy.rglob("*"))
    result = run_cli("new", "mybench.trial.first_family", "--paradigm", paradigm,
                     root=project_copy)
    assert result.returncode == 2 and "nothing written" in result.stderr
    assert "answer style" in result.stderr
    assert sorted(p.relative_to(project_copy).as_posix()
                  for p in project_copy.rglob("*")) == before


@pytest.mark.parametrize("paradigm", PARADIGMS)
def test_new_scaffolds_a_family_that_validates_and_generates(project_copy: Path,
                                                             paradigm: str) -> None:
    family = "mybench.trial.first_family"
    result = run_cli("new", family, "--paradigm", paradigm, root=project_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project_copy / "specs/families/mybench/trial/first_family.yaml").is_file()
    # Two groups, or the number the paradigm's balance checks hold over (which `new` says).
    groups = scaffold_groups(paradigm) or 2
    if groups != 2:
        assert f"balance checks hold over {groups} groups" in result.stdout
    generated = run_cli("generate", family, "--groups", str(groups), root=project_copy)
    assert generated.returncode == 0, generated.stderr
    rows = [json.loads(line) for line in generated.stdout.splitlines()]
    assert rows and all(r["family"] == family and r["paradigm"] == paradigm for r in rows)
    # As written, the placeholder freezes for as many groups as its pools have items (four):
    # nothing to undo before the author starts on real content. It passes the audit (where
    # a paradigm's own scaffold did not, a newer scaffold file takes its place). A paradigm
    # whose balance checks hold over more groups is released with that many.
    (project_copy / "specs/releases/trial-v1.yaml").write_text(
        "name: trial\nversion: v1\nseed: 1\ndescription: the scaffold as written\n"
        f"families:\n  - family: {family}\n    groups: {scaffold_groups(paradigm) or 4}\n")
    frozen = run_cli("freeze", "trial-v1", root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    again = run_cli("new", family, "--paradigm", paradigm, root=project_copy)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_new_refuses_an_unknown_paradigm(project_copy: Path) -> None:
    result = run_cli("new", "mybench.x.y", "--paradigm", "no.such", root=project_copy)
    assert result.returncode == 2
    assert "unknown paradigm 'no.such'" in result.stderr
    assert not (project_copy / "specs/families/mybench").exists()


def _folders_and_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_new_leaves_nothing_where_a_paradigm_has_no_scaffold_that_validates(
        tree: Path) -> None:  # noqa: F811
    # The paradigm has no scaffold, and its check wants three study messages: the generic
    # scaffold (one) would fail validation, so nothing is written and the error says why.
    paradigm = tree / "specs/paradigms/recall.yaml"
    paradigm.write_text(paradigm.read_text().replace(
        "checks:\n", "checks:\n  - {kind: message_count, phase: study, equals: 3}\n"))
    before = _folders_and_files(tree)
    result = run_cli("new", "lab.fresh.family", "--paradigm", "lab.recall", root=tree)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "phase 'study' has 1 messages (equals 3)" in result.stderr
    assert "nothing written" in result.stderr and "wrote " not in result.stdout
    assert _folders_and_files(tree) == before
    # In a folder that already held a family, that folder and its family stay as they were.
    result = run_cli("new", "lab.recall.another", "--paradigm", "lab.recall", root=tree)
    assert result.returncode == 2 and _folders_and_files(tree) == before


def test_one_bad_key_in_a_paradigm_is_one_error_not_one_per_family(
        tree: Path) -> None:  # noqa: F811
    family = (tree / "specs/families/lab/recall_words.yaml").read_text()
    for name in ("again", "third"):
        (tree / f"specs/families/lab/recall_{name}.yaml").write_text(
            family.replace("lab.recall.words", f"lab.recall.{name}"))
    # A scaffold of the paradigm follows from its file's errors too.
    scaffold = tree / "specs/scaffolds/recall.yaml"
    scaffold.parent.mkdir(parents=True, exist_ok=True)
    scaffold.write_text((REPO / "specs/scaffolds/example/choice5.yaml").read_text().replace(
        "scaffold_of: example.choice5", "scaffold_of: lab.recall"))
    paradigm = tree / "specs/paradigms/recall.yaml"
    paradigm.write_text(paradigm.read_text() + "bogus_key: 1\n")
    result = run_cli("validate", root=tree)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, result.stderr
    assert errors[0].startswith("error: specs/paradigms/recall.yaml:") and \
        "unknown key 'bogus_key'" in errors[0]
    assert errors[1] == ("error: specs/paradigms/recall.yaml: and 3 families and 1 scaffold "
                         "naming paradigm 'lab.recall', not checked until the errors of its "
                         "file are fixed")
    assert "unknown paradigm" not in result.stderr
    # One family on its own: what its paradigm's file has, named once, beneath its own line.
    one = run_cli("validate", "specs/families/lab/recall_words.yaml", root=tree, cwd=tree)
    assert one.returncode == 2
    assert "paradigm 'lab.recall' is declared in specs/paradigms/recall.yaml, which has " \
        "errors" in one.stderr and one.stderr.count("unknown key 'bogus_key'") == 1
    made = run_cli("new", "lab.recall.fourth", "--paradigm", "lab.recall", root=tree)
    assert made.returncode == 2 and "which has errors; fix them first" in made.stderr
    assert "unknown key 'bogus_key'" in made.stderr


def test_a_misspelt_paradigm_is_one_error_its_followers_counted(
        tree: Path) -> None:  # noqa: F811
    path = tree / "specs/families/lab/recall_words.yaml"
    # The analysis names an axis of the paradigm the family meant: without it, that would
    # be an error of its own.
    path.write_text(path.read_text().replace("paradigm: lab.recall", "paradigm: lab.recal")
                    + "analysis:\n  baseline: {axis: cue, value: first}\n")
    result = run_cli("validate", root=tree)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, result.stderr
    assert "unknown paradigm 'lab.recal'" in errors[0]
    assert "more problem(s) of this family left out: they may follow from its unknown " \
        "paradigm" in errors[1]


def test_pool_materialises_a_faker_provider(project_copy: Path) -> None:
    out = project_copy / "specs/pools/people/first_names.yaml"
    args = ["pool", "first_name", "--count", "25", "--locale", "en_GB", "--seed", "4",
            "--out", str(out)]
    result = run_cli(*args, root=project_copy)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "faker:" in text and "locale: en_GB" in text and "seed: 4" in text
    assert "pool: people.first_names" in text
    validate = run_cli("validate", str(out), root=project_copy)
    assert validate.returncode == 0, validate.stderr
    first = out.read_bytes()
    out.unlink()
    assert run_cli(*args, root=project_copy).returncode == 0
    assert out.read_bytes() == first
    refused = run_cli(*args, root=project_copy)
    assert refused.returncode == 2 and "--force" in refused.stderr


def test_pool_rejects_unknown_provider(tmp_path: Path) -> None:
    result = run_cli("pool", "no_such_provider", "--count", "3", "--out",
                     str(tmp_path / "p.yaml"))
    assert result.returncode == 2
    assert "no_such_provider" in result.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_show_prints_every_variant_phase_by_phase() -> None:
    result = run_cli("show", "example.priming.harbour_fog", "--group", "2", "--seed", "1")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "example.priming.harbour_fog-00002-experimental" in text
    assert "example.priming.harbour_fog-00002-control" in text
    assert text.index("--- priming") < text.index("--- interference") < text.index("--- probe")


def test_progress_is_silent_when_not_a_terminal(tmp_path: Path) -> None:
    result = run_cli("freeze", "example-v1", "--out", str(tmp_path))
    assert result.returncode == 0
    assert result.stderr == ""


def test_generate_to_a_file_matches_stdout(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    to_file = run_cli("generate", "example.choice.meeting_room", "--groups", "2", "--out",
                      str(target))
    to_stdout = run_cli("generate", "example.choice.meeting_room", "--groups", "2")
    assert to_file.returncode == 0 and to_file.stdout == ""
    assert target.read_text() == to_stdout.stdout
    assert len(to_stdout.stdout.splitlines()) == 18


def test_unknown_family_is_bad_input() -> None:
    result = run_cli("generate", "no.such.family")
    assert result.returncode == 2
    assert "unknown family 'no.such.family'" in result.stderr


def test_a_reader_that_goes_away_ends_generate_quietly() -> None:
    # `memspec generate … | head -c 100`: the pipe closes early; a writer in a pipeline
    # stops as SIGPIPE would stop it (141), with nothing on stderr.
    import subprocess
    import sys

    with subprocess.Popen([sys.executable, "-m", "memspec.cli", "generate",
                           "trustgap.memory_trust.airline", "--groups", "40"], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL) as process:
        assert process.stdout is not None and process.stderr is not None
        assert len(process.stdout.read(100)) == 100
        process.stdout.close()
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=120) == 141, stderr
    assert stderr == ""


def test_output_is_utf8_whatever_the_locale() -> None:
    family = "implicitmem.procedural.growth_recurrence"
    result = run_cli("show", family, env={"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
                                          "PYTHONIOENCODING": ""})
    assert result.returncode == 0, result.stderr
    assert any(not line.isascii() for line in result.stdout.splitlines())


def test_an_output_file_in_a_missing_folder_is_named_as_given(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "family.jsonl"
    result = run_cli("generate", "example.choice.meeting_room", "--out", str(target))
    assert result.returncode == 2
    assert f"{target}: no folder {target.parent} to write into" in result.stderr
    assert ".memspec-tmp" not in result.stderr


@pytest.mark.parametrize("command", [["verify"], ["audit"], ["respond", "--policy", "oracle"]])
def test_a_release_folder_that_is_not_there_is_bad_input(tmp_path: Path,
                                                         command: list[str]) -> None:
    missing = tmp_path / "nowhere"
    result = run_cli(command[0], str(missing), *command[1:])
    assert result.returncode == 2, result.stderr
    assert f"{missing}: release folder not found" in result.stderr


def test_a_problem_reached_several_ways_is_reported_once(project_copy: Path) -> None:
    # Two slots draw from this pool, and the pool file is validated itself: one problem.
    pool = (project_copy / "specs" / "pools" / "implicitmem" / "procedural" / "cache_key_prefix"
            / "teams.yaml")
    pool.write_text(pool.read_text().replace("  - name: Orchard\n    code: ORC\n",
                                             "  - name: Lighthouse\n    code: LHT\n", 1))
    # The pool file and the family whose two slots draw from it (not the whole project).
    family = project_copy / "specs/families/implicitmem/procedural/cache_key_prefix.yaml"
    result = run_cli("validate", str(pool), str(family), root=project_copy)
    assert result.returncode == 2
    assert result.stderr.count("duplicate pool item (same as item 0)") == 1
    assert "1 problem(s)" in result.stderr


def test_the_newest_scaffold_file_takes_the_place_of_the_paradigms_section(
        project_copy: Path) -> None:
    """feedback.session's own scaffold (pinned by its frozen releases) answers "yes" to every
    task; its scaffold file, version 2, is written instead, and a version 3 beside it wins."""
    written = run_cli("new", "mybench.trial.first", "--paradigm", "feedback.session",
                      root=project_copy)
    assert written.returncode == 0, written.stderr
    family = (project_copy / "specs/families/mybench/trial/first.yaml").read_text()
    assert "question.yes" in family and "question.ask" in family
    newer = (project_copy / "specs/scaffolds/feedback/session.yaml").read_text().replace(
        "version: 2", "version: 3").replace("TODO: name the preference", "TODO (v3): name it")
    (project_copy / "specs/scaffolds/feedback/session3.yaml").write_text(newer)
    again = run_cli("new", "mybench.trial.second", "--paradigm", "feedback.session",
                    root=project_copy)
    assert again.returncode == 0, again.stderr
    assert "TODO (v3): name it" in \
        (project_copy / "specs/families/mybench/trial/second.yaml").read_text()


def test_a_scaffold_file_is_checked_where_it_is_written(project_copy: Path) -> None:
    scaffolds = project_copy / "specs/scaffolds"
    text = (scaffolds / "example/paired.yaml").read_text()
    (scaffolds / "example/again.yaml").write_text(text)
    (scaffolds / "example/unknown.yaml").write_text(
        text.replace("scaffold_of: example.paired", "scaffold_of: example.paried"))
    result = run_cli("validate", str(scaffolds), root=project_copy)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "specs/scaffolds/example/unknown.yaml:1:1: unknown paradigm 'example.paried'" \
        in result.stderr
    made = run_cli("new", "mybench.trial.third", "--paradigm", "example.paired",
                   root=project_copy)
    assert made.returncode == 2
    assert "scaffold version 2 of paradigm 'example.paired' is also in " in made.stderr
    assert "specs/scaffolds/example/paired.yaml:2:1: " in made.stderr
    assert not (project_copy / "specs/families/mybench").exists()
