"""One adapter version: lineage graph, gate record, the rewards behind its data, its loss
curve, hashes, and (loaded after the page, it re-hashes files) the live audit result."""

from __future__ import annotations

from typing import Any

from console.views.charts import bar_chart, line_chart
from console.views.gate import gate_view
from console.views.lineage import DEFAULT_DEPTH, graph
from hcp.bootstrap import Container
from kernel.errors import NotFound

MAX_REWARDS = 20_000


def adapter_page(container: Container, adapter_id: str, depth: int = DEFAULT_DEPTH) -> dict[str, Any]:
    adapter = container.registry.adapter(adapter_id)
    metrics = adapter.metrics or {}
    manifest = container.manifests.row(adapter.manifest_id)
    # A manifest may list a great many rewards: the chart is over the first MAX_REWARDS.
    rewards = container.reward_stats.of_rewards(manifest.reward_ids[:MAX_REWARDS])
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
        "rewards_missing": rewards.missing,
        "reward_count": len(manifest.reward_ids), "reward_cap": MAX_REWARDS, "depth": depth,
        "hashes": hashes(container, adapter, manifest),
    }


def loss_chart(curve: list[list[float]]) -> dict[str, Any]:
    """The downsampled [step, loss] pairs the runner keeps."""
    return line_chart("training loss", [int(step) for step, _ in curve],
                      [{"label": "loss", "data": [loss for _, loss in curve]}], "step", "loss")


def reward_chart(histograms: dict[str, tuple[int, ...]]) -> dict[str, Any]:
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
        ("dataset manifest content", manifest.content_hash),
        ("training examples", manifest.examples_sha256),
        ("adapter artifact", adapter.artifact_sha256),
    ]
    rows += [(f"contract {c.name}@{c.version}", c.content_hash) for c in adapter.contract_versions]
    return rows


def audit_result(container: Container, adapter_id: str, deep: bool = False) -> dict[str, Any]:
    """The lineage chain re-verified now: artifacts re-hashed, manifests' stored content
    re-hashed; ``deep`` also rebuilds the examples from the log and re-hashes the base."""
    chain = container.lineage.chain(adapter_id, deep)
    return {"adapter_id": adapter_id, "deep": deep, "chain": chain,
            "verified": all(link["verified"] for link in chain)}


def _run(container: Container, run_id: str) -> Any:
    try:
        return container.runs.get(run_id)
    except NotFound:
        return None
