"""The one resolver: a registry name to the bytes that answer.

A name is what ``inference.names`` parses: ``coding`` (the alias a caller serves from,
``production`` unless it says otherwise), ``coding@staging`` (that alias),
``coding@3`` (that version), ``sha256:<digest>`` (the version whose artifact has that
digest, whatever its name). What an alias points to is read from the registry every
time (so a move takes effect at the next call); what a version or a base model is never
changes, so it is kept. The answer names bytes only: the adapter's artifact digest and
the base's weights digest; the engine opens the artifact by digest (re-hashed) and the
base through ``inference.verify``. The chat gateway, the task harness, ``GET
/v1/specialists/{name}/resolve`` and ``hcp aliases resolve`` all ask this.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inference.names import ModelRef, parse_model
from inference.types import Adapter, BaseModel, Target
from kernel.errors import Invalid, NotFound
from kernel.values import JsonValue
from trainer.registry.aliases import Aliases
from trainer.registry.model import AdapterVersion
from trainer.registry.registry import Registry


@dataclass(frozen=True)
class Resolved(JsonValue):
    specialist: str
    alias: str | None  # the alias that resolved to it (None: named by version or digest)
    adapter_id: str | None  # None: the bare base (the alias points nowhere yet)
    version: int  # 0: the bare base
    artifact_sha256: str | None
    artifact_uri: str | None
    base_model: BaseModel
    moved_at: datetime | None = None

    @property
    def ref(self) -> str:
        """e.g. ``coding@3``; ``coding@0`` is the bare base."""
        return f"{self.specialist}@{self.version}"

    def target(self, precision: str = "auto", device: str | None = None) -> Target:
        adapter = Adapter(self.artifact_sha256) if self.artifact_sha256 else None
        return Target(self.base_model, adapter, precision, device)

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "base_model": {"name": self.base_model.name,
                                                    "path": self.base_model.path,
                                                    "weights_sha256": self.base_model.weights_sha256}}


class Resolver:
    def __init__(self, registry: Registry, aliases: Aliases) -> None:
        self.registry, self.aliases = registry, aliases
        self._adapters: dict[str, AdapterVersion] = {}
        self._bases: dict[str, BaseModel] = {}
        self._lock = threading.Lock()

    def resolve(self, name: str | ModelRef, alias: str = "production", at: datetime | None = None,
                base_if_unset: str | None = None) -> Resolved:
        """What ``name`` serves (now, or at ``at``); ``alias``: the one a bare specialist
        name means; ``base_if_unset``: the base model that answers where the alias points
        nowhere yet (else that is NotFound).

        Raises:
            NotFound: no such specialist, alias target, version, artifact or base model.
            Invalid: ``auto`` (a router picks the specialist, not the registry).
        """
        ref = parse_model(name) if isinstance(name, str) else name
        if ref.kind == "auto":
            raise Invalid("'auto' names no adapter: the serving contract's router picks one")
        if ref.kind == "digest":
            ids = self.registry.adapter_ids_of_artifact(str(ref.digest))
            if not ids:
                raise NotFound(f"no adapter version has artifact sha256:{ref.digest}")
            return self._of(self.adapter(ids[0]), None, None)
        specialist = str(ref.specialist)
        if ref.kind == "version":
            return self._of(self.adapter(f"{specialist}@{ref.version}"), None, None)
        alias = ref.alias or alias
        try:
            move = self.aliases.at(specialist, alias, at)
        except NotFound:
            raise NotFound(f"specialist '{specialist}' is not in the registry "
                           "(hcp specialists create)") from None
        if move is not None and move.adapter_id is not None:
            return self._of(self.adapter(move.adapter_id), alias, move.moved_at)
        if base_if_unset is None or ref.kind == "alias":
            raise NotFound(f"alias '{alias}' of '{specialist}' points nowhere")
        return Resolved(specialist, alias, None, 0, None, None, self.base(base_if_unset),
                        move.moved_at if move is not None else None)

    def adapter(self, adapter_id: str) -> AdapterVersion:
        """A registered version (kept: a version never changes)."""
        found = self._adapters.get(adapter_id)
        if found is None:
            try:
                found = self.registry.adapter(adapter_id)
            except NotFound:
                raise NotFound(f"no adapter version '{adapter_id}'") from None
            with self._lock:
                self._adapters[adapter_id] = found
        return found

    def base(self, name: str) -> BaseModel:
        """A registered base model by name (kept: its weights digest never changes)."""
        found = self._bases.get(name)
        if found is None:
            try:
                entry = self.registry.base_model(name)
            except NotFound:
                raise NotFound(f"base model '{name}' is not registered (hcp base-models)") from None
            found = BaseModel(entry.name, entry.path, entry.weights_sha256)
            with self._lock:
                self._bases[name] = found
        return found

    def _of(self, adapter: AdapterVersion, alias: str | None, moved_at: datetime | None) -> Resolved:
        return Resolved(adapter.specialist, alias, adapter.adapter_id, adapter.version,
                        adapter.artifact_sha256, adapter.artifact_uri, self.base(adapter.base_model),
                        moved_at)
