"""An adapter version's lineage as a graph: ancestors, children, runs, dataset manifests,
contract versions and the base model, as nodes and edges Cytoscape.js draws.

The facts come from the lineage queries (``container.upstream``: the whole chain in a few
batched reads; ``container.ancestry``: the children), and the nearest ``depth`` ancestors
are drawn (the page asks for more). Every node carries the hashes a reader checks and,
where one exists, the console page it links to; the server places the nodes, oldest
generation on the left, one row per kind.
"""

from __future__ import annotations

from typing import Any

from hcp.bootstrap import Container

DEFAULT_DEPTH, MAX_DEPTH = 8, 200
# 100 px between rows: a node's label hangs about 33 px below its centre and an edge's
# label (level, 11 px type) sits at the edge's middle, so each has a row of its own.
ROW = {"contract": 0, "manifest": 100, "run": 200, "adapter": 300, "base": 400}
COLUMN = 260

Nodes = dict[str, dict[str, Any]]
Edges = dict[str, dict[str, Any]]  # by edge id


def graph(container: Container, adapter_id: str, depth: int = DEFAULT_DEPTH) -> dict[str, Any]:
    """{"nodes", "edges", "ancestors", "children", "truncated"} in Cytoscape's element form."""
    chain = container.upstream.of(adapter_id).versions  # the version first, its root last
    drawn, truncated = chain[:depth + 1], len(chain) > depth + 1
    children = _children(container, adapter_id)
    nodes: Nodes = {}
    edges: Edges = {}
    for version in drawn:
        column = len(drawn) - 1 - version.depth
        _node(nodes, version.adapter_id, version.adapter_id, "adapter",
              f"/console/adapters/{version.adapter_id}",
              {"status": version.status, "artifact_sha256": version.artifact.sha256}, column,
              "focus" if version.depth == 0 else "")
        if version.parent_adapter_id:
            _edge(edges, version.parent_adapter_id, version.adapter_id, "parent of")
        _provenance(version, column, nodes, edges)
    for child_id, status in children.items():
        _node(nodes, child_id, child_id, "adapter", f"/console/adapters/{child_id}",
              {"status": status}, len(drawn))
        _edge(edges, adapter_id, child_id, "parent of")
    _place_shared(nodes, edges)
    # A chain cut at ``depth`` has a parent edge into a node that is not drawn.
    drawn_edges = [e for e in edges.values()
                   if e["data"]["source"] in nodes and e["data"]["target"] in nodes]
    return {"nodes": list(nodes.values()), "edges": drawn_edges,
            "ancestors": [v.adapter_id for v in chain[1:]], "children": list(children),
            "truncated": truncated}


def _children(container: Container, adapter_id: str) -> dict[str, str]:
    """The versions trained from this one (one generation down), with their status."""
    below = container.ancestry.descendants([adapter_id])
    ids = sorted((i for i, generations in below.items() if generations == 1),
                 key=lambda i: (len(i), i))
    briefs = container.ancestry.briefs(ids)
    return {i: briefs[i].status for i in ids if i in briefs}


def _provenance(version: Any, column: int, nodes: Nodes, edges: Edges) -> None:
    """Base model, training run, manifest and contract versions behind one version."""
    if version.base_model is not None:
        base_id = f"base:{version.base_model.name}"
        _node(nodes, base_id, f"base {version.base_model.name}", "base", None,
              {"weights_sha256": version.base_model.weights_sha256, "path": version.base_model.path},
              column)
        _edge(edges, base_id, version.adapter_id, "base of")
    if version.run is None or version.manifest is None:
        return
    run_id, manifest_id = f"run:{version.run.run_id}", f"manifest:{version.manifest.manifest_id}"
    trigger = version.trigger
    _node(nodes, run_id, f"run {version.run.run_id[:8]}", "run", None, {
        "run_id": version.run.run_id, "status": version.run.status, "hyper": version.run.hyper,
        "trigger": f"{trigger.policy}: {trigger.reason}" if trigger else None}, column)
    manifest = version.manifest
    _node(nodes, manifest_id, f"data {manifest.reward_count} ex.", "manifest", None, {
        "manifest_id": manifest.manifest_id, "content_hash": manifest.content_hash,
        "examples_sha256": manifest.examples_sha256, "split": manifest.split,
        "cut": f"({manifest.cut_from}, {manifest.cut_to}]"}, column)
    _edge(edges, manifest_id, run_id, "trained on")
    _edge(edges, run_id, version.adapter_id, "produced")
    for ref in version.contract_versions:
        contract_id = f"contract:{ref.name}@{ref.version}"
        _node(nodes, contract_id, f"{ref.name}@{ref.version}", "contract",
              f"/console/contracts/{ref.name}/{ref.version}", {"content_hash": ref.content_hash},
              column)
        _edge(edges, contract_id, manifest_id, "scored")


def _place_shared(nodes: Nodes, edges: Edges) -> None:
    """Contract versions and base models serve several generations: centre each over the
    nodes it feeds, and spread contracts that would land on the same spot."""
    taken: set[tuple[float, float]] = set()
    for node in nodes.values():
        kind = node["data"]["kind"]
        if kind not in ("contract", "base"):
            continue
        fed = [nodes[e["data"]["target"]]["position"]["x"] for e in edges.values()
               if e["data"]["source"] == node["data"]["id"] and e["data"]["target"] in nodes]
        x = sum(fed) / len(fed) if fed else node["position"]["x"]
        while (x, ROW[kind]) in taken:
            x += COLUMN / 2
        taken.add((x, ROW[kind]))
        node["position"] = {"x": x, "y": ROW[kind]}


def _node(nodes: Nodes, node_id: str, label: str, kind: str, href: str | None,
          details: dict[str, Any], column: int, classes: str = "") -> None:
    if node_id not in nodes:
        nodes[node_id] = {"data": {"id": node_id, "label": label, "kind": kind, "href": href,
                                   "details": details}, "classes": f"{kind} {classes}".strip(),
                          "position": {"x": column * COLUMN, "y": ROW[kind]}}


def _edge(edges: Edges, source: str, target: str, label: str) -> None:
    edge_id = f"{source}->{target}"
    edges.setdefault(edge_id, {"data": {"id": edge_id, "source": source, "target": target,
                                        "label": label}})
