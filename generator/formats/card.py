"""The dataset card (README.md) of a built release."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..spec.spec import ReleaseSpec
from .croissant import design_citation, release_citation
from .dataset_configs import Config, size_category
from .release_layouts import first_layout_with, release_layout


def _yaml_str(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


#: The first layout whose card escapes Markdown in descriptions (earlier layouts are frozen
#: with their descriptions as written, some of which hold ``_``, ``*`` or ``<…>``); the
#: layout table (``release_layouts``) decides.
ESCAPED_DESCRIPTIONS_LAYOUT = first_layout_with("escapes_markdown")
#: Characters that can start Markdown or HTML inside a line.
_MARKDOWN_INLINE = re.compile(r"([\\`*_{}\[\]<>|~&!])")
#: What makes a paragraph's start a heading, a list item or a quote.
_MARKDOWN_LINE_START = re.compile(r"^(\d*)([#+-]|(?<=\d)[.)])")


def markdown_text(text: str) -> str:
    """``text`` (from a spec) as one Markdown paragraph that shows it as written: white space
    joined, every character that could start emphasis, code, a link, HTML or a table cell
    backslash-escaped (CommonMark lets any ASCII punctuation be), and a start that would make
    a heading, a list or a quote escaped too."""
    flat = _MARKDOWN_INLINE.sub(r"\\\1", " ".join(text.split()))
    return _MARKDOWN_LINE_START.sub(r"\1\\\2", flat)


def _description(text: str, layout: int) -> str:
    """A description as the card of ``layout`` shows it."""
    if release_layout(layout).escapes_markdown:
        return markdown_text(text)
    return " ".join(text.split())


def _failure_outcome(failure: Mapping[str, Any]) -> str:
    if "hits" in failure:
        return (f"{failure['hits']}/{failure['trials']} right, chance {failure['chance']:.3g}, "
                f"Holm p = {failure['p_holm']:.3g}")
    return str(failure["detail"]).replace("|", "\\|")


#: Under the title of a draft's card: what it is, and how it becomes a release.
DRAFT_NOTICE = ("**Draft: not published.** This version was frozen with `memspec freeze "
                "--draft`: no committed manifest pins it, so its bytes may still change. "
                "Freeze it without `--draft` to publish it.")


def render_card(release: ReleaseSpec, counts: Mapping[str, Any], root_sha256: str,
                descriptions: Mapping[str, str], release_file: str,
                audit_failures: Sequence[Mapping[str, Any]] = (), *, layout: int = 1,
                audit_summary: Sequence[Mapping[str, Any]] = (),
                audit_unavailable: Sequence[str] = (),
                audit_exempt: Mapping[str, str] | None = None,
                audit_unattacked: Mapping[str, str] | None = None,
                audit_rules: int = 1,
                audit_conventions: Mapping[str, float] | None = None,
                charts: Sequence[str] = (), configs: Sequence[Config] = (),
                checks: Sequence[str] = (), draft: bool = False) -> str:
    """Markdown with YAML front matter; a pure function of its arguments. ``layout`` 2 adds
    the audit summary and the charts (files of the release, linked by relative path);
    ``layout`` 3 the loader ``configs`` over the Parquet files, the card metadata, the designs
    the release follows with their citations, and how to load it. ``checks`` are the lines
    of the section on the checks the release declares (none: no section). A ``draft`` says
    so under its title (only ever a release of the latest layout: a draft is never pinned)."""
    families = counts["families"]
    features = release_layout(layout)
    lines = ["---", f"license: {release.license.lower()}",
             f"pretty_name: {_yaml_str(release.full_name)}"]
    if features.loader_exports:
        lines += _metadata_lines(release, counts) + _config_lines(configs)
    else:
        lines += ["configs:"]
        for family_id in families:
            lines += [
                f"- config_name: {_yaml_str(family_id)}",
                f"  data_files: {_yaml_str('data/' + family_id + '.jsonl')}",
            ]
    lines += [
        "---",
        "",
        f"# {release.full_name}",
        "",
        *([DRAFT_NOTICE, ""] if draft else []),
        _description(release.description, layout),
        "",
        f"- seed: `{release.seed}`",
        f"- instances: {counts['instances']} in {counts['groups']} groups",
        f"- data root hash (SHA-256 over the data files' sums): `{root_sha256}`",
        "",
        "## Families",
        "",
        "| family | paradigm | version | groups | instances |",
        "| --- | --- | --- | --- | --- |",
    ]
    for family_id, info in families.items():
        lines.append(f"| `{family_id}` | `{info['paradigm']}` | {info['version']} | "
                     f"{info['groups']} | {info['instances']} |")
    partitioned = {f: i for f, i in families.items() if "fields" in i or "splits" in i}
    if partitioned:
        lines += ["", "## Partitions and splits", "",
                  "Fields the release adds to every instance of a family, and instances per "
                  "split (each instance's `split` field).", "",
                  "| family | fields | splits |", "| --- | --- | --- |"]
        for family_id, info in partitioned.items():
            fields = ", ".join(f"{k}={v}" for k, v in info.get("fields", {}).items())
            splits = ", ".join(f"{k}: {v}" for k, v in info.get("splits", {}).items())
            lines.append(f"| `{family_id}` | {fields} | {splits} |")
    if audit_failures:
        lines += ["", "## Audit failures", "",
                  "This release was frozen with `--allow-audit-failures`: on these families a "
                  "system without memory beats chance (`memspec audit`), so their scores may "
                  "measure plausibility rather than memory.", "",
                  "| check | family | outcome |", "| --- | --- | --- |"]
        for f in audit_failures:
            lines.append(f"| {f['check']} | `{f['family']}` | {_failure_outcome(f)} |")
    if features.audit_summary:
        lines += _audit_section(audit_summary, audit_unavailable, audit_exempt or {},
                                audit_unattacked or {}, audit_rules)
        lines += _conventions_section(audit_conventions or {})
    if features.charts:
        lines += _charts_section(charts)
    lines += list(checks)
    lines += ["", "## What each family measures", ""]
    for family_id in families:
        lines += [f"- `{family_id}`: {_description(descriptions[family_id], layout)}"]
    if features.loader_exports:
        loading = (_typed_loading_section(release, configs) if features.typed_parquet
                   else _loading_section(release, configs))
        return "\n".join(lines + _designs_section(release, root_sha256) + loading
                         + _files_section(charts, parquet=True, layout=layout)
                         + _rebuild_section(release, f"memspec build {release.full_name}"))
    return "\n".join(lines + _files_section(charts, parquet=False)
                     + _rebuild_section(release, f"memspec freeze {release_file}"))


def _files_section(charts: Sequence[str], parquet: bool, layout: int = 1) -> list[str]:
    return [
        "",
        "## Files",
        "",
        "- `data/<family>.jsonl`: one instance per line, canonical JSON (UTF-8, NFC, sorted keys).",
        "  Each instance has an `id` (`<family>-<group>-<variant>`), its `group` (the unit of",
        "  pairing), its `axes` (the variant's values), `phases` (role-tagged messages in order),",
        "  the `answer` (gold and scorer kind) and extra `fields`.",
        "- `manifest.json`: SHA-256 and size of every file, counts, the seed, the hashes of every",
        "  spec, template and pool used, and the versions of the tools that made it.",
        "- `SHA256SUMS`: every other file's SHA-256; `sha256sum -c --strict SHA256SUMS` checks it.",
        "- `README.md`: this card.",
        *(["- `plots/`: the charts above, as SVG."] if charts else []),
        *([_TYPED_PARQUET_FILES if release_layout(layout).typed_parquet else _PARQUET_FILES,
           "- `croissant.json`: the release described in Croissant 1.0 "
           "(the JSONL files with their SHA-256, one record set per family)."]
          if parquet else []),
        *([_MESSAGES_FILES] if release_layout(layout).croissant_messages else []),
    ]


def _rebuild_section(release: ReleaseSpec, command: str) -> list[str]:
    return [
        "",
        "## Rebuild and verify",
        "",
        "```",
        command,
        f"memspec verify dist/{release.full_name} --regenerate",
        "```",
        "",
    ]


_PARQUET_FILES = (
    "- `parquet/<family>/<split>….parquet`: the same rows in one Parquet schema for every "
    "family (the\n  conversation nested, varying objects as JSON text), for dataset loaders. "
    "pyarrow writes its\n  version into each file, so the manifest pins these bytes with the "
    "pyarrow that wrote them and,\n  for any other pyarrow, the rows (`content_sha256`).")


_MESSAGES_FILES = (
    "- `messages/<family>.jsonl`: the messages again, one line per message in conversation "
    "order\n  (`id`, `phase_index`, `phase`, `index`, then the message's `role`, `content` and "
    "`name`),\n  canonical JSON: the record set `<family>_messages` of `croissant.json`.")


_TYPED_PARQUET_FILES = (
    "- `parquet/<family>/<split>….parquet`: the same rows in one typed Parquet schema for "
    "every\n  family: `axes` and `fields` as lists of `{name, value}`, the `answer` a struct "
    "(its\n  `distractors` and `policies` lists of `{name, value}`, `gold_index` a nullable "
    "integer), `feedback`\n  a list of its rounds, `analysis` JSON text, and the `split` (also "
    "in `fields` where the release\n  declares splits). pyarrow writes its version into each "
    "file, so the manifest pins these\n  bytes with the pyarrow that wrote them and, for any "
    "other pyarrow, the rows (`content_sha256`).")


def _typed_loading_section(release: ReleaseSpec, configs: Sequence[Config]) -> list[str]:
    """Layout 4: one line per common loader that gives the whole data, typed."""
    names = ", ".join(f"`{c.name}`" for c in configs[:8])
    more = f" and {len(configs) - 8} more" if len(configs) > 8 else ""
    folder = release.full_name
    return [
        "", "## Loading", "",
        f"Configs: {names}{more} (every family, paradigm and subset; `all` is the default). "
        "Every loader below reads the Parquet files, which keep every column typed: polars and "
        "`datasets`' own JSON reader take the types of nested columns from the first lines "
        "or file they read, and the keys of `axes`, `fields` and `answer` vary by family, so "
        "read the JSONL files line by line (`json.loads`) or use the Parquet files.",
        "", "```python", "from datasets import load_dataset", "",
        f'ds = load_dataset("{folder}", "{configs[0].name}")  # every config: one line each',
        "",
        "import pandas as pd", "",
        f'df = pd.read_parquet("{folder}/parquet", dtype_backend="pyarrow")',
        "",
        "import polars as pl", "",
        f'pf = pl.read_parquet("{folder}/parquet/**/*.parquet")',
        "",
        "import duckdb", "",
        f"rows = duckdb.sql(\"SELECT * FROM '{folder}/parquet/**/*.parquet'\").fetchall()",
        "```", "",
        "An axis or field: `[a['value'] for a in row['axes'] if a['name'] == 'condition']`, in "
        "duckdb `[a.value FOR a IN axes IF a.name = 'condition'][1]`. Croissant: "
        "`mlcroissant.Dataset(jsonld=\"croissant.json\").records(\"<family>\")`. inspect_ai: "
        f"`memspec export {folder} --format inspect --out DIR` writes its samples and a task "
        "that needs inspect_ai alone.",
    ]


def _metadata_lines(release: ReleaseSpec, counts: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for key, values in (("language", release.language),
                        ("task_categories", release.task_categories), ("tags", release.tags),
                        ("size_categories", (size_category(counts["instances"]),))):
        if values:
            lines += [f"{key}:", *(f"- {_yaml_str(v)}" for v in values)]
    return lines


def _config_lines(configs: Sequence[Config]) -> list[str]:
    lines = ["configs:"]
    for index, config in enumerate(configs):
        lines.append(f"- config_name: {_yaml_str(config.name)}")
        if index == 0:
            lines.append("  default: true")
        lines.append("  data_files:")
        for split, paths in config.splits.items():
            lines += [f"  - split: {_yaml_str(split)}", "    path:",
                      *(f"    - {_yaml_str(path)}" for path in paths)]
    return lines


def _designs_section(release: ReleaseSpec, root_sha256: str) -> list[str]:
    lines = ["", "## Designs and citation", ""]
    if release.designs:
        lines += ["The release follows these published designs; the text of every instance "
                  "is memspec's own.", ""]
        for design in release.designs:
            where = "".join(f", {part}" for part in (design.venue, design.url and
                                                      f"<{design.url}>") if part)
            lines.append(f"- {_authors(design.authors)} ({design.year or 'n.d.'}). "
                         f"*{design.title}*{where}. {' '.join(design.how.split())}")
        lines.append("")
    lines += ["Cite the release as", "", "```bibtex", release_citation(release, root_sha256),
              "```"]
    if release.designs:
        lines += ["", "and the designs as", "", "```bibtex",
                  "\n\n".join(design_citation(d) for d in release.designs), "```"]
    return lines


def _authors(names: Sequence[str]) -> str:
    """Authors as a reader expects them; BibTeX's trailing "others" reads "et al."."""
    if names[-1] == "others":
        return f"{', '.join(names[:-1])} et al."
    return ", ".join(names)


