"""The documentation works as written: every code block of README.md and docs/ is marked with
its language, every ``sh`` block runs, every YAML block parses, and the authoring guide, played
from an empty folder, ends in a frozen, verified, audited and scored release."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from jinja2 import meta

from conftest import REPO
from memspec.analysis.scoring import is_correct
from memspec.engine.checks import mentions
from memspec.engine.render import Renderer
from memspec.spec.project import Project

DOCS = sorted((REPO / "docs").rglob("*.md"))
PAGES = [REPO / "README.md", *DOCS]
GUIDE = REPO / "docs" / "authoring.md"
SCORING = REPO / "docs" / "scoring.md"
#: The pages played in a copy of this repository (the guide starts from an empty folder).
REFERENCE = [p for p in PAGES if p != GUIDE]

#: Languages a block may be marked with: ``sh`` runs, ``python`` runs, ``yaml`` parses,
#: ``jinja`` is a template, ``text`` and ``json`` are shown output or data.
LANGUAGES = {"sh", "python", "yaml", "jinja", "text", "json"}

#: The blocks run elsewhere, as written: the quick start's two lines by CI itself
#: (`.ci/run`) and test_readme, the "start your own benchmark" block by test_wheel (a fresh
#: environment where memspec is installed from its wheel), the ρ* example of the trustgap-v4
#: notes by test_trustgap_v4 (which also checks what it prints and writes; it scores the
#: whole release three times, too long to do twice), the README's local-server line by
#: test_run (which starts a server at the address it names), the labelled corpus's per-family
#: table of scoring.md by test_answer_corpus (which checks the table equals its output), and
#: safety.md's line for running the kill and race tests many rounds: those tests run in the
#: suite itself, at one round (ten rounds of kills are half an hour).
RUN_ELSEWHERE = ("pip install -e . && memspec build", "pip install .\n",
                 "MEMSPEC_RACE_ROUNDS=",
                 "python scripts/answer_corpus.py --format markdown ",
                 # The local-server line, by test_run (which serves on that address).
                 "LOCAL_API_KEY=none memspec run ",
                 "memspec respond dist/trustgap-v4 --policy memoryless --out small.jsonl\n")

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```$",
                    re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """Every fenced block of ``page``: its language, its text (indent removed) and line."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match["indent"])
        body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
        found.append((match["lang"], body, text.count("\n", 0, match.start()) + 1))
    return found


def file_path(lang: str, body: str) -> str | None:
    """The relative path a file block names on its first line (``# PATH.yaml`` in YAML,
    ``{# PATH.j2 #}`` in a template), or None for a block that is no file."""
    first = body.split("\n", 1)[0]
    named = re.fullmatch(r"# ([\w./-]+\.yaml)" if lang == "yaml"
                         else r"\{# ([\w./-]+\.j2) #\}", first)
    return named[1] if named else None


class _ChatHandler(http.server.BaseHTTPRequestHandler):
    """A loopback chat-completion endpoint that always picks option B."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["messages"] and body["model"] == "test-model"
        reply = json.dumps({"choices": [{"message": {"content": "B"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def chat_url() -> Iterator[str]:
    """The address of a loopback chat endpoint, for the pages that call one."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _ChatHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1/chat/completions"
    server.shutdown()


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment where ``memspec`` runs this checkout's code, as an install would."""
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "memspec"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memspec.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("MEMSPEC_ROOT", "COLUMNS")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PYTHONPATH=str(REPO),
               # Loaders read the release offline and cache nothing outside the test's folder.
               HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
               HF_HOME=str(bin_dir / "hf"))
    return env


