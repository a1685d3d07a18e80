"""Budgets that cannot be escaped or swallowed: a budget of 1 s ends hostile work within ~3 s,
wherever it runs (compiling, a filter in C, a thread, an analysis command), and the size-checked
filters give what Jinja's own give on inputs within their limits."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import jinja2.filters
import jinja2.nodes
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment
from test_bad_input import FAMILY, FAMILY_ID, FAMILY_YAML, FILES, PARADIGM, TEMPLATE, TEMPLATE_J2
from test_hostile import CASES, CORPUS, SIZED_BY_LOGICAL_SIZE, SIZED_IN_C

from memspec.core.bounded_diff import opcodes
from memspec.core.errors import SpecError
from memspec.core.length_match import match_lengths
from memspec.core.limits import Budget, BudgetExceeded, CommandBudget, rendering_alone
from memspec.engine.render import Renderer
from memspec.release.html_page import highlight
from memspec.spec.project import Project

#: Each of these is given a budget of 1 s and must end within this many seconds.
ENDS_WITHIN = 3.0


def _busy(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def _write_project(root: Path, edits: dict[str, str] | None = None) -> Path:
    for relative, text in {**FILES, **(edits or {})}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "manifests").mkdir(exist_ok=True)
    return root


@pytest.fixture
def one_second(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A budget of 1 s per group, per command and per match, and a code cache of the test's
    own (nothing written outside it)."""
    for name in ("MEMSPEC_GROUP_SECONDS", "MEMSPEC_COMMAND_SECONDS", "MEMSPEC_REGEX_SECONDS"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("MEMSPEC_CACHE_DIR", str(tmp_path / "cache"))


# ------------------------------------------------------------------ the budget itself


def test_the_budget_exception_is_not_an_exception() -> None:
    # Jinja's constant folding (and any fallback) catches Exception around what it calls.
    assert not issubclass(BudgetExceeded, Exception)
    assert issubclass(BudgetExceeded, BaseException)


def test_a_catch_all_for_exceptions_does_not_swallow_the_budget() -> None:
    def stubborn() -> None:
        for _ in range(1000):
            try:
                _busy(10)
            except Exception:  # noqa: BLE001, S112 (the point of the test)
                continue

    start = time.monotonic()
    with pytest.raises(BudgetExceeded), Budget(1, 4096):
        stubborn()
    assert time.monotonic() - start < ENDS_WITHIN


def test_a_fired_budget_stays_fired_where_its_exception_was_dropped() -> None:
    def drops_it() -> str:
        with contextlib.suppress(BudgetExceeded):
            _busy(10)
        return "carried on"

    start = time.monotonic()
    with pytest.raises(BudgetExceeded), Budget(1, 4096):
        drops_it()
    assert time.monotonic() - start < ENDS_WITHIN


def test_after_a_dropped_budget_the_next_group_of_a_session_is_still_timed() -> None:
    budget = Budget(1, 4096)
    with budget.session():
        with pytest.raises(BudgetExceeded), budget, contextlib.suppress(BudgetExceeded):
            _busy(10)
        start = time.monotonic()
        with pytest.raises(BudgetExceeded), budget:
            _busy(10)
        assert time.monotonic() - start < ENDS_WITHIN


def test_off_the_main_thread_the_watchdog_keeps_the_time() -> None:
    outcome: list[object] = []

    def work() -> None:
        start = time.monotonic()
        try:
            with Budget(1, 4096):
                _busy(10)
            outcome.append("ran to the end")
        except BudgetExceeded:
            outcome.append(time.monotonic() - start)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], float), outcome
    assert outcome[0] < ENDS_WITHIN


def test_a_command_budget_names_the_input_and_the_item(one_second: None) -> None:
    start = time.monotonic()
    with pytest.raises(SpecError) as caught, CommandBudget("score", "answers.jsonl") as budget:
        budget.on("instance demo-00003")
        _busy(10)
    assert time.monotonic() - start < ENDS_WITHIN
    assert str(caught.value) == ("answers.jsonl: score took longer than 1 s "
                                 "($MEMSPEC_COMMAND_SECONDS) (at instance demo-00003)")


# ------------------------------------------------------------------ templates


