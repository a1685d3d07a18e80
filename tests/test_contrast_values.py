"""Contrasts and factorial effects of a crossed design, each estimate and p-value against a
hand computation and scipy's exact permutation test of the groups' values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from test_report_values import _choice, _report

from memspec.core.errors import SpecError

#: Per group, whether each cell (memory, source) was answered right.
RIGHT = [
    {("on", "tool"): 1, ("on", "note"): 1, ("off", "tool"): 0, ("off", "note"): 1},
    {("on", "tool"): 1, ("on", "note"): 0, ("off", "tool"): 0, ("off", "note"): 0},
    {("on", "tool"): 1, ("on", "note"): 1, ("off", "tool"): 1, ("off", "note"): 0},
    {("on", "tool"): 0, ("on", "note"): 1, ("off", "tool"): 0, ("off", "note"): 1},
    {("on", "tool"): 1, ("on", "note"): 1, ("off", "tool"): 0, ("off", "note"): 0},
    {("on", "tool"): 1, ("on", "note"): 0, ("off", "tool"): 1, ("off", "note"): 0},
    {("on", "tool"): 1, ("on", "note"): 1, ("off", "tool"): 0, ("off", "note"): 0},
]


def _pairs() -> list:
    return [_choice(g, bool(cells[(memory, source)]), distractor=False,
                    axes={"memory": memory, "source": source})
            for g, cells in enumerate(RIGHT)
            for memory, source in itertools.product(("on", "off"), ("tool", "note"))]


def _exact_sign_flip(values: list[float]) -> float:
    return scipy_stats.permutation_test(
        (np.asarray(values),), lambda x, axis: np.sum(x, axis=axis),
        permutation_type="samples", n_resamples=10**6).pvalue


def _effects() -> dict[str, list[float]]:
    def mean(cells: dict, chosen: list[tuple[str, str]]) -> float:
        return sum(cells[c] for c in chosen) / len(chosen)

    return {
        "main: memory (on - off)": [mean(c, [("on", "tool"), ("on", "note")])
                                    - mean(c, [("off", "tool"), ("off", "note")]) for c in RIGHT],
        "main: source (tool - note)": [mean(c, [("on", "tool"), ("off", "tool")])
                                       - mean(c, [("on", "note"), ("off", "note")])
                                       for c in RIGHT],
        "main: memory (on - off) x source (tool - note)": [
            mean(c, [("on", "tool"), ("off", "note")]) - mean(c, [("on", "note"), ("off", "tool")])
            for c in RIGHT],
    }


def test_a_crossed_design_gives_its_main_effects_and_interaction() -> None:
    report = _report(_pairs())
    found = {c["name"]: c for c in report["contrasts"]}
    assert set(found) == set(_effects())
    for name, values in _effects().items():
        contrast = found[name]
        assert contrast["kind"] == ("interaction" if " x " in name else "main_effect")
        assert (contrast["metric"], contrast["source"], contrast["groups"]) == \
            ("accuracy", "derived", 7)
        assert contrast["estimate"] == pytest.approx(np.mean(values))
        assert contrast["p_value"] == pytest.approx(_exact_sign_flip(values))
        low, high = contrast["ci"]
        assert low <= contrast["estimate"] <= high
    # Three intervals (the contrasts), simultaneous; their tests corrected together with the
    # chance test of the overall row.
    assert report["multiplicity"]["intervals"]["count"] == 3
    assert report["multiplicity"]["tests"] == 4


def test_declared_contrasts_and_factorials_are_estimated_as_declared() -> None:
    declared = {"contrasts": [{"name": "tool_vs_note", "a": {"source": "tool"},
                               "b": {"source": "note"}}],
                "factorials": [{"name": "only_main", "axes": ["memory", "source"],
                                "order": 1, "metric": "accuracy"}]}
    report = _report(_pairs(), analysis=(declared,))
    found = {c["name"]: c for c in report["contrasts"]}
    pairwise = found["tool_vs_note"]
    assert (pairwise["kind"], pairwise["source"], pairwise["a"], pairwise["b"]) == \
        ("pairwise", "declared", {"source": "tool"}, {"source": "note"})
    values = _effects()["main: source (tool - note)"]
    assert pairwise["estimate"] == pytest.approx(np.mean(values))
    assert pairwise["p_value"] == pytest.approx(_exact_sign_flip(values))
    main = [n for n, c in found.items() if c["source"] == "declared" and n != "tool_vs_note"]
    assert sorted(main) == ["only_main: memory (on - off)", "only_main: source (tool - note)"]
    # The effects the declarations already estimate are not derived a second time under
    # another name: only the interaction, which none declares, is.
    assert sorted(found) == ["main: memory (on - off) x source (tool - note)",
                             "only_main: memory (on - off)", "only_main: source (tool - note)",
                             "tool_vs_note"]
    assert found["only_main: memory (on - off)"]["estimate"] == \
        pytest.approx(np.mean(_effects()["main: memory (on - off)"]))


def test_a_group_missing_a_cell_is_left_out_of_a_contrast() -> None:
    pairs = [(i, r) for i, r in _pairs()
             if not (i["group"] == 0 and i["axes"] == {"memory": "off", "source": "note"})]
    pairs = [(i, r if i["group"] != 1 else "I don't know") if i["axes"]["memory"] == "off"
             else (i, r) for i, r in pairs]
    declared = {"contrasts": [{"name": "memory_on_off", "a": {"memory": "on"},
                               "b": {"memory": "off"}}]}
    found = {c["name"]: c for c in _report(pairs, analysis=(declared,))["contrasts"]}
    # Group 1 answered nothing with memory off: it has no value; group 0 has one off cell.
    values = [1.0 - 0.0] + [v for g, v in enumerate(_effects()["main: memory (on - off)"])
                            if g > 1]
    # Group 0 lacks a cell, so the axes are not crossed in every group: no effect is derived.
    assert list(found) == ["memory_on_off"]
    assert found["memory_on_off"]["groups"] == 6
    assert found["memory_on_off"]["estimate"] == pytest.approx(np.mean(values))


def test_a_declared_factorial_over_an_axis_of_three_levels_is_refused() -> None:
    pairs = _pairs() + [_choice(0, True, distractor=False,
                                axes={"memory": "partial", "source": "tool"})]
    declared = {"factorials": [{"name": "bad", "axes": ["memory", "source"]}]}
    with pytest.raises(SpecError, match="factorial 'bad': axis 'memory' has 3 levels in the "
                                        "data, not 2"):
        _report(pairs, analysis=(declared,))


def test_a_declared_factorial_reads_only_instances_with_all_its_axes() -> None:
    # A family with a distractor and only one of the axes: it does not make the factorial's
    # default metric reliance, and its levels do not count.
    other = [_choice(g, True, family="o", axes={"memory": "on"}) for g in range(3)]
    declared = {"factorials": [{"name": "crossed", "axes": ["memory", "source"]}]}
    found = {c["name"]: c for c in _report(_pairs() + other, analysis=(declared,))["contrasts"]
             if c["source"] == "declared"}
    assert {c["metric"] for c in found.values()} == {"accuracy"}
    assert found["crossed: memory (on - off)"]["estimate"] == \
        pytest.approx(np.mean(_effects()["main: memory (on - off)"]))


def test_each_row_of_a_report_estimates_the_contrasts_it_holds_part_of() -> None:
    """With --by memory, the row memory=on holds half of the source effect: within it, per
    group, (on, tool) - (on, note); the memory effect and the interaction need cells outside
    the row and are not estimated there. The row's contrasts are corrected with the report's
    tests, simultaneous with its intervals, and written in the CSV."""
    import csv
    import io

    from memspec.report.report_format import as_csv

    report = _report(_pairs(), ["memory"])
    rows = {g["key"]["memory"]: g["metrics"] for g in report["groups"]}
    name = "main: source (tool - note)"
    for memory in ("on", "off"):
        (within,) = rows[memory]["contrasts"]  # the only effect the row holds both sides of
        values = [c[(memory, "tool")] - c[(memory, "note")] for c in RIGHT]
        assert within["name"] == name and within["groups"] == 7
        assert within["estimate"] == pytest.approx(np.mean(values))
        assert within["p_value"] == pytest.approx(_exact_sign_flip(values))
        low, high = within["ci"]
        assert low <= within["estimate"] <= high
    # Over the run the three effects; within the rows two more: 5 intervals (no Δmem here),
    # and 5 contrast tests with the rows' chance tests in one Holm family.
    chance_tests = sum(len(m.get("tests", [])) for m in [report["overall"], *rows.values()])
    assert report["multiplicity"]["intervals"]["count"] == 5
    assert report["multiplicity"]["tests"] == 5 + chance_tests
    table = list(csv.DictReader(io.StringIO(as_csv(report))))
    by_row = {r["memory"]: r for r in table}
    on = rows["on"]["contrasts"][0]
    assert float(by_row["on"][f"contrast: {name}"]) == pytest.approx(on["estimate"])
    assert float(by_row["on"][f"contrast: {name}_ci_low"]) == pytest.approx(on["ci"][0])
    assert float(by_row["on"][f"contrast: {name}_p_adjusted"]) == \
        pytest.approx(on["p_adjusted"])
    run = next(c for c in report["contrasts"] if c["name"] == name)
    assert float(by_row["(all)"][f"contrast: {name}"]) == pytest.approx(run["estimate"])
    # The interaction exists over the run only: empty in the rows.
    interaction = "contrast: main: memory (on - off) x source (tool - note)"
    assert by_row["on"][interaction] == "" and by_row["(all)"][interaction] != ""


def test_an_analysis_file_naming_a_declaration_twice_is_located(tmp_path) -> None:
    from memspec.analysis.contrasts import load_analysis_file

    path = tmp_path / "analysis.yaml"
    path.write_text("contrasts:\n"
                    "  - name: memory\n    a: {memory: 'on'}\n    b: {memory: 'off'}\n"
                    "factorials:\n"
                    "  - name: crossed\n    axes: [memory, source]\n", encoding="utf-8")
    # Distinct names, one of each kind: read as written.
    assert load_analysis_file(path) == {
        "contrasts": [{"name": "memory", "a": {"memory": "on"}, "b": {"memory": "off"}}],
        "factorials": [{"name": "crossed", "axes": ["memory", "source"]}]}
    path.write_text(path.read_text().replace("name: crossed", "name: memory"))
    with pytest.raises(SpecError) as raised:
        load_analysis_file(path)
    (problem,) = raised.value.problems
    assert (problem.file, problem.line, problem.column, problem.message) == \
        (str(path), 2, 5, "'memory' names two declarations")


def _three_way() -> tuple[list, list[dict]]:
    """A 2x2x2 design crossed in each of 6 groups (seeded right/wrong per cell): the pairs
    and, per group, whether each cell (memory, source, recency) was answered right."""
    rng = np.random.default_rng(41)
    levels = {"memory": ("on", "off"), "source": ("tool", "note"), "recency": ("old", "new")}
    cells = list(itertools.product(*levels.values()))
    right = [{cell: int(rng.integers(2)) for cell in cells} for _ in range(6)]
    pairs = [_choice(g, bool(by_cell[cell]), distractor=False,
                     axes=dict(zip(levels, cell, strict=True)))
             for g, by_cell in enumerate(right) for cell in cells]
    return pairs, right


def _by_hand(right: list[dict], subset: tuple[int, ...]) -> float:
    """The effect of the axes at ``subset`` (0 memory, 1 source, 2 recency; first level +1):
    per group the mean over the cells whose product of codes is +1 less the mean over -1."""
    values = []
    for by_cell in right:
        plus, minus = [], []
        for cell, value in by_cell.items():
            codes = [1 if cell[k] in ("on", "tool", "old") else -1 for k in subset]
            (plus if math.prod(codes) > 0 else minus).append(value)
        values.append(np.mean(plus) - np.mean(minus))
    return float(np.mean(values))


def test_three_crossed_axes_give_main_effects_and_two_way_interactions_unless_declared() -> None:
    pairs, right = _three_way()
    names = {0: "memory (on - off)", 1: "source (tool - note)", 2: "recency (old - new)"}
    # Derived, per docs/scoring.md: every main effect and two-way interaction, no three-way;
    # the factors in the order of their names (memory, recency, source).
    order = [(0,), (2,), (1,), (0, 2), (0, 1), (2, 1)]
    found = _report(pairs, resamples=200)["contrasts"]
    assert [c["name"] for c in found] == [
        "main: " + " x ".join(names[k] for k in subset) for subset in order]
    assert [c["kind"] for c in found] == ["main_effect"] * 3 + ["interaction"] * 3
    for contrast, subset in zip(found, order, strict=True):
        assert contrast["estimate"] == pytest.approx(_by_hand(right, subset))
    # Declared with order 3, the three-way interaction too (and its lower effects, which the
    # derived ones then no longer repeat); order 1, the main effects alone.
    declared = {"factorials": [{"name": "all", "axes": ["memory", "source", "recency"],
                                "order": 3}]}
    found = _report(pairs, analysis=(declared,), resamples=200)["contrasts"]
    three = "all: memory (on - off) x source (tool - note) x recency (old - new)"
    assert [c["name"] for c in found][-1] == three and len(found) == 7
    assert found[-1]["estimate"] == pytest.approx(_by_hand(right, (0, 1, 2)))
    declared["factorials"][0]["order"] = 1
    found = _report(pairs, analysis=(declared,), resamples=200)["contrasts"]
    assert sorted(c["name"] for c in found if c["source"] == "declared") == \
        sorted(f"all: {name}" for name in names.values())


def test_a_contrast_of_items_with_a_distractor_is_of_reliance_unless_it_says() -> None:
    # The same answers, each wrong one the declared distractor: reliance is 1 - right.
    pairs = [_choice(g, bool(cells[(memory, source)]), axes={"memory": memory,
                                                              "source": source})
             for g, cells in enumerate(RIGHT)
             for memory, source in itertools.product(("on", "off"), ("tool", "note"))]
    cell = {"a": {"memory": "on"}, "b": {"memory": "off"}}
    declared = {"contrasts": [{"name": "relied", **cell},
                              {"name": "right", **cell, "metric": "accuracy"}]}
    found = {c["name"]: c for c in _report(pairs, analysis=(declared,))["contrasts"]}
    accuracy = _effects()["main: memory (on - off)"]
    assert (found["relied"]["metric"], found["right"]["metric"]) == ("reliance", "accuracy")
    assert found["relied"]["estimate"] == pytest.approx(-np.mean(accuracy))
    assert found["right"]["estimate"] == pytest.approx(np.mean(accuracy))
    # Derived from the design: reliance too.
    assert {c["metric"] for c in found.values() if c["source"] == "derived"} == {"reliance"}


def _rotated(family: str, group: int, framing: str, rotation: int, *,
             options: list[str] | None, rotates: bool = True) -> dict:
    """An instance of a design crossing a framing (whose levels word the options otherwise)
    with a rotation of the options (``rotates``: else the rotation leaves them in place);
    ``options`` None: a free-text item."""
    answer: dict = {"scorer": "exact", "gold": "x"}
    if options is not None:
        base = options if framing == "memory" else [f"{o}'" for o in options]
        shown = base[rotation:] + base[:rotation] if rotates else base
        answer = {"scorer": "choice", "gold": base[0], "gold_index": shown.index(base[0]),
                  "options": shown}
    return {"id": f"{family}-{group:05d}-{framing}-r{rotation}", "family": family,
            "group": group, "design": "main",
            "axes": {"framing": framing, "rotation": f"r{rotation}"}, "answer": answer}


@pytest.mark.parametrize("other", ["unsorted", "fixed", "free_text"])
def test_a_rotation_is_no_factor_whatever_else_shares_its_design(other: str) -> None:
    # A family rotating its options, its options not in sorted order; in the same design a
    # family whose options the rotation leaves in place, or one of free-text items. The
    # rotation reorders options and does nothing else: it is no factor; the framing is.
    from memspec.analysis.contrasts import derived

    cells = [(g, f, r) for g in range(3) for f in ("memory", "document") for r in (0, 1)]
    instances = [_rotated("a", *cell, options=["Cedar", "Aspen", "Birch"])
                 for cell in cells]
    if other == "fixed":
        instances += [_rotated("b", *cell, options=["Oak", "Elm"], rotates=False)
                      for cell in cells]
    elif other == "free_text":
        instances += [_rotated("b", *cell, options=None) for cell in cells]
    assert [c.name for c in derived(instances)] == ["main: framing (memory - document)"]


def test_a_design_where_some_items_declare_a_distractor_is_of_reliance() -> None:
    # docs/scoring.md: "The metric is reliance where the items declare a distractor": one
    # family of the design declares one, the other does not.
    from memspec.analysis.contrasts import derived

    pairs = [_choice(g, True, family=family, distractor=family == "d",
                     axes={"memory": memory})
             for family in ("d", "n") for g in range(3) for memory in ("on", "off")]
    (contrast,) = derived([instance for instance, _ in pairs])
    # One factor: the contrast of its two levels (docs/scoring.md), a pairwise one.
    assert (contrast.name, contrast.kind, contrast.metric) == \
        ("main: memory (on - off)", "pairwise", "reliance")


def test_a_declared_factorial_reads_only_what_every_key_of_its_where_selects() -> None:
    # Another family of the same design has a third level of memory: a factorial scoped to
    # the design and the first family does not see it.
    other = [_choice(g, True, family="g", distractor=False,
                     axes={"memory": "partial", "source": "tool"}) for g in range(3)]
    declared = {"factorials": [{"name": "f_only", "axes": ["memory", "source"], "order": 1,
                                "where": {"design": "main", "family": "f"}}]}
    found = {c["name"]: c for c in _report(_pairs() + other, analysis=(declared,))["contrasts"]
             if c["source"] == "declared"}
    assert sorted(found) == ["f_only: memory (on - off)", "f_only: source (tool - note)"]
    assert found["f_only: memory (on - off)"]["estimate"] == \
        pytest.approx(np.mean(_effects()["main: memory (on - off)"]))


def test_a_declared_contrast_no_item_fits_is_listed_empty_and_never_within_a_row() -> None:
    # A contrast whose cells select nothing in this run (an axis value no instance has) is
    # still reported over the run, with no estimate, so a reader sees it was asked for; no
    # row lists it.
    declared = {"contrasts": [{"name": "absent", "a": {"memory": "on"},
                               "b": {"memory": "faded"}}]}
    report = _report(_pairs(), ["memory"], analysis=(declared,))
    absent = next(c for c in report["contrasts"] if c["name"] == "absent")
    assert absent["estimate"] is None and absent["p_value"] is None
    for row in report["groups"]:
        assert "absent" not in [c["name"] for c in row["metrics"].get("contrasts", [])]


def test_a_contrast_interval_is_read_at_the_expanded_level() -> None:
    # As a Δmem interval: tested against 0, so read at Hesterberg's expanded percentile level
    # for its 7 groups, from enough resamples to put 20 beyond each bound.
    from memspec.analysis.stats import bootstrap_ci, expanded_level

    declared = {"contrasts": [{"name": "tool_vs_note", "a": {"source": "tool"},
                               "b": {"source": "note"}}]}
    report = _report(_pairs(), correction="none", analysis=(declared,))
    found = next(c for c in report["contrasts"] if c["name"] == "tool_vs_note")
    level = expanded_level(0.95, 7)
    values = _effects()["main: source (tool - note)"]
    expected = bootstrap_ci(values, resamples=max(2000, math.ceil(40 / (1 - level))), seed=0,
                            level=level)
    assert expected is not None and level > 0.96
    assert found["ci"] == pytest.approx(list(expected))