def _loading_section(release: ReleaseSpec, configs: Sequence[Config]) -> list[str]:
    names = ", ".join(f"`{c.name}`" for c in configs[:8])
    more = f" and {len(configs) - 8} more" if len(configs) > 8 else ""
    return [
        "", "## Loading", "",
        f"Configs: {names}{more} (every family, paradigm and subset; `all` is the default).",
        "", "```python", "from datasets import load_dataset", "",
        f'ds = load_dataset("path/to/{release.full_name}", "{configs[0].name}")',
        "```", "",
        "Croissant: `mlcroissant.Dataset(jsonld=\"croissant.json\").records(\"<family>\")`. "
        "inspect_ai: `memspec export " + release.full_name + " --format inspect --out DIR` "
        "writes its samples and a task.",
    ]


def _audit_intro(unavailable: Sequence[str], complete: bool) -> str:
    """What the audit asked of the release; adversaries that could not run are named as such,
    not listed among those that did. ``complete``: the audit that tests every item kind and
    every family's coverage (releases frozen before it keep the words they were frozen with)."""
    embedding = not any(name.startswith("embedding_nearest") for name in unavailable)
    adversaries = ("answer position, majority gold, longest and shortest option, word overlap "
                   "with the probe, a probe-only classifier"
                   + (", a pretrained text-embedding model" if embedding else ""))
    missing = (f" Not run where it was frozen: {', '.join(unavailable)}." if unavailable
               else "")
    if complete:
        return (
            "The release was frozen after `memspec audit`. On choice items, memoryless "
            f"adversaries ({adversaries}; newest or oldest year, largest or smallest number, "
            "earliest in the visible text, most or least frequent option, the odd one out; "
            "the classifier cross-validated across families and within each); on open items, "
            "memoryless policies scored by the family's own scorer (the declared prior, "
            "echoes of an earlier reply or call, a copy of the probe, the most common answer, "
            "abstaining, always or never acting, and the policies the family declares). None "
            "may beat its chance level (one-sided exact binomial test, Holm-corrected, alpha "
            "0.05). Gold positions, cells and the balance the specs declare must hold exactly; "
            "no visible message may give the answer away, declared evidence must be shown, no "
            "control arm may say a theme word, no duplicate may occur; every counterfeit must "
            "match the record it forges in length within 5% and in format; a family no "
            "adversary covers must declare why. `memspec audit` and `memspec report` show "
            f"every row.{missing}")
    return (
        f"The release was frozen after `memspec audit`. Memoryless adversaries ({adversaries}) "
        "must not beat chance on any family (one-sided exact binomial test, Holm-corrected, "
        "alpha 0.05); gold positions, cells and the balance the specs declare must hold "
        "exactly; no probe, control arm or duplicate may leak; every counterfeit must match the "
        "record it forges in length within 5% and share none of its named entities. `memspec "
        f"audit` and `memspec report` show every row.{missing}")


