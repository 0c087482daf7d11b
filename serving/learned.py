"""The learned router at serving time: the contract's promoted router version, loaded once
per version, routes each ``auto`` turn.

Which version serves is read from the log on every request (``router.promoted`` on
``router:<contract>``), so a promotion takes effect on the next request, as an alias move
does. A version is loaded by its artifact digest (re-hashed on open) with its own copy
of the frozen base model (the one it was trained on, weights checked), shared by every
version on that base; one lock serialises the forward passes, which are one short pass
per routed turn.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from contract.sections import Harness
from harness.router import Route
from harness.routing import learned_input
from harness.routing.events import RouterVersion, RouterVersions
from harness.routing.training import LoadedRouter, RouterModel, best_of
from trainer.registry.artifacts import ArtifactStore
from trainer.registry.registry import Registry


@dataclass(frozen=True)
class LearnedRoute:
    route: Route
    version: RouterVersion


class LearnedRouting:
    def __init__(self, routers: RouterVersions, registry: Registry, artifacts: ArtifactStore,
                 device: str | None) -> None:
        self.routers, self.registry, self.artifacts, self.device = routers, registry, artifacts, device
        self._loaded: dict[str, LoadedRouter] = {}  # artifact digest -> router
        self._models: dict[str, RouterModel] = {}  # base model name -> its model
        self._lock = threading.Lock()

    def route(self, contract: str, harness: Harness, text: str) -> LearnedRoute | None:
        """The promoted version's choice for ``text`` (None: no version is promoted)."""
        version = self.routers.production(contract)
        if version is None:
            return None
        with self._lock:
            router = self._router(version)
            [scores] = router.scores([learned_input(text)])
        specialist, fallback = best_of(scores, harness)
        return LearnedRoute(Route(specialist, scores, fallback), version)

    def _router(self, version: RouterVersion) -> LoadedRouter:
        digest = version.registered.artifact_sha256
        found = self._loaded.get(digest)
        if found is None:
            base = version.registered.base_model
            model = self._models.get(base)
            found = LoadedRouter.open(version, self.registry, self.artifacts, self.device, model)
            self._models[base] = found.model
            self._loaded[digest] = found
        return found
