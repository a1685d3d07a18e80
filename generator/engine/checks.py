"""Invariants asserted on every instance, every group and every family.

Checks come from a family's paradigm and from the family itself. A failed check is an error,
never a warning: the generator refuses to write instances that break one.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ..core.canonical import CanonicalJSONError, dumps
from ..core.errors import CheckFailed, Problem
from ..spec.instances import phase_messages, phase_text
from ..spec.yamlsafe import Located
from .render import Renderer, RenderScope, TemplateOrigin, expression_scope

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
    return mention_at(text, phrase, ignore_case) is not None


def mention_at(text: str, phrase: str, ignore_case: bool = True) -> int | None:
    """Where ``phrase`` first occurs in ``text`` as a whole word or words, or None."""
    flags = re.IGNORECASE if ignore_case else 0
    found = re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, flags)
    return None if found is None else found.start()


def where_mentioned(phrase: str, messages: Iterable[tuple[str, int, Mapping[str, str]]]
                    ) -> str:
    """Which of ``messages`` (phase, index, message) first mentions ``phrase``, and where in
    it: what a person needs to find it among a group's rendered text."""
    for phase, index, message in messages:
        content = message["content"]
        start = mention_at(content, phrase)
        if start is None:
            continue
        line = content.count("\n", 0, start) + 1
        column = start - (content.rfind("\n", 0, start) + 1) + 1
        excerpt = content[max(0, start - 30):start + len(phrase) + 30].replace("\n", " ")
        return (f"phase {phase!r}, message {index} ({message['role']}), line {line} column "
                f"{column}: …{excerpt}…")
    return "its phases"


def approx_tokens(text: str) -> int:
    """Approximate token count: one token per run of word characters or per punctuation mark.

    For English prose this lands within about 25% below what common subword tokenizers count,
    so a minimum stated in these tokens is a conservative minimum in theirs.
    """
    return len(_TOKEN_RE.findall(text))


#: Token counts of message contents met lately: messages drawn from a pool recur across groups.
_TOKEN_COUNTS: dict[str, int] = {}
#: How many it keeps before it starts again from none (a few hundred kilobytes at most).
_TOKEN_COUNT_ENTRIES = 1 << 14


def messages_tokens(messages: Iterable[Mapping[str, str]]) -> int:
    """``approx_tokens`` of the messages' contents joined by newlines, counted message by
    message: a token never spans the newline between two."""
    return contents_tokens(list(map(_CONTENT, messages)))


def contents_tokens(contents: list[str]) -> int:
    """``messages_tokens`` of messages with these contents; each content's count is
    remembered (a bounded dict, looked up in C)."""
    counts = list(map(_TOKEN_COUNTS.get, contents))
    try:
        return sum(counts)
    except TypeError:  # a content not met before: its count is None
        if len(_TOKEN_COUNTS) + len(contents) > _TOKEN_COUNT_ENTRIES:
            _TOKEN_COUNTS.clear()
        return sum(_TOKEN_COUNTS.setdefault(content, approx_tokens(content)) if count is None
                   else count for content, count in zip(contents, counts, strict=True))


_CONTENT = itemgetter("content")


#: What ``_Words.found`` gives for a text it does not hold.
_UNSEEN = object()


class _Words:
    """Words a text must not mention, ready for the test: folded once, where a text is."""

    __slots__ = ("given", "words", "folded", "ascii", "found")

    #: Texts up to this long have their answer kept (a probe rendered from values drawn from
    #: pools recurs from group to group; a long text seldom does), this many at most.
    KEPT_LENGTH = 2000
    KEPT_TEXTS = 4096

    def __init__(self, given: Any, words: list[str]) -> None:
        self.given = given  # what the check's expression gave (held: its id stays its own)
        self.words = words
        self.folded = [word.lower() for word in words]
        self.ascii = all(word.isascii() for word in words)
        self.found: dict[str, str | None] = {}

    def first_in(self, text: str) -> str | None:
        """The first word that ``text`` ``mentions`` (ignoring case), or None; kept for a
        short text, which is likely met again."""
        if len(text) > self.KEPT_LENGTH:
            return self._first_in(text)
        found = self.found.get(text, _UNSEEN)
        if found is _UNSEEN:
            if len(self.found) >= self.KEPT_TEXTS:
                self.found.clear()
            found = self.found[text] = self._first_in(text)
        return found  # type: ignore[return-value]

    def _first_in(self, text: str) -> str | None:
        """``first_in``, worked out. An ASCII word absent from the folded ASCII text is ruled
        out by a substring test (all of them at once, in C, where every word is ASCII)."""
        folded = text.lower() if text.isascii() else None
        if folded is not None and self.ascii and \
                not any(map(folded.__contains__, self.folded)):
            return None
        for word, folded_word in zip(self.words, self.folded, strict=True):
            if folded is not None and word.isascii() and folded_word not in folded:
                continue
            if mentions(text, word):
                return word
        return None