def _conventions_section(conventions: Mapping[str, float]) -> list[str]:
    """Each dataset's convention baseline (releases frozen by the audit's rules 2 on): how
    much of a score a system that knows only the dataset's answer form reaches."""
    if not conventions:
        return []
    return ["", "Convention baselines: the score of a system that answers every item as "
            "another item of its dataset is answered (it knows the dataset's answer form and "
            "nothing of the user's sessions); a score near it needs no memory.", "",
            "| dataset | convention baseline |", "| --- | --- |",
            *(f"| `{family}` | {score:.3f} |" for family, score in sorted(conventions.items()))]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|")


#: What the card of a release audited by rules 2 or later says a memoryless system sees
#: (``audit_view``); cards of releases frozen before keep the words they were frozen with.
MEMORYLESS_VIEW = (
    "A memoryless system is taken to see every message of the phases that are not memory "
    "phases and, of a memory phase, the tool results handed in before the assistant says "
    "anything in it (a lookup read now); what the remembered session said and did, the tool "
    "results of its own calls included, is memory. Chance is the design's wherever it fixes "
    "it (options, act/don't-act arms); a declared positive control is verified by the "
    "memoryless policy it declares; the draw is balanced over arms and variants and each "
    "variant is tested on its own (audit rules {rules}).")


