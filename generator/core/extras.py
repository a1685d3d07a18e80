"""What one of memspec's optional extras installs, read from the installed package metadata:
the line an error or a note gives to install it, right for a wheel's user (who has no clone to
``pip install -e '.[extra]'`` in) and for a clone's alike."""

from __future__ import annotations

import shlex
from importlib.metadata import PackageNotFoundError, requires


def extra_requirements(extra: str, fallback: str) -> str:
    """The requirements memspec's ``extra`` declares, as arguments of ``pip install`` (each
    quoted for a shell); ``fallback`` where the metadata says nothing (run from sources that
    were never installed)."""
    try:
        declared = requires("memspec") or []
    except PackageNotFoundError:
        declared = []
    marker = f'extra=="{extra}"'
    wanted = [r.split(";")[0].strip() for r in declared
              if r.replace("'", '"').replace(" ", "").endswith(marker)]
    return " ".join(shlex.quote(r) for r in wanted) or fallback
