"""``croissant.json``: an MLCommons Croissant 1.0 description of a release.

It describes the canonical JSONL data files, whose SHA-256 the manifest pins, so the
description is pinned with them (the Parquet copies' bytes depend on the pyarrow that wrote
them; see ``parquet_export``). One record set per family gives the typed columns a loader
filters on: the ids, the variant's axes, the fields, the answer and the names of the phases.
Croissant loaders read nested lists one level deep, so up to layout 7 the messages themselves
are left to the JSONL lines and the Parquet files, which keep the whole conversation; layout 8
describes a flattened copy of them, one record per message (``croissant_messages``),
layout 9 the analysis block to every depth (``croissant_analysis``) and layout 10 the rest of
the answer (``croissant_answer``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.canonical import json_key
from ..spec.spec import PublishedDesign, ReleaseSpec
from .croissant_analysis import Leaf, analysis_fields, list_entry_leaves, typed_leaves
from .croissant_answer import EXTRA_ANSWER_TYPES, AnswerShape, answer_fields
from .croissant_messages import messages_distribution, messages_record_set
from .release_layouts import LATEST_LAYOUT, first_layout_with, release_layout

CONFORMS_TO = "http://mlcommons.org/croissant/1.0"

#: The standard Croissant 1.0 JSON-LD context.
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

_TOP_COLUMNS = (("id", "sc:Text"), ("family", "sc:Text"), ("family_version", "sc:Integer"),
                ("paradigm", "sc:Text"), ("group", "sc:Integer"), ("design", "sc:Text"),
                ("variant", "sc:Text"))
#: Answer keys with a Croissant type; the others (distractor maps) stay in the JSONL.
_ANSWER_TYPES = {"scorer": "sc:Text", "gold": "sc:Text", "gold_index": "sc:Integer",
                 "options": "sc:Text", "rubric": "sc:Text", "example": "sc:Text",
                 "first": "sc:Text", "remembered": "sc:Text", "evidence": "sc:Text",
                 "prior": "sc:Text", "abstain": "sc:Text"}
_REPEATED_ANSWER_KEYS = frozenset({"options", "abstain"})


class FamilyShape:
    """The axes, fields and answer keys a family's instances use, gathered as they are
    written: what its record set describes. ``layout`` says what that is: the distractors,
    the feedback log and the analysis block are read only for a layout whose Croissant file
    describes them, and the analysis entries that are lists of objects only for one that
    types them, so no instance is scanned for what the written bytes do not hold."""

    def __init__(self, layout: int = LATEST_LAYOUT) -> None:
        features = release_layout(layout)
        self._full = features.croissant_full_records
        self._nested = features.croissant_nested_analysis
        # Layout 9: the analysis block's leaves to any depth, as paths of keys.
        self._deep = features.croissant_analysis_depth
        self.analysis_leaves: set[Leaf] = set()
        self.analysis_entry_leaves: set[tuple[str, Leaf]] = set()
        # Layout 10: the answer's reading, unordered_args and candidates.
        self.whole_answer = AnswerShape() if features.croissant_whole_answer else None
        self.every_field = features.croissant_every_field
        # Layout 6: (key, type) of the answer's policies and of the feedback log's rounds.
        self.policies: set[tuple[str, str]] = set()
        self.feedback_keys: set[tuple[str, str]] = set()
        self.axes: set[str] = set()
        self.fields: set[str] = set()
        self.answer: set[str] = set()
        self.distractors: set[str] = set()
        self.analysis: set[tuple[str, str, bool]] = set()  # (JSON path, type, repeated)
        # (entry, JSON path within one of its objects, type): entries that are lists of objects
        self.analysis_lists: set[tuple[str, str, str]] = set()
        self.feedback = False
        # The analysis blocks already read, by their JSON bytes: a family's instances mostly
        # carry the same block, whose paths then are read once.
        self._analysis_seen: set[bytes] = set()

    def observe(self, instance: Mapping[str, Any]) -> None:
        """Gather what one instance, as written (canonical: no NaN or infinity), uses."""
        self.axes.update(instance["axes"])
        self.fields.update(instance["fields"])
        answer = instance["answer"]
        self.answer.update(key for key in answer if key in _ANSWER_TYPES)
        if self.whole_answer is not None:
            self.answer.update(key for key in answer if key in EXTRA_ANSWER_TYPES)
            self.whole_answer.observe(answer)
        if not self._full:
            return
        self.distractors.update(answer.get("distractors", ()))
        self.feedback = self.feedback or "feedback" in instance
        if self.every_field:
            self._observe_every_field(instance)
        analysis = instance.get("analysis")
        if analysis and self._first_sight(analysis):
            if self._deep:
                # (typed_leaves passes over a list of objects: list_entry_leaves reads it.)
                self.analysis_leaves |= typed_leaves(analysis, _scalar_type)
                self.analysis_entry_leaves |= list_entry_leaves(analysis, _scalar_type)
                return
            self.analysis.update(_analysis_paths(analysis))
            if self._nested:
                self.analysis_lists.update(_analysis_list_paths(analysis))

    def _observe_every_field(self, instance: Mapping[str, Any]) -> None:
        """Layout 6: the keys (and their types) of the answer's policies and of every round
        of the feedback log."""
        self.policies.update((name, kind) for name, value in
                             instance["answer"].get("policies", {}).items()
                             if (kind := _scalar_type(value)))
        for entry in instance.get("feedback", ()):
            self.feedback_keys.update((key, kind) for key, value in entry.items()
                                      if (kind := _scalar_type(value)))

    def _first_sight(self, analysis: Mapping[str, Any]) -> bool:
        """Whether no analysis block with the same ``json_key`` was read before (blocks with
        the same key have the same typed paths); one without a key is always read."""
        key = json_key(analysis)
        if key is None:
            return True
        if key in self._analysis_seen:
            return False
        self._analysis_seen.add(key)
        return True


#: The Croissant type of each exact scalar type (a dispatch on ``type()``; subclasses of
#: them take the ``isinstance`` tests of ``_SCALAR_TYPES``).
_SCALAR_BY_TYPE = {bool: "sc:Boolean", int: "sc:Integer", float: "sc:Float", str: "sc:Text"}
_SCALAR_TYPES = ((bool, "sc:Boolean"), (int, "sc:Integer"), (float, "sc:Float"),
                 (str, "sc:Text"))


def _scalar_type(value: Any) -> str | None:
    exact = _SCALAR_BY_TYPE.get(type(value))
    if exact is not None:
        return exact
    for kind, name in _SCALAR_TYPES:
        if isinstance(value, kind):
            return name
    return None


def _analysis_paths(analysis: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """The entries of an analysis block Croissant can type: scalars, objects of scalars (one
    path per key) and lists of scalars (repeated). Lists of objects are left to the JSONL."""
    paths = []
    for key, value in analysis.items():
        if isinstance(value, Mapping):
            paths += [(f"{key}.{sub}", kind, False) for sub, item in value.items()
                      if (kind := _scalar_type(item))]
        elif isinstance(value, list):
            kinds = {_scalar_type(item) for item in value}
            if len(kinds) == 1 and None not in kinds:
                paths.append((key, kinds.pop(), True))
        elif kind := _scalar_type(value):
            paths.append((key, kind, False))
    return paths


def _analysis_list_paths(analysis: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    """The entries of an analysis block that are lists of objects, with the paths Croissant
    can type in each object: its scalars and the scalars of its objects (a list inside an
    object is left to the JSONL)."""
    paths: set[tuple[str, str, str]] = set()
    for key, value in analysis.items():
        if not isinstance(value, list) or not value or \
                not all(isinstance(item, Mapping) for item in value):
            continue
        for item in value:
            for sub, inner in item.items():
                if isinstance(inner, Mapping):
                    paths.update((key, f"{sub}.{name}", kind) for name, leaf in inner.items()
                                 if (kind := _scalar_type(leaf)))
                elif kind := _scalar_type(inner):
                    paths.add((key, sub, kind))
    return paths


def spdx_url(license_id: str) -> str:
    """The SPDX page of a licence identifier (e.g. CC-BY-4.0)."""
    return f"https://spdx.org/licenses/{license_id}.html"


def semantic_version(version: str) -> str:
    """A release version as MAJOR.MINOR.PATCH (v3 is 3.0.0, v1.2 is 1.2.0)."""
    parts = version.removeprefix("v").split(".")
    return ".".join([*parts, "0", "0"][:max(3, len(parts))])


def _field(family: str, name: str, data_type: str, file: str, column: str,
           json_path: str | tuple[str, ...] | None = None,
           repeated: bool = False) -> dict[str, Any]:
    """A typed field read from a column of the JSONL, through a JSON path (or several applied
    in turn: the second to each item of the list the first gives)."""
    source: dict[str, Any] = {"fileObject": {"@id": file}, "extract": {"column": column}}
    if isinstance(json_path, tuple):
        source["transform"] = [{"jsonPath": step} for step in json_path]
    elif json_path is not None:
        source["transform"] = {"jsonPath": json_path}
    return {"@type": "cr:Field", "@id": f"{family}/{name}", "name": name.rsplit("/", 1)[-1],
            "dataType": data_type, "source": source, **({"repeated": True} if repeated else {})}


def _group(family: str, name: str, sub_fields: list[dict[str, Any]], description: str,
           repeated: bool = False) -> dict[str, Any]:
    return {"@type": "cr:Field", "@id": f"{family}/{name}", "name": name,
            "description": description, "subField": sub_fields,
            **({"repeated": True} if repeated else {})}


#: The first layout whose record sets describe the distractors, the feedback log and the
#: analysis block too (earlier layouts are frozen without them).
FULL_RECORD_LAYOUT = first_layout_with("croissant_full_records")
_FEEDBACK_TYPES = (("round", "sc:Integer"), ("action", "sc:Text"), ("terminated", "sc:Boolean"))


#: The first layout whose record sets also describe the analysis entries that are lists of
#: objects (one repeated field each); layout 4 leaves them to the JSONL.
NESTED_ANALYSIS_LAYOUT = first_layout_with("croissant_nested_analysis")


def _quoted(name: str) -> str:
    """A key as a quoted JSON path step, so that a key that is a word of the path language
    (``where``, ``id``) or holds other characters reads as the key."""
    return json.dumps(name)


def _analysis_list_fields(family: str, file: str, shape: FamilyShape) -> list[dict[str, Any]]:
    """Layout 5: each analysis entry that is a list of objects as a repeated field
    ``analysis_<entry>``, one sub-field per path of one type (``a.b`` named ``a_b``); the
    entry is taken from the analysis column, then each path from each of its objects."""
    typed: dict[tuple[str, str], set[str]] = {}
    for key, path, kind in shape.analysis_lists:
        typed.setdefault((key, path), set()).add(kind)
    entries: dict[str, list[dict[str, Any]]] = {}
    named: set[tuple[str, str]] = set()
    for (key, path), kinds in sorted(typed.items()):
        # A path of one type only, and one per name: 'a.b' and a key 'a_b' would share an @id.
        if len(kinds) == 1 and (key, path.replace(".", "_")) not in named:
            named.add((key, path.replace(".", "_")))
            entries.setdefault(key, []).append(_field(
                family, f"analysis_{key}/{path.replace('.', '_')}", next(iter(kinds)), file,
                "analysis", (_quoted(key), ".".join(map(_quoted, path.split("."))))))
    return [_group(family, f"analysis_{key}", sub_fields,
                   f"the analysis entry {key}, one record per item (a list inside an item is "
                   "in the JSONL line)", repeated=True)
            for key, sub_fields in entries.items()]


def _more_fields(family: str, file: str, shape: FamilyShape,
                 layout: int = FULL_RECORD_LAYOUT) -> list[dict[str, Any]]:
    """Layout 4: the distractors (by name), the feedback log (round by round) and the
    analysis block (each entry as JSON text, its shape varying by family); layout 5 adds the
    analysis entries that are lists of objects."""
    fields = []
    if shape.distractors:
        fields.append(_group(family, "distractors", [
            _field(family, f"distractors/{name}", "sc:Text", file, "answer",
                   f"distractors.{name}") for name in sorted(shape.distractors)],
            "the answer's distractors by name (a stale value, a habit, another option)"))
    if shape.feedback:
        # Layout 6: every key the log has (its session too), as written; before, three.
        kinds = _one_type_each(shape.feedback_keys) if shape.every_field else _FEEDBACK_TYPES
        fields.append(_group(family, "feedback", [
            _field(family, f"feedback/{name}", kind, file, "feedback",
                   _quoted(name) if shape.every_field else name)
            for name, kind in kinds],
            "the simulated user's implicit feedback, round by round", repeated=True))
    if release_layout(layout).croissant_analysis_depth:
        return fields + analysis_fields(family, file, shape.analysis_leaves,
                                        shape.analysis_entry_leaves, _field, _group)
    typed: dict[str, list[tuple[str, bool]]] = {}
    for path, kind, repeated in sorted(shape.analysis):
        typed.setdefault(path, []).append((kind, repeated))
    chosen = [(path, *kinds[0]) for path, kinds in typed.items() if len(kinds) == 1]
    if chosen:
        fields.append(_group(family, "analysis", [
            _field(family, f"analysis/{path.replace('.', '_')}", kind, file, "analysis", path,
                   repeated=repeated) for path, kind, repeated in chosen],
            "the family's analysis block (judge scale, pairs, baselines; an entry that is a "
            + ("list of objects is a repeated field analysis_<entry>)"
               if release_layout(layout).croissant_nested_analysis
               else "list of objects is in the JSONL line)")))
    if release_layout(layout).croissant_nested_analysis:
        fields += _analysis_list_fields(family, file, shape)
    return fields


def _one_type_each(keys: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The keys seen with one type only, sorted by name (a key of several types is left to
    the JSONL: Croissant gives a field one type)."""
    kinds: dict[str, set[str]] = {}
    for key, kind in keys:
        kinds.setdefault(key, set()).add(kind)
    return [(key, next(iter(found))) for key, found in sorted(kinds.items()) if len(found) == 1]


