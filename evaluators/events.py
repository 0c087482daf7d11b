"""The evaluators' events in the log. Pure.

A re-evaluation job's progress is working state (``reevaluations``); its end is history, so
it is an event (on stream ``reevaluation:<job id>``), written in the transaction that
sets the job's final status: a webhook on ``reevaluation.finished`` is delivered from it.
"""

from __future__ import annotations

from pydantic import Field

from events.server_events import ServerEvent


def reevaluation_stream(job_id: str) -> str:
    return f"reevaluation:{job_id}"


class ReevaluationFinished(ServerEvent):
    TYPE = "reevaluation.finished"
    SUMMARY = "A re-evaluation of history under a published contract version finished"

    job_id: str
    contract_name: str
    contract_version: int
    status: str = Field(description="succeeded | degraded | failed")
    from_position: int
    to_position: int
    subjects_scored: int
    subjects_errored: int
    subjects_skipped: int
