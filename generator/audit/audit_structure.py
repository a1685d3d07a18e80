"""Exact audits of a release's data alone: balance, leakage and duplicates.

Unlike the adversaries these are counts, not tests: a release either has every variant of
every group, its right answers spread evenly over the positions, no right answer spelled out
in its probe, no judge-scored control arm using the words the judge looks for, and no two
instances with the same content, or it does not. They need nothing but the instances, so they
run on any release, including one whose specs are not at hand.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..analysis.scoring import is_correct
from ..core.bounded_diff import opcodes
from ..core.canonical import dumps
from ..engine.checks import mentions
from ..engine.content_index import ContentIndex, content_key
from .audit_rules import rules
from .audit_view import (
    declared,
    distinctive_words,
    evidence_problem,
    is_memory_choice,
    is_memory_item,
    probe_text,
    visible_messages,
    visible_phases,
)

Item = Mapping[str, Any]
_WORD = re.compile(r"[^\W\d_]+")
#: A control arm leaks the theme when it says this many of the theme's words on its own: one
#: is enough (a word that is a coincidence of plain prose, such as "night" in a backup note
#: beside a rubric that names "nights", is allow-listed by the family with its reason).
#: Rules 0 asked for two (``LEAK_WORDS_RULES_0``), taking one alone for a coincidence.
LEAK_WORDS = 1
LEAK_WORDS_RULES_0 = 2
#: Text both arms share counts as framing (neither arm's own words) from this many words in a
#: row: shorter runs in common are the same words used, which a leak is made of.
FRAMING_WORDS = 4


@dataclass(frozen=True)
class Finding:
    """The outcome of one exact audit on one family."""

    check: str  # "<area>: <what>", e.g. "balance: gold position"
    family: str
    passed: bool
    measured: str  # what was counted, shown whether it passed or not
    detail: str = ""  # why it failed, naming instances
    #: The spec key whose declaration the check refuses when it fails (``("audit",
    #: "chance")``), so that a refusal names the file, line and column it is written at;
    #: empty where the check refuses the data rather than a declaration.
    declared_at: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "family": self.family, "passed": self.passed,
                "measured": self.measured, "detail": self.detail}


class _GoldPositions:
    """The right answer sits in each position equally often (within one), per option count."""

    def __init__(self) -> None:
        self.by_size: dict[int, Counter[int]] = defaultdict(Counter)

    def add(self, item: Item) -> None:
        if is_memory_choice(item):
            self.by_size[len(item["answer"]["options"])][item["answer"]["gold_index"]] += 1

    def finding(self, family: str) -> Finding | None:
        if not self.by_size:
            return None
        shown, uneven = [], []
        for size, counts in sorted(self.by_size.items()):
            row = [counts.get(position, 0) for position in range(size)]
            shown.append(f"{size} options: " + " ".join(f"{p}:{n}" for p, n in enumerate(row)))
            if max(row) - min(row) > 1:
                uneven.append(f"with {size} options the right answer is at position "
                              f"{row.index(max(row))} {max(row)} times but at position "
                              f"{row.index(min(row))} {min(row)} times")
        return Finding("balance: gold position", family, not uneven, "; ".join(shown),
                       "; ".join(uneven))


#: How a group of one design was filled: each variant with how many times it occurs.
_Filling = tuple[tuple[str, int], ...]


class _Cells:
    """Every group holds each variant of its design exactly once (arms, rotations,
    conditions: the factorial cells), so every cell counts as many instances as groups.

    A group's variants are counted while its instances arrive and then kept as one shared
    tuple (most groups are filled alike), so a family of many groups takes little memory."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[int, _Filling]] = defaultdict(dict)
        self._open: dict[tuple[str, int], Counter[str]] = {}
        self._open_group: int | None = None
        self._shared: dict[_Filling, _Filling] = {}

    def add(self, item: Item) -> None:
        if item["group"] != self._open_group:
            self._close()
            self._open_group = item["group"]
        key = (item.get("design", ""), item["group"])
        self._open.setdefault(key, Counter())[item["variant"]] += 1

    def _close(self) -> None:
        for (design, group), counter in self._open.items():
            earlier = self.groups[design].get(group)
            if earlier is not None:  # the group's instances were not all together
                counter.update(dict(earlier))
            filling = tuple(sorted(counter.items()))
            self.groups[design][group] = self._shared.setdefault(filling, filling)
        self._open.clear()

    def finding(self, family: str) -> Finding:
        self._close()
        shown, problems, count = [], [], 0
        for design, groups in sorted(self.groups.items()):
            variants = sorted({v for filling in set(groups.values()) for v, _ in filling})
            shown.append(f"{design or 'design'}: {len(variants)} cells x {len(groups)} groups")
            for group, filling in sorted(groups.items()):
                counts = dict(filling)
                missing = [v for v in variants if v not in counts]
                repeated = [v for v, n in filling if n > 1]
                if missing or repeated:
                    count += 1
                    if len(problems) < 3:
                        problems.append(f"group {group} of design {design!r}"
                                        + (f" lacks {', '.join(missing)}" if missing else "")
                                        + (f" repeats {', '.join(repeated)}" if repeated
                                           else ""))
        detail = "; ".join(problems) + (f"; and {count - 3} more groups" if count > 3 else "")
        return Finding("balance: cells", family, not count, "; ".join(shown), detail)


