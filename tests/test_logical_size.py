"""Values sized by what they would be written out (issue 50): a list that holds one list
twice, level after level, is small in memory and enormous to ``==``, hashing, sorting or
``str()``, which walk it in C beyond the alarm. ``str()`` and Python's own ``sum`` are the
references: the size counted is the text ``str()`` makes, and a fast path gives what
``sum`` gives or refuses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_budgets import ENDS_WITHIN, _render, _write_project

from memspec.core.errors import SpecError
from memspec.engine.jinja_sized_filters import linear_sum
from memspec.engine.jinja_text_sizes import MAX_NESTING, NestedTooDeeply, text_length
from memspec.engine.jinja_walks import MAX_WALKED
from memspec.engine.render import Renderer
from memspec.spec.project import Project


@pytest.fixture
def renderer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Renderer:
    monkeypatch.setenv("MEMSPEC_GROUP_SECONDS", "1")
    monkeypatch.setenv("MEMSPEC_CACHE_DIR", str(tmp_path / "cache"))
    return Renderer(Project(_write_project(tmp_path / "project")))


def _doubled(depth: int, leaf: object = 1) -> object:
    """``[a, a]`` nested ``depth`` deep: ``depth + 1`` lists, 2**depth leaves."""
    value: object = [leaf]
    for _ in range(depth):
        value = [value, value]
    return value


@pytest.mark.parametrize("depth", [0, 1, 5, 12])
def test_a_shared_list_is_counted_as_str_writes_it(depth: int) -> None:
    value = _doubled(depth)
    assert len(str(value)) <= text_length(value) <= 2 * len(str(value)) + 24


def test_a_shared_list_forty_deep_is_counted_in_as_many_steps_as_it_has_lists() -> None:
    start = time.monotonic()
    size = text_length(_doubled(40), MAX_WALKED)
    assert size > MAX_WALKED
    assert time.monotonic() - start < 0.1


def test_a_value_nested_past_the_limit_is_refused_not_recursed() -> None:
    value: object = [1]
    for _ in range(MAX_NESTING + 5):
        value = [value]
    with pytest.raises(NestedTooDeeply):
        text_length(value)


def _first_depth_over_the_limit() -> int:
    depth = 0
    while text_length(_doubled(depth), MAX_WALKED) <= MAX_WALKED:
        depth += 1
    return depth


TWICE = ("{{% set ns = namespace(a=[1], b=[1]) %}}{{% for i in range({depth}) %}}"
         "{{% set ns.a = [ns.a, ns.a] %}}{{% set ns.b = [ns.b, ns.b] %}}{{% endfor %}}"
         "{{{{ ns.a {op} ns.b }}}}")


@pytest.mark.parametrize("op", ["==", "!=", "<", "in"])
def test_shared_lists_are_refused_at_the_depth_their_size_passes_the_limit(
        renderer: Renderer, op: str) -> None:
    """One level below, the comparison runs and gives Python's answer; at the depth where the
    logical size passes the limit it is refused at once, with the located error."""
    over = _first_depth_over_the_limit()
    below = _doubled(over - 1)
    expected = {"==": below == _doubled(over - 1), "!=": False, "<": False,
                "in": False}[op]
    right = "[ns.b]" if op == "in" else "ns.b"
    source = TWICE.format(depth=over - 1, op=op).replace("ns.b }}", f"{right} }}}}")
    assert _render(renderer, source) == str(expected or op == "in")
    start = time.monotonic()
    with pytest.raises(SpecError, match=f"'{op}' would read a value of over 2,000,000 "
                                        "characters written out") as raised:
        _render(renderer, TWICE.format(depth=over, op=op).replace("ns.b }}", f"{right} }}}}"))
    assert time.monotonic() - start < ENDS_WITHIN
    assert "specs/families/x.yaml:3:" in str(raised.value)


@pytest.mark.parametrize("source", [
    "{{ [1, 2] == [1, 2] }}{{ (1, 'a') in [(1, 'a')] }}{{ {(1, 2): 'x'}[(1, 2)] }}",
    "{{ [colour, colour]|unique|list }}{{ [[2], [1]]|sort }}{{ ['a', 'b'].count('a') }}",
    "{% for x in [[1], [1], [2]] %}{{ loop.changed(x) }}{% endfor %}{{ [3] is equalto([3]) }}",
])
def test_small_values_compare_and_hash_as_python_does(renderer: Renderer, source: str) -> None:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    assert _render(renderer, source) == plain.from_string(source).render(colour="red")


class _Adds:
    """An item a list adds to its own way (``__radd__``): not joined as a list."""

    def __radd__(self, other: object) -> str:
        return "added"


@pytest.mark.parametrize(("items", "start"), [
    ([[1], [2, 3]], []),
    ([(1,), (2,)], ()),
    ([[1], (2,)], []),
    ([(1,), [2]], ()),
    ([[1], 2], []),
    ([[1], "x"], []),
    ([1, 2.5], 0),
    ([], []),
])
def test_the_linear_sum_gives_what_python_s_sum_gives(items: list[object],
                                                       start: object) -> None:
    try:
        expected: object = sum(items, start)  # type: ignore[arg-type]
    except TypeError as exc:
        with pytest.raises(TypeError, match=str(exc).replace("(", r"\(").replace(")", r"\)")):
            linear_sum(items, start)
        return
    assert linear_sum(items, start) == expected
    assert type(linear_sum(items, start)) is type(expected)


def test_the_linear_sum_joins_subclasses_and_refuses_what_adds_itself() -> None:
    from collections import namedtuple

    pair = namedtuple("pair", "a b")
    assert linear_sum([pair(1, 2), pair(3, 4)], ()) == (1, 2, 3, 4)
    with pytest.raises(Exception, match="only lists are summed"):
        linear_sum([[1], _Adds()], [])


def test_a_mixed_sum_of_many_lists_fails_in_linear_time(renderer: Renderer) -> None:
    start = time.monotonic()
    with pytest.raises(SpecError, match='can only concatenate list'):
        _render(renderer, "{% set l = [range(10)|list] * 110000 %}"
                          "{{ (l + [(1,)])|sum(start=[])|length }}")
    assert time.monotonic() - start < ENDS_WITHIN
