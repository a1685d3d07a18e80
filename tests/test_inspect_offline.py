"""The exported inspect task run as a user runs it outside any project: the documented
``inspect eval ... --model mockllm/model`` command line, in a shell, by an interpreter that
cannot import memspec, with no tiktoken cache named and every proxy pointing at a closed port
(so any download fails), ends with every sample scored."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from conftest import REPO, release_instances, run_cli

#: Where no network is: every proxy variable at a port nothing listens on.
NOWHERE = "http://127.0.0.1:9"


def _documented_lines() -> tuple[str, str]:
    """The export line and the mockllm line of docs/loading-and-exports.md's inspect block."""
    text = (REPO / "docs" / "loading-and-exports.md").read_text(encoding="utf-8")
    block = text.split("### inspect_ai: `--format inspect`", 1)[1].split("```text\n", 1)[1]
    lines = block.split("```", 1)[0].splitlines()
    export = next(line for line in lines if line.startswith("memspec export "))
    offline = next(line for line in lines if "--model mockllm/model" in line)
    return export, offline.split("#", 1)[0].strip()


def test_the_documented_inspect_line_scores_every_sample_offline_without_memspec(
        typed_release: Path, clean_python: Path, tmp_path: Path) -> None:
    # The session's release of families of every kind (choices, calls, feedback logs with
    # splits, judged pairs), exported by the documented line (whose release is a bundled one)
    # in the user's own folder, outside any project.
    export_line, eval_line = _documented_lines()
    release_path = re.search(r"memspec export (\S+)", export_line).group(1)
    user = tmp_path / "user"
    user.mkdir()
    export = run_cli(*export_line.replace(release_path, str(typed_release)).split()[1:],
                     cwd=user)
    assert export.returncode == 0, export.stderr
    assert (user / "inspect" / "task.py").is_file()
    # `inspect` as its console script runs it, by an interpreter that cannot import memspec.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "inspect"
    shim.write_text(f"#!{clean_python} -I\nimport sys\n"
                    "from inspect_ai._cli.main import main\nsys.exit(main())\n")
    shim.chmod(0o755)
    blocked = subprocess.run([str(clean_python), "-I", "-c", "import memspec"],
                             capture_output=True, text=True, timeout=120)
    assert blocked.returncode != 0 and "No module named 'memspec'" in blocked.stderr
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MEMSPEC_ROOT", "VIRTUAL_ENV", "TIKTOKEN_CACHE_DIR",
                        "NO_PROXY", "no_proxy", "INSPECT_LOG_DIR")}
    env.update({name: NOWHERE for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                           "http_proxy", "https_proxy", "all_proxy")})
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", HOME=str(tmp_path / "home"),
               HF_HUB_OFFLINE="1")
    done = subprocess.run(["bash", "-c", f"set -eu\n{eval_line}\n"],
                          cwd=user, env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    logs = sorted((user / "logs").glob("*.eval"))
    assert len(logs) == 1, logs
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(logs[0]))
    assert log.status == "success", log.error
    # memspec_release: the programmatically scored items of the test split (the default).
    scored = [i["id"] for i in release_instances(typed_release)
              if i["answer"]["scorer"] != "judge" and i["fields"].get("split", "test") == "test"]
    assert sorted(str(s.id) for s in log.samples) == sorted(scored)
    assert all(s.scores and next(iter(s.scores.values())).value is not None
               for s in log.samples)
    assert log.results.total_samples == log.results.completed_samples == len(scored)
    # tiktoken read the encoding the export carries (nothing was fetched).
    assert json.loads((user / "inspect" / "design.json").read_text())["release"] == "mix-v1"
    assert list((user / "inspect" / "tiktoken").iterdir())
