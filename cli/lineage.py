"""`hcp lineage …`: upstream of an adapter version, downstream of experience, the state as
of a time, dataset manifests, and exports (PROV-JSON, OpenLineage). A tree by default,
``--json`` for machines."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from cli.common import cli_container
from cli.lineage_export import register_exports
from cli.output import JsonOpt, command_group, console, print_table, progress_console, table
from cli.times import at_option, time_param

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.tree import Tree

    from audit.views import AsOfOut, DownstreamOut, ManifestOut, RecordsPage, UpstreamOut, VersionLineage

app = command_group("Lineage: upstream, downstream, as-of, manifests, exports")
SPLITS = ("train", "held_out")


def _emit(model: BaseModel) -> None:
    typer.echo(model.model_dump_json(indent=2))


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "-"


@app.command("adapter")
def adapter(
    adapter_id: str,
    records: bool = typer.Option(False, "--records", help="The reward records and events it used"),
    split: str = typer.Option(None, help="With --records: train or held_out"),
    after: int = typer.Option(0, help="With --records: start after this reward position"),
    limit: int = typer.Option(100, help="With --records: records per page"),
    all_pages: bool = typer.Option(False, "--all", help="With --records: every page, JSON lines"),
    output: str = typer.Option("tree", "--format", help="tree, json or prov-json"),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json"),
) -> None:
    """Upstream of ADAPTER_ID: every ancestor with run, trigger, manifest, contracts, base, gate."""
    if split is not None and split not in SPLITS:
        raise typer.BadParameter(f"split must be one of {SPLITS}", param_hint="--split")
    if output not in ("tree", "json", "prov-json"):
        raise typer.BadParameter("format must be tree, json or prov-json", param_hint="--format")
    with cli_container() as parts:
        if records:
            _records(parts.upstream, adapter_id, split, after, limit, all_pages, as_json or output != "tree")
            return
        upstream = parts.upstream.of(adapter_id)
    if output == "prov-json":
        from audit.exports.prov import prov_document

        typer.echo(prov_document(upstream).serialize(format="json", indent=2))
    elif as_json or output == "json":
        _emit(upstream)
    else:
        console().print(_upstream_tree(upstream))


def _records(upstream: Any, adapter_id: str, split: str | None, after: int, limit: int,
             all_pages: bool, as_json: bool) -> None:
    if not all_pages:
        page: RecordsPage = upstream.records(adapter_id, after, limit, split)
        if as_json:
            _emit(page)
            return
        shown = table("position", "reward", "subject", "split", "score", "contract", "events",
                      title=f"{adapter_id}: manifest {page.manifest_id} ({page.total} records)")
        for r in page.records:
            shown.add_row(str(r.member.reward_position), r.member.reward_id, r.member.subject_id,
                          r.member.split, str(r.reward["score"]),
                          f"{r.reward['contract']['name']}@{r.reward['contract']['version']}",
                          str(len(r.events)))
        print_table(shown)
        if page.next_after is not None:
            typer.echo(f"next page: --after {page.next_after}")
        return
    from rich.progress import Progress

    first = upstream.records(adapter_id, after, limit, split)
    with Progress(console=progress_console()) as progress:
        task = progress.add_task("records", total=first.total)
        page = first
        while True:
            for record in page.records:
                typer.echo(record.model_dump_json())
            progress.advance(task, len(page.records))
            if page.next_after is None:
                break
            page = upstream.records(adapter_id, page.next_after, limit, split)


def _upstream_tree(upstream: UpstreamOut) -> Tree:
    from rich.tree import Tree

    tree = Tree(f"[bold]{upstream.adapter_id}[/bold]: {len(upstream.versions)} versions "
                f"back to {upstream.root_id}")
    for v in upstream.versions:
        tree.add(_version_branch(v))
    return tree


def _version_branch(v: VersionLineage) -> Tree:
    from rich.tree import Tree

    node = Tree(f"[bold]{v.adapter_id}[/bold] {v.status} · artifact {_short(v.artifact.sha256)} · "
                f"parent {v.parent_adapter_id or 'none (root)'}")
    if v.run:
        node.add(f"run {v.run.run_id} {v.run.status} by {v.run.created_by}, "
                 f"{v.run.attempts} attempt(s), finished {v.run.finished_at or '-'}")
    if v.trigger:
        node.add(f"trigger {v.trigger.policy} by {v.trigger.fired_by}: {v.trigger.reason} "
                 f"(cut {v.trigger.dataset_cut})")
    if v.manifest:
        m = v.manifest
        node.add(f"manifest {m.manifest_id} hash {_short(m.content_hash)}: {m.reward_count} rewards "
                 f"(train {m.split.get('train', 0)}, held out {m.split.get('held_out', 0)}), "
                 f"positions ({m.cut_from}, {m.cut_to}]")
    node.add("contracts " + (", ".join(f"{c.name}@{c.version} {_short(c.content_hash)}"
                                       for c in v.contract_versions) or "-"))
    if v.base_model:
        node.add(f"base {v.base_model.name} weights {_short(v.base_model.weights_sha256)} "
                 f"at {v.base_model.path}")
    if v.gate:
        node.add("gate " + json.dumps({k: v.gate[k] for k in sorted(v.gate)
                                       if k in ("promote", "metric", "reason", "margin")}))
    return node


@app.command("manifest")
def manifest(
    manifest_id: str,
    members: bool = typer.Option(False, "--members", help="List its members (paged)"),
    split: str = typer.Option(None, help="With --members: train or held_out"),
    after: int = typer.Option(0), limit: int = typer.Option(100),
    as_json: bool = JsonOpt,
) -> None:
    """A frozen dataset manifest: hashes, counts, contract versions, versions trained on it."""
    from rich.tree import Tree

    with cli_container() as parts:
        if members:
            page = parts.upstream.members(manifest_id, after, limit, split)
            if as_json:
                _emit(page)
                return
            shown = table("position", "reward", "subject", "stream", "split")
            for m in page.members:
                shown.add_row(str(m.reward_position), m.reward_id, m.subject_id, m.stream_id, m.split)
            print_table(shown)
            if page.next_after is not None:
                typer.echo(f"next page: --after {page.next_after}")
            return
        found: ManifestOut = parts.upstream.manifest(manifest_id)
    if as_json:
        _emit(found)
        return
    tree = Tree(f"[bold]manifest {found.manifest_id}[/bold] ({found.specialist}) "
                f"{'verified' if found.verified else '[red]HASH MISMATCH[/red]'}")
    tree.add(f"content hash {found.content_hash}; examples {found.examples_sha256}")
    tree.add(f"{found.reward_count} rewards: {found.split}; positions ({found.cut_from}, {found.cut_to}]")
    tree.add("contracts " + ", ".join(f"{c.name}@{c.version}" for c in found.contract_versions))
    tree.add("trained " + (", ".join(found.adapters) or "nothing yet"))
    console().print(tree)


@app.command("downstream")
def downstream(
    event: str = typer.Option(None, "--event", help="An event id"),
    stream: str = typer.Option(None, "--stream", help="A session (stream id)"),
    tenant: str = typer.Option(None, "--tenant", help="Every session of a tenant"),
    contract: str = typer.Option(None, "--contract", help="A contract version, name@version"),
    alias: str = typer.Option(None, help="Only windows of this alias (e.g. production)"),
    limit: int = typer.Option(100, help="Most reward records listed"),
    as_json: bool = JsonOpt,
) -> None:
    """What experience reached: rewards, manifests, adapter versions, and when they served."""
    given = [name for name, value in (("--event", event), ("--stream", stream),
                                      ("--tenant", tenant), ("--contract", contract)) if value]
    if len(given) != 1:
        raise typer.BadParameter("give exactly one of --event, --stream, --tenant, --contract")
    with cli_container() as parts:
        lineage = parts.downstream
        if event:
            found = lineage.of_event(event, alias, limit)
        elif stream:
            found = lineage.of_stream(stream, alias, limit)
        elif tenant:
            found = lineage.of_tenant(tenant, alias, limit)
        else:
            name, _, version = contract.partition("@")
            if not version.isdigit():
                raise typer.BadParameter("must be name@version", param_hint="--contract")
            found = lineage.of_contract_version(name, int(version), alias, limit)
    if as_json:
        _emit(found)
    else:
        console().print(_downstream_tree(found))


def _downstream_tree(found: DownstreamOut) -> Tree:
    from rich.tree import Tree

    tree = Tree(f"[bold]{found.source.kind} {found.source.id}[/bold]")
    rewards = tree.add(f"{found.rewards.count} reward record(s)")
    for r in found.rewards.items[:20]:
        rewards.add(f"{r.position} {r.reward_id} {r.subject_id} {r.contract} score {r.score} {r.split}")
    manifests = tree.add(f"{len(found.manifests)} manifest(s)")
    for m in found.manifests:
        manifests.add(f"{m.manifest_id} ({m.specialist}) {m.members} member(s) → "
                      f"{', '.join(m.adapters) or 'not trained yet'}")
    adapters = tree.add(f"{len(found.adapters)} adapter version(s)")
    for a in found.adapters:
        how = "trained on it" if a.generations == 0 else f"descendant, {a.generations} generation(s) on"
        adapters.add(f"{a.adapter_id} {a.status} ({how})")
    windows = tree.add(f"{len(found.windows)} alias window(s)")
    for w in found.windows:
        windows.add(f"{w.specialist}/{w.alias} → {w.adapter_id} from {w.since} until {w.until or 'now'}")
    return tree


@app.command("as-of")
def as_of(moment: datetime = typer.Argument(None, metavar="[TIME]", parser=time_param,
                                            help="The same forms as --at"),
          at: datetime = at_option("The moment (or give it as TIME)"),
          as_json: bool = JsonOpt) -> None:
    """Every alias's target and the active contract versions at TIME (default now)."""
    from kernel.clock import utcnow

    if moment is not None and at is not None:
        raise typer.BadParameter("give the time once: TIME or --at", param_hint="--at")
    with cli_container() as parts:
        found: AsOfOut = parts.as_of.at(moment or at or utcnow())
    if as_json:
        _emit(found)
        return
    shown = table("specialist", "alias", "adapter", "since", "by", title=f"as of {found.at.isoformat()}")
    for a in found.aliases:
        shown.add_row(a.specialist, a.alias, a.adapter_id, a.moved_at.isoformat(), a.moved_by)
    print_table(shown)
    contracts = table("contract", "version", "content hash", "published")
    for c in found.contracts:
        contracts.add_row(c.name, str(c.version), c.content_hash, c.published_at.isoformat())
    print_table(contracts)


register_exports(app)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="lineage")
