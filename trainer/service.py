"""The trainer's composition: every registry and training part, built from a container."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from events.store import EventStore
from hcp.bootstrap import Container
from hcp.settings import Settings
from trainer.aliases import Aliases
from trainer.artifacts import ArtifactStore, LocalArtifactStore
from trainer.lineage import Lineage
from trainer.policies import Policies
from trainer.registry import Registry
from trainer.runs import Runs
from trainer.triggers import Dispatcher, Triggers

_ATTR = "_hcp_trainer_parts"


@dataclass
class TrainerParts:
    settings: Settings
    engine: Engine
    store: EventStore
    artifacts: ArtifactStore
    registry: Registry
    aliases: Aliases
    runs: Runs
    policies: Policies
    lineage: Lineage
    triggers: Triggers = field(init=False)
    dispatcher: Any = None

    def resolve(self, specialist: str, alias: str) -> dict[str, Any]:
        """What a server needs to load the adapter ``alias`` points to."""
        move = self.aliases.at(specialist, alias)
        if move is None or move.adapter_id is None:
            from trainer.model import NotFound

            raise NotFound(f"alias '{alias}' of '{specialist}' points nowhere")
        adapter = self.registry.adapter(move.adapter_id)
        base = self.registry.base_model(adapter.base_model)
        return {"specialist": specialist, "alias": alias, "adapter_id": adapter.adapter_id,
                "version": adapter.version, "artifact_sha256": adapter.artifact_sha256,
                "artifact_uri": adapter.artifact_uri,
                "base_model": {"name": base.name, "path": base.path,
                               "weights_sha256": base.weights_sha256},
                "moved_at": move.moved_at.isoformat()}


def build_parts(container: Container, dispatcher: Dispatcher | None = None) -> TrainerParts:
    """All parts on the container's engine and store; ``dispatcher`` defaults by mode."""
    engine, store, settings = container.engine, container.store, container.settings
    registry = Registry(engine, store)
    artifacts = LocalArtifactStore(settings.resolved_artifact_dir)
    runs = Runs(engine, store)
    parts = TrainerParts(settings=settings, engine=engine, store=store, artifacts=artifacts,
                         registry=registry, aliases=Aliases(engine, store), runs=runs,
                         policies=Policies(engine, store),
                         lineage=Lineage(engine, registry, artifacts))
    parts.dispatcher = dispatcher or default_dispatcher(settings, lambda: parts)
    parts.triggers = Triggers(engine, store, runs, parts.dispatcher)
    return parts


def default_dispatcher(settings: Settings, parts: Any) -> Dispatcher:
    from trainer.dispatch import CeleryDispatcher, InProcessDispatcher

    if settings.redis_url:
        from trainer.celery_app import make_celery

        return CeleryDispatcher(make_celery(settings))
    return InProcessDispatcher(parts)


def install_parts(container: Container, parts: TrainerParts) -> None:
    """Use ``parts`` for this container (tests: a recording dispatcher)."""
    setattr(container, _ATTR, parts)


def trainer_parts(container: Container) -> TrainerParts:
    """The container's trainer parts, built on first use and kept on the container.

    (Kept as an attribute because the composition root has no trainer slot yet; one
    ``Container.trainer`` cached property would replace this.)
    """
    parts = getattr(container, _ATTR, None)
    if parts is None:
        parts = build_parts(container)
        setattr(container, _ATTR, parts)
    return parts
