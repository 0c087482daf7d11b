"""Judge models behind the evaluators' port (evaluators/judging.py ``JudgeModels``).

- ``HttpJudge``: an OpenAI-compatible ``POST {url}/chat/completions`` (vLLM, a hosted
  model, or ``hcp serve``'s own gateway), greedy (temperature 0) with the request's seed
  and token budget. It sends ``X-HCP-Judge: 1``: ``hcp serve`` answers such a call from an
  operator key without recording it as a conversation (the verdict is recorded, as
  ``judge.verdict``, by whoever asked). Where the endpoint names what served (``hcp serve``'s
  ``X-HCP-Base-Digest`` and ``X-HCP-Served-Base``), an answer by other bytes than the
  contract's digest (another base, or an adapter on it) is refused.
- ``EngineJudge``: a registered base model answered by the project's own engine (the
  ``inference`` port, the one the gateway serves with), greedy with the request's seed.
- ``JudgeModels``: the operator's endpoints by digest (``HCP_JUDGE_ENDPOINTS``), then an
  in-process answerer for registered base models, if one is given. A digest neither has
  is "not registered": the subject waits, and the reason says what to configure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from contract.judges import JudgeRequest
from evaluators.judging import JudgeAnswer, JudgeUnavailable
from inference.engine import Engine, EngineUnavailable
from inference.types import BaseModel, Decoding, Request, Target

JUDGE_HEADER = "X-HCP-Judge"


@dataclass(frozen=True)
class Endpoint:
    url: str  # the base URL, e.g. http://judge:8000/v1
    model: str  # what ``model`` the endpoint is asked for
    api_key: str = ""
    timeout_s: float = 60.0


class HttpJudge:
    """One OpenAI-compatible endpoint serving one judge model."""

    def __init__(self, endpoint: Endpoint, client: httpx.Client | None = None) -> None:
        self.endpoint = endpoint
        self.client = client or httpx.Client(timeout=endpoint.timeout_s)

    def ask(self, request: JudgeRequest) -> JudgeAnswer:
        body = {"model": self.endpoint.model, "messages": request.chat(), "temperature": 0,
                "seed": request.seed, "max_tokens": request.max_tokens, "stream": False}
        headers = {JUDGE_HEADER: "1"}
        if self.endpoint.api_key:
            headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
        url = self.endpoint.url.rstrip("/") + "/chat/completions"
        started = time.perf_counter()
        try:
            response = self.client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise JudgeUnavailable(f"judge endpoint {url} for {request.model} did not answer: "
                                   f"{type(exc).__name__}: {exc}") from exc
        seconds = time.perf_counter() - started
        if response.status_code != 200:
            raise JudgeUnavailable(f"judge endpoint {url} for {request.model} answered "
                                   f"{response.status_code}: {response.text[:200]}")
        served = _served_digest(response.headers, request.model, url)
        return JudgeAnswer(_content(response, url), "http", served, seconds)


def _served_digest(headers: httpx.Headers, model: str, url: str) -> str | None:
    """The digest the endpoint says served, checked against the contract's."""
    base = headers.get("X-HCP-Base-Digest")
    if base is None:
        return None  # an endpoint that does not say: the operator's word stands
    digest = base if base.startswith("sha256:") else f"sha256:{base}"
    if digest != model:
        raise JudgeUnavailable(f"judge endpoint {url} served base {digest}, not the contract's "
                               f"judge model {model}")
    if headers.get("X-HCP-Served-Base") == "false":
        adapter = headers.get("X-HCP-Adapter-Version", "an adapter")
        raise JudgeUnavailable(f"judge endpoint {url} answered with {adapter} on the base, not the "
                               f"bare judge model {model}")
    return digest


def _content(response: httpx.Response, url: str) -> str:
    try:
        message = response.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise JudgeUnavailable(f"judge endpoint {url} answered without a chat completion: "
                               f"{response.text[:200]}") from exc
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


class EngineJudge:
    """A registered base model (no adapter) as a judge, through the engine port."""

    def __init__(self, engine: Engine, base: BaseModel) -> None:
        self.engine, self.base = engine, base

    def ask(self, request: JudgeRequest) -> JudgeAnswer:
        call = Request(Target(self.base), tuple(request.chat()), request.max_tokens,
                       Decoding(temperature=0.0, seed=request.seed))
        try:
            result = self.engine.generate(call)
        except EngineUnavailable as exc:
            raise JudgeUnavailable(f"the engine could not answer as judge {request.model}: {exc}") from exc
        return JudgeAnswer(result.text, "engine", f"sha256:{self.base.weights_sha256}", result.seconds)


Answerer = Callable[[JudgeRequest], JudgeAnswer]


class JudgeModels:
    """The judge models this process can ask, by digest."""

    def __init__(self, endpoints: Mapping[str, HttpJudge],
                 local: Callable[[str], Answerer | None] | None = None) -> None:
        self.endpoints, self.local = dict(endpoints), local

    def ask(self, request: JudgeRequest) -> JudgeAnswer:
        endpoint = self.endpoints.get(request.model)
        if endpoint is not None:
            return endpoint.ask(request)
        answerer = self.local(request.model) if self.local is not None else None
        if answerer is None:
            raise JudgeUnavailable(
                f"judge model {request.model} is not registered: no base model has these weights "
                "and HCP_JUDGE_ENDPOINTS names no endpoint for it")
        return answerer(request)


def endpoints_of(config: Mapping[str, Mapping[str, object]], timeout_s: float) -> dict[str, HttpJudge]:
    """``HCP_JUDGE_ENDPOINTS`` ({digest: {url, model, api_key?}}) as judges."""
    found: dict[str, HttpJudge] = {}
    for digest, entry in config.items():
        found[digest] = HttpJudge(Endpoint(str(entry["url"]), str(entry.get("model") or "auto"),
                                           str(entry.get("api_key") or ""), timeout_s))
    return found
