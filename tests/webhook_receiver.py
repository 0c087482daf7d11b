"""A webhook receiver as a user would run one: its own process, verifying each delivery with
the `standardwebhooks` package (not the server's code) and appending one JSON line per
request to a file: the message id, whether the signature verified, and the body.

    python -m tests.webhook_receiver PORT SECRET OUT.jsonl [--delay S] [--status N]
"""

from __future__ import annotations

import argparse
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("secret")
    parser.add_argument("out")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--status", type=int, default=200)
    args = parser.parse_args()
    hook = Webhook(args.secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                hook.verify(body, headers)
                valid = True
            except WebhookVerificationError:
                valid = False
            time.sleep(args.delay)
            with open(args.out, "a") as out:
                out.write(json.dumps({"id": headers.get("webhook-id"), "valid": valid,
                                      "body": json.loads(body)}) + "\n")
            self.send_response(args.status)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
