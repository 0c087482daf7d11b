"""An adapter version's ancestry as a W3C PROV document (the ``prov`` package).

Entities: adapter versions, dataset manifests, contract versions, base models. Activities:
training runs (which used a manifest, a base and the parent version, and generated the
successor) and trigger firings (which froze the manifest). Agents: whoever fired,
started and registered. Every version ``wasDerivedFrom`` its parent (a ``prov:Revision``)
and from its manifest, through its run; identifiers are URNs that name the server's ids,
percent-encoded so they stay valid qualified names (``coding@2`` → ``coding%402``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from prov.constants import PROV
from prov.model import Namespace, ProvDocument

from audit.views import UpstreamOut, VersionLineage

HCP = Namespace("hcp", "urn:hcp:ns#")
NAMESPACES = {
    "hcp": HCP.uri, "adapter": "urn:hcp:adapter:", "run": "urn:hcp:training-run:",
    "manifest": "urn:hcp:manifest:", "contract": "urn:hcp:contract:",
    "base": "urn:hcp:base-model:", "trigger": "urn:hcp:trigger-firing:", "actor": "urn:hcp:actor:",
}


def qualified(prefix: str, local: str) -> str:
    return f"{prefix}:{quote(local, safe='-._~')}"


def prov_document(upstream: UpstreamOut) -> ProvDocument:
    """The PROV document of ``upstream`` (a version and its ancestors)."""
    document = ProvDocument()
    for prefix, uri in NAMESPACES.items():
        document.add_namespace(prefix, uri)
    added: set[str] = set()
    for version in upstream.versions:
        _version(document, version, added)
    return document


def _once(added: set[str], identifier: str) -> bool:
    if identifier in added:
        return False
    added.add(identifier)
    return True


def _version(doc: ProvDocument, v: VersionLineage, added: set[str]) -> None:
    adapter = qualified("adapter", v.adapter_id)
    doc.entity(adapter, {"prov:type": HCP["AdapterVersion"], "hcp:specialist": v.specialist,
                         "hcp:version": v.version, "hcp:status": v.status,
                         "hcp:artifact_sha256": v.artifact.sha256, "hcp:artifact_uri": v.artifact.uri})
    doc.wasAttributedTo(adapter, _agent(doc, v.registered_by, added))
    run = qualified("run", v.run.run_id) if v.run else None
    if v.run and run:
        doc.activity(run, v.run.started_at or v.run.created_at, v.run.finished_at, {
            "prov:type": HCP["TrainingRun"], "hcp:status": v.run.status, "hcp:attempts": v.run.attempts})
        doc.wasGeneratedBy(adapter, run, v.registered_at)
        doc.wasAssociatedWith(run, _agent(doc, v.run.created_by, added))
    if v.parent_adapter_id:
        parent = qualified("adapter", v.parent_adapter_id)
        if run:
            doc.used(run, parent)
        doc.wasDerivedFrom(adapter, parent, run, other_attributes={"prov:type": PROV["Revision"]})
    if v.manifest:
        manifest = _manifest(doc, v, added)
        if run:
            doc.used(run, manifest)
        doc.wasDerivedFrom(adapter, manifest, run)
    if v.base_model:
        base = qualified("base", v.base_model.name)
        if _once(added, base):
            doc.entity(base, {"prov:type": HCP["BaseModel"], "hcp:weights_sha256":
                              v.base_model.weights_sha256, "hcp:path": v.base_model.path})
        if run:
            doc.used(run, base)


def _manifest(doc: ProvDocument, v: VersionLineage, added: set[str]) -> str:
    assert v.manifest is not None
    m = v.manifest
    manifest = qualified("manifest", m.manifest_id)
    if not _once(added, manifest):
        return manifest
    doc.entity(manifest, {"prov:type": HCP["DatasetManifest"], "hcp:content_hash": m.content_hash,
                          "hcp:examples_sha256": m.examples_sha256, "hcp:reward_count": m.reward_count,
                          "hcp:train": m.split.get("train", 0), "hcp:held_out": m.split.get("held_out", 0),
                          "hcp:cut_from": m.cut_from, "hcp:cut_to": m.cut_to})
    for c in m.contract_versions:
        contract = qualified("contract", f"{c.name}@{c.version}")
        if _once(added, contract):
            attributes: dict[str, Any] = {"prov:type": HCP["ContractVersion"]}
            if c.content_hash:
                attributes["hcp:content_hash"] = c.content_hash
            doc.entity(contract, attributes)
        doc.wasInfluencedBy(manifest, contract)
    if v.trigger:
        firing = qualified("trigger", v.trigger.firing_id)
        doc.activity(firing, v.trigger.fired_at, v.trigger.fired_at, {
            "prov:type": HCP["ManifestFreezing"], "hcp:policy": v.trigger.policy,
            "hcp:reason": v.trigger.reason, "hcp:dataset_cut": v.trigger.dataset_cut})
        doc.wasGeneratedBy(manifest, firing, v.trigger.fired_at)
        doc.wasAssociatedWith(firing, _agent(doc, v.trigger.fired_by, added))
    return manifest


# How an actor is named says what it is: a person at the command line, the console or the
# demo; the server's own processes (workers, the gate, migrations); an API key, which a
# person or a program may hold (an agent, not typed further).
PEOPLE = ("cli:", "user:", "console:")
SOFTWARE = ("system:", "in-process:", "gate:", "worker:", "celery:", "migration:", "script", "bench")


def agent_type(actor: str) -> Any:
    if actor.startswith(PEOPLE):
        return PROV["Person"]
    if actor.startswith(SOFTWARE):
        return PROV["SoftwareAgent"]
    return None


def _agent(doc: ProvDocument, actor: str, added: set[str]) -> str:
    agent = qualified("actor", actor)
    if _once(added, agent):
        kind = agent_type(actor)
        doc.agent(agent, {"hcp:actor": actor, **({"prov:type": kind} if kind is not None else {})})
    return agent
