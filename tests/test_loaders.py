"""Every bundled release loads, as it is, in the dataset tools people already use: Hugging
Face ``datasets`` (offline, every config the card declares), ``mlcroissant`` (validate, then
every record set), and coreutils for the Parquet and Croissant files' sums. The loaders run
in a consumer's environment, where memspec cannot be imported (``clean_python``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import (
    ALL_RELEASES,
    LATEST_RELEASES,
    REPO,
    bundled_release,
    release_instances,
    run_clean,
    run_cli,
)
from memspec.spec.instances import all_messages

#: Run by ``clean_python`` in a folder holding a copy of consumer_check.py (memspec-free).
_CLEAN = """
import sys
from importlib.util import find_spec
if find_spec("memspec") or find_spec("generator"):
    sys.exit("memspec is importable here: this environment is not clean")
sys.path.insert(0, ".")
"""

_LOAD_EVERY_CONFIG = _CLEAN + """
import json
from pathlib import Path
from consumer_check import as_instance, instances
from datasets import get_dataset_config_names, load_dataset
folder = sys.argv[1]
rows = sys.argv[2:] == ["rows"]
truth = instances(Path(folder)) if rows else {}
configs, differ, ids = {}, [], {}
for name in get_dataset_config_names(folder):
    loaded = load_dataset(folder, name)
    configs[name] = {split: len(data) for split, data in loaded.items()}
    if rows:
        # Every row of every config is its JSONL instance, whole, in its own split.
        differ += [f"{name}/{split}/{row['id']}" for split, data in loaded.items()
                   for row in data if row["id"] not in truth or row["split"] != split
                   or split != truth[row["id"]]["fields"].get("split", "test")
                   or as_instance(row) != truth[row["id"]]]
        ids[name] = {split: list(data["id"]) for split, data in loaded.items()}
if rows:
    ids["(default)"] = {split: list(data["id"]) for split, data in load_dataset(folder).items()}
