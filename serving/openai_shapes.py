"""The OpenAI Chat Completions shapes the gateway takes and answers with. Pure.

Only what the gateway acts on is modelled; unknown request fields are ignored, as
OpenAI-compatible servers do (clients send ``frequency_penalty``, ``logprobs`` ...), but
a known field of the wrong type is a 422 naming it. Content given as a list of parts
keeps its text parts (images are refused: the base model reads text).

``hcp`` is this server's extension (an OpenAI client sends it with
``extra_body={"hcp": {...}}``), for a harness that judges answers by its own checks:
``task``, recorded as the ``turn.user`` event's ``task`` (the hidden check the built-in
harness records, so the gate can replay the turn), and ``stop_after``, a named stop rule
(``inference.stops``: after the first fenced block, JSON object or line) where the answer
ends.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_MESSAGES = 256
MAX_STOPS = 4
MAX_STOP_CHARS = 256
MAX_TOOLS = 128  # OpenAI's own limit
MAX_NAME_CHARS = 256
MAX_TOKENS = 1 << 20  # far above any context; the contract's limit applies below it
# The seed reaches torch.Generator.manual_seed (embedded) or vLLM's int64 field: outside
# 64 bits it raised inside the decoding thread, so it is a 422 here, as in OpenAI's API.
SEED_MIN, SEED_MAX = -(1 << 63), (1 << 63) - 1
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class FunctionSpec(_In):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")]
    description: Annotated[str, Field(max_length=4096)] = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(_In):
    type: Literal["function"] = "function"
    function: FunctionSpec


class FunctionCall(_In):
    name: Name
    arguments: str = "{}"  # JSON text, as OpenAI sends it


class ToolCallIn(_In):
    id: Name
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_In):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: Name | None = None
    tool_calls: Annotated[list[ToolCallIn] | None, Field(max_length=MAX_TOOLS)] = None
    tool_call_id: Name | None = None

    @field_validator("content")
    @classmethod
    def _text_parts(cls, content: Any) -> Any:
        if not isinstance(content, list):
            return content
        if any(part.get("type") != "text" for part in content):
            raise ValueError("only text content parts are served (the model reads text)")
        return "".join(str(part.get("text", "")) for part in content)

    @property
    def text(self) -> str:
        return self.content if isinstance(self.content, str) else ""


class HcpExtension(_In):
    task: dict[str, Any] | None = None
    stop_after: Literal["fence", "json", "line"] | None = None


class StreamOptions(_In):
    include_usage: bool = False


class JsonSchemaFormat(_In):
    name: Annotated[str, Field(max_length=64)] = "response"
    description: Annotated[str, Field(max_length=4096)] = ""
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    strict: bool | None = None


class ResponseFormat(_In):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class ChatRequest(_In):
    model: Name | None = None
    messages: Annotated[list[Message], Field(min_length=1, max_length=MAX_MESSAGES)]
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: Annotated[int | None, Field(ge=1, le=MAX_TOKENS)] = None
    max_completion_tokens: Annotated[int | None, Field(ge=1, le=MAX_TOKENS)] = None
    temperature: Annotated[float | None, Field(ge=0.0, le=2.0)] = None
    top_p: Annotated[float | None, Field(gt=0.0, le=1.0)] = None
    seed: Annotated[int | None, Field(ge=SEED_MIN, le=SEED_MAX)] = None
    stop: list[Annotated[str, Field(max_length=MAX_STOP_CHARS)]] | None = None  # or one string
    n: Annotated[int, Field(ge=1, le=1)] = 1
    tools: Annotated[list[ToolSpec] | None, Field(max_length=MAX_TOOLS)] = None
    tool_choice: Literal["none", "auto", "required"] | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None
    top_logprobs: Annotated[int | None, Field(ge=0, le=20)] = None
    user: Name | None = None
    hcp: HcpExtension | None = None

    @field_validator("stop", mode="before")
    @classmethod
    def _stops(cls, stop: Any) -> Any:
        stops = [stop] if isinstance(stop, str) else stop
        if isinstance(stops, list) and (len(stops) > MAX_STOPS or any(not s for s in stops)):
            raise ValueError(f"at most {MAX_STOPS} non-empty stop sequences")
        return stops

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    @property
    def stop_after(self) -> str | None:
        return self.hcp.stop_after if self.hcp else None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class FunctionCallJson(TypedDict):
    name: str
    arguments: str  # JSON text


class ToolCallJson(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCallJson


class IndexedToolCall(ToolCallJson):
    """A tool call in a streamed delta."""

    index: int


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ToolCallJson]]


class Delta(TypedDict, total=False):
    """What a streamed chunk adds to the message."""

    role: Literal["assistant"]
    content: str
    tool_calls: list[IndexedToolCall]


class TopLogprob(TypedDict):
    token: str
    bytes: list[int]
    logprob: float


class TokenLogprobJson(TopLogprob):
    top_logprobs: list[TopLogprob]


class LogprobsJson(TypedDict):
    content: list[TokenLogprobJson]
    refusal: None


class UsageJson(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class HcpServed(TypedDict):
    """``hcp`` in a completion: what served it (also in the X-HCP-* headers)."""

    session: str
    session_from: str  # the rule that found the session: header, user, history, new
    specialist: str
    adapter_version: str
    adapter_digest: str | None
    served_base: bool
    base_weights_sha256: str
    contract: str
    strategy: str
    scores: dict[str, float]
    fallback: bool
    notes: list[str]


class CompletionChoice(TypedDict):
    index: int
    message: AssistantMessage
    finish_reason: str
    logprobs: LogprobsJson | None


class CompletionJson(TypedDict):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    system_fingerprint: str | None
    choices: list[CompletionChoice]
    usage: UsageJson
    hcp: HcpServed


class ChunkChoice(TypedDict):
    index: int
    delta: Delta
    finish_reason: str | None
    logprobs: LogprobsJson | None


class ChunkJson(TypedDict):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    system_fingerprint: str | None
    choices: list[ChunkChoice]


class UsageChunkJson(TypedDict):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoice]  # none: the usage chunk ends the stream
    usage: UsageJson


def tool_call_json(call_id: str, name: str, arguments: str) -> ToolCallJson:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion_json(completion_id: str, model: str, text: str | None,
                    tool_calls: list[ToolCallJson], finish: str, prompt_tokens: int,
                    completion_tokens: int, extra: HcpServed,
                    logprobs: LogprobsJson | None = None) -> CompletionJson:
    message: AssistantMessage = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"id": completion_id, "object": "chat.completion", "created": int(time.time()),
            "model": model, "system_fingerprint": extra.get("adapter_digest"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": logprobs}],
            "usage": usage_json(prompt_tokens, completion_tokens), "hcp": extra}


def logprobs_json(tokens: Sequence[Any]) -> LogprobsJson:
    """OpenAI's ``choices[].logprobs``: each token (``inference.types.TokenLogprob``) with its
    bytes, log-probability and the likeliest tokens of its step."""
    return {"content": [
        {"token": t.token, "bytes": list(t.bytes), "logprob": t.logprob,
         "top_logprobs": [{"token": text, "bytes": list(raw), "logprob": lp} for text, raw, lp in t.top]}
        for t in tokens], "refusal": None}


def usage_json(prompt_tokens: int, completion_tokens: int) -> UsageJson:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def chunk_json(completion_id: str, model: str, created: int, delta: Delta,
               finish: str | None, fingerprint: str | None,
               logprobs: LogprobsJson | None = None) -> ChunkJson:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": fingerprint,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                         "logprobs": logprobs}]}


def usage_chunk_json(completion_id: str, model: str, created: int, prompt_tokens: int,
                     completion_tokens: int) -> UsageChunkJson:
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [], "usage": usage_json(prompt_tokens, completion_tokens)}
