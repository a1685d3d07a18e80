"""Properties over many generated inputs (hypothesis, derandomised so every run checks the same
examples): the canonical JSON writer, and the spec loader on valid and broken families."""

from __future__ import annotations

import copy
import json
import math
import sys
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memspec.cli.validate import validate
from memspec.core.canonical import (
    MAX_INT_DIGITS,
    CanonicalJSONError,
    PlainCopies,
    TextMemo,
    content_hash,
    dump_bytes,
    dump_instance_bytes,
    dump_pretty_bytes,
    dumps,
    json_key,
    normal_content_hash,
    normalize,
)
from memspec.core.errors import EXIT_BAD_INPUT, EXIT_OK
from memspec.engine.generate import FamilyGenerator
from memspec.engine.render import Renderer
from memspec.spec.catalog import Catalog
from memspec.spec.project import Project
from memspec.spec.schemas import validator

#: The same examples on every run and machine, no example database, no deadline (the machine
#: is shared): a stable check, not a search that finds something new each time.
STABLE = settings(derandomize=True, database=None, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ the canonical JSON writer

#: Text a canonical writer must treat with care: decomposed and precomposed letters, combining
#: marks, astral characters, compatibility characters NFC keeps, Hangul jamo NFC composes,
#: line endings.
TRICKY = ["e\u0301", "\u00e9", "\u0041\u030a", "\u212b", "\u00c5", "\u1100\u1161\u11a8",
          "\uac01", "\U0001f600", "\U0001d518", "\U0010fffd", "\ufb01", "\u0323\u0307",
          "\r\n", "\r", "\n", "\t", "\"", "\\", "\u2028", "\x00", " ", "\x7f",
          "\\u00e9", "u"]
TEXT = st.one_of(st.text(max_size=12),
                 st.lists(st.sampled_from(TRICKY), max_size=6).map("".join))
INTEGERS = st.one_of(st.integers(),
                     st.integers(min_value=-(10 ** MAX_INT_DIGITS - 1),
                                 max_value=10 ** MAX_INT_DIGITS - 1),
                     st.sampled_from([2 ** 53 + 1, -(2 ** 63), 2 ** 64, 10 ** MAX_INT_DIGITS - 1]))
SCALARS = st.one_of(st.none(), st.booleans(), INTEGERS, TEXT,
                    st.floats(allow_nan=False, allow_infinity=False))


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


def _distinct_keys(value: dict[str, Any]) -> bool:
    return len({_nfc(key) for key in value}) == len(value)


JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(TEXT, children, max_size=4).filter(_distinct_keys),
    max_leaves=12)


def _reordered(value: Any) -> Any:
    """The same value with every object's keys in the reverse order."""
    if isinstance(value, dict):
        return {key: _reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


@settings(STABLE, max_examples=300)
@given(JSON)
def test_canonical_bytes_are_one_line_stable_and_parse_back(value: Any) -> None:
    data = dump_bytes(value)
    assert data == dump_bytes(copy.deepcopy(value)) == dump_bytes(_reordered(value))
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    parsed = json.loads(data.decode("utf-8"))
    assert parsed == normalize(value)
    assert dump_bytes(parsed) == data  # writing what was read changes nothing
    assert content_hash(parsed) == content_hash(value)
    for text in _strings(parsed):
        assert "\r" not in text and unicodedata.is_normalized("NFC", text)
    assert json.loads(dump_pretty_bytes(value)) == parsed


@settings(STABLE, max_examples=300)
@given(JSON)
def test_canonical_bytes_are_what_the_standard_library_writes_with_the_canonical_options(
        value: Any) -> None:
    # The writer takes a quicker path for plain ASCII; whatever the text, the bytes must be
    # those of json.dumps with the options the format names, over the normalised value.
    expected = json.dumps(normalize(value), ensure_ascii=False, sort_keys=True,
                          separators=(",", ":"), allow_nan=False) + "\n"
    assert dump_bytes(value) == expected.encode("utf-8")


MESSAGES = st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": TEXT},
    optional={"name": st.one_of(TEXT, st.none()), "extra": JSON}), max_size=4)
