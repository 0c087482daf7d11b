"""The vLLM backend against a stand-in for vLLM's HTTP API (httpx's MockTransport): each
adapter loaded once by digest from its hash-checked directory, prompts sent as the
embedded backend's token ids, streamed text passed on, a wrong base refused."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from contract.document import parse_contract
from harness.router import Route
from serving.choice import BaseRef, Choice, SlotConfig
from serving.gateway import BackendFailed
from serving.vllm import VllmBackend
from tests.serving_world import DOCUMENT

pytest.importorskip("transformers")


USAGE = {"prompt_tokens": 7, "completion_tokens": 2}


class FakeVllm:
    def __init__(self, root: str) -> None:
        self.root, self.calls, self.lora = root, [], {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.calls.append((request.url.path, body))
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "base", "root": self.root, "parent": None}]})
        if request.url.path == "/v1/load_lora_adapter":
            self.lora[body["lora_name"]] = body["lora_path"]
            return httpx.Response(200, text="Success")
        assert body["model"] in ("base", *self.lora), body["model"]
        if body.get("stream"):
            lines = [f"data: {json.dumps({'choices': [{'text': t, 'finish_reason': None}]})}"
                     for t in ("he", "llo")]
            lines += [f"data: {json.dumps({'choices': [{'text': '', 'finish_reason': 'length'}]})}",
                      "data: " + json.dumps({"choices": [], "usage": USAGE}),
                      "data: [DONE]"]
            return httpx.Response(200, text="\n\n".join(lines))
        return httpx.Response(200, json={"choices": [{"text": "hi", "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": len(body["prompt"]),
                                                   "completion_tokens": 1}})


def choice(base: BaseRef, digest: str | None) -> Choice:
    config = SlotConfig("serve", 1, "h", parse_contract(DOCUMENT).harness)
    return Choice("chat", "chat@1" if digest else "chat@0", "chat@1" if digest else None, digest,
                  "production", base, config, Route("chat", {}, False), "named", "chat")


def test_adapters_load_once_by_digest_and_answers_come_back(tmp_path: Path) -> None:
    from trainer.ml.tiny_model import build_tiny_base_model

    base_dir = build_tiny_base_model(tmp_path / "base", seed=0, hidden_size=32, num_layers=1,
                                     num_heads=2, max_positions=128)
    base = BaseRef("tiny", str(base_dir), "w")
    fake, opened = FakeVllm(str(base_dir)), []
    backend = VllmBackend("", lambda d: opened.append(d) or tmp_path / d, 5,
                          httpx.Client(transport=httpx.MockTransport(fake), base_url="http://vllm"))
    messages = [{"role": "user", "content": "hi"}]
    digest = "ab" * 32
    for _ in range(2):
        result = backend.generate(choice(base, digest), messages, 4, 0.0, None, [], None)
        assert (result.text, result.finish, result.completion_tokens) == ("hi", "stop", 1)
    assert opened == [digest] and fake.lora == {f"a{digest}": str(tmp_path / digest)}
    sent = [body for path, body in fake.calls if path == "/v1/completions"]
    assert all(isinstance(b["prompt"], list) and b["model"] == f"a{digest}" for b in sent)
    streamed: list[str] = []
    result = backend.generate(choice(base, None), messages, 4, 0.0, None, [], streamed.append)
    assert streamed == ["he", "llo"] and (result.text, result.finish, result.prompt_tokens) == \
        ("hello", "length", 7)


def test_a_vllm_serving_another_base_is_refused(tmp_path: Path) -> None:
    fake = FakeVllm("/somewhere/else")
    backend = VllmBackend("", lambda d: tmp_path, 5,
                          httpx.Client(transport=httpx.MockTransport(fake), base_url="http://vllm"))
    backend.tokenizers["w"] = object()
    with pytest.raises(BackendFailed, match="not the registered base"):
        backend._model(choice(BaseRef("tiny", str(tmp_path), "w"), None))
