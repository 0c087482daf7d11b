"""Conversations of clients that keep no session: found again by the history they resend.

A stock OpenAI client sends neither ``X-HCP-Session`` nor ``user``: it sends the whole
conversation every time, the earlier turns and the answers it got included. So each
answer the gateway records also records the conversation's **head**: the digest of the
history as the client will send it back (the request's messages, then the answer as the
response gave it), in a ``conversation.head`` event on a stream named by the tenant and
that digest. A later request whose messages up to its last assistant message have that
digest extends a recorded exchange, and continues its session; any other starts one.

- **Canonical history.** Each message becomes ``role``, its text (parts joined, outer
  whitespace dropped), its tool calls (id, name, arguments as canonical JSON when they
  parse) and ``tool_call_id``; ``name`` and fields a client adds (``refusal``,
  ``annotations`` …) are not part of it. The digest is the sha256 of the list's
  canonical JSON: the same on every gateway process and every replay.
- **Per tenant, no oracle.** The stream's name is derived from the tenant and the digest,
  and it is read in the key's tenant: another tenant's identical conversation is another
  stream. The ``conversation:`` streams and the ``conversation.`` types are the server's
  (a client's ``POST /v1/events`` there is a 422 whatever exists), so no key can learn
  whether a conversation exists by writing where one would be.
- **Deterministic and race-free.** Every answer appends its head (no expected seq): two
  answers that make the same history both record theirs, and the stream's first event
  names the session that history continues, whoever reads it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from events.model import EventMetadata, NewEvent
from events.server_events import ServerEvent
from kernel.canonical import canonical_json, canonical_sha256
from serving.openai_shapes import Message

STREAM_PREFIX = "conversation:"
NAMESPACE = uuid.UUID("0b7e3f52-9d61-4c2a-8e15-3a9c4d7b6f20")  # fixed: stream names must not change


class ConversationHead(ServerEvent):
    TYPE = "conversation.head"
    SUMMARY = ("A chat answer's conversation as its client will resend it: a "
                              "request that extends this history continues this session")

    history_digest: str  # sha256 of the canonical history through the answer
    messages: int  # how many messages that history holds
    session_id: str
    completion_id: str


def canonical_message(message: Message) -> dict[str, Any]:
    calls = [{"id": c.id, "name": c.function.name, "arguments": _arguments(c.function.arguments)}
             for c in message.tool_calls or []]
    return {"role": message.role, "text": message.text.strip(), "tool_calls": calls,
            "tool_call_id": message.tool_call_id or ""}


def _arguments(text: str) -> str:
    try:
        return canonical_json(json.loads(text))
    except ValueError:
        return text


def history_digest(messages: Sequence[Message]) -> str:
    return canonical_sha256([canonical_message(m) for m in messages])


def earlier_history(messages: Sequence[Message]) -> list[Message] | None:
    """The messages through the last assistant answer (what a recorded exchange ends with),
    or None when the request holds no answer: a first turn."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    return None if last is None else list(messages[: last + 1])


def head_stream(tenant: str | None, digest: str) -> str:
    return STREAM_PREFIX + str(uuid.uuid5(NAMESPACE, f"{tenant or ''}\0{digest}"))


def head_event(messages: Sequence[Message], answer: Message, session_id: uuid.UUID,
               completion_id: str, metadata: EventMetadata, event_id: uuid.UUID) -> NewEvent:
    """The ``conversation.head`` of an answer to ``messages``, in the answer's tenant."""
    history = [*messages, answer]
    digest = history_digest(history)
    event = ConversationHead(history_digest=digest, messages=len(history),
                             session_id=str(session_id), completion_id=completion_id)
    return replace(event.new_event(head_stream(metadata.tenant, digest), metadata),
                   event_id=event_id)
