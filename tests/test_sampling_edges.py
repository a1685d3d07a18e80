"""Slot sampling at its edges, as a family author sees it: the values each group draws (or the
error that names the slot) for balanced draws over short lists, `of:` and `distinct_from:`,
a one-item pool, repeats allowed, a choice of one, and shuffles of fewer than two items."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from test_bad_input import FAMILY, FAMILY_ID, edit, project  # noqa: F401

from memspec.core.errors import SpecError
from memspec.core.rng import KeyedRandom
from memspec.engine.generate import FamilyGenerator
from memspec.engine.render import Renderer
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange"]
SLOTS = "  colour: {from: pools/colours.yaml}\n"


def _slots(root: Path, slots: str, groups: int) -> list[dict]:
    """The slot values of ``groups`` groups of the fixture family with ``slots`` declared."""
    edit(root, FAMILY, SLOTS, slots)
    catalog = Catalog.load(Project(root))
    generator = FamilyGenerator(catalog.family(FAMILY_ID), Renderer(catalog.project), 7)
    return [generator.slots(group) for group in range(groups)]


@pytest.mark.parametrize("groups", [5, 6, 7, 13])
def test_balanced_counts_differ_by_at_most_one(project: Path, groups: int) -> None:  # noqa: F811
    values = _slots(project, SLOTS + "  side: {balanced: [left, right, up]}\n", groups)
    counts = Counter(v["side"] for v in values)
    assert set(counts) == {"left", "right", "up"}
    assert max(counts.values()) - min(counts.values()) == (0 if groups % 3 == 0 else 1)
    # Every block of three consecutive groups takes each value once.
    for start in range(0, groups - groups % 3, 3):
        assert sorted(v["side"] for v in values[start:start + 3]) == ["left", "right", "up"]


def test_balanced_over_a_pool_and_a_range(project: Path) -> None:  # noqa: F811
    values = _slots(project, "  colour: {from: pools/colours.yaml, balanced: true}\n"
                             "  size: {range: [3, 5], balanced: true}\n", 12)
    assert Counter(v["colour"] for v in values) == dict.fromkeys(COLOURS, 2)
    assert Counter(v["size"] for v in values) == {3: 4, 4: 4, 5: 4}


def test_balanced_with_distinct_from_is_refused_where_written(project: Path) -> None:  # noqa: F811
    # Taking the other slot's value out would unbalance the blocks: refused, located.
    with pytest.raises(SpecError, match=r"colour.yaml:7:\d+: 'distinct_from' cannot be "
                                        "combined with a balanced draw"):
        _slots(project, SLOTS + "  other: {from: pools/colours.yaml, balanced: true, "
                                "distinct_from: [colour]}\n", 3)


def test_distinct_from_never_repeats_the_other_slot(project: Path) -> None:  # noqa: F811
    values = _slots(project, SLOTS + "  other: {from: pools/colours.yaml, "
                                     "distinct_from: [colour]}\n", 30)
    assert all(v["other"] != v["colour"] and v["other"] in COLOURS for v in values)
    assert len({v["other"] for v in values}) >= 4


def test_balanced_of_a_list_slot_takes_its_own_items(project: Path) -> None:  # noqa: F811
    values = _slots(project, "  colour: {from: pools/colours.yaml, count: 3}\n"
                             "  pick: {of: colour, balanced: true}\n"
                             "  rest: {of: colour, distinct_from: [pick], count: 2}\n", 20)
    for v in values:
        assert len(set(v["colour"])) == 3 and set(v["colour"]) <= set(COLOURS)
        assert v["pick"] in v["colour"]
        assert sorted([v["pick"], *v["rest"]]) == sorted(v["colour"])


def test_repeats_allowed_draw_more_than_the_pool_holds(project: Path) -> None:  # noqa: F811
    values = _slots(project, "  colour: {from: pools/colours.yaml, count: 9, "
                             "distinct: false}\n", 4)
    for v in values:
        assert len(v["colour"]) == 9 and set(v["colour"]) <= set(COLOURS)
    assert any(len(set(v["colour"])) < 9 for v in values)  # nine of six: some repeat


def test_too_few_distinct_items_name_the_slot(project: Path) -> None:  # noqa: F811
    with pytest.raises(SpecError, match="has 6 usable items; slot 'colour' needs 9 distinct"):
        _slots(project, "  colour: {from: pools/colours.yaml, count: 9}\n", 1)


def test_a_count_of_distinct_items_is_a_list_of_that_many(project: Path) -> None:  # noqa: F811
    values = _slots(project, "  colour: {from: pools/colours.yaml, count: 6}\n", 6)
    assert all(sorted(v["colour"]) == sorted(COLOURS) for v in values)
    assert len({tuple(v["colour"]) for v in values}) > 1  # the order is drawn


def test_one_item_pools_and_choices_give_that_item(project: Path) -> None:  # noqa: F811
    (project / "specs/pools/one.yaml").write_text(
        "pool: demo.one\ndescription: One colour.\nitems:\n  - teal\n", encoding="utf-8")
    values = _slots(project, "  colour: {from: pools/one.yaml}\n"
                             "  again: {from: pools/one.yaml, balanced: true}\n"
                             "  pick: {choice: [only]}\n"
                             "  side: {balanced: [alone]}\n"
                             "  size: {range: [4, 4]}\n", 3)
    assert values == [{"colour": "teal", "again": "teal", "pick": "only", "side": "alone",
                       "size": 4}] * 3


def test_choices_and_ranges_reach_every_value(project: Path) -> None:  # noqa: F811
    values = _slots(project, SLOTS + "  pick: {choice: [a, b, c]}\n"
                                     "  size: {range: [1, 3]}\n", 60)
    assert {v["pick"] for v in values} == {"a", "b", "c"}
    assert {v["size"] for v in values} == {1, 2, 3}
    assert {v["colour"] for v in values} == set(COLOURS)


def test_shuffles_of_fewer_than_two_items_and_of_two() -> None:
    assert KeyedRandom(1, ("s",)).shuffled([]) == []
    assert KeyedRandom(1, ("s",)).shuffled(["x"]) == ["x"]
    orders = Counter(tuple(KeyedRandom(1, ("s", k)).shuffled("ab")) for k in range(400))
    assert set(orders) == {("a", "b"), ("b", "a")}
    assert 150 < orders[("a", "b")] < 250
    # A shuffle of one item draws nothing: the stream goes on as if it had not been asked.
    stream, fresh = KeyedRandom(1, ("t",)), KeyedRandom(1, ("t",))
    stream.shuffled(["x"])
    assert stream.next_u64() == fresh.next_u64()


TABLE = """\
  rounds:
    table:
      rows: 5
      columns:
        name: {from: pools/colours.yaml}
        again: {from: pools/colours.yaml, distinct: false}
        size: {range: [1, 3]}
        level: {range: [1, 5], balanced: true}
        side: {balanced: [left, right]}
        tag: {value: fixed}
        pick: {choice: [only]}
        label: {expr: "row.name ~ '#' ~ index"}
