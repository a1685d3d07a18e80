"""Typed, validated specs: families, paradigms and releases, loaded from a project's specs/.

The one door to spec loading: the types live in ``spec_types``, each file kind's loading in
``spec_paradigm``, ``spec_family`` and ``spec_release``, and the checks beyond the schemas in
``spec_slots`` and ``spec_family_checks``; the rest of memspec imports them from here."""

from __future__ import annotations

from .spec_family import FamilyLoader
from .spec_family_checks import answer_examples, phrasings_of
from .spec_paradigm import load_paradigm
from .spec_release import load_release
from .spec_types import (
    DEFAULT_VARIANT,
    MAX_CROSSED_CELLS,
    RANDOM_SOURCES,
    RESERVED_NAMES,
    SLOT_SOURCES,
    Axis,
    Design,
    FamilySpec,
    ParadigmSpec,
    PublishedDesign,
    ReleaseFamily,
    ReleaseSpec,
    TransformRef,
    Variant,
)

__all__ = [
    "DEFAULT_VARIANT", "MAX_CROSSED_CELLS", "RANDOM_SOURCES", "RESERVED_NAMES", "SLOT_SOURCES",
    "Axis", "Design", "FamilyLoader", "FamilySpec", "ParadigmSpec", "PublishedDesign",
    "ReleaseFamily", "ReleaseSpec", "TransformRef", "Variant", "answer_examples",
    "load_paradigm", "load_release", "phrasings_of",
]
