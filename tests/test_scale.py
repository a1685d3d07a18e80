"""Parallel and sharded generation give the same bytes as one process, in subprocesses under
different hash seeds; errors in a worker reach the user as they would from one process."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import test_bad_input as demo

from conftest import REPO, run_cli, tree_bytes
from memspec.core.errors import SpecError

# A family with family-scope (balanced) checks, whose tallies must add up across workers.
FAMILY = "memorychecks.recognition.altered_detail"


def _generate(*args: str, root: Path | None = None, seed: str = "0"):
    return run_cli("generate", *args, root=root, env={"PYTHONHASHSEED": seed})


def test_workers_give_the_bytes_of_one_process() -> None:
    # 48 groups (24 per corpus, as its balance needs): on two workers, eight chunks of six.
    one = _generate(FAMILY, "--seed", "11", "--groups", "48")
    assert one.returncode == 0, one.stderr
    two = _generate(FAMILY, "--seed", "11", "--groups", "48", "--workers", "2", seed="999")
    assert two.returncode == 0, two.stderr
    assert two.stdout == one.stdout
    assert len(one.stdout.splitlines()) == 48 * 8  # 8 variants per group


def test_forked_workers_handed_the_project_and_workers_that_load_it_agree() -> None:
    # A single-threaded process on Linux forks its workers with the project it loaded; one with
    # other threads running (a progress bar) has them load it from a fork server instead.
    code = """
import sys, threading, time
from pathlib import Path
from memspec.spec.catalog import Catalog
from memspec.engine.parallel import InProcess, Processes, chunk_jobs, fingerprint_for
from memspec.spec.project import Project
catalog = Catalog.load(Project(Path(sys.argv[1])))
if sys.argv[3] == "thread":  # another thread is running, as a progress bar's would
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
executor = InProcess() if sys.argv[3] == "one" else \
    Processes(2, catalog, slot_bytes=int(sys.argv[4])) if sys.argv[3] == "spill" else \
    Processes(2, catalog)
jobs = chunk_jobs(catalog.project.root, catalog.family(sys.argv[2]), 5, 0, 44,
                  fingerprint=fingerprint_for(executor, catalog.project.root), workers=2)
assert [job.count for job in jobs] == [6] * 7 + [2]  # four chunks a worker at the least
local = None
if isinstance(executor, InProcess):
    from memspec.engine.generate import FamilyGenerator
    from memspec.engine.render import Renderer
    local = FamilyGenerator(catalog.family(sys.argv[2]), Renderer(catalog.project), 5)
pool = getattr(executor, "pool", None)
print(pool and (pool._mp_context.get_start_method(), executor.slots is not None))
lent = []
if getattr(executor, "slots", None) is not None:  # count the chunks that came through a slot
    lend = executor.slots.lend
    executor.slots.lend = lambda slot, length: lent.append(slot) or lend(slot, length)
for chunk in executor.map(jobs, local):
    sys.stdout.buffer.write(chunk.data)
