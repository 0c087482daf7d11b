"""The learned router at serving time: the contract's promoted router version, opened once
per version, routes each ``auto`` turn.

Which version serves is read from the log on every request (``router.promoted`` on
``router:<contract>``), so a promotion takes effect on the next request, as an alias move
does. A version is opened by its artifact digest (re-hashed on open) and reads turns with
the engine's representation of the base it was trained on (weights checked): the same
base the gateway serves with, not a copy of its own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from contract.sections import Harness
from harness.router import Route
from harness.routing import learned_input
from harness.routing.events import RouterVersion, RouterVersions
from harness.routing.reader import LoadedRouter, RouterBase, best_of
from inference.engine import Engine
from inference.resolve import Resolver
from trainer.registry.artifacts import ArtifactStore


@dataclass(frozen=True)
class LearnedRoute:
    route: Route
    version: RouterVersion


class LearnedRouting:
    def __init__(self, routers: RouterVersions, resolver: Resolver, artifacts: ArtifactStore,
                 engine: Engine, device: str | None) -> None:
        self.routers, self.resolver, self.artifacts = routers, resolver, artifacts
        self.engine, self.device = engine, device
        self._loaded: dict[str, LoadedRouter] = {}  # artifact digest -> router
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

    def _reader(self, base_model: str) -> RouterBase:
        return RouterBase(self.resolver.base(base_model), self.engine, self.device)

    def _router(self, version: RouterVersion) -> LoadedRouter:
        digest = version.registered.artifact_sha256
        found = self._loaded.get(digest)
        if found is None:
            found = self._loaded[digest] = LoadedRouter.open(version, self.artifacts, self._reader)
        return found
