"""Templates a family's spec writes, compiled and rendered: its phases (one way or several
phrasings), its answer texts and fields, and its expressions, errors located in the spec."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.canonical import normalize
from ..core.errors import SpecError
from ..spec.spec import FamilySpec, phrasings_of
from ..spec.yamlsafe import Located
from .render import CompiledTemplate, Message, Renderer, TemplateOrigin, make_message
from .sampling import balanced_at

#: One way of writing a phase: a template file, or inline messages (role, name, text).
PhaseTemplate = CompiledTemplate | list[tuple[str, str | None, CompiledTemplate]]


class SpecTemplates:
    """The templates of one family's spec, compiled once and rendered per variant: the base
    of ``FamilyGenerator``, which sets what is declared here."""

    family: FamilySpec
    renderer: Renderer
    seed: int
    _phase_templates: dict[str, list[PhaseTemplate]]
    _answer_templates: dict[tuple, CompiledTemplate]

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
        return balanced_at(range(count), self.seed, (self.family.draw_key, "phrasing", name),
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
