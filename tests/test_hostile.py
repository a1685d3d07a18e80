"""A corpus of hostile and broken inputs, one test each: every one must end in a located
error (``error: FILE:LINE:COL: ...``, one line per problem), exit status 2, no Python
traceback, and nothing written.

Each file under ``tests/hostile/`` is the hostile content itself, named ``KIND.WHAT.EXT``.
KIND says where it goes in the small valid project of ``test_bad_input`` and which command
reads it:

=========  =====================================  ===========================================
KIND       replaces                               command
=========  =====================================  ===========================================
family     specs/families/colour.yaml             memspec generate demo.recall.colour --out
template   templates/demo/setup.j2                memspec generate demo.recall.colour --out
pool       specs/pools/colours.yaml               memspec generate demo.recall.colour --out
paradigm   specs/paradigms/recall.yaml            memspec generate demo.recall.colour --out
release    specs/releases/demo-v1.yaml            memspec freeze demo-v1 --out
responses  (a file of its own)                    memspec score RELEASE RESPONSES
=========  =====================================  ===========================================

``CASES`` below may place a file elsewhere or run another command. Two kinds of file are
recipes rather than content, to keep megabytes and symlinks out of git:

- ``*.recipe``: JSON ``{"pieces": [[TEXT, TIMES], ...]}``; the input is each TEXT repeated
  TIMES times, in order (oversized files, nesting thousands of levels deep);
- ``*.symlink``: JSON saying what the input is a symlink to: ``{"to": "/etc/passwd"}``, or
  ``{"outside": NAME, "content": TEXT}`` (a file of that content outside the project).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_bad_input import FAMILY, FAMILY_ID, FILES, PARADIGM, POOL, RELEASE, TEMPLATE

CORPUS = Path(__file__).resolve().parent / "hostile"
#: Where each kind of input goes in the project (responses files stay outside it).
TARGETS = {"family": FAMILY, "template": TEMPLATE, "pool": POOL, "paradigm": PARADIGM,
           "release": RELEASE, "responses": "responses.jsonl"}
#: The command that naturally reads each kind of input.
COMMANDS = {"family": "generate", "template": "generate", "pool": "generate",
            "paradigm": "generate", "release": "freeze", "responses": "score"}
#: A safety net for this machine, well above memspec's own budget for one group: a memory
#: bomb that got past memspec fails its test instead of swapping the machine to death.
CHILD_MEMORY_BYTES = 6 * 1024**3
#: Longest error line accepted: an error quotes the input, it does not reprint it.
MAX_ERROR_LINE = 400


@dataclass(frozen=True)
class Case:
    """What one input must produce."""

    fragment: str  # the error line must contain this
    line: int  # its line and column in ``file``
    column: int
    file: str | None = None  # the file the error names (default: where the input goes)
    target: str | None = None  # where the input goes (default: by its KIND)
    command: str | None = None  # generate, freeze, score or new (default: by its KIND)
    #: Time budget of one group ($MEMSPEC_GROUP_SECONDS): short where running out of time is
    #: the point, long elsewhere so that a loaded machine cannot turn another refusal into a
    #: timeout (a memory bomb must be stopped by the memory budget, however slow the copies).
    seconds: float = 30
    #: Memory budget of one group ($MEMSPEC_GROUP_MEGABYTES), where not memspec's default: a
    #: small one where the point is that a size check refuses the work before it allocates.
    megabytes: int | None = None
    #: Changes to the rest of the fixture project the input needs (FILE, OLD, NEW): a
    #: paradigm that allows the scorer a hostile family uses …
    edits: tuple[tuple[str, str, str], ...] = ()
    #: Extra command-line arguments (an engine …).
    args: tuple[str, ...] = ()


UNSAFE = "is not allowed in memspec templates"
#: Corpus templates (``template.NAME.j2``) whose filter would build text in C far over the
#: limit, and the start of the error that refuses it.
SIZED_IN_C = {
    "tojson_of_references": "'tojson' would build a value of 6,000,006 characters",
    "escape_of_list": "'escape' would build a value of 10,000,040,010 characters",
    "urlize_long_rel": "'urlize' would build a value of 1,000,128,000 characters",
    "wordwrap_long_wrapstring": "'wordwrap' would build a value of 2,001,002,000 characters",
    "indent_line_separators": "'indent' would build a value of 1,001,002,000 characters",
    "upper_of_references": "'upper' would build a value of 2,000,0",
    "batch_fill": "'batch' would build a value of 1,000,000,001 characters",
    "xmlattr_of_list": "'xmlattr' would build a value of 10,000,040,016 characters",
}
#: Corpus templates (``template.NAME.j2``) that hand C a value far larger written out than in
#: memory (a list holding one list twice, forty levels deep), and the work that refuses it by
#: its logical size before it walks it.
WALKED = "would read a value of over 2,000,000 characters written out"
SIZED_BY_LOGICAL_SIZE = {
    "shared_lists_equal": f"'==' {WALKED}",
    "shared_lists_in": f"'in' {WALKED}",
    "shared_lists_equalto": f"test 'equalto' {WALKED}",
    "shared_lists_changed": f"changed() {WALKED}",
    "shared_lists_sort": f"filter 'sort' {WALKED}",
    "shared_lists_count": f"count() {WALKED}",
    "shared_tuples_dict_key": f"a dict key {WALKED}",
    "shared_tuples_unique": f"filter 'unique' {WALKED}",
    # Built first and handed to C once, with no step between the levels for an alarm: a
    # lookup in a dict written in the template, a subscript, the name ``attr`` reads.
    "shared_tuples_in_literal_dict": f"'in' {WALKED}",
    "shared_tuples_subscript": f"a subscript {WALKED}",
    "shared_tuples_attr": f"filter 'attr' {WALKED}",
    "repeated_repetition": f"'*' {WALKED}",
    "deep_nesting_compare": "a value nested more than 200 levels deep cannot be compared",
    # Bombs of the earlier rounds that repeat a list of long parts with ``*``: refused where
    # they are built, by the logical size of what ``*`` repeats, before the filter is reached.
    "pprint_of_references": f"'*' {WALKED}",
    "forceescape_of_references": f"'*' {WALKED}",
    "max_long_texts": f"'*' {WALKED}",
    "match_lengths_long_texts": f"'*' {WALKED}",
    "namespace_string": f"Namespace() {WALKED}",
    # A fast path that meets an item it was not made for: the sum so far is added to it once,
    # as Python would, instead of copied at every step.
    "sum_of_mixed_lists": 'can only concatenate list (not "tuple") to list',
}
RECURSION = "template recursion too deep"
MEMORY = "went over the memory budget of 512 MB"

CASES: dict[str, Case] = {
    # ---------------------------------------------------------------- family specs (YAML)
    "family.billion_laughs.yaml": Case("YAML anchors (&l0) are not allowed", 6, 7),
    "family.deep_flow_mapping.recipe": Case("nesting deeper than 48 levels", 5, 197),
    "family.oversized.recipe": Case("over the 4194304-byte limit", 1, 1),
    "family.python_object_tag.yaml": Case(
        "YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed", 5, 14),
    "family.local_tag.yaml": Case("YAML tag '!include' is not allowed", 5, 14),
    "family.duplicate_key.yaml": Case("duplicate key 'answer' (first defined at line 13)", 16, 1),
    "family.duplicate_id.yaml": Case(
        "family id 'demo.recall.colour' is declared by several files: "
        "specs/families/a_impostor.yaml, specs/families/colour.yaml", 2, 1,
        target="specs/families/a_impostor.yaml"),
    "family.format_map_escape.yaml": Case(f"attribute '__class__' of a str {UNSAFE}", 15, 17),
    "family.expr_escape.yaml": Case(f"attribute '__class__' of a str {UNSAFE} in expression",
                                    8, 19),
    "family.template_traversal.yaml": Case(
        "template path '../../../../etc/passwd' must stay inside templates/", 9, 3),
    "family.pool_traversal.yaml": Case(
        "pool path 'pools/../../../../../etc/passwd' must stay inside specs/", 7, 12),
    "family.symlink_outside.symlink": Case("resolves outside specs/families/ (a symlink?)", 1, 1),
    "family.utf16.yaml": Case("file is UTF-16", 1, 1),
    "family.cyrillic_id.yaml": Case(
        "family id 'demo.recall.col\u043eur' is not a valid id (it holds U+043E CYRILLIC SMALL "
        "LETTER O at position 16)", 2, 1),
    "family.zero_width_joiner.yaml": Case("U+200D ZERO WIDTH JOINER at position 16", 2, 1),
    "family.cyrillic_slot.yaml": Case("(it holds U+043E CYRILLIC SMALL LETTER O at position 2)",
                                      7, 3),
    "family.rtl_override.yaml": Case("U+202E RIGHT-TO-LEFT OVERRIDE at position 6", 4, 1),
    # A regex gold from a stranger, matched with a time limit: refused at validate where it
    # backtracks on the family's own distractor.
    # Out of time in a slot's expression: the error points at the expression, not at the
    # family's first line.
    "family.slow_slot_expression.yaml": Case("group 0 took longer than 0.2 s to render", 8, 17,
                                             seconds=0.2),
    "family.regex_gold_backtracks.yaml": Case(
        "gold pattern '^(a|aa)+$' took longer than 1 s to match", 13, 1,
        edits=((PARADIGM, "scorers: [exact]", "scorers: [exact, regex]"),)),
    # An abstain pattern, tried on every response's first line, is tried at validate on
    # probe lines with the same time limit: one that backtracks there is refused.
    "family.abstain_backtracks.yaml": Case(
        "abstain pattern took longer than 1 s to match ($MEMSPEC_REGEX_SECONDS) a line of 1,024 "
        "times 'a'", 18, 7),
    # Declared outcomes and signals, searched in every answered response, are probed the same
    # way where a family is validated or frozen (not on every load of it).
    "family.outcome_backtracks.yaml": Case(
        "outcome 'repeated' took longer than 1 s to match ($MEMSPEC_REGEX_SECONDS) a line of "
        "1,024 times 'a'", 19, 5, command="freeze"),
    "family.signal_backtracks.yaml": Case(
        "signal 'performed' took longer than 1 s to match ($MEMSPEC_REGEX_SECONDS) a line of "
        "1,024 times 'x'", 22, 5, command="freeze"),
    # --------------------------------------------------------------------- templates (Jinja)
    "template.format_escape.j2": Case(f"attribute '__class__' of a str {UNSAFE}", 4, 8),
    "template.format_map_escape.j2": Case(f"attribute '__init__' of a str {UNSAFE}", 4, 8),
    "template.indirect_format.j2": Case(f"attribute '__class__' of a str {UNSAFE}", 4, 18),
    "template.attr_format.j2": Case(f"attribute '__class__' of a str {UNSAFE}", 4, 8),
    "template.attr_dunder.j2": Case(f"attribute '__class__' of a str {UNSAFE}", 4, 17),
    "template.mro_walk.j2": Case(f"attribute '__class__' of a str {UNSAFE}", 4, 16),
    "template.mro_call.j2": Case(f"attribute 'mro' of a type {UNSAFE}", 4, 9),
    "template.globals_via_namespace.j2": Case(f"attribute '__init__' of a type {UNSAFE}", 4, 14),
    "template.cycler_globals.j2": Case("'cycler' is undefined", 4, 4),
    "template.lipsum_globals.j2": Case("'lipsum' is undefined", 4, 4),
    "template.loop_internals.j2": Case(f"attribute '_iterator' of a LoopContext {UNSAFE}", 4, 32),
    "template.self_context.j2": Case(
        f"attribute '_TemplateReference__context' of a TemplateReference {UNSAFE}", 4, 9),
    "template.config_global.j2": Case("'config' is undefined", 4, 4),
    "template.range_globals.j2": Case(f"attribute '__class__' of a function {UNSAFE}", 4, 10),
    "template.set_gadget.j2": Case(f"attribute '__class__' of a str {UNSAFE}", 4, 22),
    "template.include_self.j2": Case(RECURSION, 4, 1),
    "template.extends_self.j2": Case(RECURSION, 2, 1),  # at its {% extends %}
    "template.macro_recursion.j2": Case(RECURSION, 4, 1),
    "template.huge_range.j2": Case("range of 1000000000 items exceeds the limit of 10000", 4, 1),
    "template.nested_loops.j2": Case("group 0 took longer than 1 s to render", 4, 1,
                                     seconds=1),
    # The alarm lands on a loop's jump back, which has no line: still this line's error.
    "template.loop_with_empty_if.j2": Case("group 0 took longer than 1 s to render", 4, 1,
                                           seconds=1),
    "template.string_multiplication.j2": Case("repetition would build a value over 2000000", 4, 1),
    "template.string_doubling.j2": Case(MEMORY, 4, 1),
    "template.filter_width.j2": Case(
        "filter 'center' would build a value of 1,000,000,000 characters", 4, 1),
    # Budgets (issue 32): folding while compiling is a render, under the same budget.
    "template.folded_constant.j2": Case(
        "filter 'center' would build a value of 1,500,000,000 characters", 4, 1, seconds=1),
    "template.slow_folding.j2": Case("template took longer than 1 s ($MEMSPEC_GROUP_SECONDS) "
                                     "to compile", 4, 1, seconds=1),
    # Work in C, beyond the alarm: sized before it runs.
    "template.sum_of_lists.j2": Case("filter 'sum' would build a value of 3,000,000", 4, 1,
                                     seconds=1),
    "template.sort_long_texts.j2": Case("filter 'sort' would take 10,000,010,000 steps", 4, 1,
                                        seconds=1),
    "template.replace_growth.j2": Case("replace() would build a value of 7,000,006", 4, 1,
                                       seconds=1),
    "template.star_width.j2": Case("filter 'format' would build a value of 1,000,000,0", 4, 1,
                                   seconds=1),
    "template.nested_brace_width.j2": Case("format() would build a value of 1,000,000,0", 4, 1,
                                           seconds=1),
    "template.join_repeated.j2": Case("filter 'join' would build a value of 300,000,598", 4, 1,
                                      seconds=1),
    # Values that are not text, turned into text in C: sized before (issue 32); those built
    # by repeating a list of long parts with ``*`` are refused where ``*`` builds them, by
    # their logical size (issue 50).
    "template.join_attribute.j2": Case(
        "filter 'join' would build a value of 1,000,000,000 characters", 4, 1, seconds=1),
    **{f"template.{name}.j2": Case(f"'*' {WALKED}", 4, 1, seconds=1)
       for name in ("string_of_lists", "print_nested_list", "concat_list", "percent_of_list")},
    # Filters that build text in C, from a value far larger than its text looks (issue 32):
    # sized before they run, under a budget of 1 s and 64 MB (test_budgets times them).
    **{f"template.{name}.j2": Case(f"filter {fragment}", 4, 1, seconds=1, megabytes=64)
       for name, fragment in SIZED_IN_C.items()},
    # Values far larger written out than in memory (issue 50): sized by their logical size
    # where C would walk them, under the same budget of 1 s and 64 MB.
    **{f"template.{name}.j2": Case(fragment, 4, 1, seconds=1, megabytes=64)
       for name, fragment in SIZED_BY_LOGICAL_SIZE.items() if name != "deep_nesting_compare"},
    # Nested by 30,000 steps of the template before the comparison that is refused: on a
    # loaded machine those steps alone can take more than a second of the clock.
    "template.deep_nesting_compare.j2": Case(SIZED_BY_LOGICAL_SIZE["deep_nesting_compare"],
                                             4, 1, seconds=10, megabytes=64),
    "template.markup_center.j2": Case("center() would build a value of 1,000,000,000", 4, 1,
                                      seconds=1, megabytes=64),
    "template.dict_of_long_keys.j2": Case(f"'*' {WALKED}", 4, 1,
                                          seconds=1, megabytes=64),
    "template.number_squaring.j2": Case(
        "'*' would build a number of about 108,854 binary digits, over the limit of 100,000",
        4, 1, seconds=1, megabytes=64),
    # Every engine: Dask renders in worker threads, where no alarm reaches.
    "template.nested_loops_dask.j2": Case("group 0 took longer than 1 s to render", 4, 1,
                                          seconds=1, args=("--engine", "dask", "--workers", "1")),
    # …and where the address-space limit is the whole worker's: one group at a time holds it.
    "template.string_doubling_dask.j2": Case(MEMORY, 4, 1,
                                             args=("--engine", "dask", "--workers", "1")),
    # A long name reprinted is cut in its middle (with ASCII dots: 400 bytes, not 404).
    "template.long_include_name.j2": Case("characters left out]", 4, 1),
    "template.include_traversal.j2": Case(
        "template path '../../../../../../etc/passwd' must stay inside templates/", 4, 1),
    "template.include_absolute.j2": Case("template path '/etc/passwd' must stay inside templates/",
                                         4, 1),
    "template.symlink_outside.symlink": Case(
        "template 'demo/setup.j2' resolves outside templates/", 8, 3, file=FAMILY),
    "template.format_control_character.j2": Case(
        "format produced the control character U+001B", 4, 1),
    "template.escape_literal.j2": Case(
        "the control character U+001B is not allowed in template text or string literals", 4, 1),
    "template.bom.j2": Case("file starts with a byte-order mark", 1, 1),
    "template.deep_parentheses.recipe": Case("nested too deeply to compile", 2, 27),
    "template.cyrillic_variable.j2": Case(
        "'col\u043eur' is undefined (it holds U+043E CYRILLIC SMALL LETTER O at position 4)",
        4, 14),
    # -------------------------------------------------------------------------------- pools
    "pool.nan.yaml": Case(".nan is not allowed: NaN and infinity have no JSON form", 6, 5),
    "pool.negative_inf.yaml": Case("-.inf is not allowed", 6, 26),
    "pool.huge_int.yaml": Case("integer with 401 digits is outside the safe range", 6, 5),
    "pool.duplicate_items.yaml": Case("duplicate pool item (same as item 1)", 8, 5),
    "pool.deep_block_nesting.recipe": Case("nesting deeper than 48 levels", 4, 99),
    "pool.utf16_no_bom.yaml": Case("NUL character (the file looks like UTF-16", 1, 2),
    "pool.symlink_etc_passwd.symlink": Case("pool 'pools/colours.yaml' resolves outside specs/",
                                            6, 12, file=FAMILY),
    # ---------------------------------------------------------------------------- paradigms
    "paradigm.duplicate_phase.yaml": Case("phase 'setup' is listed twice", 8, 5),
    "paradigm.duplicate_id.yaml": Case(
        "paradigm 'demo.recall' is also declared in specs/paradigms/a_impostor.yaml", 1, 1,
        file=PARADIGM, target="specs/paradigms/a_impostor.yaml"),
    "paradigm.abstain_backtracks.yaml": Case(
        "abstain pattern took longer than 1 s to match ($MEMSPEC_REGEX_SECONDS) a line of "
        "1,024 times 'x'", 10, 5),
    "paradigm.scaffold_traversal.yaml": Case(
        "would write '../../../../../escaped.j2' outside the project", 12, 5,
        target="specs/paradigms/evil.yaml", command="new"),
    # ----------------------------------------------------------------------------- releases
    "release.traversal.yaml": Case("'../../../tmp/demo' does not match", 2, 1),
    "release.trailing_newline_name.yaml": Case("'demo\\n' does not match", 2, 1),
    "release.duplicate_family.yaml": Case("family 'demo.recall.colour' is listed twice", 9, 5),
    "release.nul_byte.yaml": Case("file contains a NUL character", 4, 18),
    # ----------------------------------------------------------------------- responses files
    "responses.duplicate_ids.jsonl": Case(
        "duplicate response for 'demo.recall.colour-00000-base' (first on line 1)", 3, 1),
    "responses.duplicate_key.jsonl": Case("key 'response' is given twice", 2, 1),
    "responses.huge_int.jsonl": Case("an integer of 5001 digits is too long", 2, 1),
    "responses.nan.jsonl": Case("NaN is not JSON", 2, 1),
    "responses.deep_nesting.recipe": Case("JSON nested too deeply", 2, 1),
    "responses.cyrillic_id.jsonl": Case("U+043E CYRILLIC SMALL LETTER O at position 16", 2, 1),
    "responses.latin1.jsonl": Case("file is not valid UTF-8 (byte 0xe9)", 2, 57),
    # An id of 20,000 characters is quoted elided in the middle, within MAX_ERROR_LINE.
    "responses.long_unknown_id.recipe": Case("characters left out]", 1, 1),
    # 200,000 bad lines: twenty located lines, then a count (test_hostile_safety checks it).
    "responses.error_flood.recipe": Case("unknown instance id 'nope'", 1, 1),
    # An id that would print a forged `ok:` line and an escape sequence is shown escaped.
    "responses.forged_ok_line.jsonl": Case("unknown instance id 'x\\nok: dist/demo-v1", 1, 1),
}


# ------------------------------------------------------------------------------ helpers

def _kind(name: str) -> str:
    return name.split(".", 1)[0]


def _materialise(source: Path, destination: Path, outside: Path) -> None:
    """Put the input ``source`` at ``destination``: its bytes, a recipe's expansion, or a
    symlink."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.is_symlink() or destination.exists():
        destination.unlink()
    if source.suffix == ".recipe":
        pieces = json.loads(source.read_text(encoding="utf-8"))["pieces"]
        destination.write_bytes("".join(text * times for text, times in pieces).encode("utf-8"))
    elif source.suffix == ".symlink":
        spec = json.loads(source.read_text(encoding="utf-8"))
        if "to" in spec:
            target = Path(spec["to"])
        else:
            target = outside / spec["outside"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(spec["content"], encoding="utf-8")
        os.symlink(target, destination)
    else:
        destination.write_bytes(source.read_bytes())


def _snapshot(folder: Path) -> dict[str, str | bytes]:
    """Every entry under ``folder``: a file's bytes, a symlink's target, a folder's mark."""
    entries: dict[str, str | bytes] = {}
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_symlink():
            entries[key] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            entries[key] = "dir"
        else:
            entries[key] = path.read_bytes()
    return entries


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def _memspec(root: Path, *args: object, seconds: float = 30,
             megabytes: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMSPEC_ROOT"}
    env["MEMSPEC_GROUP_SECONDS"] = str(seconds)
    if megabytes is not None:
        env["MEMSPEC_GROUP_MEGABYTES"] = str(megabytes)
    return subprocess.run(
        [sys.executable, "-m", "memspec.cli", "--root", str(root), *map(str, args)],
        capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL, cwd=root,
        env=env, timeout=120, preexec_fn=_limit_memory)


def _write_project(root: Path) -> None:
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "manifests").mkdir()


@pytest.fixture(scope="module")
def built_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The fixture project and its release, frozen once: what a responses file is scored
    against."""
    base = tmp_path_factory.mktemp("scored")
    root = base / "project"
    _write_project(root)
    result = _memspec(root, "freeze", "demo-v1", "--out", base / "dist")
    assert result.returncode == 0, result.stderr
    return root, base / "dist" / "demo-v1"


def _shown(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stderr\n{result.stderr[:3000]}" \
           f"--- stdout\n{result.stdout[:1000]}"


# -------------------------------------------------------------------------------- tests

def test_every_corpus_file_has_a_case() -> None:
    files = {p.name for p in CORPUS.iterdir()}
    assert sorted(files - set(CASES)) == [], "corpus files without an expectation"
    assert sorted(set(CASES) - files) == [], "expectations without a corpus file"
    assert len(files) >= 45


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.iterdir()))
def test_hostile_input_is_refused(name: str, tmp_path: Path,
                                  request: pytest.FixtureRequest) -> None:
    case = CASES.get(name)
    if case is None:
        pytest.fail(f"no expectation for {name} in CASES")
    kind = _kind(name)
    command = case.command or COMMANDS[kind]
    out = tmp_path / "out"
    if kind == "responses":
        root, release = request.getfixturevalue("built_release")
        responses = tmp_path / "responses.jsonl"
        _materialise(CORPUS / name, responses, tmp_path / "outside")
        watched = [root, release]
        args: list[object] = ["score", release, responses, "--resamples", 100]
        shown_file = str(responses)
    else:
        root = tmp_path / "project"
        _write_project(root)
        for relative, old, new in case.edits:
            text = (root / relative).read_text(encoding="utf-8")
            assert old in text, f"{relative} has no {old!r} to edit"
            (root / relative).write_text(text.replace(old, new), encoding="utf-8")
        target = case.target or TARGETS[kind]
        _materialise(CORPUS / name, root / target, tmp_path / "outside")
        watched = [root]
        shown_file = case.file or target
        out.mkdir()
        args = {
            "generate": ["generate", FAMILY_ID, "--groups", 2, "--out", out / "gen.jsonl"],
            "freeze": ["freeze", "demo-v1", "--out", out / "dist"],
            "new": ["new", "mine.area.name", "--paradigm", "demo.evil"],
        }[command] + list(case.args)
    before = [_snapshot(folder) for folder in watched]

    result = _memspec(root, *args, seconds=case.seconds, megabytes=case.megabytes)

    assert result.returncode == 2, _shown(result)
    assert "Traceback" not in result.stderr + result.stdout, _shown(result)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    for line in lines:
        assert line.startswith("error: "), f"not an error line: {line!r}\n{_shown(result)}"
        assert len(line) <= MAX_ERROR_LINE, f"error line of {len(line)} characters\n" \
                                            f"{_shown(result)}"
        assert len(line.encode("utf-8")) <= MAX_ERROR_LINE or not line.isascii()
    location = f"error: {shown_file}:{case.line}:{case.column}: "
    assert any(line.startswith(location) and case.fragment in line for line in lines), \
        f"no error at {shown_file}:{case.line}:{case.column} mentioning " \
        f"{case.fragment!r}\n{_shown(result)}"
    assert [_snapshot(folder) for folder in watched] == before, "the project was changed"
    if out.exists():
        assert sorted(p.name for p in out.iterdir()) == [], "output was written"
    assert list(tmp_path.glob("escaped*")) == [], "a file was written outside the project"
