"""A project of one's own: `memspec init`, finding the project by its marker, the library of
bundled paradigms, pools and templates named `memspec:...`, and no command writing outside
the project or its --out."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_cli, tree_bytes

#: A cache folder (compiled code) nobody else reads here; off, so nothing at all is written.
NO_CACHE = {"MEMSPEC_CACHE_DIR": ""}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _everything(folder: Path) -> dict[str, bytes]:
    """Every file and folder under ``folder`` (folders as b"<dir>"), by relative path."""
    return {**{p.relative_to(folder).as_posix(): b"<dir>"
               for p in folder.rglob("*") if p.is_dir()}, **tree_bytes(folder)}


def _bundled() -> dict[str, bytes]:
    return {name: data for part in ("specs", "templates", "manifests")
            for name, data in tree_bytes(REPO / part).items()}


def test_init_makes_a_project_and_never_overwrites(tmp_path: Path) -> None:
    result = run_cli("init", "my-bench", cwd=tmp_path, env=NO_CACHE)
    assert result.returncode == 0, result.stderr
    root = tmp_path / "my-bench"
    for folder in ("specs/families", "specs/paradigms", "specs/pools", "specs/releases",
                   "specs/exports", "templates", "manifests"):
        assert (root / folder).is_dir(), folder
    marker = (root / "memspec.yaml").read_text()
    assert "project: my_bench" in marker and "memspec_version:" in marker
    assert {"/dist/", "/.memspec_cache/"} <= set((root / ".gitignore").read_text().splitlines())
    readme = (root / "README.md").read_text()
    assert "memspec build" in readme and "memspec verify" in readme
    # Every bundled paradigm is listed by its library name (read from the library's files).
    for path in sorted((REPO / "specs" / "paradigms").rglob("*.yaml")):
        paradigm = next(line.split(":", 1)[1].strip() for line in path.read_text().splitlines()
                        if line.startswith("paradigm:"))
        assert f"`memspec:{paradigm}`" in readme

    (root / "README.md").write_text("mine\n")
    (root / "specs" / "exports" / ".gitkeep").unlink()
    before = _everything(root)
    again = run_cli("init", str(root), cwd=tmp_path, env=NO_CACHE)
    assert again.returncode == 0, again.stderr
    assert "nothing written" in again.stdout
    assert _everything(root) == before

    # A folder with files in it that is not a project is refused, and left as it was.
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("x\n")
    refused = run_cli("init", str(other), cwd=tmp_path, env=NO_CACHE)
    assert refused.returncode == 2
    assert "not empty and is not a memspec project" in refused.stderr
    assert _everything(other) == {"todo.txt": b"x\n"}


def test_outside_a_project_a_command_says_so_and_suggests_init(tmp_path: Path) -> None:
    # Not the checkout memspec runs from, whatever the install: a folder with no marker above.
    for args in (["validate"], ["show", "example.choice.meeting_room"],
                 ["new", "mine.area.x", "--paradigm", "memspec:example.procedural"]):
        result = run_cli(*args, cwd=tmp_path, env=NO_CACHE)
        assert result.returncode == 2, (args, result.stderr)
        assert "no memspec project" in result.stderr and "memspec init" in result.stderr
    assert list(tmp_path.iterdir()) == []
    # specs/ and templates/ without the marker are no project either (when not named).
    (tmp_path / "specs").mkdir()
    (tmp_path / "templates").mkdir()
    assert run_cli("validate", cwd=tmp_path, env=NO_CACHE).returncode == 2
    # The project is found from a folder below its root.
    assert run_cli("init", str(tmp_path / "p"), cwd=tmp_path, env=NO_CACHE).returncode == 0
    below = tmp_path / "p" / "specs" / "families"
    result = run_cli("validate", cwd=below, env=NO_CACHE)
    assert result.returncode == 0, result.stderr
    assert "0 families" in result.stdout


def _user_project(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    assert run_cli("init", str(root), cwd=tmp_path, env=NO_CACHE).returncode == 0
    return root


def test_a_library_family_records_the_library_items_it_used(tmp_path: Path) -> None:
    root = _user_project(tmp_path)
    # A file of the project at the library item's path is not the library item: only the
    # memspec: name reaches the library.
    decoy = root / "specs" / "pools" / "implicitmem" / "interference_qa.yaml"
    decoy.parent.mkdir(parents=True)
    decoy.write_text("pool: decoy\ndescription: not the library's\nitems: [a]\n")
    new = run_cli("new", "bench.rules.order_ref", "--paradigm", "memspec:implicitmem.procedural",
                  cwd=root, env=NO_CACHE)
    assert new.returncode == 0, new.stderr
    family = (root / "specs/families/bench/rules/order_ref.yaml").read_text()
    assert "paradigm: memspec:implicitmem.procedural" in family
    assert "from: memspec:pools/implicitmem/interference_qa.yaml" in family
    assert "interference: memspec:implicitmem/qa_turns.j2" in family
    (root / "specs/releases/bench-v1.yaml").write_text(
        "name: bench\nversion: v1\nseed: 11\ndescription: a rule after fifteen turns\n"
        "license: CC-BY-4.0\nfamilies:\n  - {family: bench.rules.order_ref, groups: 6}\n")
    freeze = run_cli("freeze", "specs/releases/bench-v1.yaml", cwd=root, env=NO_CACHE)
    assert freeze.returncode == 0, freeze.stderr
    manifest = json.loads((root / "manifests" / "bench-v1.json").read_text())
    library = {name: digest for name, digest in manifest["inputs"].items()
               if name.startswith("memspec:")}
    assert library == {
        f"memspec:{path}": _sha256(REPO / path) for path in (
            "specs/paradigms/implicitmem/procedural.yaml",
            "specs/pools/implicitmem/interference_qa.yaml",
            "templates/implicitmem/qa_turns.j2")}
    assert "specs/pools/implicitmem/interference_qa.yaml" not in manifest["inputs"]
    # Rebuilt byte for byte in another folder (a clone of the project elsewhere).
    clone = tmp_path / "elsewhere" / "bench"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns("dist"))
    build = run_cli("build", "--out", str(tmp_path / "rebuilt"), cwd=clone, env=NO_CACHE)
    assert build.returncode == 0, build.stderr
    assert tree_bytes(tmp_path / "rebuilt" / "bench-v1") == tree_bytes(root / "dist/bench-v1")


def test_a_changed_library_item_is_named_when_a_release_rebuilds(tmp_path: Path) -> None:
    root = _user_project(tmp_path)
    assert run_cli("new", "bench.rules.order_ref", "--paradigm",
                   "memspec:implicitmem.procedural", cwd=root, env=NO_CACHE).returncode == 0
    (root / "specs/releases/bench-v1.yaml").write_text(
        "name: bench\nversion: v1\nseed: 11\ndescription: a rule after fifteen turns\n"
        "license: CC-BY-4.0\nfamilies:\n  - {family: bench.rules.order_ref, groups: 4}\n")
    assert run_cli("freeze", "specs/releases/bench-v1.yaml", cwd=root,
                   env=NO_CACHE).returncode == 0
    # Another copy of memspec whose library item differs: the manifest's hash tells.
    path = root / "manifests" / "bench-v1.json"
    manifest = json.loads(path.read_text())
    manifest["inputs"]["memspec:templates/implicitmem/qa_turns.j2"] = "0" * 64
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    build = run_cli("build", "--out", str(tmp_path / "rebuilt"), cwd=root, env=NO_CACHE)
    assert build.returncode == 1
    assert "memspec:templates/implicitmem/qa_turns.j2" in build.stderr


def test_build_bundled_builds_a_bundled_release_from_anywhere(tmp_path: Path,
                                                               built_example: Path) -> None:
    bundled = _bundled()
    out = tmp_path / "out"
    result = run_cli("build", "--bundled", built_example.name, "--out", str(out),
                     cwd=tmp_path, env=NO_CACHE)
    assert result.returncode == 0, result.stderr
    assert "verified" in result.stdout
    assert tree_bytes(out / built_example.name) == tree_bytes(built_example)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert _bundled() == bundled
    missing = run_cli("build", "--bundled", cwd=tmp_path, env=NO_CACHE)
    assert missing.returncode == 2 and "--out" in missing.stderr


def _commands(rel: str, resp: str, scores: str) -> list[tuple[list[str], list[str]]]:
    """Every command, with arguments that make it do its work, and the outputs it may write
    (relative to the working folder)."""
    return [
        (["validate"], []),
        (["new", "mine.area.x", "--paradigm", "memspec:example.procedural"], []),
        (["generate", "example.choice.meeting_room", "--out", "o/gen.jsonl"], ["o/gen.jsonl"]),
        (["show", "example.choice.meeting_room"], []),
        (["preview", "example.choice.meeting_room", "--out", "o/preview.html"],
         ["o/preview.html"]),
        (["freeze", "example-v1", "--out", "o/frozen"], ["o/frozen"]),
        (["merge", "o/shards", "--out", "o/merged"], ["o/merged"]),
        (["build", "--out", "o/built"], ["o/built"]),
        (["pool", "first_name", "--count", "3", "--out", "o/pool.yaml"], ["o/pool.yaml"]),
        (["verify", rel], []),
        (["respond", rel, "--policy", "oracle", "--out", "o/oracle.jsonl"],
         ["o/oracle.jsonl"]),
        (["score", rel, resp, "--format", "json"], []),
        (["normalize", rel, "a=offline.jsonl", "b=offline.jsonl", "--allow-missing",
          "--format", "json"], []),
        (["audit", rel], []),
        (["report", rel, "--out", "o/report.html"], ["o/report.html"]),
        (["judge-requests", rel, resp, "--out", "o/judge.jsonl"],
         ["o/judge.jsonl", "o/judge.jsonl.unblind.json", "o/judge.jsonl.sha256"]),
        (["rho-star", f"a={scores}", "--where", "family=example.choice.meeting_room"], []),
        (["export", rel, "--format", "inspect", "--out", "o/inspect"], ["o/inspect"]),
        (["init", "o/project"], ["o/project"]),
        (["check-answer", "example.choice.meeting_room", "B"], []),
        (["run", rel, "--model", "mockllm/model", "--limit", "2", "--display", "none",
          "--log-dir", "o/runs"], ["o/runs"]),
    ]


def test_no_command_writes_outside_its_project_or_out(tmp_path: Path, built_example: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Run from a folder that is no project: a command that needs one refuses (exit 2) and
    # writes nothing; one that reads a release folder writes only its --out. No cache folder
    # is named, so the default is what is tested: no project, no cache.
    work = tmp_path / "work"
    home = tmp_path / "home"
    home.mkdir()
    rel = work / "downloaded" / built_example.name
    shutil.copytree(built_example, rel)
    responses = run_cli("respond", str(rel), "--policy", "oracle", cwd=tmp_path, env=NO_CACHE)
    (work / "responses.jsonl").write_text(responses.stdout)
    # normalize scores offline only what needs no judge: the priming family's replies left out.
    (work / "offline.jsonl").write_text("".join(
        line + "\n" for line in responses.stdout.splitlines() if ".priming." not in line))
    scores = run_cli("score", str(rel), str(work / "responses.jsonl"), "--format", "json",
                     "--by", "family", cwd=tmp_path, env=NO_CACHE)
    (work / "scores.json").write_text(scores.stdout)
    bundled = _bundled()
    monkeypatch.delenv("MEMSPEC_CACHE_DIR", raising=False)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    needs_project = {"validate", "new", "generate", "show", "preview", "freeze", "merge",
                     "build", "pool", "check-answer"}
    ran = set()
    for args, outputs in _commands(f"downloaded/{built_example.name}", "responses.jsonl",
                                   "scores.json"):
        (work / "o").mkdir()  # where the --out of each command goes
        before = _everything(tmp_path)
        result = run_cli(*args, cwd=work, env=env)
        after = _everything(tmp_path)
        written = {name for name in after if before.get(name) != after[name]}
        allowed = {f"work/{out}" for out in outputs}
        if args[0] == "run":
            # inspect_ai's own data folder: its traces and the buffer of samples it recovers
            # a crashed run from (inspect's, as the run's logs are).
            allowed.add("home/.local/share/inspect_ai")
        # The folders made on the way to an allowed one, themselves only.
        on_the_way = {parent.as_posix() for a in allowed for parent in Path(a).parents}
        outside = {name for name in written if name not in on_the_way
                   and not any(name == a or name.startswith(a + "/") for a in allowed)}
        assert not outside, (args, sorted(outside))
        assert not set(before) - set(after), args
        if args[0] in needs_project:
            assert result.returncode == 2, (args, result.stderr)
            assert "no memspec project" in result.stderr, args
        else:
            assert result.returncode == 0, (args, result.stderr)
            assert all(f"work/{out}" in written for out in outputs), args
        if args[0] == "run":
            # inspect's data folder, and nothing else, was made in the home folder: set
            # aside, so that the home is found empty at the end as every other command left it.
            made = sorted(p.relative_to(home).as_posix() for p in home.rglob("*")
                          if not p.is_relative_to(home / ".local/share/inspect_ai"))
            assert made == [".local", ".local/share"], made
            shutil.rmtree(home / ".local")
        ran.add(args[0])
        shutil.rmtree(work / "o")
    assert _bundled() == bundled
    assert list(home.iterdir()) == []
    # Every command of the CLI was run.
    from memspec.cli.commands import app
    names = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    assert ran == {n.removesuffix("-cmd") for n in names}


@pytest.mark.parametrize("value", ["memspec:nothing.here", "memspec:example"])
def test_an_unknown_library_paradigm_is_named(tmp_path: Path, value: str) -> None:
    root = _user_project(tmp_path)
    result = run_cli("new", "bench.area.x", "--paradigm", value, cwd=root, env=NO_CACHE)
    assert result.returncode == 2
    assert f"unknown paradigm {value!r}" in result.stderr
    assert not (root / "specs/families/bench").exists()


def test_library_names_stay_inside_the_library(tmp_path: Path) -> None:
    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    project = Project(_user_project(tmp_path))
    library_pool = project.resolve_inside(project.specs,
                                          "memspec:pools/implicitmem/interference_qa.yaml",
                                          "pool")
    assert library_pool.read_bytes() == (
        REPO / "specs/pools/implicitmem/interference_qa.yaml").read_bytes()
    assert project.display(library_pool) == "memspec:specs/pools/implicitmem/interference_qa.yaml"
    assert project.path_of(project.display(library_pool)) == library_pool
    for escape in ("memspec:../pyproject.toml", "memspec:/etc/passwd",
                   "memspec:../templates/implicitmem/qa_turns.j2"):
        with pytest.raises(SpecError, match="must stay inside"):
            project.resolve_inside(project.specs, escape, "pool")
    # A library template that includes, imports or extends another by name means the
    # library's; a project's template means the project's (or the library's by its name).
    env = Renderer(project).env
    assert env.join_path("implicitmem/qa_turns.j2", "memspec:templates/implicitmem/x.j2") \
        == "memspec:implicitmem/qa_turns.j2"
    assert env.join_path("mine/a.j2", "templates/mine/b.j2") == "mine/a.j2"
    assert env.join_path("memspec:implicitmem/qa_turns.j2", "templates/mine/b.j2") \
        == "memspec:implicitmem/qa_turns.j2"


def test_a_projects_code_cache_is_kept_inside_it(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # By default compiled templates are kept in the project (as .ruff_cache is), private to
    # this user, and ignored by the project's git; nothing is written to the home folder.
    monkeypatch.delenv("MEMSPEC_CACHE_DIR", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    root = tmp_path / "bench"
    assert run_cli("init", str(root), cwd=tmp_path, env=env).returncode == 0
    assert "/.memspec_cache/" in (root / ".gitignore").read_text().splitlines()
    made = run_cli("new", "bench.area.x", "--paradigm", "memspec:example.procedural",
                   cwd=root, env=env)
    assert made.returncode == 0, made.stderr
    first = run_cli("show", "bench.area.x", "--group", "0", cwd=root, env=env)
    assert first.returncode == 0, first.stderr
    cache = root / ".memspec_cache"
    entries = [p for p in cache.rglob("*") if p.is_file() and p.name != "key"]
    assert entries, "nothing was cached"
    assert cache.stat().st_mode & 0o777 == 0o700
    assert (cache / "key").stat().st_mode & 0o777 == 0o600
    assert list(home.iterdir()) == []
    # The cache changes no output, and a second run adds no entry.
    again = run_cli("show", "bench.area.x", "--group", "0", cwd=root, env=env)
    assert again.stdout == first.stdout
    assert sorted(p for p in cache.rglob("*") if p.is_file() and p.name != "key") == \
        sorted(entries)


@pytest.mark.parametrize(("made_with", "warned"), [
    ("0.0.1", False), ("0.1", False), ("999.0.0", True), ("0.1.0rc1", False)])
def test_a_project_made_with_a_newer_memspec_is_said_once(tmp_path: Path, made_with: str,
                                                         warned: bool) -> None:
    root = _user_project(tmp_path)
    marker = root / "memspec.yaml"
    marker.write_text(f"project: bench\nmemspec_version: '{made_with}'\n")
    result = run_cli("validate", cwd=root, env=NO_CACHE)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(f"made with memspec {made_with}, newer") == int(warned)


@pytest.mark.parametrize(("text", "where"), [
    ("project: bench\nmemspec_version: [1]\n", ":2:"), ("- a list\n", ":1:"),
    ("project: bench\nmemspec_version: 'latest'\n", ":2:")])
def test_a_malformed_project_marker_is_refused_where_it_is(tmp_path: Path, text: str,
                                                          where: str) -> None:
    root = _user_project(tmp_path)
    (root / "memspec.yaml").write_text(text)
    result = run_cli("validate", cwd=root, env=NO_CACHE)
    assert result.returncode == 2
    assert f"memspec.yaml{where}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_repository_rebuilds_its_releases_whichever_memspec_builds_it(
        tmp_path: Path) -> None:
    # A copy of the repository (its marker says it is the library) built by a memspec that
    # runs from another folder: a release whose paradigm names library items as memspec:
    # records them as the repository's own files, as when the repository builds itself, so
    # the committed manifest verifies.
    copy = tmp_path / "repository"
    for name in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / name, copy / name)
    shutil.copy(REPO / "memspec.yaml", copy / "memspec.yaml")
    manifest = json.loads((REPO / "manifests" / "memorychecks-v4.json").read_text())
    paradigm = (REPO / "specs/paradigms/memorychecks/v4/life_document.yaml").read_text()
    assert "memspec:pools/" in paradigm and not any(
        name.startswith("memspec:") for name in manifest["inputs"])
    build = run_cli("build", "memorychecks-v4", "--out", str(tmp_path / "dist"), cwd=copy,
                    env=NO_CACHE)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "verified" in build.stdout
    # Without the declaration the copy is a project of its own that uses the library.
    (copy / "memspec.yaml").write_text("project: memspec\n")
    again = run_cli("build", "memorychecks-v4", "--out", str(tmp_path / "dist2"), cwd=copy,
                    env=NO_CACHE)
    assert again.returncode != 0
    assert "memspec:specs/pools/" in again.stdout + again.stderr


@pytest.mark.parametrize("value", ["'yes'", "1", "[true]"])
def test_a_library_declaration_that_is_not_a_boolean_is_refused(tmp_path: Path,
                                                                 value: str) -> None:
    root = _user_project(tmp_path)
    (root / "memspec.yaml").write_text(f"project: bench\nlibrary: {value}\n")
    result = run_cli("validate", cwd=root, env=NO_CACHE)
    assert result.returncode == 2
    assert "memspec.yaml:2:" in result.stderr and "library must be true or false" in \
        result.stderr, result.stderr


def _exported_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_an_export_format_of_the_library_is_found_by_its_plain_name(tmp_path: Path,
                                                                    built_dist: Path) -> None:
    # A project of one's own exports into the layouts that ship with memspec by their plain
    # names (as the docs write them) and by their library names.
    root = _user_project(tmp_path)
    built_example = built_dist / "example-v1"
    feedback = built_dist / "feedback-v3"
    for name in ("memspec:memorybench", "memorybench"):
        exported = run_cli("export", str(feedback), "--format", name, "--out",
                           str(tmp_path / name), cwd=root, env=NO_CACHE)
        assert exported.returncode == 0, exported.stderr
    written = "\n".join(_exported_files(tmp_path / "memorybench"))
    families = json.loads((feedback / "manifest.json").read_text())["counts"]["families"]
    assert all(family.rsplit(".", 1)[1] in written for family in families), written
    assert tree_bytes(tmp_path / "memorybench") == tree_bytes(tmp_path / "memspec:memorybench")
    unknown = run_cli("export", str(built_example), "--format", "nothing", "--out",
                      str(tmp_path / "x"), cwd=root, env=NO_CACHE)
    assert unknown.returncode == 2
    assert "memspec:memorybench" in unknown.stderr and "memspec:implicitmembench" in \
        unknown.stderr
    assert not (tmp_path / "x").exists()


def test_a_projects_own_export_format_comes_before_the_librarys(tmp_path: Path,
                                                                 built_dist: Path) -> None:
    # The project declares a format of the same name: the plain name is the project's,
    # memspec:NAME still the library's.
    root = _user_project(tmp_path)
    (root / "specs" / "exports").mkdir(parents=True, exist_ok=True)
    (root / "specs" / "exports" / "mine.yaml").write_text(
        "export: memorybench\nversion: 1\ndescription: one file per family\nparadigms:\n"
        "  feedback.session:\n    path: \"mine/{{ family }}.json\"\n"
        "    record: {id: \"instance.id\"}\n    file: {ids: \"records\"}\n")
    feedback = built_dist / "feedback-v3"
    for name in ("memorybench", "memspec:memorybench"):
        result = run_cli("export", str(feedback), "--format", name, "--out",
                         str(tmp_path / name), cwd=root, env=NO_CACHE)
        assert result.returncode == 0, result.stderr
    families = json.loads((feedback / "manifest.json").read_text())["counts"]["families"]
    assert _exported_files(tmp_path / "memorybench") == sorted(
        f"mine/{family}.json" for family in families)
    assert "configs/datasets/each.json" in _exported_files(tmp_path / "memspec:memorybench")


@pytest.mark.parametrize("name", ["memorybench", "memspec:memorybench"])
def test_a_downloaded_release_exports_outside_any_project(tmp_path: Path, built_dist: Path,
                                                          name: str) -> None:
    # A release folder on its own, no project around it: the library's formats, as in a
    # project, and the same bytes.
    downloaded = tmp_path / "downloads" / "feedback-v3"
    shutil.copytree(built_dist / "feedback-v3", downloaded)
    result = run_cli("export", "feedback-v3", "--format", name, "--out", "mb",
                     cwd=downloaded.parent, env=NO_CACHE)
    assert result.returncode == 0, result.stderr
    in_project = tmp_path / "in-project"
    root = _user_project(tmp_path)
    assert run_cli("export", str(downloaded), "--format", "memorybench", "--out",
                   str(in_project), cwd=root, env=NO_CACHE).returncode == 0
    assert tree_bytes(downloaded.parent / "mb") == tree_bytes(in_project)
    assert sorted(p.name for p in downloaded.parent.iterdir()) == ["feedback-v3", "mb"]


def test_a_missing_release_folder_gets_a_hint(tmp_path: Path, built_dist: Path) -> None:
    root = _user_project(tmp_path)
    shutil.copytree(built_dist / "example-v1", root / "dist" / "example-v1")
    for given in ("dist/example-v9", "example-v9"):
        result = run_cli("export", given, "--format", "inspect", "--out", str(tmp_path / "o"),
                         cwd=root, env=NO_CACHE)
        assert result.returncode == 2 and "dist/dist" not in result.stderr, result.stderr
        assert f"no built release at {given}" in result.stderr
        assert "built in dist/: example-v1" in result.stderr and "memspec build" in \
            result.stderr
    assert not (tmp_path / "o").exists()
