"""OpenLineage run events (openlineage-python) for evaluation, manifest freezing and training.

Built from the log, so an export can start anywhere and be repeated: each event of the
types below becomes run events, the facts beside it read from the projections.

| log event | job | OpenLineage |
| --- | --- | --- |
| ``contract.published`` | ``evaluate.<contract>`` | START: events → reward_records |
| ``contract.retired`` | ``evaluate.<contract>`` | COMPLETE, rows = the version's rewards |
| ``trigger.fired`` | ``freeze_manifest.<specialist>`` | START + COMPLETE: reward_records → manifests/<id> |
| ``training.started`` | ``train.<specialist>`` | START: manifest, base model, parent adapter |
| ``training.succeeded`` | ``train.<specialist>`` | COMPLETE: → adapters/<id> |
| ``training.failed`` | ``train.<specialist>`` | FAIL, with the error |
| ``alias.moved`` | ``promote.<specialist>`` | START + COMPLETE: adapters/<id> → aliases/<s>/<alias> |

Datasets share the job namespace: ``events``, ``reward_records``,
``manifests/<manifest id>`` (version: content hash), ``adapters/<adapter id>`` (version:
artifact sha256), ``base_models/<name>`` (version: weight hash),
``aliases/<specialist>/<alias>`` (version: the adapter it points to; a move to nothing
has no input). Run ids are the server's (firing and run ids are UUIDs; an evaluation's
is a UUID5 of name@version, a promotion's of the alias move's position).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    dataset_version_dataset,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    parent_run,
)
from openlineage.client.generated.base import JobFacet, RunFacet

from contract.events import Published, Retired
from contract.versions import ContractVersions
from evaluators.rewards import RewardStore
from events.model import RecordedEvent
from events.store import EventStore
from trainer.datasets.members import ManifestIndex
from trainer.registry.events import AliasMoved
from trainer.registry.registry import Registry
from trainer.runs.events import TrainingFailed, TrainingStarted, TrainingSucceeded
from trainer.runs.store import Runs
from trainer.triggers.events import TriggerFired

PRODUCER = "urn:hcp:server"
HCP_FACET_SCHEMA = "urn:hcp:openlineage:1-0-0:HcpRunFacet.json#/$defs/HcpRunFacet"
EXPORTED_TYPES = tuple(cls.TYPE for cls in (Published, Retired, TriggerFired, TrainingStarted,
                                             TrainingSucceeded, TrainingFailed, AliasMoved))
_EVALUATION_NS = uuid.UUID("0b6f7c3e-55d2-4c5e-8d7a-5f0e2f9c1a44")
_PROMOTION_NS = uuid.UUID("6a1f3d52-8c0e-4b7a-9e21-3f4c5d6e7a8b")


@attr.define
class HcpRunFacet(RunFacet):
    """What the server records about a run beyond the standard facets."""

    kind: str  # evaluation | manifest_freeze | training
    details: dict[str, Any] = attr.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._producer = PRODUCER

    @staticmethod
    def _get_schema() -> str:
        return HCP_FACET_SCHEMA


class OpenLineageEvents:
    def __init__(self, store: EventStore, runs: Runs, registry: Registry, index: ManifestIndex,
                 rewards: RewardStore, contracts: ContractVersions, namespace: str) -> None:
        self.store, self.runs, self.registry, self.index = store, runs, registry, index
        self.rewards, self.contracts, self.namespace = rewards, contracts, namespace

    def after(self, position: int, limit: int = 500) -> Iterator[tuple[int, RunEvent]]:
        """(log position, run event) for the exported log events after ``position``."""
        while batch := self.store.read_types(EXPORTED_TYPES, position, limit):
            for event in batch:
                for run_event in self.of(event):
                    yield event.position, run_event
            position = batch[-1].position

    def of(self, event: RecordedEvent) -> list[RunEvent]:
        """The run events one log event stands for (none for a type not exported)."""
        handler = {Published.TYPE: self._published, Retired.TYPE: self._retired,
                   TriggerFired.TYPE: self._fired, TrainingStarted.TYPE: self._training,
                   TrainingSucceeded.TYPE: self._training, TrainingFailed.TYPE: self._training,
                   AliasMoved.TYPE: self._promoted}.get(event.type)
        return handler(event) if handler else []

    # --- evaluation ------------------------------------------------------------------

    def _published(self, event: RecordedEvent) -> list[RunEvent]:
        return [self._evaluation(event, RunState.START, None)]

    def _retired(self, event: RecordedEvent) -> list[RunEvent]:
        name, version = event.payload["name"], int(event.payload["version"])
        return [self._evaluation(event, RunState.COMPLETE, self.rewards.count(name, version))]

    def _evaluation(self, event: RecordedEvent, state: RunState, rows: int | None) -> RunEvent:
        name, version = event.payload["name"], int(event.payload["version"])
        run_id = str(uuid.uuid5(_EVALUATION_NS, f"{name}@{version}"))
        facets: dict[str, RunFacet] = {"hcp": HcpRunFacet(kind="evaluation", details={
            "contract": name, "version": version, "content_hash": event.payload.get("content_hash")})}
        return self._event(state, event, f"evaluate.{name}", "EVALUATION", run_id, facets,
                           [self._input("events")], [self._output("reward_records", rows=rows)])

    # --- manifest freezing -----------------------------------------------------------

    def _fired(self, event: RecordedEvent) -> list[RunEvent]:
        p = event.payload
        specialist = event.metadata.specialist or event.stream_id.split(":", 1)[-1]
        summary = self.index.summaries([p["manifest_id"]]).get(p["manifest_id"])
        facets: dict[str, RunFacet] = {"hcp": HcpRunFacet(kind="manifest_freeze", details={
            "policy": p.get("policy"), "reason": p.get("reason"), "cut_from": p.get("cut_from"),
            "dataset_cut": p.get("dataset_cut"), "training_run_id": p.get("run_id")})}
        inputs = [self._input("reward_records", version=str(p.get("dataset_cut")))]
        outputs = [self._output(f"manifests/{p['manifest_id']}", version=p.get("manifest_hash"),
                                rows=summary.reward_count if summary else None)]
        job = f"freeze_manifest.{specialist}"
        return [self._event(state, event, job, "MANIFEST_FREEZE", p["firing_id"], facets, inputs, outputs)
                for state in (RunState.START, RunState.COMPLETE)]

    # --- training --------------------------------------------------------------------

    def _training(self, event: RecordedEvent) -> list[RunEvent]:
        run = self.runs.get(event.stream_id.split(":", 1)[1])
        base = self.registry.base_model(run.base_model)
        frozen = self.index.headers([run.manifest_id]).get(run.manifest_id)
        inputs = [self._input(f"manifests/{run.manifest_id}", version=frozen[1] if frozen else None),
                  self._input(f"base_models/{base.name}", version=base.weights_sha256)]
        if run.parent_adapter_id:
            inputs.append(self._input(f"adapters/{run.parent_adapter_id}"))
        facets: dict[str, RunFacet] = {"parent": parent_run.ParentRunFacet(
            run=parent_run.Run(runId=run.firing_id),
            job=parent_run.Job(namespace=self.namespace, name=f"freeze_manifest.{run.specialist}"))}
        details: dict[str, Any] = {"attempt": event.payload.get("attempt"), "hyper": run.hyper}
        outputs: list[OutputDataset] = []
        state = RunState.START
        if event.type == TrainingSucceeded.TYPE and run.adapter_id:
            adapter = self.registry.adapter(run.adapter_id)
            outputs = [self._output(f"adapters/{adapter.adapter_id}", version=adapter.artifact_sha256)]
            details |= {"adapter_id": adapter.adapter_id, "status": adapter.registered_status,
                        "gate": adapter.metrics.get("gate")}
            state = RunState.COMPLETE
        elif event.type == TrainingFailed.TYPE:
            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=str(event.payload.get("error") or run.error or "failed"),
                programmingLanguage="python")
            state = RunState.FAIL
        facets["hcp"] = HcpRunFacet(kind="training", details=details)
        return [self._event(state, event, f"train.{run.specialist}", "TRAINING", run.run_id, facets,
                            inputs, outputs)]

    # --- promotion ---------------------------------------------------------------------

    def _promoted(self, event: RecordedEvent) -> list[RunEvent]:
        """An alias move: the version it points the alias to is the input, the alias the
        output (its version: that adapter id); who moved it, and why, in the facet."""
        p = event.payload
        specialist, alias, target = p["specialist"], p["alias"], p["adapter_id"]
        inputs = []
        if target is not None:
            adapter = self.registry.adapter(target)
            inputs = [self._input(f"adapters/{target}", version=adapter.artifact_sha256)]
        facets: dict[str, RunFacet] = {"hcp": HcpRunFacet(kind="promotion", details={
            "alias": alias, "adapter_id": target, "previous_adapter_id": p.get("previous_adapter_id"),
            "move": p.get("kind", "move"), "actor": event.metadata.actor, "reason": p.get("reason")})}
        outputs = [self._output(f"aliases/{specialist}/{alias}", version=target)]
        run_id = str(uuid.uuid5(_PROMOTION_NS, str(event.position)))
        job = f"promote.{specialist}"
        return [self._event(state, event, job, "PROMOTION", run_id, facets, inputs, outputs)
                for state in (RunState.START, RunState.COMPLETE)]

    # --- shapes ----------------------------------------------------------------------

    def _event(self, state: RunState, event: RecordedEvent, job: str, job_type: str, run_id: str,
               facets: dict[str, RunFacet], inputs: list[InputDataset],
               outputs: list[OutputDataset]) -> RunEvent:
        job_facets: dict[str, JobFacet] = {"jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="HCP", jobType=job_type)}
        return RunEvent(eventType=state, eventTime=event.recorded_at.isoformat(),
                        run=Run(runId=run_id, facets=facets),
                        job=Job(namespace=self.namespace, name=job, facets=job_facets),
                        inputs=inputs, outputs=outputs, producer=PRODUCER)

    def _input(self, name: str, version: str | None = None) -> InputDataset:
        facets: dict[str, Any] = {}
        if version:
            facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=version)
        return InputDataset(namespace=self.namespace, name=name, facets=facets)

    def _output(self, name: str, version: str | None = None, rows: int | None = None) -> OutputDataset:
        facets: dict[str, Any] = {}
        if version:
            facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=version)
        output_facets: dict[str, Any] = {}
        if rows is not None:
            output_facets["outputStatistics"] = (
                output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(rowCount=rows))
        return OutputDataset(namespace=self.namespace, name=name, facets=facets,
                             outputFacets=output_facets)
