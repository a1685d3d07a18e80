"""Small pieces checked against independent references."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, run_cli
from memspec.analysis.scoring import (
    canonical_text,
    first_call,
    first_choice,
    first_line,
    is_correct,
)
from memspec.core import rng as rng_module
from memspec.core.canonical import CanonicalJSONError, copy_data, dump_bytes
from memspec.core.rng import KeyedRandom
from memspec.engine.sampling import balanced_value


def test_canonical_json_is_sorted_nfc_and_compact() -> None:
    data = {"b": "e\u0301", "a": [1, 2.5, None, True], "c": {"y": 1, "x": "\r\nz"}}
    text = dump_bytes(data).decode()
    assert text == '{"a":[1,2.5,null,true],"b":"\u00e9","c":{"x":"\\nz","y":1}}\n'
    assert json.loads(text)["b"] == "\u00e9"


def test_subclasses_of_str_and_dict_have_the_canonical_bytes_of_their_data() -> None:
    class Text(str):
        pass

    class Record(dict):
        pass

    assert dump_bytes({"b": Text("e\u0301"), Text("a"): [Text("x\r\n")]}) == \
        dump_bytes({"b": "\u00e9", "a": ["x\n"]})
    assert dump_bytes(Record(b=Record(c=1), a=(1, 2))) == b'{"a":[1,2],"b":{"c":1}}\n'

    class Count(int):
        pass

    # An integer of a subclass is its number, as json.dumps writes it.
    assert dump_bytes({"n": Count(3), "m": [Count(-7)]}) == \
        (json.dumps({"m": [-7], "n": 3}, separators=(",", ":")) + "\n").encode()
    with pytest.raises(CanonicalJSONError, match="digits"):
        dump_bytes(Count(10 ** 700))


def test_manifests_are_written_as_the_standard_library_indents_them() -> None:
    # Every committed manifest is the bytes dump_pretty_bytes gives its data (they were
    # written by it and are never edited), and those are json.dumps' with the canonical
    # options and an indent of two, text left as it is (not escaped to ASCII).
    from memspec.core.canonical import dump_pretty_bytes

    for path in sorted((REPO / "manifests").glob("*.json")):
        assert dump_pretty_bytes(json.loads(path.read_bytes())) == path.read_bytes(), path
    value = {"b": ["e\u0301", 1, {"z": None, "y": 2.5}], "a": "\u2014 \U0001f600"}
    assert dump_pretty_bytes(value) == (json.dumps(
        {"a": "\u2014 \U0001f600", "b": ["\u00e9", 1, {"y": 2.5, "z": None}]},
        ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8")


def test_content_hash_is_xxh3_128_of_the_canonical_bytes() -> None:
    import xxhash

    from memspec.core.canonical import content_hash

    value = {"b": "e\u0301", "a": [1, 2.5, None]}
    assert content_hash(value) == xxhash.xxh3_128_hexdigest(
        '{"a":[1,2.5,null],"b":"\u00e9"}'.encode())
    assert content_hash(value) != content_hash({**value, "a": [1, 2.5]})


def _orjson_with(fault: str):
    """orjson.dumps as an orjson version that writes one thing otherwise than the standard
    library would write it (or refuses it) might."""
    import orjson

    real = orjson.dumps
    swaps = {"DEL escaped": (b"\x7f", b"\\u007f"), "C1 escaped": (b"\xc2\x9f", b"\\u009f"),
             "separator escaped": (b"\xe2\x80\xa9", b"\\u2029"),
             "true as 1": (b"true", b"1"), "false as 0": (b"false", b"0"),
             "zero as a float": (b",0,", b",0.0,"), "minus one as a float": (b",-1,", b",-1.0,")}
    refused = {"no lowest 64-bit integer": b"-9223372036854775808",
               "no highest unsigned 64-bit integer": b"18446744073709551615"}

    def dumps(value: object, default: object = None, option: int | None = None) -> bytes:
        written = real(value, option=option)
        if fault in refused and refused[fault] in written:
            raise TypeError("Integer exceeds 64-bit range")
        if fault in swaps:
            written = written.replace(*swaps[fault])
        return written

    return dumps


@pytest.mark.parametrize("fault", [
    "DEL escaped", "C1 escaped", "separator escaped", "true as 1", "false as 0",
    "zero as a float", "minus one as a float", "no lowest 64-bit integer",
    "no highest unsigned 64-bit integer"])
def test_an_orjson_that_writes_anything_otherwise_is_not_used(
        fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The canonical bytes must not depend on which orjson is installed: the check made at
    # import finds every way a version could write a value otherwise, and then the standard
    # library writes everything. The installed one agrees, and is used.
    import orjson

    from memspec.core import canonical

    assert canonical._orjson_agrees() and canonical._USE_ORJSON
    monkeypatch.setattr(orjson, "dumps", _orjson_with(fault))
    assert not canonical._orjson_agrees()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1: "x"}, {"s": {1, 2}}])
def test_canonical_json_refuses_what_has_no_json_form(bad: object) -> None:
    with pytest.raises(CanonicalJSONError):
        dump_bytes(bad)


def test_copy_data_equals_deepcopy_and_shares_no_container() -> None:
    import copy

    shared = {"name": "Ada", "tags": ["a", "b"]}
    slots = {"people": [shared, {"name": "Bo", "tags": []}], "n": 3, "x": 1.5, "none": None,
             "pair": ("p", ["q"]), "flag": True}
    copied = copy_data(slots)
    assert copied == copy.deepcopy(slots)

    def containers(value: object) -> list[int]:
        if isinstance(value, dict):
            return [id(value)] + [i for v in value.values() for i in containers(v)]
        if isinstance(value, (list, tuple)):
            return [id(value)] + [i for v in value for i in containers(v)]
        return []

    # A transform may rewrite the copy in place: nothing of the original may change with it.
    assert not set(containers(copied)) & set(containers(slots))
    copied["people"][0]["tags"].append("c")
    copied["pair"][1].append("r")
    assert shared["tags"] == ["a", "b"] and slots["pair"] == ("p", ["q"])
    # A list (of containers, of scalars) and a scalar on their own, alike.
    for value in ([shared, ["x"], "y"], ["a", 1, None], "text", 2.5):
        copied = copy_data(value)
        assert copied == copy.deepcopy(value)
        assert not set(containers(copied)) & set(containers(value))


def test_keyed_random_is_a_pure_function_of_seed_and_path() -> None:
    a = KeyedRandom(5, ("fam", 3, "slot"))
    b = KeyedRandom(5, ("fam", 3, "slot"))
    assert [a.next_u64() for _ in range(5)] == [b.next_u64() for _ in range(5)]
    assert KeyedRandom(5, ("fam", 3)).next_u64() != KeyedRandom(6, ("fam", 3)).next_u64()
    assert KeyedRandom(5, ("fam", "3")).next_u64() != KeyedRandom(5, ("fam", 3)).next_u64()
    assert KeyedRandom(5, ("a", "bc")).next_u64() != KeyedRandom(5, ("ab", "c")).next_u64()


def test_keyed_random_draws_what_every_frozen_release_was_drawn_with() -> None:
    # Pinned values: a change to how draws are computed must not change a single one of them.
    rng = KeyedRandom(7, ("fam", 1, "slot", "x"))
    assert rng.sample(list(range(300)), 15) == [33, 211, 17, 245, 49, 56, 295, 176, 206, 224,
                                                221, 42, 193, 288, 232]
    assert rng.randbelow(10**15) == 614905033755553
    assert rng.shuffled(range(8)) == [7, 0, 2, 6, 4, 1, 5, 3]
    assert (rng.choice("abcdef"), rng.randint(-5, 5)) == ("e", 3)
    assert rng.next_u64() == 14888673658887442888
    with pytest.raises(ValueError, match="2\\*\\*64"):
        rng.randbelow(2**64 + 1)  # more values than a draw chooses among: refused, not a hang


@pytest.mark.parametrize("bound", [3, 7, 1000, 2**32 - 1, 2**32 + 1, 2**63 + 5, 2**64 - 1])
def test_a_draw_is_redrawn_exactly_when_it_falls_in_the_uneven_top_of_2_to_the_64(
        bound: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The top 2**64 mod bound values would favour the low results: those, and only those, are
    # drawn again, on either side of where the shortcut for small bounds stops.
    limit = 2**64 - 2**64 % bound
    digests = iter([limit, 2**64 - 1, limit - 1, 0])
    monkeypatch.setattr(rng_module, "_digest", lambda data, seed: next(digests))
    assert rng_module._below(b"k", 1, 0, bound, 1) == ([(limit - 1) % bound], 3)


@pytest.mark.parametrize("bound", [2, 2**32, 2**64])
def test_a_bound_dividing_2_to_the_64_never_redraws(bound: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rng_module, "_digest", lambda data, seed: 2**64 - 1)
    assert rng_module._below(b"k", 1, 0, bound, 1) == ([(2**64 - 1) % bound], 1)


@pytest.mark.parametrize(("before", "after"), [(("fam",), ("slot",)), ((), ()), (("a", 3), ()),
                                               ((), ("x", 1))])
def test_keys_made_around_a_number_are_the_keys_of_its_path(before: tuple, after: tuple) -> None:
    def outcome(make: Any, *args: Any) -> Any:
        try:
            return make(*args)
        except TypeError as error:
            return str(error)

    key_of = rng_module.number_keys(before, after)
    for number in (0, 7, 12345, -3, 10**20, True, "5", 1.0):
        assert outcome(key_of, number) == \
            outcome(rng_module.stream_key, (*before, number, *after))


def test_randbelow_is_uniform_by_a_chi_square_test() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = KeyedRandom(1, ("uniformity",))
    counts = Counter(rng.randbelow(7) for _ in range(14000))
    result = scipy_stats.chisquare([counts[i] for i in range(7)])
    assert result.pvalue > 0.001


def test_shuffle_and_sample_keep_their_elements() -> None:
    rng = KeyedRandom(2, ("x",))
    assert sorted(rng.shuffled(range(20))) == list(range(20))
    picked = rng.sample(list(range(10)), 4)
    assert len(set(picked)) == 4 and set(picked) <= set(range(10))


@pytest.mark.parametrize("groups", [3, 7, 12, 100])
def test_balanced_assignment_is_exact_when_the_count_allows(groups: int) -> None:
    values = ["a", "b", "c"]
    counts = Counter(balanced_value(values, 9, "fam", "slot", g) for g in range(groups))
    assert max(counts.values()) - min(counts.values()) <= 1
    if groups % 3 == 0:
        assert set(counts.values()) == {groups // 3}


def test_first_attempt_extraction() -> None:
    assert first_line("```python\n- copy_file('a', 'b')\nthen more\n```") == "copy_file('a', 'b')"
    assert first_call("Sure: copy_file('a(1)', 'b') and later copy_file('b', 'a')") == \
        "copy_file('a(1)', 'b')"
    options = ["Maple Room", "Granite Room", "Poplar Room"]
    assert first_choice("B) Granite Room", options) == 1
    assert first_choice("(c)", options) == 2
    assert first_choice("I would pick the Poplar Room, or maybe Maple Room", options) == 2
    assert first_choice("no idea", options) is None
    # An article is not a label; a later label or option text is what counts.
    assert first_choice("A quick look settles it: C) Poplar Room", options) == 2
    assert first_choice("Answer: B", options) == 1
    # A label followed by a comma, or set apart by emphasis, is a label.
    assert first_choice("B, because the tool shows it this morning.", options) == 1
    assert first_choice("**B** is the one the tool shows, not Maple Room", options) == 1
    assert first_choice("*(c)* Poplar Room", options) == 2
    assert first_choice("__A__", options) == 0
    # Emphasis on a word is not a label; the option text named first counts.
    assert first_choice("**Always** Poplar Room", options) == 2
    assert first_choice("I, for one, take the Poplar Room", options) == 2


def test_canonical_scoring_ignores_case_space_quotes_and_optionally_order() -> None:
    assert canonical_text("Send( \u201cA\u201d ,  'b' )") == canonical_text("send('a','b')")
    answer = {"scorer": "canonical", "gold": "f(x=1, y=2)", "unordered_args": True}
    assert is_correct(answer, "f(y=2, x=1)")
    assert not is_correct({**answer, "unordered_args": False}, "f(y=2, x=1)")


def test_only_the_first_attempt_counts() -> None:
    answer = {"scorer": "regex", "gold": r"copy_file\('b', 'a'\)", "first": "call"}
    assert is_correct(answer, "copy_file('b', 'a')")
    assert not is_correct(answer, "copy_file('a', 'b')\nOops: copy_file('b', 'a')")


def test_libyaml_and_pure_python_parsers_read_every_spec_alike(monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """The fast parser (libyaml) and the fallback read each bundled spec into the same data,
    with the same line and column for every value, and refuse the same hostile YAML."""
    from pathlib import Path

    from memspec.core.code_cache import CACHE_DIR_VARIABLE
    from memspec.core.errors import SpecError
    from memspec.spec import yamlsafe

    monkeypatch.setenv(CACHE_DIR_VARIABLE, "")  # each parser parses, every time

    def load(loader: type, text: str) -> object:
        monkeypatch.setattr(yamlsafe, "_StrictLoader", loader)
        try:
            located = yamlsafe.load_yaml_text(text, "spec.yaml")
        except SpecError as err:
            problem = err.problems[0]
            return ("error", problem.line, problem.column, problem.message.split(":")[0])
        return located.data, located.positions, located.text_starts

    specs = sorted((Path(__file__).resolve().parent.parent / "specs").rglob("*.yaml"))
    assert len(specs) > 100
    for path in specs:
        text = path.read_text(encoding="utf-8")
        assert load(yamlsafe._LibyamlStrictLoader, text) == \
            load(yamlsafe._PureStrictLoader, text), path
    # Nesting 100 deep: past our limit of 48, short of the flow-depth limit some PyYAML
    # releases give their own scanner (which would refuse deeper input first, elsewhere).
    hostile = ["a: &x [1]\nb: *x\n", "- !!python/object:os.system x\n", "a: 1\na: 2\n",
               "<<: {a: 1}\n", "a: .nan\n", "a: 99999999999999999999\n",
               "k: " + "[" * 100 + "]" * 100 + "\n", "? [a]\n: 1\n", "a: !tag 1\n"]
    for text in hostile:
        fast, pure = load(yamlsafe._LibyamlStrictLoader, text), load(yamlsafe._PureStrictLoader,
                                                                     text)
        assert fast[0] == "error" and fast == pure, text


def test_content_index_finds_the_first_repeat_and_ignores_prefix_collisions() -> None:
    from memspec.engine.content_index import ContentIndex

    def index_of(keys: list[str]) -> ContentIndex:
        index = ContentIndex()
        for key in keys:
            index.add(key)
        return index

    def records_of(keys: list[str]):
        def records(positions: list[int]):
            return ((keys[p], {"id": f"i{p}"}) for p in positions)
        return records

    unique = [f"{n * 7919:016x}" + "0" * 16 for n in range(1000)]
    calls: list[list[int]] = []
    assert index_of(unique).first_duplicate(lambda p: calls.append(p) or []) is None
    assert calls == []  # nothing is read back when no prefix repeats
    # Same first 64 bits, different keys: a candidate, but not a duplicate.
    colliding = ["ab" * 8 + "0" * 16, "cd" * 16, "ab" * 8 + "1" * 16]
    assert index_of(colliding).first_duplicate(records_of(colliding)) is None
    # Two repeats: the one whose second copy comes first in the stream is reported.
    keys = ["a" * 32, "b" * 32, "c" * 32, "b" * 32, "a" * 32]
    found = index_of(keys).first_duplicate(records_of(keys))
    assert found == ({"id": "i3"}, {"id": "i1"})


def test_mentions_agrees_with_a_plain_whole_word_search() -> None:
    """The substring shortcut in ``mentions`` never changes its answer."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memspec.engine.checks import mentions

    alphabet = st.sampled_from(list("abAB sS.-_1") + ["\u017f", "\u212a", "k", "K", "é", "É"])

    @settings(max_examples=400, derandomize=True, deadline=None)
    @given(st.text(alphabet, max_size=20), st.text(alphabet, min_size=1, max_size=4),
           st.booleans())
    def agree(text: str, phrase: str, ignore_case: bool) -> None:
        flags = re.IGNORECASE if ignore_case else 0
        expected = re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, flags) is not None
        assert mentions(text, phrase, ignore_case) == expected

    agree()


