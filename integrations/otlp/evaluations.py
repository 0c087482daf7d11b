"""Evaluation results out: every reward record as an OTLP log record named
``gen_ai.evaluation.result`` (the GenAI semantic conventions' event for a score), exported to
``HCP_OTLP_EVALUATIONS_ENDPOINT`` by a follower of the reward chain with its own checkpoint.

Each record carries ``gen_ai.evaluation.name`` (the contract version, ``name@version``, also
as ``hcp.contract.name``, ``hcp.contract.version`` and ``hcp.contract.hash``),
``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label`` (``eligible``,
``ineligible`` or ``error``) and ``gen_ai.evaluation.explanation`` (each criterion's score, or
the errors), and, when the subject came in over OTLP, the evaluated span's trace and span
ids and its ``gen_ai.response.id`` (for a chat gateway session, the completion id its
client was given); a judged reward names its judges (``hcp.judge.*``: the judge model's
digest, the prompt's hash, the seed, the raw verdict). A tracing backend shows the score
on the span. A page
is exported, then the checkpoint moves (at least once; a failed export is retried).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from evaluators.model import RewardRecord
from evaluators.rewards import RewardStore
from events.checkpoints import Checkpoints
from events.store import EventStore

log = logging.getLogger(__name__)

CHECKPOINT = "otlp:evaluations"
EVENT_NAME = "gen_ai.evaluation.result"


def label_of(reward: RewardRecord) -> str:
    return "error" if reward.errors else "eligible" if reward.eligible else "ineligible"


def explanation_of(reward: RewardRecord) -> str:
    if reward.errors:
        return "; ".join(str(e.get("message", e)) for e in reward.errors)
    return ", ".join(f"{k}={v:.3f}" for k, v in sorted(reward.components.items()))


def judge_attributes(reward: RewardRecord) -> dict[str, Any]:
    """Who judged (semantic-conventions-genai#79 has no evaluator identity): per judge of the
    contract, ``hcp.judge.<id>.model`` (the judge model's digest), ``.prompt_hash``,
    ``.seed`` and ``.verdict`` (the raw answer); ``hcp.judge.ids`` lists them."""
    found: dict[str, Any] = {}
    for j in reward.judgements:
        prefix = f"hcp.judge.{j.get('judge')}"
        found |= {f"{prefix}.model": str(j.get("model")), f"{prefix}.prompt_hash": str(j.get("prompt_hash")),
                  f"{prefix}.seed": int(j.get("seed") or 0), f"{prefix}.verdict": str(j.get("verdict"))}
    if reward.judgements:
        found["hcp.judge.ids"] = ",".join(str(j.get("judge")) for j in reward.judgements)
    return found


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def log_record(reward: RewardRecord, span: Mapping[str, Any] | None) -> LogRecord:
    """The reward as a ``gen_ai.evaluation.result`` record; ``span``: the evaluated answer's
    OTLP ids (``otel_trace_id``, ``otel_span_id``, ``response_id``) when it came in over OTLP."""
    attributes: dict[str, Any] = {
        "event.name": EVENT_NAME,
        "gen_ai.evaluation.name": f"{reward.contract_name}@{reward.contract_version}",
        "gen_ai.evaluation.score.label": label_of(reward),
        "gen_ai.evaluation.explanation": explanation_of(reward), "hcp.reward.id": str(reward.reward_id),
        "hcp.subject.id": reward.subject_id, "hcp.contract.name": reward.contract_name,
        "hcp.contract.version": reward.contract_version, "hcp.contract.hash": reward.contract_hash,
        **judge_attributes(reward)}
    if reward.score is not None:
        attributes["gen_ai.evaluation.score.value"] = float(reward.score)
    if span and span.get("response_id"):
        attributes["gen_ai.response.id"] = span["response_id"]
    record = LogRecord(time_unix_nano=int(reward.created_at.timestamp() * 1e9), event_name=EVENT_NAME,
                       attributes=[KeyValue(key=k, value=_value(v)) for k, v in attributes.items()])
    if span and span.get("otel_trace_id") and span.get("otel_span_id"):
        record.trace_id = bytes.fromhex(span["otel_trace_id"])
        record.span_id = bytes.fromhex(span["otel_span_id"])
    return record


class EvaluationExporter:
    def __init__(self, rewards: RewardStore, store: EventStore, checkpoints: Checkpoints,
                 endpoint: str, headers: Mapping[str, str], page: int = 200, timeout_s: float = 10.0) -> None:
        self.rewards, self.store, self.checkpoints = rewards, store, checkpoints
        self.endpoint, self.page = endpoint, page
        self.http = httpx.Client(timeout=timeout_s,
                                 headers={**headers, "Content-Type": "application/x-protobuf"})

    def step(self) -> int:
        """Export the next page of rewards; how many (raises httpx.HTTPError on failure)."""
        after = self.checkpoints.load(CHECKPOINT)
        head = self.rewards.head()
        if head <= after:
            return 0
        found = self.rewards.at_positions(range(after + 1, min(head, after + self.page) + 1))
        rewards = [found[p] for p in sorted(found)]
        if not rewards:
            return 0
        request = ExportLogsServiceRequest()
        resource = request.resource_logs.add()
        resource.resource.attributes.append(KeyValue(key="service.name", value=_value("hcp-server")))
        scope = resource.scope_logs.add()
        scope.scope.name = "hcp.evaluations"
        spans = self._spans(rewards)
        scope.log_records.extend(log_record(r, spans.get(str(r.reward_id))) for r in rewards)
        answer = self.http.post(self.endpoint, content=request.SerializeToString())
        answer.raise_for_status()
        self.checkpoints.save(CHECKPOINT, max(found))
        return len(rewards)

    def run(self, stop: threading.Event, idle_s: float = 1.0) -> None:
        backoff = 1.0
        while not stop.is_set():
            try:
                exported = self.step()
                backoff = 1.0
            except Exception as exc:  # the receiver down, or the database: retried
                log.warning("exporting evaluation results failed (%s); retrying in %.0f s", exc, backoff)
                stop.wait(backoff)
                backoff = min(backoff * 2, 60.0)
                continue
            if not exported:
                stop.wait(idle_s)

    def close(self) -> None:
        self.http.close()

    def _spans(self, rewards: list[RewardRecord]) -> dict[str, Mapping[str, Any]]:
        """Per reward, the ids of the last answer it judged: its OTLP ids if it came over
        OTLP; for the chat gateway's sessions, the completion id the client was given
        (``chatcmpl-`` and the hex of the answer's ``turn.assistant`` id)."""
        wanted = {e for r in rewards if r.stream_id.startswith(("otel:", GATEWAY)) for e in r.event_ids}
        events = self.store.get_many(wanted) if wanted else {}
        out: dict[str, Mapping[str, Any]] = {}
        for r in rewards:
            for event_id in reversed(r.event_ids):
                event = events.get(str(event_id))
                if event is None or event.type != "turn.assistant":
                    continue
                if "otel_span_id" in event.payload:
                    out[str(r.reward_id)] = event.payload
                    break
                if r.stream_id.startswith(GATEWAY):
                    out[str(r.reward_id)] = {"response_id": f"chatcmpl-{event.event_id.hex}"}
                    break
        return out


GATEWAY = "session-"  # the chat gateway's session streams (serving/sessions.py)


