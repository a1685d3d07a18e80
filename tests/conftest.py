"""Shared helpers: run the CLI in a subprocess, copy the bundled project to a temporary folder."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from memspec.core.code_cache import CACHE_DIR_VARIABLE

REPO = Path(__file__).resolve().parent.parent

# Compiled code is cached in the checkout while testing, not in the user's cache: the suite's
# many memspec processes then compile each template once, and a test run leaves nothing
# outside the tree. The cache's own tests give each of theirs a folder of its own.
os.environ.setdefault(CACHE_DIR_VARIABLE, str(REPO / ".pytest_cache" / "memspec-code"))


def run_cli(*args: str, root: Path | None = None, env: dict[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 300,
            umask: int = -1) -> subprocess.CompletedProcess[str]:
    """Run ``memspec ARGS`` in a fresh interpreter, with no standard input (and ``umask``,
    unless -1)."""
    command = [sys.executable, "-m", "memspec.cli"]
    if root is not None:
        command += ["--root", str(root)]
    full_env = {k: v for k, v in os.environ.items() if k != "MEMSPEC_ROOT"}
    full_env.update(env or {})
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=full_env, cwd=cwd or REPO,
                          umask=umask)


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes, by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _version_key(stem: str) -> tuple[str, tuple[int, ...]]:
    name, _, version = stem.rpartition("-v")
    return name, tuple(int(part) for part in version.split("."))


#: Every bundled release by <name>-<version>, and the newest version of each name (later
#: versions of a release hold the same data as the earlier ones unless they say otherwise, so
#: the slow whole-release checks run on the newest only).
ALL_RELEASES = sorted((p.stem for p in (REPO / "specs" / "releases").glob("*.yaml")),
                      key=_version_key)
LATEST_RELEASES = sorted({_version_key(stem)[0]: stem for stem in ALL_RELEASES}.values())


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's chromium, headless, driven by Playwright (the pages' tests open them in it)."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "chromium is missing: apt-get install -y chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def clean_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a virtual environment in which memspec cannot be imported: run
    isolated (``-I``, see ``run_clean``), it reaches the machine's third-party packages
    through a plain path entry, which runs none of their ``.pth`` hooks, so memspec's
    editable install is not seen (test_consumer checks that it is not)."""
    venv = tmp_path_factory.mktemp("consumer-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Plain path entries (this interpreter's site folders, a virtual environment's and the
    # system's it may see): their own .pth files (memspec's editable hook) are not run.
    Path(purelib, "machine_packages.pth").write_text(
        "".join(f"{folder}\n" for folder in site.getsitepackages() if Path(folder).is_dir()))
    return python


def run_clean(python: Path, args: list[str], cwd: Path, home: Path,
              timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """Run ``python -I ARGS`` (the ``clean_python`` fixture's interpreter) offline, with no
    PYTHONPATH, no project and ``home`` as its home (so that loaders cache nothing of the
    user's)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MEMSPEC_ROOT", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
               HOME=str(home), HF_HOME=str(home / "hf"))
    return subprocess.run([str(python), "-I", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled project (specs, templates, manifests)."""
    root = tmp_path / "project"
    for name in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / name, root / name)
    return root


def make_gold_first_release(project: Path, name: str = "flawed") -> Path:
    """In ``project`` (a copy of the bundled one), the example's meeting-room family without
    its rotations (the right room always comes first, which the audit's position prior
    beats) and a release ``NAME-v1`` of 30 groups of it: the release file's path."""
    family = project / "specs/families/example/meeting_room.yaml"
    text = family.read_text()
    text = text.replace("""      rotation:
        values: [r0, r1, r2]
        transform: {name: rotate, args: {slot: options}}
""", "")
    text = text[:text.index("checks:")].replace('  evidence: "{{ current }}"\n', "")
    family.write_text(text)
    release = project / f"specs/releases/{name}-v1.yaml"
    release.write_text(f"name: {name}\nversion: v1\nseed: 3\ndescription: gold first\n"
                       "families:\n  - family: example.choice.meeting_room\n    groups: 30\n")
    return release


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str,
              make: Callable[[Path], str]) -> Path:
    """The folder ``name`` that ``make(folder)`` fills once per test run, whichever worker
    asks first (the others wait for it: under pytest-xdist every worker has its own session,
    but they share the parent of their temporary folders); what ``make`` returns is kept in
    ``<name>.ok`` beside it. Tests only read the folder (copy it to change it)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out, done = shared / name, shared / f"{name}.ok"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            done.write_text(make(out))
    return out


def _build_all(out: Path) -> str:
    # Two worker processes: the other test workers mostly wait for this build.
    result = run_cli("build", "--all", "--out", str(out), "--workers",
                     str(min(2, os.cpu_count() or 1)), timeout=1800)
    assert result.returncode == 0, result.stderr
    return result.stdout  # the table of releases build verified


@pytest.fixture(scope="session")
def built_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled release, every version, built and verified byte for byte against its
    committed manifest once per test run with ``memspec build --all``."""
    return made_once(tmp_path_factory, "built-dist", _build_all)


