"""memspec: declarative, deterministic evaluation data for the memory of LLM agents.

The command line (``memspec``) is the main interface; this package root exports the small
Python API behind it. Each name is imported when it is first read, so that importing one module
of the package (as each command does) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catalog import Catalog
    from .errors import CheckFailed, MemspecError, SpecError
    from .generate import FamilyGenerator
    from .project import Project, find_project
    from .release import freeze
    from .rng import KeyedRandom
    from .transforms import TransformCall, register_transform
    from .verify import verify_release

__all__ = [
    "Catalog",
    "CheckFailed",
    "FamilyGenerator",
    "KeyedRandom",
    "MemspecError",
    "Project",
    "SpecError",
    "TransformCall",
    "find_project",
    "freeze",
    "register_transform",
    "verify_release",
]

#: The module that defines each exported name.
_HOMES = {
    "Catalog": "catalog", "CheckFailed": "errors", "FamilyGenerator": "generate",
    "KeyedRandom": "rng", "MemspecError": "errors", "Project": "project",
    "SpecError": "errors", "TransformCall": "transforms", "find_project": "project",
    "freeze": "release", "register_transform": "transforms", "verify_release": "verify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # found here from now on
    return value
