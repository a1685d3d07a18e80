"""Invariants asserted on every instance, every group and every family.

Checks come from a family's paradigm and from the family itself. A failed check is an error,
never a warning: the generator refuses to write instances that break one.
"""

from __future__ import annotations

import functools
import operator
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .canonical import CanonicalJSONError, dumps
from .errors import CheckFailed, Problem
from .instances import phase_messages, phase_text
from .render import Renderer, RenderScope, TemplateOrigin
from .yamlsafe import Located

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def mentions(text: str, phrase: str, ignore_case: bool = True) -> bool:
    """Whether ``phrase`` occurs in ``text`` as a whole word or words (not inside another)."""
    # A substring test first: most phrases are absent, and `in` costs far less than a search.
    # (Exact for ASCII: there, case-blind matching is ASCII case folding, nothing more.)
    if not ignore_case:
        if phrase not in text:
            return False
    elif text.isascii() and phrase.isascii() and phrase.lower() not in text.lower():
        return False
    flags = re.IGNORECASE if ignore_case else 0
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, flags) is not None


def approx_tokens(text: str) -> int:
    """Approximate token count: one token per run of word characters or per punctuation mark.

    For English prose this lands within about 25% below what common subword tokenizers count,
    so a minimum stated in these tokens is a conservative minimum in theirs.
    """
    return len(_TOKEN_RE.findall(text))


@functools.lru_cache(maxsize=1 << 14)
def _message_tokens(content: str) -> int:
    return approx_tokens(content)


def messages_tokens(messages: Iterable[Mapping[str, str]]) -> int:
    """``approx_tokens`` of the messages' contents joined by newlines, counted message by
    message: a token never spans the newline between two, and messages drawn from a pool
    recur across groups, so each content's count is remembered (a bounded cache)."""
    return sum(_message_tokens(m["content"]) for m in messages)


#: What a message_count check may ask, and how each is tested.
_COUNT_TESTS = (("equals", operator.eq), ("min", operator.ge), ("max", operator.le))


@dataclass
class RenderedVariant:
    """An instance with the slot values it was rendered from (for checks that need them)."""

    instance: dict[str, Any]
    context: dict[str, Any]
    _scope: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def scope(self) -> dict[str, Any]:
        """What a check's expression sees: the slot values and ``instance`` (made once, for
        every check of the instance)."""
        if self._scope is None:
            context = self.context
            self._scope = RenderScope(context, instance=self.instance) \
                if type(context) is RenderScope else {**context, "instance": self.instance}
        return self._scope


