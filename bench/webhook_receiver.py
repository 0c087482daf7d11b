"""A webhook receiver for bench/webhooks.py, in a process of its own: each delivery is
checked with the `standardwebhooks` package and one JSON line is appended to a file: the
webhook-id, whether it verified, when it arrived (wall clock, seconds), and the event's
recorded_at from the body (the commit's time).

    python bench/webhook_receiver.py PORT SECRET OUT.jsonl [--delay S]
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("secret")
    parser.add_argument("out")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args()
    hook = Webhook(args.secret)
    out = open(args.out, "a", buffering=1)  # noqa: SIM115 (the process's whole life)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            arrived = time.time()
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                hook.verify(body, headers)
                valid = True
            except WebhookVerificationError:
                valid = False
            recorded = datetime.fromisoformat(json.loads(body)["data"]["recorded_at"]).timestamp()
            out.write(json.dumps({"id": headers.get("webhook-id"), "valid": valid,
                                  "arrived": arrived, "recorded": recorded}) + "\n")
            time.sleep(args.delay)
            self.send_response(204)
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802 (a liveness probe)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
