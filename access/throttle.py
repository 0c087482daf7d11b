"""Token buckets that throttle failed authentications, per client address and per key id.

Each failure takes a token from the bucket of the address it came from and of the key id
it named; a bucket refills at ``per_second`` up to ``burst``. While any bucket a request
would charge is empty, a request naming a key id that was never issued is refused (429)
before anything is looked up, so guessing costs the guesser time, not the database; one
naming an issued key still has its secret checked (against the cached row), and passes
when it is right: failures that others made naming the key's id, or from the same
address, never lock its owner out (the API's gate, ``api/gate.py``). A wrong secret is
429 then. Guessing a secret is hopeless anyway: keys carry 256 random bits.

The address is the direct peer's (``scope["client"]``; X-Forwarded-For is not trusted),
so clients behind one proxy share an allowance. The state lives in this process: with N
API processes a client gets N allowances.
That bounds the rate well enough against guessing (keys carry 256 random bits); a
shared store would be needed only to make the allowance exact. Pure: the clock is given.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class FailureThrottle:
    def __init__(self, burst: int, per_second: float, max_tracked: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.per_second, self.max_tracked, self.clock = burst, per_second, max_tracked, clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def retry_after(self, keys: Iterable[str]) -> int:
        """0 when every bucket of ``keys`` has a token left, else whole seconds to wait."""
        now = self.clock()
        lacking = [1.0 - self._refilled(key, now) for key in keys]
        worst = max(lacking, default=0.0)
        return 0 if worst <= 0 else max(1, math.ceil(worst / self.per_second))

    def failed(self, keys: Iterable[str]) -> None:
        """Charge one failure to each of ``keys``."""
        now = self.clock()
        for key in keys:
            tokens = self._refilled(key, now)
            self._buckets[key] = _Bucket(max(0.0, tokens - 1.0), now)
            self._buckets.move_to_end(key)
        while len(self._buckets) > self.max_tracked:
            self._buckets.popitem(last=False)  # the longest idle: nearest to full again anyway

    def _refilled(self, key: str, now: float) -> float:
        bucket = self._buckets.get(key)
        if bucket is None:
            return float(self.burst)
        return min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.per_second)
