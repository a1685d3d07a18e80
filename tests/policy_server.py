"""An OpenAI-compatible chat server on 127.0.0.1 that answers as one of memspec's reference
policies: inspect_ai's own openai-api provider talks to it over real HTTP, so a test of
`memspec run` goes through inspect's real client into a real inspect log.

It knows each instance by the messages the exported inspect task sends for it (the sample's
input, as `memspec export --format inspect` writes it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memspec.analysis.policies import POLICIES


def _text(content: Any) -> str:
    """A chat message's content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def message_key(messages: list[Mapping[str, Any]]) -> str:
    """What identifies a conversation: each message's role and text."""
    return json.dumps([[m["role"], _text(m["content"])] for m in messages])


class PolicyServer:
    """The server, started on ``port`` of 127.0.0.1 (a free one if 0) and stopped as a
    context manager;
    ``requests`` counts the completions it answered, ``on_request`` (if set) is called after
    each with that count."""

    def __init__(self, samples_file: Path, instances: list[Mapping[str, Any]], policy: str,
                 port: int = 0) -> None:
        by_id = {i["id"]: i for i in instances}
        act = POLICIES[policy]
        self.answers: dict[str, str] = {}
        for line in samples_file.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            self.answers[message_key(sample["input"])] = act(by_id[sample["id"]], 0)
        self.requests = 0
        self.unknown = 0
        self.on_request: Callable[[int], None] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = message_key(body["messages"])
                with server._lock:
                    server.requests += 1
                    count = server.requests
                    if key not in server.answers:
                        server.unknown += 1
                text = server.answers.get(key, "(an unknown conversation)")
                reply = json.dumps({
                    "id": f"chatcmpl-{count}", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                if server.on_request is not None:
                    server.on_request(count)

        return Handler

    def __enter__(self) -> PolicyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