@pytest.fixture
def renderer(tmp_path: Path, one_second: None) -> Renderer:
    return Renderer(Project(_write_project(tmp_path / "project")))


def _render(renderer: Renderer, source: str) -> str:
    template = renderer.inline(source, "specs/families/x.yaml", 3, 5, "gold")
    return template.render_text(renderer.scope({"colour": "red"}))


def test_a_folded_constant_is_refused_in_bounded_time_and_memory(renderer: Renderer) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    with pytest.raises(SpecError, match="filter 'center' would build a value of 1,500,000,000"):
        _render(renderer, '{{ " "|center(1500000000)|length }}')
    assert time.monotonic() - start < ENDS_WITHIN
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 200 * 1024


def test_slow_constant_folding_is_ended_by_the_budget(renderer: Renderer) -> None:
    start = time.monotonic()
    with pytest.raises(SpecError, match="took longer than 1 s .* to compile"):
        _render(renderer, '{{ " "|center(1999999)|batch(1)|list|batch(1)|list|batch(1)|list'
                          '|length }}')
    assert time.monotonic() - start < ENDS_WITHIN


def test_sum_of_many_lists_is_linear(renderer: Renderer) -> None:
    # 100,000 short lists: Python's sum copies what it has at every step (minutes); joined
    # once, a tenth of a second.
    start = time.monotonic()
    text = _render(renderer, '{{ ((range(10000)|map("string")|map("list")|list) * 10)'
                             '|sum(start=[])|length }}')
    assert time.monotonic() - start < ENDS_WITHIN
    assert int(text) == 10 * sum(len(str(n)) for n in range(10000))


def test_a_sum_over_the_size_limit_is_refused(renderer: Renderer) -> None:
    with pytest.raises(SpecError, match="filter 'sum' would build a value of 3,000,000"):
        _render(renderer, "{{ ([range(1000)|list] * 3000)|sum(start=[])|length }}")


@pytest.mark.parametrize(("source", "reference"), [
    ('{{ "ab"|center(9) }}', lambda: jinja2.filters.do_center("ab", 9)),
    ('{{ "a-b-c"|replace("-", "+", 1) }}', lambda: "a-b-c".replace("-", "+", 1)),
    ('{{ ["x", 1, "y"]|join(", ") }}', lambda: ", ".join(["x", "1", "y"])),
    ('{{ "%5.2f|%-*d|"|format(3.14159, 4, 7) }}', lambda: "%5.2f|%-*d|" % (3.14159, 4, 7)),  # noqa: UP031
    ('{{ "{:>{}}|{}".format("a", 4, "b") }}', lambda: "{:>{}}|{}".format("a", 4, "b")),
    ('{{ ["b", "a", "C"]|sort|join }}', lambda: "".join(sorted(["b", "a", "C"], key=str.lower))),
    ('{{ [[1], [2, 3]]|sum(start=[]) }}', lambda: str(sum([[1], [2, 3]], []))),
    ('{{ [(1,), (2,)]|sum(start=()) }}', lambda: str(sum([(1,), (2,)], ()))),
    ('{{ [1, 2, 3]|sum }}', lambda: "6"),
    ('{{ "a\nb"|indent(3, true) }}', lambda: "   a\n   b"),
    ('{{ "ab".rjust(5, "*") ~ "7".zfill(3) }}', lambda: "ab".rjust(5, "*") + "7".zfill(3)),
    ('{{ [{"t": "a"}, {"t": "b"}]|join("-", attribute="t") }}', lambda: "a-b"),
    ('{{ [1, [2, "x"], {"k": 2.5}]|string }}', lambda: str([1, [2, "x"], {"k": 2.5}])),
    ('{{ [1, [2, "x"], {"k": None}] }}', lambda: str([1, [2, "x"], {"k": None}])),
    ('{{ "%s|%d" % ([1, "y"], 3) }}', lambda: "%s|%d" % ([1, "y"], 3)),  # noqa: UP031
    ('{{ "{}".format([1, "y"]) }}', lambda: "[1, 'y']"),
    ('{{ colour ~ [1, "y"] ~ 2 ~ (3,) }}', lambda: "red[1, 'y']2(3,)"),
    ('{{ ["ab", "c", "def"]|match_lengths(["x", "yz"]) }}',
     lambda: str(match_lengths(["ab", "c", "def"], ["x", "yz"]))),
])
def test_sized_filters_give_what_the_originals_give(renderer: Renderer, source: str,
                                                     reference: object) -> None:
    assert _render(renderer, source) == reference()  # type: ignore[operator]