@dataclass
class CheckRunner:
    """Runs one family's checks; family-scope checks accumulate across groups."""

    checks: tuple[tuple[Mapping[str, Any], Located, tuple], ...]
    renderer: Renderer
    family_file: str
    _tallies: dict[int, Counter] = field(default_factory=lambda: defaultdict(Counter))
    #: Compiled expressions of the checks, by (check index, key): looked up once.
    _expressions: dict[tuple[int, str], Any] = field(default_factory=dict)

    def _fail(self, index: int, message: str, instance_id: str | None = None) -> Problem:
        check, located, where = self.checks[index]
        line, col = located.where(where)
        prefix = f"{instance_id}: " if instance_id else ""
        text = check.get("description")
        detail = f" — {text}" if text else ""
        return Problem(f"check {check['kind']} failed: {prefix}{message}{detail}",
                       located.file, line, col, where)

    def _expr(self, index: int, key: str) -> Any:
        compiled = self._expressions.get((index, key))
        if compiled is None:
            check, located, where = self.checks[index]
            line, col = located.text_start((*where, key))
            origin = TemplateOrigin(located.file, line - 1, col, f"check {check['kind']} {key}")
            compiled = self._expressions[index, key] = self.renderer.expression(check[key],
                                                                                 origin)
        return compiled

    @staticmethod
    def _applies(check: Mapping[str, Any], instance: Mapping[str, Any]) -> bool:
        if "when" not in check:
            return True
        for axis, wanted in check["when"].items():
            allowed = wanted if isinstance(wanted, list) else [wanted]
            if instance["axes"].get(axis) not in allowed:
                return False
        return True

    def check_group(self, group: list[RenderedVariant]) -> None:
        """Run instance- and group-scope checks; tally family-scope ones. Raises on failure."""
        problems: list[Problem] = []
        for index, (check, _, _) in enumerate(self.checks):
            kind = check["kind"]
            if kind in ("identical_across", "differs_across", "length_ratio"):
                problems += self._group_check(index, check, group)
                continue
            for rendered in group:
                inst = rendered.instance
                if not self._applies(check, inst):
                    continue
                if kind == "balanced":
                    value = self._expr(index, "of")(rendered.scope())
                    try:
                        self._tallies[index][dumps(value)] += 1
                    except CanonicalJSONError:
                        _, located, where = self.checks[index]
                        raise located.error(f"'of' must give plain data, not a "
                                            f"{type(value).__name__}", (*where, "of")) from None
                    continue
                message = self._instance_check(index, check, rendered)
                if message:
                    problems.append(self._fail(index, message, inst["id"]))
        if problems:
            raise CheckFailed(problems)

    def _instance_check(self, index: int, check: Mapping[str, Any],
                        rendered: RenderedVariant) -> str | None:
        inst = rendered.instance
        kind = check["kind"]
        if kind == "message_count":
            n = len(phase_messages(inst, check["phase"]))
            for key, ok in _COUNT_TESTS:
                if key in check and not ok(n, check[key]):
                    return f"phase {check['phase']!r} has {n} messages ({key} {check[key]})"
        elif kind == "token_count":
            n = messages_tokens(m for p in check["phases"] for m in phase_messages(inst, p))
            if "min" in check and n < check["min"]:
                return f"{'+'.join(check['phases'])} has {n} tokens, fewer than {check['min']}"
            if "max" in check and n > check["max"]:
                return f"{'+'.join(check['phases'])} has {n} tokens, more than {check['max']}"
        elif kind == "distinct_messages":
            contents = [m["content"] for m in phase_messages(inst, check["phase"])]
            if len(set(contents)) == len(contents):
                return None
            repeated = [c for c, k in Counter(contents).items() if k > 1]
            if repeated:
                return f"phase {check['phase']!r} repeats a message: {repeated[0][:60]!r}"
        elif kind == "forbidden_words":
            words = self._expr(index, "words")(rendered.scope())
            if isinstance(words, str):
                words = [words]
            elif not isinstance(words, (list, tuple)) or \
                    not all(isinstance(w, str) for w in words):
                check, located, where = self.checks[index]
                raise located.error("words must give a string or a list of strings, not "
                                    f"{words!r}", (*where, "words"))
            text = phase_text(inst, check["phases"])
            for word in words:
                if mentions(text, str(word)):
                    return f"forbidden word {word!r} appears in {', '.join(check['phases'])}"
        elif kind == "expr":
            value = self._expr(index, "test")(rendered.scope())
            if not value:
                return check["message"]
        return None

    def _group_check(self, index: int, check: Mapping[str, Any],
                     group: list[RenderedVariant]) -> list[Problem]:
        axis = check["axis"]
        buckets: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for rendered in group:
            inst = rendered.instance
            if axis not in inst["axes"] or not self._applies(check, inst):
                continue
            rest = {k: v for k, v in inst["axes"].items() if k != axis}
            buckets[dumps([inst["design"], rest])].append(inst)
        problems = []
        for members in buckets.values():
            if check["kind"] == "length_ratio":
                problems += self._length_ratio(index, check, members)
                continue
            texts = {m["id"]: dumps([phase_messages(m, p) for p in check["phases"]])
                     for m in members}
            distinct = set(texts.values())
            phases = ", ".join(check["phases"])
            if check["kind"] == "identical_across" and len(distinct) > 1:
                problems.append(self._fail(index, f"{phases} differ across {axis} in "
                                           f"{', '.join(texts)}"))
            if check["kind"] == "differs_across" and len(distinct) < len(texts):
                problems.append(self._fail(index, f"{phases} are identical across {axis} in "
                                           f"{', '.join(texts)}"))
        return problems

    def _length_ratio(self, index: int, check: Mapping[str, Any],
                      members: list[dict[str, Any]]) -> list[Problem]:
        reference = [m for m in members if m["axes"][check["axis"]] == check["reference"]]
        if not reference:
            return []
        ref_len = len(phase_text(reference[0], check["phases"]))
        problems = []
        for member in members:
            if member is reference[0]:
                continue
            length = len(phase_text(member, check["phases"]))
            ratio = length / ref_len if ref_len else float("inf")
            if abs(ratio - 1) > check["tolerance"]:
                problems.append(self._fail(
                    index, f"{member['id']} is {ratio:.3f}× the length of {reference[0]['id']} "
                    f"(tolerance ±{check['tolerance']})"))
        return problems

    def take_tallies(self) -> dict[int, Counter]:
        """The family-scope tallies so far, which then start again from zero: one chunk's
        share, to be added to the others' (``add_tallies``) where the family is finished."""
        taken, self._tallies = dict(self._tallies), defaultdict(Counter)
        return taken

    def add_tallies(self, tallies: Mapping[int, Counter]) -> None:
        """Count tallies taken from another runner of the same family."""
        for index, counts in tallies.items():
            self._tallies[index].update(counts)

    def finish(self) -> None:
        """Family-scope checks over everything tallied; raises on failure."""
        problems = []
        for index, (check, _, _) in enumerate(self.checks):
            if check["kind"] != "balanced":
                continue
            counts = self._tallies.get(index, Counter())
            for value in check.get("values", []):
                counts.setdefault(dumps(value), 0)
            if counts and max(counts.values()) - min(counts.values()) > 1:
                shown = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
                problems.append(self._fail(index, f"{check['of']} is unbalanced ({shown})"))
        if problems:
            raise CheckFailed(problems)
