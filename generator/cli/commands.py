"""The ``memspec`` command line. Exit status: 0 ok, 1 a check failed, 2 bad input.

The commands live one group to a module (``cli_project``, ``cli_release``, ``cli_analysis``,
``cli_normalise``, ``cli_audit``, ``cli_exports``, ``cli_run``), on the app of
``cli_common``; this module gathers them, in the order help lists them, and is the entry point
(``memspec.cli.commands:main``)."""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

#: The names of ``cli_common`` this module gives (the app, its consoles, what commands share).
COMMON_NAMES = ("Correction", "CorrectionScope", "_progress", "_project", "_run", "_status",
                "app", "err", "out")
__all__ = [*COMMON_NAMES, "main"]

#: The commands in the order help lists them (the order they were written in, before they
#: were grouped into modules); a command not named here comes after these.
COMMAND_ORDER = ("init", "validate", "new", "generate", "show", "check-answer", "freeze",
                 "merge", "verify", "build", "pool", "respond", "run", "score", "audit", "report",
                 "preview", "judge-requests", "rho-star", "normalize", "export")


def _assembled() -> ModuleType:
    """``cli_common``, its app holding every command in help order: the command modules are
    imported (which registers their commands) on first use, not when this module is, so
    that `memspec --version` imports none of them, nor typer."""
    from . import (
        cli_analysis,
        cli_audit,
        cli_common,
        cli_exports,
        cli_normalise,
        cli_project,
        cli_release,
        cli_run,
    )

    cli_common.app.registered_commands.sort(key=_help_position)  # stable: a second is a no-op
    globals()["COMMAND_MODULES"] = (cli_project, cli_release, cli_analysis, cli_normalise,
                                    cli_audit, cli_exports, cli_run)
    return cli_common


def __getattr__(name: str) -> Any:
    """The names of ``cli_common`` (``app`` among them) and ``COMMAND_MODULES``, the modules
    of the commands, from the assembled app."""
    if name in COMMON_NAMES:
        return getattr(_assembled(), name)
    if name == "COMMAND_MODULES":
        _assembled()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command_name(info: Any) -> str:
    """The name a registered command goes by: its own, else its function's, as typer names it."""
    from typer.main import get_command_name

    return info.name or get_command_name(info.callback.__name__)


def _help_position(info: Any) -> int:
    name = _command_name(info)
    return COMMAND_ORDER.index(name) if name in COMMAND_ORDER else len(COMMAND_ORDER)


def main() -> Any:
    """Entry point of the ``memspec`` console script."""
    # Text goes out as UTF-8 whatever the locale says (LC_ALL=C would make it ASCII, and
    # instances are not); child processes started later are told the same.
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    if sys.argv[1:] == ["--version"]:
        # What the root option prints, without importing typer or any command.
        from ..core.version import memspec_version

        print(f"memspec {memspec_version()}")
        return 0
    # Named as installed, also under `python -m memspec.cli.commands`: usage lines and the shell
    # completion scripts speak of `memspec`.
    return _assembled().app(prog_name="memspec")


if __name__ == "__main__":
    main()
