"""Each kind of check as a family author meets it: the instances it lets through, and the
message (instance, counts, where) when it refuses them. Counts are made by hand from the
family's text, not by the generator's own counting."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_spec_language import tree, write  # noqa: F401

from memspec.core.errors import CheckFailed
from memspec.engine.generate import FamilyGenerator
from memspec.engine.render import Renderer
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

FAMILY_FILE = "specs/families/lab/recall_words.yaml"
FAMILY_ID = "lab.recall.words"
#: The family file as the fixture wrote it, by path: each run starts from it.
_ORIGINAL: dict[Path, str] = {}


def _refused(root: Path, checks: str, groups: int = 4, slots: str = "") -> list[str]:
    """The problems the family's checks (YAML list items, one per line) find in ``groups``
    groups; [] when they all pass."""
    path = root / FAMILY_FILE
    text = _ORIGINAL.setdefault(path, path.read_text(encoding="utf-8"))
    if slots:
        text = text.replace("slots:\n", f"slots:\n{slots}", 1)
    path.write_text(text + "checks:\n" + checks, encoding="utf-8")
    catalog = Catalog.load(Project(root))
    generator = FamilyGenerator(catalog.family(FAMILY_ID), Renderer(catalog.project), 7)
    try:
        for _ in generator.groups(groups):
            pass
    except CheckFailed as failed:
        return [problem.message for problem in failed.problems]
    return []


# The study phase of every instance holds two messages: "Remember these words: w1, w2, w3,
# w4." (12 tokens: 8 words and 4 marks; 5 words, 4 marks and 3 commas) and "Noted." (2 tokens);
# the question phase one message, "Which word came first?" or "...last?" (5 tokens).


@pytest.mark.parametrize(("check", "refusal"), [
    ("{kind: message_count, phase: question, equals: 1}", None),
    ("{kind: message_count, phase: study, equals: 2}", None),
    ("{kind: message_count, phase: study, min: 2, max: 2}", None),
    ("{kind: message_count, phase: study, equals: 1}", "phase 'study' has 2 messages (equals 1)"),
    ("{kind: message_count, phase: study, min: 3}", "phase 'study' has 2 messages (min 3)"),
    ("{kind: message_count, phase: study, max: 1}", "phase 'study' has 2 messages (max 1)"),
    ("{kind: token_count, phases: [study, question], min: 19, max: 19}", None),
    ("{kind: token_count, phases: [study, question], min: 20}",
     "study+question has 19 tokens, fewer than 20"),
    ("{kind: token_count, phases: [study, question], max: 18}",
     "study+question has 19 tokens, more than 18"),
    ("{kind: token_count, phases: [question], max: 5}", None),
    ("{kind: distinct_messages, phase: study}", None),
    ("{kind: expr, test: 'words | length == 4', message: not four}", None),
    ("{kind: forbidden_words, phases: [question], words: 'words'}", None),
    ("{kind: forbidden_words, phases: [study, question], words: \"['zebra', 'came']\"}",
     "forbidden word 'came' appears in phase 'question', message 0 (user), line 1 column 12: "
     "…Which word came "),
    # Whatever the case it is written in, and located where it is.
    ("{kind: forbidden_words, phases: [question], words: \"['WORD']\"}",
     "forbidden word 'WORD' appears in phase 'question', message 0 (user), line 1 column 7: "
     "…Which word came "),
])
def test_a_check_passes_or_names_what_is_wrong(tree: Path, check: str,  # noqa: F811
                                               refusal: str | None) -> None:
    found = _refused(tree, f"  - {check}\n")
    if refusal is None:
        assert found == []
    else:
        # Both instances of the first group break it (the run stops at that group).
        assert len(found) == 2
        assert all(f": {refusal}" in message for message in found), found
        assert all(message.startswith("check ") for message in found)


def test_a_check_with_when_applies_to_those_variants_only(tree: Path) -> None:  # noqa: F811
    found = _refused(tree, "  - {kind: expr, test: 'instance.axes.cue == \"first\"', "
                           "message: asked for the last, when: {cue: [last]}}\n", groups=2)
    # The first group's last-cue instance only (the run stops at the group).
    assert found == ["check expr failed: lab.recall.words-00000-last: asked for the last"]
    assert _refused(tree, "  - {kind: expr, test: 'instance.axes.cue == \"first\"', "
                          "message: x, when: {cue: first}}\n", groups=1) == []


def test_an_expr_check_sees_the_instance_as_the_reference_says(tree: Path) -> None:  # noqa: F811
    # Each key docs/spec-language.md lists under `expr`, and none it says is not there yet.
    for key in ("id", "family", "family_version", "paradigm", "group", "design", "variant",
                "axes", "fields", "phases", "answer"):
        assert _refused(tree, f"  - {{kind: expr, test: \"'{key}' in instance\", "
                              "message: missing}\n", groups=1) == [], key
    assert len(_refused(tree, "  - {kind: expr, test: \"'analysis' not in instance\", "
                              "message: x}\n", groups=1)) == 0
    # The docs' example, and the shapes it names, hold on every instance.
    test = ("instance.phases[1].phase == 'question' and "
            "instance.phases[1].messages[0].role == 'user' and "
            "instance.phases[1].messages[0].content.startswith('Which word came') and "
            "instance.answer.scorer == 'exact' and instance.group == 0 and "
            "instance.answer.gold == (words[0] if instance.axes.cue == 'first' else words[-1])")
    assert _refused(tree, f"  - {{kind: expr, test: \"{test}\", message: m}}\n", groups=1) \
        == []


def test_a_repeated_message_is_named(tree: Path) -> None:  # noqa: F811
    write(tree, "templates/lab/study.j2", """
        {% message "user" %}Hello there.{% endmessage %}
        {% message "assistant" %}Noted.{% endmessage %}
        {% message "user" %}Noted.{% endmessage %}
        """)
    found = _refused(tree, "  - {kind: distinct_messages, phase: study}\n", groups=1)
    assert found and all("phase 'study' repeats a message: 'Noted.'" in m for m in found)


def test_identical_and_differing_arms_across_an_axis(tree: Path) -> None:  # noqa: F811
    # The study phase is the same for both cues, the question differs.
    assert _refused(tree, "  - {kind: identical_across, axis: cue, phases: [study]}\n"
                          "  - {kind: differs_across, axis: cue, phases: [question]}\n") == []


def test_arms_that_differ_or_agree_against_the_check_are_named(tree: Path) -> None:  # noqa: F811
    found = _refused(tree, "  - {kind: identical_across, axis: cue, phases: [question]}\n"
                           "  - {kind: differs_across, axis: cue, phases: [study]}\n", groups=1)
    assert len(found) == 2
    assert "question differ across cue in " in found[0] and "-first" in found[0]
    assert "study are identical across cue in " in found[1] and "-last" in found[1]


@pytest.mark.parametrize("kind", ["identical_across", "differs_across"])
def test_a_check_across_an_axis_takes_when(tree: Path, kind: str) -> None:  # noqa: F811
    # Broken for both cues (the question differs, the study does not); limited by `when` to
    # one cue, nothing is left to compare against, and it holds.
    phase = "question" if kind == "identical_across" else "study"
    check = f"  - {{kind: {kind}, axis: cue, phases: [{phase}]%s}}\n"
    assert len(_refused(tree, check % "", groups=1)) == 1
    assert _refused(tree, check % ", when: {cue: [first]}", groups=2) == []


@pytest.mark.parametrize(("tolerance", "refused"), [(0.05, False), (0.04, True)])
def test_length_ratio_holds_within_its_tolerance(tree: Path, tolerance: float,  # noqa: F811
                                                 refused: bool) -> None:
    # "Which word came last?" is 21 characters, "Which word came first?" 22: a ratio of
    # 21/22 = 0.955, 4.5% off.
    found = _refused(tree, "  - {kind: length_ratio, axis: cue, reference: first, "
                           f"phases: [question], tolerance: {tolerance}}}\n", groups=2)
    if not refused:
        assert found == []
    else:
        assert found == ["check length_ratio failed: lab.recall.words-00000-last is 0.955× "
                         "the length of lab.recall.words-00000-first (tolerance ±0.04)"]


def test_balanced_allows_counts_one_apart_and_names_those_further(
        tree: Path) -> None:  # noqa: F811
    # Counted once a group (on the first cue's instance): four groups over three values
    # give 2, 1, 1; over both cues' instances 4, 2, 2 is too far apart.
    side = "  side: {balanced: [l, r, u]}\n"
    assert _refused(tree, "  - {kind: balanced, of: side, when: {cue: first}}\n",
                    slots=side) == []
    assert _refused(tree, "  - {kind: balanced, of: side}\n", slots=side) == [
        'check balanced failed: side is unbalanced ("l": 2, "r": 2, "u": 4)']


def test_a_declared_value_never_drawn_unbalances(tree: Path) -> None:  # noqa: F811
    # A declared value never drawn counts 0: 2 - 0 is too far apart.
    found = _refused(tree, "  - {kind: balanced, of: side, values: [l, r, u, d]}\n",
                     groups=3, slots="  side: {balanced: [l, r, u]}\n")
    assert found == ['check balanced failed: side is unbalanced ("d": 0, "l": 2, "r": 2, '
                     '"u": 2)']


def test_a_crossed_balance_counts_every_combination(tree: Path) -> None:  # noqa: F811
    # Each group holds both cues; side takes l, r and u in three groups: each cell twice
    # over the two cues, once each.
    check = "  - {kind: balanced, cross: {cue: instance.axes.cue, side: side}}\n"
    slots = "  side: {balanced: [l, r, u]}\n"
    assert _refused(tree, check, groups=3, slots=slots) == []


def test_a_crossed_balance_names_a_combination_never_met(tree: Path) -> None:  # noqa: F811
    check = ("  - {kind: balanced, cross: {cue: instance.axes.cue, side: side}, "
             "values: {side: [l, r, u, d]}}\n")
    # Six groups: each cell met twice, but a side never drawn 0 times.
    found = _refused(tree, check, groups=6, slots="  side: {balanced: [l, r, u]}\n")
    assert len(found) == 1
    assert found[0].startswith("check balanced failed: cue × side is unbalanced (")
    assert 'cue="first", side="d": 0' in found[0] and 'cue="last", side="d": 0' in found[0]


def test_a_forbidden_word_is_shown_where_it_is_with_thirty_characters_around_it(
        tree: Path) -> None:  # noqa: F811
    write(tree, "templates/lab/study.j2", """
        {% message "user" %}Here is the first line of what you should study.
        Then zebra, and after it a few more words to read.{% endmessage %}
        {% message "assistant" %}Noted.{% endmessage %}
        """)
    found = _refused(tree, "  - {kind: forbidden_words, phases: [question, study], "
                           "words: \"['zebra']\"}\n", groups=1)
    # The second line, sixth column; 30 characters either side, the line break as a space.
    assert found[0] == (
        "check forbidden_words failed: lab.recall.words-00000-first: forbidden word 'zebra' "
        "appears in phase 'study', message 0 (user), line 2 column 6: "
        "…f what you should study. Then zebra, and after it a few more word…")


def test_words_that_change_from_instance_to_instance_are_each_tested(
        tree: Path) -> None:  # noqa: F811
    # The first cue's instance forbids a word its question lacks, the last cue's one its
    # question has: the second list, not the first one again, is what it is held to.
    found = _refused(tree, "  - {kind: forbidden_words, phases: [question], words: "
                           "\"'zebra' if instance.axes.cue == 'first' else 'came'\"}\n",
                     groups=1)
    assert found == ["check forbidden_words failed: lab.recall.words-00000-last: forbidden "
                     "word 'came' appears in phase 'question', message 0 (user), line 1 "
                     "column 12: …Which word came last?…"]


def test_a_check_expression_that_fails_is_located_where_it_is_written(
        tree: Path) -> None:  # noqa: F811
    from memspec.core.errors import SpecError

    with pytest.raises(SpecError) as error:
        _refused(tree, "  - kind: expr\n    message: x\n    test: words | nosuchfilter\n")
    lines = (tree / FAMILY_FILE).read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "nosuchfilter" in text)
    column = lines[line - 1].index("words") + 1
    assert str(error.value).startswith(
        f"specs/families/lab/recall_words.yaml:{line}:{column}: expression syntax error: No "
        "filter named 'nosuchfilter'."), str(error.value)


def test_a_forbidden_word_is_found_in_text_beyond_ascii(tree: Path) -> None:  # noqa: F811
    write(tree, "templates/lab/study.j2", """
        {% message "user" %}Mémorisez: café, zèbre, thé.{% endmessage %}
        {% message "assistant" %}Noted.{% endmessage %}
        """)
    found = _refused(tree, "  - {kind: forbidden_words, phases: [study], "
                           "words: \"['zebra', 'ZÈBRE']\"}\n", groups=1)
    assert found[0].startswith("check forbidden_words failed: lab.recall.words-00000-first: "
                               "forbidden word 'ZÈBRE' appears in phase 'study', message 0 "
                               "(user), line 1 column 18:")
    assert _refused(tree, "  - {kind: forbidden_words, phases: [study], "
                          "words: \"['zebra', 'caf']\"}\n", groups=1) == []


@pytest.mark.parametrize("words", ["3", "['zebra', 3]", "{'w': 'zebra'}"])
def test_words_that_are_not_text_are_refused_where_written(tree: Path,  # noqa: F811
                                                           words: str) -> None:
    from memspec.core.errors import SpecError

    with pytest.raises(SpecError, match="words must give a string or a list of strings"):
        _refused(tree, "  - {kind: forbidden_words, phases: [question], "
                       f"words: \"{words}\"}}\n", groups=1)


def test_length_ratio_with_when_and_at_its_tolerance(tree: Path) -> None:  # noqa: F811
    # `when` leaves only the last cue's variants: the reference level is not among them, so
    # there is nothing to compare and nothing fails (without `when`, 4.5% off fails).
    check = ("  - {kind: length_ratio, axis: cue, reference: first, phases: [question], "
             "tolerance: 0.01%s}\n")
    assert _refused(tree, check % "", groups=1) != []
    assert _refused(tree, check % ", when: {cue: last}", groups=1) == []
    # "...last?" (21 characters) against "...first?" (22) is |21/22 - 1| off: a tolerance
    # of exactly that (as the float the check computes) passes, a hair less does not.
    check = ("  - {kind: length_ratio, axis: cue, reference: first, phases: [question], "
             "tolerance: %r}\n")
    off = abs(21 / 22 - 1)
    assert _refused(tree, check % (off - 1e-15), groups=1) != []
    assert _refused(tree, check % off, groups=1) == []
