"""The vLLM engine: generation forwarded to a vLLM OpenAI server with LoRA enabled.

vLLM serves many adapters on one base and batches them together on the GPU (its
``--enable-lora``). Each adapter is loaded there by digest with the runtime LoRA API
(``POST /v1/load_lora_adapter``, which needs ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``)
under the name ``a<sha256>``, from the artifact directory this process opened and
hash-checked (vLLM must see the same filesystem). A name is never reused for other
bytes, so vLLM's same-name reload problems cannot serve stale weights. Prompts are sent
as token ids rendered exactly as the embedded engine and the trainer render them
(``trainer.ml.prompts``), to ``/v1/completions``; vLLM must serve the registered base
model's directory (checked against ``/v1/models``' ``root`` on first use). vLLM has no
stop rules (only strings): it runs on, and the text is cut where the rule says.

Offline jobs go as one request per prompt batch (``n`` = k, the job's seed); the base's
representation of a text (the learned router) is the embedded engine's, given here.

Unverified on a GPU in this repository's CI: scripts/gpu_check_vllm.sh is the check; the
tests run it against a stand-in for vLLM's HTTP API.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from inference.embedded.pool import adapter_name
from inference.engine import Engine, EngineUnavailable
from inference.stops import cut_by_rule
from inference.types import (
    BaseModel,
    Delta,
    GenStats,
    Readiness,
    Request,
    Result,
    Sample,
    SampleJob,
    Target,
)
from kernel.errors import Invalid

log = logging.getLogger(__name__)


class VllmUnavailable(EngineUnavailable):
    pass


class VllmEngine:
    name = "vllm"
    # Not forwarded yet (vLLM takes a grammar and logprobs, but this path is unverified on a
    # GPU): the gateway refuses such requests with a 400 instead of ignoring them.
    constrains = False

    def __init__(self, url: str, open_dir: Callable[[str], Path], timeout_s: float,
                 client: httpx.Client | None = None, local: Engine | None = None) -> None:
        if not url and client is None:
            raise Invalid("HCP_SERVING_BACKEND=vllm needs HCP_VLLM_URL")
        self.http = client or httpx.Client(base_url=url, timeout=timeout_s)
        self.open_dir, self.local = open_dir, local
        self.loaded: set[str] = set()
        self.lock = threading.Lock()
        self.tokenizers: dict[str, Any] = {}
        self.base_name: str | None = None

    def generate(self, request: Request, on_delta: Delta | None = None) -> Result:
        from trainer.ml.prompts import prompt_ids

        started, decoding = time.perf_counter(), request.decoding
        prompt = prompt_ids(self._tokenizer(request.target.base), "", request.messages)
        body: dict[str, Any] = {"model": self._model(request.target), "prompt": prompt,
                                "max_tokens": request.max_new_tokens,
                                "temperature": decoding.temperature,
                                "stop": list(decoding.stops) or None, "seed": decoding.seed}
        if on_delta is None:
            answer = self._post("/v1/completions", body).json()
            pick = answer["choices"][0]
            usage = answer.get("usage") or {}
            text, finish = str(pick.get("text") or ""), str(pick.get("finish_reason") or "stop")
        else:
            text, finish, usage = self._stream(body, on_delta)
        text, finish = cut_by_rule(text, finish, decoding.stop_rule)
        return Result(text, int(usage.get("prompt_tokens", len(prompt))),
                      int(usage.get("completion_tokens", 0)),
                      "length" if finish == "length" else "stop", time.perf_counter() - started)

    def sample(self, job: SampleJob, stats: GenStats | None = None) -> list[Sample]:
        from trainer.ml.prompts import prompt_ids

        started, tok = time.perf_counter(), self._tokenizer(job.target.base)
        prompts = [prompt_ids(tok, p.text, p.messages) for p in job.prompts]
        if job.max_prompt_tokens is not None:
            prompts = [p[-job.max_prompt_tokens:] for p in prompts]
        out: list[Sample] = []
        per = max(1, job.batch_rows // job.k)
        for start in range(0, len(prompts), per):
            body = {"model": self._model(job.target), "prompt": prompts[start:start + per],
                    "max_tokens": job.max_new_tokens, "temperature": job.temperature,
                    "n": job.k, "seed": job.seed + start}
            for pick in sorted(self._post("/v1/completions", body).json()["choices"],
                               key=lambda c: int(c.get("index", 0))):
                text, finish = cut_by_rule(str(pick.get("text") or ""),
                                           str(pick.get("finish_reason") or "stop"), job.stop_rule)
                out.append(Sample(start + int(pick.get("index", 0)) // job.k, text,
                                  len(tok(text, add_special_tokens=False)["input_ids"]),
                                  finish != "length"))
        if stats is not None:
            stats.seconds += time.perf_counter() - started
            stats.new_tokens += sum(s.new_tokens for s in out)
        return sorted(out, key=lambda s: s.prompt_index)

    def represent(self, target: Target, texts: Sequence[str]) -> Any:
        if self.local is None:
            raise VllmUnavailable("the vLLM engine has no local engine for the router's features")
        return self.local.represent(target, texts)

    def warm(self, target: Target) -> None:
        self._model(target)

    def liveness(self) -> str | None:
        return None  # no thread of its own here; the vLLM server reports its own health

    def readiness(self) -> Readiness:
        try:
            self._get("/v1/models")
        except VllmUnavailable as exc:
            return Readiness(False, str(exc))
        return Readiness(True, "the vLLM server answers", (self.base_name,) if self.base_name else ())

    def _stream(self, body: dict[str, Any], on_delta: Delta) -> tuple[str, str, dict[str, Any]]:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        parts: list[str] = []
        finish, usage = "stop", dict[str, Any]()
        with self.http.stream("POST", "/v1/completions", json=body) as response:
            _raise_for(response)
            for chunk in _events(response.iter_lines()):
                for pick in chunk.get("choices") or []:
                    if pick.get("text"):
                        parts.append(pick["text"])
                        on_delta(pick["text"])
                    finish = pick.get("finish_reason") or finish
                usage = chunk.get("usage") or usage
        return "".join(parts), finish, usage

    def _model(self, target: Target) -> str:
        with self.lock:
            if self.base_name is None:
                self.base_name = self._check_base(target.base)
            if target.adapter is None:
                return self.base_name
            name = adapter_name(target.adapter.digest)
            if name not in self.loaded:
                # re-hashed on open: the bytes are the digest's
                path = target.adapter.directory or self.open_dir(target.adapter.digest)
                self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)},
                           ok_if="already")
                self.loaded.add(name)
            return name

    def _check_base(self, base: BaseModel) -> str:
        models = self._get("/v1/models").json().get("data", [])
        bases = [m for m in models if not m.get("parent")]
        if not bases:
            raise VllmUnavailable("the vLLM server lists no base model")
        root = str(bases[0].get("root") or "")
        if root and Path(root).resolve() != Path(base.path).resolve():
            # The paths go to the log only: a tenant's chat request can meet this error.
            log.error("vLLM serves %s, not the registered base %s at %s", root, base.name, base.path)
            raise VllmUnavailable(f"the vLLM server serves another model than the registered "
                                  f"base '{base.name}'")
        return str(bases[0]["id"])

    def _tokenizer(self, base: BaseModel) -> Any:
        found = self.tokenizers.get(base.weights_sha256)
        if found is None:
            from trainer.ml.load import load_tokenizer

            found = self.tokenizers[base.weights_sha256] = load_tokenizer(base.path)
        return found

    def _get(self, path: str) -> httpx.Response:
        try:
            response = self.http.get(path)
        except httpx.TransportError as exc:
            raise VllmUnavailable(f"vLLM cannot be reached: {exc}") from None
        _raise_for(response)
        return response

    def _post(self, path: str, body: dict[str, Any], ok_if: str | None = None) -> httpx.Response:
        try:
            response = self.http.post(path, json=body)
        except httpx.TransportError as exc:
            raise VllmUnavailable(f"vLLM cannot be reached: {exc}") from None
        if ok_if is not None and response.status_code == 400 and ok_if in response.text:
            return response
        _raise_for(response)
        return response


def _raise_for(response: httpx.Response) -> None:
    if response.status_code >= 400:
        response.read()
        raise VllmUnavailable(f"vLLM answered {response.status_code}: {response.text[:300]}")


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])
