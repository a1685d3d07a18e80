"""The spec language: paradigms as YAML, designs and axes, transforms, balance and checks."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from conftest import run_cli
from generator.catalog import Catalog
from generator.generate import FamilyGenerator
from generator.instances import phase_messages
from generator.project import Project
from generator.render import Renderer
from generator.transforms import TransformCall, register_transform


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
    result = run_cli("validate", root=project_copy)
    assert result.returncode == 1
    assert "check identical_across failed" in result.stderr
    assert "interference, probe differ across arm" in result.stderr


def test_control_arm_leaking_the_theme_is_caught(project_copy: Path) -> None:
    template = project_copy / "templates/example/fog_priming/priming.j2"
    template.write_text(template.read_text().replace(
        "Keep the sheet's date columns", "Keep the harbour sheet's date columns"))
    result = run_cli("validate", root=project_copy)
    assert result.returncode == 1
    assert "forbidden word 'harbour'" in result.stderr
    assert "the control arm must carry no trace of the theme" in result.stderr


def test_duplicate_content_across_a_release_is_refused(project_copy: Path) -> None:
    release = project_copy / "specs/releases/example-v1.yaml"
    text = release.read_text().replace("version: v1", "version: v5")
    text = text.replace("groups: 12", "groups: 400")
    (project_copy / "specs/releases/example-v5.yaml").write_text(text)
    result = run_cli("freeze", "example-v5", "--out", str(project_copy / "out"),
                     root=project_copy)
    assert result.returncode == 1
    assert "duplicate content: example.priming.harbour_fog-" in result.stderr
    assert not (project_copy / "manifests/example-v5.json").exists()
    assert not (project_copy / "out/example-v5").exists()
