"""Concurrent requests for different adapters decode in one batch, each row with its own
adapter (and the bare base), and each answer is what that adapter alone would say; a
request too long for the model is refused alone, the others in its batch answered."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


def world(tmp_path: Path, window_s: float) -> tuple[Any, Any, list[str]]:
    from inference.embedded.engine import EmbeddedEngine
    from inference.types import BaseModel
    from tests.serving_world import lora_dir
    from trainer.ml.digest import weights_sha256
    from trainer.ml.tiny_model import build_tiny_base_model
    from trainer.registry.artifacts import LocalArtifactStore

    base_dir = build_tiny_base_model(tmp_path / "base", seed=0)
    store = LocalArtifactStore(tmp_path / "artifacts")
    digests = [store.put_dir(lora_dir(base_dir, tmp_path / f"a{s}", s)).sha256 for s in range(4)]
    base = BaseModel("tiny", str(base_dir), weights_sha256(base_dir))
    return EmbeddedEngine(store.open_dir, "cpu", 8, window_s=window_s, max_rows=16), base, digests


def ask(base: Any, digest: str | None, messages: list[dict[str, str]], n: int,
        on_delta: Any = None, **decoding: Any) -> tuple[Any, Any]:
    """A request for ``digest`` on ``base`` (None: the bare base), with its stream."""
    from inference.types import Adapter, Decoding, Request, Target

    target = Target(base, Adapter(digest) if digest else None, "fp32")
    return Request(target, tuple(messages), n, Decoding(**decoding)), on_delta


def test_four_adapters_and_the_base_share_a_batch(tmp_path: Path) -> None:
    from inference.embedded.batcher import PromptTooLong

    engine, base, digests = world(tmp_path, 0.5)
    messages = [{"role": "user", "content": "hello there"}]
    alone = {d: engine.submit(*ask(base, d, messages, 10)).result().text for d in [None, *digests]}
    assert len(set(alone.values())) == 5  # every adapter answers differently
    before = engine.batches
    too_long = [{"role": "user", "content": "x" * 600}]
    futures = [engine.submit(*ask(base, d, messages, 10)) for d in [*digests, None, *digests]]
    refused = engine.submit(*ask(base, digests[0], too_long, 10))
    assert [f.result().text for f in futures] == [alone[d] for d in [*digests, None, *digests]]
    assert engine.batches == before + 1  # one batch for all nine
    with pytest.raises(PromptTooLong, match="exceeds the model's context of 512"):
        refused.result()


def test_requests_join_a_running_batch_and_answer_as_alone(tmp_path: Path) -> None:
    engine, base, digests = world(tmp_path, 0.0)
    asks = [("hello there", digests[0], 40), ("a much longer question, padded differently",
                                              digests[1], 6), ("hi", None, 9), ("ok?", digests[2], 12)]

    def job(text: str, digest: str | None, n: int, **kw: Any) -> tuple[Any, Any]:
        return ask(base, digest, [{"role": "user", "content": text}], n, **kw)

    alone = [engine.submit(*job(*a)).result().text for a in asks]
    started = threading.Event()
    first = engine.submit(*job(*asks[0], on_delta=lambda _: started.set()))
    assert started.wait(30)
    before = engine.batches
    later = [engine.submit(*job(*a)) for a in asks[1:]]
    texts = [f.result().text for f in [first, *later]]
    assert texts == alone
    assert engine.batches == before  # they joined the batch the first one was decoding in
    assert later[0].done() and later[0].result().seconds < first.result().seconds