def _audit_section(summary: Sequence[Mapping[str, Any]], unavailable: Sequence[str],
                   exempt: Mapping[str, str], unattacked: Mapping[str, str],
                   rules: int = 1) -> list[str]:
    complete = any("coverage" in row for row in summary)
    intro = _audit_intro(unavailable, complete)
    if rules >= 2:
        intro += " " + MEMORYLESS_VIEW.format(rules=rules)
    lines = ["", "## Audit", "", intro, "",
             "| family | adversaries (strongest) | balance | leakage | counterfeit | "
             "declared checks | result |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in summary:
        lines.append(f"| `{row['family']}` | {_cell(row['adversaries'])} | "
                     f"{_cell(row['balance'])} | {_cell(row['leakage'])} | "
                     f"{_cell(row['counterfeit'])} | {_cell(row['declared'])} | "
                     f"{'pass' if row['passed'] else 'FAIL'} |")
    if exempt:
        lines += ["", "No adversary can test these families; each says why:", ""]
        lines += [f"- `{family}`: {reason}" for family, reason in sorted(exempt.items())]
    if unattacked:
        lines += ["", "Items no memoryless adversary attacked, and why:", ""]
        lines += [f"- `{family}`: {why}" for family, why in sorted(unattacked.items())]
    return lines


def _charts_section(charts: Sequence[str]) -> list[str]:
    if not charts:
        return []
    lines = ["", "## Charts", ""]
    for chart in charts:
        name = chart.rsplit("/", 1)[-1].removesuffix(".svg").replace("_", " ")
        lines += [f"![{name}]({chart})", ""]
    return lines[:-1]