@pytest.mark.parametrize("name", [*SIZED_IN_C, *SIZED_BY_LOGICAL_SIZE, "markup_center",
                                  "dict_of_long_keys", "number_squaring"])
def test_a_filter_building_text_in_c_is_refused_before_it_runs(
        renderer: Renderer, name: str, tmp_path: Path) -> None:
    """Each corpus template whose filter would build text in C far beyond the limit (tojson,
    pprint, escape … of a value far larger than it looks) is refused within ~3 s of a 1 s
    budget, having grown the process by little: sized before it ran."""
    source = (CORPUS / f"template.{name}.j2").read_text(encoding="utf-8")
    (tmp_path / "project" / "templates" / "demo" / "hostile.j2").write_text(source)
    fragment = CASES[f"template.{name}.j2"].fragment
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    with pytest.raises(SpecError, match=re.escape(fragment)):
        renderer.file("demo/hostile.j2").render_messages(renderer.scope({"colour": "red"}))
    assert time.monotonic() - start < ENDS_WITHIN
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024


@pytest.mark.parametrize("source", [
    '{{ ["a<b", {"k": "é\u2028"}, 1.5, none, true]|tojson }}',
    '{{ {"b": [1, 2], "a": "x"}|tojson(2) }}',
    '{{ [{"key": "value " * 30}, range(40)|list, "x" * 100]|pprint }}',
    '{{ "<a & \'b\'>"|escape }}{{ [1, "<"]|e }}{{ "x"|forceescape }}',
    '{{ "see www.a.com or b@c.org, ftp"|urlize(20, true, "_blank") }}',
    '{{ ("word " * 30)|wordwrap(17, wrapstring="|") }}',
    '{{ "a\u2028b\nc"|indent(2, true, true) }}',
    '{{ {"id": "x<y", "n": 3}|xmlattr }}{{ {"q": "a b", "r": "é"}|urlencode }}',
    '{{ range(7)|batch(3, 0)|list }}{{ range(7)|slice(3, 9)|list }}',
    '{{ ["b", "C", "a"]|max }}{{ [3, 1, 2]|min }}{{ [[1, "a"], [0, "b"]]|groupby(0)|list }}',
    '{{ [1, "x"]|upper }}{{ ["a"]|capitalize }}{{ [1]|safe }}{{ ["<b>x</b>"]|striptags }}',
    '{{ "AbC"|lower }}{{ "abc"|upper }}{{ "aBC"|capitalize }}{{ ("<x>"|e)|upper }}',
    '{{ ["one two", 3]|wordcount }}{{ (colour|e).center(9) }}{{ [1, "y"]|format }}',
    '{{ [1, "a"]|replace("a", "bb") }}{{ [1, 2]|join([0]) }}',
    '{{ dict([["k", 1], ["j", 2]])|dictsort }}{{ namespace(dict(q=3)).q }}'
    '{{ dict.fromkeys(["a", "b"])|dictsort }}',
    '{{ 2 ** 256 * 3 }}{{ 7 ** 3 }}{{ 2 ** -2 }}{{ 10 ** 255 * 10 ** 255 % 11 }}{{ true * 3 }}',
])
def test_the_sized_filters_agree_with_jinja_s_own(renderer: Renderer, source: str) -> None:
    """Within the limit, every sized filter gives what the same filter of Jinja's own sandbox
    gives (nothing refused, nothing changed)."""
    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    assert _render(renderer, source) == plain.from_string(source).render(colour="red")


