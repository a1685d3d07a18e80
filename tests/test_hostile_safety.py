"""Hostile cases that need more than one input file: a code cache planted in a checkout or by
another user, folders a command must not replace or write into, a release forged to stall or
fool `verify`, and floods of bad lines. Each runs memspec as a user would (a fresh process on
the small project of ``test_hostile``) and checks what a user would see: the exit status, a
located ``error:`` line, no traceback, and nothing written or run that should not be."""

from __future__ import annotations

import json
import os
import resource
import shutil
import time
from pathlib import Path

import pytest
from test_bad_input import FAMILY_ID
from test_hostile import CORPUS, MAX_ERROR_LINE, _memspec, _snapshot, _write_project

from conftest import bundled_release, run_cli
from memspec.core import code_cache
from memspec.core.code_cache import CACHE_DIR_VARIABLE, KEY_FILE, PROJECT_CACHE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    _write_project(root)
    return root


def _refused(result: object, fragment: str, status: int = 2) -> list[str]:
    """The error lines of a run that must have been refused with ``status``."""
    shown = f"exit {result.returncode}\n{result.stderr[:3000]}"  # type: ignore[attr-defined]
    assert result.returncode == status, shown  # type: ignore[attr-defined]
    assert "Traceback" not in result.stderr + result.stdout, shown  # type: ignore[attr-defined]
    lines = [line for line in result.stderr.splitlines() if line.strip()]  # type: ignore[attr-defined]
    assert all(len(line) <= MAX_ERROR_LINE for line in lines), shown
    assert any(line.startswith("error: ") and fragment in line for line in lines), shown
    return lines


def _freeze(root: Path, out: Path, **env: str) -> object:
    return _memspec(root, "freeze", "demo-v1", "--out", out)


# ------------------------------------------------------------------------------ code cache

def _env_run(root: Path, env: dict[str, str], *args: object) -> object:
    """``memspec ARGS`` with ``env`` added (the test run's own cache variable dropped)."""
    saved = {name: os.environ.get(name) for name in (*env, CACHE_DIR_VARIABLE)}
    os.environ.pop(CACHE_DIR_VARIABLE, None)
    os.environ.update(env)
    try:
        return _memspec(root, *args)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _plant(cache: Path, marker: Path) -> int:
    """Replace every compiled template of ``cache`` by code that writes ``marker``, tagged
    with the key that ``cache``'s own key file gives where it lies now."""
    code_cache._keys.clear()
    key = code_cache._read_secret(cache / KEY_FILE)
    assert key is not None
    payload = __import__("marshal").dumps(compile(
        f"open({str(marker)!r}, 'w').write('ran')\n", "<planted>", "exec"))
    entries = sorted((cache / "jinja").iterdir())
    for entry in entries:
        label = entry.relative_to(cache).as_posix().encode()
        entry.write_bytes(code_cache._tag(key, label, payload) + payload)
    return len(entries)


def test_a_cache_shipped_inside_a_checkout_never_runs(tmp_path: Path, project: Path) -> None:
    """The project's own cache (``.memspec_cache``, the default) as a checkout or an archive
    brings it, key file and entries tagged with it, is not trusted; the one this user's runs
    made is."""
    args = ("generate", FAMILY_ID, "--groups", 2, "--seed", 3)
    marker = tmp_path / "escaped-cache-ran"
    first = _env_run(project, {}, *args)
    assert first.returncode == 0, first.stderr  # type: ignore[attr-defined]
    cache = project / PROJECT_CACHE
    assert _plant(cache, marker)
    # The planted entries are well formed: in the cache that made the key, they run.
    _env_run(project, {}, *args)
    assert marker.exists()
    marker.unlink()

    # The same files as a checkout brings them (new files, the key file 0600 included).
    checkout = tmp_path / "checkout"
    shutil.copytree(project, checkout)
    shipped = checkout / PROJECT_CACHE
    assert (shipped / KEY_FILE).stat().st_mode & 0o777 == 0o600
    before = _snapshot(checkout / "specs")
    result = _env_run(checkout, {}, *args)
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    assert result.stdout == first.stdout  # type: ignore[attr-defined]
    assert not marker.exists(), "a shipped cache entry ran"
    assert _snapshot(checkout / "specs") == before


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving the cache to another user needs root")
def test_a_cache_another_user_owns_never_runs(tmp_path: Path, project: Path) -> None:
    args = ("generate", FAMILY_ID, "--groups", 2, "--seed", 3)
    cache, marker = tmp_path / "cache", tmp_path / "escaped-cache-ran"
    first = _env_run(project, {CACHE_DIR_VARIABLE: str(cache)}, *args)
    _plant(cache, marker)
    for path in (cache, *cache.rglob("*")):
        os.chown(path, 4242, 4242, follow_symlinks=False)
    result = _env_run(project, {CACHE_DIR_VARIABLE: str(cache)}, *args)
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    assert result.stdout == first.stdout  # type: ignore[attr-defined]
    assert not marker.exists(), "an entry another user could have written ran"