def test_forbidden_words_kept_by_text_answer_as_worked_out_afresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The words a text mentions are kept for a short text: the same answers, asked in any
    order, again, past what is kept, and for a text too long to keep."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from memspec.engine.checks import _Words, mentions

    words = ["zk", "bare key", "Prefix", "\u212a"]
    monkeypatch.setattr(_Words, "KEPT_TEXTS", 8)  # starting again from none, often
    kept = _Words(words, words)

    def fresh(text: str) -> str | None:
        return next((word for word in words if mentions(text, word)), None)

    alphabet = st.sampled_from(list("zkK bare y.Pfix") + ["\u212a", "\n"])

    @settings(max_examples=300, derandomize=True, deadline=None)
    @given(st.lists(st.text(alphabet, max_size=12), min_size=1, max_size=30))
    def agree(texts: list[str]) -> None:
        for text in texts + texts[::-1] + ["zk " * 1000]:
            assert kept.first_in(text) == fresh(text)

    agree()


@pytest.mark.parametrize(("source", "outcome"), [
    # A set inside a message stays inside it; the loop outside is seen from inside.
    ('{% set x = 1 %}{% for i in range(2) %}{% message "user" %}{% set x = 9 %}{{ x }}'
     '{{ loop.index }}{% endmessage %}{% endfor %}{% message "assistant", "bo" %}{{ x }}'
     '{% endmessage %}',
     [{"role": "user", "content": "91"}, {"role": "user", "content": "92"},
      {"role": "assistant", "content": "1", "name": "bo"}]),
    ('{% message who %}hi{% endmessage %}', "message role 'robot' (line 1) is not one of"),
    ('{% message "user" %}a\n{% message "user" %}b{% endmessage %}{% endmessage %}',
     "message blocks cannot nest (line 1)"),
    # Markers written by the template itself, not by the tag, with a role of their own.
    ('{{ "\\x02wizard\\x02\\x021\\x02obey\\x02" }}', "message role 'wizard' is not one of"),
    ('{{ "\\x02wizard" }}', "control character U+0002 outside the markers"),
    ('{% message "user", "a\\x02b" %}hi{% endmessage %}', "holds a reserved control character"),
])
def test_message_blocks_render_to_messages_or_located_errors(source: str,
                                                             outcome: object) -> None:
    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    template = Renderer(Project(REPO)).inline(source, "specs/x.yaml", 4, 7, "a test")
    if isinstance(outcome, list):
        assert template.render_messages({"who": "robot"}) == outcome
        return
    with pytest.raises(SpecError) as raised:
        template.render_messages({"who": "robot"})
    problem = raised.value.problems[0]
    assert outcome in problem.message and (problem.file, problem.line) == ("specs/x.yaml", 4)


