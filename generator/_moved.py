"""The module names of the flat package (before its stages), kept for one version.

``import memspec.<old>`` (e.g. ``memspec.transforms``) still gives the module that now lives in
a stage (``memspec.core.transforms``), with a DeprecationWarning that names the new place; the
three modules that became stages (``release``, ``audit``, ``cli``) forward their former names
from the stage's package (``forward_names``). Removed in the next version.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

#: Each former module of the package and its place now (relative to the package root).
MOVED: dict[str, str] = {
    "answer_tests": "engine.answer_tests",
    "arm_charts": "release.arm_charts",
    "audit": "audit.run",
    "audit_adversaries": "audit.audit_adversaries",
    "audit_coverage": "audit.audit_coverage",
    "audit_declarations": "spec.audit_declarations",
    "audit_frozen": "audit.audit_frozen",
    "audit_policy_rows": "audit.audit_policy_rows",
    "audit_report": "audit.audit_report",
    "audit_responses": "audit.audit_responses",
    "audit_sampling": "audit.audit_sampling",
    "audit_spec": "audit.audit_spec",
    "audit_structure": "audit.audit_structure",
    "audit_view": "audit.audit_view",
    "bounded_diff": "core.bounded_diff",
    "canonical": "core.canonical",
    "card": "formats.card",
    "catalog": "spec.catalog",
    "cell_plans": "analysis.cell_plans",
    "charts": "release.charts",
    "checks": "engine.checks",
    "cli": "cli.commands",
    "cli_analysis": "cli.cli_analysis",
    "cli_audit": "cli.cli_audit",
    "cli_common": "cli.cli_common",
    "cli_exports": "cli.cli_exports",
    "cli_metavars": "cli.cli_metavars",
    "cli_project": "cli.cli_project",
    "cli_release": "cli.cli_release",
    "code_cache": "core.code_cache",
    "content_index": "engine.content_index",
    "contrasts": "analysis.contrasts",
    "croissant": "formats.croissant",
    "dataset_configs": "formats.dataset_configs",
    "declared_outcomes": "analysis.declared_outcomes",
    "equivalence": "analysis.equivalence",
    "errors": "core.errors",
    "export": "exports.export",
    "export_inspect": "exports.export_inspect",
    "faker_pool": "spec.faker_pool",
    "generate": "engine.generate",
    "generate_answer": "engine.generate_answer",
    "generate_instance": "engine.generate_instance",
    "generate_templates": "engine.generate_templates",
    "group_tests": "analysis.group_tests",
    "html_page": "release.html_page",
    "inspect_task": "exports.inspect_task",
    "instances": "spec.instances",
    "jinja_codegen": "engine.jinja_codegen",
    "jinja_context": "engine.jinja_context",
    "jinja_errors": "engine.jinja_errors",
    "jinja_expressions": "engine.jinja_expressions",
    "jinja_filters": "engine.jinja_filters",
    "jinja_loader": "engine.jinja_loader",
    "jinja_messages": "engine.jinja_messages",
    "jinja_output": "engine.jinja_output",
    "jinja_sandbox": "engine.jinja_sandbox",
    "jinja_sized_filters": "engine.jinja_sized_filters",
    "judge": "analysis.judge",
    "judge_panel": "analysis.judge_panel",
    "length_match": "core.length_match",
    "limits": "core.limits",
    "limits_budget": "core.limits_budget",
    "limits_commands": "core.limits_commands",
    "limits_settings": "core.limits_settings",
    "loader_exports": "formats.loader_exports",
    "manifest": "formats.manifest",
    "memo": "engine.memo",
    "new_project": "spec.new_project",
    "panel_format": "report.panel_format",
    "parallel": "engine.parallel",
    "parallel_chunks": "engine.parallel_chunks",
    "parallel_dask": "engine.parallel_dask",
    "parallel_executor": "engine.parallel_executor",
    "parallel_forked": "engine.parallel_forked",
    "parallel_processes": "engine.parallel_processes",
    "parallel_worker": "engine.parallel_worker",
    "parquet_export": "formats.parquet_export",
    "policies": "analysis.policies",
    "pool_coverage": "spec.pool_coverage",
    "pools": "spec.pools",
    "preview": "report.preview",
    "project": "spec.project",
    "release": "release.freezing",
    "release_atomic": "release.release_atomic",
    "release_checks": "formats.release_checks",
    "release_data": "release.release_data",
    "release_families": "release.release_families",
    "release_folders": "formats.release_folders",
    "release_inputs": "release.release_inputs",
    "release_layouts": "formats.release_layouts",
    "release_of": "spec.release_of",
    "release_stats": "release.release_stats",
    "release_writing": "release.release_writing",
    "render": "engine.render",
    "report": "report.report",
    "report_format": "report.report_format",
    "responses": "analysis.responses",
    "rng": "core.rng",
    "safe_regex": "core.safe_regex",
    "sampling": "engine.sampling",
    "scaffold": "spec.scaffold",
    "scaffold_files": "spec.scaffold_files",
    "schemas": "spec.schemas",
    "score": "analysis.score",
    "score_contrasts": "analysis.score_contrasts",
    "score_grouping": "analysis.score_grouping",
    "score_intervals": "analysis.score_intervals",
    "score_judge": "analysis.score_judge",
    "score_metrics": "analysis.score_metrics",
    "score_options": "analysis.score_options",
    "score_outcome": "analysis.score_outcome",
    "score_summaries": "analysis.score_summaries",
    "scoring": "analysis.scoring",
    "shards": "release.shards",
    "show": "cli.show",
    "signal_detection": "analysis.signal_detection",
    "sized": "engine.sized",
    "spec": "spec.spec",
    "spec_family": "spec.spec_family",
    "spec_family_checks": "spec.spec_family_checks",
    "spec_files": "spec.spec_files",
    "spec_paradigm": "spec.spec_paradigm",
    "spec_release": "spec.spec_release",
    "spec_slots": "spec.spec_slots",
    "spec_types": "spec.spec_types",
    "stats": "analysis.stats",
    "transforms": "core.transforms",
    "validate": "cli.validate",
    "verify": "release.verify",
    "writeback": "core.writeback",
    "yamlsafe": "spec.yamlsafe",
}

_ROOT = __name__.rpartition(".")[0]


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is now {new}; the old name goes in the next version",
                  DeprecationWarning, stacklevel=3)


# The loader and the finder are the import system's protocols, not subclasses of
# importlib.abc's: importing that module (importlib.resources, tempfile, shutil, random and
# more) was a tenth of what `memspec --help` imports.
class _Alias:
    """Loads a former name as the module that now holds its code (one module object: the
    same functions, the same state)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        _warn(module.__name__, self.new)
        # The import system returns what sys.modules holds after this: the real module.
        sys.modules[module.__name__] = importlib.import_module(self.new)


class _Finder:
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        new = MOVED.get(name) if package == _ROOT else None
        if new is None or new.partition(".")[0] == name:
            return None  # not a former name, or a stage that now has that name
        return importlib.machinery.ModuleSpec(fullname, _Alias(f"{_ROOT}.{new}"))


def install() -> None:
    """Put the finder first (before the path finder, which would take the package's
    ``schemas/`` folder of JSON files for a namespace package)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def forward_names(package: str, module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the stage ``package`` that replaced the module of the same
    name: a name of that former module, now in ``package.module``, with a warning."""
    def __getattr__(name: str) -> Any:
        import pkgutil

        here = sys.modules[package]
        if name.startswith("__") or name in {m.name for m in pkgutil.iter_modules(here.__path__)}:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        home = importlib.import_module(f"{package}.{module}")
        if not hasattr(home, name):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        _warn(f"{package}.{name}", f"{package}.{module}.{name}")
        return getattr(home, name)
    return __getattr__


install()
