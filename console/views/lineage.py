"""An adapter version's lineage as a graph: ancestors, children, runs, dataset manifests,
contract versions and the base model, as nodes and edges Cytoscape.js draws.

Ancestors are walked parent by parent, the nearest ``depth`` of them (the page asks for
more); children come from the registry. Every node carries the hashes a reader checks
and, where one exists, the console page it links to.
"""

from __future__ import annotations

from typing import Any

from hcp.bootstrap import Container
from kernel.errors import NotFound
from trainer.registry.model import AdapterVersion

DEFAULT_DEPTH, MAX_DEPTH = 8, 200


def ancestry(container: Container, adapter: AdapterVersion,
             depth: int = DEFAULT_DEPTH) -> tuple[list[AdapterVersion], bool]:
    """The version itself, then its parent, … up to ``depth`` ancestors (oldest last);
    True when the chain goes on beyond them."""
    chain = [adapter]
    seen = {adapter.adapter_id}
    while chain[-1].parent_adapter_id and len(chain) <= depth:
        parent_id = chain[-1].parent_adapter_id
        if parent_id in seen:
            break
        seen.add(parent_id)
        chain.append(container.registry.adapter(parent_id))
    return chain, bool(chain[-1].parent_adapter_id) and len(chain) > depth


# Rows of the drawing, top to bottom; generations run left (oldest) to right.
ROW = {"contract": 0, "manifest": 85, "run": 170, "adapter": 255, "base": 345}
COLUMN = 260


def graph(container: Container, adapter: AdapterVersion, depth: int = DEFAULT_DEPTH) -> dict[str, Any]:
    """{"nodes", "edges", "ancestors", "children", "truncated"} in Cytoscape's element form,
    each node with a position (oldest generation on the left)."""
    chain, truncated = ancestry(container, adapter, depth)
    children = [container.registry.adapter(i) for i in container.registry.children(adapter.adapter_id)]
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    generations = [(len(chain) - 1 - i, v) for i, v in enumerate(chain)]
    generations += [(len(chain), child) for child in children]
    for column, version in generations:
        focus = "focus" if version.adapter_id == adapter.adapter_id else ""
        _node(nodes, version.adapter_id, version.adapter_id, "adapter",
              f"/console/adapters/{version.adapter_id}", {"status": version.status,
                                                          "artifact_sha256": version.artifact_sha256},
              column, focus)
        if version.parent_adapter_id:
            _edge(edges, version.parent_adapter_id, version.adapter_id, "parent of")
    for column, version in generations[:len(chain)]:
        _provenance(container, version, column, nodes, edges)
    _place_shared(nodes, edges)
    # A chain cut at the limit has a parent edge into a node that is not drawn.
    edges = [e for e in edges if e["data"]["source"] in nodes and e["data"]["target"] in nodes]
    return {"nodes": list(nodes.values()), "edges": edges,
            "ancestors": [v.adapter_id for v in chain[1:]],
            "children": [v.adapter_id for v in children], "truncated": truncated}


def _provenance(container: Container, version: AdapterVersion, column: int,
                nodes: dict[str, dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    """Base model, training run, manifest and contract versions behind one version."""
    run_id, manifest_id = f"run:{version.training_run_id}", f"manifest:{version.manifest_id}"
    base_id = f"base:{version.base_model}"
    if base_id not in nodes:
        try:
            base = container.registry.base_model(version.base_model)
            _node(nodes, base_id, f"base {base.name}", "base", None,
                  {"weights_sha256": base.weights_sha256}, column)
        except NotFound:
            _node(nodes, base_id, f"base {version.base_model}", "base", None, {"missing": True},
                  column)
    manifest = _manifest(container, version.manifest_id)
    _node(nodes, run_id, f"run {version.training_run_id[:8]}", "run", None,
          {"run_id": version.training_run_id, "hyper": version.hyper}, column)
    _node(nodes, manifest_id, f"data {manifest.get('example_count', '?')} ex.", "manifest", None,
          manifest, column)
    _edge(edges, base_id, version.adapter_id, "base of")
    _edge(edges, manifest_id, run_id, "trained on")
    _edge(edges, run_id, version.adapter_id, "produced")
    for ref in version.contract_versions:
        contract_id = f"contract:{ref.name}@{ref.version}"
        _node(nodes, contract_id, f"{ref.name}@{ref.version}", "contract",
              f"/console/contracts/{ref.name}/{ref.version}", {"content_hash": ref.content_hash},
              column)
        _edge(edges, contract_id, manifest_id, "scored")


def _place_shared(nodes: dict[str, dict[str, Any]], edges: list[dict[str, Any]]) -> None:
    """Contract versions and base models serve several generations: centre each over the
    nodes it feeds, and spread contracts that would land on the same spot."""
    taken: set[tuple[float, float]] = set()
    for node in nodes.values():
        kind = node["data"]["kind"]
        if kind not in ("contract", "base"):
            continue
        fed = [nodes[e["data"]["target"]]["position"]["x"] for e in edges
               if e["data"]["source"] == node["data"]["id"] and e["data"]["target"] in nodes]
        x = sum(fed) / len(fed) if fed else node["position"]["x"]
        while (x, ROW[kind]) in taken:
            x += COLUMN / 2
        taken.add((x, ROW[kind]))
        node["position"] = {"x": x, "y": ROW[kind]}


def _manifest(container: Container, manifest_id: str) -> dict[str, Any]:
    try:
        row = container.manifests.row(manifest_id)
    except NotFound:
        return {"manifest_id": manifest_id, "missing": True}
    return {"manifest_id": manifest_id, "content_hash": row.content_hash,
            "examples_sha256": row.examples_sha256, "example_count": row.example_count,
            "reward_count": len(row.reward_ids), "cut_from": row.cut_from, "cut_to": row.cut_to}


def _node(nodes: dict[str, dict[str, Any]], node_id: str, label: str, kind: str, href: str | None,
          details: dict[str, Any], column: int, classes: str = "") -> None:
    if node_id not in nodes:
        nodes[node_id] = {"data": {"id": node_id, "label": label, "kind": kind, "href": href,
                                   "details": details}, "classes": f"{kind} {classes}".strip(),
                          "position": {"x": column * COLUMN, "y": ROW[kind]}}


def _edge(edges: list[dict[str, Any]], source: str, target: str, label: str) -> None:
    edge_id = f"{source}->{target}"
    if all(e["data"]["id"] != edge_id for e in edges):
        edges.append({"data": {"id": edge_id, "source": source, "target": target, "label": label}})
