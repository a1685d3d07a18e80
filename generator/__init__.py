"""memspec: declarative, deterministic evaluation data for the memory of LLM agents.

The command line (``memspec``) is the main interface; this package root exports the small
Python API behind it.
"""

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
