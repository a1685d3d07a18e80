"""The process that runs one copy's mutants for scripts/mutate.py, a fork per run.

Most of a mutant's run is the interpreter importing pytest, numpy, scipy, Jinja and the
rest before a test starts. This worker imports them once, then forks a child for each run
that imports memspec afresh (the mutated copy) and runs pytest in it. The libraries it
keeps loaded are found by collecting the tests once in a throwaway child; nothing from the
copy of the project is kept, so every run reads the copy's files as they are at the time.

Protocol, one JSON object a line: the worker reads ``{"tests": [...], "flags": [...],
"timeout": seconds}`` on standard input and answers ``{"status": "passed" | "failed" |
"timeout" | "no tests", "seconds": s}``. It is started in the copy's root with the copy first
on ``PYTHONPATH``. Standard library and pytest only.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path.cwd().resolve()
#: top-level names of the project's own code, never kept loaded whatever their path
_OWN = {"memspec", "generator", "tests", "conftest", "scripts", "bench"}


def _foreign_modules(tests: list[str]) -> list[str]:
    """The modules a collection of ``tests`` imports that are not the project's own."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child collects, then names what it imported
        os.close(read)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pytest
        pytest.main(["-q", "--collect-only", "-p", "no:cacheprovider", "-n", "0", *tests])
        names = []
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None) or ""
            own = name.partition(".")[0] in _OWN or Path(origin).resolve().is_relative_to(ROOT)
            if origin and not own:
                names.append(name)
        os.write(write, "\n".join(names).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode().split()


def _preload(names: list[str]) -> None:
    for name in sorted(names, key=lambda n: n.count(".")):
        # A module that cannot load alone is left to the run that needs it.
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _run(tests: list[str], flags: list[str], timeout: float) -> tuple[str, float]:
    """Fork, run pytest on ``tests`` in the child, and wait up to ``timeout`` seconds."""
    began = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)  # its own group, so a timeout ends whatever it started
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        code = 1
        try:
            import pytest
            code = int(pytest.main([*flags, *tests]))
        finally:
            os._exit(code)
    deadline = began + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            for target in (-pid, pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(target, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - began
        time.sleep(0.02)
    code = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - began
    if code == 5:
        return "no tests", elapsed
    return ("passed" if code == 0 else "failed"), elapsed


def main() -> None:
    """Preload what the tests named on the command line import, then serve runs."""
    _preload(_foreign_modules(sys.argv[1:]))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        status, seconds = _run(request["tests"], request["flags"], request["timeout"])
        print(json.dumps({"status": status, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
