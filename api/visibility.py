"""What a key sees of derived data that can quote event content or span tenants (the
table in docs/security.md, "What each scope sees"). Routes fetch what the key's tenant may
read; these decide which fields of it are shown whole.

- Error messages of rubrics can quote event text: shown whole to keys with ``events:read``
  (the rows are already the key's tenant's), else without it (``contract.error_text``).
- A re-evaluation job scores every tenant's history: its error's example is shown whole
  only to an operator key with ``events:read``.
- The gate record names held-out subjects and holds the answers generated for them (every
  tenant's experience): registry readers see its summary (``trainer.gate.record``).
- Places on the server's disk (a base model's directory, an artifact's ``file:`` URI, the
  config's ``_name_or_path``) and a failed run's error (a trainer's traceback) are the
  operators': a tenant's key reads null there (the same rule as webhook bodies,
  ``integrations/webhooks/views.py``).
"""

from __future__ import annotations

from typing import Any

from access.principal import Principal
from audit.lineage import LineageLink
from contract.error_text import without_event_text
from evaluators.model import RewardRecord
from evaluators.reevaluation_model import Job
from inference.resolve import Resolved
from trainer.gate.record import with_gate_summary
from trainer.registry.model import AdapterVersion, BaseModelEntry
from trainer.runs.model import TrainingRun


def reads_event_text(principal: Principal) -> bool:
    """Whether the key may read the events of the rows it was given (its tenant's)."""
    return principal.allows("events:read")


def reads_every_tenants_events(principal: Principal) -> bool:
    return principal.operator and principal.allows("events:read")


def errors_json(errors: list[dict[str, Any]], principal: Principal) -> list[dict[str, Any]]:
    return errors if reads_event_text(principal) else [without_event_text(e) for e in errors]


def reward_json(record: RewardRecord, principal: Principal) -> dict[str, Any]:
    body = record.to_json()
    body["errors"] = errors_json(body["errors"], principal)
    return body


def job_json(job: Job, principal: Principal) -> dict[str, Any]:
    return (job if reads_every_tenants_events(principal) else job.without_event_text()).to_json()


def adapter_json(adapter: AdapterVersion, principal: Principal) -> dict[str, Any]:
    """An adapter version with its gate record summarised (its cases: ``gate_cases``)."""
    body = with_gate_summary(adapter.to_json())
    return body if principal.operator else {**body, "artifact_uri": None}


def base_model_json(base: BaseModelEntry, principal: Principal) -> dict[str, Any]:
    body = base.to_json()
    if principal.operator:
        return body
    config = {k: v for k, v in body["config"].items() if k != "_name_or_path"}
    return {**body, "path": None, "config": config}


def resolved_json(resolved: Resolved, principal: Principal) -> dict[str, Any]:
    body = resolved.to_json()
    if principal.operator:
        return body
    return {**body, "artifact_uri": None, "base_model": {**body["base_model"], "path": None}}


def lineage_link_json(link: LineageLink, principal: Principal) -> LineageLink:
    if principal.operator:
        return link
    return {**link, "artifact": {**link["artifact"], "uri": None}}


def run_json(run: TrainingRun, principal: Principal) -> dict[str, Any]:
    """A training run; its error (a trainer's exception: paths, hosts) to operators only."""
    body = run.to_json()
    return body if principal.operator or body.get("error") is None else {**body, "error": None}
