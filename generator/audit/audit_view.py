"""What a system without memory sees of an item, and what the family declares for the audit.

What a memoryless system sees, one definition for the view and every adversary: every message
of the phases that are not memory phases (by default every phase but the last; a paradigm or
family may name them in its ``audit`` block) and, of a memory phase, the tool results handed in
before the assistant says anything in it (a lookup shown with the context is read now, not
remembered). What the remembered session said and did is memory: its user and assistant
messages, and the tool results returned to the calls it made (after an assistant turn of the
phase; in a conditioning design they are the conditioning itself). Nothing reads memory but
the echo policies, which repeat the remembered session's last reply or call (a system's own
habit), and are held to the design's chance whatever is declared. (Under rules 1 of the audit
every tool result of a memory phase was shown.)

An item's view keeps only what the audit's adversaries read: the visible messages, the answer
and, for the echo policies alone, the last reply of each memory phase and the last call made in
them, so that holding one view per group costs little.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..analysis.scoring import first_call, is_correct
from ..engine.checks import mentions
from .audit_rules import rules

Item = Mapping[str, Any]

#: A memoryless policy's expected score on open (non-choice) items when the family declares
#: none: such an answer should almost never be right by coincidence.
OPEN_CHANCE = 0.05
_WORD = re.compile(r"\w+")
# A quote opens and closes outside a word, so that an apostrophe ("the Tenant's rent") is not
# taken for one.
_QUOTED = re.compile(r"(?<!\w)'([^'\n]+)'(?!\w)|\"([^\"\n]+)\"|`([^`\n]+)`")
#: A call as code writes it: a name of two characters or more, then its parenthesis.
_CALL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]+\(")
_STRING_ARG = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_PATHLIKE = re.compile(r"[\w.~-]*[/._][\w./~-]*\w")


def declared(item: Item) -> Mapping[str, Any]:
    """The audit block the item's paradigm and family declare (empty if they declare none)."""
    return item.get("analysis", {}).get("audit", {})


def memory_phases(item: Item) -> list[str]:
    """The phases that hold what is remembered: those the paradigm or family declares, else
    every phase but the last."""
    names = [p["phase"] for p in item["phases"]]
    chosen = declared(item).get("memory_phases")
    return [n for n in names if n in chosen] if chosen is not None else names[:-1]


def visible_phases(item: Item) -> list[Mapping[str, Any]]:
    """What a memoryless system sees, phase by phase in order (the probe last): every
    message of the other phases and, of each memory phase, the tool results handed in before
    its first assistant turn (under rules 1, every tool result of a memory phase)."""
    hidden = set(memory_phases(item))
    every_tool = not rules().remembered_calls_hidden
    out = []
    for phase in item["phases"]:
        if phase["phase"] not in hidden:
            out.append(phase)
            continue
        tools = []
        for message in phase["messages"]:
            if message["role"] == "assistant" and not every_tool:
                break  # what follows answers the remembered session's own calls
            if message["role"] == "tool":
                tools.append(message)
        if tools:
            out.append({"phase": phase["phase"], "messages": tools})
    return out


def visible_messages(item: Item) -> list[Mapping[str, str]]:
    return [m for p in visible_phases(item) for m in p["messages"]]


def visible_text(item: Item) -> str:
    return "\n".join(m["content"] for m in visible_messages(item))


#: The label that begins a line listing an option ("B) Terrace Room"); the option is the rest
#: of the line, stripped (not ``\s*(.+?)\s*`` to the end, which tries every split of a long run
#: of spaces).
_OPTION_LABEL = re.compile(r"\s*\(?[A-Za-z0-9]{1,2}[).:]")


def option_of_line(line: str) -> str | None:
    """The option a line lists ("B) Terrace Room" lists "Terrace Room"), or None."""
    label = _OPTION_LABEL.match(line)
    return (line[label.end():].strip() or None) if label else None


def probe_text(instance: Item) -> str:
    """What a memoryless system reads of the question: the visible phases, less the lines
    that merely list the options ("B) Terrace Room"), so that only the probe's own words
    count."""
    if "probe_text" in instance:  # a view keeps it, read by several adversaries per item
        return instance["probe_text"]
    options = set(instance["answer"].get("options", ()))
    lines = [line for p in visible_phases(instance) for m in p["messages"]
             for line in m["content"].splitlines()]
    kept = [line for line in lines if option_of_line(line) not in options]
    return "\n".join(kept)


def is_judged(item: Item) -> bool:
    return item["answer"]["scorer"] == "judge"


