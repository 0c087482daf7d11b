"""Stored registry rows as value objects (shared by the registry and its lineage reads)."""

from __future__ import annotations

from typing import Any

from kernel.clock import utc
from trainer.registry.model import AdapterVersion, BaseModelEntry, ContractRef


def adapter_from_row(row: Any, latest_status: str | None, refs: list[ContractRef]) -> AdapterVersion:
    """A stored version, its latest status change (None: as registered) and contract refs."""
    return AdapterVersion(
        adapter_id=row.adapter_id, specialist=row.specialist, version=row.version,
        parent_adapter_id=row.parent_adapter_id, base_model=row.base_model,
        training_run_id=row.training_run_id, manifest_id=row.manifest_id, hyper=row.hyper,
        metrics=row.metrics, artifact_sha256=row.artifact_sha256, artifact_uri=row.artifact_uri,
        registered_status=row.status, status=latest_status or row.status,  # type: ignore[arg-type]
        registered_by=row.registered_by, registered_at=utc(row.registered_at),
        contract_versions=refs,
    )


def base_from_row(row: Any) -> BaseModelEntry:
    return BaseModelEntry(name=row.name, path=row.path, weights_sha256=row.weights_sha256,
                          config=row.config, registered_by=row.registered_by,
                          registered_at=utc(row.registered_at),
                          source=getattr(row, "source", None))
