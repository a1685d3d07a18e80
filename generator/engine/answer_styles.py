"""The answer styles a family declares it reads: responses written the way real assistants
write them (terse, a preamble with markdown, other words, the habitual answer, a hedge or a
question, a rejected mention then the answer), each with the verdict it must get. A
paradigm's ``reading.styles`` hold for every family of it; a family's ``answer.styles`` add
to them (one of the same name replaces the paradigm's). Checked on every instance they apply
to at validate, generate and freeze; ``memspec check-answer`` shows how one is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..analysis.reading import read, reads
from ..spec.yamlsafe import Located
from .answer_tests import explain

#: Where a paradigm's reading block puts its styles, and a family's answer its own.
PARADIGM_STYLES = ("reading", "styles")
FAMILY_STYLES = ("answer", "styles")


@dataclass(frozen=True)
class Style:
    """One declared style: its name, response template, expected verdict, the variants it
    applies to, and where it is written."""

    name: str
    response: str
    expect: str
    when: Mapping[str, Any] | None
    located: Located
    where: tuple


def declared_styles(paradigm: Located, family: Located) -> list[Style]:
    """The styles a family is held to: its paradigm's, each replaced by the family's of the
    same name, then the family's other ones."""
    def of(located: Located, path: tuple) -> list[Style]:
        node: Any = located.data
        for key in path:
            node = node.get(key, {}) if isinstance(node, Mapping) else {}
        return [Style(s["style"], s["response"], s["expect"], s.get("when"), located,
                      (*path, index, "response"))
                for index, s in enumerate(node or ())]

    own = of(family, FAMILY_STYLES)
    names = {s.name for s in own}
    inherited = [s for s in of(paradigm, PARADIGM_STYLES) if s.name not in names]
    return [*inherited, *own]


#: The six kinds of reply every family read with reading version 4 or later declares a style
#: of (docs/spec-language.md), each with the style names that stand for it; a name may add a
#: suffix of its own ("other_words_hash").
STYLE_KINDS = (
    ("terse", ("terse",)),
    ("a preamble with markdown", ("preamble_markdown", "markdown_preamble")),
    ("other words", ("other_words",)),
    ("the habitual answer", ("habitual",)),
    ("a hedge or a question", ("hedge", "clarifying_question")),
    ("a rejected mention then the answer", ("rejected_then_answer",)),
)
#: The first reading version that holds a family to all six (frozen releases read with an
#: older version keep verifying with the styles they declared).
SIX_STYLES_FROM = 4


def missing_kinds(styles: list[Style]) -> list[str]:
    """The kinds of ``STYLE_KINDS`` that no style in ``styles`` stands for, in order."""
    def stands_for(name: str, names: tuple[str, ...]) -> bool:
        return any(name == n or name.startswith(f"{n}_") for n in names)

    return [kind for kind, names in STYLE_KINDS
            if not any(stands_for(style.name, names) for style in styles)]


def verdict_of(answer: Mapping[str, Any], response: str) -> tuple[str, str, str]:
    """How ``response`` scores: right, wrong, abstain or unscorable, with what was taken
    and why (the declared reading where the answer has one, else the first-attempt
    scorer)."""
    if reads(answer):
        reading = read(answer, response)
        return reading.verdict, reading.attempt, reading.why
    verdict = explain(answer, response)
    word = {"correct": "right", "abstains": "abstain"}.get(verdict.verdict, "wrong")
    return word, verdict.taken, verdict.why


def style_problem(answer: Mapping[str, Any], style: Style, response: str) -> str | None:
    """Why ``response`` (``style`` rendered) does not get the verdict it declares, or None."""
    verdict, taken, why = verdict_of(answer, response)
    if verdict == style.expect:
        return None
    shown = " ⏎ ".join(line.strip() for line in response.strip().splitlines())
    return (f"style {style.name!r} expects {style.expect}, but {shown!r} reads as {verdict} "
            f"(took {taken!r}: {why})")