executor.close()
print(f"lent {len(lent)}", file=sys.stderr)
"""
    import subprocess
    import sys

    outputs: dict[str, bytes] = {}
    # Forked workers write a chunk's lines into memory shared with the writer, or, a chunk
    # larger than its slot of it (here a slot of about four groups: every chunk of six groups
    # but the last, of two), send them pickled.
    for how in ("one", "fork", "thread", "spill"):
        slot = str(len(outputs.get("one", b"")) * 4 // 44)
        result = subprocess.run([sys.executable, "-c", code, str(REPO), FAMILY, how, slot],
                                capture_output=True, cwd=REPO, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr.decode()
        method, _, outputs[how] = result.stdout.partition(b"\n")
        assert method == {"one": b"None", "fork": b"('fork', True)", "spill": b"('fork', True)",
                          "thread": b"('forkserver', False)"}[how]
        assert f"lent {dict(fork=8, spill=1).get(how, 0)}" in result.stderr.decode()
    assert outputs["one"].count(b"\n") == 44 * 8
    assert outputs["fork"] == outputs["one"] == outputs["thread"] == outputs["spill"]


@pytest.mark.parametrize("shards", [1, 2, 3, 7])
def test_shards_in_order_are_the_whole(shards: int, tmp_path: Path) -> None:
    whole = _generate("example.choice.meeting_room", "--seed", "3", "--groups", "5",
                      "--start", "2")
    assert whole.returncode == 0, whole.stderr
    parts = []
    for index in range(shards):
        out = tmp_path / f"part{index}.jsonl"
        result = _generate("example.choice.meeting_room", "--seed", "3", "--groups", "5",
                           "--start", "2", "--shard", f"{index}/{shards}", "--out", str(out),
                           seed=str(index))
        assert result.returncode == 0, result.stderr
        # The family-wide checks run where the shard is every group, and only there.
        assert ("were not run on one shard" in result.stderr) == (shards > 1), result.stderr
        parts.append(out.read_text())
    assert "".join(parts) == whole.stdout


@pytest.mark.parametrize("bad", ["2/2", "a/3", "1", "-1/2", "0/0"])
def test_a_bad_shard_is_refused(bad: str) -> None:
    result = _generate("example.choice.meeting_room", "--shard", bad)
    assert result.returncode == 2
    assert "--shard must be I/N" in result.stderr and "Traceback" not in result.stderr


def test_build_with_workers_is_the_committed_release(built_dist: Path, tmp_path: Path) -> None:
    names = ["example-v3", "memorychecks-v3"]
    result = run_cli("build", *names, "--workers", "2", "--out", str(tmp_path),
                     env={"PYTHONHASHSEED": "4242"})
    assert result.returncode == 0, result.stderr
    for name in names:
        assert tree_bytes(tmp_path / name) == tree_bytes(built_dist / name)


def test_a_failing_family_check_is_seen_across_workers(project_copy: Path) -> None:
    # A fourth position no gold ever takes: unbalanced on any number of groups, which only a
    # sum of every chunk's tallies can show when the groups are split between workers.
    family = project_copy / "specs" / "families" / "example" / "meeting_room.yaml"
    family.write_text(family.read_text().replace("values: [0, 1, 2]", "values: [0, 1, 2, 3]"))
    outcomes = []
    for workers in ("1", "2"):
        result = _generate("example.choice.meeting_room", "--groups", "40", "--workers",
                           workers, root=project_copy)
        outcomes.append((result.returncode, result.stderr))
    assert outcomes[0] == outcomes[1]
    code, stderr = outcomes[0]
    assert code == 1
    assert "instance.answer.gold_index is unbalanced (0: 120, 1: 120, 2: 120, 3: 0)" in stderr


def test_an_error_in_a_worker_is_reported_as_from_one_process(project_copy: Path,
                                                               tmp_path: Path) -> None:
    template = next((project_copy / "templates").rglob("*.j2"))
    template.write_text(template.read_text() + "\n{{ 1 / 0 }}\n")
    family = next(p for p in (project_copy / "specs" / "families").rglob("*.yaml")
                  if template.name in p.read_text())
    family_id = family.read_text().split("\n", 1)[0].removeprefix("family: ").strip()
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "family.jsonl"
    results = [run_cli("generate", family_id, "--workers", workers, "--out", str(out),
                       root=project_copy) for workers in ("1", "2")]
    assert results[0].returncode == results[1].returncode == 2
    assert results[0].stderr == results[1].stderr
    assert template.name in results[1].stderr and "Traceback" not in results[1].stderr
    assert not list((tmp_path / "out").iterdir())  # nothing written, not even a part


def test_generate_streams_to_a_file_atomically(tmp_path: Path) -> None:
    out = tmp_path / "family.jsonl"
    result = _generate("example.procedural.reversed_copy", "--groups", "20", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text() == _generate("example.procedural.reversed_copy", "--groups",
                                        "20").stdout
    assert [p.name for p in tmp_path.iterdir()] == ["family.jsonl"]


def _mutations(instance: dict) -> list[dict]:
    """Ways an instance can break its schema, one at a time."""
    import copy

    out = []
    for key in ("id", "phases", "answer", "fields"):
        broken = copy.deepcopy(instance)
        del broken[key]
        out.append(broken)
    changes = [("id", "Not An Id"), ("group", -1), ("group", "3"), ("extra", 1),
               ("axes", {"a": 1}), ("family_version", 0), ("variant", "")]
    for key, value in changes:
        broken = copy.deepcopy(instance)
        broken[key] = value
        out.append(broken)
    broken = copy.deepcopy(instance)
    broken["phases"][-1]["messages"].append({"role": "robot", "content": "x"})
    out.append(broken)
    broken = copy.deepcopy(instance)
    broken["phases"][-1]["messages"].append({"role": "user", "content": ""})
    out.append(broken)
    broken = copy.deepcopy(instance)
    broken["answer"]["scorer"] = "vibes"
    out.append(broken)
    return out


@pytest.mark.parametrize("family", ["example.choice.meeting_room", "feedback.procedural.key_terms",
                                    "memorychecks.binding.topic_partner"])
def test_the_compiled_instance_check_agrees_with_the_full_validator(family: str) -> None:
    import json

    from memspec.spec.schemas import fast_check, validator

    result = _generate(family, "--groups", "1")
    assert result.returncode == 0, result.stderr
    check, full = fast_check("instance"), validator("instance")
    for line in result.stdout.splitlines():
        instance = json.loads(line)
        assert check(instance) and full.is_valid(instance)
        for broken in _mutations(instance):
            assert not full.is_valid(broken)
            assert not check(broken), broken


def test_a_dask_cluster_gives_the_bytes_of_one_process(tmp_path: Path) -> None:
    # A scheduler and two worker processes of its own, as on a cluster of machines; the CLI
    # is only told the address.
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        assert len(cluster.workers) == 2
        one = _generate(FAMILY, "--seed", "2", "--groups", "48")
        assert one.returncode == 0, one.stderr
        remote = _generate(FAMILY, "--seed", "2", "--groups", "48", "--engine", "dask",
                           "--scheduler", cluster.scheduler_address, seed="31")
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == one.stdout
        result = run_cli("build", "example-v3", "--engine", "dask", "--scheduler",
                         cluster.scheduler_address, "--out", str(tmp_path))
        assert result.returncode == 0, result.stderr


def test_build_on_a_local_dask_cluster_is_the_committed_release(built_dist: Path,
                                                                 tmp_path: Path) -> None:
    """...and says nothing else while port 8787 (Dask's default for its scheduler's HTTP
    routes) is taken, as it is when another cluster runs on the machine."""
    with socket.socket() as taken:
        try:
            taken.bind(("", 8787))
            taken.listen()
        except OSError:
            pass  # already taken by someone else: the case under test all the same
        result = run_cli("build", "memorychecks-v3", "--engine", "dask", "--workers", "2",
                         "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "already in use" not in result.stderr, result.stderr
    assert tree_bytes(tmp_path / "memorychecks-v3") == tree_bytes(built_dist / "memorychecks-v3")


def test_a_worker_with_other_specs_refuses_to_render() -> None:
    from memspec.core.errors import SpecError
    from memspec.engine.parallel import ChunkJob, render_chunk

    job = ChunkJob(str(REPO), "example.choice.meeting_room", 0, 0, 1, None, "0" * 64)
    with pytest.raises(SpecError, match="a worker sees other specs or templates"):
        render_chunk(job)


@pytest.mark.parametrize("args", [["--engine", "ray"], ["--scheduler", "tcp://127.0.0.1:9"],
                                  ["--workers", "0"]])
def test_a_bad_engine_choice_is_refused(args: list[str]) -> None:
    result = _generate("example.choice.meeting_room", *args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr


def _shard_and_merge(project: Path, name: str, shards: int, out: Path,
                     *extra: str) -> list[Path]:
    folders = []
    for index in range(shards):
        result = run_cli("freeze", name, "--shard", f"{index}/{shards}", "--out",
                         str(out / "shards"), *extra, root=project,
                         env={"PYTHONHASHSEED": str(100 + index)})
        assert result.returncode == 0, result.stderr
        folders.append(out / "shards" / f"{name}.shard-{index}-of-{shards}")
    return folders


def test_merged_shards_are_the_release_a_single_freeze_makes(project_copy: Path,
                                                            tmp_path: Path) -> None:
    # A release nobody froze yet: the merge writes its manifest, as a freeze would.
    spec = project_copy / "specs" / "releases"
    (spec / "fresh-v1.yaml").write_text((spec / "example-v3.yaml").read_text()
                                        .replace("name: example", "name: fresh")
                                        .replace("version: v3", "version: v1"))
    folders = _shard_and_merge(project_copy, "fresh-v1", 3, tmp_path, "--workers", "2")
    merged = run_cli("merge", *map(str, folders), "--out", str(tmp_path / "merged"),
                     root=project_copy)
    assert merged.returncode == 0, merged.stderr
    manifest = project_copy / "manifests" / "fresh-v1.json"
    sharded = manifest.read_bytes()
    manifest.unlink()
    single = run_cli("freeze", "fresh-v1", "--out", str(tmp_path / "single"), root=project_copy)
    assert single.returncode == 0, single.stderr
    assert manifest.read_bytes() == sharded
    assert tree_bytes(tmp_path / "merged" / "fresh-v1") == \
        tree_bytes(tmp_path / "single" / "fresh-v1")


def test_a_template_reached_only_through_include_is_pinned_however_groups_are_rendered(
        project_copy: Path, tmp_path: Path) -> None:
    # Jinja reads an included file when a group first renders it, in whichever process
    # renders that group: the manifest must pin it whether the groups were rendered here, on
    # workers, or in shards.
    probe = project_copy / "templates" / "example" / "reversed_copy" / "probe.j2"
    probe.write_text(probe.read_text().replace(
        "{% endmessage %}", '{% include "example/reversed_copy/sign_off.j2" %}\n{% endmessage %}'))
    (probe.parent / "sign_off.j2").write_text("Thank you.\n")
    spec = project_copy / "specs" / "releases"
    (spec / "fresh-v1.yaml").write_text((spec / "example-v3.yaml").read_text()
                                        .replace("name: example", "name: fresh")
                                        .replace("version: v3", "version: v1"))
    frozen = run_cli("freeze", "fresh-v1", "--workers", "2", "--out", str(tmp_path / "a"),
                     root=project_copy)
    assert frozen.returncode == 0, frozen.stderr
    manifest = json.loads((project_copy / "manifests" / "fresh-v1.json").read_text())
    assert "templates/example/reversed_copy/sign_off.j2" in manifest["inputs"]
    assert "Thank you." in (tmp_path / "a" / "fresh-v1" / "data" /
                            "example.procedural.reversed_copy.jsonl").read_text()
    rebuilt = run_cli("build", "fresh-v1", "--out", str(tmp_path / "b"), root=project_copy)
    assert rebuilt.returncode == 0, rebuilt.stderr
    folders = _shard_and_merge(project_copy, "fresh-v1", 2, tmp_path, "--workers", "2")
    merged = run_cli("merge", *map(str, folders), "--out", str(tmp_path / "m"),
                     root=project_copy)
    assert merged.returncode == 0, merged.stderr
    assert tree_bytes(tmp_path / "m" / "fresh-v1") == tree_bytes(tmp_path / "b" / "fresh-v1") \
        == tree_bytes(tmp_path / "a" / "fresh-v1")


def test_merge_of_a_bundled_release_is_its_committed_build(built_dist: Path,
                                                           tmp_path: Path) -> None:
    folders = _shard_and_merge(REPO, "memorychecks-v3", 2, tmp_path)
    merged = run_cli("merge", *map(str, reversed(folders)), "--out", str(tmp_path / "m"))
    assert merged.returncode == 0, merged.stderr
    assert tree_bytes(tmp_path / "m" / "memorychecks-v3") == \
        tree_bytes(built_dist / "memorychecks-v3")


@pytest.mark.parametrize(("key", "value", "message"), [
    ("shard", ["0", "1"], "'0' is not of type 'integer' (at shard/0)"),
    ("families", [], "[] is not of type 'object' (at families)"),
    ("inputs", {"../../etc/hostname": "0" * 64}, "does not match"),
    ("inputs", {"/etc/hostname": "0" * 64}, "does not match"),
])
def test_merge_refuses_a_shard_record_that_is_not_one(project_copy: Path, tmp_path: Path,
                                                      key: str, value: object,
                                                      message: str) -> None:
    folders = _shard_and_merge(project_copy, "example-v3", 2, tmp_path)
    record_file = folders[1] / "shard.json"
    record = json.loads(record_file.read_text())
    record[key] = value
    record_file.write_text(json.dumps(record))
    merged = run_cli("merge", *map(str, folders), "--out", str(tmp_path / "o"),
                     root=project_copy)
    assert merged.returncode == 2, merged.stderr
    assert f"{record_file}: not a shard of a release: " in merged.stderr
    assert message in merged.stderr and "Traceback" not in merged.stderr
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_merge_refuses_missing_tampered_or_stale_shards(project_copy: Path,
                                                        tmp_path: Path) -> None:
    folders = _shard_and_merge(project_copy, "example-v3", 3, tmp_path)

    missing = run_cli("merge", str(folders[0]), str(folders[2]), "--out", str(tmp_path / "o"),
                      root=project_copy)
    assert missing.returncode == 2
    assert "merge needs each of the 3 shards once; got shards 0, 2" in missing.stderr

    twice = run_cli("merge", str(folders[0]), str(folders[1]), str(folders[1]), "--out",
                    str(tmp_path / "o"), root=project_copy)
    assert twice.returncode == 2 and "got shards 0, 1, 1" in twice.stderr

    halves = _shard_and_merge(project_copy, "example-v3", 2, tmp_path / "halves")
    mixed = run_cli("merge", str(folders[1]), str(folders[2]), str(halves[0]), "--out",
                    str(tmp_path / "o"), root=project_copy)
    assert mixed.returncode == 2
    assert "shards of different cuts: into 2 and into 3 shards" in mixed.stderr

    data = folders[1] / "data" / "example.choice.meeting_room.jsonl"
    original = data.read_bytes()
    data.write_bytes(original.replace(b"Room", b"Hall", 1))
    tampered = run_cli("merge", *map(str, folders), "--out", str(tmp_path / "o"),
                       root=project_copy)
    assert tampered.returncode == 2  # a shard that does not verify is bad input
    assert f"{data}: shard data differs from its shard.json" in tampered.stderr
    data.write_bytes(original)

    template = next((project_copy / "templates" / "example").rglob("*.j2"))
    template.write_text(template.read_text() + "\n")
    stale = run_cli("merge", *map(str, folders), "--out", str(tmp_path / "o"),
                    root=project_copy)
    assert stale.returncode == 2
    assert "changed since the shards were rendered" in stale.stderr
    assert not (tmp_path / "o" / "example-v3").exists()


def test_validate_on_several_processes_reports_what_one_does(project_copy: Path) -> None:
    # Break three files of three kinds, far apart in the tree, so that different workers
    # meet them; the report (each problem, the counts, the exit status) must not change.
    families = project_copy / "specs" / "families"
    first, last = sorted(families.rglob("*.yaml"))[0], sorted(families.rglob("*.yaml"))[-1]
    first.write_text(first.read_text(encoding="utf-8") + "\nnot_a_key: 1\n", encoding="utf-8")
    last.write_text(last.read_text(encoding="utf-8").replace("version: 1", "version: one", 1),
                    encoding="utf-8")
    pool = sorted((project_copy / "specs" / "pools").rglob("*.yaml"))[-1]
    pool.write_text("pool: [unclosed\n", encoding="utf-8")
    one = run_cli("validate", "--workers", "1", root=project_copy)
    two = run_cli("validate", "--workers", "2", root=project_copy, env={"PYTHONHASHSEED": "7"})
    assert one.returncode == two.returncode == 2
    assert two.stderr == one.stderr and two.stdout == one.stdout
    assert one.stderr.count("error: ") == 3, one.stderr
    assert "Traceback" not in one.stderr


SPEC_KINDS = {"families": "family", "paradigms": "paradigm", "pools": "pool",
              "releases": "release", "exports": "export"}
#: Values a careless or hostile author might put anywhere in a spec.
ODD_VALUES = [None, True, False, 0, 1, 1.0, 1.5, -3, "", "x", "Not An Id!", "a.b", "a" * 300,
              [], {}, [1], {"a": 1}, ["x", "x"]]


def _places(value: object, path: tuple = ()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _places(item, (*path, index))


@pytest.mark.parametrize("folder", sorted(SPEC_KINDS))
def test_the_compiled_spec_checks_agree_with_the_full_validator(folder: str) -> None:
    """Specs are passed by the compiled check alone, so it must never pass what the full
    Draft 2020-12 validator rejects: every bundled spec, and seeded random mutations of each
    (a key removed, an unknown key, any value replaced by an odd one)."""
    import copy
    import random

    from memspec.spec.schemas import fast_check, validator
    from memspec.spec.yamlsafe import load_yaml_file

    kind = SPEC_KINDS[folder]
    check, full = fast_check(kind), validator(kind)
    rng = random.Random(f"agree-{folder}")
    files = sorted((REPO / "specs" / folder).rglob("*.yaml"))
    assert files
    disagreements = []
    for path in files:
        data = load_yaml_file(path, str(path)).data
        assert check(data) and full.is_valid(data), path
        places = list(_places(data))[1:]
        for _ in range(8):
            broken = copy.deepcopy(data)
            place = rng.choice(places)
            parent = broken
            for key in place[:-1]:
                parent = parent[key]
            roll = rng.random()
            if roll < 0.3 and isinstance(parent, dict):
                del parent[place[-1]]
            elif roll < 0.4 and isinstance(parent, dict):
                parent["not_a_key"] = 1
            else:
                parent[place[-1]] = rng.choice(ODD_VALUES)
            if check(broken) != full.is_valid(broken):
                disagreements.append((path.name, place))
    assert disagreements == []


def test_a_progress_bar_on_a_terminal_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # Workers are forked with the project loaded only while one thread runs (Processes); a
    # freeze on a terminal draws its progress bar while they start, so the bar must not run a
    # refresh thread of its own.
    import io
    import sys
    import threading

    from memspec.cli import cli_common
    from memspec.cli import commands as cli

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    from rich.console import Console

    terminal = Terminal()
    monkeypatch.setenv("TERM", "xterm-256color")  # a terminal rich draws on
    monkeypatch.setattr(sys, "stderr", terminal)
    # as made at start on a terminal, in the module whose progress bar draws on it
    monkeypatch.setattr(cli_common, "err", Console(stderr=True))
    threads = threading.active_count()
    with cli._progress(10, "freezing") as advance:
        advance("example.choice.meeting_room", 4)
        assert threading.active_count() == threads
    assert "freezing" in terminal.getvalue()  # it did draw


def _generator(root: Path, family_id: str) -> Any:
    from memspec.engine.generate import FamilyGenerator
    from memspec.engine.render import Renderer
    from memspec.spec.catalog import Catalog
    from memspec.spec.project import Project

    project = Project(root)
    return FamilyGenerator(Catalog.load(project).family(family_id), Renderer(project), 7)


@pytest.mark.parametrize("family_id", ["implicitmem.procedural.cache_key_prefix",
                                       "trustgap.memory_trust.airline", FAMILY])
def test_groups_drawn_a_batch_at_a_time_are_the_groups_drawn_one_by_one(family_id: str) -> None:
    one_by_one = _generator(REPO, family_id)
    batched = _generator(REPO, family_id)
    expected = [one_by_one.group(g) for g in range(3, 40)]
    assert list(batched.group_batch(3, 17)) + list(batched.group_batch(20, 20)) == expected


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    """The small project of the bad-input tests: one family drawing a colour."""
    for relative, text in demo.FILES.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_first_group_to_fail_is_the_one_reported_whichever_stage_fails(
        demo_project: Path, tmp_path: Path) -> None:
    # Group 12's draw fails and group 5's render does: drawn a batch at a time, group 12's
    # draw comes first, yet group 5 is the one a run of groups in order stops at.
    demo.edit(demo_project, demo.FAMILY, "  colour: {from: pools/colours.yaml}",
              "  colour: {from: pools/colours.yaml}\n  step: {expr: \"1 // (group - 12)\"}")
    demo.edit(demo_project, demo.TEMPLATE, "Noted.", "Noted {{ 1 // (group - 5) }}.")
    expected = _generator(demo_project, demo.FAMILY_ID)
    with pytest.raises(SpecError) as one:
        for group in range(20):
            expected.group(group)
    out = tmp_path / "g.jsonl"
    result = demo.memspec(demo_project, "generate", demo.FAMILY_ID, "--groups", 20, "--out", out)
    assert result.returncode == 2 and "demo/setup.j2" in str(one.value)
    assert str(one.value).splitlines()[0] in result.stderr
    assert not out.exists()
    # Without the render's failure, the draw's is reported, once the groups before it are made.
    demo.edit(demo_project, demo.TEMPLATE, "Noted {{ 1 // (group - 5) }}.", "Noted.")
    made = []
    with pytest.raises(SpecError, match="step"):
        for group in _generator(demo_project, demo.FAMILY_ID).group_batch(0, 16):
            made.append(group)
    assert len(made) == 12


def test_a_group_continued_in_a_later_stage_has_only_what_is_left_of_its_budget() -> None:
    import time

    from memspec.core.limits import Budget, BudgetExceeded

    budget = Budget(0.6, 512)
    with budget.session():
        with budget.after(0.1):  # most of its time left: not stopped
            time.sleep(0.3)
        start = time.monotonic()
        with pytest.raises(BudgetExceeded), budget.after(0.4):
            while time.monotonic() < start + 10:
                pass
        assert time.monotonic() - start < 0.5  # stopped at 0.2 s, not at 0.6 s
    start = time.monotonic()
    with pytest.raises(BudgetExceeded), budget.after(0.4):  # outside a session too
        while time.monotonic() < start + 10:
            pass
    assert time.monotonic() - start < 0.5


def test_without_dask_the_error_names_the_extras_packages_not_a_clone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel's user has no checkout to `pip install -e '.[dask]'` in: the error gives the
    packages the installed metadata declares for the extra."""
    import builtins

    from memspec.core.errors import SpecError
    from memspec.engine.parallel_dask import DaskCluster

    real_import = builtins.__import__

    def no_distributed(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    with pytest.raises(SpecError) as caught:
        DaskCluster(1)
    message = str(caught.value)
    assert "pip install 'distributed>=2024.1'" in message, message
    assert "-e" not in message.split("pip install", 1)[1], message