def _shown_choice(item: Item) -> str | None:
    """Where a visible message names the right option while leaving a wrong one unsaid."""
    text, answer = probe_text(item), item["answer"]
    if not mentions(text, answer["gold"]) or all(mentions(text, o) for o in answer["options"]):
        return None
    where = next((f"the {m['role']} message of phase {p['phase']!r}"
                  for p in visible_phases(item) for m in p["messages"]
                  if mentions(m["content"], answer["gold"])), "a visible message")
    return f"{where} names {answer['gold']!r}"


def _shown_open(item: Item) -> str | None:
    """Where visible messages give an open item's answer away: a message is itself accepted
    by the scorer; or they spell out the right response (the gold, or the example right
    response of a pattern) or every word of three letters or more that sets it apart from
    the wrong responses the item declares, while leaving a wrong one unsaid (a task that
    lists every candidate gives none away by naming it)."""
    answer = item["answer"]
    right = answer["gold"] if answer["scorer"] != "regex" else answer.get("example", "")
    wrong = [v for k, v in answer.items() if k in ("prior", "remembered") and v != right]
    wrong += [v for v in answer.get("distractors", {}).values() if v != right]
    wrong += [c["value"] for c in answer.get("candidates", ()) if c["value"] != right]
    for phase in visible_phases(item):
        for message in phase["messages"]:
            if is_correct(answer, message["content"]):
                return (f"the {message['role']} message of phase {phase['phase']!r} is itself "
                        "a right response")
    text = "\n".join(m["content"] for m in visible_messages(item))

    def said(words: set[str]) -> bool:
        return all(mentions(text, w) for w in sorted(words))

    if not right:
        return None
    if mentions(text, right) and not all(mentions(text, w) for w in wrong):
        return f"the visible messages spell out {right!r}"
    own = {w for w in distinctive_words(right, wrong) if len(w) >= 3}
    unsaid = [w for w in wrong if not said({x for x in distinctive_words(w, [right])
                                              if len(x) >= 3})]
    if own and said(own) and unsaid:
        return (f"the visible messages say {', '.join(sorted(own)[:4])}, which only the right "
                "response says")
    return None


#: Pairs of words the audit's alignment of two arms may compare (``bounded_diff``): arms of
#: four thousand words each, far longer than any bundled family's, are still aligned word by
#: word; a longer pair is aligned past its common beginning and end only.
AUDIT_DIFF_PAIRS = 16_000_000


class _GoldShown:
    """No visible message (any phase but the memory phases, tool results included) gives
    away the right answer of a memory item."""

    def __init__(self) -> None:
        self.audited = 0
        self.leaks: list[str] = []  # the first few, in order
        self.leak_count = 0

    def add(self, item: Item) -> None:
        if not is_memory_item(item):
            return
        self.audited += 1
        cue = _shown_choice(item) if is_memory_choice(item) else _shown_open(item)
        if cue is not None:
            self.leak_count += 1
            if len(self.leaks) < 3:
                self.leaks.append(f"{item['id']} ({cue})")

    def finding(self, family: str) -> Finding | None:
        if not self.audited:
            return None
        more = self.leak_count - len(self.leaks)
        detail = (f"a visible message gives the right answer away in {'; '.join(self.leaks)}"
                  + (f" and {more} more" if more else "")) if self.leak_count else ""
        return Finding("leakage: gold shown", family, not self.leak_count,
                       f"{self.leak_count} of {self.audited} items", detail)


