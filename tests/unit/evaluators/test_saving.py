"""BackgroundSave: one save in flight, its result or error handed back by ``wait``."""

from __future__ import annotations

import threading

import pytest

from evaluators.saving import BackgroundSave


def test_a_save_runs_in_another_thread_and_wait_returns_its_result() -> None:
    saves, ran_on = BackgroundSave(0), []
    assert saves.wait() == 0  # nothing in flight

    saves.submit(lambda: ran_on.append(threading.current_thread()) or 3)
    assert saves.in_flight
    assert saves.wait() == 3
    assert not saves.in_flight and ran_on != [threading.current_thread()]


def test_a_second_save_is_refused_until_the_first_is_collected() -> None:
    saves, release = BackgroundSave(0), threading.Event()
    saves.submit(lambda: int(release.wait(5)))
    with pytest.raises(RuntimeError, match="in flight"):
        saves.submit(lambda: 0)
    release.set()
    assert saves.wait() == 1
    saves.submit(lambda: 2)
    assert saves.wait() == 2


def test_a_failed_save_raises_on_wait_once() -> None:
    saves = BackgroundSave(0)

    def fail() -> int:
        raise ValueError("the transaction failed")

    saves.submit(fail)
    with pytest.raises(ValueError, match="transaction failed"):
        saves.wait()
    assert not saves.in_flight and saves.wait() == 0
