"""The vLLM backend: generation forwarded to a vLLM OpenAI server with LoRA enabled.

vLLM serves many adapters on one base and batches them together on the GPU (its
``--enable-lora``). Each adapter is loaded there by digest with the runtime LoRA API
(``POST /v1/load_lora_adapter``, which needs ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``)
under the name ``a<sha256>``, from the artifact directory this process opened and
hash-checked (vLLM must see the same filesystem). A name is never reused for other
bytes, so vLLM's same-name reload problems cannot serve stale weights. The prompt is
sent as token ids rendered exactly as the embedded backend and the trainer render it
(``trainer.ml.prompts``), to ``/v1/completions``; vLLM must serve the registered base
model's directory (checked against ``/v1/models``' ``root`` on first use). The gateway
records the same events whichever backend generated.

Unverified on a GPU in this repository's CI: scripts/gpu_check_vllm.sh is the check.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from kernel.errors import Invalid
from serving.batcher import Delta, GenResult
from serving.choice import BaseRef, Choice
from serving.gateway import BackendFailed
from serving.pool import adapter_name


class VllmUnavailable(BackendFailed):
    pass


class VllmBackend:
    name = "vllm"

    def __init__(self, url: str, open_dir: Callable[[str], Path], timeout_s: float,
                 client: httpx.Client | None = None) -> None:
        if not url and client is None:
            raise Invalid("HCP_SERVING_BACKEND=vllm needs HCP_VLLM_URL")
        self.http = client or httpx.Client(base_url=url, timeout=timeout_s)
        self.open_dir = open_dir
        self.loaded: set[str] = set()
        self.lock = threading.Lock()
        self.tokenizers: dict[str, Any] = {}
        self.base_name: str | None = None

    def generate(self, choice: Choice, messages: list[dict[str, str]], max_new_tokens: int,
                 temperature: float, seed: int | None, stops: list[str],
                 on_delta: Delta | None, stop_after: str | None = None) -> GenResult:
        # vLLM has no stop rules (only strings): it runs on, and the gateway cuts the text.
        from trainer.ml.prompts import prompt_ids

        started = time.perf_counter()
        prompt = prompt_ids(self._tokenizer(choice.base), "", messages)
        body: dict[str, Any] = {"model": self._model(choice), "prompt": prompt,
                                "max_tokens": max_new_tokens, "temperature": temperature,
                                "stop": stops or None, "seed": seed}
        if on_delta is None:
            answer = self._post("/v1/completions", body).json()
            pick = answer["choices"][0]
            usage = answer.get("usage") or {}
            text, finish = str(pick.get("text") or ""), str(pick.get("finish_reason") or "stop")
        else:
            text, finish, usage = self._stream(body, on_delta)
        return GenResult(text, int(usage.get("prompt_tokens", len(prompt))),
                         int(usage.get("completion_tokens", 0)),
                         "length" if finish == "length" else "stop", time.perf_counter() - started)

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

    def _model(self, choice: Choice) -> str:
        with self.lock:
            if self.base_name is None:
                self.base_name = self._check_base(choice.base)
            if choice.digest is None:
                return self.base_name
            name = adapter_name(choice.digest)
            if name not in self.loaded:
                path = self.open_dir(choice.digest)  # re-hashed: the bytes are the digest's
                self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)},
                           ok_if="already")
                self.loaded.add(name)
            return name

    def _check_base(self, base: BaseRef) -> str:
        models = self._get("/v1/models").json().get("data", [])
        bases = [m for m in models if not m.get("parent")]
        if not bases:
            raise VllmUnavailable("the vLLM server lists no base model")
        root = str(bases[0].get("root") or "")
        if root and Path(root).resolve() != Path(base.path).resolve():
            raise VllmUnavailable(f"vLLM serves {root}, not the registered base '{base.name}' "
                                  f"at {base.path}")
        return str(bases[0]["id"])

    def _tokenizer(self, base: BaseRef) -> Any:
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
