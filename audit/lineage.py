"""Lineage: an adapter version's chain of parents back to its root, each link verified.

For every version: its base model and weight hash, its dataset manifest and content
hash, the contract versions (with content hashes) of the rewards it used, how many
rewards, and its artifact hash. ``verified`` means the artifact still hashes to its
address on disk and the manifest's stored content still hashes to its content hash;
``deep`` also rebuilds the examples from the events and re-hashes the base weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from kernel.errors import Conflict
from trainer.datasets.manifests import Manifests
from trainer.ml.digest import weights_sha256
from trainer.registry.artifacts import ArtifactCorrupted, ArtifactNotFound, ArtifactStore
from trainer.registry.registry import Registry


class BaseModelCheck(TypedDict):
    name: str
    weights_sha256: str
    verified: bool | None  # None: not re-hashed (not ``deep``)


class ManifestCheck(TypedDict):
    manifest_id: str
    content_hash: str
    examples_sha256: str
    reward_count: int
    example_count: int
    split: dict[str, int]
    cut_from: int
    cut_to: int
    verified: bool  # the stored content still hashes to its content hash
    rebuilt: bool | None  # rebuilt from the events (``deep``), else None


class ArtifactCheck(TypedDict):
    sha256: str
    uri: str | None  # None: not shown to this reader (``api.visibility``)
    verified: bool
    note: str | None  # why it did not verify


class LineageLink(TypedDict):
    """One version of a chain, and what was checked of it."""

    adapter_id: str
    specialist: str
    version: int
    status: str
    parent_adapter_id: str | None
    training_run_id: str
    registered_at: str
    base_model: BaseModelCheck
    manifest: ManifestCheck
    contract_versions: list[Mapping[str, object]]  # ``ContractRef.to_json``
    hyper: Mapping[str, object]  # the run's hyper-parameters, as registered
    artifact: ArtifactCheck
    verified: bool


class Lineage:
    def __init__(self, registry: Registry, manifests: Manifests, artifacts: ArtifactStore) -> None:
        self.registry, self.manifests, self.artifacts = registry, manifests, artifacts

    def chain(self, adapter_id: str, deep: bool = False) -> list[LineageLink]:
        """The version itself first, then its parent, … down to the root."""
        links: list[LineageLink] = []
        seen: set[str] = set()
        current: str | None = adapter_id
        while current is not None and current not in seen:
            seen.add(current)
            links.append(self.link(current, deep))
            current = links[-1]["parent_adapter_id"]
        return links

    def link(self, adapter_id: str, deep: bool = False) -> LineageLink:
        adapter = self.registry.adapter(adapter_id)
        base = self.registry.base_model(adapter.base_model)
        row = self.manifests.row(adapter.manifest_id)
        manifest_ok = self.manifests.stored_hash_ok(adapter.manifest_id)
        rebuilt_ok: bool | None = None
        if deep:
            try:
                self.manifests.rebuild(adapter.manifest_id)
                rebuilt_ok = True
            except Conflict:
                rebuilt_ok = False
        artifact_ok, artifact_note = self._artifact_ok(adapter.artifact_sha256)
        base_ok = _base_ok(base.path, base.weights_sha256) if deep else None
        checks = [manifest_ok, artifact_ok, rebuilt_ok, base_ok]
        return {
            "adapter_id": adapter.adapter_id, "specialist": adapter.specialist,
            "version": adapter.version, "status": adapter.status,
            "parent_adapter_id": adapter.parent_adapter_id,
            "training_run_id": adapter.training_run_id,
            "registered_at": adapter.registered_at.isoformat(),
            "base_model": {"name": base.name, "weights_sha256": base.weights_sha256,
                           "verified": base_ok},
            "manifest": {"manifest_id": row.manifest_id, "content_hash": row.content_hash,
                         "examples_sha256": row.examples_sha256, "reward_count": len(row.reward_ids),
                         "example_count": row.example_count, "split": row.split,
                         "cut_from": row.cut_from, "cut_to": row.cut_to,
                         "verified": manifest_ok, "rebuilt": rebuilt_ok},
            "contract_versions": [c.to_json() for c in adapter.contract_versions],
            "hyper": adapter.hyper,
            "artifact": {"sha256": adapter.artifact_sha256, "uri": adapter.artifact_uri,
                         "verified": artifact_ok, "note": artifact_note},
            "verified": all(c is not False for c in checks),
        }

    def _artifact_ok(self, sha256: str) -> tuple[bool, str | None]:
        try:
            self.artifacts.open_dir(sha256)
        except ArtifactNotFound:
            return False, "missing from the artifact store"
        except ArtifactCorrupted as exc:
            return False, str(exc)
        return True, None


def _base_ok(path: str, expected: str) -> bool:
    try:
        return weights_sha256(path) == expected
    except FileNotFoundError:
        return False
