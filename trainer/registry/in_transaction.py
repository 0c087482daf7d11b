"""The registry's reads and writes inside a caller's transaction: registering the version a
run produced (in the run's final transaction, under the registry lock) and the lookups
other packages' transactions make (a trigger's firing, an approval, a policy change).
``trainer.registry.registry.Registry`` is the service built on them.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from events.store import EventStore
from kernel.errors import NotFound
from trainer.journal import specialist_stream, write
from trainer.registry.events import AdapterRegistered, ContractLink
from trainer.registry.model import AdapterVersion, ContractRef, NewAdapter, adapter_id_of
from trainer.registry.projections import ADAPTER_PROJECTIONS
from trainer.registry.rows import adapter_from_row
from trainer.registry.tables import (
    adapter_contract_versions,
    adapter_status_changes,
    adapter_versions,
    base_models,
    specialists,
)


def register_in(conn: Connection, store: EventStore, new: NewAdapter, actor: str) -> AdapterVersion:
    """Register the version a run produced, inside the run's final transaction.

    The caller holds the registry lock, so max+1 is the next free version.
    """
    version = 1 + int(conn.execute(select(func.coalesce(func.max(adapter_versions.c.version), 0))
                                   .where(adapter_versions.c.specialist == new.specialist))
                      .scalar() or 0)
    adapter_id = adapter_id_of(new.specialist, version)
    write(store, conn, ADAPTER_PROJECTIONS, specialist_stream(new.specialist), AdapterRegistered(
        adapter_id=adapter_id, version=version, parent_adapter_id=new.parent_adapter_id,
        base_model=new.base_model, training_run_id=new.training_run_id, manifest_id=new.manifest_id,
        contract_versions=[ContractLink(name=n, version=v) for n, v in new.contract_versions],
        hyper=new.hyper, artifact_sha256=new.artifact_sha256, status=new.status,
        gate=new.metrics.get("gate"), metrics=new.metrics, artifact_uri=new.artifact_uri,
    ), actor, specialist=new.specialist, adapter_version=adapter_id)
    return adapter_in(conn, adapter_id)


def artifact_versions_in(conn: Connection, specialist: str, sha256: str) -> list[str]:
    """The versions of ``specialist`` registered with artifact ``sha256``, oldest first."""
    av = adapter_versions.c
    query = (select(av.adapter_id).where(av.specialist == specialist, av.artifact_sha256 == sha256)
             .order_by(av.version))
    return list(conn.execute(query).scalars())


def specialist_names_in(conn: Connection) -> list[str]:
    return list(conn.execute(select(specialists.c.name).order_by(specialists.c.name)).scalars())


def require_specialist_in(conn: Connection, name: str) -> None:
    """Raises:
        NotFound: no specialist ``name``.
    """
    if conn.execute(select(specialists.c.name).where(specialists.c.name == name)).first() is None:
        raise NotFound(f"no specialist '{name}'")


def base_model_names_in(conn: Connection) -> list[str]:
    return list(conn.execute(select(base_models.c.name).order_by(base_models.c.name)).scalars())


def adapter_in(conn: Connection, adapter_id: str) -> AdapterVersion:
    row = conn.execute(select(adapter_versions)
                       .where(adapter_versions.c.adapter_id == adapter_id)).first()
    if row is None:
        raise NotFound(f"no adapter version '{adapter_id}'")
    latest = conn.execute(
        select(adapter_status_changes.c.status)
        .where(adapter_status_changes.c.adapter_id == adapter_id)
        .order_by(adapter_status_changes.c.position.desc()).limit(1)
    ).scalar()
    # Without content hashes: ``Registry`` adds them from the contract store.
    refs = conn.execute(
        select(adapter_contract_versions.c.contract_name, adapter_contract_versions.c.contract_version)
        .where(adapter_contract_versions.c.adapter_id == adapter_id)
        .order_by(adapter_contract_versions.c.contract_name, adapter_contract_versions.c.contract_version)
    )
    return adapter_from_row(row, latest, [ContractRef(n, v) for n, v in refs])
