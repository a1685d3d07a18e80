"""Bad input must end in a located error (file:LINE:COL), exit status 2, no traceback, and
no output written.

Every test starts from the small valid project the ``project`` fixture writes into
``tmp_path``, changes ONE thing in it, and runs the ``memspec`` command line in a subprocess.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# ------------------------------------------------------------------ the valid fixture project

PARADIGM = "specs/paradigms/recall.yaml"
POOL = "specs/pools/colours.yaml"
FAMILY = "specs/families/colour.yaml"
TEMPLATE = "templates/demo/setup.j2"
RELEASE = "specs/releases/demo-v1.yaml"
FAMILY_ID = "demo.recall.colour"

PARADIGM_YAML = """\
paradigm: demo.recall
version: 1
description: A fact is stated, then asked for.
phases:
  - name: setup
  - name: probe
scorers: [exact]
"""

POOL_YAML = """\
pool: demo.colours
description: Plain colour names.
items:
  - red
  - green
  - blue
  - yellow
  - purple
  - orange
"""

FAMILY_YAML = """\
family: demo.recall.colour
version: 1
paradigm: demo.recall
description: Remember a favourite colour.
slots:
  colour: {from: pools/colours.yaml}
phases:
  setup: demo/setup.j2
  probe:
    messages:
      - {role: user, text: "Which colour did I say I like?"}
answer:
  scorer: exact
  gold: "{{ colour }}"
"""

TEMPLATE_J2 = """\
{% message "user" %}
My favourite colour is {{ colour }}.
{% endmessage %}
{% message "assistant" %}
Noted.
{% endmessage %}
"""

RELEASE_YAML = """\
name: demo
version: v1
seed: 7
description: A tiny release of one family.
families:
  - family: demo.recall.colour
    groups: 2
"""

FILES = {
    PARADIGM: PARADIGM_YAML,
    POOL: POOL_YAML,
    FAMILY: FAMILY_YAML,
    TEMPLATE: TEMPLATE_J2,
    RELEASE: RELEASE_YAML,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small, self-contained, valid memspec project: one paradigm, one family drawing from a
    pool and rendering a template file, and one release."""
    root = tmp_path / "project"
    for folder in ("specs/paradigms", "specs/families", "specs/pools", "specs/releases",
                   "templates", "manifests"):
        (root / folder).mkdir(parents=True)
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An (initially empty) output folder outside the project."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


# ------------------------------------------------------------------------------- helpers

