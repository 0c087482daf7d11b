"""Memory a finished training run freed, handed back to the system."""

from __future__ import annotations

import contextlib
import ctypes
import gc


def release_freed() -> None:
    """Give the system back what a finished run freed. glibc keeps freed heap blocks in the
    arena of the thread that freed them, and a training run frees GBs (its model, its
    optimiser, each step's activations): without this the gate that follows in the same
    process generates on top of them, and the process's peak is the sum. A no-op where the
    C library is not glibc."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)