#: Phases as instances hold them, and some that are not (another key, a list for messages):
#: those are written the long way, and must come out the same.
PHASES = st.lists(st.one_of(
    st.fixed_dictionaries({"phase": TEXT, "messages": MESSAGES}),
    st.fixed_dictionaries({"phase": TEXT, "messages": MESSAGES, "extra": JSON}),
    st.fixed_dictionaries({"phase": TEXT, "messages": JSON})), max_size=3)
INSTANCES = st.dictionaries(TEXT, JSON, max_size=5).filter(_distinct_keys).flatmap(
    lambda rest: st.one_of(PHASES, JSON).map(lambda phases: {**rest, "phases": phases}))


@settings(STABLE, max_examples=300)
@given(st.lists(INSTANCES, min_size=1, max_size=4), st.data())
def test_instances_written_with_kept_message_json_have_the_canonical_bytes(
        instances: list[dict[str, Any]], data: st.DataObject) -> None:
    # Messages met before (the same one in two instances, or twice in one) reuse their JSON:
    # every instance's bytes are still those of json.dumps with the canonical options.
    repeated = data.draw(st.sampled_from(instances))
    for instance in [*instances, repeated, copy.deepcopy(repeated)]:
        value = normalize(instance)
        expected = json.dumps(value, ensure_ascii=False, sort_keys=True,
                              separators=(",", ":"), allow_nan=False) + "\n"
        assert dump_instance_bytes(value) == expected.encode("utf-8")


def test_generated_lines_are_the_standard_librarys_bytes_floats_included(
        project_copy: Path) -> None:
    # Generated lines are written by orjson unchecked where the generator checked the parts
    # that are not rendered text; a float in one of them (a judge scale from 1e-05, which
    # orjson writes as 0.00001) must send them the standard library's way.
    from memspec.engine.parallel import chunk_jobs, render_chunk

    family_file = project_copy / "specs/families/example/meeting_room.yaml"
    text = family_file.read_text()
    for analysis, floats in (("", False), ("  judge_scale: [0.00001, 1]\n", True)):
        family_file.write_text(text.replace(
            "analysis:\n", f"analysis:\n{analysis}"), encoding="utf-8")
        project = Project(project_copy)
        family = Catalog.load(project).family("example.choice.meeting_room")
        generator = FamilyGenerator(family, Renderer(project), 5)
        lines = [line for job in chunk_jobs(project_copy, family, 5, 0, 12)
                 for line in render_chunk(job, generator).lines()]
        assert generator.json_checked is not floats
        for line in lines:
            expected = json.dumps(json.loads(line), ensure_ascii=False, sort_keys=True,
                                  separators=(",", ":"), allow_nan=False) + "\n"
            assert line == expected.encode("utf-8")
        assert (b'1e-05' in lines[0]) is floats


@settings(STABLE, max_examples=200)
@given(TEXT, JSON)
def test_every_normal_form_of_a_text_gives_the_same_bytes(text: str, other: Any) -> None:
    forms = {form: unicodedata.normalize(form, text) for form in ("NFC", "NFD")}
    outputs = {dump_bytes([form_text, {form_text: other}]) for form_text in
               (text, *forms.values())}
    assert len(outputs) == 1
    if forms["NFC"] != forms["NFD"]:
        with pytest.raises(CanonicalJSONError, match="collide"):
            dump_bytes({forms["NFC"]: 1, forms["NFD"]: 2})


