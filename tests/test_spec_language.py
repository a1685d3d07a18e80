"""The spec language: paradigms as YAML, designs and axes, transforms, balance and checks."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from conftest import run_cli
from memspec.core.rng import KeyedRandom
from memspec.core.transforms import TransformCall, get_transform, register_transform
from memspec.engine.generate import FamilyGenerator
from memspec.engine.render import Renderer
from memspec.spec.catalog import Catalog
from memspec.spec.instances import phase_messages
from memspec.spec.project import Project


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """An empty project with one new paradigm written in YAML only (no Python)."""
    root = tmp_path / "tree"
    (root / "templates").mkdir(parents=True)
    (root / "manifests").mkdir()
    write(root, "specs/paradigms/recall.yaml", """
        paradigm: lab.recall
        version: 1
        description: study a list, then name one of its items
        phases:
          - name: study
          - name: question
        axes:
          cue: [first, last]
        scorers: [exact, choice]
        checks:
          - kind: message_count
            phase: question
            equals: 1
        """)
    write(root, "specs/pools/words.yaml", """
        pool: lab.words
        description: plain nouns
        items: [apple, brick, cloud, drum, engine, fern, glove, harp, iris, jar, kettle, lamp]
        """)
    write(root, "templates/lab/study.j2", """
        {% message "user" %}Remember these words: {{ words | join(", ") }}.{% endmessage %}
        {% message "assistant" %}Noted.{% endmessage %}
        """)
    write(root, "specs/families/lab/recall_words.yaml", """
        family: lab.recall.words
        version: 1
        paradigm: lab.recall
        description: name the first or last word of a studied list
        slots:
          words: {from: pools/words.yaml, count: 4}
          target: {expr: "words[0] if false else words"}
        phases:
          study: lab/study.j2
          question:
            messages:
              - role: user
                text: "Which word came {{ variant.cue }}?"
        answer:
          scorer: exact
          gold: "{{ words[0] if variant.cue == 'first' else words[-1] }}"
          distractors:
            other_end: "{{ words[-1] if variant.cue == 'first' else words[0] }}"
        """)
    return root


def test_a_paradigm_written_in_yaml_generates_without_python(tree: Path) -> None:
    result = run_cli("validate", root=tree)
    assert result.returncode == 0, result.stderr
    out = run_cli("generate", "lab.recall.words", "--groups", "3", "--seed", "5", root=tree)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["variant"] for r in rows] == ["first", "last"] * 3
    assert [r["id"] for r in rows][:2] == ["lab.recall.words-00000-first",
                                          "lab.recall.words-00000-last"]
    for row in rows:
        assert row["paradigm"] == "lab.recall"
        assert [p["phase"] for p in row["phases"]] == ["study", "question"]
        words = row["phases"][0]["messages"][0]["content"].split(": ")[1].rstrip(".").split(", ")
        expected = words[0] if row["axes"]["cue"] == "first" else words[-1]
        assert row["answer"]["gold"] == expected


def test_paradigm_invariants_apply_to_every_family(tree: Path) -> None:
    family = tree / "specs/families/lab/recall_words.yaml"
    text = family.read_text()
    line = '        text: "Which word came {{ variant.cue }}?"'
    assert line in text
    family.write_text(text.replace(
        line, line + '\n      - role: user\n        text: "Take your time."'))
    result = run_cli("validate", root=tree)
    assert result.returncode == 1
    assert "check message_count failed" in result.stderr
    assert "specs/paradigms/recall.yaml:" in result.stderr
    assert "phase 'question' has 2 messages" in result.stderr


def test_designs_transforms_and_balance(tree: Path) -> None:
    write(tree, "specs/families/lab/pick.yaml", """
        family: lab.recall.pick
        version: 1
        paradigm: lab.recall
        description: pick the studied word among three, under every rotation
        slots:
          words: {from: pools/words.yaml, count: 3}
          options: {expr: "words"}
          keeper: {balanced: [north, south, east, west]}
          partner: {value: nobody}
        designs:
          main:
            axes:
              cue: [first, last]
              rotation:
                values: [r0, r1, r2]
                transform: {name: rotate, args: {slot: options}}
          swapped:
            axes:
              cue:
                values: [first, last]
                transforms:
                  last: {name: swap, args: {slots: [keeper, partner]}}
        phases:
          study:
            messages:
              - {role: user, text: "Keep {{ words[0] }} in mind ({{ keeper }}, {{ partner }})."}
          question:
            messages:
              - role: user
                text: >-
                  Which was it?
                  {% for o in options %}{{ loop.index0 | letter }}) {{ o }} {% endfor %}
        answer:
          scorer: choice
          options: options
          gold: "{{ words[0] }}"
        checks:
          - kind: balanced
            when: {rotation: [r0, r1, r2]}
            of: instance.answer.gold_index
            values: [0, 1, 2]
        """)
    project = Project(tree)
    family = Catalog.load(project).family("lab.recall.pick")
    generator = FamilyGenerator(family, Renderer(project), seed=3)
    groups = list(generator.groups(8))
    first = groups[0]
    assert [i["variant"] for i in first] == [
        "main.first.r0", "main.first.r1", "main.first.r2", "main.last.r0", "main.last.r1",
        "main.last.r2", "swapped.first", "swapped.last"]
    options = [i["answer"]["options"] for i in first[:3]]
    assert options[1] == options[0][1:] + options[0][:1]
    assert options[2] == options[0][2:] + options[0][:2]
    assert [i["answer"]["gold_index"] for i in first[:3]] == [0, 2, 1]
    study = {i["variant"]: phase_messages(i, "study")[0]["content"] for i in first}
    keeper = study["swapped.first"].split("(")[1].split(",")[0]
    assert study["swapped.last"].endswith(f"(nobody, {keeper}).")
    keepers = Counter(phase_messages(g[0], "study")[0]["content"].split("(")[1].split(",")[0]
                      for g in groups)
    assert keepers == {"north": 2, "south": 2, "east": 2, "west": 2}


def test_a_registered_transform_is_usable_from_yaml(tree: Path) -> None:
    @register_transform("upper_case_test_only",
                        lambda args, slots: [] if args.get("slot") in slots else ["bad slot"])
    def upper(context: dict, call: TransformCall) -> None:
        context[call.args["slot"]] = [w.upper() for w in context[call.args["slot"]]]

    family = tree / "specs/families/lab/recall_words.yaml"
    family.write_text(family.read_text().replace("description: name the first", textwrap.dedent("""\
        designs:
          main:
            axes:
              cue:
                values: [first, last]
                transforms:
                  last: {name: upper_case_test_only, args: {slot: words}}
        description: name the first""")))
    project = Project(tree)
    spec = Catalog.load(project).family("lab.recall.words")
    first, last = FamilyGenerator(spec, Renderer(project), seed=1).group(0)
    assert last["answer"]["gold"] == last["answer"]["gold"].upper()
    assert first["answer"]["gold"] == first["answer"]["gold"].lower()


def test_identical_across_catches_arms_that_differ(tmp_path: Path, project_copy: Path) -> None:
    probe = project_copy / "specs/families/example/fog_priming.yaml"
    probe.write_text(probe.read_text().replace(
        'text: "Write a short poem of about eight lines about {{ subject }}."',
        'text: "Write a short poem ({{ variant.arm }}) about {{ subject }}."'))
    result = run_cli("validate", str(probe), root=project_copy)
    assert result.returncode == 1
    assert "check identical_across failed" in result.stderr
    assert "interference, probe differ across arm" in result.stderr


def test_control_arm_leaking_the_theme_is_caught(project_copy: Path) -> None:
    template = project_copy / "templates/example/fog_priming/priming.j2"
    template.write_text(template.read_text().replace(
        "Keep the sheet's date columns", "Keep the harbour sheet's date columns"))
    # The family that renders the template (not all 268 of the project: many times the cost).
    result = run_cli("validate", str(project_copy / "specs/families/example/fog_priming.yaml"),
                     root=project_copy)
    assert result.returncode == 1
    assert "forbidden word 'harbour'" in result.stderr
    assert "the control arm must carry no trace of the theme" in result.stderr


def test_duplicate_content_across_a_release_is_refused(project_copy: Path) -> None:
    release = project_copy / "specs/releases/example-v1.yaml"
    text = release.read_text().replace("version: v1", "version: v99")
    text = text.replace("groups: 12", "groups: 400")
    (project_copy / "specs/releases/example-v99.yaml").write_text(text)
    result = run_cli("freeze", "example-v99", "--out", str(project_copy / "out"),
                     root=project_copy)
    assert result.returncode == 1
    assert "duplicate content: example.priming.harbour_fog-" in result.stderr
    assert not (project_copy / "manifests/example-v99.json").exists()
    assert not (project_copy / "out/example-v99").exists()


def test_tables_and_slots_shared_across_groups(tree: Path) -> None:
    write(tree, "specs/families/lab/log.yaml", """
        family: lab.recall.log
        version: 1
        paradigm: lab.recall
        description: a shared log of who handled which word, probed one row per group
        slots:
          corpus: {expr: "'A' if group < 4 else 'B'"}
          people: {from: pools/words.yaml, count: 3, shared_by: [corpus]}
          log:
            shared_by: [corpus]
            table:
              rows: 12
              columns:
                who: {of: people, balanced: true}
                item: {from: pools/words.yaml}
                day: {range: [1, 4], balanced: true}
                twice: {expr: "index * 2"}
                label: {expr: "row.who ~ '/' ~ row.item"}
          probe: {expr: "log[group % 4]"}
          guess: {of: people}
        phases:
          study:
            messages:
              - {role: user, text: "{{ log | tojson }}"}
          question:
            messages:
              - {role: user, text: "Who handled {{ probe.item }} ({{ variant.cue }})?"}
        answer:
          scorer: exact
          gold: "{{ probe.who }}"
        fields:
          corpus: "{{ corpus }}"
          guess: "{{ guess }}"
        """)
    project = Project(tree)
    family = Catalog.load(project).family("lab.recall.log")
    groups = list(FamilyGenerator(family, Renderer(project), seed=11).groups(8))
    logs = {g[0]["group"]: json.loads(phase_messages(g[0], "study")[0]["content"])
            for g in groups}
    assert all(logs[g] == logs[0] for g in range(4))
    assert all(logs[g] == logs[4] for g in range(4, 8))
    assert logs[0] != logs[4]
    for log in (logs[0], logs[4]):
        people = sorted({row["who"] for row in log})
        assert len(people) == 3
        # Balanced in blocks of three rows: every prefix of 3k rows holds each person k times.
        for k in (1, 2, 3, 4):
            assert Counter(row["who"] for row in log[:3 * k]) == {p: k for p in people}
        assert Counter(row["day"] for row in log) == {1: 3, 2: 3, 3: 3, 4: 3}
        assert len({row["item"] for row in log}) == 12
        assert [row["twice"] for row in log] == list(range(0, 24, 2))
        assert all(row["label"] == f"{row['who']}/{row['item']}" for row in log)
    # Per-group draws still vary from group to group, and only among the shared people.
    guesses = [g[0]["fields"]["guess"] for g in groups[:4]]
    assert set(guesses) <= {row["who"] for row in logs[0]}
    again = list(FamilyGenerator(family, Renderer(project), seed=11).groups(8))
    assert again == groups
    other_seed = list(FamilyGenerator(family, Renderer(project), seed=12).groups(8))
    assert other_seed != groups


def _call(args: dict, key: str = "v1") -> TransformCall:
    return TransformCall("doc", key, 0, args, KeyedRandom(5, ("test", key)))


LOG = [{"day": d, "who": w, "where": p, "what": t} for d, w, p, t in [
    (1, "Ann Lee", "Mill Cafe", "kites"), (1, "Bob Orr", "Dock Yard", "rain"),
    (2, "Ann Lee", "Dock Yard", "jam"), (3, "Cy Tam", "Mill Cafe", "bees"),
    (4, "Bob Orr", "Old Library", "fog"), (5, "Cy Tam", "Dock Yard", "tea"),
    (6, "Ann Lee", "Old Library", "bikes"), (7, "Dee Fox", "Mill Cafe", "snow")]]


def test_counterfeit_replaces_every_entity_consistently_and_matches_length() -> None:
    strangers = ["Eve Roe", "Fay Ng", "Gus Haverford", "Hal Sun", "Ivy Kim", "Jo Pike",
                 "Kit Moss", "Lu Zhou", "Ann Lee"]
    venues = ["Salt Pier", "Glass Works", "New Library", "Bay Kiosk", "Hill Barn"]
    forgeries = []
    for key in ("v1", "v2", "v3"):
        context = {"log": [dict(r) for r in LOG], "strangers": strangers, "venues": venues}
        get_transform("counterfeit").apply(context, _call(
            {"slot": "log", "fields": {"who": "strangers", "where": "venues"}}, key))
        fake = context["log"]
        forgeries.append(fake)
        assert {r["who"] for r in fake}.isdisjoint({r["who"] for r in LOG})
        assert {r["where"] for r in fake}.isdisjoint({r["where"] for r in LOG})
        mapping = {(a["who"], b["who"]) for a, b in zip(LOG, fake, strict=True)}
        assert len(mapping) == len({r["who"] for r in LOG})  # one to one, consistent
        assert [(r["day"], r["what"]) for r in fake] == [(r["day"], r["what"]) for r in LOG]
        assert all(abs(len(a["who"]) - len(b["who"])) <= 1 for a, b in zip(LOG, fake,
                                                                            strict=True))
        assert context["log"] is not LOG and LOG[0]["who"] == "Ann Lee"
    assert len({json.dumps(f) for f in forgeries}) > 1, "another stream, another forgery"
    with pytest.raises(ValueError, match="candidates unused"):
        get_transform("counterfeit").apply(
            {"log": LOG, "few": ["Zed Poe"]}, _call({"slot": "log", "fields": {"who": "few"}}))


def test_scramble_and_rebind_break_bindings_and_keep_entries() -> None:
    context = {"log": [dict(r) for r in LOG]}
    get_transform("scramble").apply(context, _call(
        {"slot": "log", "fields": ["who", "where"], "key": ["day", "who", "where"]}))
    triples = {(r["day"], r["who"], r["where"]) for r in LOG}
    assert not triples & {(r["day"], r["who"], r["where"]) for r in context["log"]}
    for column in ("who", "where", "day", "what"):
        assert Counter(r[column] for r in context["log"]) == Counter(r[column] for r in LOG)
    context = {"log": [dict(r) for r in LOG], "pair": ["Ann Lee", "Bob Orr"]}
    get_transform("rebind").apply(context, _call({"slot": "log", "field": "who",
                                                  "values": "pair"}))
    swap = {"Ann Lee": "Bob Orr", "Bob Orr": "Ann Lee"}
    assert [r["who"] for r in context["log"]] == [swap.get(r["who"], r["who"]) for r in LOG]


def test_an_unknown_transform_is_located_and_the_known_ones_named(project_copy: Path) -> None:
    family = project_copy / "specs" / "families" / "trustgap" / "preferred_language.yaml"
    text = family.read_text()
    family.write_text(text.replace("transform: {name: rotate,", "transform: {name: rotat,", 1))
    result = run_cli("validate", str(family), root=project_copy)
    assert result.returncode == 2
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if "name: rotate" in row)
    assert f"preferred_language.yaml:{line}:" in result.stderr
    assert "unknown transform 'rotat'; known transforms: counterfeit, rebind, rotate" \
        in result.stderr
