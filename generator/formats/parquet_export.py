"""Parquet copies of a release's data, for dataset loaders (one file per family, split and
subset), written with pyarrow.

Every family shares one Arrow schema, so any set of files loads as one table: the columns a
loader filters on are plain and the conversation keeps its nesting (phases of role-tagged
messages). Releases of layout 3 keep the objects whose keys vary by family (axes, fields, the
answer, analysis, feedback) as canonical JSON text; from layout 4 (``TYPED_LAYOUT``) every
one of them but ``analysis`` is typed: axes, fields, distractors and policies as lists of
``{name, value}`` (one schema whatever the names), the answer a struct of its typed keys,
feedback a list of its records.

pyarrow writes the same bytes for the same rows and options, but it writes its own version
into every file's footer ("created_by"), which no option changes. So a manifest pins a Parquet
file's bytes together with the writer that made them, and, for any other writer, the rows:
``content_sha256`` is the SHA-256 of the rows as canonical JSON lines, which does not depend
on how they are encoded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ..core.canonical import TextMemo, dump_bytes, dump_instance_bytes, dumps, normalize
from ..core.errors import CheckFailed
from .release_layouts import first_layout_with, release_layout

#: Rows per row group: fixed, so that the bytes do not depend on how rows arrive.
ROW_GROUP_ROWS = 1000
#: The split of a family the release does not split.
DEFAULT_SPLIT = "test"
PARQUET_DIR = "parquet"
_PLAIN = re.compile(r"[A-Za-z0-9_]+")
_JSON_COLUMNS = ("axes", "fields", "answer", "analysis", "feedback")
#: The first layout whose Parquet columns are typed rather than JSON text (earlier layouts are
#: frozen with theirs).
TYPED_LAYOUT = first_layout_with("typed_parquet")
#: Objects of string values whose keys vary by family: lists of ``{name, value}`` pairs.
_NAMED = ("axes", "fields")
_ANSWER_NAMED = ("distractors", "policies")
_ANSWER_TEXT = ("scorer", "gold", "rubric", "first", "example", "remembered", "evidence",
                "prior")


@cache
def writer_name() -> str:
    """The writer recorded beside pinned Parquet bytes: the installed pyarrow (looked up
    once: the installed version does not change while a process runs)."""
    return f"pyarrow {version('pyarrow')}"


#: How pyarrow names itself in a Parquet footer's "created_by", before its version.
_FOOTER_WRITER = "parquet-cpp-arrow version "


def file_writer(path: Path) -> str | None:
    """The writer a Parquet file's footer names, in the form ``writer_name`` gives; None for
    a file that is not Parquet or that another library wrote."""
    import pyarrow.parquet as pq
    from pyarrow import ArrowException

    try:
        created_by = pq.read_metadata(path).created_by or ""
    except (OSError, ValueError, ArrowException):
        return None
    if not created_by.startswith(_FOOTER_WRITER):
        return None
    return f"pyarrow {created_by[len(_FOOTER_WRITER):]}"


def _schema(layout: int = 3) -> Any:
    import pyarrow as pa

    message = pa.struct([("role", pa.string()), ("name", pa.string()),
                         ("content", pa.string())])
    phase = pa.struct([("phase", pa.string()), ("messages", pa.list_(message))])
    if release_layout(layout).typed_parquet:
        return _typed_schema(pa, phase, release_layout(layout).parquet_answer_reading)
    return pa.schema([
        ("id", pa.string()), ("family", pa.string()), ("family_version", pa.int64()),
        ("paradigm", pa.string()), ("group", pa.int64()), ("design", pa.string()),
        ("variant", pa.string()), ("split", pa.string()),
        ("phases", pa.list_(phase)),
        ("scorer", pa.string()), ("gold", pa.string()), ("options", pa.list_(pa.string())),
        ("gold_index", pa.int64()),
        *((name, pa.string()) for name in _JSON_COLUMNS),
    ])


def _typed_schema(pa: Any, phase: Any, with_reading: bool = False) -> Any:
    """Layout 4: the varying objects as typed columns, one schema for every family (from
    layout 7 the answer's declared reading too, as JSON text: its keys vary)."""
    named = pa.list_(pa.struct([("name", pa.string()), ("value", pa.string())]))
    answer = pa.struct([
        *((key, pa.string()) for key in _ANSWER_TEXT),
        ("options", pa.list_(pa.string())), ("gold_index", pa.int64()),
        ("unordered_args", pa.bool_()), ("abstain", pa.list_(pa.string())),
        *((key, named) for key in _ANSWER_NAMED),
        ("candidates", pa.list_(pa.struct([("value", pa.string()),
                                           ("features", pa.list_(pa.string()))]))),
        *((("reading", pa.string()),) if with_reading else ()),
    ])
    feedback = pa.list_(pa.struct([("round", pa.int64()), ("session", pa.int64()),
                                   ("action", pa.string()), ("terminated", pa.bool_())]))
    return pa.schema([
        ("id", pa.string()), ("family", pa.string()), ("family_version", pa.int64()),
        ("paradigm", pa.string()), ("group", pa.int64()), ("design", pa.string()),
        ("variant", pa.string()), ("split", pa.string()),
        ("axes", named), ("fields", named), ("phases", pa.list_(phase)),
        ("answer", answer), ("feedback", feedback), ("analysis", pa.string()),
    ])


@cache
def column_names(layout: int) -> tuple[str, ...]:
    """The columns of every Parquet file of a release of ``layout``, in order."""
    return tuple(_schema(layout).names)


@cache
def _answer_keys(layout: int = TYPED_LAYOUT) -> tuple[str, ...]:
    import pyarrow as pa

    return tuple(field.name for field in _schema(layout).field("answer").type
                 if isinstance(field, pa.Field))


def named_pairs(values: Mapping[str, str]) -> list[dict[str, str]]:
    """An object of string values as ``{name, value}`` pairs, by name."""
    return [{"name": name, "value": value} for name, value in sorted(values.items())]


def split_of(instance: Mapping[str, Any]) -> str:
    """The split an instance is in (its ``split`` field, else the default)."""
    return instance["fields"].get("split", DEFAULT_SPLIT)


def row_of(instance: Mapping[str, Any], layout: int = 3,
           analysis_text: Callable[[Any], str] = dumps) -> dict[str, Any]:
    """One instance as a row of the shared schema of ``layout``; ``analysis_text`` writes
    its analysis block as JSON text (``dumps``, or a ``TextMemo`` of it: the block of a
    family repeats, where the other columns differ from instance to instance)."""
    if release_layout(layout).typed_parquet:
        return _typed_row(instance, analysis_text, layout)
    answer = instance["answer"]
    return {
        "id": instance["id"], "family": instance["family"],
        "family_version": instance["family_version"], "paradigm": instance["paradigm"],
        "group": instance["group"], "design": instance["design"],
        "variant": instance["variant"], "split": split_of(instance),
        "phases": [{"phase": p["phase"],
                    "messages": [{"role": m["role"], "name": m.get("name"),
                                  "content": m["content"]} for m in p["messages"]]}
                   for p in instance["phases"]],
        "scorer": answer["scorer"], "gold": answer.get("gold"),
        "options": answer.get("options"), "gold_index": answer.get("gold_index"),
        **{name: (analysis_text if name == "analysis" else dumps)(instance[name])
           if name in instance else None for name in _JSON_COLUMNS},
    }


def _typed_row(instance: Mapping[str, Any], analysis_text: Callable[[Any], str] = dumps,
               layout: int = TYPED_LAYOUT) -> dict[str, Any]:
    # Every key of a struct, null where the instance has none: the row as it reads back.
    answer = {key: instance["answer"].get(key) for key in _answer_keys(layout)}
    for key in _ANSWER_NAMED:
        if answer[key] is not None:
            answer[key] = named_pairs(answer[key])
    if answer.get("reading") is not None:
        answer["reading"] = dumps(answer["reading"])
    return {
        "id": instance["id"], "family": instance["family"],
        "family_version": instance["family_version"], "paradigm": instance["paradigm"],
        "group": instance["group"], "design": instance["design"],
        "variant": instance["variant"], "split": split_of(instance),
        "axes": named_pairs(instance["axes"]), "fields": named_pairs(instance["fields"]),
        "phases": [{"phase": p["phase"],
                    "messages": [{"role": m["role"], "name": m.get("name"),
                                  "content": m["content"]} for m in p["messages"]]}
                   for p in instance["phases"]],
        "answer": answer,
        "feedback": [{"session": None, **record} for record in instance.get("feedback", [])]
        if "feedback" in instance else None,
        "analysis": analysis_text(instance["analysis"]) if "analysis" in instance else None,
    }


def shard_name(family: str, split: str, subsets: Sequence[tuple[str, str]]) -> str:
    """The release path of the Parquet file holding one family's rows of one split (and one
    value of each subset field)."""
    suffix = "".join(f".{name}-{value}" for name, value in subsets)
    return f"{PARQUET_DIR}/{family}/{split}{suffix}.parquet"


def _row_bytes(row: Mapping[str, Any]) -> bytes:
    """``dump_bytes(row)`` of a row of an instance as written. Its lists and structs hold the
    instance's values, normal already, under names of ASCII; only its strings may be text
    made here (a column kept as JSON text, which need not be NFC where an escape meets a
    combining mark: ``\\n`` then U+0303), so only they are normalised."""
    return dump_instance_bytes({key: normalize(value) if type(value) is str else value
                                for key, value in row.items()})


class _Shard:
    """One Parquet file being written, a row group at a time, while its rows are hashed."""

    def __init__(self, path: Path, layout: int) -> None:
        import pyarrow.parquet as pq

        self.layout = layout
        self.schema = _schema(layout)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Every option that shapes the bytes is set here rather than left to defaults that a
        # later pyarrow might change.
        self.writer = pq.ParquetWriter(
            path, self.schema, version="2.6", compression="zstd", compression_level=3,
            use_dictionary=True, write_statistics=True, data_page_version="1.0",
            store_schema=True, write_page_index=False, write_page_checksum=False)
        self.pending: list[dict[str, Any]] = []
        self.content = hashlib.sha256()
        self.rows = 0

    def add(self, row: dict[str, Any]) -> None:
        """Write a row of an instance as written (``row_of``)."""
        self.pending.append(row)
        self.content.update(_row_bytes(row))
        self.rows += 1
        if len(self.pending) == ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.pending:
            self.writer.write_table(pa.Table.from_pylist(self.pending, schema=self.schema),
                                    row_group_size=ROW_GROUP_ROWS)
            self.pending = []

    def close(self) -> dict[str, Any]:
        from .manifest import sha256_file

        self._flush()
        self.writer.close()
        return {"sha256": sha256_file(self.path), "bytes": self.path.stat().st_size,
                "rows": self.rows, "content_sha256": self.content.hexdigest(),
                "writer": writer_name()}


class ParquetShards:
    """The Parquet files of one family, filled instance by instance in file order."""

    def __init__(self, folder: Path, family: str, subsets: Sequence[str], file: str,
                 layout: int = 3) -> None:
        self.folder = folder
        self.layout = layout
        self.family = family
        self.subsets = tuple(subsets)
        self.file = file
        self.shards: dict[str, _Shard] = {}
        self._analysis_text = TextMemo()  # a family's analysis block, in every instance

    def add(self, instance: Mapping[str, Any]) -> str:
        """Write one instance, as written to its JSONL file; the name of the file it went
        to."""
        values = tuple((name, self._subset_value(instance, name)) for name in self.subsets)
        name = shard_name(self.family, split_of(instance), values)
        if name not in self.shards:
            self.shards[name] = _Shard(self.folder / name, self.layout)
        self.shards[name].add(row_of(instance, self.layout, self._analysis_text))
        return name

    def _subset_value(self, instance: Mapping[str, Any], name: str) -> str:
        # The value becomes part of a file name and of a loader's config name.
        value = instance["fields"].get(name)
        if value is None or not _PLAIN.fullmatch(value):
            raise CheckFailed.single(
                f"subset field {name!r} of {instance['id']} is "
                + ("missing" if value is None else f"{value!r}, not a plain word")
                + "; every instance needs a value of letters, digits and _", self.file)
        return value

    def close(self) -> dict[str, dict[str, Any]]:
        """Finish every file; what the manifest records of each, by release path."""
        return {name: shard.close() for name, shard in sorted(self.shards.items())}


def content_sha256(path: Path) -> tuple[int, str]:
    """The rows of a Parquet file and the SHA-256 of them as canonical JSON lines: what a
    manifest pins when the file's bytes came from another writer."""
    import pyarrow.parquet as pq

    digest = hashlib.sha256()
    rows = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=ROW_GROUP_ROWS):
        for row in batch.to_pylist():
            digest.update(dump_bytes(row))
            rows += 1
    return rows, digest.hexdigest()