#: A release of families of every kind (a procedural rule, a paired priming design, option
#: rotations, feedback logs with splits, distractors), frozen now: so in the newest layout.
TYPED_MIX = """\
name: mix
version: v1
seed: 7
published: "2026-12-01"
description: families of every kind, in the newest layout
license: CC-BY-4.0
subsets: [domain]
families:
  - {family: example.procedural.reversed_copy, groups: 4, fields: {domain: none}}
  - {family: example.priming.harbour_fog, groups: 4, fields: {domain: none}}
  - {family: example.choice.meeting_room, groups: 4, fields: {domain: none}}
  - family: feedback.declarative.trip_plan
    groups: 8
    splits: {train: 6, test: 2}
    disjoint: [task]
    fields: {domain: open_domain, format: LiLo}
  - family: feedback.procedural.yes_no_first
    groups: 8
    splits: {train: 6, test: 2}
    disjoint: [task]
    fields: {domain: legal, format: SiSo}
  - {family: trustgap.memory_trust.airline, groups: 4, fields: {domain: none}}
  - {family: memorychecks.binding.topic_partner, groups: 4, fields: {domain: none}}
  - {family: feedback.declarative.clause_pack, groups: 4, splits: {train: 3, test: 1},
     fields: {domain: legal}}
"""


def freeze_mix(base: Path) -> Path:
    """TYPED_MIX frozen now (so in the newest layout) in a copy of the project under
    ``base``; the release folder."""
    project = base / "project"
    for name in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / name, project / name)
    (project / "specs" / "releases" / "mix-v1.yaml").write_text(TYPED_MIX)
    result = run_cli("freeze", "mix-v1", "--out", str(base / "out"),
                     "--allow-audit-failures", root=project)
    assert result.returncode == 0, result.stderr
    release = base / "out" / "mix-v1"
    assert json.loads((release / "manifest.json").read_text())["manifest_version"] >= 4
    return release


@pytest.fixture(scope="session")
def typed_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TYPED_MIX frozen once per test run (read only: copy it to change it)."""
    return made_once(tmp_path_factory, "typed-mix", lambda out: str(freeze_mix(out))) \
        / "out" / "mix-v1"


def bundled_release(built_dist: Path, name: str) -> Path:
    """A bundled release from the session build (skips while its release file is absent)."""
    if not (REPO / "specs" / "releases" / f"{name}.yaml").exists():
        pytest.skip(f"{name} is not bundled yet")
    path = built_dist / name
    assert path.exists(), f"{name} was not built"
    return path


def bundled_releases(built_dist: Path, *names: str) -> Path:
    """The session build's folder, once every named bundled release is found in it (built
    and verified by ``built_dist``: read only)."""
    for name in names:
        bundled_release(built_dist, name)
    return built_dist


_READ_CROISSANT = """
import json, sys
import mlcroissant as mlc

