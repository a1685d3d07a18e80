"""The README's examples work as written."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from conftest import REPO, run_cli


def test_quick_start_is_the_two_commands() -> None:
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Quick start\n\n```\n(.*?)```", text, re.S)
    assert block is not None
    assert block.group(1).splitlines() == ["pip install -e . && memspec build",
                                           "pip install -e '.[test]' && pytest"]
    ci = (REPO / ".ci" / "run").read_text()
    assert "pip install -e '.[test]' && pytest" in ci


class _ChatHandler(http.server.BaseHTTPRequestHandler):
    """A loopback chat-completion endpoint that always picks option B."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["messages"] and body["model"] == "test-model"
        reply = json.dumps({"choices": [{"message": {"content": "B"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


def test_chat_completion_example_produces_scorable_responses(built_example: Path,
                                                             tmp_path: Path) -> None:
    text = (REPO / "README.md").read_text()
    code = re.search(r"## Scoring responses.*?```python\n(.*?)```", text, re.S)
    assert code is not None
    assert len(code.group(1).strip().splitlines()) <= 12
    shutil.copytree(built_example, tmp_path / "dist" / "example-v1")
    server = http.server.HTTPServer(("127.0.0.1", 0), _ChatHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"CHAT_URL": f"http://127.0.0.1:{server.server_port}/v1/chat/completions",
               "API_KEY": "unused", "MODEL": "test-model", "PATH": "/usr/bin:/bin"}
        result = subprocess.run([sys.executable, "-c", code.group(1)], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    then = re.search(r"## Scoring responses.*?Then:\n\n```\n(.*?)```", text, re.S)
    assert then is not None
    outputs = []
    for line in then.group(1).splitlines():  # the commands as written, run in that folder
        words = line.split()
        assert words[0] == "memspec"
        outputs.append(run_cli(*words[1:], cwd=tmp_path))
        assert outputs[-1].returncode == 0, (line, outputs[-1].stderr)
    report = json.loads(outputs[-1].stdout)
    assert report["overall"]["answered"] == 144 and report["overall"]["missing"] == 0
    choice = next(g["metrics"] for g in report["groups"]
                  if g["key"] == {"family": "example.choice.meeting_room"})
    # Always "B": right in exactly one rotation of three in every group.
    assert choice["accuracy"] == 1 / 3