def memspec(root: Path, *args: object, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """Run the memspec CLI on the project at ``root`` in a subprocess (with ``env`` added to
    the environment)."""
    return subprocess.run(
        [sys.executable, "-m", "memspec.cli", "--root", str(root), *map(str, args)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=root,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def edit(root: Path, relative: str, old: str, new: str) -> str:
    """Replace the one occurrence of ``old`` in a project file; return the new text."""
    path = root / relative
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} should occur exactly once in {relative}"
    text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return text


def append(root: Path, relative: str, extra: str) -> str:
    path = root / relative
    text = path.read_text(encoding="utf-8") + extra
    path.write_text(text, encoding="utf-8")
    return text


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line of ``text`` containing ``needle``."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


def shown(result: subprocess.CompletedProcess[str]) -> str:
    return (f"exit {result.returncode}\n--- stderr\n{result.stderr}"
            f"--- stdout\n{result.stdout[:2000]}")


def assert_refused(result: subprocess.CompletedProcess[str]) -> None:
    """Exit status 2 (bad input) and no Python traceback."""
    assert result.returncode == 2, shown(result)
    assert "Traceback" not in result.stderr, shown(result)
    assert "Traceback" not in result.stdout, shown(result)


def assert_bad_input(result: subprocess.CompletedProcess[str], file: str,
                     fragment: str | re.Pattern[str], line: int | None = None,
                     col: int | None = None) -> None:
    """Exit 2, no traceback, and one error line ``error: FILE:LINE:COL: ...`` that holds
    ``fragment`` (a substring, or a compiled regular expression)."""
    assert_refused(result)
    location = re.compile(
        rf"^error: {re.escape(file)}:{line if line is not None else '[0-9]+'}"
        rf":{col if col is not None else '[0-9]+'}: "
    )
    for text in result.stderr.splitlines():
        if not location.search(text):
            continue
        if (fragment.search(text) if isinstance(fragment, re.Pattern) else fragment in text):
            return
    where = f"{file}:{line if line is not None else '?'}:{col if col is not None else '?'}"
    pytest.fail(f"no error at {where} mentioning {fragment!r}\n{shown(result)}")


def assert_nothing_written(root: Path, out: Path) -> None:
    """No committed manifest and no file at all under the output folder."""
    manifests = sorted(p.name for p in (root / "manifests").glob("*.json"))
    assert manifests == [], f"manifests written: {manifests}"
    if out.exists():
        written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
        assert written == [], f"output written: {written}"


def generate(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    return memspec(root, "generate", FAMILY_ID, "--groups", 2, "--out", out / "gen.jsonl")


def freeze(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return memspec(root, "freeze", root / RELEASE, "--out", out)


def assert_every_command_refuses(root: Path, out: Path, file: str,
                                 fragment: str | re.Pattern[str], line: int | None = None,
                                 col: int | None = None, *, with_freeze: bool = True) -> None:
    """validate, generate (--out) and freeze (--out) all report the same located error and
    write nothing."""
    commands = [("validate", lambda: memspec(root, "validate")),
                ("generate", lambda: generate(root, out))]
    if with_freeze:
        commands.append(("freeze", lambda: freeze(root, out)))
    for name, run in commands:
        result = run()
        try:
            assert_bad_input(result, file, fragment, line, col)
        except AssertionError as exc:
            raise AssertionError(f"memspec {name}: {exc}") from None
    assert_nothing_written(root, out)


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


# ------------------------------------------------------------------ the fixture is valid

def test_fixture_project_validates(project: Path) -> None:
    result = memspec(project, "validate")
    assert result.returncode == 0, shown(result)
    assert result.stderr == ""
    assert "ok: 1 families" in result.stdout
    assert "1 paradigms, 1 pools, 1 releases" in result.stdout


def test_fixture_project_generates_and_freezes(project: Path, out: Path) -> None:
    """The writes the bad-input tests check for do happen on valid input."""
    result = generate(project, out)
    assert result.returncode == 0, shown(result)
    assert len((out / "gen.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    result = freeze(project, out)
    assert result.returncode == 0, shown(result)
    assert (out / "demo-v1" / "data" / f"{FAMILY_ID}.jsonl").is_file()
    assert (project / "manifests" / "demo-v1.json").is_file()


# ------------------------------------------------------------------------- YAML level

def test_duplicate_yaml_key(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "version: 1\n", "version: 1\nversion: 2\n")
    result = memspec(project, "validate")
    assert_bad_input(result, FAMILY, "duplicate key 'version' (first defined at line 2)",
                     line_of(text, "version: 2"), 1)
    assert_refused(freeze(project, out))
    assert_nothing_written(project, out)


def test_yaml_object_tag_is_refused_not_run(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "description: Remember a favourite colour.",
                'description: !!python/object/apply:os.system ["echo hi"]')
    result = memspec(project, "validate")
    assert_bad_input(result, FAMILY, "python/object/apply:os.system' is not allowed",
                     line_of(text, "!!python"), len("description: ") + 1)
    assert "hi" not in result.stdout
    assert_refused(freeze(project, out))
    assert_nothing_written(project, out)


def test_a_bracket_left_open_is_named_where_it_begins(project: Path, out: Path) -> None:
    # The parser finds the mistake a line later, where the next key cannot be in a mapping.
    text = edit(project, FAMILY, "  colour: {from: pools/colours.yaml}",
                "  colour: {from: pools/colours.yaml")
    opened = line_of(text, "colour: {")
    result = memspec(project, "validate")
    assert_bad_input(result, FAMILY, f"(while parsing a flow mapping that begins at line "
                     f"{opened}, column {len('  colour: ') + 1})", opened + 1)
    assert_refused(freeze(project, out))
    assert_nothing_written(project, out)


BILLION_LAUGHS = "".join(
    f"lol{level}: &l{level} [{', '.join(['lol' if level == 0 else f'*l{level - 1}'] * 9)}]\n"
    for level in range(9)
)


def test_yaml_alias_bomb(project: Path, out: Path) -> None:
    text = append(project, FAMILY, BILLION_LAUGHS)
    result = memspec(project, "validate")
    assert_bad_input(result, FAMILY, "YAML anchors (&l0) are not allowed",
                     line_of(text, "lol0:"), len("lol0: ") + 1)
    assert_refused(freeze(project, out))
    assert_nothing_written(project, out)


YAML_LEVEL_CASES = {
    "duplicate_key": ("version: 1\n", "version: 1\nversion: 2\n", "duplicate key 'version'"),
    "object_tag": ("description: Remember a favourite colour.",
                   'description: !!python/object/apply:os.system ["echo hi"]',
                   "python/object/apply:os.system"),
    "alias_bomb": ("answer:\n", BILLION_LAUGHS + "answer:\n", "YAML anchors (&l0)"),
}


@pytest.mark.parametrize("case", sorted(YAML_LEVEL_CASES))
def test_yaml_level_error_is_named_by_generate_and_freeze(project: Path, out: Path,
                                                         case: str) -> None:
    old, new, fragment = YAML_LEVEL_CASES[case]
    edit(project, FAMILY, old, new)
    assert_bad_input(generate(project, out), FAMILY, fragment)
    assert_bad_input(freeze(project, out), FAMILY, fragment)
    assert_nothing_written(project, out)


# ----------------------------------------------------------------------- schema level

def test_unknown_key_typo_in_family(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "  gold:", "  golde:")
    assert_every_command_refuses(project, out, FAMILY, "unknown key 'golde'; allowed keys are",
                                 line_of(text, "golde:"), 3)


def test_wrong_type(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "version: 1", 'version: "one"')
    assert_every_command_refuses(project, out, FAMILY, "'one' is not of type 'integer'",
                                 line_of(text, "version:"), 1)


def test_unknown_paradigm(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "paradigm: demo.recall", "paradigm: demo.recal")
    assert_every_command_refuses(project, out, FAMILY,
                                 "unknown paradigm 'demo.recal'; did you mean 'demo.recall'?",
                                 line_of(text, "paradigm:"), 1)


def test_release_names_missing_family(project: Path, out: Path) -> None:
    text = append(project, RELEASE, "  - family: demo.recall.nothing\n    groups: 1\n")
    fragment = "unknown family 'demo.recall.nothing'"
    line = line_of(text, "demo.recall.nothing")
    assert_bad_input(memspec(project, "validate"), RELEASE, fragment, line, 5)
    assert_bad_input(freeze(project, out), RELEASE, fragment, line, 5)
    assert_nothing_written(project, out)


def test_a_release_with_a_typo_and_bad_splits_gets_both_reported_and_a_suggestion(
        project: Path, out: Path) -> None:
    text = append(project, RELEASE, "  - family: demo.recall.colur\n    groups: 2\n"
                  "    splits: {train: 2, test: 1}\n")
    result = memspec(project, "validate")
    # Both at once, so that fixing one does not merely uncover the other.
    assert len(error_lines(result)) == 2, shown(result)
    assert_bad_input(result, RELEASE, "unknown family 'demo.recall.colur'; did you mean "
                     "'demo.recall.colour'?", line_of(text, "colur"), 5)
    assert_bad_input(result, RELEASE, "splits add up to 3 groups, not the 2",
                     line_of(text, "splits:"), 5)
    typo = memspec(project, "generate", "demo.recall.colur", "--out", out / "x.jsonl")
    assert typo.returncode == 2
    assert "did you mean 'demo.recall.colour'? (1 known)" in typo.stderr
    assert_nothing_written(project, out)


def test_several_errors_in_one_file_are_all_reported(project: Path, out: Path) -> None:
    edit(project, FAMILY, "version: 1", "version: one")
    edit(project, FAMILY, "{from: pools/colours.yaml}", "{from: pools/colours.yaml, cont: 2}")
    text = edit(project, FAMILY, "answer:\n", "notes: hi\nanswer:\n")
    expected = [
        (line_of(text, "version:"), "'one' is not of type 'integer'"),
        (line_of(text, "cont: 2"), "unknown key 'cont'"),
        (line_of(text, "notes:"), "unknown key 'notes'"),
    ]
    for result in (memspec(project, "validate", project / FAMILY), generate(project, out)):
        assert len(error_lines(result)) == 3, shown(result)
        for line, fragment in expected:
            assert_bad_input(result, FAMILY, fragment, line)
    # validating the whole project reports all three as well
    result = memspec(project, "validate")
    for line, fragment in expected:
        assert_bad_input(result, FAMILY, fragment, line)
    assert_nothing_written(project, out)


def test_two_unknown_keys_in_one_mapping_are_both_reported(project: Path) -> None:
    edit(project, FAMILY, "version: 1", "version: one")
    text = edit(project, FAMILY, "answer:\n", "notes: hi\nextra: 1\nanswer:\n")
    result = memspec(project, "validate", project / FAMILY)
    assert_bad_input(result, FAMILY, "'one' is not of type 'integer'", line_of(text, "version:"))
    assert_bad_input(result, FAMILY, "unknown key 'extra'", line_of(text, "extra:"))
    assert_bad_input(result, FAMILY, "unknown key 'notes'", line_of(text, "notes:"))
    assert len(error_lines(result)) == 3, shown(result)


def test_full_validate_reports_each_problem_once(project: Path) -> None:
    edit(project, FAMILY, "version: 1", "version: one")
    result = memspec(project, "validate")
    assert_bad_input(result, FAMILY, "'one' is not of type 'integer'", 2, 1)
    assert error_lines(result) == [
        f"error: {FAMILY}:2:1: 'one' is not of type 'integer' (at $.version)"], shown(result)
    assert "1 problem(s)" in result.stderr, shown(result)


# -------------------------------------------------------------------------- templates

def test_missing_template_file(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "setup: demo/setup.j2", "setup: demo/missing.j2")
    assert_every_command_refuses(project, out, FAMILY,
                                 "template 'demo/missing.j2' not found in templates/",
                                 line_of(text, "setup:"), 3)


def test_undefined_template_variable(project: Path, out: Path) -> None:
    text = edit(project, TEMPLATE, "{{ colour }}", "{{ colour }} and {{ flavour }}")
    # The family that was rendering the template is named: a template may serve several.
    assert_every_command_refuses(project, out, TEMPLATE, "'flavour' is undefined (rendering "
                                 f"phase 'setup' of {FAMILY_ID})", line_of(text, "flavour"),
                                 text.splitlines()[1].index("flavour") + 1)


def test_single_brace_leftover(project: Path, out: Path) -> None:
    text = edit(project, TEMPLATE, "{{ colour }}", "{colour}")
    assert_every_command_refuses(project, out, TEMPLATE,
                                 "single-brace placeholder '{colour}' left in the output",
                                 line_of(text, "{colour}"),
                                 text.splitlines()[1].index("{colour}") + 1)


def test_empty_render(project: Path, out: Path) -> None:
    edit(project, TEMPLATE, "Noted.", "{{ '   ' }}")
    # The line is checked by test_empty_render_points_at_its_block (a known bug).
    assert_every_command_refuses(project, out, TEMPLATE, "message rendered empty")


def test_empty_render_points_at_its_block(project: Path) -> None:
    text = edit(project, TEMPLATE, "Noted.", "{{ '   ' }}")
    assert_bad_input(memspec(project, "validate"), TEMPLATE, "assistant message rendered empty",
                     line_of(text, '{% message "assistant" %}'))


def test_text_outside_message_block(project: Path, out: Path) -> None:
    text = append(project, TEMPLATE, "stray words here\n")
    assert_every_command_refuses(project, out, TEMPLATE,
                                 "text outside a {% message %} block: 'stray words here'",
                                 line_of(text, "stray words"), 1)


def test_inline_block_scalar_error_line(project: Path) -> None:
    text = edit(project, FAMILY, '      - {role: user, text: "Which colour did I say I like?"}',
                "      - role: user\n        text: |\n          Which colour\n"
                "          did I {{ nope }} like?")
    assert_bad_input(memspec(project, "validate"), FAMILY, "'nope' is undefined",
                     line_of(text, "{{ nope }}"))


# ------------------------------------------------------------- paths leaving the tree

def test_template_path_leaving_tree(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "setup: demo/setup.j2", "setup: ../../etc/passwd")
    assert_every_command_refuses(project, out, FAMILY,
                                 "template path '../../etc/passwd' must stay inside templates/",
                                 line_of(text, "setup:"), 3)


def test_pool_path_leaving_tree(project: Path, out: Path) -> None:
    text = edit(project, FAMILY, "{from: pools/colours.yaml}", "{from: ../../etc/passwd}")
    assert_every_command_refuses(project, out, FAMILY,
                                 "pool path '../../etc/passwd' must stay inside specs/",
                                 line_of(text, "../../etc/passwd"),
                                 text.splitlines()[5].index("from") + 1)


def test_template_symlink_pointing_outside(project: Path, out: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "setup.j2"
    outside.parent.mkdir()
    outside.write_text(TEMPLATE_J2, encoding="utf-8")  # a valid template: only the link is bad
    (project / TEMPLATE).unlink()
    os.symlink(outside, project / TEMPLATE)
    assert_every_command_refuses(project, out, FAMILY,
                                 "template 'demo/setup.j2' resolves outside templates/",
                                 line_of(FAMILY_YAML, "setup:"), 3)


def test_include_leaving_tree_is_located(project: Path) -> None:
    text = edit(project, TEMPLATE, "Noted.", "Noted. {% include '../../etc/passwd' %}")
    assert_bad_input(memspec(project, "validate"), TEMPLATE,
                     "template path '../../etc/passwd' must stay inside templates/",
                     line_of(text, "include"))


def test_spec_symlink_pointing_outside(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "pool.yaml"
    outside.parent.mkdir()
    outside.write_text("pool: stolen.secret\ndescription: hunter2\nitems: [a]\n",
                       encoding="utf-8")
    os.symlink(outside, project / "specs/pools/leak.yaml")
    assert_bad_input(memspec(project, "validate"), "specs/pools/leak.yaml", "outside")


# ------------------------------------------------------------------ Jinja sandbox escapes

SANDBOX_ESCAPES = {
    "str_mro": ("{{ ''.__class__.__mro__ }}", "access to attribute '__class__' of a str"),
    "subclasses": ("{{ ''.__class__.__mro__[1].__subclasses__() }}",
                   "access to attribute '__class__' of a str"),
    # cycler is removed from the globals; the sandbox then refuses __init__ of the Undefined
    "cycler_globals": ("{{ cycler.__init__.__globals__ }}",
                       re.compile(r"'cycler' is undefined|'__init__' of a StrictUndefined is "
                                  r"not allowed")),
    "self_init": ("{{ self.__init__ }}", "access to attribute '__init__' of a TemplateReference"),
    "attr_filter": ("{{ 'a'|attr('__class__') }}", "access to attribute '__class__' of a str"),
    "format_string": ("{{ '{0.__class__}'.format('') }}",
                      "access to attribute '__class__' of a str"),
    "lipsum_globals": ("{{ lipsum.__globals__ }}", "'lipsum' is undefined"),
    # a few more of the same kind
    "self_context": ("{{ self._TemplateReference__context }}",
                     "attribute '_TemplateReference__context' of a TemplateReference"),
    "namespace_init": ("{{ namespace.__init__ }}", "access to attribute '__init__'"),
    "map_attr": ("{{ [1]|map('attr', '__class__')|list }}",
                 "access to attribute '__class__' of an int"),
    "mutate_dict": ("{% set d = {} %}{{ d.update({'a': 1}) }}",
                    "access to attribute 'update' of a dict"),
    "huge_range": ("{{ range(100000)|list|length }}", "exceeds the limit of 10000"),
}


@pytest.mark.parametrize("case", list(SANDBOX_ESCAPES))
def test_jinja_sandbox_escape(project: Path, out: Path, case: str) -> None:
    expression, fragment = SANDBOX_ESCAPES[case]
    text = edit(project, TEMPLATE, "Noted.", f"Noted. {expression}")
    assert_every_command_refuses(project, out, TEMPLATE, fragment, line_of(text, "Noted."),
                                 with_freeze=False)


# ------------------------------------------------------- tables, shared slots, transforms

@pytest.mark.parametrize(("slots", "needle", "fragment"), [
    ("  colour: {from: pools/colours.yaml}\n  pick: {range: [1, 3], shared_by: [later]}\n"
     "  later: {value: 1}\n", "shared_by", "shared_by names 'later', which is not an earlier slot"),
    ("  colour: {from: pools/colours.yaml}\n  pick: {balanced: [a, b], shared_by: []}\n",
     "shared_by", "shared_by only applies to a random draw"),
    ("  colour: {from: pools/colours.yaml}\n"
     "  pick: {from: pools/colours.yaml, distinct_from: [colour], shared_by: []}\n",
     "shared_by", "depends on 'colour', which is drawn per group"),
    ("  colour: {from: pools/colours.yaml}\n  pick: {of: nothing}\n",
     "of: nothing", "'of' names 'nothing', which is not an earlier slot"),
    ("  colour: {from: pools/colours.yaml}\n  log:\n    table:\n      rows: 3\n"
     "      columns:\n        row: {value: 1}\n", "row:", "column name 'row' is reserved"),
    ("  colour: {from: pools/colours.yaml}\n  log:\n    table:\n      rows: 3\n"
     "      columns:\n        c: {from: pools/colours.yaml, count: 2}\n", "count",
     "unknown key 'count'"),
])
def test_table_and_shared_slot_mistakes_are_located(project: Path, out: Path, slots: str,
                                                    needle: str, fragment: str) -> None:
    text = edit(project, FAMILY, "  colour: {from: pools/colours.yaml}\n", slots)
    assert_every_command_refuses(project, out, FAMILY, fragment, line_of(text, needle))


def test_a_table_column_asking_for_more_distinct_rows_than_the_pool_has(project: Path,
                                                                        out: Path) -> None:
    text = edit(project, FAMILY, "  colour: {from: pools/colours.yaml}\n",
                "  colour: {from: pools/colours.yaml}\n  log:\n    table:\n      rows: 9\n"
                "      columns:\n        c: {from: pools/colours.yaml}\n")
    assert_every_command_refuses(project, out, FAMILY, "needs 9 distinct values (one per row)",
                                 line_of(text, "c: {from"))


def test_a_scramble_that_cannot_succeed_is_located(project: Path, out: Path) -> None:
    edit(project, FAMILY, "  colour: {from: pools/colours.yaml}\n",
         "  colour: {from: pools/colours.yaml}\n  log:\n    table:\n      rows: 2\n"
         "      columns:\n        who: {value: ann}\n"
         "        day: {range: [1, 2], balanced: true}\n")
    text = edit(project, FAMILY, "answer:\n", "designs:\n  main:\n    axes:\n      doc:\n"
                "        values: [real, mixed]\n        transforms:\n          mixed:\n"
                "            name: scramble\n"
                "            args: {slot: log, fields: [who], key: [who, day]}\nanswer:\n")
    assert_every_command_refuses(project, out, FAMILY,
                                 "transform 'scramble' failed on axis 'doc'",
                                 line_of(text, "      doc:"))


# ------------------------------------------------------------ release splits and partitions

def test_splits_must_add_up_to_the_groups(project: Path, out: Path) -> None:
    text = append(project, RELEASE, "    splits: {train: 1, test: 2}\n")
    result = freeze(project, out)
    assert_bad_input(result, RELEASE, "splits add up to 3 groups, not the 2",
                     line_of(text, "splits:"))
    assert_nothing_written(project, out)


def test_a_release_field_may_not_overwrite_a_family_field(project: Path, out: Path) -> None:
    append(project, FAMILY, "fields:\n  domain: colours\n")
    text = append(project, RELEASE, "    fields: {domain: legal}\n")
    result = freeze(project, out)
    assert_bad_input(result, RELEASE, "the release sets field 'domain', which family "
                     "demo.recall.colour sets too", line_of(text, "- family:"))
    assert_nothing_written(project, out)


def test_overlap_between_splits_is_refused_and_nothing_written(project: Path,
                                                               out: Path) -> None:
    # The setup message is the same in every group; the probe names the group.
    edit(project, FAMILY, "  colour: {from: pools/colours.yaml}\n", "  colour: {value: red}\n")
    edit(project, FAMILY, "Which colour did I say I like?", "Which colour ({{ group }})?")
    append(project, RELEASE, "    splits: {train: 1, test: 1}\n    disjoint: [setup]\n")
    result = freeze(project, out)
    assert result.returncode == 1, shown(result)
    assert "split overlap: a setup message of demo.recall.colour-00001-base (test) also " \
           "occurs in demo.recall.colour-00000-base (train)" in result.stderr
    assert_nothing_written(project, out)
    edit(project, RELEASE, "disjoint: [setup]", "disjoint: [probe]")
    # One colour for every group is passable without memory (the audit says so); the split
    # check is what is tested here.
    frozen = memspec(project, "freeze", project / RELEASE, "--out", out, "--allow-audit-failures")
    assert frozen.returncode == 0, shown(frozen)
    lines = (out / "demo-v1" / "data" / f"{FAMILY_ID}.jsonl").read_text().splitlines()
    assert [json.loads(line)["fields"]["split"] for line in lines] == ["train", "test"]


def test_feedback_that_is_not_a_list_of_records_is_located(project: Path, out: Path) -> None:
    text = append(project, FAMILY, "feedback: \"'like'\"\n")
    assert_every_command_refuses(project, out, FAMILY, "feedback must give a list of records",
                                 line_of(text, "feedback:"))


def test_feedback_the_schema_refuses_in_a_later_group_is_refused(
        project: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first instance of the variant passes; the schema still checks the second's
    # feedback, which an expression gives anew for every instance.
    append(project, FAMILY, "feedback: \"[{'action': 'like' if group == 0 else 'Not Valid'}]\"\n")
    for result in (generate(project, out), freeze(project, out)):
        assert_bad_input(result, FAMILY, "generated instance demo.recall.colour-00001-base is "
                         "invalid: 'Not Valid' does not match")
    assert_nothing_written(project, out)
    # So too where nothing else about the instance is new: its answer the one kept from the
    # group before (the same colour), the variant's first instance checked.
    from memspec.core.errors import SpecError
    from memspec.engine.generate import FamilyGenerator
    from memspec.engine.memo import InputMemo
    from memspec.engine.render import Renderer
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    edit(project, FAMILY, "  colour: {from: pools/colours.yaml}\n", "  colour: {value: red}\n")
    monkeypatch.setattr(InputMemo, "WARMUP", 1)
    catalog = Catalog.load(Project(project))
    generator = FamilyGenerator(catalog.family(FAMILY_ID), Renderer(catalog.project), 7)
    generator.group(0)
    with pytest.raises(SpecError, match="demo.recall.colour-00001-base is invalid"):
        generator.group(1)
    assert generator._answer_memo._hits == 1


@pytest.mark.parametrize(("variable", "value"), [
    ("MEMSPEC_GROUP_SECONDS", "abc"), ("MEMSPEC_GROUP_SECONDS", "inf"),
    ("MEMSPEC_GROUP_SECONDS", "nan"), ("MEMSPEC_GROUP_SECONDS", "-1"),
    ("MEMSPEC_GROUP_SECONDS", "1e300"), ("MEMSPEC_GROUP_MEGABYTES", "1.5"),
    ("MEMSPEC_GROUP_MEGABYTES", "0"),
])
def test_a_bad_budget_setting_is_refused_before_anything_is_written(
        project: Path, out: Path, variable: str, value: str) -> None:
    result = memspec(project, "freeze", project / RELEASE, "--out", out, env={variable: value})
    assert_refused(result)
    assert f"${variable} must be" in result.stderr and repr(value) in result.stderr
    assert_nothing_written(project, out)


@pytest.mark.parametrize("foreign", ["folder", "sums", "file", "symlink"])
def test_freeze_never_replaces_what_is_not_a_release_it_built(project: Path, out: Path,
                                                              foreign: str) -> None:
    target = out / "demo-v1"
    if foreign in ("folder", "sums"):
        target.mkdir()
        (target / "notes.txt").write_text("mine\n")
        if foreign == "sums":  # a SHA256SUMS alone does not make a release of a folder
            (target / "SHA256SUMS").write_text("0" * 64 + "  notes.txt\n")
    elif foreign == "file":
        target.write_text("mine\n")
    else:
        (out / "elsewhere").mkdir()
        target.symlink_to(out / "elsewhere")
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    result = freeze(project, out)
    assert_refused(result)
    assert f"{target} exists and is not a release demo-v1 memspec built" in result.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before
    assert not list((project / "manifests").iterdir())
    if foreign in ("folder", "sums"):
        shutil.rmtree(target)
    else:
        target.unlink()
    assert freeze(project, out).returncode == 0
    assert freeze(project, out).returncode == 0  # its own output, replaced as before


def test_a_family_field_named_split_is_reserved(project: Path, out: Path) -> None:
    # A release cuts a family's groups into splits; a field of that name would make files of
    # a split the release does not know.
    text = append(project, FAMILY, "fields:\n  split: train\n")
    assert_every_command_refuses(project, out, FAMILY, "field 'split' is reserved",
                                 line_of(text, "split: train"), 3)


def test_a_release_entry_field_named_split_is_reserved(project: Path, out: Path) -> None:
    text = append(project, RELEASE, "    fields: {split: train}\n")
    line = line_of(text, "fields: {split")
    for result in (memspec(project, "validate"), freeze(project, out)):
        assert_bad_input(result, RELEASE, "field 'split' is reserved", line, 14)
    assert_nothing_written(project, out)


def test_a_subset_field_no_family_gives_is_refused_before_anything_is_written(
        project: Path, out: Path) -> None:
    text = append(project, RELEASE, "subsets: [difficulty]\n")
    fragment = "subset field 'difficulty' is not a field of demo.recall.colour"
    line = line_of(text, "subsets:")
    for result in (memspec(project, "validate"), memspec(project, "validate", RELEASE),
                   freeze(project, out)):
        assert_bad_input(result, RELEASE, fragment, line, 11)
    assert_nothing_written(project, out)
    # Given by the entry, it is a field of every instance, and the release freezes.
    edit(project, RELEASE, "    groups: 2\n", "    groups: 2\n    fields: {difficulty: easy}\n")
    assert memspec(project, "validate").returncode == 0
    assert freeze(project, out).returncode == 0


def test_a_check_over_the_whole_run_does_not_fail_validate_on_its_few_groups(
        project: Path, out: Path) -> None:
    # Each group takes one value of `shelf`, rotated across groups; both variants of a group
    # share it. Balanced over a run of three groups, never over the one group validate renders.
    edit(project, FAMILY, "  colour: {from: pools/colours.yaml}\n",
         "  colour: {from: pools/colours.yaml}\n  shelf: {balanced: [top, middle, bottom]}\n")
    append(project, FAMILY, "designs:\n  main:\n    axes:\n      cue: [first, last]\n"
           "checks:\n  - {kind: balanced, of: shelf, values: [top, middle, bottom]}\n")
    validated = memspec(project, "validate")
    assert validated.returncode == 0, shown(validated)
    out.mkdir(exist_ok=True)
    whole = memspec(project, "generate", FAMILY_ID, "--groups", 3, "--out", out / "3.jsonl")
    assert whole.returncode == 0, shown(whole)
    # A run that is not balanced still fails, naming the counts.
    short = memspec(project, "generate", FAMILY_ID, "--groups", 2, "--out", out / "2.jsonl")
    assert short.returncode == 1
    assert "shelf is unbalanced" in short.stderr and '": 0' in short.stderr