@pytest.mark.parametrize("value", [
    "", "plain", "<&'\"", "é" * 40, "\U0001f600\u2028\n" * 30, 7, -2**70, 2.5, None, True,
    ["a<b", ["é", {"k": None}]], {"k" * 100: ["word " * 60, list(range(60))]},
    {"a": {"b" * 90: ["c d " * 50, "\u200b" * 50]}}, [["x" * 70] * 3] * 4, (1, ("y",)),
])
def test_serialised_lengths_bound_what_the_filters_build(value: object) -> None:
    # Jinja's filters themselves are the reference: a size check never refuses a text that
    # it counted as shorter than it is.
    from markupsafe import escape

    from memspec.engine.jinja_text_sizes import (
        html_escaped_length,
        json_length,
        pprint_length,
    )

    env = ImmutableSandboxedEnvironment()
    eval_ctx = jinja2.nodes.EvalContext(env)
    assert json_length(value) >= len(jinja2.filters.do_tojson(eval_ctx, value))
    assert json_length(value, 3) >= len(jinja2.filters.do_tojson(eval_ctx, value, 3))
    assert pprint_length(value) >= len(jinja2.filters.do_pprint(value))
    assert html_escaped_length(value) >= len(escape(value))


def test_the_same_filters_in_a_plain_sandbox_agree(renderer: Renderer) -> None:
    # Jinja's own sandbox, unchecked, renders what the checked one does where both can.
    plain = ImmutableSandboxedEnvironment()
    for source in ('{{ "x"|center(7) }}', '{{ ["a", "b"]|join("-") }}',
                   '{{ "aXbX"|replace("X", "yy") }}', '{{ [3, 1, 2]|sort|join }}'):
        assert _render(renderer, source) == plain.from_string(source).render()


# ------------------------------------------------------------------ analysis commands


def test_a_long_diff_in_preview_is_bounded() -> None:
    words = [f"w{k % 97}" for k in range(20000)]
    text = " ".join(words)
    changed = " ".join(w if k % 7 else "X" for k, w in enumerate(words))
    start = time.monotonic()
    html = highlight(changed, text)
    assert time.monotonic() - start < ENDS_WITHIN
    assert "<mark>" in html and html.count("X") == len(range(0, 20000, 7))


def test_a_short_diff_is_difflib_s() -> None:
    import difflib

    a = ["the", "cat", "sat", "on", "the", "mat"]
    b = ["the", "dog", "sat", "on", "a", "mat"]
    assert opcodes(a, b) == difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    # Past the bound: the common ends stay equal, the middle is one change.
    assert opcodes(["x", *a, "y"], ["x", *b, "y"], most=4) == [
        ("equal", 0, 2, 0, 2), ("replace", 2, 6, 2, 6), ("equal", 6, 8, 6, 8)]


REGEX_FAMILY = FAMILY_YAML.replace('''answer:
  scorer: exact
  gold: "{{ colour }}"
''', '''answer:
  scorer: regex
  gold: "^(a|aa)+$"
  example: "aaa"
  distractors:
    other: "b"
''')


