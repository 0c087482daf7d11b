"""The chat gateway's part of the composition root: its backend, chooser and recorder,
and the learned router (served by the chooser, trained by ``hcp router train``).

Built on the first chat request (``Container.chat``), so a process that never serves a
chat never loads torch. The embedded backend holds the PEFT pools of this process; the
vLLM one forwards to ``HCP_VLLM_URL``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events.ingest import Author, ClientEvent, IngestLimits, ingest
from harness.routing.events import RouterVersions
from harness.routing.training import RouterTrainer
from serving.choice import Chooser
from serving.gateway import Backend, ChatGateway
from serving.learned import LearnedRouting
from serving.sessions import Sessions


def build_gateway(container: Any) -> ChatGateway:
    settings = container.settings
    limits = IngestLimits(settings.max_batch_events, settings.max_payload_bytes,
                          settings.json_limits)

    def record(events: Sequence[ClientEvent], author: Author) -> None:
        ingest(container.appender, list(events), limits, author, container.references)

    chooser = Chooser(settings.serving_contract, container.serving, container.contracts,
                      container.registry, container.aliases, build_learned_routing(container))
    return ChatGateway(chooser, Sessions(container.store), build_backend(container), record)


def build_learned_routing(container: Any) -> LearnedRouting:
    """The learned router as the gateway serves it (its model loads on first use)."""
    return LearnedRouting(RouterVersions(container.store), container.registry,
                          container.artifacts, container.settings.serving_device or None)


def build_router_trainer(container: Any, device: str | None = None) -> RouterTrainer:
    """``hcp router train``'s trainer: the log, the rewards, the serving contract's slots."""
    return RouterTrainer(container.store, container.rewards, container.serving,
                         container.contracts, container.registry, container.artifacts,
                         RouterVersions(container.store), device)


def build_backend(container: Any) -> Backend:
    settings = container.settings
    if settings.serving_backend == "vllm":
        from serving.vllm import VllmBackend

        return VllmBackend(settings.vllm_url, container.artifacts.open_dir,
                           settings.serving_timeout_s)
    from serving.embedded import EmbeddedBackend

    return EmbeddedBackend(container.artifacts.open_dir, settings.serving_device or None,
                           settings.serving_precision, settings.serving_max_adapters,
                           settings.serving_batch_window_ms / 1000, settings.serving_max_batch_rows,
                           settings.serving_timeout_s)