class _EvidenceShown:
    """An item declared to carry evidence shows it: its evidence value is in a message a
    memoryless system sees. (Only shown evidence exempts an item from the adversaries.)"""

    def __init__(self) -> None:
        self.declared = 0
        self.unseen: list[str] = []
        self.unseen_count = 0

    def add(self, item: Item) -> None:
        if item["answer"].get("evidence") is None:
            return
        self.declared += 1
        problem = evidence_problem(item)
        if problem is not None:
            self.unseen_count += 1
            if len(self.unseen) < 3:
                self.unseen.append(f"{item['id']} ({item['answer']['evidence']!r} {problem})")

    def finding(self, family: str) -> Finding | None:
        if not self.declared:
            return None
        more = self.unseen_count - len(self.unseen)
        detail = (f"declared evidence does not answer the item: {'; '.join(self.unseen)}"
                  + (f" and {more} more" if more else "")) if self.unseen_count else ""
        return Finding("leakage: evidence shown", family, not self.unseen_count,
                       f"{self.declared - self.unseen_count} of {self.declared} items show "
                       "declared evidence that answers them", detail, ("answer", "evidence"))


def _stem(word: str) -> str:
    """A crude plural fold, so that "vials" and "vial", "tides" and "tide" count as one."""
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _content_words(text: str) -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {_stem(w) for w in _WORD.findall(text)
            if len(w) > 2 and w.lower() not in ENGLISH_STOP_WORDS}


def _own_words(treatment: Item, control: Item) -> tuple[set[str], set[str]]:
    """The content words each arm says and the other does not, over all their phases, by an
    alignment of their words (so that a word both arms use in the same place is shared)."""
    def words(item: Item) -> list[str]:
        return [w.lower() for phase in item["phases"] for m in phase["messages"]
                for w in _WORD.findall(m["content"])]

    mine, theirs = words(treatment), words(control)
    only_mine, only_theirs = [], []
    # Bounded (``bounded_diff``) well above the longest arms of a real release.
    for tag, a0, a1, b0, b1 in opcodes(mine, theirs, AUDIT_DIFF_PAIRS):
        # A short run in common ("the moored boats") is not framing but the same words.
        if tag != "equal" or a1 - a0 < FRAMING_WORDS:
            only_mine += mine[a0:a1]
            only_theirs += theirs[b0:b1]
    return _content_words(" ".join(only_mine)), _content_words(" ".join(only_theirs))