"""


def test_a_table_draws_each_column_across_its_rows(project: Path) -> None:  # noqa: F811
    values = _slots(project, SLOTS + TABLE, 8)
    for v in values:
        rows = v["rounds"]
        assert len(rows) == 5
        names = [r["name"] for r in rows]
        assert len(set(names)) == 5 and set(names) <= set(COLOURS)  # distinct across rows
        assert all(r["again"] in COLOURS for r in rows)
        assert all(1 <= r["size"] <= 3 for r in rows)
        assert sorted(r["level"] for r in rows) == [1, 2, 3, 4, 5]  # one block of five
        assert sorted(Counter(r["side"] for r in rows).values()) == [2, 3]
        assert [r["tag"] for r in rows] == ["fixed"] * 5
        assert [r["pick"] for r in rows] == ["only"] * 5
        assert [r["label"] for r in rows] == [f"{n}#{i}" for i, n in enumerate(names)]
    assert {r["size"] for v in values for r in v["rounds"]} == {1, 2, 3}
    assert any(len({r["again"] for r in v["rounds"]}) < 5 for v in values)  # repeats allowed


def test_a_column_with_too_few_distinct_values_names_itself(project: Path) -> None:  # noqa: F811
    table = TABLE.replace("rows: 5", "rows: 7")
    with pytest.raises(SpecError, match="column 'name' needs 7 distinct values .one per row. "
                                        "and has 6; say 'distinct: false' to allow repeats"):
        _slots(project, SLOTS + table, 1)


def test_a_crossed_slot_takes_every_combination_once_a_block(project: Path) -> None:  # noqa: F811
    values = _slots(project, SLOTS + "  cell:\n    crossed:\n      tone: [warm, cold]\n"
                                     "      size: {range: [1, 3]}\n", 12)
    cells = [(v["cell"]["tone"], v["cell"]["size"]) for v in values]
    every = [(t, s) for t in ("warm", "cold") for s in (1, 2, 3)]
    assert sorted(cells[:6]) == sorted(every) and sorted(cells[6:]) == sorted(every)


def test_of_a_slot_that_holds_no_list_is_refused(project: Path) -> None:  # noqa: F811
    with pytest.raises(SpecError, match="'of' needs slot 'colour' to hold a non-empty list, "
                                        "not 'red'"):
        _slots(project, "  colour: {value: red}\n  pick: {of: colour}\n", 1)


def test_a_column_with_exactly_one_value_a_row_takes_them_all(project: Path) -> None:  # noqa: F811
    values = _slots(project, SLOTS + TABLE.replace("rows: 5", "rows: 6"), 2)
    assert all(sorted(r["name"] for r in v["rounds"]) == sorted(COLOURS) for v in values)


def test_an_expression_that_fails_is_located_where_it_is_written(project: Path) -> None:  # noqa: F811
    with pytest.raises(SpecError) as caught:
        _slots(project, SLOTS + '  shout: {expr: "colour ~ (1 / 0)"}\n', 1)
    (problem,) = caught.value.problems
    # Line 7 of the family file, where the expression's text starts (column 18).
    assert str(problem).startswith("specs/families/colour.yaml:7:18: template error: "
                                   "ZeroDivisionError: division by zero in expression")
    assert "(expression of slot 'shout', template line 1)" in str(problem)


def test_an_expression_giving_escaped_text_keeps_it_as_text(project: Path) -> None:  # noqa: F811
    # Jinja's escape filter gives Markup, a subclass of str: a slot holding it, alone or in
    # a list or a dict, holds its escaped text, as any other slot value holds text.
    values = _slots(project, SLOTS + "  quoted: {expr: \"colour ~ ' <&>'|e\"}\n"
                                     "  listed: {expr: \"[(colour ~ ' <&>')|e]\"}\n"
                                     "  keyed: {expr: \"{'k': (colour ~ ' <&>')|e}\"}\n", 2)
    for value in values:
        text = f"{value['colour']} &lt;&amp;&gt;"
        assert (value["quoted"], value["listed"], value["keyed"]) == (text, [text], {"k": text})


@pytest.mark.parametrize("expression", [
    "{'k': 'at ' ~ range}", "['at ' ~ range]", "{'k': ['at ' ~ range]}",
    "[['x', 'at ' ~ range]]", "{'k': {'j': 'at ' ~ range}}", "('at ' ~ range, 1)"])
def test_an_address_anywhere_in_an_expression_value_is_refused(project: Path,  # noqa: F811
                                                                expression: str) -> None:
    # A printed object's memory address changes from run to run: found inside lists, dicts
    # and tuples too, not only at the top, and refused naming the slot.
    with pytest.raises(SpecError, match=r"expression of .*stamp.* memory address"):
        _slots(project, SLOTS + f'  stamp: {{expr: "{expression}"}}\n', 1)


def test_expression_values_become_plain_json_data(project: Path) -> None:  # noqa: F811
    # What a slot holds is plain data whatever an expression builds: tuples become lists
    # (a template then prints [1, 2], as it prints any list), keys become text, and text
    # with a "<" that is no address stays as it is.
    (value,) = _slots(project, SLOTS + "  pair: {expr: \"(1, 2)\"}\n"
                                       "  nested: {expr: \"[(1, ('a', 'b')), {1: 'x'}]\"}\n"
                                       "  keyed: {expr: \"{2: ['<b>', (3,)]}\"}\n"
                                       "  angled: {expr: \"['a < b', {'k': '<i>'}]\"}\n", 1)
    assert value["pair"] == [1, 2] and type(value["pair"]) is list
    assert value["nested"] == [[1, ["a", "b"]], {"1": "x"}]
    assert type(value["nested"][0]) is list and type(value["nested"][0][1]) is list
    assert value["keyed"] == {"2": ["<b>", [3]]} and type(value["keyed"]["2"][1]) is list
    assert value["angled"] == ["a < b", {"k": "<i>"}]


def test_a_slot_shared_by_another_draws_one_value_for_each_of_its_values(
        project: Path) -> None:  # noqa: F811
    # Groups with the same side share one colour; over 12 groups, the three sides hold
    # three colours, each the same in every group of its side, not drawn group by group.
    values = _slots(project, "  side: {balanced: [left, right, up]}\n"
                             "  colour: {from: pools/colours.yaml, shared_by: [side]}\n", 12)
    by_side: dict[str, set[str]] = {}
    for value in values:
        by_side.setdefault(value["side"], set()).add(value["colour"])
    assert sorted(by_side) == ["left", "right", "up"]
    assert all(len(colours) == 1 for colours in by_side.values())
    assert all(colour in COLOURS for colours in by_side.values() for colour in colours)