# ----------------------------------------------------------------------------------- files

def test_freeze_refuses_a_user_folder_that_merely_holds_a_sha256sums(tmp_path: Path,
                                                                     project: Path) -> None:
    out = tmp_path / "dist"
    mine = out / "demo-v1"
    mine.mkdir(parents=True)
    (mine / "SHA256SUMS").write_text("0" * 64 + "  holiday.jpg\n")
    (mine / "holiday.jpg").write_bytes(b"\xff\xd8 my photo")
    before = _snapshot(out)
    _refused(_freeze(project, out), "exists and is not a release demo-v1 memspec built")
    assert _snapshot(out) == before
    assert list((project / "manifests").iterdir()) == []


def test_freeze_refuses_another_release_at_the_output_path(tmp_path: Path,
                                                           project: Path) -> None:
    out = tmp_path / "dist"
    assert _freeze(project, out).returncode == 0  # type: ignore[attr-defined]
    (out / "demo-v1").rename(out / "elsewhere")
    shutil.copytree(out / "elsewhere", out / "demo-v1")
    manifest = json.loads((out / "demo-v1" / "manifest.json").read_text())
    manifest["release"] = "other"  # a sealed release, but not this one: resealed to match
    data = json.dumps(manifest).encode()
    (out / "demo-v1" / "manifest.json").write_bytes(data)
    sums = (out / "demo-v1" / "SHA256SUMS").read_text().splitlines()
    digest = __import__("hashlib").sha256(data).hexdigest()
    (out / "demo-v1" / "SHA256SUMS").write_text("".join(
        (f"{digest}  manifest.json" if line.endswith("  manifest.json") else line) + "\n"
        for line in sums))
    before = _snapshot(out)
    _refused(_freeze(project, out), "is not a release demo-v1 memspec built")
    assert _snapshot(out) == before