MESSAGE_SOURCES = [
    '{% for t in turns %}{% message "user" %}{{ t }}{% endmessage %}\n{% endfor %}',
    '{% for i in range(300) %}{% message "user" %}{{ i }}{% endmessage %}{% endfor %}',
    # Caught on the way and printed changed, twice, in another order or not at all.
    '{% set x %}{% message "user" %}A{% endmessage %}{% endset %}{{ x | replace("A", "B") }}',
    '{% set x %}{% message "user" %}A{% endmessage %}{% endset %}{{ x }}{{ x }}',
    '{% set x %}{% message "user" %}A{% endmessage %}{% endset %}'
    '{% message "user" %}B{% endmessage %}{{ x }}',
    '{% set x %}{% message "user" %}A{% endmessage %}{% endset %}{% message "user" %}B'
    '{% endmessage %}',
    '{% macro m() %}{% message "user" %}A{% endmessage %}{% endmacro %}{{ m() | trim }}{{ m() }}',
    '{% macro m() %}{% message "user" %}A{% endmessage %}{% endmacro %}{{ m() | truncate(5) }}',
    '{% filter upper %}{% message "user" %}a{% endmessage %}{% endfilter %}',
    '{% for t in tree recursive %}{% message "user" %}{{ t.n }}{% endmessage %}'
    '{{ loop(t.kids) | replace("a", "b") }}{% endfor %}',
    '{% block b %}{% message "user" %}A{% endmessage %}{% endblock %}'
    '{{ self.b() | replace("A", "B") }}',
    '{% include "implicitmem/qa_turns.j2" %}',
    # What is not canonical as rendered, or not a message.
    '{% message "user", "Zoe\u0301" %}cafe\u0301 {{ "e\u0301" }}{% endmessage %}',
    '{% message "user" %}one\r\ntwo\rthree{% endmessage %}',
    '{% message "user", "a\rb" %}x{% endmessage %}',
    '{% message "user" %}{{ turns[0] }}{% endmessage %} stray',
    '{% message "user" %} {% endmessage %}',
    '{% message "user" %}Hello {name}{% endmessage %}',
    '{% message "user" %}{{ "x" ~ d.items }}{% endmessage %}',
    '{% message "user" %}{{ "\ud800" }}{% endmessage %}',
    '{% message "user" %}{{ "x" * 1500000 }}{% endmessage %}',
]


