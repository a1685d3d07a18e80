"""memspec: declarative, deterministic evaluation data for the memory of LLM agents.

The command line (``memspec``) is the main interface; this package root exports the small
Python API behind it. Each name is imported when it is first read, so that importing one module
of the package (as each command does) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Former module names (memspec.transforms, ...) keep working for one version.
from . import _moved  # noqa: F401

if TYPE_CHECKING:
    from .core.errors import CheckFailed, MemspecError, SpecError
    from .core.rng import KeyedRandom
    from .core.transforms import TransformCall, register_transform
    from .engine.generate import FamilyGenerator
    from .release.freezing import freeze
    from .release.verify import verify_release
    from .spec.catalog import Catalog
    from .spec.project import Project, find_project

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
    "Catalog": "spec.catalog", "CheckFailed": "core.errors", "FamilyGenerator": "engine.generate",
    "KeyedRandom": "core.rng", "MemspecError": "core.errors", "Project": "spec.project",
    "SpecError": "core.errors", "TransformCall": "core.transforms", "find_project": "spec.project",
    "freeze": "release.freezing", "register_transform": "core.transforms",
    "verify_release": "release.verify",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # found here from now on
    return value
