"""The vLLM engine against a stand-in for vLLM's HTTP API (httpx's MockTransport): each
adapter loaded once by digest from its hash-checked directory, prompts sent as the
embedded engine's token ids, streamed text passed on, a stop rule cut where vLLM ran on,
offline jobs as k samples per prompt, a wrong base refused."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from inference.engine import EngineUnavailable
from inference.types import Adapter, BaseModel, Decoding, Prompt, Request, SampleJob, Target
from inference.vllm import VllmEngine

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
        if isinstance(body["prompt"][0], list):  # several prompts, n answers each
            n = body.get("n", 1)
            return httpx.Response(200, json={"choices": [
                {"index": i, "text": f'{{"p": {i // n}}} and more', "finish_reason": "length"}
                for i in range(len(body["prompt"]) * n)]})
        return httpx.Response(200, json={"choices": [{"text": "hi", "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": len(body["prompt"]),
                                                   "completion_tokens": 1}})


def engine_on(fake: FakeVllm, opened: list[str], root: Path) -> VllmEngine:
    return VllmEngine("", lambda d: opened.append(d) or root / d, 5,
                      httpx.Client(transport=httpx.MockTransport(fake), base_url="http://vllm"))


def tiny(tmp_path: Path) -> BaseModel:
    from trainer.ml.tiny_model import build_tiny_base_model

    base_dir = build_tiny_base_model(tmp_path / "base", seed=0, hidden_size=32, num_layers=1,
                                     num_heads=2, max_positions=128)
    return BaseModel("tiny", str(base_dir), "w")


def test_adapters_load_once_by_digest_and_answers_come_back(tmp_path: Path) -> None:
    base = tiny(tmp_path)
    fake, opened = FakeVllm(base.path), []
    engine = engine_on(fake, opened, tmp_path)
    messages = ({"role": "user", "content": "hi"},)
    digest = "ab" * 32
    for _ in range(2):
        result = engine.generate(Request(Target(base, Adapter(digest)), messages, 4))
        assert (result.text, result.finish, result.completion_tokens) == ("hi", "stop", 1)
    assert opened == [digest] and fake.lora == {f"a{digest}": str(tmp_path / digest)}
    sent = [body for path, body in fake.calls if path == "/v1/completions"]
    assert all(isinstance(b["prompt"], list) and b["model"] == f"a{digest}" for b in sent)
    streamed: list[str] = []
    result = engine.generate(Request(Target(base), messages, 4), streamed.append)
    assert streamed == ["he", "llo"] and (result.text, result.finish, result.prompt_tokens) == \
        ("hello", "length", 7)
    assert engine.readiness().ready


def test_offline_jobs_are_k_samples_per_prompt_cut_by_the_stop_rule(tmp_path: Path) -> None:
    base = tiny(tmp_path)
    engine = engine_on(FakeVllm(base.path), [], tmp_path)
    job = SampleJob(Target(base), (Prompt("a"), Prompt("b"), Prompt("c")), 8, k=2,
                    temperature=0.5, seed=3, stop_rule="json", batch_rows=4)
    samples = engine.sample(job)
    assert [(s.prompt_index, s.text, s.stopped) for s in samples] == [
        (p, f'{{"p": {p % 2}}}', True) for p in (0, 0, 1, 1, 2, 2)]  # two prompts a request
    cut = engine.generate(Request(Target(base), ({"role": "user", "content": "x"},), 4,
                                  Decoding(stop_rule="line")))
    assert cut.text == "hi"


def test_a_vllm_serving_another_base_is_refused(tmp_path: Path) -> None:
    engine = engine_on(FakeVllm("/somewhere/else"), [], tmp_path)
    with pytest.raises(EngineUnavailable, match="another model than the registered base 'tiny'") as found:
        engine.warm(Target(BaseModel("tiny", str(tmp_path), "w")))
    assert str(tmp_path) not in str(found.value) and "/somewhere" not in str(found.value)
