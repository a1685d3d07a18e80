"""Whether the files a release pins are what their names say: ``croissant.json`` a Croissant
description of the release, each Parquet file a Parquet table of the release's columns and
rows. A release folder whose files were replaced with garbage and whose seal was then
computed again (its sums and manifest entries re-hashed) passes every digest; only reading
the files as what they are tells. Cheap by design: one JSON document, and the footer of each
Parquet file, never its rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import Problem, SpecError
from ..core.json_files import read_json_file
from ..formats.croissant import CONFORMS_TO
from ..formats.manifest import CROISSANT_FILE
from ..formats.parquet_export import column_names


def unreadable_contents(folder: Path, manifest: Mapping[str, Any],
                        names: Iterable[str]) -> list[Problem]:
    """Problems of the files ``names`` (pinned by ``manifest``, their digests already found
    to match) that are not readable as what they are, each at its file."""
    problems: list[Problem] = []
    files = manifest["files"]
    for name in sorted(names):
        if name == CROISSANT_FILE:
            problems += _croissant_problems(folder / name, files)
        elif name.endswith(".parquet") and name in files:
            problems += _parquet_problems(folder / name, name, files[name],
                                          manifest["manifest_version"])
    return problems


def _croissant_problems(path: Path, files: Mapping[str, Any]) -> list[Problem]:
    try:
        document = read_json_file(path, CROISSANT_FILE)
    except SpecError as exc:  # not UTF-8, not JSON, too deep: at its line and column
        return exc.problems
    wrong = _croissant_shape(document, files)
    if wrong:
        return [Problem(f"not a Croissant description of this release: {wrong}",
                        CROISSANT_FILE)]
    return []


def _croissant_shape(document: object, files: Mapping[str, Any]) -> str | None:
    """What is wrong with the shape of a Croissant document of a release pinning ``files``,
    or None: a dataset conforming to Croissant 1.0, whose distribution lists files of the
    release with the digests the manifest pins."""
    if not isinstance(document, dict):
        return "not a JSON object"
    if document.get("@type") != "sc:Dataset" or document.get("conformsTo") != CONFORMS_TO:
        return f"not an sc:Dataset conforming to {CONFORMS_TO}"
    distribution, record_sets = document.get("distribution"), document.get("recordSet")
    if not isinstance(distribution, list) or not isinstance(record_sets, list) or \
            not all(isinstance(item, dict) for item in [*distribution, *record_sets]):
        return "no list of objects under 'distribution' and 'recordSet'"
    for item in distribution:
        name = item.get("contentUrl")
        if not isinstance(name, str) or name not in files:
            return f"its distribution names a file the release does not pin: {name!r}"
        if item.get("sha256") != files[name].get("sha256"):
            return f"its distribution gives {name} another SHA-256 than manifest.json"
    return None


def _parquet_problems(path: Path, name: str, info: Mapping[str, Any],
                      layout: int) -> list[Problem]:
    import pyarrow.parquet as pq
    from pyarrow import ArrowException

    try:
        metadata = pq.read_metadata(path)  # the footer only
        columns = tuple(metadata.schema.to_arrow_schema().names)
    except (OSError, ValueError, ArrowException) as exc:
        return [Problem(f"not a Parquet file: {exc}", name)]
    expected = column_names(layout)
    if columns != expected:
        return [Problem(f"Parquet columns {', '.join(columns)} are not the release's "
                        f"({', '.join(expected)})", name)]
    if isinstance(info.get("rows"), int) and metadata.num_rows != info["rows"]:
        return [Problem(f"Parquet file holds {metadata.num_rows:,} rows; manifest.json says "
                        f"{info['rows']:,}", name)]
    return []