@pytest.mark.parametrize("source", MESSAGE_SOURCES)
def test_messages_collected_as_rendered_equal_those_split_from_the_text(source: str) -> None:
    """Messages handed over by the blocks as they render are what splitting the rendered text
    by its markers makes, and a template where they are not, or that is wrong, is told apart:
    the same messages, or the same error."""
    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer, split_messages
    from memspec.spec.project import Project

    values = {"turns": ["one", "two"], "d": {"a": 1},
              "tree": [{"n": "a", "kids": [{"n": "a", "kids": []}]}],
              "chatter": [{"q": "Why?", "a": "Because."}]}
    outcomes = []
    for way in ("collected", "split"):
        template = Renderer(Project(REPO)).inline(source, "specs/x.yaml", 4, 7, "a test")
        try:
            outcomes.append(template.render_messages(values) if way == "collected" else
                            split_messages(template.render_text(values), template))
        except SpecError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize(("source", "outcome"), [
    # Inside a list or dict, as on its own, only plain data prints; an undefined name fails.
    ("{{ [d.items] }}", "a builtin_function_or_method cannot be printed"),
    ("{{ {'k': (d.get,)} }}", "a builtin_function_or_method cannot be printed"),
    ("{{ [xs|map('upper')] }}", "a generator cannot be printed"),
    ("{{ [nope] }}", "'nope' is undefined"),
    ("{{ {'k': nope} }}", "'nope' is undefined"),
    # Turned into text first: the address is found in what was rendered, in any case.
    ("{{ 'v=' ~ d.items }}", "memory address, '<built-in method items of dict object at 0x"),
    ("{{ d.items|string }}", "memory address"),
    ("{{ '%s' % (d.items,) }}", "memory address"),
    ("{{ '{0.items}'.format(d) }}", "memory address"),
    ("{{ d.items|upper }}", "memory address, '<BUILT-IN METHOD ITEMS"),
    # Plain data prints as Python writes it; text that merely mentions 0x is left alone.
    ("{{ [1, 'a', {'b': [2.5, none, true]}] }}", "[1, 'a', {'b': [2.5, None, True]}]"),
    ("{{ 'colour 0x00ff00 at 0x12' }} <point at 0x12>", "colour 0x00ff00 at 0x12 <point at 0x12>"),
])
def test_only_plain_data_prints_so_no_memory_address_reaches_output(source: str,
                                                                      outcome: str) -> None:
    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    template = Renderer(Project(REPO)).inline(source, "specs/x.yaml", 4, 7, "a test")
    values = {"d": {"a": 1}, "xs": ["a"]}
    if "[" in outcome or "colour" in outcome:
        assert template.render_text(values) == outcome
        return
    with pytest.raises(SpecError) as raised:
        template.render_text(values)
    problem = raised.value.problems[0]
    assert outcome in problem.message and (problem.file, problem.line) == ("specs/x.yaml", 4)


