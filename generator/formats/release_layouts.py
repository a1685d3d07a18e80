"""The release layouts (a manifest's ``manifest_version``) and what each turns on: the one
place that says how releases of layouts 1 to 10 differ. Code that writes a release asks
``release_layout(number)`` for a named feature instead of comparing layout numbers, so a new
layout is one more row here. A layout only ever adds: a frozen release keeps its layout, and
with it its bytes, while a first freeze writes ``LATEST_LAYOUT``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class ReleaseLayout:
    """What a release of one layout holds beyond layout 1 (the data, the card, the sums)."""

    number: int
    #: The audit's summary in the manifest (which records the audit even when nothing failed)
    #: and the audit's section in the card.
    audit_summary: bool = False
    #: Charts of the release under ``plots/``, shown in the card.
    charts: bool = False
    #: Parquet copies under ``parquet/``, ``croissant.json``, and the card's loader configs,
    #: metadata, designs, citations and how to load it (and to rebuild it with ``build``).
    loader_exports: bool = False
    #: Parquet columns typed rather than JSON text (one schema for every family).
    typed_parquet: bool = False
    #: Markdown in the card's descriptions escaped, so that each shows as written.
    escapes_markdown: bool = False
    #: The distractors, the feedback log and the analysis block described in croissant.json.
    croissant_full_records: bool = False
    #: The analysis entries that are lists of objects, each a repeated field of croissant.json.
    croissant_nested_analysis: bool = False
    #: The answer's policies and every key of the feedback log (its session) in
    #: croissant.json too.
    croissant_every_field: bool = False
    #: The answer's declared reading (how a response is read before it is scored) in the
    #: Parquet answer struct, as JSON text.
    parquet_answer_reading: bool = False
    #: The messages flattened, one line per message, under ``messages/`` and described in
    #: croissant.json as a record set per family (``<family>_messages``).
    croissant_messages: bool = False
    #: The analysis block in croissant.json to every depth: the scalars of objects inside
    #: objects and the lists of scalars inside objects and inside the items of a list of
    #: objects (``audit.memory_phases``, a factorial's ``axes``), each key quoted.
    croissant_analysis_depth: bool = False
    #: The rest of the answer in croissant.json: its declared reading, ``unordered_args`` and
    #: the candidates the task shows, so that every field of the JSONL is described.
    croissant_whole_answer: bool = False

    def features(self) -> tuple[str, ...]:
        """The names of the features this layout turns on, in the table's order."""
        return tuple(field.name for field in fields(self)
                     if field.name != "number" and getattr(self, field.name))


_LAYOUT_1 = ReleaseLayout(1)
_LAYOUT_2 = replace(_LAYOUT_1, number=2, audit_summary=True, charts=True)
_LAYOUT_3 = replace(_LAYOUT_2, number=3, loader_exports=True)
_LAYOUT_4 = replace(_LAYOUT_3, number=4, typed_parquet=True, escapes_markdown=True,
                    croissant_full_records=True)
_LAYOUT_5 = replace(_LAYOUT_4, number=5, croissant_nested_analysis=True)
_LAYOUT_6 = replace(_LAYOUT_5, number=6, croissant_every_field=True)
_LAYOUT_7 = replace(_LAYOUT_6, number=7, parquet_answer_reading=True)
_LAYOUT_8 = replace(_LAYOUT_7, number=8, croissant_messages=True)
_LAYOUT_9 = replace(_LAYOUT_8, number=9, croissant_analysis_depth=True)
_LAYOUT_10 = replace(_LAYOUT_9, number=10, croissant_whole_answer=True)

#: Every layout by its number: each turns on all its predecessor does, and more.
LAYOUTS: Mapping[int, ReleaseLayout] = {
    layout.number: layout for layout in (_LAYOUT_1, _LAYOUT_2, _LAYOUT_3, _LAYOUT_4, _LAYOUT_5,
                                        _LAYOUT_6, _LAYOUT_7, _LAYOUT_8, _LAYOUT_9,
                                        _LAYOUT_10)}
#: The newest release layout (``manifest_version``): what a first freeze writes.
LATEST_LAYOUT = max(LAYOUTS)


def release_layout(number: int) -> ReleaseLayout:
    """The layout a manifest's ``manifest_version`` names (the manifest schema admits only
    these numbers)."""
    try:
        return LAYOUTS[number]
    except KeyError:
        raise ValueError(f"no release layout {number!r}; memspec knows layouts "
                         f"{', '.join(map(str, LAYOUTS))}") from None


def first_layout_with(feature: str) -> int:
    """The number of the first layout that turns ``feature`` on."""
    return min(number for number, layout in LAYOUTS.items() if getattr(layout, feature))
