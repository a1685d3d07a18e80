"""The report of `memspec normalize` (several systems' scores normalised per dataset) as
terminal tables and as CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.table import Table

from .report_format import UNDEFINED, PlainTable, csv_cell, format_value

#: The CSV's columns, in this order (a column is there whether or not a row has a value).
CSV_COLUMNS = ("system", "dataset", "partition", "metric", "items", "average", "minmax", "z",
               "reference_minmax", "reference_z", "weighted_average", "z_score")


def _partition(entry: dict[str, Any]) -> str:
    return "(all)" if entry["key"] is None else f"{entry['key']}={entry['value']}"


def _reference(pair: list[float] | tuple[float, float] | None) -> str:
    return UNDEFINED if pair is None else f"{pair[0]:g}, {pair[1]:g}"


def as_normalise_tables(report: dict[str, Any]) -> list[Table]:
    """Three tables: each dataset's pooled statistics and declared reference; each system's
    scores per dataset; each system's summary per partition."""
    by = report["by"]
    stats = PlainTable("dataset", *by, "metric", "items", "min", "max", "mean", "sd",
                       "reference min, max", "reference mean, sd",
                       title=f"Datasets ({report['dataset_key']}): statistics over every "
                             "system's items")
    for d in report["datasets"]:
        stats.add_row(d["dataset"], *(d[k] for k in by), d["metric"], str(d["items"]),
                      *(format_value(d[k], UNDEFINED) for k in ("min", "max", "mean", "sd")),
                      _reference(d["reference_minmax"]), _reference(d["reference_z"]))
    scores = PlainTable("system", "dataset", "items", "average", "min-max", "z",
                        "min-max (reference)", "z (reference)",
                        title="Per dataset: mean, normalised over the systems and against "
                              "the declared reference")
    for row in report["scores"]:
        scores.add_row(row["system"], row["dataset"], str(row["items"]),
                       *(format_value(row[k], UNDEFINED)
                         for k in ("average", "minmax", "z", "reference_minmax",
                                   "reference_z")))
    summary = PlainTable("partition", "system", "datasets", "average (min-max)",
                         "weighted average (min-max)", "z score",
                         title="Per partition: MemoryBench's summary")
    for entry in report["summaries"]:
        summary.add_row(_partition(entry), entry["system"], str(entry["datasets"]),
                        *(format_value(entry[k], UNDEFINED)
                          for k in ("average", "weighted_average", "z_score")))
    return [stats, scores, summary]


def as_normalise_csv(report: dict[str, Any]) -> str:
    """A row per system and dataset, then a row per system and partition (dataset ``(all)``),
    under the columns of ``CSV_COLUMNS``."""
    metric = {d["dataset"]: d["metric"] for d in report["datasets"]}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in report["scores"]:
        partition = ",".join(f"{k}={row[k]}" for k in report["by"]) or "(all)"
        cells = {**row, "partition": partition, "metric": metric[row["dataset"]]}
        writer.writerow([csv_cell(cells.get(column)) for column in CSV_COLUMNS])
    for entry in report["summaries"]:
        # The summary's "average" is a mean of min-max means: it goes under min-max.
        cells = {**entry, "dataset": "(all)", "partition": _partition(entry),
                 "average": None, "minmax": entry["average"]}
        writer.writerow([csv_cell(cells.get(column)) for column in CSV_COLUMNS])
    return buffer.getvalue()
