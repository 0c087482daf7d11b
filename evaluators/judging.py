"""Verdicts of judge models: asked once, recorded in the log, read back for every re-score.

A judge's answer is a fact about the world, like a user's message: it is written to the
log once (``judge.verdict`` on the server's stream ``judge:<tenant>``) and every later
scoring reads it from there. Its event id is derived from what determines the answer
(tenant, model digest, prompt hash, seed), so the log itself is the memo: a second
subject, contract version or worker asking the same thing finds it by id, and re-scoring
history under a version whose judges did not change calls no model at all and reads the
very same bytes. The tenant is part of the key so that one tenant's verdicts never
answer another's (or show them that the same text was judged).

The models are behind a port (``JudgeModels``): an OpenAI-compatible endpoint the
operator configures, or the project's own engine. A model that cannot answer now (its
endpoint down, its digest unknown) raises ``JudgeUnavailable``: the subject waits in the
backlog (evaluators/judge_backlog.py) and nothing is scored in its place.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, Protocol

from contract.judges import MAX_VERDICT, JudgeRequest, Verdict
from events.errors import EventIdConflict
from events.model import EventMetadata
from events.server_events import ServerEvent
from events.store import EventStore

log = logging.getLogger(__name__)

STREAM_PREFIX = "judge:"
ACTOR = "system:judge"
NAMESPACE = uuid.UUID("5b0f3c7e-91d4-4a6b-8e2f-0c7d9a1b3e55")  # fixed: ids must not change


class JudgeVerdict(ServerEvent):
    TYPE: ClassVar[str] = "judge.verdict"
    SUMMARY: ClassVar[str] = ("A judge model's answer to one prompt (greedy, seeded), recorded once "
                              "and read by every scoring that asks the same")

    model: str  # the judge model's weights digest the contract names
    prompt_hash: str  # sha256 of the messages and the token budget (contract/judges.py)
    seed: int
    max_tokens: int
    verdict: str  # the raw answer (at most MAX_VERDICT characters)
    served_by: str  # which adapter answered: "http" (an endpoint), "engine" (in process)
    served_digest: str | None = None  # the digest the endpoint said it served, if it said
    seconds: float = 0.0


class JudgeUnavailable(RuntimeError):
    """The judge model cannot answer now: its endpoint is down or slow, or no endpoint or
    registered model has its digest. The subject waits; nothing is scored in its place."""


@dataclass(frozen=True)
class JudgeAnswer:
    text: str
    served_by: str
    served_digest: str | None = None
    seconds: float = 0.0


class JudgeModels(Protocol):
    """Whatever answers judge requests: an endpoint per digest, the engine, or both."""

    def ask(self, request: JudgeRequest) -> JudgeAnswer:
        """The model's greedy answer (temperature 0, the request's seed and token budget).

        Raises:
            JudgeUnavailable: the model named by ``request.model`` cannot answer now.
        """


def verdict_id(tenant: str | None, request: JudgeRequest) -> uuid.UUID:
    """The id of the verdict event for this request: the memo's key."""
    return uuid.uuid5(NAMESPACE, f"{tenant or ''}|{request.model}|{request.prompt_hash}|{request.seed}")


def verdict_stream(tenant: str | None) -> str:
    return f"{STREAM_PREFIX}{tenant or '-'}"


class Judging:
    """The memo (the log) in front of the judge models."""

    def __init__(self, store: EventStore, models: JudgeModels | None = None) -> None:
        self.store, self.models = store, models

    def recorded(self, requests: Sequence[JudgeRequest], tenant: str | None) -> dict[str, Verdict]:
        """The verdicts the log holds for these requests, by judge id (one query)."""
        ids = {str(verdict_id(tenant, r)): r for r in requests}
        found = self.store.get_many(list(ids)) if ids else {}
        verdicts: dict[str, Verdict] = {}
        for event_id, request in ids.items():
            event = found.get(event_id)
            if event is not None and event.type == JudgeVerdict.TYPE:
                verdicts[request.judge_id] = Verdict(str(event.payload.get("verdict", "")), event_id)
        return verdicts

    def obtain(self, requests: Sequence[JudgeRequest], tenant: str | None) -> dict[str, Verdict]:
        """Every request's verdict: from the log, else asked now and recorded.

        Raises:
            JudgeUnavailable: a model could not answer (the verdicts obtained before it
            are recorded: nothing asked is asked twice).
        """
        verdicts = self.recorded(requests, tenant)
        for request in requests:
            if request.judge_id not in verdicts:
                verdicts[request.judge_id] = self._ask(request, tenant)
        return verdicts

    def _ask(self, request: JudgeRequest, tenant: str | None) -> Verdict:
        if self.models is None:
            raise JudgeUnavailable(f"no judge model is configured here for {request.model} "
                                   "(HCP_JUDGE_ENDPOINTS, or a registered base model with the engine)")
        answer = self.models.ask(request)
        return self._record(request, tenant, answer)

    def _record(self, request: JudgeRequest, tenant: str | None, answer: JudgeAnswer) -> Verdict:
        event_id = verdict_id(tenant, request)
        payload = JudgeVerdict(model=request.model, prompt_hash=request.prompt_hash, seed=request.seed,
                               max_tokens=request.max_tokens, verdict=answer.text[:MAX_VERDICT],
                               served_by=answer.served_by, served_digest=answer.served_digest,
                               seconds=round(answer.seconds, 3))
        meta = EventMetadata(actor=ACTOR, tenant=tenant)
        new = replace(payload.new_event(verdict_stream(tenant), meta), event_id=event_id)
        try:
            self.store.append([new])
        except EventIdConflict:
            # Another worker recorded this request first (its timing differs): theirs
            # stands, and everyone reads the same verdict.
            stored = self.store.get(event_id)
            if stored is None:
                raise
            return Verdict(str(stored.payload.get("verdict", "")), str(event_id))
        return Verdict(payload.verdict, str(event_id))
