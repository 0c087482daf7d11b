"""The garbage collector's settings for a long-running process (`hcp serve`, `hcp evaluator`).

CPython's cyclic collector walks every tracked object of a generation; a full collection
walks the whole process (modules, compiled SQL, the container's pools, compiled
contracts): tens to hundreds of milliseconds each. A worker that builds all of that once
at startup and then churns through short-lived batches moves the startup objects out of
the collector's sight (``gc.freeze``: they live as long as the process anyway) and
collects the young generation less often, so fewer of a batch's objects are still alive
at a collection and get promoted towards the full ones.
"""

from __future__ import annotations

import gc

# The youngest generation is collected after this many more allocations than frees
# (CPython's default: 700). A batch allocates and drops tens of thousands of objects.
YOUNG_THRESHOLD = 50_000


def settle_garbage_collector(young_threshold: int = YOUNG_THRESHOLD) -> None:
    """Call once startup is done: collect, freeze what survives, raise the young threshold."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young_threshold, older, oldest)
