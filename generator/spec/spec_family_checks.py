"""Checks of a family's phases, answer, analysis and checks beyond the schema: every phase,
axis, value and pattern they name must exist or compile, so that a typo cannot switch one off."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from .spec_types import Design


def bad_patterns(patterns: list[str], probed: bool = False,
                 ignore_case: bool = True) -> list[tuple[int, str]]:
    """(index, reason) of each pattern that does not compile in the engine that matches it;
    ``probed``, also of each that takes too long on the probes it is tried on
    (``searched_pattern_problem``, matched case aside or not as ``ignore_case`` says)."""
    from ..core.safe_regex import pattern_error, searched_pattern_problem
    if probed:
        return [(index, why) for index, pattern in enumerate(patterns)
                if (why := searched_pattern_problem(pattern, ignore_case)) is not None]
    return [(index, f"is not a valid regular expression: {why}")
            for index, pattern in enumerate(patterns) if (why := pattern_error(pattern))]


def check_analysis(analysis: Mapping[str, Any], designs: tuple[Design, ...],
                    problem: Any, probe_patterns: bool = False) -> None:
    """Problems of a family's analysis block: axes and values it names that are not the
    family's, factors that are not two-valued, outcome and signal patterns that do not
    compile, and, with ``probe_patterns``, that take too long on the probes an abstain
    pattern is tried on. Declared outcomes and signals are long patterns (the bundled ones
    take a tenth of a second to probe), searched in every answered response, so they are
    probed where a family is validated or frozen, once a pattern text in a process, not on
    every load of it; at score time they are matched under the regex time limit anyway."""
    values: dict[str, set[str]] = {}
    for design in designs:
        for axis in design.axes:
            values.setdefault(axis.name, set()).update(axis.values)
    refs = []
    if "baseline" in analysis:
        refs.append((("analysis", "baseline"), analysis["baseline"]["axis"],
                     [analysis["baseline"]["value"]]))
    for index, pair in enumerate(analysis.get("paired", [])):
        refs.append((("analysis", "paired", index), pair["axis"], [pair["a"], pair["b"]]))
    if "judge_pairs" in analysis:
        pairs = analysis["judge_pairs"]
        refs.append((("analysis", "judge_pairs"), pairs["axis"],
                     [pairs["treatment"], pairs["control"]]))
    if "judge_panel" in analysis:
        anchor = analysis["judge_panel"]["anchor"]
        refs.append((("analysis", "judge_panel", "anchor"), anchor["axis"],
                     [anchor["value"]]))
    for index, contrast in enumerate(analysis.get("contrasts", [])):
        for side in ("a", "b"):
            for key, value in contrast[side].items():
                if key in values:  # other keys name a design or a field
                    refs.append((("analysis", "contrasts", index, side, key), key, [value]))
    for index, factorial in enumerate(analysis.get("factorials", [])):
        for position, axis in enumerate(factorial["axes"]):
            where = ("analysis", "factorials", index, "axes", position)
            if axis not in values:
                problem(f"factorial names unknown axis {axis!r}", where)
            elif len(values[axis]) != 2:
                problem(f"factorial axis {axis!r} has {len(values[axis])} values; a "
                        "factor has two", where)
    if "signal" in analysis:
        for axis, value in analysis["signal"]["act"].items():
            refs.append((("analysis", "signal", "act", axis), axis, [value]))
        for _, why in bad_patterns([analysis["signal"]["performed"]], probe_patterns,
                                   ignore_case=False):
            problem(f"signal 'performed' {why}",
                    ("analysis", "signal", "performed"))
    for name, pattern in analysis.get("outcomes", {}).items():
        for _, why in bad_patterns([pattern], probe_patterns, ignore_case=False):
            problem(f"outcome {name!r} {why}",
                    ("analysis", "outcomes", name))
    for where, axis, wanted in refs:
        if axis not in values:
            problem(f"analysis names unknown axis {axis!r}", where)
            continue
        for value in wanted:
            if value not in values[axis]:
                problem(f"analysis names {value!r}, not a value of axis {axis!r}", where)
    scale = analysis.get("judge_scale")
    if scale and scale[0] >= scale[1]:
        problem("judge_scale must be [lowest, highest]", ("analysis", "judge_scale"))


def check_reading(reading: Mapping[str, Any], where: tuple, problem: Any) -> None:
    """Problems of a reading block: openers and abstain forms that do not compile, a
    signature that is not a call of parameter names."""
    for key in ("openers", "abstain"):
        for index, why in bad_patterns(reading.get(key, []), probed=True):
            problem(f"reading {key} pattern {why}", (*where, key, index))
    declared = [(reading["signature"], (*where, "signature"))] if "signature" in reading else []
    declared += [(text, (*where, "signatures", index))
                 for index, text in enumerate(reading.get("signatures", ()))]
    for signature, at in declared:
        try:
            node = ast.parse(signature, mode="eval").body
        except SyntaxError:
            node = None
        if not (isinstance(node, ast.Call) and not node.keywords
                and all(isinstance(a, ast.Name) for a in node.args)):
            problem(f"signature {signature!r} is not a call of parameter names, "
                    "such as copy_file(destination, source)", at)
    if "signatures" in reading and reading.get("version", 5) < 5:
        problem("reading signatures are read from reading version 5 on",
                (*where, "signatures"))


def check_answer(answer: Mapping[str, Any], slot_names: list[str], problem: Any) -> None:
    scorer = answer["scorer"]
    where = ("answer",)
    if "reading" in answer:
        check_reading(answer["reading"], (*where, "reading"), problem)
        if answer["reading"].get("unplaced") == "judge" and "rubric" not in answer:
            problem("reading unplaced: judge sends the replies the reader cannot place to a "
                    "judge: the answer needs a 'rubric'", (*where, "reading", "unplaced"))
    for index, why in bad_patterns(answer.get("abstain", []), probed=True):
        problem(f"abstain pattern {why}", (*where, "abstain", index))
    if scorer in ("exact", "regex", "canonical", "choice") and "gold" not in answer:
        problem(f"a {scorer} answer needs 'gold'", where)
    if scorer == "choice" and "options" not in answer:
        problem("a choice answer needs 'options' (the name of a list slot)", where)
    if "options" in answer and answer["options"] not in slot_names:
        problem(f"options names unknown slot {answer['options']!r}", (*where, "options"))
    if scorer == "judge" and "rubric" not in answer:
        problem("a judge answer needs 'rubric'", where)
    if "unordered_args" in answer and scorer != "canonical":
        problem("'unordered_args' only applies to the canonical scorer",
                (*where, "unordered_args"))


def phrasings_of(phase: Any) -> list[tuple[Any, tuple]]:
    """The ways a phase is written, each with its path below the phase: one for a phase given
    as a template or messages, several for ``{phrasings: [...]}``."""
    if isinstance(phase, dict) and "phrasings" in phase:
        return [(item, ("phrasings", index)) for index, item in enumerate(phase["phrasings"])]
    return [(phase, ())]


def check_phrasings(phases: Mapping[str, Any], problem: Any) -> None:
    """A phrasing written twice would be drawn twice as often as the others: refused."""
    for name, phase in phases.items():
        if isinstance(phase, dict) and len(phase.get("phrasings", ())) == 1:
            problem(f"phase {name!r} has one phrasing: write it as the phase itself, or give "
                    "two or more", ("phases", name, "phrasings"))
        seen: dict[str, int] = {}
        for item, where in phrasings_of(phase):
            key = item if isinstance(item, str) else item.get("template")
            if not isinstance(key, str):  # inline messages: compared as written
                key = repr(item)
            if key in seen:
                problem(f"phrasing {where[-1]} of phase {name!r} repeats phrasing {seen[key]}",
                        ("phases", name, *where))
            seen.setdefault(key, where[-1] if where else 0)


#: Checks that hold nothing without one of these keys.
_CHECK_BOUNDS = {"message_count": ("equals", "min", "max"), "token_count": ("min", "max")}


def check_refs(check: Mapping[str, Any], phases: set[str],
                axes: Mapping[str, set[str]]) -> list[str]:
    """Every phase, axis and axis value a check names must exist, and a check must bound
    something: a typo must not silently switch a check off."""
    kind = check["kind"]
    named = [check["phase"]] if "phase" in check else list(check.get("phases", []))
    problems = [f"check {kind!r} names unknown phase {p!r}" for p in named if p not in phases]
    bounds = _CHECK_BOUNDS.get(kind, ())
    if bounds and not any(bound in check for bound in bounds):
        problems.append(f"check {kind!r} asserts nothing: give it {' or '.join(bounds)}")
    if kind == "balanced":
        problems += _balanced_problems(check)
    if "axis" in check and check["axis"] not in axes:
        problems.append(f"check {kind!r} names unknown axis {check['axis']!r}")
    if "reference" in check and check.get("axis") in axes and \
            check["reference"] not in axes[check["axis"]]:
        problems.append(f"check {kind!r}: reference {check['reference']!r} is not a value of "
                        f"axis {check['axis']!r}")
    for axis, wanted in check.get("when", {}).items():
        if axis not in axes:
            problems.append(f"check {kind!r}: 'when' names unknown axis {axis!r}")
            continue
        for value in wanted if isinstance(wanted, list) else [wanted]:
            if value not in axes[axis]:
                problems.append(f"check {kind!r}: 'when' names {value!r}, not a value of axis "
                                f"{axis!r}")
    return problems


def answer_examples(answer: Mapping[str, Any]) -> list[tuple[str, int, str, Any]]:
    """Each example response of an answer: (``accepts`` or ``rejects``, its index, its text,
    its ``when`` or None)."""
    return [(key, index, item if isinstance(item, str) else item["response"],
             None if isinstance(item, str) else item.get("when"))
            for key in ("accepts", "rejects") for index, item in enumerate(answer.get(key, ()))]


def answer_example_problems(answer: Mapping[str, Any], axes: Mapping[str, set[str]]
                             ) -> list[tuple[tuple, str]]:
    """Example responses a judge answer cannot hold, and ``when`` axes or values that do not
    exist (an example that applies to nothing would test nothing)."""
    problems = []
    for key, index, _, when in answer_examples(answer):
        where = ("answer", key, index)
        if answer["scorer"] == "judge":
            problems.append((where, f"a judge answer cannot test '{key}': only a judge scores "
                             "its responses"))
        for axis, wanted in (when or {}).items():
            if axis not in axes:
                problems.append(((*where, "when", axis), f"'when' names unknown axis {axis!r}"))
                continue
            for value in wanted if isinstance(wanted, list) else [wanted]:
                if value not in axes[axis]:
                    problems.append(((*where, "when", axis),
                                     f"'when' names {value!r}, not a value of axis {axis!r}"))
    return problems


def _balanced_problems(check: Mapping[str, Any]) -> list[str]:
    """A balanced check counts one expression (``of``, values a list) or the combinations of
    several (``cross``, values by name): exactly one, and values of its form."""
    if ("of" in check) == ("cross" in check):
        return ["check 'balanced' needs exactly one of 'of' (one expression) and 'cross' "
                "(several, named, whose combinations are counted)"]
    values = check.get("values")
    if "of" in check and isinstance(values, dict):
        return ["check 'balanced': with 'of', 'values' is a list"]
    if "cross" in check and values is not None:
        if not isinstance(values, dict):
            return ["check 'balanced': with 'cross', 'values' gives a list for each name"]
        unknown = [name for name in values if name not in check["cross"]]
        if unknown:
            return [f"check 'balanced': 'values' names {unknown[0]!r}, which 'cross' does "
                    f"not ({', '.join(check['cross'])})"]
    return []