#: What runs one check on one instance: what is wrong with it, or None.
InstanceCheck = Callable[["RenderedVariant"], str | None]
#: Checks over the instances of a group together, not one by one.
_GROUP_KINDS = frozenset({"identical_across", "differs_across", "length_ratio"})

#: What a message_count check may ask, and how each is tested.
_COUNT_TESTS = (("equals", operator.eq), ("min", operator.ge), ("max", operator.le))


@dataclass
class RenderedVariant:
    """An instance with the slot values it was rendered from (for checks that need them)."""

    instance: dict[str, Any]
    context: dict[str, Any]
    _scope: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    _contents: dict[str, list[str]] | None = field(default=None, repr=False, compare=False)

    def messages(self, phase: str) -> list[dict[str, str]]:
        """The messages of ``phase`` (none if it rendered none)."""
        return phase_messages(self.instance, phase)

    def contents(self, phase: str) -> list[str]:
        """The contents of ``phase``'s messages, read once for every check that reads them."""
        if self._contents is None:
            self._contents = {}
        found = self._contents.get(phase)
        if found is None:
            found = self._contents[phase] = list(map(_CONTENT, self.messages(phase)))
        return found

    def scope(self, environment: Any) -> Mapping[str, Any]:
        """What a check's expression sees: the slot values and ``instance`` (made once, for
        every check of the instance)."""
        if self._scope is None:
            context = self.context
            self._scope = expression_scope(environment, context, instance=self.instance) \
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
    _compiled: list[tuple[int, Mapping[str, Any], InstanceCheck | None]] | None = None

    def _fail(self, index: int, message: str, instance_id: str | None = None) -> Problem:
        check, located, where = self.checks[index]
        line, col = located.where(where)
        prefix = f"{instance_id}: " if instance_id else ""
        text = check.get("description")
        detail = f" — {text}" if text else ""
        return Problem(f"check {check['kind']} failed: {prefix}{message}{detail}",
                       located.file, line, col, where)

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
        for index, check, run in self._plan():
            if run is None:  # a group-scope check
                problems += self._group_check(index, check, group)
                continue
            for rendered in group:
                inst = rendered.instance
                if "when" in check and not self._applies(check, inst):
                    continue
                message = run(rendered)
                if message:
                    problems.append(self._fail(index, message, inst["id"]))
        if problems:
            raise CheckFailed(problems)

    def _plan(self) -> list[tuple[int, Mapping[str, Any], InstanceCheck | None]]:
        """Each check with what runs it on one instance (None for the group-scope ones), made
        once: every instance of the family passes through every check."""
        if self._compiled is None:
            self._compiled = [(index, check, None if check["kind"] in _GROUP_KINDS else
                               getattr(self, f"_check_{check['kind']}")(index, check))
                              for index, (check, _, _) in enumerate(self.checks)]
        return self._compiled

    # Each of these makes the instance check of one kind: given a rendered variant, it
    # returns what is wrong with it, or None.

    def _check_balanced(self, index: int, check: Mapping[str, Any]) -> InstanceCheck:
        if "cross" in check:
            named = [(name, self._expr(index, "cross", name)) for name in check["cross"]]

            def of(scope: Any) -> Any:
                return {name: evaluate(scope) for name, evaluate in named}
        else:
            of = self._expr(index, "of")

        def tally(rendered: RenderedVariant) -> None:
            value = of(rendered.scope(self.renderer.env))
            try:
                self._tallies[index][dumps(value)] += 1
            except CanonicalJSONError:
                _, located, where = self.checks[index]
                raise located.error(f"'of' must give plain data, not a "
                                    f"{type(value).__name__}", (*where, "of")) from None

        return tally

    def _check_message_count(self, index: int, check: Mapping[str, Any]) -> InstanceCheck:
        phase = check["phase"]
        tests = [(key, ok, check[key]) for key, ok in _COUNT_TESTS if key in check]

        def count(rendered: RenderedVariant) -> str | None:
            n = len(rendered.messages(phase))
            for key, ok, limit in tests:
                if not ok(n, limit):
                    return f"phase {phase!r} has {n} messages ({key} {limit})"
            return None

        return count

    def _check_token_count(self, index: int, check: Mapping[str, Any]) -> InstanceCheck:
        phases, low, high = check["phases"], check.get("min"), check.get("max")
        shown = "+".join(phases)

        def count(rendered: RenderedVariant) -> str | None:
            n = sum(contents_tokens(rendered.contents(phase)) for phase in phases)
            if low is not None and n < low:
                return f"{shown} has {n} tokens, fewer than {low}"
            if high is not None and n > high:
                return f"{shown} has {n} tokens, more than {high}"
            return None

        return count

    def _check_distinct_messages(self, index: int, check: Mapping[str, Any]) -> InstanceCheck:
        phase = check["phase"]

        def distinct(rendered: RenderedVariant) -> str | None:
            contents = rendered.contents(phase)
            if len(set(contents)) == len(contents):
                return None
            repeated = next(c for c, k in Counter(contents).items() if k > 1)
            return f"phase {phase!r} repeats a message: {repeated[:60]!r}"

        return distinct

    def _check_forbidden_words(self, index: int, check: Mapping[str, Any]) -> InstanceCheck:
        words_of, phases = self._expr(index, "words"), check["phases"]
        known: list[_Words] = []  # the words met last (most families give one list always)

        def forbidden(rendered: RenderedVariant) -> str | None:
            given = words_of(rendered.scope(self.renderer.env))
            if not known or known[0].given is not given:
                known[:] = [self._words(index, given)]
            text = "\n".join([content for phase in phases
                              for content in rendered.contents(phase)])
            word = known[0].first_in(text)
            if word is not None:
                where = where_mentioned(word, [(phase, index, message) for phase in phases
                                               for index, message in
                                               enumerate(rendered.messages(phase))])
                return f"forbidden word {word!r} appears in {where}"
            return None

        return forbidden

    def _words(self, index: int, given: Any) -> _Words:
        """The words a forbidden_words check's expression gave, checked."""
        words = [given] if isinstance(given, str) else given
        if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
            _, located, where = self.checks[index]
            raise located.error("words must give a string or a list of strings, not "
                                f"{given!r}", (*where, "words"))
        return _Words(given, [str(word) for word in words])

    def _check_expr(self, index: int, check: Mapping[str, Any]) -> InstanceCheck:
        test, message = self._expr(index, "test"), check["message"]

        def holds(rendered: RenderedVariant) -> str | None:
            return None if test(rendered.scope(self.renderer.env)) else message

        return holds

    def _expr(self, index: int, key: str, name: str | None = None) -> Any:
        """The compiled expression at ``key`` of check ``index`` (at ``key.name`` given
        ``name``: one of several it names)."""
        compiled = self._expressions.get((index, key, name))
        if compiled is None:
            check, located, where = self.checks[index]
            path = (*where, key) if name is None else (*where, key, name)
            source = check[key] if name is None else check[key][name]
            line, col = located.text_start(path)
            label = f"check {check['kind']} {key}" + (f" {name}" if name else "")
            origin = TemplateOrigin(located.file, line - 1, col, label)
            compiled = self._expressions[index, key, name] = self.renderer.expression(source,
                                                                                       origin)
        return compiled

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
        problems = [self._fail(index, f"{what} is unbalanced ({shown})")
                    for index, what, shown, even in self.balance_counts() if not even]
        if problems:
            raise CheckFailed(problems)

    def balance_counts(self) -> list[tuple[int, str, str, bool]]:
        """Each family-scope (balanced) check with what it counts over everything tallied so
        far: (its index, what it counts, the counts, whether they are within one)."""
        found = []
        for index, (check, _, _) in enumerate(self.checks):
            if check["kind"] != "balanced":
                continue
            counts = self._tallies.get(index, Counter())
            if "cross" in check:
                counts = _crossed_counts(check, counts)
            else:
                for value in check.get("values", []):
                    counts.setdefault(dumps(value), 0)
            shown = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
            what = (" × ".join(check["cross"]) if "cross" in check else check["of"])
            found.append((index, what, shown,
                          not counts or max(counts.values()) - min(counts.values()) <= 1))
        return found


def _crossed_counts(check: Mapping[str, Any], counts: Mapping[str, int]) -> dict[str, int]:
    """The count of every combination of a crossed balanced check's names: each name takes
    its declared values and every value it gave, and a combination never met counts 0. Keys
    read ``name=value, name=value`` in the order the check names them."""
    names = list(check["cross"])
    seen = [json.loads(key) for key in counts]
    levels = []
    for name in names:
        values = {dumps(v): v for v in check.get("values", {}).get(name, [])}
        values.update((dumps(record[name]), record[name]) for record in seen)
        levels.append(sorted(values))
    by_cell = {tuple(dumps(record[n]) for n in names): count
               for record, count in zip(seen, counts.values(), strict=True)}
    return {", ".join(f"{n}={v}" for n, v in zip(names, cell, strict=True)): by_cell.get(cell, 0)
            for cell in itertools.product(*levels)}
