"""What the harness records for one answer: the session's events, ready for ingest.

One answer is one session (stream ``session-<uuid>``), so one episode and one reward:

``session.started`` -> ``turn.user`` (the user message, the ``context`` the model was
given and the hidden ``task`` spec the checks use) -> ``route.decided`` (the specialist,
the adapter version that served and the contract version in force, the router's scores)
-> ``turn.assistant`` -> the answer's own events (``answer_events``: the tool call it made
and the tool's result, the ``x.check`` verdict) -> ``episode.completed`` (success iff the
check passed).

``answer_events`` is also what the gate's rollout harness (``harness.gate``) produces for
a generated answer, so a held-out subject is judged the same way whoever answered it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from events.catalogue import (
    EpisodeCompleted,
    RouteDecided,
    SessionStarted,
    ToolCalled,
    ToolResult,
    TurnAssistant,
    TurnUser,
    typed,
)
from events.ingest import ClientEvent
from harness.checks import CheckResult
from harness.router import Route
from harness.tasks import Task

CHECK_EVENT = "x.check"
# Which tool each check stands for: running the hidden tests is the harness calling
# python.run on the answer; validating a UI spec is ui.render. The agent's call is the
# model's own (whatever tool it named). Chat answers call nothing.
CHECK_TOOLS = {"python_tests": "python.run", "ui_spec": "ui.render"}
# The events of the last turn that an answer produces (the gate replaces them).
# What a task's record says of its shape (harness.tasks.templates), for gains per group.
TASK_LABELS = ("template", "group")
ANSWER_EVENT_TYPES = frozenset({"tool.called", "tool.result", CHECK_EVENT, "episode.completed"})


@dataclass(frozen=True)
class Served:
    """One answer and where it came from."""

    task: Task
    route: Route
    adapter_version: str  # e.g. coding@3, or coding@0 for the bare base
    contract: str  # e.g. default@2
    text: str
    new_tokens: int
    check: CheckResult
    sample: int  # which of the k samples of this task


def storable(text: str) -> str:
    """``text`` as the log can store it: a model can emit NUL or a lone surrogate (a random
    test model does), which no JSON column takes; they become U+FFFD before checking and
    recording, so what is checked is what is stored."""
    text = text.replace("\x00", "\ufffd")
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def answer_events(task: Task, check: CheckResult) -> list[tuple[str, dict[str, Any]]]:
    """(type, payload) of what an answer did: its tool call and result, its check, the outcome."""
    events: list[tuple[str, dict[str, Any]]] = []
    tool = CHECK_TOOLS.get(check.kind)
    arguments: dict[str, Any] = {"task": task.id}
    if check.kind == "tool_call" and check.tool_call is not None:
        tool, raw = str(check.tool_call["tool"]), check.tool_call.get("arguments")
        arguments = raw if isinstance(raw, dict) else {"value": raw}
    if tool is not None:
        call_id = f"{task.id}:{tool}"
        ok = check.passed if check.kind != "tool_call" else check.scores.get("schema_ok", 0.0) == 1.0
        events += [typed(ToolCalled(call_id=call_id, tool=tool, arguments=arguments)),
                   typed(ToolResult(call_id=call_id, ok=bool(ok), output="ok" if ok else None,
                                    error=None if ok else (check.detail or "failed")[:200]))]
    events.append((CHECK_EVENT, check.payload()))  # the harness's own type (x.*): no schema
    events.append(typed(EpisodeCompleted(outcome="success" if check.passed else "failure",
                                         score=float(check.partial))))
    return events


def task_spec(task: Task) -> dict[str, Any]:
    """What ``turn.user`` records of the task: its hidden check and labels (``task_of``)."""
    return {"id": task.id, "specialist": task.specialist, "family": task.family,
            "check": task.check, **{k: task.meta[k] for k in TASK_LABELS if k in task.meta}}


def session_events(served: Served, harness_name: str, rng_id: uuid.UUID) -> list[ClientEvent]:
    """The events of one served answer, in order, under ``session-<rng_id>``."""
    stream = f"session-{rng_id}"
    specialist = served.route.specialist
    meta: dict[str, Any] = {"specialist": specialist, "adapter_version": served.adapter_version,
                            "contract": served.contract, "correlation_id": rng_id}
    task = served.task
    items: list[tuple[str, dict[str, Any]]] = [
        typed(SessionStarted(harness=harness_name)),
        typed(TurnUser(text=task.prompt, context=task.context(), task=task_spec(task))),
        typed(RouteDecided(specialist=specialist, adapter_version=served.adapter_version,
                           contract=served.contract, scores=served.route.scores,
                           fallback=served.route.fallback)),
        typed(TurnAssistant(text=served.text, tokens=served.new_tokens, sample=served.sample)),
        *answer_events(task, served.check),
    ]
    return [ClientEvent(stream_id=stream, type=kind, payload=payload,
                        event_id=uuid.uuid5(rng_id, f"{n}:{kind}"), **meta)
            for n, (kind, payload) in enumerate(items)]


def task_of(payloads: Sequence[dict[str, Any]]) -> Task | None:
    """The task recorded in a subject's first ``turn.user`` payload (None: not a task session)."""
    for payload in payloads:
        spec = payload.get("task")
        if isinstance(spec, dict) and isinstance(spec.get("check"), dict):
            context = payload.get("context") or []
            system = next((m["content"] for m in context if m.get("role") == "system"), None)
            turns = [m["content"] for m in context if m.get("role") in ("user", "assistant")]
            shots = tuple(zip(turns[0::2], turns[1::2], strict=False))
            labels = {k: str(spec[k]) for k in TASK_LABELS if k in spec}
            return Task(str(spec.get("id")), str(spec.get("specialist")), str(spec.get("family")),
                        str(payload["text"]), spec["check"], system, shots, labels)
    return None