def _expression_outcomes(renderers: tuple, source: str, values: dict,
                         scoped: bool = True) -> list:
    """What each renderer's evaluation of the expression ``source`` over ``values`` (in its
    scope, or as given) gives: the value, or the message of its error."""
    from memspec.core.errors import SpecError
    from memspec.engine.render import TemplateOrigin

    outcomes = []
    for renderer in renderers:
        try:
            outcomes.append(renderer.expression(source, TemplateOrigin("x.yaml"))(
                renderer.scope(values) if scoped else values))
        except SpecError as error:
            outcomes.append(error.problems[0].message)
    return outcomes


LIST_FILTER_CASES = [
    ("xs | select('odd') | list", {"xs": [1, 2, 3, 4, 5]}),
    ("xs | reject('odd') | list", {"xs": [1, 2, 3, 4, 5]}),
    ("xs | select | list", {"xs": [0, 1, "", 2]}),
    ("xs | select('divisibleby', 3) | list", {"xs": list(range(10))}),
    ("xs | select('in', [1, 2]) | list", {"xs": list(range(5))}),
    ("xs | select('equalto', 2, 3) | list", {"xs": [2]}),
    ("nothing | select('odd') | list", {"nothing": None}),
    ("ds | selectattr('a', 'equalto', 2) | list", {"ds": [{"a": 1}, {"a": 2}]}),
    ("ds | selectattr('a', 'equalto', 2) | list", {"ds": [{"a": 1}, {"a": 2}, {"b": 2}]}),
    ("ds | rejectattr('a', 'none') | list", {"ds": [{"a": None}, {"a": 2}]}),
    ("ds | selectattr('a') | list", {"ds": [{"a": 0}, {"a": 2}]}),
    ("ds | selectattr('a.b', 'equalto', 1) | list", {"ds": [{"a": {"b": 1}}, {"a": {"b": 2}}]}),
    ("ds | selectattr('a', 'gt', 1) | first", {"ds": [{"a": 1}, {"a": 2}, {"a": "x"}]}),
    ("ds | selectattr('a', 'gt', 1) | list", {"ds": [{"a": 1}, {"a": 2}, {"a": "x"}]}),
    ("ds | selectattr('items', 'defined') | list | length", {"ds": [{"a": 1}]}),
    ("ds | selectattr('a', 'no_such_test') | list", {"ds": [{"a": 1}]}),
    ("ds | selectattr('a', 'equalto') | list", {"ds": [{"a": 1}]}),
    ("ds | map(attribute='a') | list", {"ds": [{"a": 1}, {"a": 2}]}),
    ("ds | map(attribute='a') | join(',')", {"ds": [{"a": 1}, {"b": 2}]}),
    ("ds | map(attribute='a') | first", {"ds": [{"a": 1}, "text"]}),
    ("ds | map(attribute='a') | join(',')", {"ds": []}),
    ("ds | map(attribute='a.b') | list", {"ds": [{"a": {"b": 3}}]}),
    ("(ds | map(attribute='a') | list)[0]", {"ds": [{"a": 1}, [2]]}),
    ("ds | map(attribute='a') is sequence", {"ds": [{"a": 1}]}),
]


