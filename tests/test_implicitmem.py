"""The bundled implicit-memory release, asserted on the built files (not on the specs)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from conftest import run_cli
from memspec.engine.checks import approx_tokens
from memspec.spec.instances import phase_messages

RELEASE = "implicitmem-v1"
PARADIGMS = {"implicitmem.procedural": "procedural_memory",
             "implicitmem.conditioning": "classical_conditioning",
             "implicitmem.priming": "priming"}



def test_families_and_groups_per_paradigm(instances: list[dict]) -> None:
    families: dict[str, set[str]] = defaultdict(set)
    groups: Counter = Counter()
    for inst in instances:
        families[inst["paradigm"]].add(inst["family"])
    for paradigm in PARADIGMS:
        units = {(i["family"], i["group"]) for i in instances if i["paradigm"] == paradigm}
        groups[paradigm] = len(units)
    assert sum(len(f) for f in families.values()) >= 18
    assert all(len(families[p]) >= 6 for p in PARADIGMS), families
    assert groups == {p: 100 for p in PARADIGMS}


def test_procedural_items_have_fifteen_long_interference_turns(instances: list[dict]) -> None:
    procedural = [i for i in instances if i["paradigm"] == "implicitmem.procedural"]
    assert len(procedural) == 100
    for inst in procedural:
        turns = phase_messages(inst, "interference")
        assert len(turns) == 30
        assert [m["role"] for m in turns] == ["user", "assistant"] * 15
        assert approx_tokens("\n".join(m["content"] for m in turns)) >= 500
        assert len(phase_messages(inst, "probe")) == 1


def test_priming_pairs_share_interference_and_probe(instances: list[dict]) -> None:
    pairs: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for inst in instances:
        if inst["paradigm"] == "implicitmem.priming":
            pairs[(inst["family"], inst["group"])][inst["axes"]["arm"]] = inst
    assert len(pairs) == 100
    for arms in pairs.values():
        experimental, control = arms["experimental"], arms["control"]
        for phase in ("interference", "probe"):
            assert phase_messages(experimental, phase) == phase_messages(control, phase)
        assert len(phase_messages(experimental, "interference")) == 2
        assert phase_messages(experimental, "priming") != phase_messages(control, "priming")


def test_no_two_groups_share_a_probe(instances: list[dict]) -> None:
    probes: dict[str, tuple] = {}
    for inst in instances:
        text = phase_messages(inst, "probe")[0]["content"]
        unit = (inst["family"], inst["group"])
        assert probes.setdefault(text, unit) == unit, f"{unit} repeats the probe of {probes[text]}"


def test_conditioning_probes_bring_the_cue_back_without_hints(instances: list[dict]) -> None:
    conditioning = [i for i in instances if i["paradigm"] == "implicitmem.conditioning"]
    assert len(conditioning) == 100
    for inst in conditioning:
        assert 4 <= len(phase_messages(inst, "interference")) <= 6
        assert inst["answer"]["scorer"] != "judge"


def _score(release: Path, policy: str, tmp_path: Path) -> dict:
    responses = tmp_path / f"{policy}.jsonl"
    assert run_cli("respond", str(release), "--policy", policy, "--out",
                   str(responses)).returncode == 0
    result = run_cli("score", str(release), str(responses), "--by", "paradigm", "--format",
                     "json")
    assert result.returncode == 0, result.stderr
    return {g["key"]["paradigm"]: g["metrics"] for g in json.loads(result.stdout)["groups"]}


def test_oracle_is_perfect_and_memoryless_far_lower(release: Path, tmp_path: Path) -> None:
    oracle = _score(release, "oracle", tmp_path)
    memoryless = _score(release, "memoryless", tmp_path)
    for paradigm in ("implicitmem.procedural", "implicitmem.conditioning"):
        assert oracle[paradigm]["accuracy"] == 1.0
        assert memoryless[paradigm]["accuracy"] <= 0.2, (paradigm, memoryless[paradigm])
    assert oracle["implicitmem.priming"]["accuracy"] is None


def test_export_in_the_public_layout_passes_the_upstream_checks(release: Path,
                                                                 tmp_path: Path) -> None:
    from upstream_checks import implicitmembench_problems

    out = tmp_path / "imb"
    result = run_cli("export", str(release), "--format", "implicitmembench", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert implicitmembench_problems(out) == []
    totals: Counter = Counter()
    for paradigm, folder in PARADIGMS.items():
        files = sorted((out / "dataset" / folder).glob("*.json"))
        assert len(files) >= 6
        for path in files:
            data = json.loads(path.read_text())
            totals[paradigm] += data["task_count"]
            assert [i["task_id"] for i in data["instances"]] == [
                f"{n:03d}" for n in range(1, data["task_count"] + 1)]
            for item in data["instances"]:
                if paradigm == "implicitmem.priming":
                    assert item["experimental_instance"]["test_probe"] == \
                        item["control_instance"]["test_probe"]
                    assert item["selected_probe_id"] == \
                        item["experimental_instance"]["test_probe"]["category"]
                else:
                    assert item["test_probe"]["role"] == "user"
                    expected = item["expected_pattern"]
                    # Every accepted variant is one the pattern accepts.
                    assert expected["accepted_variants"]
                    assert all(re.search(expected["pattern"], v)
                               for v in expected["accepted_variants"])
    assert totals == {p: 100 for p in PARADIGMS}
    # The checks can fail: a tool message is reported.
    path = next((out / "dataset" / "classical_conditioning").glob("*.json"))
    data = json.loads(path.read_text())
    data["instances"][0]["learning_phase"][0]["role"] = "tool"
    path.write_text(json.dumps(data))
    assert any("role 'tool'" in p for p in implicitmembench_problems(out))


def test_conditioning_outcomes_are_system_messages(release: Path, instances: list[dict],
                                                   tmp_path: Path) -> None:
    out = tmp_path / "imb"
    assert run_cli("export", str(release), "--format", "implicitmembench", "--out",
                   str(out)).returncode == 0
    by_id = {i["id"]: i for i in instances}
    for path in (out / "dataset" / "classical_conditioning").glob("conditioned_*.json"):
        for item in json.loads(path.read_text())["instances"]:
            source = [m for p in by_id[item["memspec_id"]]["phases"]
                      if p["phase"] == "conditioning" for m in p["messages"]]
            assert [m["content"] for m in item["learning_phase"]] == \
                [m["content"] for m in source]
            assert [m["role"] for m in item["learning_phase"]] == \
                ["system" if m["role"] == "tool" else m["role"] for m in source]