class _ThemeLeak:
    """In judge-scored pairs, the control arm says none of the theme's words: the words of the
    judge's rubric that the treatment arms say on their own (not in text both arms share). A
    control arm carrying them would be scored up by the very judge it is compared by.

    A pair is compared as soon as both its arms have arrived (they share a group); only what
    the comparison found is kept, not the instances."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[int, str], dict[str, Any]] = defaultdict(dict)
        #: Per complete pair, by its key: the control's id and the words it says on its own.
        self._controls: dict[tuple[int, str], tuple[str, frozenset[str]]] = {}
        self.theme: set[str] = set()
        #: Words the family allows a control arm to say, though the theme's (with a reason).
        self.allowed: set[str] = set()
        #: In how many pairs the treatment says each word on its own.
        self._own: Counter[str] = Counter()

    def add(self, item: Item) -> None:
        spec = item.get("analysis", {}).get("judge_pairs")
        if not spec or "rubric" not in item["answer"]:
            return
        arm = item["axes"].get(spec["axis"])
        if arm not in (spec["treatment"], spec["control"]):
            return
        audit = declared(item)
        # The family's own theme words count whether or not the rubric names them.
        self.theme |= {_stem(w) for w in audit.get("theme_words", ())}
        self.allowed |= {_stem(w) for w in audit.get("allow_words", {}).get("words", ())}
        rest = {k: v for k, v in item["axes"].items() if k != spec["axis"]}
        key = (item["group"], dumps(rest))
        pair = self._waiting[key]
        pair["treatment" if arm == spec["treatment"] else "control"] = item
        if len(pair) < 2:
            return
        del self._waiting[key]
        # What each arm says that the other does not, word by word: framing the arms share
        # ("I came across this ... among some old files") is neither arm's own.
        treatment_words, control_words = _own_words(pair["treatment"], pair["control"])
        # The theme: every word of the rubric that a treatment says on its own, across the
        # family (a word one group happens not to use is still the theme's in another).
        self.theme |= _content_words(pair["treatment"]["answer"]["rubric"]) & treatment_words
        # Of the manipulated phases only: a phase both arms hold alike (the probe) is no
        # theme's, even where a short run of it aligns as either arm's own words.
        shared = _content_words(" ".join(
            m["content"] for mine, theirs in zip(pair["treatment"]["phases"],
                                                 pair["control"]["phases"], strict=False)
            if mine == theirs for m in mine["messages"]))
        self._own.update(treatment_words - shared)
        self._controls[key] = (pair["control"]["id"], frozenset(control_words))

    def _phase_theme(self) -> set[str]:
        """The manipulated phases' own distinctive words (rules 2), whether or not the rubric
        or a declared list names them: those the treatment says on its own in every pair of
        the family (a theme is what the treatment keeps saying), less those more than a
        quarter of the controls say on their own too (language both arms share, such as
        "old" in a story and in a to-do list, not the theme)."""
        if not rules().stratified:
            return set()
        pairs = len(self._controls)
        controls = Counter(w for _, words in self._controls.values() for w in words)
        return {w for w, n in self._own.items()
                if n >= pairs and 4 * controls[w] <= pairs}

    def finding(self, family: str) -> Finding | None:
        if not self._controls:
            return None
        leaks = []
        theme = self.theme | self._phase_theme()
        least = LEAK_WORDS if rules().one_theme_word else LEAK_WORDS_RULES_0
        for _, (control_id, control_words) in sorted(self._controls.items()):
            leaked = sorted((theme - self.allowed) & control_words)
            if len(leaked) >= least:
                leaks.append(f"{control_id} ({', '.join(leaked[:4])})")
        detail = (f"the control arm uses the theme's words: {'; '.join(leaks[:3])}"
                  + (f"; and {len(leaks) - 3} more" if len(leaks) > 3 else "")) if leaks else ""
        return Finding("leakage: control arm", family, not leaks,
                       f"{len(leaks)} of {len(self._controls)} control arms", detail)


class DuplicateIndex:
    """Instances with the same content (``content_key``), wherever they are: in one family,
    across families or across splits. Memory grows by 8 bytes an instance (a ContentIndex);
    the few instances whose keys may agree are read back, once all were added, to compare
    their full keys (``resolve``)."""

    def __init__(self) -> None:
        self._index = ContentIndex()
        self._clashes: dict[str, list[str]] | None = None  # family -> descriptions

    def add(self, item: Item) -> None:
        self._index.add(content_key(item))

    def keys(self) -> bytes:
        """What was added so far, as ``extend`` takes it (8 bytes an instance)."""
        return self._index.prefixes()

    def extend(self, keys: bytes) -> None:
        """Add the instances another index's ``keys`` describe, as if added here in turn."""
        self._index.extend(keys)

    def resolve(self, stream: Callable[[], Iterable[Item]]) -> None:
        """Find the clashes, given ``stream``: the instances again, in the order added."""
        wanted = self._index.candidates()
        self._clashes = defaultdict(list)
        first: dict[str, str] = {}
        positions = iter(wanted)
        target = next(positions, None)
        for position, item in enumerate(stream() if wanted else ()):
            if target is None:
                break
            if position != target:
                continue
            target = next(positions, None)
            key = content_key(item)
            if key in first:
                self._clashes[item["family"]].append(f"{item['id']} repeats {first[key]}")
            else:
                first[key] = item["id"]

    def finding(self, family: str, count: int) -> Finding:
        assert self._clashes is not None, "resolve() first"
        clashes = self._clashes.get(family, [])
        return Finding("leakage: duplicates", family, not clashes,
                       f"{len(clashes)} of {count} instances", "; ".join(clashes[:3]))


class FamilyStructure:
    """Every exact data-only audit of one family, fed its instances one at a time (memory
    grows with its groups by a few bytes each, not with its instances). ``duplicates`` is
    shared by the families of a release, fed in family order."""

    def __init__(self, family: str, duplicates: DuplicateIndex) -> None:
        self.family = family
        self.duplicates = duplicates
        self.count = 0
        #: Whether the instances came in order of their group (a release's files hold them so).
        self.in_group_order = True
        self._last_group: int | None = None
        self._audits: tuple[Any, ...] = (_GoldPositions(), _Cells(), _GoldShown(),
                                         _EvidenceShown(), _ThemeLeak())
        if rules().stratified:
            from .audit_markers import ArmMarkers  # it builds on this module's Finding

            self._audits += (ArmMarkers(),)

    def add(self, item: Item) -> None:
        self.count += 1
        if self._last_group is not None and item["group"] < self._last_group:
            self.in_group_order = False
        self._last_group = item["group"]
        for audit in self._audits:
            audit.add(item)
        self.duplicates.add(item)

    def findings(self) -> list[Finding]:
        return self.own_findings() + [self.duplicates.finding(self.family, self.count)]

    def own_findings(self) -> list[Finding]:
        """The findings that read this family alone (all but the duplicates, which are
        looked for across the release)."""
        candidates = [audit.finding(self.family) for audit in self._audits]
        return [f for f in candidates if f is not None]