def evidence_problem(item: Item) -> str | None:
    """Why the item's declared evidence does not answer it for a memoryless system: it is in
    no message such a system sees, or (rules 2) it is shown but, given as a response, the
    family's own scorer does not accept it (evidence that does not give the right answer
    makes the item no easier without memory). None when it answers it, or none is declared."""
    evidence = item["answer"].get("evidence")
    if evidence is None:
        return None
    # One pass of the audit asks about each instance several times in a row (its data
    # audits, its draw), and the answer runs the family's scorer: the last answer is kept,
    # for that very item (the same object) under the same rules. One tuple, read and
    # replaced whole, so that threads auditing side by side never mix two answers.
    last, now = _LAST_EVIDENCE[0], rules()
    if last[0] is item and last[1] is now:
        return last[2]
    problem = None
    # The lines that list the options show every option alike: they are no evidence.
    if not mentions(probe_text(item), evidence):
        problem = "appears in no visible message"
    elif now.evidence_gives_gold and not is_correct(item["answer"], evidence):
        problem = "is shown but does not give the right answer"
    _LAST_EVIDENCE[0] = (item, now, problem)
    return problem


#: The item ``evidence_problem`` last read, the rules it read it by and its answer.
_LAST_EVIDENCE: list[tuple[Any, Any, str | None]] = [(None, None, None)]


def evidence_shown(item: Item) -> bool | None:
    """Whether the item's declared evidence is shown and answers it (None: it declares
    none). Only such evidence exempts an item from the memoryless audits."""
    if item["answer"].get("evidence") is None:
        return None
    return evidence_problem(item) is None


def is_memory_item(item: Item) -> bool:
    """An item a memoryless system should not pass: scorable, and not answered by evidence
    it is shown."""
    return not is_judged(item) and evidence_shown(item) is not True


def is_memory_choice(item: Item) -> bool:
    answer = item["answer"]
    return is_memory_item(item) and bool(answer.get("options")) and "gold_index" in answer


def family_chance(items: Sequence[Item]) -> float:
    """The score a memoryless policy is expected to reach on these items: the family's
    declared chance, else one over the number of options (the most generous where it
    varies), else ``OPEN_CHANCE``."""
    if items:
        stated = declared(items[0]).get("chance", items[0].get("analysis", {}).get("chance"))
        if stated is not None:
            return float(stated)
    sizes = [len(i["answer"]["options"]) for i in items if i["answer"].get("options")]
    return 1 / min(sizes) if sizes else OPEN_CHANCE


def _calls(text: str) -> Iterator[str]:
    """Every balanced ``name(...)`` call in ``text``, in order."""
    start = 0
    while True:
        call = first_call(text[start:])
        if not call:
            return
        at = text.index(call, start)
        if _CALL_NAME.match(call):  # "m (203 cm)" in prose is no call
            yield call
        start = at + len(call)


def salient_tokens(text: str) -> list[str]:
    """What a copier lifts from a probe: its quoted spans, else its path- or name-like
    tokens."""
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
    return quoted or _PATHLIKE.findall(text)


def substitute_arguments(call: str, values: Sequence[str]) -> str:
    """``call`` with its string arguments replaced, in order, by ``values``."""
    remaining = iter(values)

    def replace(match: re.Match[str]) -> str:
        value = next(remaining, None)
        quote = match.group(0)[0]
        return match.group(0) if value is None else f"{quote}{value}{quote}"

    return _STRING_ARG.sub(replace, call)


def item_view(item: Item) -> dict[str, Any]:
    """What the adversaries keep of an item: its identity, answer and declarations, its
    visible phases, the last assistant reply of each memory phase and the last call made in
    the memory phases."""
    replies: dict[str, str] = {}
    last_call = ""
    for phase in item["phases"]:
        if phase["phase"] not in memory_phases(item):
            continue
        said = [m["content"] for m in phase["messages"] if m["role"] == "assistant"]
        if said:
            replies[phase["phase"]] = said[-1]
        for content in said:
            for call in _calls(content):
                last_call = call
    keep = ("id", "family", "paradigm", "group", "design", "variant", "axes", "answer",
            "analysis")
    return {**{k: item[k] for k in keep if k in item}, "phases": visible_phases(item),
            "replies": replies, "last_call": last_call, "probe_text": probe_text(item)}


def distinctive_words(text: str, others: Sequence[str]) -> set[str]:
    """The words of ``text`` that none of ``others`` says."""
    theirs = {w.lower() for o in others for w in _WORD.findall(o)}
    return {w.lower() for w in _WORD.findall(text)} - theirs
