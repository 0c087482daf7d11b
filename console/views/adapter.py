"""One adapter version: lineage graph, gate record, the rewards behind its data, its loss
curve, hashes, and (loaded after the page, it re-hashes files) the live audit result."""

from __future__ import annotations

from typing import Any

from console.views.charts import Chart, bar_chart, line_chart
from console.views.gate import gate_view
from console.views.lineage import DEFAULT_DEPTH, graph
from console.views.members import MemberFilter, members, selected_examples, selection
from hcp.bootstrap import Container
from kernel.errors import NotFound


def adapter_page(container: Container, adapter_id: str, depth: int = DEFAULT_DEPTH,
                 with_records: bool = False) -> dict[str, Any]:
    adapter = container.registry.adapter(adapter_id)
    metrics = adapter.metrics or {}
    manifest = container.manifest_index.summaries([adapter.manifest_id]).get(adapter.manifest_id)
    # The manifest's members (the lineage index), aggregated in one statement.
    rewards = container.reward_stats.of_positions(
        container.manifest_index.member_positions(adapter.manifest_id))
    pointing = [alias for alias, move in container.aliases.current(adapter.specialist).items()
                if move.adapter_id == adapter_id]
    return {
        "adapter": adapter,
        "aliases_here": pointing,
        "run": _run(container, adapter.training_run_id),
        "graph": graph(container, adapter_id, depth),
        "gate": gate_view(metrics.get("gate")),
        "training": metrics.get("training") or {},
        "loss_chart": loss_chart(metrics.get("loss_curve") or []),
        "reward_chart": reward_chart(rewards.histograms),
        "reward_means": rewards.means,
        "reward_count": manifest.reward_count if manifest else rewards.scored,
        "rewards_scored": rewards.scored, "depth": depth,
        "hashes": hashes(container, adapter, manifest),
        "records": records(container, adapter_id, MemberFilter(), adapter=adapter) if with_records else None,
    }


def records(container: Container, adapter_id: str, where: MemberFilter, after: int = 0,
            start: int = 0, adapter: Any = None) -> dict[str, Any]:
    """The manifest's members (a page) and the examples the run selected (a page)."""
    adapter = adapter or container.registry.adapter(adapter_id)
    manifest_id, chosen = adapter.manifest_id, selected_examples(container, adapter.training_run_id)
    return {"adapter": adapter, "members": members(container, manifest_id, chosen, where, after),
            "selection": selection(container, manifest_id, chosen, start),
            "examples_used": (adapter.metrics or {}).get("training", {}).get("examples_used")}


def loss_chart(curve: list[list[float]]) -> Chart:
    """The downsampled [step, loss] pairs the runner keeps."""
    return line_chart("training loss", [int(step) for step, _ in curve],
                      [{"label": "loss", "data": [loss for _, loss in curve]}], "step", "loss")


def reward_chart(histograms: dict[str, tuple[int, ...]]) -> Chart:
    """The score histogram of the manifest's rewards, one stacked series per split."""
    return bar_chart("rewards behind this version's data",
                     [{"label": split, "data": list(counts)} for split, counts in histograms.items()],
                     stacked=True)


def hashes(container: Container, adapter: Any, manifest: Any) -> list[tuple[str, str | None]]:
    """What an auditor compares, in the order lineage is built."""
    try:
        base = container.registry.base_model(adapter.base_model).weights_sha256
    except NotFound:
        base = None
    rows: list[tuple[str, str | None]] = [
        ("base model weights", base),
        ("dataset manifest content", manifest.content_hash if manifest else None),
        ("training examples", manifest.examples_sha256 if manifest else None),
        ("adapter artifact", adapter.artifact_sha256),
    ]
    rows += [(f"contract {c.name}@{c.version}", c.content_hash) for c in adapter.contract_versions]
    return rows


def audit_result(container: Container, adapter_id: str, chain: bool = False,
                 deep: bool = False) -> dict[str, Any]:
    """The version (``chain``: and every ancestor) re-verified now: artifacts re-hashed,
    manifests' stored content re-hashed; ``deep`` also rebuilds the examples from the log
    and re-hashes the base weights. Re-hashing reads every manifest's id lists, so the
    whole chain is a button, not the default."""
    links = (container.lineage.chain(adapter_id, deep) if chain
             else [container.lineage.link(adapter_id, deep)])
    return {"adapter_id": adapter_id, "deep": deep, "whole_chain": chain, "chain": links,
            "verified": all(link["verified"] for link in links)}


def _run(container: Container, run_id: str) -> Any:
    try:
        return container.runs.get(run_id)
    except NotFound:
        return None
