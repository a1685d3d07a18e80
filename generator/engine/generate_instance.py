"""One instance of a group: a variant's scope (its design's transforms applied), its phases,
fields, answer and feedback rendered, and the whole checked against the instance schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.canonical import CanonicalJSONError, PlainCopies, copy_data, dumps, normalize
from ..core.rng import KeyedRandom
from ..core.transforms import TransformCall, get_transform
from ..spec import audit_declarations
from ..spec.schemas import first_error
from ..spec.spec import Design, TransformRef, Variant
from .checks import RenderedVariant
from .generate_answer import AnswerRendering
from .render import RenderScope


def instance_id(family_id: str, group: int, variant: str) -> str:
    """The stable, readable id ``<family>-<group:05d>-<variant>``."""
    return f"{family_id}-{group:05d}-{variant}"


class InstanceRendering(AnswerRendering):
    """Renders the instances of one family's groups, variant by variant (part of
    ``FamilyGenerator``, which sets what is declared here)."""

    _designs: dict[str, Design]
    _descriptions: dict[str, dict[str, Any]]
    _analysis_copies: dict[str, PlainCopies]
    _field_names: list[tuple[str, str, str]] | None
    _schema_checked: set[str]

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
            return (self.family.draw_key, group)
        return (self.family.draw_key, "shared",
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
                copies = self._analysis_copies.get(variant.name)
                if copies is None:
                    copies = self._analysis_copies[variant.name] = \
                        PlainCopies(described["analysis"])
                instance["analysis"] = copies()
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
