"""An OTLP/HTTP logs receiver in its own process: decodes each ExportLogsServiceRequest
with opentelemetry-proto and appends one JSON line per log record to a file.

    python -m tests.otlp_receiver PORT OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)


def main() -> None:
    port, out = int(sys.argv[1]), sys.argv[2]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            request = ExportLogsServiceRequest()
            request.ParseFromString(self.rfile.read(int(self.headers.get("content-length", 0))))
            with open(out, "a") as sink:
                for resource in request.resource_logs:
                    for scope in resource.scope_logs:
                        for record in scope.log_records:
                            row = MessageToDict(record)
                            row["trace_id_hex"] = record.trace_id.hex()
                            row["span_id_hex"] = record.span_id.hex()
                            row["attrs"] = {kv.key: MessageToDict(kv.value) for kv in record.attributes}
                            sink.write(json.dumps(row) + "\n")
            body = ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