def plain(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, dict):
        return {k.rsplit("/", 1)[1]: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value

ds = mlc.Dataset(jsonld=sys.argv[1])
out = {rs.name: [plain(r) for r in ds.records(record_set=rs.uuid)]
       for rs in ds.metadata.record_sets if not rs.name.endswith(tuple(sys.argv[2:]))}
print(json.dumps(out))
"""


def mlcroissant_records(release: Path, *skip_suffixes: str) -> dict[str, list[dict[str, Any]]]:
    """Every record of every record set of a release's croissant.json as mlcroissant reads
    them (in a process of its own), keys shortened to field names; record sets whose name
    ends with one of ``skip_suffixes`` are not read."""
    result = subprocess.run([sys.executable, "-c", _READ_CROISSANT, "croissant.json",
                             *skip_suffixes], cwd=release, capture_output=True, text=True,
                            timeout=900, stdin=subprocess.DEVNULL, env={**os.environ})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def analysis_leaves(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every scalar and non-empty list of scalars of an analysis object, at any depth, by its
    keys joined with ``_`` (a dot in a key too): what croissant.json describes of it from
    layout 9. A list of objects is left out (a top-level one is a repeated field of its
    own)."""
    found: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key.replace('.', '_')}"
        if isinstance(item, dict):
            found.update(analysis_leaves(item, f"{name}_"))
        elif isinstance(item, list) and (not item or any(isinstance(v, dict) for v in item)):
            continue
        else:
            found[name] = item
    return found


def described_fields(instance: dict[str, Any], layouts: tuple[int, ...],
                     prefix: str) -> dict[int, dict[str, list[str]]]:
    """Per layout, the fields whose name starts with ``prefix`` that the Croissant record set
    of a family of this one instance has, each with its sub-fields' names in order."""
    from memspec.formats.croissant import FamilyShape, _record_set

    described = {}
    for layout in layouts:
        shape = FamilyShape(layout)
        shape.observe(instance)
        fields = _record_set("fam", "data/fam.jsonl", shape, "d", layout)["field"]
        described[layout] = {f["name"]: [s["name"] for s in f.get("subField", [])]
                             for f in fields if f["name"].startswith(prefix)}
    return described


def release_instances(release: Path) -> list[dict]:
    """Every instance of a built release, data file by data file."""
    return [json.loads(line) for path in sorted((release / "data").glob("*.jsonl"))
            for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def release(request: pytest.FixtureRequest, built_dist: Path) -> Path:
    """The bundled release named by the test module's ``RELEASE``, built."""
    return bundled_release(built_dist, request.module.RELEASE)


@pytest.fixture(scope="module")
def instances(release: Path) -> list[dict]:
    """Every instance of the test module's release."""
    return release_instances(release)


@pytest.fixture(scope="session")
def built_example(built_dist: Path) -> Path:
    """The bundled example release, built."""
    return built_dist / "example-v1"



def scaffold_groups(paradigm: str) -> int | None:
    """The number of groups a bundled paradigm's balance checks hold over, as its scaffold
    declares it (None: any number)."""
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project
    from memspec.spec.scaffold import chosen_scaffold
    from memspec.spec.scaffold_files import scaffold_for

    project = Project(REPO)
    spec = Catalog.load(project).paradigms[paradigm]
    return chosen_scaffold(spec, scaffold_for(project, paradigm))[0].get("groups")



def judged_run(release: Path, responses: Path, tmp_path: Path,
               score_of: Callable[[int], int]) -> tuple[dict[str, int], dict[str, dict], Path]:
    """Blinded judge requests for ``responses`` (``memspec judge-requests``), judged with
    ``score_of(index)`` for the index-th request: the scores by request id, the unblinding
    map, and the judgments file written under ``tmp_path``."""
    requests_path = tmp_path / "requests.jsonl"
    made = run_cli("judge-requests", str(release), str(responses), "--out", str(requests_path))
    assert made.returncode == 0, made.stderr
    requests = [json.loads(line) for line in requests_path.read_text().splitlines()]
    unblind = json.loads((tmp_path / "requests.jsonl.unblind.json").read_text())
    scores = {r["request_id"]: score_of(index) for index, r in enumerate(requests)}
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_text("".join(json.dumps({"request_id": k, "score": v}) + "\n"
                                 for k, v in scores.items()))
    return scores, unblind, judgments
