"""What a learned router reads a turn with: the base model's representation of its text
(through the engine, so the base it reads with is the one that serves), and a classifier
version over it.

A router version names the base it was trained on by name and weights digest; it routes
only with those bytes (checked when it is opened), and its artifact is re-hashed on open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contract.sections import Harness
from harness.routing.events import RouterVersion
from inference.engine import Engine
from inference.types import BaseModel, Target
from kernel.errors import Invalid
from trainer.registry.artifacts import ArtifactStore


@dataclass(frozen=True)
class RouterBase:
    """The frozen base a router reads turns with."""

    base: BaseModel
    engine: Engine
    device: str | None = None

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def weights_sha256(self) -> str:
        return self.base.weights_sha256

    def represent(self, texts: Sequence[str]) -> Any:
        return self.engine.represent(Target(self.base, None, "auto", self.device), texts)


class LoadedRouter:
    """A router version ready to route: the base it reads with and its classifier."""

    def __init__(self, reader: RouterBase, classifier: Any) -> None:
        self.reader, self.classifier = reader, classifier

    @classmethod
    def open(cls, version: RouterVersion, artifacts: ArtifactStore,
             reader_of: Callable[[str], RouterBase]) -> LoadedRouter:
        """Its artifact re-hashed on open; the base (``reader_of`` its name) checked against
        what it was trained on."""
        from harness.routing.classifier import load

        classifier, config = load(artifacts.open_dir(version.registered.artifact_sha256))
        reader = reader_of(str(config["base_model"]))
        if reader.weights_sha256 != config["base_weights_sha256"]:
            raise Invalid(f"router {version.ref} was trained on other weights of "
                          f"'{config['base_model']}' than the registered ones")
        return cls(reader, classifier)

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        return list(self.classifier.predict(self.reader.represent(list(texts)))) if texts else []

    def decide(self, harness: Harness, texts: Sequence[str]) -> list[str]:
        """The specialist per text, with the contract's min_confidence fallback."""
        return [best_of(s, harness)[0] for s in self.scores(texts)]


def best_of(scores: dict[str, float], harness: Harness) -> tuple[str, bool]:
    """The most probable specialist, or the default (fallback) below min_confidence."""
    best = max(sorted(scores), key=lambda name: scores[name])
    if scores[best] < harness.router.min_confidence:
        return harness.router.default_specialist, True
    return best, False
