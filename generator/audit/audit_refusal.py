"""What a refused audit raises: each failure in words, a refused declaration (a declared
chance, a positive control, evidence) at the file, line and column of the key that declares
it, and the exit status of bad input when the refusal is of something the spec declares.

A declaration the audit refuses is an error of the spec, like any other the validator finds:
the author fixes the key, not the data. So it is located as the validator locates (the
family's file where the family writes the key, its paradigm's where the family takes it from
there) and raised as bad input (exit 2). Failures that refuse the data a family makes (an
adversary that beats chance, a leak) stay failed checks (exit 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import CheckFailed, MemspecError, Problem, SpecError
from ..spec.catalog import Catalog
from ..spec.yamlsafe import Located
from .audit_report import AuditReport, describe_failure
from .audit_structure import Finding


def _holds(data: Any, path: Sequence[str]) -> bool:
    """Whether ``data`` has a value at ``path``."""
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return False
        data = data[key]
    return True


def declaring_spec(catalog: Catalog, family_id: str, path: Sequence[str]) -> Located | None:
    """The spec file that writes the key at ``path`` for ``family_id``: the family's own,
    else its paradigm's (whose ``audit`` block the family's is laid over); None if neither
    writes it or the family cannot be loaded."""
    try:
        family = catalog.family(family_id)
    except MemspecError:
        return None
    for located in (family.located, family.paradigm.located):
        if _holds(located.data, path):
            return located
    return None


def _located(finding: Finding, catalog: Catalog | None, fallback: str, message: str
             ) -> Problem:
    """``message`` at the key ``finding`` refuses, where ``catalog`` holds the spec that
    writes it; else at ``fallback`` (the release), naming the key."""
    located = declaring_spec(catalog, finding.family, finding.declared_at) \
        if catalog is not None else None
    if located is None:
        return Problem(f"{message} (declared at {'.'.join(finding.declared_at)})", fallback)
    line, column = located.where(finding.declared_at)
    return Problem(message, located.file, line, column, finding.declared_at)


def refusal(report: AuditReport, catalog: Catalog | None, fallback: str,
            suffix: str = "", notes: Sequence[str] = ()) -> MemspecError:
    """The error a command raises for a failed ``report``: one problem per failure (each
    that is not a declaration's followed by ``suffix``), a refused declaration located at
    its key when ``catalog`` holds the specs the release was built from (its spec audits
    ran), else at ``fallback``; then each of ``notes`` (what changed in the audit since).
    ``SpecError`` (exit 2) when some declaration is refused, else ``CheckFailed`` (exit 1)."""
    specs = catalog if report.specs_skipped is None else None
    declarations = [f for f in report.findings if not f.passed and f.declared_at]
    # A refused declaration's detail says what to declare instead: the suffix (what to do
    # about a leak) is for the others.
    problems = [_located(f, specs, fallback, describe_failure(
        {"check": f.check, "family": f.family, "detail": f.detail})) for f in declarations]
    problems += [Problem(describe_failure(failure) + suffix, fallback)
                 for failure in report.failures() if not _is_declaration(failure, declarations)]
    # What changed in the audit since an earlier freeze, said after the failures it explains.
    problems += [Problem(note, fallback) for note in notes]
    return SpecError(problems) if declarations else CheckFailed(problems)


def _is_declaration(failure: Mapping[str, Any], declarations: Sequence[Finding]) -> bool:
    return any(failure.get("check") == f.check and failure.get("family") == f.family and
               "hits" not in failure for f in declarations)