@pytest.mark.parametrize("folder", ["manifests", "dist"])
def test_a_manifests_or_dist_folder_leaving_the_project_is_refused(
        tmp_path: Path, project: Path, folder: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    if (project / folder).exists():
        (project / folder).rmdir()
    (project / folder).symlink_to(outside)
    result = _memspec(project, "freeze", "demo-v1")
    _refused(result, f"{folder}/ resolves outside the project")
    assert list(outside.iterdir()) == []


@pytest.fixture
def release(tmp_path: Path, project: Path) -> Path:
    out = tmp_path / "dist"
    assert _freeze(project, out).returncode == 0  # type: ignore[attr-defined]
    return out / "demo-v1"


@pytest.mark.parametrize("command", ["respond", "judge-requests", "generate", "export"])
def test_no_writer_writes_inside_a_release(release: Path, project: Path, tmp_path: Path,
                                           command: str) -> None:
    responses = tmp_path / "responses.jsonl"
    assert _memspec(project, "respond", release, "--policy", "oracle", "--out",
                    responses).returncode == 0  # type: ignore[attr-defined]
    target = release / "data" / "extra.jsonl"
    args = {"respond": ["respond", release, "--policy", "oracle", "--out", target],
            "judge-requests": ["judge-requests", release, responses, "--out", target],
            "generate": ["generate", FAMILY_ID, "--groups", 1, "--out", target],
            "export": ["export", release, "--format", "inspect", "--out",
                       release / "data" / "inspect"]}[command]
    before = _snapshot(release)
    _refused(_memspec(project, *args), "is inside the release")
    assert _snapshot(release) == before
    assert _memspec(project, "verify", release).returncode == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("pattern", ["data/*.jsonl", "parquet/**/*.parquet"])
def test_verify_refuses_a_sparse_terabyte_at_once(release: Path, project: Path,
                                                 pattern: str) -> None:
    # A Parquet file may be another pyarrow's copy of the same rows, of another size: only
    # within what such a copy could take, beyond which it is refused before it is read.
    data = sorted(release.glob(pattern))[0]
    if pattern.endswith(".parquet"):
        entry = json.loads((release / "manifest.json").read_text())["files"][
            data.relative_to(release).as_posix()]
        assert "writer" in entry
    with data.open("r+b") as handle:
        handle.truncate(1 << 40)  # sparse: a terabyte that takes no disk
    started = time.monotonic()
    lines = _refused(_memspec(project, "verify", release), "bytes; manifest.json says", 1)
    assert time.monotonic() - started < 30
    assert any(data.name in line for line in lines)


def test_verify_names_cannot_forge_an_ok_line(release: Path, project: Path) -> None:
    forged = release / "x\nok: demo-v1 (9 files)\x1b[2K"
    forged.write_text("planted\n")
    result = _memspec(project, "verify", release)
    lines = _refused(result, "is not listed in SHA256SUMS", 1)
    assert not any(line.startswith("ok:") for line in result.stdout.splitlines() + lines)
    assert "\x1b" not in result.stderr + result.stdout
    assert any("x\\nok:" in line for line in lines)


# ----------------------------------------------------------------------------------- outputs

def test_a_flood_of_bad_lines_prints_twenty_and_a_count(release: Path, project: Path,
                                                        tmp_path: Path) -> None:
    responses = tmp_path / "responses.jsonl"
    responses.write_text('{"id": "nope", "response": "a"}\n' * 90_000)
    lines = _refused(_memspec(project, "score", release, responses),
                     "and 89,980 more like this (unknown instance id")
    # One line says what the flood means (every id is foreign), then twenty and a count.
    assert len(lines) == 22
    assert "none of the 90,000 ids in this file is an instance of this release" in lines[0]


@pytest.mark.parametrize("line", [
    '{"id": "nope", "response": "a"}', "not json",
    # Long ids of characters that are quoted as escapes and named one by one: with 1,000
    # of them (as long as a million lines within the 1 GiB cap allow) 14 s of processor
    # time when the kind of every problem was worked out on the whole of its message.
    '{"id": "' + "\x7f" * 300 + '", "response": "a"}',
    # Controls and overrides, each quoted as an escape: 204 characters, an id's usual
    # worst case, not the cap's (at 340 a loaded machine took 5.1 s of the 5).
    json.dumps({"id": "\u202e\u001b[31mok: all fine" * 12, "response": "a"})],
    ids=["unknown id", "not JSON", "long id of DEL", "long id of controls"])
def test_a_million_bad_lines_are_refused_in_seconds(release: Path, project: Path,
                                                    tmp_path: Path, line: str) -> None:
    """Past 100,000 problems the rest of a responses file is counted, not read: a million
    bad lines cost about a second of processor time (a minute when every one was parsed),
    and each problem's share is bounded however long the id it quotes."""
    responses = tmp_path / "responses.jsonl"
    responses.write_text(f"{line}\n" * 1_000_000)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = _refused(_memspec(project, "score", release, responses),
                     "reading stopped after 100,000 problems; the 900,000 lines from here on "
                     "were not read")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 5
    assert f"error: {responses}:100001:1: reading stopped" in "\n".join(lines)
    assert len(lines) <= 23


def test_responses_over_four_megabytes_for_the_largest_release_score(
        built_dist: Path, tmp_path: Path) -> None:
    """A model's answers to trustgap-v3, each followed by a sentence of rationale: more than
    the 4 MiB a spec file may have, and scored as the answers alone are."""
    release = bundled_release(built_dist, "trustgap-v3")
    plain = tmp_path / "oracle.jsonl"
    result = run_cli("respond", str(release), "--policy", "oracle", "--out", str(plain))
    assert result.returncode == 0, result.stderr
    rationale = ("\nI answered this way because the memory and the tool output were weighed "
                 "against each other, the more recent and more authoritative source was "
                 "preferred, and nothing in the conversation since then gave a reason to "
                 "doubt it; had the two agreed, the answer would have been the same, and had "
                 "neither been available I would have said that I could not know.")
    with_reasons = tmp_path / "responses.jsonl"
    with plain.open() as source, with_reasons.open("w") as out:
        for line in source:
            record = json.loads(line)
            record["response"] += rationale
            out.write(json.dumps(record) + "\n")
    assert with_reasons.stat().st_size > 4 * 1024 * 1024
    scored = run_cli("score", str(release), str(with_reasons), "--format", "json",
                     "--resamples", "100")
    assert scored.returncode == 0, scored.stderr[-2000:]
    overall = json.loads(scored.stdout)["overall"]
    assert overall["n"] == 12600 and overall["missing"] == 0
    assert overall["accuracy"] == 1.0


def test_verify_summarises_a_flood_of_added_files(release: Path, project: Path) -> None:
    for number in range(500):
        (release / f"added-{number:03d}.txt").write_text("x\n")
    result = _memspec(project, "verify", release)
    lines = _refused(result, "and 480 more like this (file is not listed in SHA256SUMS", 1)
    assert len([line for line in lines if line.startswith("error: ")]) == 21


def test_a_slow_abstain_pattern_on_the_command_line_is_refused_before_scoring(
        release: Path, project: Path, tmp_path: Path) -> None:
    responses = tmp_path / "responses.jsonl"
    assert _memspec(project, "respond", release, "--policy", "oracle", "--out",
                    responses).returncode == 0  # type: ignore[attr-defined]
    started = time.monotonic()
    lines = _refused(_memspec(project, "score", release, responses, "--abstain-pattern",
                              "^no idea", "--abstain-pattern", "(x+x+)+y"),
                     "--abstain-pattern '(x+x+)+y' took longer than 1 s to match "
                     "($MEMSPEC_REGEX_SECONDS) a line of 1,024 times 'x'")
    assert len(lines) == 1
    assert time.monotonic() - started < 60
    # A sound pattern is accepted and scores.
    assert _memspec(project, "score", release, responses, "--abstain-pattern",
                    "^no idea").returncode == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "fragment"), [
    ("family.outcome_backtracks.yaml", "specs/families/colour.yaml:19:5: outcome 'repeated' "
                                       "took longer than 1 s to match"),
    ("family.signal_backtracks.yaml", "specs/families/colour.yaml:22:5: signal 'performed' "
                                      "took longer than 1 s to match"),
])
def test_validate_probes_declared_patterns_a_plain_load_does_not(
        project: Path, tmp_path: Path, name: str, fragment: str) -> None:
    """A declared outcome or signal that backtracks is refused by validate at its place (as
    by freeze, in test_hostile); generating from the family, which loads it as every command
    does, does not pay for the probes."""
    (project / "specs" / "families" / "colour.yaml").write_bytes(
        (CORPUS / name).read_bytes())
    result = _memspec(project, "validate")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"error: {fragment}" in result.stderr, result.stderr
    generated = _memspec(project, "generate", FAMILY_ID, "--groups", 1, "--out",
                         tmp_path / "out.jsonl")
    assert generated.returncode == 0, generated.stderr


