"""A declaration the audit refuses (a declared chance, a positive control, evidence) is an
error of the spec: freeze and audit name the file, line and column of the key that declares
it (the family's file, or its paradigm's where the family takes the key from there) and exit
with the status of bad input (2), writing nothing. Planted in small generated projects."""

from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import run_cli

PARADIGM = """
    paradigm: lab.notes
    version: 1
    description: an earlier session says what to do with a folder, then a request to tidy it
    phases:
      - name: history
      - name: task
    scorers: [regex]
    audit:
      memory_phases: [history]
    """

POOL = """
    pool: lab.folders
    description: folder paths
    items: [/srv/a1, /srv/b2, /srv/c3, /srv/d4, /srv/e5, /srv/f6, /srv/g7, /srv/h8, /srv/i9,
            /srv/j10, /srv/k11, /srv/l12, /srv/m13, /srv/n14, /srv/o15, /srv/p16, /srv/q17,
            /srv/r18, /srv/s19, /srv/t20, /srv/u21, /srv/v22, /srv/w23, /srv/x24]
    """

#: The earlier session's reply is the very call the task needs: an echo leak.
FAMILY = """
    family: lab.notes.folders
    version: 1
    paradigm: lab.notes
    description: the user said once what to do with a folder
    slots:
      folder: {from: pools/folders.yaml, balanced: true}
    designs:
      main:
        axes:
          wording: [plain, polite]
    phases:
      history:
        messages:
          - role: user
            text: "Archive {{ folder }} when I ask you to tidy it."
          - role: assistant
            text: "REPLY"
      task:
        messages:
          - role: user
            text: "{{ 'Please tidy' if variant.wording == 'polite' else 'Tidy' }} {{ folder }}."
    answer:
      scorer: regex
      first: call
      gold: "^archive\\\\('{{ folder }}'\\\\)"
      example: "archive('{{ folder }}')"
    """

RELEASE = """
    name: notes
    version: v1
    seed: 11
    description: tidy folders
    families:
      - family: lab.notes.folders
        groups: 24
    """

LEAK = "archive('{{ folder }}')"


def _project(root: Path, reply: str, family_extra: str = "", paradigm_extra: str = "",
             answer_extra: str = "") -> Path:
    """A one-family project; ``*_extra`` are YAML lines added to the family, its paradigm and
    its answer block."""
    files = {"specs/paradigms/notes.yaml": textwrap.dedent(PARADIGM).lstrip() + paradigm_extra,
             "specs/pools/folders.yaml": textwrap.dedent(POOL).lstrip(),
             "specs/families/folders.yaml": textwrap.dedent(FAMILY).lstrip()
             .replace("REPLY", reply).replace("\n  example:", "\n" + answer_extra + "  example:")
             + family_extra,
             "specs/releases/notes-v1.yaml": textwrap.dedent(RELEASE).lstrip()}
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    for folder in ("manifests", "templates"):
        (root / folder).mkdir(exist_ok=True)
    return root / "specs/releases/notes-v1.yaml"


def _line_of(path: Path, text: str) -> tuple[int, int]:
    """The line and column (1-based) where ``text`` first stands in ``path``."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return number, line.index(text) + 1
    raise AssertionError(f"{text!r} not in {path}")


def _refused_at(root: Path, release: Path, where: str, check: str) -> None:
    out = root / "out"
    result = run_cli("freeze", str(release), "--out", str(out), root=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"error: {where}: audit: {check} fails on lab.notes.folders: " in result.stderr, \
        result.stderr
    assert not out.exists() and not list((root / "manifests").iterdir())


def test_a_declared_chance_hiding_a_leak_is_refused_at_its_key(tmp_path: Path) -> None:
    release = _project(tmp_path, LEAK, family_extra="audit:\n  chance: 0.97\n")
    line, column = _line_of(tmp_path / "specs/families/folders.yaml", "chance: 0.97")
    _refused_at(tmp_path, release, f"specs/families/folders.yaml:{line}:{column}",
                "declared: chance")


def test_a_positive_control_declared_by_the_paradigm_is_refused_there(tmp_path: Path
                                                                       ) -> None:
    """The family takes ``audit.chance: 1`` from its paradigm: the refusal points into the
    paradigm's file."""
    release = _project(tmp_path, LEAK, paradigm_extra="  chance: 1\n")
    line, column = _line_of(tmp_path / "specs/paradigms/notes.yaml", "chance: 1")
    _refused_at(tmp_path, release, f"specs/paradigms/notes.yaml:{line}:{column}",
                "declared: positive control")


def test_evidence_that_does_not_give_the_gold_is_refused_at_its_key(tmp_path: Path) -> None:
    """The folder is shown in the request, but a scorer that wants the archive call does not
    accept it: the declared evidence answers nothing."""
    release = _project(tmp_path, "Noted.", answer_extra="  evidence: \"{{ folder }}\"\n")
    line, column = _line_of(tmp_path / "specs/families/folders.yaml", "evidence:")
    _refused_at(tmp_path, release, f"specs/families/folders.yaml:{line}:{column}",
                "leakage: evidence shown")


def test_audit_of_a_release_frozen_with_the_failure_locates_it_too(tmp_path: Path) -> None:
    """Published with the failure recorded, the release's audit still refuses the
    declaration at its key, with exit 2; the twin that declares nothing and does not leak
    freezes and audits clean."""
    release = _project(tmp_path / "p", LEAK, family_extra="audit:\n  chance: 0.97\n")
    out = tmp_path / "out"
    frozen = run_cli("freeze", str(release), "--out", str(out), "--allow-audit-failures",
                     root=tmp_path / "p")
    assert frozen.returncode == 0, frozen.stderr
    audited = run_cli("audit", str(out / "notes-v1"), root=tmp_path / "p")
    line, column = _line_of(tmp_path / "p/specs/families/folders.yaml", "chance: 0.97")
    assert audited.returncode == 2, audited.stdout + audited.stderr
    assert f"error: specs/families/folders.yaml:{line}:{column}: audit: declared: chance " \
        "fails on lab.notes.folders: " in audited.stderr, audited.stderr

    release = _project(tmp_path / "twin", "Noted.")
    frozen = run_cli("freeze", str(release), "--out", str(tmp_path / "out2"),
                     root=tmp_path / "twin")
    assert frozen.returncode == 0, frozen.stderr