def _cli(root: Path, *args: object, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str],
                                                                     float]:
    """Run memspec; its result, and the processor seconds it took (a shared machine's load
    stretches wall-clock time, not work; a regular expression's time limit is in processor
    time too)."""
    full = {k: v for k, v in os.environ.items() if k != "MEMSPEC_ROOT"}
    full.update(env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "memspec.cli", "--root", str(root),
                             *map(str, args)], capture_output=True, text=True, cwd=root,
                            env=full, stdin=subprocess.DEVNULL, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_a_hostile_regex_gold_at_score_time_is_ended(tmp_path: Path) -> None:
    root = _write_project(tmp_path / "project", {
        FAMILY: REGEX_FAMILY,
        PARADIGM: FILES[PARADIGM].replace("scorers: [exact]", "scorers: [exact, regex]")})
    env = {"MEMSPEC_REGEX_SECONDS": "1", "MEMSPEC_GROUP_SECONDS": "1",
           "MEMSPEC_CACHE_DIR": str(tmp_path / "cache")}
    # The fixture's one-colour gold is passable without memory (the audit says so); what is
    # tested here is the gold's matching at score time.
    built, _ = _cli(root, "freeze", "demo-v1", "--out", tmp_path / "dist",
                    "--allow-audit-failures", env=env)
    assert built.returncode == 0, built.stderr
    release = tmp_path / "dist" / "demo-v1"
    ids = [json.loads(line)["id"] for line in
           (release / "data" / "test.jsonl").read_text().splitlines()] \
        if (release / "data" / "test.jsonl").exists() else None
    if ids is None:  # the data file's name depends on the layout: find the instances
        ids = sorted(json.loads(line)["id"] for path in (release / "data").rglob("*.jsonl")
                     for line in path.read_text().splitlines() if '"id"' in line)
    benign, hostile = tmp_path / "benign.jsonl", tmp_path / "hostile.jsonl"
    benign.write_text("".join(json.dumps({"id": i, "response": "aa"}) + "\n" for i in ids))
    hostile.write_text("".join(json.dumps({"id": i, "response": "a" * 5000 + "b"
                                           if k == len(ids) - 1 else "aa"}) + "\n"
                               for k, i in enumerate(ids)))
    fine, baseline = _cli(root, "score", release, benign, "--resamples", 100, env=env)
    assert fine.returncode == 0, fine.stderr
    refused, took = _cli(root, "score", release, hostile, "--resamples", 100, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    assert refused.stderr.startswith(
        f"error: {hostile}:{len(ids)}:1: the response to {ids[-1]}: pattern '^(a|aa)+$' took "
        "longer than 1 s to match ($MEMSPEC_REGEX_SECONDS)"), refused.stderr
    assert took < baseline + ENDS_WITHIN


def test_a_quadratic_probe_line_at_audit_time_is_linear(tmp_path: Path) -> None:
    env = {"MEMSPEC_GROUP_SECONDS": "1", "MEMSPEC_COMMAND_SECONDS": "60",
           "MEMSPEC_CACHE_DIR": str(tmp_path / "cache")}
    timings = []
    for name, probe in (("plain", "Which colour did I say I like?"),
                        ("hostile", "A) x" + " " * 200_000 + "y")):
        root = _write_project(tmp_path / name, {
            FAMILY: FAMILY_YAML.replace('"Which colour did I say I like?"', json.dumps(probe)),
            TEMPLATE: TEMPLATE_J2})
        built, _ = _cli(root, "freeze", "demo-v1", "--out", tmp_path / name / "dist",
                        "--allow-audit-failures", env=env)
        assert built.returncode == 0, built.stderr
        audited, took = _cli(root, "audit", tmp_path / name / "dist" / "demo-v1", env=env)
        assert audited.returncode in (0, 1), audited.stderr
        assert "Traceback" not in audited.stderr
        timings.append(took)
    assert timings[1] < timings[0] + ENDS_WITHIN


def test_a_hostile_template_is_refused_on_a_dask_worker_as_fast_as_here(
        tmp_path: Path, one_second: None) -> None:
    # A Dask worker renders in a thread of its own, where no alarm reaches: the watchdog ends
    # the group there as the alarm does here.
    from distributed import Client

    from memspec.engine.parallel import chunk_jobs, render_chunk
    from memspec.spec.catalog import Catalog

    loops = "{% for a in range(9999) %}{% for b in range(9999) %}{% endfor %}{% endfor %}"
    root = _write_project(tmp_path / "project",
                          {TEMPLATE: TEMPLATE_J2.replace("Noted.", f"Noted.{loops}")})
    job = next(iter(chunk_jobs(root, Catalog.load(Project(root)).family(FAMILY_ID), 0, 0, 1)))
    start = time.monotonic()
    with pytest.raises(SpecError, match="group 0 took longer than 1 s"):
        render_chunk(job)
    here = time.monotonic() - start
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=None) as client:
        start = time.monotonic()
        with pytest.raises(SpecError, match="group 0 took longer than 1 s"):
            client.submit(render_chunk, job, pure=False).result()
        there = time.monotonic() - start
    assert here < ENDS_WITHIN
    assert there < here + ENDS_WITHIN


def test_a_thread_rendering_alone_is_held_to_its_memory_budget() -> None:
    # A Dask worker's task thread is not the main one, yet alone in its process while it
    # renders: a group there is held to its memory budget, and the limit is undone after it.
    outcome: list[str] = []

    def work() -> None:
        with rendering_alone():
            try:
                with Budget(60, 256):
                    outcome.append(str(len(bytearray(2 * 1024**3))))
            except MemoryError:
                outcome.append("refused")
        outcome.append(str(len(bytearray(300 * 1024**2))))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert outcome == ["refused", str(300 * 1024**2)]


# ------------------------------------------- the item an analysis command's error names


