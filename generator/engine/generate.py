"""Instances of a family: sample a group's slots, expand its variants, render, check.

``FamilyGenerator`` runs groups within their budget; what it renders is built by its bases:
``generate_templates`` (the spec's templates), ``generate_answer`` (answers) and
``generate_instance`` (one instance of a variant)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from functools import partial
from typing import Any, TypeVar

from ..core.canonical import CanonicalJSONError, PlainCopies, TextMemo, normalize
from ..core.errors import SpecError
from ..core.limits import Budget, BudgetExceeded, group_megabytes, group_seconds
from ..spec.spec import FamilySpec
from .checks import CheckRunner, RenderedVariant
from .generate_instance import InstanceRendering, instance_id
from .generate_templates import PhaseTemplate
from .memo import InputMemo
from .render import CompiledTemplate, Renderer
from .sampling import sample_slots

__all__ = ["FamilyGenerator", "PhaseTemplate", "instance_id"]

T = TypeVar("T")


class FamilyGenerator(InstanceRendering):
    """Generates the instances of one family under one seed, group by group."""

    def __init__(self, family: FamilySpec, renderer: Renderer, seed: int) -> None:
        self.family = family
        self.renderer = renderer
        self.seed = seed
        self.variants = family.variants()
        self.checks = CheckRunner(family.checks, renderer, family.file)
        self._phase_templates = {name: self._phase_template(name) for name in family.phases}
        self._designs = {design.name: design for design in family.designs}
        self._slot_cache: dict[tuple, Any] = {}  # what sampling keeps across groups
        self._answer_templates: dict[tuple, CompiledTemplate] = {}
        #: What the family and its paradigm declare for the audit.
        self._audit_block = family.audit
        self._budget = Budget(group_seconds(), group_megabytes())
        self._answer_memo = InputMemo(self._answer_names)
        self._descriptions: dict[str, dict[str, Any]] = {}
        #: Each variant's analysis block, copied fresh into each of its instances.
        self._analysis_copies: dict[str, PlainCopies] = {}
        self._field_names: list[tuple[str, str, str]] | None = None
        #: The variants whose first instance the schema checked (``_check_schema``).
        self._schema_checked: set[str] = set()
        #: Whether every part of the instances made so far that is not rendered text (what a
        #: variant says of itself, answers, feedback) was checked to hold nothing orjson
        #: writes otherwise than canonically (a float): then their lines need no check.
        self.json_checked = True
        #: The canonical text of each distinct analysis block its instances carry (the same
        #: in every instance of a variant), for writing their lines (``dump_instance_bytes``).
        self.repeated_texts = TextMemo()

    def render_group(self, group: int) -> tuple[dict[str, Any], list[RenderedVariant]]:
        """The slot values of one group (before any variant's transforms) and every variant
        rendered from them, unchecked, within the group's budget: what an audit needs to
        re-run the checks on instances that were shipped."""
        return self.within_budget(group, lambda: self._render_group(group))

    def group_scopes(self, group: int) -> tuple[dict[str, Any], list[RenderedVariant]]:
        """The slot values of one group and the render scope of each of its variants, each
        with only what names its instance (id, design, variant), within the group's budget:
        what an audit needs to re-run the checks on the instances that were shipped (the
        checks read the shipped instance and the scope it was rendered from), without
        rendering the messages and answers again, which it never reads."""
        def scopes() -> tuple[dict[str, Any], list[RenderedVariant]]:
            slots = self._slots(group)
            return slots, self._canonical_values(group, lambda: [
                RenderedVariant({"id": normalize(instance_id(self.family.family_id, group,
                                                           v.name)),
                                 "design": v.design, "variant": v.name},
                                self._variant_context(slots, v, group))
                for v in self.variants if self._design_applies(v.design, slots, group)])
        return self.within_budget(group, scopes)

    def _render_group(self, group: int) -> tuple[dict[str, Any], list[RenderedVariant]]:
        slots = self._slots(group)
        return slots, self._render_variants(group, slots)

    def _slots(self, group: int) -> dict[str, Any]:
        return self._canonical_values(group, lambda: sample_slots(
            self.family, self.renderer, self.seed, group, self._slot_cache))

    def _render_variants(self, group: int, slots: dict[str, Any]) -> list[RenderedVariant]:
        return self._canonical_values(group, lambda: [
            self.render_variant(slots, v, group) for v in self.variants
            if self._design_applies(v.design, slots, group)])

    def _canonical_values(self, group: int, work: Callable[[], T]) -> T:
        """``work()``, where a value an expression made that has no canonical form (a lone
        surrogate …) is an error of the group."""
        try:
            return work()
        except CanonicalJSONError as exc:
            raise self.family.located.error(
                f"group {group}: a slot value has no canonical form: {exc}") from None

    def group(self, group: int) -> list[dict[str, Any]]:
        """Every variant of one group, checked; raises on any error."""
        return self.within_budget(group, lambda: self._checked(group, self._slots(group)))

    def slots(self, group: int) -> dict[str, Any]:
        """The slot values of one group (before any variant's transforms), within its
        budget: what it draws, without rendering it."""
        return self.within_budget(group, partial(self._slots, group))

    def _checked(self, group: int, slots: dict[str, Any]) -> list[dict[str, Any]]:
        rendered = self._render_variants(group, slots)
        self.checks.check_group(rendered)
        return [r.instance for r in rendered]

    def group_batch(self, first: int, count: int) -> Iterator[list[dict[str, Any]]]:
        """``group(g)`` for the groups ``first`` .. ``first + count - 1``, in order, with the
        slots of them all drawn first: drawing is code of its own (pools, random streams,
        expressions), which then runs for a batch at a stretch instead of between renders.

        Nothing else changes: each group has its whole budget, the time its draw took counted
        against it, and the first group that fails raises the error it raises on its own (a
        draw that failed is raised in its group's turn, after the groups before it)."""
        drawn: list[tuple[dict[str, Any] | None, Exception | None, float]] = []
        for group in range(first, first + count):
            start = time.monotonic()
            try:
                slots = self.within_budget(group, partial(self._slots, group))
            except Exception as exc:  # noqa: BLE001 (raised in its group's turn, below)
                drawn.append((None, exc, 0.0))
            else:
                drawn.append((slots, None, time.monotonic() - start))
        for group, (slots, error, spent) in enumerate(drawn, start=first):
            if error is not None:
                raise error
            yield self.within_budget(group, partial(self._checked, group, slots), spent)

    def within_budget(self, group: int, work: Callable[[], T], spent: float = 0.0) -> T:
        """``work()`` on ``group`` within the time and memory budget of one group (less
        ``spent`` seconds of it, taken by work on the group before); running out of either is
        an error at the template line that was running, or at the family."""
        try:
            with self._budget.after(spent):
                return work()
        except BudgetExceeded as exc:
            message = (f"group {group} took longer than {self._budget.seconds:g} s to render "
                       "and check (a runaway loop or regular expression?)")
            if exc.where is not None:  # a template was running: point at its line
                raise SpecError.single(message, *exc.where) from None
            raise self.family.located.error(message) from None
        except MemoryError:
            raise self.family.located.error(
                f"group {group} went over its memory budget of {self._budget.megabytes} MB "
                "($MEMSPEC_GROUP_MEGABYTES)") from None

    def budget_session(self) -> AbstractContextManager[None]:
        """Inside it, groups rendered one after another set up their budget once for the run
        (``Budget.session``), each still held to its own time and memory."""
        return self._budget.session()

    def groups(self, count: int, start: int = 0) -> Iterator[list[dict[str, Any]]]:
        """Groups ``start .. start+count-1`` in order, then the family-scope checks."""
        for g in range(start, start + count):
            yield self.group(g)
        self.checks.finish()
