"""What a chat request asks that the serving contract or this server cannot give, refused
before the model runs (a 400 naming the field, as OpenAI answers), never silently
ignored. Pure.

- ``max_tokens`` / ``max_completion_tokens`` above the contract's cap
  (``harness.generation.max_tokens``): OpenAI refuses a limit above the model's, so does
  this server, naming the cap; before, the answer was cut at the cap without a word.
- ``tool_choice``: ``required`` or a named function needs tools to choose from, and a
  named one must be among them.
- ``response_format`` ``json_object`` / ``json_schema`` and a forced tool call are
  honoured by constrained decoding (``serving.constrained``), ``logprobs`` by the engine's
  report of them, where the engine does both (the embedded one); where it does not (the
  vLLM engine, for now), the request is refused naming the field. ``top_logprobs``
  without ``logprobs`` is refused, as OpenAI does.
"""

from __future__ import annotations

from typing import Any

from contract.sections import Generation
from kernel.errors import Invalid
from serving.openai_shapes import ChatRequest


class RequestRefused(Invalid):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_limits(request: ChatRequest, limits: Generation, contract: str) -> None:
    asked = request.token_limit
    if asked is not None and asked > limits.max_tokens:
        field = "max_completion_tokens" if request.max_completion_tokens else "max_tokens"
        raise RequestRefused(field, f"{field} is {asked}, above this model's limit of "
                             f"{limits.max_tokens} tokens (the serving contract {contract}'s "
                             "harness.generation.max_tokens); ask for at most that")


def forced_tool(request: ChatRequest) -> str | None:
    """The function ``tool_choice`` names, '*' for ``required``, None when the model may
    choose (``auto``, ``none``, unset). Raises RequestRefused for a choice with nothing to
    choose from."""
    choice = request.tool_choice
    names = [t.function.name for t in request.tools or []]
    if choice in (None, "auto", "none"):
        return None
    if not names:
        raise RequestRefused("tool_choice", f"tool_choice {_show(choice)} needs tools, and the "
                             "request offers none")
    if choice == "required":
        return "*"
    name = _named(choice)
    if name is None:
        raise RequestRefused("tool_choice", 'tool_choice is "none", "auto", "required" or '
                             '{"type": "function", "function": {"name": NAME}}')
    if name not in names:
        raise RequestRefused("tool_choice.function.name", f"tool_choice names '{name[:80]}', "
                             f"which is not among the request's tools ({', '.join(names)})")
    return name


def _named(choice: Any) -> str | None:
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else None


def _show(choice: Any) -> str:
    return choice if isinstance(choice, str) else "naming a function"


def check_request(request: ChatRequest, limits: Generation, contract: str,
                  engine: str, constrains: bool) -> None:
    """Everything above; for an ``engine`` that neither constrains decoding nor reports
    log-probabilities (``constrains`` False), what it cannot honour is refused, naming the
    field."""
    check_limits(request, limits, contract)
    if request.top_logprobs and not request.logprobs:
        raise RequestRefused("top_logprobs", "top_logprobs needs logprobs: true")
    if constrains:
        return
    if forced_tool(request) is not None:
        raise RequestRefused("tool_choice", f"the {engine} engine cannot force a tool call "
                             "(constrained decoding): send tool_choice auto or none")
    kind = request.response_format.type if request.response_format else "text"
    if kind != "text":
        raise RequestRefused("response_format.type", f"response_format {kind} is not enforced "
                             f"by the {engine} engine (constrained decoding): send type text")
    if request.logprobs:
        raise RequestRefused("logprobs", f"the {engine} engine does not report log-probabilities")
