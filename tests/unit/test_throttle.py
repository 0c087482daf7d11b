"""The failed-authentication throttle: a burst, then one try per refill interval."""

from __future__ import annotations

from access.throttle import FailureThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_of_failures_is_allowed_then_the_client_waits() -> None:
    clock = Clock()
    throttle = FailureThrottle(burst=3, per_second=0.5, clock=clock)
    for _ in range(3):
        assert throttle.retry_after(["address:a"]) == 0
        throttle.failed(["address:a"])

    assert throttle.retry_after(["address:a"]) == 2  # one token refills in 2 s
    clock.now = 1.0
    assert throttle.retry_after(["address:a"]) == 1
    clock.now = 2.0
    assert throttle.retry_after(["address:a"]) == 0


def test_any_exhausted_bucket_refuses_and_others_are_untouched() -> None:
    throttle = FailureThrottle(burst=2, per_second=1.0, clock=Clock())
    throttle.failed(["address:a", "key:k1"])
    throttle.failed(["address:b", "key:k1"])

    assert throttle.retry_after(["address:c", "key:k1"]) == 1  # the key id is spent
    assert throttle.retry_after(["address:a", "key:k2"]) == 0  # one failure each: room left
    assert throttle.retry_after(["address:c"]) == 0


def test_the_number_of_tracked_clients_is_bounded() -> None:
    throttle = FailureThrottle(burst=1, per_second=1.0, max_tracked=10, clock=Clock())
    for i in range(100):
        throttle.failed([f"address:{i}"])

    assert len(throttle._buckets) == 10
    assert throttle.retry_after(["address:99"]) == 1
    assert throttle.retry_after(["address:0"]) == 0  # forgotten: the longest idle went first
