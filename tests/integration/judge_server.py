"""An OpenAI-compatible judge endpoint for the tests: a real HTTP server on localhost whose
answers a test scripts (the model is the script). It counts the calls, so a test can show
that a re-score asked nobody."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[list[dict[str, str]]], str]


class JudgeServer:
    def __init__(self, answer: Answer, port: int = 0, base_digest: str | None = None) -> None:
        self.answer, self.base_digest = answer, base_digest
        self.calls: list[dict[str, Any]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> JudgeServer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls.append({**body, "judge_header": self.headers.get("X-HCP-Judge")})
                text = outer.answer(body["messages"])
                reply = json.dumps({"id": "chatcmpl-judge", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                if outer.base_digest is not None:
                    self.send_header("X-HCP-Base-Digest", outer.base_digest)
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_: object) -> None:
                return

        return Handler


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
