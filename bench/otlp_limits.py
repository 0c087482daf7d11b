"""What the OTLP bounds cost: refusing a decompression bomb, and checking an honest export.

    .venv/bin/python bench/otlp_limits.py [--bomb-spans 1000000] [--per-request 50] [--repeats 5]

In process, no server (``integrations.otlp.decode``, what POST /v1/traces calls first):

* the bomb: an ExportTraceServiceRequest of ``--bomb-spans`` empty spans, gzip'd (about
  2 KB for a million). Figure: the time ``decode`` takes to refuse it under the default
  bounds. Ceiling: the time ``decode`` takes with the bounds lifted (what the server spent
  before they existed: every span built). The ratio says how much of that is left.
* an honest export: ``--per-request`` GenAI chat spans as bench/otlp.py sends them. Figure:
  the wire walk alone (``check_protobuf``); peer: the whole ``decode`` of the same body,
  walk included. The ratio is the walk's share of decoding.

Each repeat measures both sides back to back; ratios are the median of per-repeat ratios.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time
from collections.abc import Callable

from load import load_average
from otlp import chat_span, export_request

from integrations.otlp.decode import decode
from integrations.otlp.limits import OtlpLimits, OtlpTooLarge, check_protobuf

PROTOBUF = "application/x-protobuf"
LIFTED = OtlpLimits(max_inflated=1 << 40, max_spans=1 << 40, max_items=1 << 40)


def _field(number: int, payload: bytes) -> bytes:
    size, out = len(payload), bytearray([number << 3 | 2])
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    return bytes(out + bytes([size]) + payload)


def bomb(spans: int) -> bytes:
    return gzip.compress(_field(1, _field(2, _field(2, b"") * spans)))


def seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def refuse(body: bytes) -> None:
    try:
        decode(body, PROTOBUF, "gzip", OtlpLimits())
    except OtlpTooLarge:
        return
    raise SystemExit("the bomb was not refused")


def main() -> None:
    args = parse_args()
    body = bomb(args.bomb_spans)
    honest = export_request([chat_span(n) for n in range(args.per_request)]).SerializeToString()
    print(f"load {load_average()}; bomb {len(body)} bytes gzip, {args.bomb_spans} spans; "
          f"honest export {len(honest)} bytes, {args.per_request} spans")
    bombs, honests = [], []
    for repeat in range(args.repeats):
        refused = seconds(lambda: refuse(body))
        built = seconds(lambda: decode(body, PROTOBUF, "gzip", LIFTED)) if repeat < 2 else None
        walk = min(seconds(lambda: check_protobuf(honest, OtlpLimits())) for _ in range(20))
        whole = min(seconds(lambda: decode(honest, PROTOBUF, "", OtlpLimits())) for _ in range(20))
        honests.append(walk / whole)
        if built is not None:
            bombs.append(refused / built)
            print(f"repeat {repeat}: bomb refused in {refused * 1000:.1f} ms, decoded whole in "
                  f"{built:.2f} s (ratio {refused / built:.4f}); honest walk {walk * 1e3:.2f} ms "
                  f"of decode {whole * 1e3:.2f} ms ({walk / whole:.2f})")
        else:
            print(f"repeat {repeat}: bomb refused in {refused * 1000:.1f} ms; honest walk "
                  f"{walk * 1e3:.2f} ms of decode {whole * 1e3:.2f} ms ({walk / whole:.2f})")
    print(f"bomb: refused/decoded median ratio {statistics.median(bombs):.4f}; "
          f"honest export: walk/decode median ratio {statistics.median(honests):.2f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-spans", type=int, default=1_000_000)
    parser.add_argument("--per-request", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    return parser.parse_args()


if __name__ == "__main__":
    main()