@pytest.fixture(scope="module")
def judged_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The fixture project frozen with a rubric on its answer (so that judge-requests has
    requests to build), and an oracle's responses: (project, release, responses)."""
    base = tmp_path_factory.mktemp("judged")
    root = _write_project(base / "project", {FAMILY: FAMILY_YAML.replace(
        'gold: "{{ colour }}"', 'gold: "{{ colour }}"\n  rubric: "Names the colour."')})
    env = {"MEMSPEC_CACHE_DIR": str(base / "cache")}
    built, _ = _cli(root, "freeze", "demo-v1", "--out", base / "dist",
                    "--allow-audit-failures", env=env)
    assert built.returncode == 0, built.stderr
    release, responses = base / "dist" / "demo-v1", base / "responses.jsonl"
    answered, _ = _cli(root, "respond", release, "--policy", "oracle", "--out", responses,
                       env=env)
    assert answered.returncode == 0, answered.stderr
    return root, release, responses


def _slow_on(target: str, function: object, position: int = 0) -> object:
    """``function``, taking 30 s (far past a budget of 1 s) where its argument at
    ``position`` is the instance ``target``, and only there."""
    def slow(*args: object, **kwargs: object) -> object:
        if args[position]["id"] == target:  # type: ignore[index]
            time.sleep(30)
        return function(*args, **kwargs)  # type: ignore[operator]
    return slow


@pytest.mark.parametrize("command", ["audit", "judge-requests", "export", "score"])
def test_an_analysis_command_out_of_time_names_the_instance(
        command: str, judged_release: tuple[Path, Path, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, one_second: None) -> None:
    """Ended by its budget on one instance, audit, judge-requests, export and score each name
    the input and that instance; where the instance's response was read from a responses
    file (judge-requests, score), the error stands at that file's line of it."""
    from typer.testing import CliRunner

    from memspec.analysis import judge, score
    from memspec.audit import audit_structure
    from memspec.cli.commands import app
    from memspec.exports import export_inspect

    root, release, responses = judged_release
    ids = [json.loads(line)["id"] for line in responses.read_text().splitlines()]
    target = ids[len(ids) // 2]
    where, name = {"audit": (audit_structure.FamilyStructure, "add"),
                   "judge-requests": (judge, "task_prompt"),
                   "export": (export_inspect, "inspect_sample"),
                   "score": (score, "outcome")}[command]
    monkeypatch.setattr(where, name, _slow_on(target, getattr(where, name),
                                              1 if command == "audit" else 0))
    args = {"audit": ["audit", str(release)],
            "judge-requests": ["judge-requests", str(release), str(responses), "--out",
                               str(tmp_path / "requests.jsonl")],
            "export": ["export", str(release), "--format", "inspect", "--out",
                       str(tmp_path / "inspect")],
            "score": ["score", str(release), str(responses), "--resamples", "100"]}[command]
    monkeypatch.delenv("MEMSPEC_ROOT", raising=False)
    # Five seconds for the command: what comes before the first instance (the spec audits'
    # keys, the release's checks) must not use it all on a loaded machine; the slowed
    # instance takes 30.
    monkeypatch.setenv("MEMSPEC_COMMAND_SECONDS", "5")
    start = time.monotonic()
    result = CliRunner().invoke(app, ["--root", str(root), *args])
    assert time.monotonic() - start < 20
    assert result.exit_code == 2, result.output
    source = f"{responses}:{ids.index(target) + 1}:1" if command in ("judge-requests", "score") \
        else str(release)
    assert f"error: {source}: {command} took longer than 5 s ($MEMSPEC_COMMAND_SECONDS) " \
           f"(at instance {target})" in result.output, result.output
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == [], \
        "output was written"


@pytest.mark.parametrize("value", [
    "", "plain", 0, -1, 10**300, -(2**4000), 3.5, -1.2345678901234567e-308, True, None,
    [], [1, "two", 3.0], (None, (False,)), {"k": [1, {"n": "v"}], "j": ()},
    [[list(range(1000))] * 3] * 4, {n: str(n) * n for n in range(50)},
])
def test_text_length_is_at_least_the_text_and_not_far_above(value: object) -> None:
    # str() itself is the reference: the size check refuses no text it would let through.
    from memspec.engine.jinja_sized_filters import text_length

    assert len(str(value)) <= text_length(value) <= 2 * len(str(value)) + 24
