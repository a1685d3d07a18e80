"""Exact audits of a release's data alone: balance, leakage and duplicates.

Unlike the adversaries these are counts, not tests: a release either has every variant of
every group, its right answers spread evenly over the positions, no right answer spelled out
in its probe, no judge-scored control arm using the words the judge looks for, and no two
instances with the same content, or it does not. They need nothing but the instances, so they
run on any release, including one whose specs are not at hand.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .canonical import content_hash, dumps
from .checks import mentions
from .instances import phase_messages

Item = Mapping[str, Any]
_WORD = re.compile(r"[^\W\d_]+")
#: A control arm leaks the theme when it says this many of the theme's words on its own: one
#: alone is often a coincidence of plain prose (a backup note that runs "every night" beside a
#: rubric that names "nights" among its imagery); two are a pattern.
LEAK_WORDS = 2
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

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "family": self.family, "passed": self.passed,
                "measured": self.measured, "detail": self.detail}


def is_memory_choice(item: Item) -> bool:
    """A choice item whose answer only memory can give (no authoritative evidence shown)."""
    answer = item["answer"]
    return bool(answer.get("options")) and "gold_index" in answer and "evidence" not in answer


def gold_position(family: str, items: Sequence[Item]) -> Finding | None:
    """The right answer sits in each position equally often (within one), per option count."""
    by_size: dict[int, Counter[int]] = defaultdict(Counter)
    for item in items:
        if is_memory_choice(item):
            by_size[len(item["answer"]["options"])][item["answer"]["gold_index"]] += 1
    if not by_size:
        return None
    shown, uneven = [], []
    for size, counts in sorted(by_size.items()):
        row = [counts.get(position, 0) for position in range(size)]
        shown.append(f"{size} options: " + " ".join(f"{p}:{n}" for p, n in enumerate(row)))
        if max(row) - min(row) > 1:
            uneven.append(f"with {size} options the right answer is at position "
                          f"{row.index(max(row))} {max(row)} times but at position "
                          f"{row.index(min(row))} {min(row)} times")
    return Finding("balance: gold position", family, not uneven, "; ".join(shown),
                   "; ".join(uneven))


def cells(family: str, items: Sequence[Item]) -> Finding:
    """Every group holds each variant of its design exactly once (arms, rotations,
    conditions: the factorial cells), so every cell counts as many instances as groups."""
    designs: dict[str, dict[int, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for item in items:
        designs[item.get("design", "")][item["group"]][item["variant"]] += 1
    shown, problems = [], []
    for design, groups in sorted(designs.items()):
        variants = sorted({v for counter in groups.values() for v in counter})
        shown.append(f"{design or 'design'}: {len(variants)} cells x {len(groups)} groups")
        for group, counter in sorted(groups.items()):
            missing = [v for v in variants if v not in counter]
            repeated = [v for v, n in sorted(counter.items()) if n > 1]
            if missing or repeated:
                problems.append(f"group {group} of design {design!r}"
                                + (f" lacks {', '.join(missing)}" if missing else "")
                                + (f" repeats {', '.join(repeated)}" if repeated else ""))
    detail = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more groups"
                                        if len(problems) > 3 else "")
    return Finding("balance: cells", family, not problems, "; ".join(shown), detail)


_OPTION_LINE = re.compile(r"\s*\(?[A-Za-z0-9]{1,2}[).:]\s*(.+?)\s*")


def probe_text(instance: Item) -> str:
    """What a memoryless system reads of the question: the last phase, less the lines that
    merely list the options ("B) Terrace Room"), so that only the probe's own words count."""
    last = instance["phases"][-1]["phase"]
    options = set(instance["answer"].get("options", ()))
    lines = [line for m in phase_messages(instance, last) for line in m["content"].splitlines()]
    kept = [line for line in lines
            if not ((match := _OPTION_LINE.fullmatch(line)) and match.group(1) in options)]
    return "\n".join(kept)


