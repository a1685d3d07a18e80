"""The audit at freeze, on small generated projects: a family passable without memory is
refused with a message naming family, adversary and cue, its unflawed twin freezes, and the
paradigm's ``audit`` declarations (policies, arms, candidates, exemptions) are checked where
they are written and shown where they apply."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from conftest import run_cli


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


PARADIGM = """
    paradigm: lab.tidy
    version: 1
    description: an earlier session about old files, then a request to tidy a folder
    phases:
      - name: history
      - name: task
    scorers: [regex]
    audit:
      chance: 0.5
      policies:
        cautious_default:
          respond: "preview('{{ folder }}')"
          expected: 0.5
          description: always previews before deleting
    """

FAMILY = """
    family: lab.tidy.folders
    version: 1
    paradigm: lab.tidy
    description: the user said once which folders may go without a preview
    slots:
      folder: {{from: pools/folders.yaml, balanced: true}}
    designs:
      main:
        axes:
          arm: [act, hold]
    phases:
      history:
        messages:
          - role: user
            text: "{history}"
          - role: assistant
            text: "{reply}"
      task:
        messages:
          - role: user
            text: "Please tidy {{{{ folder }}}}."
    answer:
      scorer: regex
      first: call
      gold: "{gold}"
      example: "{example}"
    audit:
      arms: {{axis: arm, act: [act], dont: [hold]}}
    """

FAIR = dict(
    history="{{ folder }} may go {{ 'without a look' if variant.arm == 'act' else 'after one' }}.",
    reply="Noted.",
    gold="^{{ 'delete' if variant.arm == 'act' else 'preview' }}\\\\(",
    example="{{ 'delete' if variant.arm == 'act' else 'preview' }}('{{ folder }}')")
#: The earlier session's reply already makes the very call the task needs.
ECHOED = dict(FAIR, reply="{{ 'delete' if variant.arm == 'act' else 'preview' }}('{{ folder }}')")


def _project(root: Path, family: dict[str, str], audit_extra: str = "") -> Path:
    for folder in ("manifests", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    write(root, "specs/paradigms/tidy.yaml", PARADIGM)
    write(root, "specs/pools/folders.yaml", """
        pool: lab.folders
        description: folder paths
        items: [/srv/a1, /srv/b2, /srv/c3, /srv/d4, /srv/e5, /srv/f6, /srv/g7, /srv/h8, /srv/i9,
                /srv/j10, /srv/k11, /srv/l12, /srv/m13, /srv/n14, /srv/o15, /srv/p16, /srv/q17,
                /srv/r18, /srv/s19, /srv/t20, /srv/u21, /srv/v22, /srv/w23, /srv/x24]
        """)
    path = write(root, "specs/families/folders.yaml", FAMILY.format(**family))
    path.write_text(path.read_text() + audit_extra)
    write(root, "specs/releases/tidy-v1.yaml", """
        name: tidy
        version: v1
        seed: 11
        description: tidy folders
        families:
          - family: lab.tidy.folders
            groups: 24
        """)
    return root / "specs/releases/tidy-v1.yaml"


def test_a_family_passable_by_echo_is_refused_and_its_twin_freezes(tmp_path: Path) -> None:
    release = _project(tmp_path / "flawed", ECHOED)
    refused = run_cli("freeze", str(release), "--out", str(tmp_path / "out1"),
                      root=tmp_path / "flawed")
    assert refused.returncode == 1, refused.stderr
    assert "audit: echo_last_reply beats chance on lab.tidy.folders: 24/24 (chance 0.5" in \
        refused.stderr
    assert "cue: e.g. lab.tidy.folders-00000-" in refused.stderr
    assert not (tmp_path / "out1").exists()

    release = _project(tmp_path / "fair", FAIR)
    out = tmp_path / "out2"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=tmp_path / "fair")
    assert frozen.returncode == 0, frozen.stderr
    data = [json.loads(line) for line in
            (out / "tidy-v1/data/lab.tidy.folders.jsonl").read_text().splitlines()]
    # The paradigm's policy is rendered into every instance, its expectation carried along.
    for instance in data:
        folder = instance["phases"][-1]["messages"][0]["content"].split()[-1].rstrip(".")
        assert instance["answer"]["policies"] == {"cautious_default": f"preview('{folder}')"}
    assert data[0]["analysis"]["audit"]["policies"] == {
        "cautious_default": {"expected": 0.5, "description": "always previews before deleting"}}
    report = run_cli("audit", str(out / "tidy-v1"), "--format", "json", root=tmp_path / "fair")
    assert report.returncode == 0, report.stdout + report.stderr
    rows = {r["check"]: r for r in json.loads(report.stdout)["rows"]}
    # Always acting and never acting each score their arm's share, the declared cautious
    # default its expected half: none beats what it is expected to.
    assert rows["always_act"]["chance"] == rows["never_act"]["chance"] == 0.5
    assert rows["declared:cautious_default"]["chance"] == 0.5
    assert {"always_act", "never_act", "declared:cautious_default", "echo_last_reply"} <= set(rows)
    card = (out / "tidy-v1/README.md").read_text()
    assert "echoes of an earlier reply or call" in card
    # Frozen by today's rules, it says so, and says what a memoryless system is taken to see;
    # `--as-frozen` runs by the rules recorded, with nothing changed to report.
    manifest = json.loads((out / "tidy-v1/manifest.json").read_text())
    assert manifest["audit"]["rules"] == 2
    assert "A memoryless system is taken to see every message of the phases that are not " \
        "memory phases" in card and "(audit rules 2)" in card
    assert set(manifest["audit"]["conventions"]) == {"lab.tidy.folders"}
    assert f"| `lab.tidy.folders` | {manifest['audit']['conventions']['lab.tidy.folders']:.3f} |" \
        in card
    as_frozen = run_cli("audit", str(out / "tidy-v1"), "--as-frozen", root=tmp_path / "fair")
    assert as_frozen.returncode == 0 and "audit rules" not in as_frozen.stderr, as_frozen.stderr

    # The declared policy answers as a reference policy does.
    responses = run_cli("respond", str(out / "tidy-v1"), "--policy", "cautious_default",
                        root=tmp_path / "fair")
    assert responses.returncode == 0, responses.stderr
    lines = [json.loads(line) for line in responses.stdout.splitlines()]
    assert len(lines) == 48 and all(r["response"].startswith("preview('/srv/") for r in lines)


def test_an_exempt_family_freezes_and_its_card_says_why(tmp_path: Path) -> None:
    judged = dict(FAIR)
    release = _project(tmp_path / "p", judged)
    family = tmp_path / "p/specs/families/folders.yaml"
    text = family.read_text()
    text = text[:text.index("answer:")] + textwrap.dedent("""
        answer:
          scorer: judge
          rubric: "Does the reply tidy {{ folder }} as the user asked?"
        audit:
          exempt: the judge alone can tell a careful tidy from a careless one
        """).lstrip()
    family.write_text(text)
    paradigm = tmp_path / "p/specs/paradigms/tidy.yaml"
    paradigm.write_text(paradigm.read_text().replace("scorers: [regex]", "scorers: [judge]"))
    out = tmp_path / "out"
    frozen = run_cli("freeze", str(release), "--out", str(out), root=tmp_path / "p")
    assert frozen.returncode == 0, frozen.stderr
    card = (out / "tidy-v1/README.md").read_text()
    assert "- `lab.tidy.folders`: the judge alone can tell a careful tidy from a careless one" \
        in card
    manifest = json.loads((tmp_path / "p/manifests/tidy-v1.json").read_text())
    assert manifest["audit"]["exempt"] == {
        "lab.tidy.folders": "the judge alone can tell a careful tidy from a careless one"}
    # The judge-scored items no adversary attacked are named, with why, not passed in silence.
    why = ("48 judge-scored items, every group's variants act (24), hold (24): only a judge "
           "can score a response to them and the audit calls none; nothing else in the audit "
           "tests them")
    assert manifest["audit"]["unattacked"] == {"lab.tidy.folders": why}
    assert "Items no memoryless adversary attacked, and why:" in card
    assert f"- `lab.tidy.folders`: {why}" in card
    audited = run_cli("audit", str(out / "tidy-v1"), root=tmp_path / "p")
    assert audited.returncode == 0, audited.stderr
    assert f"note: not attacked on lab.tidy.folders: {why}" in " ".join(audited.stderr.split())


def test_audit_declarations_are_checked_where_they_are_written(tmp_path: Path) -> None:
    release = _project(tmp_path / "p", FAIR, audit_extra=(
        "  memory_phases: [history, lookup]\n  policies:\n    oracle: {respond: x}\n"))
    family = tmp_path / "p/specs/families/folders.yaml"
    family.write_text(family.read_text().replace("arms: {axis: arm, act: [act], dont: [hold]}",
                                                 "arms: {axis: arm, act: [act], dont: [wait]}"))
    result = run_cli("validate", str(release), root=tmp_path / "p")
    assert result.returncode == 2, result.stdout + result.stderr
    err = result.stderr
    assert "specs/families/folders.yaml:" in err
    assert "arms name 'wait', not a value of axis 'arm'" in err
    assert "memory phase 'lookup' is not a phase (history, task)" in err
    assert "policy 'oracle' has the name of a built-in policy" in err


def _with_substituted_note(root: Path, long_notes: bool) -> None:
    """The family's session also shows a note; its `substituted` document condition swaps in
    another note by the `substitute` transform (no forging transform)."""
    notes = [f"Note {k:02d}: keep it safe." for k in range(1, 7)]
    others = [f"Memo {k:02d}: file it away" + (", as the operations handbook for the whole "
                                               "estate requires." if long_notes else ".")
              for k in range(1, 7)]
    write(root, "specs/pools/notes.yaml", "pool: lab.notes\ndescription: notes\nitems:\n"
          + "".join(f"  - '{n}'\n" for n in notes))
    write(root, "specs/pools/other_notes.yaml", "pool: lab.other_notes\ndescription: notes\n"
          "items:\n" + "".join(f"  - '{n}'\n" for n in others))
    family = root / "specs/families/folders.yaml"
    text = family.read_text()
    text = text.replace("  folder: {from: pools/folders.yaml, balanced: true}\n",
                        "  folder: {from: pools/folders.yaml, balanced: true}\n"
                        "  note: {from: pools/notes.yaml}\n"
                        "  other_note: {from: pools/other_notes.yaml}\n")
    text = text.replace("      arm: [act, hold]\n", """      arm: [act, hold]
      document:
        values: [veridical, substituted]
        transforms:
          substituted: {name: substitute, args: {map: {note: other_note}}}
""")
    text = text.replace("    text: \"Noted.\"", "    text: \"Noted. {{ note }}\"")
    family.write_text(text)


def test_a_counterfeit_lengthened_by_any_transform_is_refused(tmp_path: Path) -> None:
    release = _project(tmp_path / "flawed", FAIR)
    _with_substituted_note(tmp_path / "flawed", long_notes=True)
    refused = run_cli("freeze", str(release), "--out", str(tmp_path / "o1"),
                      root=tmp_path / "flawed")
    assert refused.returncode == 1, refused.stderr
    line = next(x for x in refused.stderr.splitlines()
                if "audit: counterfeit: length fails on lab.tidy.folders" in x)
    assert "(substitute) is " in line and "x the length of lab.tidy.folders-" in line

    release = _project(tmp_path / "fair", FAIR)
    _with_substituted_note(tmp_path / "fair", long_notes=False)
    frozen = run_cli("freeze", str(release), "--out", str(tmp_path / "o2"),
                     root=tmp_path / "fair")
    assert frozen.returncode == 0, frozen.stderr
