"""Which tests run which lines of one module, for scripts/mutate.py.

The mutation tool copies this file into a private folder as ``sitecustomize.py`` and puts
that folder first on ``PYTHONPATH`` for one traced run of a module's mapped tests, so that
every Python process the run starts (pytest itself, and the command-line runs and worker
processes the tests start) traces the module. Each line of the module that runs is written
once per test as ``line<TAB>test id`` to the file named by ``MEMSPEC_MUTATION_OUT``.

The test id is the node id pytest is running (this file is also the pytest plugin that sets
it; processes a test starts inherit it through the environment). Lines that run while the
module or a class body is executed (at import) are written with an empty id: every test
depends on them. Standard library only; nothing here runs outside a traced run.
"""

from __future__ import annotations

import os
import sys
import threading
from types import FrameType
from typing import Any

_TARGET = os.environ.get("MEMSPEC_MUTATION_TARGET", "")
_OUT = os.environ.get("MEMSPEC_MUTATION_OUT", "")
_TEST_VARIABLE = "MEMSPEC_MUTATION_TEST"
_CO_OPTIMIZED = 0x1  # set on function code; unset on module and class bodies

current_test = os.environ.get(_TEST_VARIABLE, "")
_seen: set[tuple[str, int]] = set()
_is_target: dict[str, bool] = {}
_out_file: Any = None


def _targets(filename: str) -> bool:
    found = _is_target.get(filename)
    if found is None:
        found = _is_target[filename] = os.path.realpath(filename) == _TARGET
    return found


def _record(frame: FrameType) -> None:
    global _out_file
    at_import = not frame.f_code.co_flags & _CO_OPTIMIZED
    key = ("" if at_import else current_test, frame.f_lineno)
    if key in _seen:
        return
    _seen.add(key)
    if _out_file is None:
        _out_file = open(_OUT, "a", encoding="utf-8")  # noqa: SIM115 - kept open to the end
    # One short write a line, flushed: processes forked from this one append to the same
    # file without interleaving.
    _out_file.write(f"{key[1]}\t{key[0]}\n")
    _out_file.flush()


def _local(frame: FrameType, event: str, arg: object) -> Any:
    if event == "line":
        _record(frame)
    return _local


def _global(frame: FrameType, event: str, arg: object) -> Any:
    if event == "call" and _targets(frame.f_code.co_filename):
        _record(frame)
        return _local
    return None


if _TARGET and _OUT:
    sys.settrace(_global)
    threading.settrace(_global)


def _name_test(nodeid: str) -> None:
    global current_test
    current_test = os.environ[_TEST_VARIABLE] = nodeid


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    """Name the running test (from its setup to its teardown) for this process and for
    every process it starts."""
    _name_test(nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    """No test runs between tests."""
    _name_test("")
