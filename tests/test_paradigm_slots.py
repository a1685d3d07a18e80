"""Slots a paradigm declares once for all its families: taken first, overridden only by a
family slot that says so, errors located in the file that holds the slot."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_cli

_PARADIGM = """paradigm: lab.turns
version: 1
description: A fact, some small talk, then a question about the fact.
slots:
  n_turns: {value: 3}
  marker: {choice: ["[note]", "[memo]"]}
SLOT
phases:
  - name: learning
  - name: probe
scorers: [exact]
"""

_FAMILY = """family: lab.turns.NAME
version: 1
paradigm: lab.turns
description: Recall a city after a few turns.
slots:
SLOTS  city: {from: pools/example/unix_dirs.yaml}
phases:
  learning:
    messages:
      - {role: user, text: "{{ marker }} The folder is {{ city }}. We talk {{ n_turns }} turns."}
      - {role: assistant, text: "Noted."}
  probe:
    messages:
      - {role: user, text: "Which folder was it?"}
answer:
  scorer: exact
  gold: "{{ city }}"
"""


def _project(root: Path, families: dict[str, str], paradigm_slot: str = "") -> None:
    (root / "specs/paradigms/lab").mkdir(parents=True)
    (root / "specs/paradigms/lab/turns.yaml").write_text(_PARADIGM.replace("SLOT\n",
                                                                           paradigm_slot))
    (root / "specs/families/lab").mkdir(parents=True)
    for name, slots in families.items():
        (root / f"specs/families/lab/{name}.yaml").write_text(
            _FAMILY.replace("NAME", name).replace("SLOTS", slots))


def _validated(root: Path) -> subprocess.CompletedProcess[str]:
    """``memspec validate`` of the lab's paradigm and families (the files a test wrote; the
    rest of the project is validated elsewhere)."""
    return run_cli("validate", str(root / "specs/paradigms/lab"),
                   str(root / "specs/families/lab"), root=root)


def _refused(root: Path) -> str:
    """What validate says of the lab's files, which it must refuse as bad input."""
    result = _validated(root)
    assert result.returncode == 2, result.stderr
    return result.stderr


def _first(root: Path, family: str) -> dict:
    result = run_cli("generate", family, "--groups", "1", root=root)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])


def test_families_share_the_paradigm_slots_and_override_them_explicitly(
        project_copy: Path) -> None:
    _project(project_copy, {"plain": "", "longer": "  n_turns: {value: 9, override: true}\n"})
    validated = _validated(project_copy)
    assert validated.returncode == 0, validated.stderr
    plain = _first(project_copy, "lab.turns.plain")["phases"][0]["messages"][0]["content"]
    longer = _first(project_copy, "lab.turns.longer")["phases"][0]["messages"][0]["content"]
    assert plain.startswith(("[note] ", "[memo] ")) and "We talk 3 turns." in plain
    assert "We talk 9 turns." in longer


def test_shadowing_a_paradigm_slot_without_override_is_refused(project_copy: Path) -> None:
    _project(project_copy, {"shadow": "  n_turns: {value: 9}\n",
                            "stray": "  extra: {value: 1, override: true}\n"})
    stderr = _refused(project_copy)
    assert ("specs/families/lab/shadow.yaml:6:3: slot 'n_turns' is declared by paradigm "
            "'lab.turns' (specs/paradigms/lab/turns.yaml:5); say 'override: true' to replace "
            "it for this family") in stderr, stderr
    assert ("specs/families/lab/stray.yaml:6:21: slot 'extra' says 'override: true', but "
            "paradigm 'lab.turns' declares no slot of that name") in stderr


def test_a_bad_paradigm_slot_is_located_in_the_paradigm(project_copy: Path) -> None:
    _project(project_copy, {"plain": ""}, "  picked: {of: nowhere}\n")
    stderr = _refused(project_copy)
    assert "specs/paradigms/lab/turns.yaml:7:12: 'of' names 'nowhere', which is not an " \
           "earlier slot" in stderr, stderr
    (project_copy / "specs/paradigms/lab/turns.yaml").write_text(
        _PARADIGM.replace("SLOT\n", "  bad: {expr: 'n_turns +'}\n"))
    stderr = _refused(project_copy)
    assert "specs/paradigms/lab/turns.yaml:7:" in stderr and "syntax" in stderr, stderr


def test_a_paradigm_slot_may_not_say_override(project_copy: Path) -> None:
    _project(project_copy, {"plain": ""}, "  other: {value: 1, override: true}\n")
    stderr = _refused(project_copy)
    assert "specs/paradigms/lab/turns.yaml:7:21: 'override' is for a family's slot that " \
           "replaces a paradigm's" in stderr, stderr
