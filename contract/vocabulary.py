"""Names shared by the contract modules: event types and expression variables.

Kept apart so that the document (which compiles expressions against these names) and the
subject builder (which produces them) agree without importing each other.
"""

from __future__ import annotations

# Event types the rubric input understands; any other `x.*` type passes through untouched.
SESSION_STARTED = "session.started"
TURN_USER = "turn.user"
ROUTE_DECIDED = "route.decided"
TURN_ASSISTANT = "turn.assistant"
TOOL_CALLED = "tool.called"
TOOL_RESULT = "tool.result"
FEEDBACK_GIVEN = "feedback.given"
EPISODE_COMPLETED = "episode.completed"
# Written by the server, once, when a session of outside traffic has been idle for its
# contract's `harness.sessions.idle_timeout`: it ends the open episode and turn as
# `episode.completed` does, with no outcome.
SESSION_EXPIRED = "session.expired"
EPISODE_ENDS = frozenset({EPISODE_COMPLETED, SESSION_EXPIRED})

EXPERIENCE_EVENT_TYPES = (
    SESSION_STARTED,
    TURN_USER,
    ROUTE_DECIDED,
    TURN_ASSISTANT,
    TOOL_CALLED,
    TOOL_RESULT,
    FEEDBACK_GIVEN,
    EPISODE_COMPLETED,
    SESSION_EXPIRED,
)
CUSTOM_EVENT_PREFIX = "x."

SUBJECT_KINDS = ("turn", "episode")

# Top-level variables every criterion, gate and `applies_to.when` expression may read.
INPUT_VARIABLES = (
    "subject",
    "events",
    "turns",
    "user_text",
    "assistant_text",
    "tool_calls",
    "feedback",
    "outcome",
    "outcome_score",
    "specialist",
    "specialists",
    "adapter_version",
    "harness",
    "counts",
    "duration_s",
    "truncated",
    "signals",
    "judge",
)

# ``judge`` holds the verdicts of the contract's judges (contract/judges.py), computed after
# ``applies_to`` decided the judges are needed at all: ``applies_to.when`` cannot read it.
WHEN_VARIABLES = tuple(name for name in INPUT_VARIABLES if name != "judge")

# Extra variables only the training eligibility expression sees: the evaluation's result.
RESULT_VARIABLES = ("score", "components", "gates", "split")


def is_known_event_type(event_type: str) -> bool:
    return event_type in EXPERIENCE_EVENT_TYPES or (
        event_type.startswith(CUSTOM_EVENT_PREFIX) and len(event_type) > len(CUSTOM_EVENT_PREFIX)
    )