@pytest.mark.parametrize(("source", "values"), LIST_FILTER_CASES)
def test_list_filters_answer_as_jinjas_own_do(source: str, values: dict) -> None:
    # memspec's select, reject, selectattr, rejectattr and map(attribute=) take quicker paths
    # over lists of dicts; Jinja's own filters, in the same sandbox, must agree: same value,
    # or the same error.
    import jinja2.filters

    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    ours, jinjas = Renderer(Project(REPO)), Renderer(Project(REPO))
    for name in ("select", "reject", "selectattr", "rejectattr", "map"):
        jinjas.env.filters[name] = getattr(jinja2.filters, f"sync_do_{name}")
    jinjas.env.plain_test = lambda name: None  # type: ignore[method-assign]  # Jinja's call_test
    outcomes = _expression_outcomes((ours, jinjas), source, values, scoped=False)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("source", [
    "s[1].key", "s[0].v[1]", "s[0]['key']", "d.items", "d['items']", "s[5]", "s[0].nope",
    "nope", "range", "n", "s[0].key.upper", "s.append", "s[-1].key", "d.items.__self__",
])
def test_path_expressions_read_what_jinja_reads(source: str) -> None:
    # A name with attributes and items read off it is evaluated without Jinja's machinery;
    # Jinja's own evaluation must give the same value, or the same error.
    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    ours, jinjas = Renderer(Project(REPO)), Renderer(Project(REPO))
    jinjas._path = lambda source: None  # type: ignore[method-assign]
    values = {"s": [{"key": "a", "v": [1, 2]}, {"key": "b"}], "d": {"items": 5}, "n": 3}
    outcomes = _expression_outcomes((ours, jinjas), source, values)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("source", [
    "['user', 'assistant'] * 15", "'ab' * 3", "2 ** 10", "'%05d' % 42", "'x' * 10**7",
    "2 ** 1000", "'%999999999d' % 1", "x * 2", "[1] * 3 == [1, 1, 1]", "'a' * 5000",
    "(2 ** 64) ** 20", "1 % 0", "'%s and %s' % ('a', 'b')", "-(3 * 4)",
])
def test_arithmetic_folded_while_compiling_gives_what_it_gives_when_run(source: str) -> None:
    # The sandbox's checked arithmetic (*, %, **) on constants is worked out while compiling;
    # the same expression run as Jinja compiles it must give the same value or error.
    import jinja2

    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    ours, unfolded = Renderer(Project(REPO)), Renderer(Project(REPO))
    unfolded.env._generate = (  # type: ignore[method-assign]
        lambda *args, **kwargs: jinja2.Environment._generate(unfolded.env, *args, **kwargs))
    unfolded.env.cached_compile = lambda parts, build: build()  # type: ignore[method-assign]
    outcomes = _expression_outcomes((ours, unfolded), source, {"x": 2}, scoped=False)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("source", [
    "x * 2", "s[0].key ~ '-' ~ s[1].key | upper", "nope", "s | map(attribute='key') | list",
    "s | selectattr('key', 'equalto', 'b') | first", "[x, {'k': s[0].v}]", "x / 0",
    "s[0].key.upper", "namespace(a=1).a", "x if x > 1 else nope", "range(x) | sum",
])
def test_expressions_return_what_jinjas_code_stores(source: str) -> None:
    # An expression's root is made a function returning its value, where Jinja's code is a
    # generator storing it in the context: the same value, or the same error.
    import inspect

    import jinja2

    from memspec.engine.render import Renderer, TemplateOrigin
    from memspec.spec.project import Project

    ours, jinjas = Renderer(Project(REPO)), Renderer(Project(REPO))
    jinjas.env.compile_expression_tree = (  # type: ignore[method-assign]
        lambda tree: jinja2.Environment.compile(jinjas.env, tree))
    jinjas.env.cached_compile = lambda parts, build: build()  # type: ignore[method-assign]
    jinjas._path = ours._path = lambda source: None  # type: ignore[method-assign]
    roots = [renderer._compiled_expression(source, TemplateOrigin("x.yaml")).root_render_func
             for renderer in (ours, jinjas)]
    assert [inspect.isgeneratorfunction(root) for root in roots] == [False, True]
    values = {"s": [{"key": "a", "v": [1, 2]}, {"key": "b"}], "x": 3}
    outcomes = _expression_outcomes((ours, jinjas), source, values)
    assert outcomes[0] == outcomes[1]


def test_expressions_over_one_shared_scope_give_what_each_gives_over_its_own() -> None:
    # The checks of an instance evaluate their expressions, one after another, in one context
    # shared by them all (expression_scope), where each had a copy of the values of its own:
    # the same values or errors, whether the roots return their value (and share it) or are
    # Jinja's generators that store it (and are given a context of their own).
    import jinja2

    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer, TemplateOrigin, expression_scope
    from memspec.spec.project import Project

    sources = ["instance.phases | map(attribute='n') | list", "x + 1", "result", "nope",
               "instance.answer ~ '!'", "s | selectattr('key', 'equalto', 'b') | first",
               "result", "[x, instance.answer]", "x / 0", "instance"]
    values = {"s": [{"key": "a"}, {"key": "b"}], "x": 3}
    instance = {"phases": [{"n": 1}, {"n": 2}], "answer": "yes"}
    ours, jinjas = Renderer(Project(REPO)), Renderer(Project(REPO))
    jinjas.env.compile_expression_tree = (  # type: ignore[method-assign]
        lambda tree: jinja2.Environment.compile(jinjas.env, tree))
    jinjas.env.cached_compile = lambda parts, build: build()  # type: ignore[method-assign]
    for renderer in (ours, jinjas):
        shared = expression_scope(renderer.env, renderer.scope(values), instance=instance)
        outcomes: dict[str, list] = {"shared": [], "own": []}
        for source in sources:
            evaluate = renderer.expression(source, TemplateOrigin("x.yaml"))
            for way, scope in (("shared", shared),
                               ("own", renderer.scope({**values, "instance": instance}))):
                try:
                    outcomes[way].append(evaluate(scope))
                except SpecError as error:
                    outcomes[way].append(error.problems[0].message)
        assert outcomes["shared"] == outcomes["own"]
        assert outcomes["own"][0] == [1, 2] and "undefined" in outcomes["own"][2]


@pytest.mark.parametrize("source", [
    "{{ d.a }} {{ d['a'] }} {{ d.items }} {{ d['items'] }} {{ d.nope }}", "{{ d.n }}",
    "{{ s[0].key }}{{ s[1]['key'] }}{{ s[5] }}", "{{ s[-1].key }} {{ s[0].v[1] }}", "{{ s[2] }}",
    "{{ t[0] }} {{ t.upper }} {{ n.real }} {{ d[0] }} {{ s['key'] }} {{ s[0].v }}",
    "{{ nope.a }}", "{{ d.a.b }}", "{{ d.m.values }}{{ d.m.x }}", "{{ s[0].key[0] }}",
    "{% for i in s %}{{ i.key }}{{ loop.index }}{% endfor %}{{ (s | first).key }}",
    "{% set x = s[0] %}{% macro m(y) %}{{ y.key }}{{ x.key }}{% endmacro %}{{ m(s[1]) }}",
    "{{ d.a ~ s[0].key }} {{ [d.a, s[1]] }} {{ d.f }}",
])
def test_reads_and_prints_written_inline_render_what_jinjas_code_renders(source: str) -> None:
    # Dict keys, list items at constant positions and printed strings are written inline in
    # the generated code; Jinja's own code generator, in the same sandbox, must render the same
    # text or fail with the same error.
    from jinja2.compiler import CodeGenerator

    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer
    from memspec.spec.project import Project

    ours, jinjas = Renderer(Project(REPO)), Renderer(Project(REPO))
    jinjas.env.code_generator_class = CodeGenerator
    jinjas.env.cached_compile = lambda parts, build: build()  # type: ignore[method-assign]
    values = {"d": {"a": "x", "items": 1, "n": 2, "m": {"values": [3]}, "f": 1.5, 0: "zero"},
              "s": [{"key": "a", "v": [1, 2]}, {"key": "b"}], "t": "text", "n": 7}
    outcomes = []
    for renderer in (ours, jinjas):
        try:
            template = renderer.inline(source, "specs/x.yaml", 4, 7, "a test")
            outcomes.append(template.render_text(values))
        except SpecError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]
    assert "_read" in ours.env.compile(source, raw=True) or "[" not in source


