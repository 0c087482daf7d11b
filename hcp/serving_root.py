"""The chat gateway's part of the composition root: its chooser and recorder on the
process's engine (``Services.inference``), and the learned router (served by the chooser,
trained by ``hcp router train``).

Built on the first use of ``Container.chat`` (``hcp serve`` builds and warms it at
start), so a process that never serves a chat never loads torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events.ingest import Author, ClientEvent, IngestLimits, ingest
from events.model import NewEvent
from harness.routing.events import RouterVersions
from harness.routing.training import RouterTrainer
from serving.choice import Chooser
from serving.gateway import ChatGateway
from serving.learned import LearnedRouting
from serving.sessions import Sessions


def build_gateway(container: Any) -> ChatGateway:
    settings = container.settings
    limits = IngestLimits(settings.max_batch_events, settings.max_payload_bytes,
                          settings.json_limits)

    def record(events: Sequence[ClientEvent], author: Author,
               server_events: Sequence[NewEvent] = ()) -> None:
        ingest(container.appender, list(events), limits, author, container.references,
               opens_derived=True,  # the gateway opens the session it derived for author
               server_events=server_events)

    chooser = Chooser(settings.serving_contract, container.serving, container.contracts,
                      container.resolver, build_learned_routing(container))
    return ChatGateway(chooser, Sessions(container.store), container.inference, record,
                       settings.serving_precision, settings.serving_device or None)


def build_learned_routing(container: Any) -> LearnedRouting:
    """The learned router as the gateway serves it (its base is the engine's)."""
    return LearnedRouting(RouterVersions(container.store), container.resolver,
                          container.artifacts, container.inference,
                          container.settings.serving_device or None)


def build_router_trainer(container: Any, device: str | None = None) -> RouterTrainer:
    """``hcp router train``'s trainer: the log, the rewards, the serving contract's slots."""
    return RouterTrainer(container.store, container.rewards, container.serving,
                         container.contracts, container.resolver, container.inference,
                         container.artifacts, RouterVersions(container.store), device)
