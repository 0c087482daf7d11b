"""Canned harness traffic for tests and benchmarks of the plumbing: deterministic under a seed.

Never used by `hcp demo` (a real model answers there, through ``harness.serve``): these
answers are fixed strings, good or poor in a fixed mix, so they can exercise ingest,
scoring and training at volume but prove nothing about learning.

Each session is what a harness would record: a user turn, the router's choice, tool
calls for the agentic specialists, the answer, the user's feedback, and the episode's
outcome. Good and poor answers are mixed so rewards vary and training has a signal.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

from events.ingest import ClientEvent

TASKS: dict[str, list[tuple[str, str, str]]] = {
    # specialist: (prompt, good answer, poor answer)
    "chat": [
        ("How are you today?", "I'm well, thanks for asking! How can I help?", "ok"),
        ("Tell me a fun fact.", "Octopuses have three hearts and blue blood.", "no"),
        ("Say thanks politely.", "Thank you so much, I really appreciate it!", "k thx"),
    ],
    "agent": [
        ("Book a table for two at 7pm.", "Booked: table for two at 19:00, confirmation sent.",
         "I cannot do that."),
        ("Find the weather in Paris.", "Paris: 18C and sunny this afternoon.", "Weather is weather."),
    ],
    "coding": [
        ("Write a Python function that adds two numbers.",
         "def add(a, b):\n    return a + b", "print('add')"),
        ("Reverse a string in Python.", "def reverse(s):\n    return s[::-1]", "s.reverse"),
        ("Square a number in Python.", "def square(x):\n    return x * x", "x^^2"),
    ],
    "genui": [
        ("Make a button that says Save.", '<button type="submit">Save</button>', "<div>"),
        ("Render a heading Hello.", "<h1>Hello</h1>", "hello?"),
    ],
}
# Tools each specialist calls; a poor answer sometimes reaches for one it is not allowed.
TOOLS = {"agent": ("web.search", "web.fetch"), "coding": ("files.read", "python.run"),
         "chat": (), "genui": ("ui.render",)}
STRAY_TOOL = "web.search"
GOOD_SHARE = 0.6  # fixed: canned traffic has no quality to turn up


def synthetic_sessions(count: int, seed: int = 7,
                       adapter_versions: dict[str, str] | None = None) -> Iterator[list[ClientEvent]]:
    """``count`` sessions, each one list of events ready for ``events.ingest.ingest``."""
    rng = random.Random(seed)  # noqa: S311 (reproducible synthetic data, not secrets)
    specialists = sorted(TASKS)
    for n in range(count):
        specialist = specialists[n % len(specialists)]
        adapter = (adapter_versions or {}).get(specialist, f"{specialist}@0")
        yield list(_session(rng, uuid.UUID(int=rng.getrandbits(128)), specialist, adapter))


def _session(rng: random.Random, session: uuid.UUID, specialist: str,
             adapter: str) -> Iterator[ClientEvent]:
    stream = f"session-{session}"
    meta = {"specialist": specialist, "adapter_version": adapter, "contract": "default@1",
            "actor": "harness:demo", "correlation_id": session}

    def event(kind: str, **payload: object) -> ClientEvent:
        return ClientEvent(stream_id=stream, type=kind, payload=payload,
                           event_id=uuid.UUID(int=rng.getrandbits(128)), **meta)  # type: ignore[arg-type]

    yield event("session.started", harness="demo-harness")
    # Sessions go well or badly as a whole (a turn flips now and then), so an episode's
    # reward says something about the answers in it: training has a signal to find.
    session_good = rng.random() < GOOD_SHARE
    good_turns = 0
    turns = rng.randint(1, 3)
    for turn in range(turns):
        prompt, good, poor = rng.choice(TASKS[specialist])
        is_good = session_good != (rng.random() < 0.1)
        good_turns += is_good
        yield event("turn.user", text=prompt)
        yield event("route.decided", specialist=specialist, adapter_version=adapter)
        tools = list(TOOLS[specialist][: rng.randint(0, len(TOOLS[specialist]))])
        if not is_good and specialist in ("coding", "genui") and rng.random() < 0.5:
            tools.append(STRAY_TOOL)
        for tool in tools:
            call_id = f"c{turn}-{tool}"
            yield event("tool.called", call_id=call_id, tool=tool, arguments={"q": prompt[:40]})
            yield event("tool.result", call_id=call_id, ok=is_good or rng.random() < 0.5,
                        output="done" if is_good else None)
        yield event("turn.assistant", text=good if is_good else poor, tokens=len(good))
        rating = round(rng.uniform(0.4, 1.0) if is_good else rng.uniform(-1.0, 0.1), 2)
        yield event("feedback.given", rating=rating)
    outcome = "success" if good_turns * 2 >= turns else "failure"
    yield event("episode.completed", outcome=outcome)
