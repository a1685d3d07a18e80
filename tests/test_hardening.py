"""Regression tests for holes found in review: tampering that rewrites the seals, runaway
templates, silent typos, paths leaving the tree, and crashes instead of located errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_bad_input import FAMILY, RELEASE, TEMPLATE, edit, memspec, out, project  # noqa: F401

from conftest import REPO, run_cli
from memspec.analysis.scoring import first_call
from memspec.core.code_cache import CACHE_DIR_VARIABLE
from memspec.formats.manifest import sha256_file, sums_text
from memspec.release.verify import verify_release

#: A bare environment for a memspec run (the test run's cache of compiled code kept).
BARE_ENV = {"PATH": "/usr/bin:/bin", "MEMSPEC_GROUP_SECONDS": "2",
            CACHE_DIR_VARIABLE: os.environ.get(CACHE_DIR_VARIABLE, "")}


def _reseal(folder: Path) -> None:
    """What a careful forger does: recompute SHA256SUMS over the folder as it now is."""
    hashes = {p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*")
              if p.is_file() and p.name != "SHA256SUMS"}
    (folder / "SHA256SUMS").write_text(sums_text(hashes))


def test_a_manifest_pointing_at_itself_is_refused(built_example: Path, tmp_path: Path) -> None:
    release = tmp_path / "example-v1"
    shutil.copytree(built_example, release)
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["release"] = "../dist/example"
    (release / "manifest.json").write_text(json.dumps(manifest))
    _reseal(release)
    result = run_cli("verify", str(release))
    assert result.returncode == 2 and "manifest.json" in result.stderr  # not a manifest


def test_an_added_file_listed_in_the_sums_is_still_caught(built_example: Path,
                                                          tmp_path: Path) -> None:
    release = tmp_path / "example-v1"
    shutil.copytree(built_example, release)
    (release / "data" / "evil.jsonl").write_text("{}\n")
    _reseal(release)
    result = run_cli("verify", str(release))
    assert result.returncode == 1 and "data/evil.jsonl" in result.stderr


def test_verify_without_a_project_says_what_it_could_not_check(built_example: Path,
                                                               tmp_path: Path) -> None:
    result = run_cli("--root", str(tmp_path), "verify", str(built_example), cwd=tmp_path)
    assert result.returncode == 2  # --root names no project
    alone = verify_release(built_example, None)
    assert alone.ok and not alone.anchored
    trusted = run_cli("verify", str(built_example), "--manifest",
                      str(REPO / "manifests" / "example-v1.json"))
    assert trusted.returncode == 0 and "warning" not in trusted.stderr
    # Another release's manifest is a manifest, and not this release's.
    mismatch = run_cli("verify", str(built_example), "--manifest",
                       str(REPO / "manifests" / "example-v2.json"))
    assert mismatch.returncode == 1
    assert "manifest.json differs from the trusted manifest" in mismatch.stderr
    # What is no manifest at all is bad input, named as such.
    for text, why in (("{}", "not a valid manifest: 'manifest_version' is a required"),
                      ("# a README", "not a valid manifest: not valid JSON: Expecting value")):
        other = tmp_path / "other.json"
        other.write_text(text)
        refused = run_cli("verify", str(built_example), "--manifest", str(other))
        assert refused.returncode == 2 and why in refused.stderr, refused.stderr
    # A file of the release, for the folder: the folder that holds it is named.
    for inside in ("manifest.json", next(built_example.glob("data/*.jsonl"))):
        a_file = run_cli("verify", str(built_example / inside))
        assert a_file.returncode == 2
        assert f"verify takes a release folder: {built_example.resolve()}, which holds it" \
            in a_file.stderr
    loose = tmp_path / "loose.json"
    loose.write_text("{}")
    alone = run_cli("verify", str(loose))
    assert alone.returncode == 2 and alone.stderr.startswith(
        f"error: {loose}: is a file; verify takes a release folder\n")


def test_a_scaffold_cannot_write_outside_the_project(project: Path) -> None:  # noqa: F811
    paradigm = project / "specs/paradigms/evil.yaml"
    paradigm.write_text(
        "paradigm: demo.evil\nversion: 1\ndescription: d\nphases: [{name: only}]\n"
        "scaffold:\n  family: {description: d}\n"
        "  templates: {'../../../../escaped.txt': 'x'}\n")
    result = memspec(project, "new", "mine.a.b", "--paradigm", "demo.evil")
    assert result.returncode == 2 and "outside the project" in result.stderr
    assert not (project.parent / "escaped.txt").exists()
    assert not (project / "specs/families/mine").exists()


@pytest.mark.parametrize(("expression", "fragment"), [
    ("{{ colour.upper }}", "cannot be printed"),
    ("{{ [colour] | map('upper') }}", "cannot be printed"),
    ("{{ 7 ** 999999999 }}", "exponent"),
    ("{{ 'a' * 10**9 }}", "repetition"),
    ("{{ '%0999999999d' % 1 }}", "format width"),
    ("{% for a in range(9999) %}{% for b in range(9999) %}{% for c in range(9999) %}"
     "{% endfor %}{% endfor %}{% endfor %}", "took longer than"),
])
def test_runaway_or_unstable_templates_are_refused(project: Path,  # noqa: F811
                                                   expression: str, fragment: str) -> None:
    edit(project, TEMPLATE, "My favourite colour is {{ colour }}.",
         f"My favourite colour is {{{{ colour }}}}. {expression}")
    result = subprocess.run(
        [sys.executable, "-m", "memspec.cli", "--root", str(project), "validate"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        env=BARE_ENV)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_a_catastrophic_regex_gold_is_stopped(project: Path) -> None:  # noqa: F811
    # ``^(a|aa)+$`` backtracks exponentially in the regex package too (which reads
    # ``^(a+)+$`` in linear time).
    edit(project, FAMILY, '  scorer: exact\n  gold: "{{ colour }}"',
         '  scorer: regex\n  gold: "^(a|aa)+$"\n  distractors:\n    slow: "'
         + "a" * 5000 + '!"')
    (project / "specs/paradigms/recall.yaml").write_text(
        (project / "specs/paradigms/recall.yaml").read_text().replace("[exact]", "[regex]"))
    result = subprocess.run(
        [sys.executable, "-m", "memspec.cli", "--root", str(project), "validate"],
        capture_output=True, text=True, timeout=60,
        env=BARE_ENV)
    assert result.returncode == 2 and "took longer than" in result.stderr


def test_groups_of_a_session_each_have_their_own_deadline_and_nothing_outlives_it() -> None:
    """A chunk sets its budget up once (Budget.session): each group must still get the whole
    time budget from its own start, a runaway group must still be stopped, and the alarm, its
    handler and the address-space limit must be as they were once the chunk is done."""
    import resource
    import signal
    import time

    from memspec.core.limits import Budget, BudgetExceeded

    before = (signal.getsignal(signal.SIGALRM), resource.getrlimit(resource.RLIMIT_AS))
    budget = Budget(0.5, 512)
    with budget.session():
        for _ in range(3):  # 0.9 s in all, over one budget; 0.3 s each, within their own
            with budget:
                time.sleep(0.3)
                soft, _ = resource.getrlimit(resource.RLIMIT_AS)
                assert soft != resource.RLIM_INFINITY  # the memory budget holds in a group
            time.sleep(0.3)  # between groups, the alarm may fire: it stops nothing
        start = time.monotonic()
        with pytest.raises(BudgetExceeded), budget:
            while time.monotonic() < start + 10:
                pass
        assert time.monotonic() - start < 2
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert (signal.getsignal(signal.SIGALRM), resource.getrlimit(resource.RLIMIT_AS)) == before


def test_every_group_of_a_session_is_held_to_its_memory_budget() -> None:
    """The address space is read every few groups of a session, not at every group: a group
    between two reads must still be refused an allocation far over its budget, and given one
    well within it, however far into the session it comes."""
    import resource

    from memspec.core.limits import Budget

    before = resource.getrlimit(resource.RLIMIT_AS)
    budget = Budget(30, 64)
    refused = []
    with budget.session():
        for group in range(2 * Budget.SESSION_READ_EVERY + 1):
            with budget:
                kept = bytearray(16 << 20)  # within 64 MB
                try:
                    bytearray(256 << 20)
                except MemoryError:
                    refused.append(group)
                del kept
    assert refused == list(range(2 * Budget.SESSION_READ_EVERY + 1))
    assert resource.getrlimit(resource.RLIMIT_AS) == before


@pytest.mark.parametrize(("old", "new", "fragment"), [
    ("version: 1\nparadigm", "version: 1" + "9" * 5000 + "\nparadigm", "digits"),
    ("  colour: {from: pools/colours.yaml}",
     "  colour: {from: pools/colours.yaml}\n  group: {value: night}", "reserved"),
])
def test_family_mistakes_are_located_not_tracebacks(project: Path, old: str,  # noqa: F811
                                                    new: str, fragment: str) -> None:
    edit(project, FAMILY, old, new)
    result = memspec(project, "validate")
    assert result.returncode == 2
    assert fragment in result.stderr and "Traceback" not in result.stderr
    assert f"{FAMILY}:" in result.stderr


@pytest.mark.parametrize(("check", "fragment"), [
    ("{kind: forbidden_words, phases: [probe], words: '5'}", "words must give"),
    ("{kind: balanced, of: 'instance.answer.keys()'}", "plain data"),
    ("{kind: message_count, phase: probe, equals: 1, when: {cue: frist}}", "'frist'"),
    ("{kind: message_count, phase: probe}", "asserts nothing: give it equals or min or max"),
    ("{kind: token_count, phases: [probe]}", "asserts nothing: give it min or max"),
])
def test_check_mistakes_are_errors(project: Path, check: str, fragment: str) -> None:  # noqa: F811
    text = (project / FAMILY).read_text()
    if "cue" in check:
        text += "designs:\n  main:\n    axes:\n      cue: [first, last]\n"
    text += f"checks:\n  - {check}\n"
    (project / FAMILY).write_text(text)
    result = memspec(project, "validate")
    assert result.returncode == 2, result.stdout + result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr


def test_releases_are_found_by_their_declared_name(project: Path, out: Path) -> None:  # noqa: F811
    (project / RELEASE).rename(project / "specs/releases/anything.yaml")
    result = memspec(project, "freeze", "demo-v1", "--out", out)
    assert result.returncode == 0, result.stderr
    (project / "specs/releases/copy.yaml").write_text(
        (project / "specs/releases/anything.yaml").read_text())
    result = memspec(project, "validate")
    assert result.returncode == 2 and "release demo-v1 is also declared" in result.stderr


def test_a_broken_committed_manifest_is_a_located_error(project: Path,  # noqa: F811
                                                        out: Path) -> None:  # noqa: F811
    (project / "manifests/demo-v1.json").write_text("[]")
    result = memspec(project, "freeze", RELEASE, "--out", out)
    assert result.returncode == 2 and "manifests/demo-v1.json" in result.stderr
    assert "Traceback" not in result.stderr


def test_concurrent_freezes_do_not_corrupt_each_other(project_copy: Path) -> None:
    release = project_copy / "specs/releases/example-v1.yaml"
    text = release.read_text().replace("version: v1", "version: v7")
    text = text.replace("  - family: example.priming.harbour_fog\n    groups: 12\n", "")
    (project_copy / "specs/releases/example-v7.yaml").write_text(text.replace("12", "300"))
    command = [sys.executable, "-m", "memspec.cli", "--root", str(project_copy), "freeze",
               "example-v7"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = [(p.wait(), p.communicate()[1]) for p in (first, second)]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0
    if codes[1] != 0:
        assert any("another memspec freeze" in stderr for _, stderr in results)
    verify = run_cli("verify", str(project_copy / "dist/example-v7"), root=project_copy)
    assert verify.returncode == 0, verify.stderr


def test_first_call_honours_escaped_quotes() -> None:
    assert first_call(r"say('it\'s (ok)') then more") == r"say('it\'s (ok)')"


def test_generate_into_a_folder_is_refused_cleanly(tmp_path: Path) -> None:
    result = run_cli("generate", "example.choice.meeting_room", "--out", str(tmp_path))
    assert result.returncode == 2 and "is a folder" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("where", "old", "new", "fragments"), [
    # libyaml refuses the escape itself; PyYAML's own scanner lets it through to our check.
    ("specs/pools/colours.yaml", "  - red", '  - "re\\ud800d"',
     ("lone surrogate", "invalid Unicode character escape")),
    (FAMILY, "  colour: {from: pools/colours.yaml}",
     "  x: {expr: \"'a\\\\ud800'\"}\n  colour: {from: pools/colours.yaml, shared_by: [x]}",
     ("no canonical form",)),
])
def test_a_lone_surrogate_is_a_located_error(project: Path, out: Path, where: str,  # noqa: F811
                                             old: str, new: str,
                                             fragments: tuple[str, ...]) -> None:
    # UTF-8 cannot encode U+D800-U+DFFF; a YAML escape or an expression can still make one.
    edit(project, where, old, new)
    for command in (("validate",), ("freeze", RELEASE, "--out", out)):
        result = memspec(project, *command)
        assert result.returncode == 2, result.stderr
        assert any(f in result.stderr for f in fragments), result.stderr
        assert "Traceback" not in result.stderr and f"{where}:" in result.stderr
    assert list(out.iterdir()) == [] and not any((project / "manifests").iterdir())
