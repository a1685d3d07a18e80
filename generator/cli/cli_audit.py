"""The audit command: can a system without memory pass a release?"""


import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.errors import printable
from .cli_common import (
    AuditFormat,
    _catalog_if_any,
    _check_seed,
    _print_table,
    _run,
    _status,
    app,
    err,
)


@app.command(short_help="Can a system without memory pass the release?")
def audit(
    release_dir: Annotated[Path, typer.Argument(help="A built release folder.")],
    output_format: Annotated[AuditFormat, typer.Option("--format", help="table or json.")] \
        = "table",
    seed: Annotated[int, typer.Option(help="Seed of the one-instance-per-group draw.")] = 0,
    as_frozen: Annotated[bool, typer.Option(
        "--as-frozen", help="Run by the audit's rules the release was frozen with (its "
        "manifest records them), reproducing the verdict it was frozen with.")] = False,
) -> None:
    """Audit a release (exit 1 on any failure): memoryless adversaries must not beat chance;
    gold positions, cells and declared balance must hold exactly; no probe, control arm or
    duplicate may leak; every counterfeit must match its original's length (±5%) and share
    none of its named entities. The spec audits need the project the release was built
    from."""
    from ..audit.audit_family_part import data_digests
    from ..audit.audit_frozen import as_frozen_notes
    from ..audit.audit_refusal import refusal
    from ..audit.run import (
        CURRENT_RULES,
        FROZEN_AUDIT_NOTE,
        audit_families,
        frozen_rules,
    )
    from ..audit.score_notes import CONVENTIONS_NOTE
    from ..core.limits import CommandBudget
    from ..release.release_data import release_sources
    from ..report.report_format import audit_table, conventions_table, findings_table

    def action() -> None:
        _check_seed(seed)
        catalog = _catalog_if_any()
        manifest, sources = release_sources(release_dir, catalog)
        with CommandBudget("audit", str(release_dir)), \
                _status(f"auditing {printable(str(release_dir))}"):
            version = frozen_rules(manifest) if as_frozen else CURRENT_RULES
            # The release verified: its manifest's sums are its files' (the cache's key).
            report = audit_families(sources, seed, catalog=catalog, manifest=manifest,
                                    rules_version=version,
                                    digests=data_digests(manifest.get("files", {})))
        if as_frozen:
            report.as_frozen = as_frozen_notes(
                report.summary(), report.frozen_differences, manifest,
                _not_compared(report, seed), version)
        if output_format == "json":
            sys.stdout.write(json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
        else:
            _print_table(audit_table(report))
            _print_table(findings_table(report))
            conventions = conventions_table(report)
            if conventions is not None:
                _print_table(conventions)
                err.print(f"note: {CONVENTIONS_NOTE}", markup=False)
            if report.specs_skipped:
                err.print(f"note: spec audits skipped: {report.specs_skipped}", markup=False)
            for adversary in report.unavailable:
                err.print(f"note: adversary not run: {adversary}", markup=False)
            for family, why in sorted(report.unattacked.items()):
                err.print(f"note: not attacked on {family}: {why}", markup=False)
            for difference in report.frozen_differences:
                err.print(f"note: {difference}", markup=False)
            if report.frozen_differences:
                err.print(f"note: {FROZEN_AUDIT_NOTE}", markup=False)
            if report.rules_changes:
                err.print(f"note: this audit ran by rules {report.rules}; the release was "
                          f"frozen by rules {frozen_rules(manifest)} (`--as-frozen` runs "
                          "those). What changed:", markup=False)
                for change in report.rules_changes:
                    err.print(f"note: {change}", markup=False)
            for line in report.as_frozen:
                err.print(f"note: {line}", markup=False)
        if not report.ok:
            raise refusal(report, catalog, str(release_dir))

    _run(action)


def _not_compared(report: Any, seed: int) -> str | None:
    """Why ``report`` cannot be compared with the audit frozen in the manifest (None if it
    can): a freeze draws at seed 0, with every adversary and the spec audits."""
    if seed != 0:
        return f"the freeze drew at seed 0, this audit at seed {seed}"
    if report.unavailable:
        return f"an adversary could not run here: {'; '.join(report.unavailable)}"
    if report.specs_skipped is not None:
        return f"the spec audits were skipped: {report.specs_skipped}"
    return None