def gold_in_probe(family: str, items: Sequence[Item]) -> Finding | None:
    """No probe spells out its right answer while leaving a wrong one unsaid."""
    audited = [i for i in items if is_memory_choice(i)]
    if not audited:
        return None
    leaks = []
    for item in audited:
        text, answer = probe_text(item), item["answer"]
        if mentions(text, answer["gold"]) and not all(
                mentions(text, o) for o in answer["options"]):
            leaks.append(item["id"])
    detail = (f"the probe names the right answer in {', '.join(leaks[:3])}"
              + (f" and {len(leaks) - 3} more" if len(leaks) > 3 else "")) if leaks else ""
    return Finding("leakage: gold in probe", family, not leaks,
                   f"{len(leaks)} of {len(audited)} probes", detail)


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
    matcher = difflib.SequenceMatcher(a=mine, b=theirs, autojunk=False)
    only_mine, only_theirs = [], []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        # A short run in common ("the moored boats") is not framing but the same words.
        if tag != "equal" or a1 - a0 < FRAMING_WORDS:
            only_mine += mine[a0:a1]
            only_theirs += theirs[b0:b1]
    return _content_words(" ".join(only_mine)), _content_words(" ".join(only_theirs))


def theme_leak(family: str, items: Sequence[Item]) -> Finding | None:
    """In judge-scored pairs, the control arm says none of the theme's words: the words of the
    judge's rubric that the treatment arms say on their own (not in text both arms share). A
    control arm carrying them would be scored up by the very judge it is compared by."""
    pairs: dict[tuple[int, str], dict[str, Any]] = defaultdict(dict)
    for item in items:
        spec = item.get("analysis", {}).get("judge_pairs")
        if spec and "rubric" in item["answer"]:
            arm = item["axes"].get(spec["axis"])
            if arm in (spec["treatment"], spec["control"]):
                rest = {k: v for k, v in item["axes"].items() if k != spec["axis"]}
                key = (item["group"], dumps(rest))
                pairs[key]["treatment" if arm == spec["treatment"] else "control"] = item
    complete = [p for _, p in sorted(pairs.items()) if len(p) == 2]
    if not complete:
        return None
    # What each arm of a pair says that the other does not, word by word: framing the arms
    # share ("I came across this ... among some old files") is neither arm's own.
    own = [_own_words(pair["treatment"], pair["control"]) for pair in complete]
    # The theme: every word of the rubric that a treatment says on its own, across the family
    # (a word one group happens not to use is still the theme's in another).
    theme: set[str] = set()
    for pair, (treatment_words, _) in zip(complete, own, strict=True):
        theme |= _content_words(pair["treatment"]["answer"]["rubric"]) & treatment_words
    leaks = []
    for pair, (_, control_words) in zip(complete, own, strict=True):
        leaked = sorted(theme & control_words)
        if len(leaked) >= LEAK_WORDS:
            leaks.append(f"{pair['control']['id']} ({', '.join(leaked[:4])})")
    detail = (f"the control arm uses the theme's words: {'; '.join(leaks[:3])}"
              + (f"; and {len(leaks) - 3} more" if len(leaks) > 3 else "")) if leaks else ""
    return Finding("leakage: control arm", family, not leaks,
                   f"{len(leaks)} of {len(complete)} control arms", detail)


class DuplicateIndex:
    """Instances with the same content (phases and answer, by XXH3-128), wherever they are:
    in one family, across families or across splits."""

    def __init__(self) -> None:
        self.first: dict[str, str] = {}
        self.clashes: dict[str, list[str]] = defaultdict(list)  # family -> descriptions

    def add(self, item: Item) -> None:
        key = content_hash({"phases": item["phases"], "answer": item["answer"]})
        if key not in self.first:
            self.first[key] = item["id"]
            return
        self.clashes[item["family"]].append(f"{item['id']} repeats {self.first[key]}")

    def finding(self, family: str, count: int) -> Finding:
        clashes = self.clashes.get(family, [])
        return Finding("leakage: duplicates", family, not clashes,
                       f"{len(clashes)} of {count} instances", "; ".join(clashes[:3]))


def structure_findings(by_family: Mapping[str, Sequence[Item]]) -> list[Finding]:
    """Every exact data-only audit on every family, in family order."""
    duplicates = DuplicateIndex()
    for family in sorted(by_family):
        for item in by_family[family]:
            duplicates.add(item)
    findings: list[Finding] = []
    for family, items in sorted(by_family.items()):
        candidates = [gold_position(family, items), cells(family, items),
                      gold_in_probe(family, items), theme_leak(family, items),
                      duplicates.finding(family, len(items))]
        findings += [f for f in candidates if f is not None]
    return findings
