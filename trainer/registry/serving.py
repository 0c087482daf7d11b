"""What an alias points to, for a server to load: the artifact and base, hashes checked."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernel.errors import Invalid, NotFound
from kernel.values import JsonValue
from trainer.ml.digest import weights_sha256
from trainer.registry.aliases import Aliases
from trainer.registry.artifacts import ArtifactStore
from trainer.registry.registry import Registry


@dataclass(frozen=True)
class Resolved(JsonValue):
    specialist: str
    alias: str
    adapter_id: str
    version: int
    artifact_sha256: str
    artifact_uri: str
    base_model: dict[str, str]  # name, path, weights_sha256
    moved_at: datetime


class Resolver:
    def __init__(self, registry: Registry, aliases: Aliases, artifacts: ArtifactStore) -> None:
        self.registry, self.aliases, self.artifacts = registry, aliases, artifacts

    def resolve(self, specialist: str, alias: str, at: datetime | None = None) -> Resolved:
        """What a server needs to load the adapter ``alias`` points to (now, or at ``at``).

        Raises:
            NotFound: the alias points nowhere.
        """
        move = self.aliases.at(specialist, alias, at)
        if move is None or move.adapter_id is None:
            raise NotFound(f"alias '{alias}' of '{specialist}' points nowhere")
        adapter = self.registry.adapter(move.adapter_id)
        base = self.registry.base_model(adapter.base_model)
        return Resolved(specialist, alias, adapter.adapter_id, adapter.version,
                        adapter.artifact_sha256, adapter.artifact_uri,
                        {"name": base.name, "path": base.path, "weights_sha256": base.weights_sha256},
                        move.moved_at)

    def load(self, specialist: str, alias: str = "production", device: Any = None) -> Any:
        """Base model + the alias's adapter (``trainer.ml.load.ServingModel``), both verified.

        Raises:
            ArtifactCorrupted: the adapter's bytes on disk no longer hash to its address.
            Invalid: the base model's weights are not the registered ones.
        """
        from trainer.ml.load import load_adapter_for_serving

        resolved = self.resolve(specialist, alias)
        base = resolved.base_model
        adapter_dir = self.artifacts.open_dir(resolved.artifact_sha256)
        if weights_sha256(base["path"]) != base["weights_sha256"]:
            raise Invalid(f"base model '{base['name']}' at {base['path']} has other weights now")
        return load_adapter_for_serving(base["path"], adapter_dir, device)
