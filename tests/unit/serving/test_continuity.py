"""A client that keeps no session resends the history: its digest finds the session."""

from __future__ import annotations

import uuid

import pytest

from events.catalogue import reserved_stream
from events.ingest import Author, BatchRejected, ClientEvent, IngestLimits, ingest
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata
from serving.continuity import earlier_history, head_event, head_stream, history_digest
from serving.openai_shapes import Message
from serving.sessions import Sessions


def m(role: str, content: object = None, **fields: object) -> Message:
    return Message.model_validate({"role": role, "content": content, **fields})


CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"a": 1}'}}


def test_the_digest_reads_what_a_client_sends_back_not_how_it_spells_it() -> None:
    ours = [m("user", "What is a monad?"), m("assistant", "A pattern.\n")]
    resent = [m("user", [{"type": "text", "text": "What is a monad?"}]),
              m("assistant", "A pattern.", refusal=None, annotations=[], name="bot")]
    assert history_digest(ours) == history_digest(resent)
    called = [m("user", "hi"), m("assistant", None, tool_calls=[CALL])]
    respaced = [m("user", "hi"), m("assistant", "", tool_calls=[
        {**CALL, "function": {"name": "weather", "arguments": '{ "a" : 1 }'}}])]
    assert history_digest(called) == history_digest(respaced)
    other_answer = [m("user", "What is a monad?"), m("assistant", "A map.")]
    other_role = [m("system", "What is a monad?"), m("assistant", "A pattern.")]
    assert history_digest(ours) not in (history_digest(other_answer), history_digest(other_role))


def test_the_earlier_history_ends_at_the_last_answer() -> None:
    assert earlier_history([m("user", "hi")]) is None
    turns = [m("system", "be brief"), m("user", "hi"), m("assistant", "hello"), m("user", "and?")]
    assert earlier_history(turns) == turns[:3]
    tool = [m("user", "hi"), m("assistant", None, tool_calls=[CALL]),
            m("tool", "sunny", tool_call_id="call_1")]
    assert earlier_history(tool) == tool[:2]


def test_head_streams_are_the_tenants_own_and_the_servers() -> None:
    digest = history_digest([m("user", "hi"), m("assistant", "hello")])
    assert head_stream("acme", digest) != head_stream("globex", digest)
    assert head_stream("acme", digest) == head_stream("acme", digest)
    assert reserved_stream(head_stream("acme", digest))
    store = InMemoryEventStore()
    with pytest.raises(BatchRejected):  # a client cannot write (nor probe) one
        ingest(store, [ClientEvent(head_stream("acme", digest), "turn.user", {"text": "x"})],
               IngestLimits(10, 1000), Author("key", "acme"))


def record(store: InMemoryEventStore, tenant: str, session: uuid.UUID, messages: list[Message],
           answer: Message) -> None:
    meta = EventMetadata(actor="key", tenant=tenant, correlation_id=session)
    ingest(store, [ClientEvent(f"session-{session}", "turn.user", {"text": messages[-1].text})],
           IngestLimits(10, 10_000), Author("key", tenant),
           server_events=[head_event(messages, answer, session, "chatcmpl-x", meta, uuid.uuid4())])


def test_a_request_that_extends_a_recorded_exchange_continues_its_session() -> None:
    store, first, second = InMemoryEventStore(), uuid.uuid4(), uuid.uuid4()
    asked, answer = [m("user", "hi")], m("assistant", "hello")
    record(store, "acme", first, asked, answer)
    record(store, "acme", second, asked, answer)  # the same history again: the first holds it
    sessions = Sessions(store)
    state = sessions.for_request(None, None, "acme", [*asked, answer, m("user", "and you?")])
    assert state.session_id == first and state.found_by == "history"
    # Another tenant sending the same history: no match, a new session.
    other = sessions.for_request(None, None, "globex", [*asked, answer, m("user", "and you?")])
    assert other.found_by == "new" and other.session_id not in (first, second)
    # Not a recorded answer, or no answer at all: a new session each.
    unknown = [*asked, m("assistant", "bye"), m("user", "?")]
    assert sessions.for_request(None, None, "acme", unknown).found_by == "new"
    assert sessions.for_request(None, None, "acme", asked).found_by == "new"


def test_a_traceparent_names_its_trace_or_nothing() -> None:
    from serving.traces import trace_of

    trace = "0af7651916cd43dd8448eb211c80319c"
    assert trace_of(f"00-{trace}-b7ad6b7169203331-01") == trace
    assert trace_of(f" 00-{trace}-b7ad6b7169203331-00 ") == trace
    assert trace_of(f"01-{trace}-b7ad6b7169203331-01-later-fields") == trace  # a later version
    for bad in (None, "", f"00-{trace}-b7ad6b7169203331-01-extra", f"ff-{trace}-b7ad6b7169203331-01",
                f"00-{'0' * 32}-b7ad6b7169203331-01", f"00-{trace}-{'0' * 16}-01",
                f"00-{trace.upper()}-b7ad6b7169203331-01", f"00-{trace}-b7ad6b71692033-01"):
        assert trace_of(bad) is None, bad