def test_the_context_of_a_render_is_what_jinja_makes() -> None:
    # memspec makes the context of a template without blocks itself, more quickly: it must
    # hold what Jinja's own holds, for whichever Jinja is installed.
    import jinja2

    from memspec.engine.render import Renderer, RenderScope, _expression_context
    from memspec.spec.project import Project

    renderer = Renderer(Project(REPO))
    env, scope = renderer.env, RenderScope({"a": 1})
    template = renderer._compiled_expression("a", None)  # type: ignore[arg-type]
    jinjas = jinja2.runtime.Context(env, scope, template.name, {})
    for ours in (env.context_class(env, scope, template.name, {}),
                 _expression_context(template, scope, jinja2.runtime.EvalContext(
                     env, template.name))):
        assert type(ours) is not jinja2.runtime.Context
        assert {k: v for k, v in vars(ours).items() if k != "eval_ctx"} == \
            {k: v for k, v in vars(jinjas).items() if k != "eval_ctx"}
        assert vars(ours.eval_ctx) == vars(jinjas.eval_ctx)


def test_the_same_text_written_twice_on_a_line_fails_at_each_place_and_label() -> None:
    """Inline templates and expressions are compiled once per text, but each keeps its own
    column and label: the second of two on one line (a YAML flow mapping) is not reported
    where the first is written."""
    from memspec.core.errors import SpecError
    from memspec.engine.render import Renderer, TemplateOrigin
    from memspec.spec.project import Project

    renderer = Renderer(Project(REPO))
    renderer.inline("{{ nope }}", "specs/x.yaml", 4, 7, "answer gold")
    second = renderer.inline("{{ nope }}", "specs/x.yaml", 4, 30, "answer habit")
    with pytest.raises(SpecError) as raised:
        second.render_text({})
    problem = raised.value.problems[0]
    assert (problem.line, problem.column) == (4, 33) and "answer habit" in problem.message
    renderer.expression("nope", TemplateOrigin("specs/x.yaml", 3, 7, "check a"))
    evaluate = renderer.expression("nope", TemplateOrigin("specs/x.yaml", 3, 30, "check b"))
    with pytest.raises(SpecError) as raised:
        evaluate({})
    problem = raised.value.problems[0]
    assert (problem.line, problem.column) == (4, 30) and "check b" in problem.message


def test_a_slot_expression_that_prints_an_address_is_refused(project_copy: Path) -> None:
    family = project_copy / "specs" / "families" / "example" / "reversed_copy.yaml"
    text = family.read_text()
    family.write_text(text.replace("slots:\n", "slots:\n  stamp: {expr: \"'at ' ~ range\"}\n", 1))
    result = run_cli("generate", "example.procedural.reversed_copy", "--groups", "1",
                     root=project_copy)
    assert result.returncode == 2, result.stderr
    assert "specs/families/example/reversed_copy.yaml:" in result.stderr
    assert "memory address" in result.stderr and "Traceback" not in result.stderr


def test_yaml_memspec_writes_reads_back_as_written() -> None:
    from memspec.spec.yamlsafe import dump_yaml, load_yaml_text

    # Strings a YAML reader could take for numbers, booleans or null are quoted.
    data = {"pool": "x.y", "items": ["1e5", "12E3", ".5", "-.5e3", "no", "yes", "True", "null",
                                     "~", "", "007", "3.0", "0x1F", ".inf", "plain text", "é"],
            "nested": {"n": 5, "f": 2.5, "b": False, "none": None}}
    text = dump_yaml(data, "pool.yaml")
    assert load_yaml_text(text, "pool.yaml").data == data
    import yaml

    assert yaml.safe_load(text) == data  # a YAML 1.1 reader agrees


def test_a_faker_provider_that_fails_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from faker import Faker

    from memspec.core.errors import SpecError
    from memspec.spec.faker_pool import faker_items

    def needs_an_extra(self: Faker) -> str:
        raise ModuleNotFoundError("No module named 'PIL'")

    monkeypatch.setattr(Faker, "picture", needs_an_extra, raising=False)
    with pytest.raises(SpecError, match="provider 'picture' failed: ModuleNotFoundError: No "
                                        "module named 'PIL'"):
        faker_items("picture", 2, "en_US", 0)


def test_a_streamed_file_asks_for_write_back_of_every_window_and_keeps_its_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from memspec.core.writeback import StreamedFile

    advice: list[tuple[int, int]] = []
    real = os.posix_fadvise

    def record(fd: int, offset: int, length: int, what: int) -> None:
        assert what == os.POSIX_FADV_DONTNEED
        assert os.fstat(fd).st_size >= offset + length  # nothing still in a buffer
        advice.append((offset, offset + length))
        real(fd, offset, length, what)

    monkeypatch.setattr(os, "posix_fadvise", record)
    pieces = [bytes([n]) * (700 + n) for n in range(40)]
    with StreamedFile(tmp_path / "out", step=4096) as handle:
        for piece in pieces:
            handle.write(memoryview(piece))
    assert (tmp_path / "out").read_bytes() == b"".join(pieces)
    # Each advice starts where the one before began (its pages leave the cache), runs to what
    # was written, and takes at least a window of new bytes: every byte is asked for in turn.
    assert len(advice) >= 6
    starts = [start for start, _ in advice]
    ends = [end for _, end in advice]
    assert starts == [0, 0, *ends[:-2]]
    assert all(b - a >= 4096 for a, b in zip([0, *ends[:-1]], ends, strict=True))
    # Where the system has no such advice, it is a plain file.
    monkeypatch.delattr(os, "posix_fadvise")
    with StreamedFile(tmp_path / "plain", step=10) as handle:
        handle.write(b"x" * 25)
    assert (tmp_path / "plain").read_bytes() == b"x" * 25