print(json.dumps({"configs": configs, "differ": differ, "ids": ids}))
"""


def _clean_script(python: Path, script: str, args: list[str], tmp_path: Path) -> str:
    """The standard output of ``script`` run by ``python`` (``clean_python``) with the
    consumer's check script beside it."""
    folder = tmp_path / "consumer"
    folder.mkdir(exist_ok=True)
    shutil.copy(Path(__file__).parent / "consumer_check.py", folder)
    result = run_clean(python, ["-c", script, *args], folder, folder / "home", timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def _card_header(release: Path) -> dict:
    text = (release / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def _expected_config_counts(instances: list[dict], subsets: list[str]) -> dict[str, Counter]:
    """Rows per config and split, worked out from the JSONL files alone."""
    expected: dict[str, Counter] = {}
    for inst in instances:
        split = inst["fields"].get("split", "test")
        names = ["all", inst["paradigm"], inst["family"],
                 *(f"{field}-{inst['fields'][field]}" for field in subsets)]
        for name in names:
            expected.setdefault(name, Counter())[split] += 1
    return expected


def _layout(name: str) -> int:
    """The manifest layout a bundled release was frozen with (its committed manifest)."""
    return json.loads((REPO / "manifests" / f"{name}.json").read_text())["manifest_version"]


#: Releases frozen before layout 3 (no Parquet, no loader configs but one per family).
EARLY_LAYOUTS = sorted(n for n in ALL_RELEASES
                       if (REPO / "manifests" / f"{n}.json").is_file() and _layout(n) < 3)


def _early_data(name: str) -> tuple[tuple[str, str], ...]:
    """The data files (path, SHA-256) a release's committed manifest pins."""
    files = json.loads((REPO / "manifests" / f"{name}.json").read_text())["files"]
    return tuple(sorted((path, info["sha256"]) for path, info in files.items()
                        if path.startswith("data/")))


#: One early release per distinct set of data files: a later early version with the very
#: same files (version 2 of a version 1, its card aside) has the same loader configs, which
#: test_early_versions_with_the_same_data_declare_the_same_configs checks, so ``datasets``
#: loads those files once.
EARLY_DATASETS = sorted({_early_data(n): n for n in reversed(EARLY_LAYOUTS)}.values())


def _release_spec(name: str) -> dict:
    return yaml.safe_load((REPO / "specs" / "releases" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_datasets_loads_every_config_with_the_right_rows(clean_python: Path, built_dist: Path,
                                                        tmp_path: Path, name: str) -> None:
    release = bundled_release(built_dist, name)
    header = _card_header(release)
    instances = release_instances(release)
    expected = _expected_config_counts(instances, _release_spec(name).get("subsets", []))
    declared = [c["config_name"] for c in header["configs"]]
    assert sorted(declared) == sorted(expected)
    assert [c["config_name"] for c in header["configs"] if c.get("default")] == ["all"]

    loaded = json.loads(_clean_script(clean_python, _LOAD_EVERY_CONFIG, [str(release), "rows"],
                                      tmp_path))
    assert list(loaded["configs"]) == declared  # the loader sees the card's configs, in order
    for config, counts in loaded["configs"].items():
        assert counts == dict(expected[config]), config
    # Every row of every config is its JSONL instance (same conversation, same answer, same
    # split; layout 3 keeps varying objects as JSON text, layout 4 as typed columns), the
    # config "all" holds each instance once, and it is what loads without a config name.
    assert loaded["differ"] == []
    assert sorted(i for ids in loaded["ids"]["all"].values() for i in ids) == \
        sorted(inst["id"] for inst in instances)
    assert loaded["ids"]["(default)"] == loaded["ids"]["all"]


def test_early_versions_with_the_same_data_declare_the_same_configs(built_dist: Path) -> None:
    # Every early release is one whose configs datasets loads below, or has the same data
    # files and the same configs (the YAML the loader reads, config by config) as one.
    assert len(EARLY_DATASETS) < len(EARLY_LAYOUTS)
    loaded = {_early_data(name): name for name in EARLY_DATASETS}
    for name in EARLY_LAYOUTS:
        twin = loaded[_early_data(name)]
        assert _card_header(bundled_release(built_dist, name))["configs"] == \
            _card_header(bundled_release(built_dist, twin))["configs"], (name, twin)


@pytest.mark.parametrize("name", EARLY_DATASETS)
def test_datasets_loads_the_families_of_an_earlier_layout(clean_python: Path, built_dist: Path,
                                                           tmp_path: Path, name: str) -> None:
    # Frozen layouts 1 and 2 have no Parquet: their cards point one config per family at its
    # JSONL file, which the loader reads as JSON lines.
    release = bundled_release(built_dist, name)
    manifest = json.loads((release / "manifest.json").read_text())
    loaded = json.loads(_clean_script(clean_python, _LOAD_EVERY_CONFIG, [str(release)],
                                      tmp_path))["configs"]
    families = manifest["counts"]["families"]
    assert {config: sum(counts.values()) for config, counts in loaded.items()} == \
        {family: info["instances"] for family, info in families.items()}


_CROISSANT_RECORDS = _CLEAN + """
import json
import mlcroissant as mlc
ds = mlc.Dataset(jsonld=sys.argv[1])  # validates, or raises
out = {}
for record_set in ds.metadata.record_sets:
    out[record_set.name] = [
        {k.split("/", 1)[1]: v.decode() if isinstance(v, bytes) else v
         for k, v in record.items() if isinstance(v, (bytes, int, str))}
        for record in ds.records(record_set=record_set.uuid)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_mlcroissant_validates_the_description_and_reads_every_record(
        clean_python: Path, built_dist: Path, tmp_path: Path, name: str) -> None:
    release = bundled_release(built_dist, name)
    validate = subprocess.run(["mlcroissant", "validate", "--jsonld", "croissant.json"],
                              cwd=release, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
    assert validate.returncode == 0, validate.stderr[-3000:]
    complaints = [line for line in validate.stderr.splitlines()
                  if "error" in line.lower() or "warning" in line.lower()]
    assert not complaints, "\n".join(complaints)

    document = json.loads((release / "croissant.json").read_text())
    manifest = json.loads((release / "manifest.json").read_text())
    assert document["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    # Every file object is a data file the manifest pins, with the manifest's SHA-256.
    # (the instances under data/ and, from layout 8, their messages one per line).
    objects = {d["contentUrl"]: d["sha256"] for d in document["distribution"]}
    data = {n: i["sha256"] for n, i in manifest["files"].items()
            if n.startswith(("data/", "messages/"))}
    assert objects == data

    records = json.loads(_clean_script(clean_python, _CROISSANT_RECORDS,
                                       [str(release / "croissant.json")], tmp_path))
    instances = release_instances(release)
    families = sorted(manifest["counts"]["families"])
    assert sorted(records) == sorted(families + [f"{f}_messages" for f in families])
    for family in families:
        mine = [inst for inst in instances if inst["family"] == family]
        rows = records[family]
        assert [r["id"] for r in rows] == [inst["id"] for inst in mine]
        assert [r["group"] for r in rows] == [inst["group"] for inst in mine]
        assert [r["variant"] for r in rows] == [inst["variant"] for inst in mine]
        # Every message of every instance, in order, with its text.
        said = [(inst["id"], m["role"], m["content"]) for inst in mine
                for m in all_messages(inst)]
        assert [(r["id"], r["role"], r["content"]) for r in records[f"{family}_messages"]] \
            == said


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_parquet_and_croissant_are_pinned_and_hold_the_release(built_dist: Path,
                                                               name: str) -> None:
    import pyarrow.parquet as pq

    release = bundled_release(built_dist, name)
    check = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=release,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "croissant.json: OK" in check.stdout
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["manifest_version"] >= 3
    parquet = {n: i for n, i in manifest["files"].items() if n.endswith(".parquet")}
    assert parquet and all(f"{n}: OK" in check.stdout for n in parquet)
    installed = f"pyarrow {__import__('pyarrow').__version__}"
    ids = []
    for file_name, info in parquet.items():
        assert info["writer"] == installed
        table = pq.read_table(release / file_name)
        assert table.num_rows == info["rows"]
        ids += table.column("id").to_pylist()
    assert sorted(ids) == sorted(inst["id"] for inst in release_instances(release))


@pytest.mark.parametrize("name", LATEST_RELEASES)
def test_card_cites_its_designs_and_says_how_to_rebuild(built_dist: Path, name: str) -> None:
    release = bundled_release(built_dist, name)
    card = (release / "README.md").read_text()
    header = _card_header(release)
    spec = _release_spec(name)
    manifest = json.loads((release / "manifest.json").read_text())
    assert header["license"] == spec["license"].lower()
    assert header["task_categories"] == spec["task_categories"]
    assert header["tags"] == spec["tags"]
    assert f"seed: `{spec['seed']}`" in card
    assert manifest["root_sha256"] in card
    assert f"memspec build {name}\n" in card
    assert "## Audit" in card
    for design in spec.get("designs", []):
        assert f"@misc{{{design['key']}," in card
        assert design["title"] in card
    document = json.loads((release / "croissant.json").read_text())
    assert len(document.get("citation", [])) == len(spec.get("designs", []))


def test_version_3_releases_hold_the_data_of_version_2() -> None:
    # Version 4 holds new data; versions 1-3 the same.
    for name in [n for n in ALL_RELEASES if n.endswith("-v3")]:
        base = name.rsplit("-", 1)[0]
        older = json.loads((REPO / "manifests" / f"{base}-v2.json").read_text())
        newer = json.loads((REPO / "manifests" / f"{name}.json").read_text())
        data = {n: i for n, i in older["files"].items() if n.startswith("data/")}
        assert {n: i for n, i in newer["files"].items() if n.startswith("data/")} == data
        assert newer["root_sha256"] == older["root_sha256"]


def _rewrite_committed(project: Path, name: str, change) -> None:
    from memspec.core.canonical import dump_pretty_bytes

    path = project / "manifests" / f"{name}.json"
    manifest = json.loads(path.read_text())
    for file_name, info in manifest["files"].items():
        if "writer" in info:
            change(file_name, info)
    path.write_bytes(dump_pretty_bytes(manifest))


def _build_pinned_by_another_pyarrow(project: Path, out: Path
                                     ) -> subprocess.CompletedProcess[str]:
    """Build example-v3 into ``out`` as if its committed manifest had been frozen with
    pyarrow 1.0.0, whose Parquet bytes cannot be made here."""
    def other_writer(_: str, info: dict) -> None:
        info["writer"] = "pyarrow 1.0.0"
        info["sha256"] = "0" * 64

    _rewrite_committed(project, "example-v3", other_writer)
    result = run_cli("build", "example-v3", "--out", str(out), root=project)
    assert result.returncode == 0, result.stderr
    return result


def test_a_manifest_from_another_pyarrow_is_checked_by_rows(project_copy: Path,
                                                             tmp_path: Path) -> None:
    # The build compares rows and says so.
    out = tmp_path / "out"
    result = _build_pinned_by_another_pyarrow(project_copy, out)
    assert "3 Parquet files were written by pyarrow" in result.stderr
    assert "pyarrow 1.0.0" in result.stderr
    release = out / "example-v3"
    check = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=release,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout

    # Rows changed behind a rewritten SHA256SUMS are still caught, by content.
    import pyarrow.parquet as pq

    target = "parquet/example.choice.meeting_room/test.parquet"
    table = pq.read_table(release / target)
    pq.write_table(table.slice(1), release / target)
    _resum(release)
    verify = run_cli("verify", str(release), root=project_copy)
    assert verify.returncode == 1
    assert f"{target}: rows differ from manifest.json's content_sha256" in verify.stderr


def test_verify_reads_the_writer_from_the_file_not_from_the_machine(project_copy: Path,
                                                                   tmp_path: Path) -> None:
    # A release whose committed manifest pins Parquet bytes as pyarrow 1.0.0 wrote them, built
    # here by this pyarrow, then verified on a machine that has pyarrow 1.0.0: the files say
    # which writer made them, so their rows are compared, whatever the verifying machine has.
    out = tmp_path / "out"
    _build_pinned_by_another_pyarrow(project_copy, out)
    as_if_installed = (
        "import importlib.metadata as m, sys; real = m.version;"
        "m.version = lambda name: '1.0.0' if name == 'pyarrow' else real(name);"
        "from memspec.cli.commands import main; sys.argv[0] = 'memspec'; main()")
    verify = subprocess.run(
        [sys.executable, "-c", as_if_installed, "--root", str(project_copy), "verify",
         str(out / "example-v3")], capture_output=True, text=True, stdin=subprocess.DEVNULL,
        cwd=REPO)
    assert verify.returncode == 0, verify.stderr
    assert "3 Parquet files hold other bytes than the manifest pins" in verify.stderr


def test_parquet_written_by_this_pyarrow_is_pinned_by_bytes(project_copy: Path,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("build", "example-v3", "--out", str(out), root=project_copy).returncode == 0
    release = out / "example-v3"
    target = "parquet/example.procedural.reversed_copy/test.parquet"
    import pyarrow.parquet as pq

    # The same rows in other bytes (another compression) are a change when this pyarrow is
    # the one the manifest names.
    pq.write_table(pq.read_table(release / target), release / target, compression="none")
    _resum(release)
    verify = run_cli("verify", str(release), root=project_copy)
    assert verify.returncode == 1
    assert f"{target}: file differs from manifest.json" in verify.stderr
    # A file the manifest pins by its bytes alone (no writer), swapped for Parquet bytes.
    data = next(n for n in json.loads((release / "manifest.json").read_text())["files"]
                if n.startswith("data/"))
    (release / data).write_bytes((release / target).read_bytes())
    _resum(release)
    verify = run_cli("verify", str(release), root=project_copy)
    assert verify.returncode == 1 and "Traceback" not in verify.stderr
    # Of another size than the manifest says: refused by its size, before it is hashed.
    assert f"{data}: file is" in verify.stderr and "bytes; manifest.json says" in verify.stderr


def _resum(release: Path) -> None:
    from memspec.formats.manifest import sha256_file, sums_text

    hashes = {p.relative_to(release).as_posix(): sha256_file(p)
              for p in release.rglob("*") if p.is_file() and p.name != "SHA256SUMS"}
    (release / "SHA256SUMS").write_text(sums_text(hashes))


def test_loader_config_names_must_not_collide() -> None:
    from memspec.core.errors import SpecError
    from memspec.formats.dataset_configs import ParquetPart, loader_configs

    parts = [ParquetPart("parquet/all/test.parquet", "all", "p", "test")]
    with pytest.raises(SpecError) as caught:
        loader_configs(parts, ["test"], "specs/releases/r-v1.yaml")
    assert "'all' would be both the whole release and a family" in str(caught.value)


def test_a_subset_field_every_instance_lacks_is_refused(project_copy: Path,
                                                         tmp_path: Path) -> None:
    spec = project_copy / "specs" / "releases" / "subset-v1.yaml"
    spec.write_text(
        "name: subset\nversion: v1\nseed: 1\ndescription: a subset nobody has\n"
        "subsets: [suite]\n"
        "families:\n  - family: example.procedural.reversed_copy\n    groups: 2\n")
    result = run_cli("freeze", "subset-v1", "--out", str(tmp_path / "out"), root=project_copy)
    assert result.returncode == 2
    assert "specs/releases/subset-v1.yaml:5:11: subset field 'suite' is not a field of " \
        "example.procedural.reversed_copy" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project_copy / "manifests" / "subset-v1.json").exists()
    assert not (tmp_path / "out").exists()
    # A value that cannot name a file is found as the instances are written.
    spec.write_text(spec.read_text() + "    fields: {suite: two words}\n")
    result = run_cli("freeze", "subset-v1", "--out", str(tmp_path / "out"), root=project_copy)
    assert result.returncode == 1
    assert "subset field 'suite' of example.procedural.reversed_copy-00000-base is " \
        "'two words', not a plain word" in result.stderr
    assert not (project_copy / "manifests" / "subset-v1.json").exists()
    assert not (tmp_path / "out").exists()