def _every_other_field(family: str, file: str, shape: FamilyShape) -> list[dict[str, Any]]:
    """Layout 6: the answer's policies, by name. (The messages stay in the JSONL line and
    the Parquet row: mlcroissant 1.0 reads a list inside a repeated column's items one record
    per item of the column, not per message.)"""
    fields = []
    if shape.policies:
        fields.append(_group(family, "answer_policies", [
            _field(family, f"answer_policies/{name}", kind, file, "answer",
                   f"policies.{_quoted(name)}")
            for name, kind in _one_type_each(shape.policies)],
            "the answer each reference policy gives, by the policy's name"))
    return fields


def _record_set(family: str, file: str, shape: FamilyShape, description: str,
                layout: int = 3) -> dict[str, Any]:
    fields = [_field(family, name, kind, file, name) for name, kind in _TOP_COLUMNS]
    if shape.axes:
        fields.append(_group(family, "axes", [
            _field(family, f"axes/{axis}", "sc:Text", file, "axes", axis)
            for axis in sorted(shape.axes)], "the values of the variant's axes"))
    if shape.fields:
        fields.append(_group(family, "fields", [
            _field(family, f"fields/{name}", "sc:Text", file, "fields", name)
            for name in sorted(shape.fields)], "fields of the instance (split, partition)"))
    fields.append(_group(family, "answer", [
        _field(family, f"answer/{key}", {**_ANSWER_TYPES, **EXTRA_ANSWER_TYPES}[key], file,
               "answer", key,
               repeated=key in _REPEATED_ANSWER_KEYS)
        for key in sorted(shape.answer)], "the gold and how a response is scored"))
    fields.append(_group(family, "phases", [
        _field(family, "phases/phase", "sc:Text", file, "phases", "phase")],
        "the phases in order (their messages are in the JSONL line and the Parquet row)",
        repeated=True))
    if release_layout(layout).croissant_full_records:
        fields += _more_fields(family, file, shape, layout)
    if release_layout(layout).croissant_every_field:
        fields += _every_other_field(family, file, shape)
    if shape.whole_answer is not None and release_layout(layout).croissant_whole_answer:
        fields += answer_fields(family, file, shape.whole_answer, _field, _group)
    return {"@type": "cr:RecordSet", "@id": family, "name": family,
            "description": " ".join(description.split()), "key": {"@id": f"{family}/id"},
            "field": fields}