def test_a_small_run_on_several_workers_is_cut_into_chunks_enough_for_each() -> None:
    from memspec.engine.parallel import CHUNK_INSTANCES, MIN_CHUNKS_PER_WORKER, chunk_groups

    usual = CHUNK_INSTANCES // 8
    assert chunk_groups(8, 100_000, 1) == chunk_groups(8, 100_000, 2) == usual
    assert chunk_groups(8, 48, 1) == usual  # one process: no one waits
    for groups, workers in [(48, 2), (40, 2), (7, 3), (usual * 3, 2)]:
        size = chunk_groups(8, groups, workers)
        chunks = -(-groups // size)
        assert size <= usual
        assert chunks >= min(groups, MIN_CHUNKS_PER_WORKER * workers)
    assert chunk_groups(8, 1, 4) == 1


def test_a_shared_slot_holds_what_fits_and_refuses_what_does_not() -> None:
    from memspec.engine.parallel import ChunkResult, SharedSlots

    slots = SharedSlots(3, 8)
    try:
        assert slots.put(1, b"12345678")  # exactly its size
        assert not slots.put(2, b"123456789")  # one byte over: nothing written
        assert slots.put(0, b"abc")
        assert slots.lend(1, 8) == b"12345678"  # a neighbour's write left it whole
        kept = slots.lend(0, 3)
        assert kept == b"abc"
        assert slots.lend(2, 8) == bytes(8)
        slots.reclaim(0)  # the slot is about to be written again: what was lent goes
        with pytest.raises(ValueError, match="released"):
            bytes(kept)
        assert slots.put(0, b"xyz") and slots.lend(0, 3) == b"xyz"
    finally:
        slots.close()  # with views still lent: they are released, not left pinning it
    with pytest.raises(ValueError):
        slots.area[0]
    # A chunk's lines travel joined and come back apart, newlines kept.
    chunk = ChunkResult.of_lines([b'{"a":"x\\ny"}\n', b"{}\n"], {})
    assert chunk.count == 2 and chunk.lines() == [b'{"a":"x\\ny"}\n', b"{}\n"]


@pytest.mark.parametrize("extra", [1e-07, 0.1, 1e16, [2.5e-05]])
def test_an_instance_whose_messages_hold_floats_has_the_standard_librarys_bytes(
        extra: object) -> None:
    # Messages are checked in C for text only; a float among them (which orjson writes its
    # own way, 1e-7 for 1e-07) must send the instance down the standard library's path.
    import json

    from memspec.core.canonical import dump_instance_bytes

    instance = {"id": "f-00000-a", "phases": [
        {"name": "probe", "messages": [{"role": "user", "content": "Which?", "w": extra}]}]}
    expected = json.dumps(instance, ensure_ascii=False, sort_keys=True,
                          separators=(",", ":"), allow_nan=False) + "\n"
    assert dump_instance_bytes(instance) == expected.encode("utf-8")


def test_an_instance_without_an_analysis_block_is_written_whole_through_a_memo() -> None:
    from memspec.core.canonical import TextMemo, dump_instance_bytes, normalize

    memo = TextMemo()
    for instance in ({"id": "f-00000-x", "group": 0, "weight": 1e-05},
                     {"analysis": {"chance": 0.25}, "id": "f-00001-x", "zeta": 0.1},
                     {"id": "f-00002-x"}):
        normal = normalize(instance)
        assert dump_instance_bytes(normal, repeated=memo) == dump_bytes(instance)


def test_instances_are_read_with_the_standard_librarys_values_and_errors(
        tmp_path: Path) -> None:
    # Lines are parsed by orjson where it gives the standard library's values: an integer
    # past 64 bits stays an integer (orjson would give a float), NaN and a lone surrogate
    # are read as before, and a line that is no JSON is an error at its line and column.
    import json as stdlib_json

    from memspec.core.errors import SpecError
    from memspec.spec.instances import read_instances

    lines = ['{"id": "a", "big": 123456789012345678901234, "x": [1.5, -0.0, "\\u00e9"]}',
             '{"id": "b", "nan": NaN, "s": "\\ud800"}', '{"id": "c", "n": 18446744073709551615}']
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = list(read_instances(path))
    expected = [stdlib_json.loads(line) for line in lines]
    assert read[0] == expected[0] and isinstance(read[0]["big"], int)
    assert read[1]["s"] == "\ud800" and read[1]["nan"] != read[1]["nan"]
    assert read[2] == expected[2] and isinstance(read[2]["n"], int)
    path.write_text(lines[0] + '\n{"id": "d", oops}\n', encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        list(read_instances(path))
    problem = raised.value.problems[0]
    assert (problem.line, problem.column) == (2, 13) and "not valid JSON" in problem.message


def test_equal_analysis_blocks_are_held_once_and_only_equal_ones() -> None:
    # A family's block, the same in each of its instances, is one object once read; blocks
    # that compare equal in Python but differ in JSON (1 and true) stay apart.
    from memspec.release.release_data import _share_analysis

    shared: dict[bytes, object] = {}
    first = _share_analysis({"analysis": {"chance": 0.5, "x": [1]}}, shared)
    second = _share_analysis({"analysis": {"chance": 0.5, "x": [1]}}, shared)
    other = _share_analysis({"analysis": {"chance": 0.5, "x": [True]}}, shared)
    assert second["analysis"] is first["analysis"]
    assert other["analysis"] is not first["analysis"] and other["analysis"]["x"] == [True]
