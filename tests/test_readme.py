"""The README's quick start is the two commands CI runs (every other block of README.md and
docs/ is run by test_docs.py)."""

from __future__ import annotations

import re

from conftest import REPO


def test_quick_start_is_the_two_commands() -> None:
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Quick start\n\n```sh\n(.*?)```", text, re.S)
    assert block is not None
    assert block.group(1).splitlines() == ["pip install -e . && memspec build",
                                           "pip install -e '.[test]' && pytest"]
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == "pip install -e '.[test]' && pytest"
    # Once, in a fresh venv of its own (what the system interpreter holds passes no test).
    assert 'python3 -m venv "$venv"' in ci and 'source "$venv/bin/activate"' in ci
    assert "system-site-packages" not in ci and ci.count("pytest") == 1


def test_readme_is_a_door() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    # It links every page of docs/.
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{page.name}" in text, page.name
