"""The answer of one variant: its texts rendered, its options, distractors and example
responses checked to score as declared, and what the audit declarations add per instance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.scoring import answer_problems
from ..core.canonical import CanonicalJSONError, copy_data, normalize, writes_canonically
from ..spec import audit_declarations
from ..spec.spec import answer_examples
from ..spec.yamlsafe import Located
from .generate_templates import SpecTemplates
from .memo import InputMemo

#: The answer's texts besides its distractors: rendered in every variant, policy hints too.
_ANSWER_TEXTS = ("gold", "rubric", "example", "remembered", "evidence", "prior")


class AnswerRendering(SpecTemplates):
    """Renders and checks the answers of one family's instances (part of
    ``FamilyGenerator``, which sets what is declared here)."""

    _audit_block: dict[str, Any]
    _answer_memo: InputMemo
    json_checked: bool

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
        styles = self._styles if spec["scorer"] != "judge" else []
        if any(when for *_, when in examples) or any(style.when for style in styles):
            names.add("variant")  # which examples apply depends on the variant
        compiled = [self._answer_template(key, text, where) for key, text, where in texts]
        # A style may read ``answer`` (the instance's answer, built from the names above).
        styled = [(self._style_template(style), {"answer"}) for style in styles]
        for template, given in [*((t, set()) for t in compiled), *styled]:
            found = template.free_names()
            if found is None:
                return None
            names.update(set(found) - given)
        return tuple(sorted(names))

    @property
    def _styles(self) -> list[Any]:
        """The answer styles this family is held to (``answer_styles``), read once."""
        if not hasattr(self, "_declared_styles"):
            from .answer_styles import declared_styles
            self._declared_styles = declared_styles(self.family.paradigm.located,
                                                    self.family.located)
        return self._declared_styles

    def _style_template(self, style: Any) -> Any:
        """A style's response, compiled where it is written, kept."""
        key = (style.located.file, *style.where)
        compiled = self._answer_templates.get(key)
        if compiled is None:
            line, col = style.located.text_start(style.where)
            compiled = self._answer_templates[key] = self.renderer.inline(
                style.response, style.located.file, line, col, f"answer style {style.name!r}")
        return compiled

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
        reading = self._reading()
        if reading and answer["scorer"] != "judge":
            answer["reading"] = reading
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
        if answer["scorer"] != "judge":
            self._check_styles(answer, context)
        return answer

    def _reading(self) -> dict[str, Any] | None:
        """The reading block of this family's answers: its paradigm's (styles apart), with
        the family's ``answer.reading`` over it (its lists added, its other keys replacing);
        None where neither declares one."""
        paradigm = dict(self.family.paradigm.located.data.get("reading", {}))
        paradigm.pop("styles", None)
        own = self.family.answer.get("reading", {})
        if not paradigm and not own:
            return None
        merged = {**paradigm, **own}
        for key in ("openers", "abstain"):
            if key in paradigm and key in own:
                merged[key] = [*paradigm[key], *own[key]]
        return normalize(merged)

    def _check_styles(self, answer: Mapping[str, Any], context: Mapping[str, Any]) -> None:
        """Every declared style that applies to this variant gets the verdict it declares,
        else an error where the style is written (the paradigm's file or the family's)."""
        from .answer_styles import style_problem  # only families with styles
        from .answer_tests import applies

        self._check_style_kinds(answer)
        for style in self._styles:
            if not applies(style.when, context["variant"]):
                continue
            # The answer itself is there too, so that a paradigm's styles can name the gold
            # and the distractors of every family ({{ answer.gold }}).
            response = self._style_template(style).render_text({**context, "answer": answer})
            problem = style_problem(answer, style, response)
            if problem:
                raise style.located.error(
                    f"answer style fails in group {context['group']}, variant "
                    f"{context['design']}/{'.'.join(context['variant'].values()) or 'base'} "
                    f"of {self.family.family_id}: {problem}", style.where)

    def _check_style_kinds(self, answer: Mapping[str, Any]) -> None:
        """A family read with reading version 4 or later declares a style of each of the six
        kinds (``STYLE_KINDS``), else an error where its styles (or its reading) are
        written, naming the kinds it lacks."""
        from .answer_styles import SIX_STYLES_FROM, missing_kinds

        reading = answer.get("reading")
        if not reading or reading["version"] < SIX_STYLES_FROM or \
                getattr(self, "_kinds_checked", False):
            return
        self._kinds_checked = True
        missing = missing_kinds(self._styles)
        if not missing:
            return
        family, paradigm = self.family.located, self.family.paradigm.located
        answer_spec = family.data.get("answer", {})
        if "styles" in answer_spec:
            located, where = family, ("answer", "styles")
        elif "version" in answer_spec.get("reading", {}):
            located, where = family, ("answer", "reading", "version")
        else:
            located, where = paradigm, ("reading", "version")
        raise located.error(
            f"{self.family.family_id} is read with reading version {reading['version']}, "
            f"which wants a declared answer style of each of six kinds; it declares none of: "
            f"{', '.join(missing)} (styles named terse, preamble_markdown, other_words, "
            f"habitual, hedge or clarifying_question, rejected_then_answer)", where)

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

    def _check_json(self, part: Any) -> None:
        """Note whether ``part`` of an instance holds what orjson writes canonically."""
        if self.json_checked and not writes_canonically(part):
            self.json_checked = False
