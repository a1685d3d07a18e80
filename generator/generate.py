"""Instances of a family: sample a group's slots, expand its variants, render, check."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from . import audit_declarations
from .canonical import CanonicalJSONError, copy_data, dumps, normalize, writes_canonically
from .checks import CheckRunner, RenderedVariant
from .errors import SpecError
from .limits import Budget, BudgetExceeded, group_megabytes, group_seconds
from .memo import InputMemo
from .render import CompiledTemplate, Message, Renderer, RenderScope, TemplateOrigin, make_message
from .rng import KeyedRandom
from .sampling import balanced_at, sample_slots
from .schemas import first_error
from .scoring import answer_problems
from .spec import FamilySpec, TransformRef, Variant, answer_examples, phrasings_of
from .transforms import TransformCall, get_transform
from .yamlsafe import Located

T = TypeVar("T")
#: One way of writing a phase: a template file, or inline messages (role, name, text).
PhaseTemplate = CompiledTemplate | list[tuple[str, str | None, CompiledTemplate]]

#: The answer's texts besides its distractors: rendered in every variant, policy hints too.
_ANSWER_TEXTS = ("gold", "rubric", "example", "remembered", "evidence", "prior")


def instance_id(family_id: str, group: int, variant: str) -> str:
    """The stable, readable id ``<family>-<group:05d>-<variant>``."""
    return f"{family_id}-{group:05d}-{variant}"


class FamilyGenerator:
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
        self._field_names: list[tuple[str, str, str]] | None = None
        #: The variants whose first instance the schema checked (``_check_schema``).
        self._schema_checked: set[str] = set()
        #: Whether every part of the instances made so far that is not rendered text (what a
        #: variant says of itself, answers, feedback) was checked to hold nothing orjson
        #: writes otherwise than canonically (a float): then their lines need no check.
        self.json_checked = True

    # ----------------------------------------------------------- templates of the spec

    def _inline(self, text: str, where: tuple, label: str) -> CompiledTemplate:
        line, col = self.family.located.text_start(where)
        return self.renderer.inline(text, self.family.file, line, col, label)

    def _expression(self, source: str, where: tuple, label: str,
                    located: Located | None = None) -> Any:
        """A Jinja expression written in the family file (or ``located``, its paradigm's) at
        ``where``, errors located there."""
        located = located or self.family.located
        line, col = located.text_start(where)
        origin = TemplateOrigin(located.file, line - 1, col, label)
        return self.renderer.expression(source, origin)

    def _declared_in(self, *where: str) -> Located:
        """The spec whose ``audit`` block declares the entry at ``where`` (the family's own,
        else its paradigm's)."""
        node: Any = self.family.raw.get("audit", {})
        for key in where:
            node = node.get(key) if isinstance(node, Mapping) else None
        return self.family.located if node is not None else self.family.paradigm.located

    def _audit_answer(self, answer: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        """``answer`` with what the audit declarations render per instance: each declared
        policy's response and the candidates the task shows (unchanged if none are)."""
        block = self._audit_block
        if not block.get("policies") and "candidates" not in block:
            return answer
        answer = dict(answer)
        policies = {}
        for name, spec in sorted(block.get("policies", {}).items()):
            located = self._declared_in("policies", name)
            where = ("audit", "policies", name, "respond")
            line, col = located.text_start(where)
            compiled = self.renderer.inline(spec["respond"], located.file, line, col,
                                            f"policy {name!r}")
            policies[name] = normalize(compiled.render_text(context).strip())
        if policies:
            answer["policies"] = policies
        if "candidates" in block:
            located = self._declared_in("candidates")
            where = ("audit", "candidates")
            value = self._expression(block["candidates"], where, "candidates expression",
                                     located)(context)
            records = audit_declarations.candidate_records(value)
            if records is None:
                raise located.error("candidates must give a list of strings or of records "
                                    f"with a value and features, not {value!r}", where)
            answer["candidates"] = normalize(records)
        return answer

    def _phase_template(self, name: str) -> list[PhaseTemplate]:
        """The compiled ways of writing phase ``name``: one, or its phrasings in order."""
        return [self._phrasing_template(name, item, ("phases", name, *below))
                for item, below in phrasings_of(self.family.phases[name])]

    def _phrasing_template(self, name: str, phase: Any, where: tuple) -> PhaseTemplate:
        if isinstance(phase, str) or "template" in phase:
            relative = phase if isinstance(phase, str) else phase["template"]
            line, col = self.family.located.where(where)
            return self.renderer.file(relative, self.family.file, line, col)
        return [
            (m["role"], m.get("name"),
             self._inline(m["text"], (*where, "messages", i, "text"),
                          f"phase {name!r} message {i}"))
            for i, m in enumerate(phase["messages"])
        ]

    def phrasing(self, name: str, group: int) -> int:
        """Which phrasing of phase ``name`` group ``group`` renders (0 for a phase written one
        way): balanced in blocks across groups, the same for every variant of the group, so
        that arms meant to be byte-identical stay so."""
        count = len(self._phase_templates[name])
        if count == 1:
            return 0
        return balanced_at(range(count), self.seed, (self.family.family_id, "phrasing", name),
                           group)

    def _render_phase(self, name: str, context: dict[str, Any]) -> list[Message]:
        templates = self._phase_templates[name]
        template = templates[0] if len(templates) == 1 else \
            templates[self.phrasing(name, context["group"])]
        if isinstance(template, CompiledTemplate):
            try:
                return template.render_messages(context)
            except SpecError as err:
                raise self._in_phase(err, name) from None
        # A name written in the spec is YAML text, which need not be NFC: normalised here, as
        # everything render_text gives already is.
        return [make_message(role, compiled.render_text(context),
                             msg_name and normalize(msg_name), compiled)
                for role, msg_name, compiled in template]

    def _in_phase(self, err: SpecError, phase: str) -> SpecError:
        """``err`` with the family and phase named where it points into a template file: a
        template several families share says nothing of which one was rendering it."""
        note = f" (rendering phase {phase!r} of {self.family.family_id})"
        return SpecError([p if p.file == self.family.file else replace(p, message=p.message + note)
                          for p in err.problems])

    def _answer_template(self, key: str, text: str, where: tuple) -> CompiledTemplate:
        """The compiled text of the spec at ``where`` (an answer text or a field), kept."""
        compiled = self._answer_templates.get(where)
        if compiled is None:
            compiled = self._answer_templates[where] = self._inline(text, where, f"answer {key}")
        return compiled

    def _render_answer_text(self, key: str, text: str, context: dict[str, Any],
                            where: tuple | None = None) -> str:
        compiled = self._answer_template(key, text, where or ("answer", key))
        value = compiled.render_text(context).strip()
        if not value:
            raise compiled.origin.error(f"answer {key} rendered empty", 1)
        return value

    # ----------------------------------------------------------------- one group

    def _design_applies(self, design_name: str, slots: dict[str, Any], group: int) -> bool:
        design = self._designs[design_name]
        if design.when is None:
            return True
        evaluate = self._expression(design.when, ("designs", design_name, "when"),
                                    f"when of design {design_name!r}")
        return bool(evaluate({**slots, "group": group, "family": self.family.family_id}))

    def _transform_scope(self, ref: TransformRef, context: dict[str, Any], group: int
                         ) -> tuple[str | int, ...]:
        """What a transform's random stream is keyed by: the group, or the values of the slots
        it is shared by (so groups sharing a corpus share its counterfeits too)."""
        if ref.shared_by is None:
            return (self.family.family_id, group)
        return (self.family.family_id, "shared",
                *(dumps(context[name]) for name in ref.shared_by))

    def _variant_context(self, slots: dict[str, Any], variant: Variant, group: int
                         ) -> RenderScope:
        design = self._designs[variant.design]
        # Templates cannot change what they are given (an immutable sandbox), so the variants
        # of a group may share the slot values; only a transform, which rewrites them, needs
        # a copy of its own. Every render and check of the variant reads this one scope.
        transformed = any(axis.transform or variant.axes[axis.name] in axis.value_transforms
                          for axis in design.axes)
        context = self.renderer.scope(copy_data(slots) if transformed else slots)
        for axis in design.axes:
            value = variant.axes[axis.name]
            refs = [axis.transform] if axis.transform else []
            if value in axis.value_transforms:
                refs.append(axis.value_transforms[value])
            for ref in refs:
                transform = get_transform(ref.name)
                assert transform is not None  # checked when the family was loaded
                rng = KeyedRandom(self.seed, (*self._transform_scope(ref, context, group),
                                              "transform", variant.name, axis.name, ref.name))
                call = TransformCall(axis.name, value, variant.indices[axis.name], ref.args, rng)
                try:
                    transform.apply(context, call)
                except (TypeError, ValueError, KeyError, IndexError) as exc:
                    raise self.family.located.error(
                        f"transform {ref.name!r} failed on axis {axis.name!r}: {exc}",
                        ("designs", variant.design, "axes", axis.name)) from None
        context.update(variant=dict(variant.axes), design=variant.design, group=group,
                       family=self.family.family_id)
        return context

    def _answer_names(self) -> tuple[str, ...] | None:
        """What the answer depends on: the names its texts read, and its options slot."""
        spec = self.family.answer
        texts = [(key, spec[key], ("answer", key)) for key in _ANSWER_TEXTS if key in spec]
        texts += [(name, text, ("answer", "distractors", name))
                  for name, text in spec.get("distractors", {}).items()]
        examples = answer_examples(spec)
        texts += [(key, text, self._example_where(spec, key, index))
                  for key, index, text, _ in examples]
        names = {spec["options"]} if "options" in spec else set()
        if any(when for *_, when in examples):
            names.add("variant")  # which examples apply depends on the variant
        for key, text, where in texts:
            found = self._answer_template(key, text, where).free_names()
            if found is None:
                return None
            names.update(found)
        return tuple(sorted(names))

    def _answer(self, context: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The answer of one variant: its texts rendered, and checked to score as they must
        (the gold right, every distractor wrong). The same values give the same answer, so it
        is kept by them (InputMemo) and handed out as a copy; with it, whether it was built
        now (not a copy of one built and schema-checked before)."""
        built = []

        def build(context: Mapping[str, Any]) -> dict[str, Any]:
            built.append(True)
            return self._build_answer(context)

        return self._answer_memo.result(context, build, copy_data), bool(built)

    def _build_answer(self, context: Mapping[str, Any]) -> dict[str, Any]:
        spec = self.family.answer
        answer: dict[str, Any] = {"scorer": spec["scorer"]}
        for key in ("gold", "rubric", "example"):
            if key in spec:
                answer[key] = self._render_answer_text(key, spec[key], context)
        if "options" in spec:
            options = context[spec["options"]]
            if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
                raise self.family.located.error(
                    f"options slot {spec['options']!r} must hold a list of strings",
                    ("answer", "options"))
            options = [normalize(o) for o in options]
            answer["options"] = options
            if len(set(options)) != len(options):
                raise self.family.located.error(f"options repeat a value: {options}",
                                                ("answer", "options"))
            if "gold" in answer:
                if answer["gold"] not in options:
                    raise self.family.located.error(
                        f"gold {answer['gold']!r} is not one of the options {options}",
                        ("answer", "gold"))
                answer["gold_index"] = options.index(answer["gold"])
        if "distractors" in spec:
            answer["distractors"] = {
                name: self._render_answer_text(name, text, context,
                                               ("answer", "distractors", name))
                for name, text in spec["distractors"].items()
            }
        for key in ("remembered", "evidence", "prior"):
            # Policy hints: an empty render means "none in this variant", so no key.
            if key in spec:
                compiled = self._answer_template(key, spec[key], ("answer", key))
                value = compiled.render_text(context).strip()
                if value:
                    answer[key] = value
        for key in ("unordered_args", "first", "abstain"):
            if key in spec:
                answer[key] = spec[key]
        # The paradigm's abstention patterns come first, then the family's own; a paradigm
        # that declares none leaves the answer as it was.
        paradigm_abstain = self.family.paradigm.located.data.get("abstain", [])
        if paradigm_abstain:
            answer["abstain"] = [*paradigm_abstain, *answer.get("abstain", [])]
        self._refuse_contradicted_chance(answer)
        problems = answer_problems(answer)
        if problems:
            raise self.family.located.error(
                f"answer does not work in group {context['group']}, variant "
                f"{context['design']}/{'.'.join(context['variant'].values()) or 'base'}: "
                + "; ".join(problems), ("answer",))
        try:
            answer = normalize(answer)
        except CanonicalJSONError as exc:
            raise self.family.located.error(f"instance has no canonical form: {exc}") from None
        self._check_json(answer)
        if "accepts" in spec or "rejects" in spec:
            self._check_examples(answer, context)
        return answer

    def _refuse_contradicted_chance(self, answer: Mapping[str, Any]) -> None:
        """Refuse a declared chance or expected score the item's own data contradicts
        (``audit_declarations.chance_contradictions``), located where it is declared."""
        found = audit_declarations.chance_contradictions(
            self._audit_block, self.family.raw.get("analysis", {}), answer)
        if not found:
            return
        message, where = found[0]
        located = (self.family.located if where[0] == "analysis"
                   else self._declared_in(*where[1:]))
        raise located.error(message, where)

    @staticmethod
    def _example_where(spec: Mapping[str, Any], key: str, index: int) -> tuple:
        """Where an example response's text is written in the family file."""
        item = spec[key][index]
        return ("answer", key, index) if isinstance(item, str) else \
            ("answer", key, index, "response")

    def _check_examples(self, answer: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        """Every example response of the answer that applies to this variant scores as its
        declaration says (``accepts``: correct; ``rejects``: not), else an error at it."""
        from .answer_tests import applies, example_problem  # only families with examples

        spec = self.family.answer
        for key, index, text, when in answer_examples(spec):
            if not applies(when, context["variant"]):
                continue
            where = self._example_where(spec, key, index)
            compiled = self._answer_template(f"{key}[{index}]", text, where)
            response = compiled.render_text(context)
            if not response.strip():
                raise compiled.origin.error(f"answer {key}[{index}] rendered empty", 1)
            problem = example_problem(answer, response, key)
            if problem:
                raise self.family.located.error(
                    f"answer {key}[{index}] fails in group {context['group']}, variant "
                    f"{context['design']}/{'.'.join(context['variant'].values()) or 'base'}: "
                    f"{problem}", where)

    def _feedback(self, context: dict[str, Any]) -> list[dict[str, Any]]:
        """The simulated user's implicit feedback: the records the family's expression gives,
        keeping round, session, action and terminated (defaults: position and last round)."""
        assert self.family.feedback is not None
        rows = self._expression(self.family.feedback, ("feedback",),
                                "feedback expression")(context)
        if not isinstance(rows, (list, tuple)) or not all(isinstance(r, Mapping) for r in rows):
            raise self.family.located.error(
                f"feedback must give a list of records, not {rows!r}", ("feedback",))
        keep = ("round", "session", "action", "terminated")
        return [{"round": index + 1, "terminated": index == len(rows) - 1,
                 **{k: row[k] for k in keep if k in row}}
                for index, row in enumerate(rows)]

    def _described(self, variant: Variant) -> dict[str, Any]:
        """What an instance of ``variant`` says of itself besides its id and group (family,
        version, paradigm, design, variant, axes, the family's analysis), normalised once."""
        described = self._descriptions.get(variant.name)
        if described is None:
            described = {"family": self.family.family_id, "family_version": self.family.version,
                         "paradigm": self.family.paradigm.paradigm_id,
                         "design": variant.design, "variant": variant.name,
                         "axes": dict(variant.axes)}
            if "analysis" in self.family.raw:
                described["analysis"] = self.family.raw["analysis"]
            if self._audit_block:
                # Only families that declare something carry it: frozen ones stay as built.
                described["analysis"] = {**described.get("analysis", {}),
                                         "audit": audit_declarations.carried(self._audit_block)}
            try:
                described = self._descriptions[variant.name] = normalize(described)
            except CanonicalJSONError as exc:
                raise self.family.located.error(
                    f"instance has no canonical form: {exc}") from None
            self._check_json(described)
        return described

    def _check_json(self, part: Any) -> None:
        """Note whether ``part`` of an instance holds what orjson writes canonically."""
        if self.json_checked and not writes_canonically(part):
            self.json_checked = False

    def _fields(self) -> list[tuple[str, str, str]]:
        """The family's fields: each key as written, normalised, and its template text."""
        if self._field_names is None:
            try:
                self._field_names = [(key, normalize(key), text)
                                     for key, text in self.family.fields.items()]
            except CanonicalJSONError as exc:
                raise self.family.located.error(
                    f"instance has no canonical form: {exc}", ("fields",)) from None
        return self._field_names

    def render_variant(self, slots: dict[str, Any], variant: Variant, group: int
                       ) -> RenderedVariant:
        """One instance of a group, rendered and schema-checked (not yet invariant-checked)."""
        context = self._variant_context(slots, variant, group)
        phases: list[dict[str, Any]] = []
        for name in self.family.paradigm.phases:
            messages = self._render_phase(name, context)
            if not messages and name not in self.family.paradigm.optional_phases:
                raise self.family.located.error(
                    f"phase {name!r} rendered no message in variant {variant.name!r}",
                    ("phases", name))
            phases.append({"phase": name, "messages": messages})
        fields = {
            name: self._render_answer_text(key, text, context, ("fields", key))
            for key, name, text in self._fields()
        }
        described = self._described(variant)
        answer, new_answer = self._answer(context)
        answer = self._audit_answer(answer, context)
        instance = {
            "id": normalize(instance_id(self.family.family_id, group, variant.name)),
            "family": described["family"],
            "family_version": described["family_version"],
            "paradigm": described["paradigm"],
            "group": group,
            "design": described["design"],
            "variant": described["variant"],
            "axes": dict(described["axes"]),
            "phases": phases,
            # What is rendered is canonical as rendered (render_text, make_message), and the
            # answer is normalised when it is built: the rest is normalised here, once.
            "answer": answer,
            "fields": fields,
        }
        try:
            if self.family.feedback is not None:
                instance["feedback"] = normalize(self._feedback(context))
                self._check_json(instance["feedback"])
            if "analysis" in described:
                instance["analysis"] = copy_data(described["analysis"])
        except CanonicalJSONError as exc:
            raise self.family.located.error(f"instance has no canonical form: {exc}") from None
        if new_answer or "feedback" in instance or variant.name not in self._schema_checked \
                or type(group) is not int or group < 0:
            self._check_schema(instance)
            self._schema_checked.add(variant.name)
        return RenderedVariant(instance, context)

    def _check_schema(self, instance: dict[str, Any]) -> None:
        """Refuse an instance its schema does not allow.

        Every instance is made to it, and the parts that can vary are each checked: the
        messages are valid by construction (make_message: a role of ROLES, checked by the
        {% message %} tag or the family's schema; content never empty; a name only when one
        is given); what a variant says of itself, and its id (a group, whole and not
        negative, only adds digits to it), are checked with its first instance; fields are
        rendered text; an answer is checked with the instance it is built for (the others
        hold copies of it), and feedback, which an expression gives, with every instance."""
        error = first_error("instance", {**instance, "phases": [
            {"phase": phase["phase"], "messages": []} for phase in instance["phases"]]})
        if error:
            raise self.family.located.error(f"generated instance {instance['id']} is invalid: "
                                            f"{error}")

    def render_group(self, group: int) -> tuple[dict[str, Any], list[RenderedVariant]]:
        """The slot values of one group (before any variant's transforms) and every variant
        rendered from them, unchecked, within the group's budget: what an audit needs to
        re-run the checks on instances that were shipped."""
        return self.within_budget(group, lambda: self._render_group(group))

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