def release_citation(release: ReleaseSpec, root_sha256: str) -> str:
    """BibTeX for the release itself."""
    key = f"memspec_{release.name}_{release.version}".replace("-", "_").replace(".", "_")
    year = f"  year = {{{release.published[:4]}}},\n" if release.published else ""
    return (f"@misc{{{key},\n  title = {{{release.full_name}}},\n{year}"
            f"  howpublished = {{memspec release, data root SHA-256 {root_sha256}}},\n"
            f"  note = {{seed {release.seed}}}\n}}")


def design_citation(design: PublishedDesign) -> str:
    """BibTeX for a published design a release follows."""
    lines = [f"@misc{{{design.key},", f"  title = {{{design.title}}},",
             f"  author = {{{' and '.join(design.authors)}}},"]
    if design.year is not None:
        lines.append(f"  year = {{{design.year}}},")
    if design.venue:
        lines.append(f"  howpublished = {{{design.venue}}},")
    if design.url:
        lines.append(f"  url = {{{design.url}}},")
    lines[-1] = lines[-1].rstrip(",")
    return "\n".join([*lines, "}"])


def croissant_document(release: ReleaseSpec, root_sha256: str,
                       data_files: Mapping[str, Mapping[str, Any]],
                       shapes: Mapping[str, FamilyShape],
                       descriptions: Mapping[str, str], layout: int = 3,
                       message_files: Mapping[str, Mapping[str, Any]] | None = None,
                       message_keys: Mapping[str, set[str]] | None = None) -> dict[str, Any]:
    """The Croissant description of a release: ``data_files`` maps each family's JSONL path
    (``data/<family>.jsonl``) to what the manifest records of it; layout 8 adds the flattened
    ``message_files`` (``messages/<family>.jsonl``), with the message keys each family uses."""
    distribution = [
        {"@type": "cr:FileObject", "@id": name, "name": name, "contentUrl": name,
         "encodingFormat": "application/jsonlines", "sha256": info["sha256"],
         "contentSize": f"{info['bytes']} B"}
        for name, info in sorted(data_files.items())]
    distribution += [messages_distribution(name, info)
                     for name, info in sorted((message_files or {}).items())]
    record_sets = []
    for name in sorted(data_files):
        family = name.removeprefix("data/").removesuffix(".jsonl")
        record_sets.append(_record_set(family, name, shapes[family], descriptions[family],
                                       layout))
        if message_keys and family in message_keys:
            record_sets.append(messages_record_set(family, message_keys[family]))
    document: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": release.full_name,
        "description": " ".join(release.description.split()),
        "conformsTo": CONFORMS_TO,
        "license": spdx_url(release.license),
        "version": semantic_version(release.version),
        "citeAs": release_citation(release, root_sha256),
        "distribution": distribution,
        "recordSet": record_sets,
    }
    if release.published:
        document["datePublished"] = release.published
    if release.tags:
        document["keywords"] = list(release.tags)
    if release.language:
        document["inLanguage"] = list(release.language)
    if release.designs:
        document["citation"] = [design_citation(d) for d in release.designs]
    return document
