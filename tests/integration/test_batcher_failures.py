"""One decoding thread answers every tenant: whatever a group of requests raises goes to
those requests only and the thread goes on; a stream receiver that fails ends its own row;
a thread that stops anyway is reported and refuses at once instead of queueing forever."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_mixed_batches import ask, world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
HELLO = [{"role": "user", "content": "hello there"}]


def test_a_group_that_raises_fails_its_requests_and_the_next_ones_are_answered(
        tmp_path: Path) -> None:
    engine, base, digests = world(tmp_path, 0.0)
    bad = engine.submit(*ask(base, digests[0], HELLO, 4, seed=2**70))  # past the API's check
    with pytest.raises(ValueError, match="Overflow"):
        bad.result(timeout=60)
    after = [engine.submit(*ask(base, d, HELLO, 4)) for d in (digests[0], None)]
    assert all(f.result(timeout=60).completion_tokens == 4 for f in after)
    assert engine.batcher.failed_groups == 1 and engine.liveness() is None


def test_a_stream_receiver_that_raises_ends_its_own_row_only(tmp_path: Path) -> None:
    engine, base, digests = world(tmp_path, 0.5)
    alone = engine.submit(*ask(base, digests[1], HELLO, 12)).result(timeout=60).text

    def broken(_: str) -> None:
        raise ValueError("the client went away")

    before = engine.batches
    failing = engine.submit(*ask(base, digests[0], HELLO, 12, on_delta=broken))
    other = engine.submit(*ask(base, digests[1], HELLO, 12))
    with pytest.raises(ValueError, match="went away"):
        failing.result(timeout=60)
    assert other.result(timeout=60).text == alone
    assert engine.batches == before + 1 and engine.batcher.failed_groups == 0


class _Stop(BaseException):
    """What no handler of the loop catches: the thread ends, as by a bug of its own."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_stopped_thread_is_reported_and_refuses_at_once(tmp_path: Path) -> None:
    from inference.embedded.batcher import BatcherStopped

    engine, base, _ = world(tmp_path, 0.0)
    entered, release = threading.Event(), threading.Event()

    def stop(_: Any) -> None:
        entered.set()
        release.wait(30)
        raise _Stop

    dying = engine.submit(*ask(base, None, HELLO, 8, on_delta=stop))
    assert entered.wait(60)
    waiting = engine.submit(*ask(base, None, HELLO, 4))  # queued behind the dying batch
    release.set()
    with pytest.raises(BatcherStopped):
        waiting.result(timeout=30)
    with pytest.raises(BatcherStopped):
        dying.result(timeout=30)
    assert engine.liveness() == "decoding thread stopped"
    with pytest.raises(BatcherStopped):
        engine.submit(*ask(base, None, HELLO, 4)).result(timeout=1)


def test_a_request_behind_a_stuck_step_gets_its_503_at_the_deadline(tmp_path: Path) -> None:
    """Every wait has a deadline (HCP_SERVING_TIMEOUT_S): a request queued behind a step
    that does not end is answered 'busy' when it passes, liveness names the stuck step, and
    the abandoned row costs nothing once the thread moves again."""
    from inference.engine import EngineUnavailable

    engine, base, _ = world(tmp_path, 0.0)
    engine.timeout_s = 1.0  # before the first request: the thread's stall limit is this too
    entered, release = threading.Event(), threading.Event()

    def hold(_: str) -> None:
        entered.set()
        release.wait(30)

    stuck = engine.submit(*ask(base, None, HELLO, 8, on_delta=hold))
    assert entered.wait(60)
    try:
        started = time.monotonic()
        with pytest.raises(EngineUnavailable, match="HCP_SERVING_TIMEOUT_S"):
            engine.generate(*ask(base, None, HELLO, 4))
        assert time.monotonic() - started < 5
        assert engine.liveness() == "decoding step running for over 1 s"
    finally:
        release.set()
    assert stuck.result(timeout=60).completion_tokens >= 1
    assert engine.liveness() is None and engine.batcher.failed_groups == 0
