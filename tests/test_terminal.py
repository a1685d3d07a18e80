"""What a person at a terminal sees: tables that fit its width, a status line for every
long phase on stderr, and nothing of either in a pipe."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

from rich.console import Console

from conftest import REPO, bundled_release, run_cli
from memspec.report.report_format import PlainTable, fitted

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal of 80 columns: (the side memspec writes to, the side read here)."""
    reader, writer = pty.openpty()
    fcntl.ioctl(writer, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    return writer, reader


def _run_in_terminal(*args: str, root: Path | None = None, stdout_tty: bool = True
                     ) -> tuple[str, str]:
    """Run ``memspec ARGS`` with stderr (and stdout, unless ``stdout_tty`` is False) on
    pseudo-terminals of 80 columns; what each showed, escape sequences and all."""
    ends = {"err": _terminal(), **({"out": _terminal()} if stdout_tty else {})}
    command = [sys.executable, "-m", "memspec.cli", *(["--root", str(root)] if root else []),
               *args]
    env = {k: v for k, v in os.environ.items() if k not in ("MEMSPEC_ROOT", "COLUMNS")}
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
        stdout=ends["out"][0] if stdout_tty else subprocess.PIPE, stderr=ends["err"][0])
    for writer, _ in ends.values():
        os.close(writer)
    seen = {name: b"" for name in ends}
    open_ends = {reader: name for name, (_, reader) in ends.items()}
    while open_ends:
        ready, _, _ = select.select(list(open_ends), [], [], 120)
        assert ready, "memspec went silent for two minutes"
        for reader in ready:
            try:
                chunk = os.read(reader, 65536)
            except OSError:  # the other side is closed: the process is done with it
                chunk = b""
            if chunk:
                seen[open_ends[reader]] += chunk
            else:
                os.close(reader)
                del open_ends[reader]
    piped = process.stdout.read() if process.stdout else b""
    process.wait(timeout=60)
    assert process.returncode == 0, seen["err"].decode()
    text = (seen.get("out") or piped).decode("utf-8", "replace")
    return text, seen["err"].decode("utf-8", "replace")


def test_a_table_too_wide_for_the_terminal_becomes_a_block_a_row() -> None:
    console = Console(width=80, file=io.StringIO(), record=True)
    wide = PlainTable("group", *(f"metric_number_{i}" for i in range(8)))
    wide.add_row("document=binding_corrupted, condition=stale", *("0.500 [0.400, 0.600]",) * 8)
    console.print(fitted(wide, console))
    shown = console.export_text()
    assert "group: document=binding_corrupted, condition=stale" in shown
    assert shown.count("metric_number_7  0.500 [0.400, 0.600]") == 1 and "…" not in shown
    narrow = PlainTable("release", "status")
    narrow.add_row("example-v3", "verified")
    assert fitted(narrow, console) is narrow  # a table that fits stays a table


def test_score_at_80_columns_cuts_no_group_name(built_dist: Path, tmp_path: Path) -> None:
    release = bundled_release(built_dist, "memorychecks-v3")
    responses = tmp_path / "oracle.jsonl"
    assert run_cli("respond", str(release), "--policy", "oracle", "--out",
                   str(responses)).returncode == 0
    shown, _ = _run_in_terminal("score", str(release), str(responses), "--by", "document")
    lines = _ANSI.sub("", shown).replace("\r", "").splitlines()
    assert "group: document=corrupted" in lines and "…" not in shown
    assert max(len(line) for line in lines) <= 80


def test_long_phases_show_a_status_on_a_terminal_and_nothing_in_a_pipe(
        built_dist: Path) -> None:
    release = bundled_release(built_dist, "example-v3")
    _, status = _run_in_terminal("audit", str(release), stdout_tty=False)
    # Shown while the audit runs, and cleared before anything else is said.
    assert f"\r\x1b[2Kauditing {release}\r\x1b[2K" in status
    piped = run_cli("audit", str(release))
    assert piped.returncode == 0
    assert "auditing" not in piped.stderr and "\x1b" not in piped.stderr


def test_a_freeze_names_each_phase_after_its_progress_bar(project_copy: Path) -> None:
    releases = project_copy / "specs" / "releases"
    (releases / "fresh-v1.yaml").write_text(
        (releases / "example-v3.yaml").read_text().replace("name: example", "name: fresh")
        .replace("version: v3", "version: v1"))
    _, status = _run_in_terminal("freeze", "fresh-v1", "--draft", "--out",
                                 str(project_copy / "out"), root=project_copy,
                                 stdout_tty=False)
    for phase in ("auditing (memoryless adversaries", "writing the charts and the card",
                  "sealing (SHA256SUMS)"):
        assert f"freezing: {phase}" in status
    piped = run_cli("freeze", "fresh-v1", "--draft", "--out", str(project_copy / "out"),
                    root=project_copy)
    assert piped.returncode == 0 and "freezing" not in piped.stderr