def _plant(container: Any, bad: Any, where: int) -> Any:
    """``container`` (a JSON value) with ``bad`` put somewhere inside it."""
    if isinstance(container, dict) and container:
        key = sorted(container)[where % len(container)]
        return {**container, key: _plant(container[key], bad, where // 2)}
    if isinstance(container, list) and container:
        index = where % len(container)
        return [*container[:index], _plant(container[index], bad, where // 2),
                *container[index + 1:]]
    return [container, bad] if where % 2 else {"planted": bad, "beside": container}


UNWRITABLE = st.one_of(
    st.sampled_from([math.nan, -math.nan, math.inf, -math.inf]),
    st.sampled_from(["\ud800", "a\udfffb", "\udbff\udc00"]),  # lone surrogates
    st.integers(min_value=10 ** MAX_INT_DIGITS, max_value=10 ** (MAX_INT_DIGITS + 4000)),
    st.integers(max_value=-(10 ** MAX_INT_DIGITS), min_value=-(10 ** 5000)),
    st.sampled_from([{1: "x"}, {(1, 2): "x"}, {"s": {1, 2}}, b"bytes", object()]),
)


@settings(STABLE, max_examples=200)
@given(JSON, UNWRITABLE, st.integers(min_value=0, max_value=1000))
def test_values_without_a_canonical_form_are_refused_wherever_they_sit(
        container: Any, bad: Any, where: int) -> None:
    planted = _plant(container, bad, where)
    for write in (dump_bytes, dump_pretty_bytes, content_hash):
        with pytest.raises(CanonicalJSONError):
            write(planted)


def test_the_zero_has_one_form_and_long_integers_none() -> None:
    assert dump_bytes([-0.0, 0.0]) == b"[0.0,0.0]\n"
    # The most digits every interpreter prints, whatever its PYTHONINTMAXSTRDIGITS: the
    # lowest limit it may be set to, which the interpreter states itself.
    digits = sys.int_info.str_digits_check_threshold
    assert dump_bytes(10 ** digits - 1) == (("9" * digits) + "\n").encode()
    assert dump_bytes(-(10 ** digits - 1)) == (("-" + "9" * digits) + "\n").encode()
    for too_long in (10 ** digits, -(10 ** digits)):
        with pytest.raises(CanonicalJSONError, match=f"^an integer of more than {digits} "
                                                     "digits has no canonical JSON form$"):
            dump_bytes(too_long)


# --------------------------------------------------------------------------- the spec loader

PARADIGM = "demo.prop"
#: Words of literal message text: letters of several scripts, no template syntax.
WORDS = st.text(alphabet=st.sampled_from("abcdefxyz ÅéßЖж日本 "), min_size=1, max_size=8)
POOL_ITEMS = st.lists(
    st.text(alphabet=st.sampled_from("abcdxyzéÅЖ日\u0301- "), min_size=1, max_size=10)
    .map(str.strip).filter(bool), min_size=2, max_size=6,
    unique_by=lambda text: unicodedata.normalize("NFC", text))
SLOT_NAMES = st.lists(st.sampled_from(["colour", "city", "n", "pet", "tool", "word"]),
                      min_size=1, max_size=4, unique=True)


@st.composite
def projects(draw: st.DrawFn) -> dict[str, Any]:
    """A small valid project: a paradigm with 1-3 phases, pools, and a family whose slots draw
    from the pools (or a list, a range, a fixed value), whose phases' messages use the slots,
    and whose answer is the first slot."""
    phases = draw(st.lists(st.sampled_from(["setup", "middle", "probe"]), min_size=1,
                           max_size=3, unique=True))
    names = draw(SLOT_NAMES)
    pools: dict[str, list[str]] = {}
    slots: dict[str, Any] = {}
    for index, name in enumerate(names):
        kind = "from" if index == 0 else draw(st.sampled_from(["from", "choice", "range",
                                                                 "value"]))
        if kind == "from":
            pools[f"pools/p{index}.yaml"] = draw(POOL_ITEMS)
            slots[name] = {"from": f"pools/p{index}.yaml"}
        elif kind == "choice":
            slots[name] = {"choice": draw(POOL_ITEMS)}
        elif kind == "range":
            low = draw(st.integers(-50, 50))
            slots[name] = {"range": [low, low + draw(st.integers(0, 9))]}
        else:
            slots[name] = {"value": draw(WORDS.map(str.strip).filter(bool))}
    messages = {}
    for phase in phases:
        messages[phase] = {"messages": [
            {"role": draw(st.sampled_from(["user", "assistant"])),
             "text": " ".join(draw(st.lists(
                 st.one_of(WORDS, st.sampled_from(names).map(lambda n: f"{{{{ {n} }}}}")),
                 min_size=1, max_size=5))) + f" {{{{ {names[0]} }}}}"}
            for _ in range(draw(st.integers(1, 3)))]}
    family = {"family": "demo.prop.generated", "version": draw(st.integers(1, 9)),
              "paradigm": PARADIGM, "description": "generated by a property test",
              "slots": slots, "phases": messages,
              "answer": {"scorer": "exact", "gold": f"{{{{ {names[0]} }}}}"}}
    return {"phases": phases, "pools": pools, "family": family,
            "groups": draw(st.integers(1, 3)), "seed": draw(st.integers(0, 2 ** 32))}


def _write(root: Path, project: dict[str, Any], family: dict[str, Any]) -> Path:
    def dump(relative: str, data: Any) -> None:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
                        encoding="utf-8")

    (root / "templates").mkdir(parents=True, exist_ok=True)
    dump("specs/paradigms/prop.yaml", {
        "paradigm": PARADIGM, "version": 1, "description": "phases of a property test",
        "phases": [{"name": name} for name in project["phases"]], "scorers": ["exact"]})
    for relative, items in project["pools"].items():
        dump(f"specs/{relative}", {"pool": "demo.prop." + Path(relative).stem,
                                   "description": "items", "items": items})
    dump("specs/families/generated.yaml", family)
    return root


@settings(STABLE, max_examples=60)
@given(projects())
def test_valid_families_generate_schema_valid_instances(project: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = _write(Path(tmp), project, project["family"])
        catalog = Catalog.load(Project(root))
        report = validate(catalog)
        assert report.exit_code == EXIT_OK, [str(p) for p in report.problems]
        family = catalog.family("demo.prop.generated")
        generator = FamilyGenerator(family, Renderer(catalog.project), project["seed"])
        first = [generator.group(g) for g in range(project["groups"])]
        again = FamilyGenerator(family, Renderer(catalog.project), project["seed"])
        assert [dump_bytes(i) for i in first[-1]] == \
            [dump_bytes(i) for i in again.group(project["groups"] - 1)]
    first_slot = next(iter(project["family"]["slots"].values()))
    golds = {unicodedata.normalize("NFC", item) for item in project["pools"][first_slot["from"]]}
    for group, instances in enumerate(first):
        for instance in instances:
            assert not list(validator("instance").iter_errors(instance))
            assert instance["group"] == group
            assert [p["phase"] for p in instance["phases"]] == project["phases"]
            gold = instance["answer"]["gold"]
            assert gold in golds
            assert all(gold in m["content"] for p in instance["phases"] for m in p["messages"])


def _mutations(family: dict[str, Any], names: list[str]) -> list[tuple[str, Any]]:
    """Every single-point change that must make the family invalid: (label, edit); an edit
    takes the family's dict and changes it in place."""
    first_phase = next(iter(family["phases"]))

    def set_at(path: tuple, value: Any) -> Any:
        def edit(data: dict[str, Any]) -> None:
            target = data
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        return edit

    def delete(path: tuple) -> Any:
        def edit(data: dict[str, Any]) -> None:
            target = data
            for key in path[:-1]:
                target = target[key]
            del target[path[-1]]
        return edit

    message = ("phases", first_phase, "messages", 0)
    slot = ("slots", names[0])
    out: list[tuple[str, Any]] = []
    for key in ("family", "version", "paradigm", "description", "phases", "answer", "slots"):
        out.append((f"delete {key}", delete((key,))))
    out += [
        ("delete answer.scorer", delete(("answer", "scorer"))),
        ("delete answer.gold", delete(("answer", "gold"))),
        ("delete message role", delete((*message, "role"))),
        ("delete message text", delete((*message, "text"))),
        ("delete the slot's source", delete((*slot, "from"))),
        ("delete a phase", delete(("phases", first_phase))),
    ]
    wrong = [(("version",), "one"), (("version",), 1.5), (("version",), [1]),
             (("family",), 7), (("family",), "Not An Id"), (("slots",), [names[0]]),
             (("phases",), "setup"), (("phases", first_phase), 5),
             (("phases", first_phase, "messages"), {"role": "user"}),
             ((*message, "text"), 7), ((*message, "text"), None),
             ((*message, "role"), "narrator"), (("answer",), "gold"),
             (("answer", "scorer"), "telepathy"), (slot, "pools/p0.yaml"),
             ((*slot, "from"), 3), (("description",), ""), (("answer", "gold"), "")]
    out += [(f"{'.'.join(map(str, path))} = {value!r}", set_at(path, value))
            for path, value in wrong]
    for path in ((), slot, ("answer",), message, ("phases", first_phase)):
        out.append((f"unknown key in {'.'.join(map(str, path)) or 'the top'}",
                    set_at((*path, "colour_of_the_sky"), "blue")))
    for broken in ("{{ " + names[0], "{% if x %}open", "{{ " + names[0] + " | no_such }}",
                   "{% for %}", "{{ }}", "{# unclosed", "{% endif %}", "{{ a.b( }}",
                   "{single} brace"):
        out.append((f"template {broken!r}", set_at((*message, "text"), broken)))
    out += [
        ("undefined name in a message", set_at((*message, "text"), "{{ nowhere }}")),
        ("undefined name in the gold", set_at(("answer", "gold"), "{{ nowhere }}")),
        ("missing pool", set_at((*slot, "from"), "pools/missing.yaml")),
        ("pool outside the tree", set_at((*slot, "from"), "../../outside.yaml")),
        ("unknown paradigm", set_at(("paradigm",), "demo.nowhere")),
        ("distinct_from an unknown slot", set_at((*slot, "distinct_from"), ["nowhere"])),
        ("a phase the paradigm lacks", set_at(("phases", "epilogue"),
                                               {"messages": [{"role": "user", "text": "x"}]})),
        ("a reserved slot name", set_at(("slots", "group"), {"value": 1})),
        ("an empty message", set_at((*message, "text"), "   ")),
    ]
    return out


#: The mutations, labelled, for a family shaped like every generated one (the edits name the
#: first phase and slot of the family they are applied to).
MUTATION_LABELS = [label for label, _ in _mutations(
    {"phases": {"setup": {"messages": [{"role": "user", "text": "x"}]}}}, ["colour"])]


@pytest.mark.parametrize("index", range(len(MUTATION_LABELS)), ids=MUTATION_LABELS)
@settings(STABLE, max_examples=3)
@given(project=projects())
def test_every_broken_family_is_a_located_error_never_a_crash(project: dict[str, Any],
                                                              index: int) -> None:
    family = copy.deepcopy(project["family"])
    label, edit = _mutations(family, list(family["slots"]))[index]
    edit(family)
    with tempfile.TemporaryDirectory() as tmp:
        root = _write(Path(tmp), project, family)
        report = validate(Catalog.load(Project(root)))
    assert report.exit_code == EXIT_BAD_INPUT, f"{label}: {report.exit_code} {report.problems}"
    assert report.problems, label
    assert all(p.file and p.file.startswith("specs/families/generated.yaml")
               for p in report.problems), f"{label}: {[str(p) for p in report.problems]}"


@settings(STABLE, max_examples=300)
@given(INSTANCES)
def test_a_normal_record_has_its_canonical_bytes_and_hash_without_normalising_again(
        instance: dict[str, Any]) -> None:
    # What memspec wrote is normal: hashed and written again unnormalised (its messages
    # checked in C, a message's name may be null as in a Parquet row), it gives the bytes
    # and the content hash of the canonical writer.
    normal = normalize(instance)
    assert normal_content_hash(normal) == content_hash(instance)
    assert dump_instance_bytes(normal) == dump_bytes(instance)


#: Values that compare equal across types (0 == 0.0 == -0.0 == False, 1 == 1.0 == True) or
#: that orjson writes alike (null for None, NaN and infinity; a list and a tuple).
LOOKALIKES = st.recursive(
    st.sampled_from([0, 0.0, -0.0, 1, 1.0, True, False, None, math.nan, math.inf, "1",
                     "null", 1e16, 10 ** 16]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2),
    max_leaves=6)


def _typed(value: Any) -> Any:
    """A value with each scalar paired with its type: equal only for the same value of the
    same types (``1 == 1.0 == True``, but not their typed forms)."""
    if isinstance(value, dict):
        return ("dict", sorted((key, _typed(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    return (type(value).__name__, repr(value))


@settings(STABLE, max_examples=500)
@given(LOOKALIKES, LOOKALIKES)
def test_values_with_one_json_key_are_the_same_values_of_the_same_types(
        first: Any, second: Any) -> None:
    key = json_key(first)
    if key is not None and key == json_key(second):
        assert _typed(first) == _typed(second)
    assert json_key(first) == json_key(copy.deepcopy(first))


@settings(STABLE, max_examples=200)
@given(st.lists(st.one_of(JSON, LOOKALIKES), max_size=6), st.data())
def test_a_text_memo_writes_what_dumps_writes(values: list[Any], data: st.DataObject) -> None:
    memo = TextMemo()
    for value in [*values, *data.draw(st.lists(st.sampled_from(values or [0]), max_size=4))]:
        try:
            expected = dumps(value)
        except CanonicalJSONError:
            with pytest.raises(CanonicalJSONError):
                memo(value)
        else:
            assert memo(value) == expected


@settings(STABLE, max_examples=300)
@given(st.lists(st.tuples(INSTANCES, JSON), min_size=1, max_size=4), st.data())
def test_an_instance_written_with_its_analysis_apart_has_the_canonical_bytes(
        pairs: list[tuple[dict[str, Any], Any]], data: st.DataObject) -> None:
    # The analysis block (floats and all) written once through a memo and set first in the
    # line, the rest by orjson: the bytes of the canonical writer, for blocks met again and
    # for instances with a key that sorts before "analysis" (written whole).
    memo = TextMemo()
    instances = [normalize({**instance, "analysis": analysis}) for instance, analysis in pairs]
    for instance in [*instances, data.draw(st.sampled_from(instances))]:
        assert dump_instance_bytes(instance, repeated=memo) == dump_bytes(instance)


@settings(STABLE, max_examples=300)
@given(st.one_of(JSON, LOOKALIKES,
                 st.tuples(LOOKALIKES, LOOKALIKES).map(lambda pair: {"pair": pair})))
def test_plain_copies_are_the_value_part_for_part_and_share_nothing(value: Any) -> None:
    # Each copy is the value to the type of every part (1, 1.0 and True apart; a NaN, a
    # tuple, an integer beyond 64 bits copied the long way), with its keys in order, and a
    # change to one copy reaches neither the value nor the next copy.
    original = copy.deepcopy(value)
    copies = PlainCopies(value)
    first = copies()
    assert _typed(first) == _typed(value)
    assert not isinstance(value, (dict, list)) or first is not value
    if isinstance(first, dict):
        assert list(first) == list(value)
        first["added"] = 1
    elif isinstance(first, list):
        first.append(1)
    assert _typed(copies()) == _typed(original) == _typed(value)
