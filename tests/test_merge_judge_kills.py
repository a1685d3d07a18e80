"""``merge`` and ``judge-requests`` killed with SIGKILL at any point (issue 50), as real
processes: a killed merge leaves no release or the whole one (it is put in place as a freeze
puts its release), and a killed judge-requests leaves each of its two files whole, old or new,
the pair mixed only while the journal that the next run completes stands beside them, and
``score`` refusing the map meanwhile. The next run works and removes what a killed one left.
Readers that are not memspec (``cp`` and ``sha256sum`` here) tell a whole pair from one caught
or left mid-move by the sums file moved into place after it. Killed at fractions of a run's
duration, ``$MEMSPEC_RACE_ROUNDS`` rounds (1 in the suite)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_budgets import judged_release  # noqa: F401 (a fixture)
from test_crash_safety import NAME, _release_file

from conftest import run_cli, tree_bytes

HIDDEN = ".memspec-tmp-"
FRACTIONS = tuple(step / 10 for step in range(1, 11))
ROUNDS = int(os.environ.get("MEMSPEC_RACE_ROUNDS", "1"))


def _timed(command: Sequence[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - start


def _killed(command: Sequence[str], seconds: float) -> None:
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    process.send_signal(signal.SIGKILL)
    process.wait()


def _visible(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree_bytes(folder).items()
            if not any(part.startswith(HIDDEN) for part in Path(name).parts)}


def test_a_merge_killed_anywhere_leaves_no_release_or_the_whole_one(
        project_copy: Path, tmp_path: Path) -> None:
    _release_file(project_copy, groups=24)
    shards = []
    for index in range(2):
        result = run_cli("freeze", NAME, "--shard", f"{index}/2", "--out",
                         str(tmp_path / "shards"), root=project_copy)
        assert result.returncode == 0, result.stderr
        shards.append(str(tmp_path / "shards" / f"{NAME}.shard-{index}-of-2"))
    command = [sys.executable, "-m", "memspec.cli", "--root", str(project_copy), "merge",
               *shards, "--out"]
    seconds = _timed([*command, str(tmp_path / "reference")])
    whole = tree_bytes(tmp_path / "reference" / NAME)
    manifest = project_copy / "manifests" / f"{NAME}.json"
    committed = manifest.read_bytes()
    outcomes = {"none": 0, "whole": 0}
    for round_ in range(ROUNDS):
        out = tmp_path / f"out-{round_}"
        for fraction in FRACTIONS:
            _killed([*command, str(out)], fraction * seconds)
            release = out / NAME
            if release.exists():
                assert tree_bytes(release) == whole, f"killed at {fraction}: a partial release"
                outcomes["whole"] += 1
            else:
                outcomes["none"] += 1
            assert manifest.read_bytes() == committed
            if out.exists():
                assert _visible(out).keys() <= {f"{NAME}/{n}" for n in whole}
        result = run_cli("merge", *shards, "--out", str(out), root=project_copy)
        assert result.returncode == 0, result.stderr
        assert tree_bytes(out / NAME) == whole
        assert [p.name for p in out.iterdir()] == [NAME], "a killed merge's leftovers remain"
    assert outcomes["none"] >= 1, outcomes  # some kills came before the release was in place


@dataclass
class Judging:
    """judge-requests into one folder from two runs' responses: the old pair (seed 1, the
    earlier responses) and the new one (seed 2), with the bytes of each and the report
    ``score`` gives of each, judged as ``_judge_and_score`` judges."""

    root: Path
    release: Path
    responses: Path
    requests: Path
    unblind: Path
    sums: Path
    earlier: Path
    old: tuple[bytes, bytes] = (b"", b"")
    new: tuple[bytes, bytes] = (b"", b"")
    reports: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def command(self, seed: int, prefix: Sequence[str] = ("-m", "memspec.cli")) -> list[str]:
        answers = self.earlier if seed == 1 else self.responses
        return [sys.executable, *prefix, "--root", str(self.root), "judge-requests",
                str(self.release), str(answers), "--out", str(self.requests), "--seed",
                str(seed)]

    def pair(self) -> tuple[bytes, bytes]:
        return self.requests.read_bytes(), self.unblind.read_bytes()

    def scored(self) -> subprocess.CompletedProcess[str]:
        """``memspec score`` of the judgments a judge gives the requests as they stand: 1
        to a response of the earlier run, 5 to any other. Through the map that stands
        beside them, they give the report of the pair the requests belong to, if the map
        is theirs."""
        judged = [{"request_id": r["request_id"],
                   "score": 1 if "(earlier)" in r["response"] else 5}
                  for r in map(json.loads, self.requests.read_text().splitlines())]
        judgments = self.requests.parent.parent / "judgments.jsonl"
        judgments.write_text("".join(json.dumps(j) + "\n" for j in judged))
        return run_cli("score", str(self.release), str(self.responses), "--judgments",
                       str(judgments), "--unblind", str(self.unblind), "--format", "json",
                       root=self.root)

    def report(self) -> str:
        scored = self.scored()
        assert scored.returncode == 0, scored.stderr
        return scored.stdout

    def outside_check(self, folder: Path | None = None) -> bool:
        """Whether ``sha256sum -c`` (coreutils, not memspec) accepts the pair in ``folder``
        (the requests' own by default) by the sums file beside it."""
        folder = folder or self.requests.parent
        checked = subprocess.run(["sha256sum", "--check", "--quiet", self.sums.name],
                                 cwd=folder, capture_output=True, stdin=subprocess.DEVNULL)
        return checked.returncode == 0

    def moving(self) -> bool:
        """Whether the journal of unfinished moves stands beside the pair."""
        return any((p / ".moving.json").exists() for p in self.requests.parent.iterdir()
                   if p.name.startswith(HIDDEN))

    def assert_refused(self, scored: subprocess.CompletedProcess[str]) -> None:
        assert scored.returncode == 2, scored.stderr
        assert f"error: {self.unblind}: judge-requests was stopped" in scored.stderr
        assert "run judge-requests again" in scored.stderr
        assert scored.stdout == ""


@pytest.fixture
def judging(judged_release: tuple[Path, Path, Path], tmp_path: Path  # noqa: F811
            ) -> Judging:
    root, release, responses = judged_release
    out = tmp_path / "judging"
    out.mkdir()
    # The old requests judge other responses (each one's text changed, the first left out),
    # so that each of the two files differs, and so do the scores judged from them.
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text("".join(json.dumps({**row, "response": f"{row['response']} (earlier)"})
                               + "\n" for row in map(json.loads, responses.read_text()
                                                     .splitlines()[1:])))
    judging = Judging(root, release, responses, out / "requests.jsonl",
                      out / "requests.jsonl.unblind.json", out / "requests.jsonl.sha256",
                      earlier)
    _timed(judging.command(2))
    judging.new, judging.reports["new"] = judging.pair(), judging.report()
    judging.seconds = _timed(judging.command(1))
    judging.old, judging.reports["old"] = judging.pair(), judging.report()
    assert judging.old[0] != judging.new[0] and judging.old[1] != judging.new[1]
    assert judging.reports["old"] != judging.reports["new"]
    return judging


def _assert_completed(judging: Judging) -> None:
    """The next run puts the new pair in place whole, and removes what killed ones left."""
    _timed(judging.command(2))
    assert judging.pair() == judging.new
    assert sorted(p.name for p in judging.requests.parent.iterdir()) == [
        judging.requests.name, judging.sums.name, judging.unblind.name]
    assert judging.outside_check()
    assert judging.report() == judging.reports["new"]


def test_judge_requests_killed_anywhere_leave_whole_files_and_readers_one_run(
        judging: Judging) -> None:
    """Killed at any point, judge-requests leaves each file whole, old or new; ``score``
    reading the map gives the report of the old pair or of the new one, or, while the
    pair may be mixed (the journal of the unfinished moves stands), refuses at the map and
    says to run judge-requests again; the next run completes the pair."""
    old, new = judging.old, judging.new
    for _ in range(ROUNDS):
        for fraction in FRACTIONS:
            _timed(judging.command(1))  # the old pair, whole
            _killed(judging.command(2), fraction * judging.seconds)
            now = judging.pair()
            assert now[0] in (old[0], new[0]) and now[1] in (old[1], new[1]), \
                f"killed at {fraction}: a file partly written"
            moving = judging.moving()
            assert now in (old, new) or moving, \
                f"killed at {fraction}: a mixed pair the next run cannot complete"
            # A reader that is not memspec accepts only a pair of one run (a whole pair
            # whose sums are not in place yet is refused too, until the next run).
            if judging.outside_check():
                assert now in (old, new), f"killed at {fraction}: sha256sum took a mix"
            else:
                assert moving, f"killed at {fraction}: a settled pair refused by sha256sum"
            scored = judging.scored()
            if moving:
                judging.assert_refused(scored)
            else:
                assert scored.returncode == 0, scored.stderr
                assert scored.stdout == judging.reports["old" if now == old else "new"], \
                    f"killed at {fraction}: score read a pair of two runs"
        _assert_completed(judging)


#: judge-requests, killed (SIGKILL, by itself) the moment its first file is renamed into
#: place over the old one: the second is still the old one.
KILLED_AFTER_FIRST_MOVE = f"""
import os, signal, sys
from pathlib import Path

replace = os.replace

def replace_then_die(source, target):
    replace(source, target)
    staged = Path(source).parent.name.startswith({HIDDEN!r})
    if staged and not Path(target).parent.name.startswith({HIDDEN!r}):
        os.kill(os.getpid(), signal.SIGKILL)

os.replace = replace_then_die
from memspec.cli.commands import main
main()
"""


def test_score_refuses_the_map_of_a_pair_judge_requests_left_mixed(judging: Judging) -> None:
    """Killed between its two renames, judge-requests leaves its new requests beside the
    old map: ``score`` refuses the map (located, exit 2, nothing on standard output)
    rather than unblind the new requests' judgments with it, until the next run of
    judge-requests completes the pair."""
    killed = subprocess.run(judging.command(2, ("-c", KILLED_AFTER_FIRST_MOVE)),
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert judging.pair() == (judging.new[0], judging.old[1])  # mixed: requests moved first
    assert judging.moving()
    judging.assert_refused(judging.scored())
    # The old sums still stand beside the mixed pair: the new requests do not match them.
    assert not judging.outside_check()
    _assert_completed(judging)


#: A reader that is not memspec: copies the three files, one after another, into a folder
#: of its own and checks the copy with ``sha256sum -c``, over and over until told to stop;
#: it prints the folders it accepted and counts those it refused.
OUTSIDE_READER = r"""
set -u
cd "$1"; n=0; refused=0
while [ ! -e "$2/stop" ]; do
  n=$((n + 1)); mkdir "$2/$n"
  if cp requests.jsonl requests.jsonl.unblind.json requests.jsonl.sha256 "$2/$n/" 2>/dev/null &&
      (cd "$2/$n" && sha256sum --check --quiet requests.jsonl.sha256 >/dev/null 2>&1); then
    echo "$n"
  else
    refused=$((refused + 1)); rm -rf "${2:?}/$n"
  fi
done
echo "refused $refused"
"""


def test_an_outside_reader_checking_the_sums_never_takes_a_mixed_pair(
        judging: Judging, tmp_path: Path) -> None:
    """While judge-requests rewrites the pair over and over (the old run's and the new
    run's, whole or killed midway), a shell reader copies the three files and checks them
    with ``sha256sum -c``: every copy it accepts is the old pair or the new one, never one
    file of each, and it accepts the pair once the writers are done."""
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    reader = subprocess.Popen(["bash", "-c", OUTSIDE_READER, "reader",
                               str(judging.requests.parent), str(snapshots)],
                              stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        for round_ in range(ROUNDS):
            for fraction in FRACTIONS:
                _timed(judging.command(1 + round_ % 2))
                _killed(judging.command(2 - round_ % 2), fraction * judging.seconds)
        _timed(judging.command(2))
    finally:
        (snapshots / "stop").touch()
        output, _ = reader.communicate(timeout=60)
    lines = output.splitlines()
    assert lines[-1].startswith("refused "), output
    accepted = [snapshots / line for line in lines[:-1]]
    for folder in accepted:
        pair = ((folder / judging.requests.name).read_bytes(),
                (folder / judging.unblind.name).read_bytes())
        assert pair in (judging.old, judging.new), f"sha256sum accepted a mixed pair: {folder}"
    assert accepted, f"the reader accepted no pair ({lines[-1]})"
    assert judging.outside_check()
    shutil.rmtree(snapshots)
