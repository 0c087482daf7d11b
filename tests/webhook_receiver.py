"""A webhook receiver as a user would run one: its own process, verifying each delivery with
the `standardwebhooks` package (not the server's code) and appending one JSON line per
request to a file: the message id, whether the signature verified, the Host header and the
body. The line is written before the answer, so a test sees a request a slow answer holds.

    python -m tests.webhook_receiver PORT SECRET OUT.jsonl [--delay S] [--status N]
        [--body TEXT] [--body-bytes N] [--drip S] [--redirect URL]

``--body`` answers that text; ``--body-bytes`` that many bytes, written a MiB at a time
(never held whole); ``--drip`` answers one byte every S seconds, forever; ``--redirect``
answers 307 to that URL. A hostile receiver is these.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

MIB = b"x" * (1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("secret")
    parser.add_argument("out")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--status", type=int, default=200)
    parser.add_argument("--body", default="")
    parser.add_argument("--body-bytes", type=int, default=0)
    parser.add_argument("--drip", type=float, default=0.0)
    parser.add_argument("--redirect", default="")
    args = parser.parse_args()
    hook = Webhook(args.secret)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                hook.verify(body, headers)
                valid = True
            except WebhookVerificationError:
                valid = False
            with open(args.out, "a") as out:
                out.write(json.dumps({"id": headers.get("webhook-id"), "valid": valid,
                                      "host": headers.get("host"), "body": json.loads(body)}) + "\n")
            time.sleep(args.delay)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer()  # the sender may hang up: what a sender that stops reading does

        def _answer(self) -> None:
            if args.drip:
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(args.drip)
            if args.redirect:
                self.send_response(307)
                self.send_header("Location", args.redirect)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            size = args.body_bytes or len(args.body.encode())
            self.send_response(args.status)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if not args.body_bytes:
                self.wfile.write(args.body.encode())
                return
            for start in range(0, size, len(MIB)):
                self.wfile.write(MIB[:min(len(MIB), size - start)])

        def log_message(self, *_: object) -> None:
            pass

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