def run_blocks(page: Path, cwd: Path, env: dict[str, str]) -> list[str]:
    """Play ``page`` in ``cwd``: write each file block where it says, run each ``sh`` block
    with bash (stopping at the first failing command; a ``cd`` carries over to the next
    block) and each ``python`` block with this interpreter. Returns each run block's
    standard output."""
    outputs = []
    where = cwd
    state = cwd / ".docs-cwd"
    for lang, body, line in blocks(page):
        path = file_path(lang, body) if lang in ("yaml", "jinja") else None
        if path is not None:
            target = where / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body.split("\n", 1)[1], encoding="utf-8")
        if lang == "python":
            command = [sys.executable, "-c", body]
        elif _runs(lang, body):
            command = ["bash", "-c", f"set -eu\n{body}\npwd > '{state}'\n"]
        else:
            continue
        state.write_text(str(where))
        done = subprocess.run(command, cwd=where, env=env, capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (f"{page.name}:{line}", body, done.stdout[-3000:],
                                      done.stderr[-3000:])
        where = Path(state.read_text().strip())
        outputs.append(done.stdout)
    return outputs


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_block_is_marked_and_every_yaml_block_parses(page: Path) -> None:
    renderer = Renderer(Project(REPO))
    for lang, body, line in blocks(page):
        assert lang in LANGUAGES, f"{page.name}:{line}: block marked {lang!r}"
        if lang == "yaml":
            assert yaml.safe_load(body) is not None, f"{page.name}:{line}"
        if lang == "json":
            json.loads(body)
        if lang == "jinja" and file_path(lang, body) is None:
            # A template shown (not a file the guide renders for real) renders in memspec's
            # sandbox into messages, whatever its values.
            names = meta.find_undeclared_variables(renderer.env.parse(body))
            compiled = renderer.inline(body, page.name, line + 1, 1, "a documentation block")
            assert compiled.render_messages(renderer.scope({n: "x" for n in names})), line


def test_the_guide_files_are_the_bundled_example() -> None:
    written = {}
    for lang, body, _ in blocks(GUIDE):
        path = file_path(lang, body)
        if path is not None:
            written[path] = body.split("\n", 1)[1]
    # The release is the guide's own (it has no committed manifest); every other file ships.
    assert "specs/releases/remind-v1.yaml" in written
    shipped = {p: t for p, t in written.items() if not p.startswith("specs/releases/")}
    assert len(shipped) == 6
    for path, text in shipped.items():
        assert (REPO / path).read_text(encoding="utf-8") == text, path


def test_the_guide_from_an_empty_folder_to_a_scored_release(
        tmp_path: Path, shell_env: dict[str, str]) -> None:
    empty = tmp_path / "work"
    empty.mkdir()
    outputs = run_blocks(GUIDE, empty, shell_env)
    project = empty / "remindbench"
    manifest = json.loads((project / "manifests/remind-v1.json").read_text())
    assert manifest["counts"]["instances"] == 48
    assert (project / "dist/remind-v1/manifest.json").read_text() == \
        (project / "manifests/remind-v1.json").read_text()
    assert "ok: dist/remind-v1" in "".join(outputs)
    # Audited: the freeze recorded no failure, and the always/never-act adversaries ran.
    assert manifest["audit"]["failures"] == []
    assert "always_act" in "".join(outputs) and "never_act" in "".join(outputs)
    # The figures the guide quotes: the best adversary, always acting, right on 14 of 24.
    summary = manifest["audit"]["summary"][0]
    assert summary["passed"] and "9 on 24 items; best never_act 12/24" in summary["adversaries"]
    # Scored: the memoryless policy knows no intention, so it never acts.
    scores = json.loads((project / "memoryless-scores.json").read_text())
    rows = {g["key"]["cue"]: g["metrics"] for g in scores["groups"]}
    assert rows["present"]["accuracy"] == 0 and rows["absent"]["accuracy"] == 1
    assert scores["overall"]["hit_rate"] == 0 and scores["overall"]["false_alarm_rate"] == 0
    assert (project / "report.html").stat().st_size > 0
    # What the guide shows a command printing, it printed.
    printed = "".join(outputs).splitlines()
    for lang, body, line in blocks(GUIDE):
        if lang == "text":
            assert all(shown in printed for shown in body.splitlines()), (line, body)


def play_in_repository_copy(page: Path, tmp_path: Path, env: dict[str, str],
                            request: pytest.FixtureRequest) -> tuple[Path, list[str]]:
    """Play ``page`` in a copy of this repository's project, with every bundled release its
    run blocks name (``NAME-vN``) built in its ``dist/`` (copied from the session's one
    build)."""
    project = tmp_path / "project"
    for name in ("specs", "templates", "manifests"):
        shutil.copytree(REPO / name, project / name)
    shutil.copy2(REPO / "memspec.yaml", project / "memspec.yaml")
    run = "".join(body for lang, body, _ in blocks(page) if _runs(lang, body))
    named = sorted(set(re.findall(r"\b([a-z]+-v\d+)\b", run)))
    if named:
        built = request.getfixturevalue("built_dist")
        for release in named:
            if (built / release).is_dir():
                shutil.copytree(built / release, project / "dist" / release)
    return project, run_blocks(page, project, env)


def _runs(lang: str, body: str) -> bool:
    """Whether ``run_blocks`` runs a block of this language and text."""
    return lang == "python" or (lang == "sh" and not body.startswith(RUN_ELSEWHERE))


def _runs_something(page: Path) -> bool:
    return any(_runs(lang, body) for lang, body, _ in blocks(page))


@pytest.mark.parametrize("page", [p for p in REFERENCE if p != SCORING and _runs_something(p)],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_command_runs_as_written(page: Path, tmp_path: Path, shell_env: dict[str, str],
                                       request: pytest.FixtureRequest) -> None:
    play_in_repository_copy(page, tmp_path, shell_env, request)


def test_the_scoring_page_runs_against_a_chat_endpoint(
        tmp_path: Path, shell_env: dict[str, str], chat_url: str,
        request: pytest.FixtureRequest) -> None:
    code = next(body for lang, body, _ in blocks(SCORING) if lang == "python")
    assert len(code.strip().splitlines()) <= 12
    env = dict(shell_env, CHAT_URL=chat_url, API_KEY="unused", MODEL="test-model")
    _, outputs = play_in_repository_copy(SCORING, tmp_path, env, request)
    # The responses the endpoint gave (always "B"), scored by the commands as written.
    scored = next(out for out in outputs if "\n{" in out)
    report, _ = json.JSONDecoder().raw_decode(scored, scored.index("\n{") + 1)
    assert report["overall"]["answered"] == 144 and report["overall"]["missing"] == 0
    choice = next(g["metrics"] for g in report["groups"]
                  if g["key"] == {"family": "example.choice.meeting_room"})
    # Always "B": right in exactly one rotation of three in every group.
    assert choice["accuracy"] == 1 / 3
    # The worked factorial example prints the row it quotes.
    assert "factorial: label (present - removed)" in "".join(outputs)
    assert "-0.010 [-0.046, 0.026]" in "".join(outputs)


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _anchors(page: Path) -> set[str]:
    """The anchors a Markdown renderer gives the headings of ``page`` (GitHub's way)."""
    found = set()
    for heading in re.findall(r"^#+ (.*)$", page.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_leads_somewhere(page: Path) -> None:
    for link in _links(page):
        if re.match(r"https?://", link):
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if target.rstrip("/").endswith("docs/releases") or target == "releases/":
            continue  # the pages of the newer releases come with those releases
        assert path.exists(), f"{page.name}: {link}"
        if anchor:
            assert anchor in _anchors(path), f"{page.name}: {link}"


def test_the_reference_says_how_words_and_patterns_match() -> None:
    """What docs/spec-language.md states about forbidden words and regex golds holds."""
    # Whole words, ignoring case; a phrase with its space.
    assert mentions("Remind me later", "remind") and mentions("call remind('x')", "remind")
    assert not mentions("a reminder", "remind") and not mentions("reminded", "remind")
    assert mentions("the DESTINATION FIRST rule", "destination first")
    assert not mentions("the destination\nfirst", "destination first")

    def regex(gold: str, response: str, first: str | None = None) -> bool | None:
        answer = {"scorer": "regex", "gold": gold, **({"first": first} if first else {})}
        return is_correct(answer, response)

    # With first: call, a prefix of the call, from its start; else searched in the line.
    assert regex(r"^remind\(", "remind('anything at all')", "call")
    assert not regex(r"remind\(", "not_remind('x')", "call")
    assert not regex(r"^remind\('a'\)", "remind('a', 'b')", "call")
    assert regex("Paris", "I think Paris.") and not regex(r"^Paris\.?$", "I think Paris.")
    # Case counts; inline flags: at the start for the whole, mid-pattern from there on.
    assert not regex("paris", "Paris") and regex("(?i)paris", "PARIS")
    assert regex("a(?i)b", "aB") and not regex("a(?i)b", "AB")
    assert regex("(?i:a)b", "Ab") and not regex("(?i:a)b", "AB")


def test_the_designs_example_is_the_bundled_familys_own() -> None:
    # The reference's `designs` example is copied from a bundled family that validates and is
    # frozen: each design it shows is that family's, key for key.
    page = REPO / "docs" / "spec-language.md"
    shown = [yaml.safe_load(body) for lang, body, _ in blocks(page)
             if lang == "yaml" and body.startswith("designs:\n  main:")]
    assert len(shown) == 1
    family = yaml.safe_load((REPO / "specs/families/trustgap/printer.yaml").read_text())
    assert shown[0]["designs"]
    for name, design in shown[0]["designs"].items():
        assert family["designs"][name] == design, name