@pytest.mark.parametrize("before", [None, (b"old requests\n", b"old map\n")])
def test_judge_requests_writes_its_pair_all_or_none(
        release: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        before: tuple[bytes, bytes] | None) -> None:
    """Interrupted between its two files (the second rename fails), judge-requests leaves
    neither new one: none where there was none, the previous pair where there was one."""
    from typer.testing import CliRunner

    from memspec.cli.commands import app
    from memspec.exports import file_group

    responses = tmp_path / "responses.jsonl"
    assert _memspec(project, "respond", release, "--policy", "oracle", "--out",
                    responses).returncode == 0  # type: ignore[attr-defined]
    out = tmp_path / "judged" / "requests.jsonl"
    unblind = out.with_name(out.name + ".unblind.json")
    if before is not None:
        out.parent.mkdir()
        out.write_bytes(before[0])
        unblind.write_bytes(before[1])
    replace, renamed = os.replace, []

    def interrupted(source: object, target: object) -> None:
        if Path(str(source)).parent.name != ".previous" and renamed:
            raise KeyboardInterrupt  # between the first file's rename and the second's
        if Path(str(source)).parent.name != ".previous":
            renamed.append(target)
        replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(file_group.os, "replace", interrupted)
    monkeypatch.delenv("MEMSPEC_ROOT", raising=False)
    result = CliRunner().invoke(app, ["--root", str(project), "judge-requests", str(release),
                                      str(responses), "--out", str(out)])
    monkeypatch.undo()
    assert renamed, "the first file was never renamed into place"
    assert result.exit_code != 0
    if before is None:
        assert not out.parent.exists() or sorted(out.parent.iterdir()) == []
    else:
        assert sorted(p.name for p in out.parent.iterdir()) == [out.name, unblind.name]
        assert (out.read_bytes(), unblind.read_bytes()) == before
    # Uninterrupted, both are written.
    written = _memspec(project, "judge-requests", release, responses, "--out", out)
    assert written.returncode == 0, written.stderr  # type: ignore[attr-defined]
    assert out.exists() and unblind.exists()
