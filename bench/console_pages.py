"""Console page latency: every page, p50 and p95, on a database you give or one built here.

(Named console_pages.py: a script named console.py would shadow the console package.)

The goal (issue 12) is every page under 300 ms on the lineage benchmark's database (>= 1M
events). Give that database with ``--database-url``; without one, a SQLite database is
built under ``--data-dir`` from synthetic harness traffic, scored under the example
contract, with ``--generations`` successive adapters of ``coding`` (artifacts made up, no
torch). One admin key is written to a given database (labelled ``bench-console-…``): a
console session is checked against its key's row on every request, as in service.

Requests go through the whole app in-process (``TestClient``: routing, dependencies,
queries, templates), so the figures are server time without a network. Each page's
figure comes with its ratio to a floor measured in the same run, request by request: the
sign-in form (routing, the session's key check, a template; no query of the data), the
median of the per-request ratios.

The lineage database has no harness sessions (its sessions are bare turns): give
``--add-sessions N`` to ingest N synthetic harness sessions (started, routed to the
deepest versions, ended) into it first, so the session filters have something to find.
Downloads (proofs, PROV, OpenLineage) are measured beside the pages; an inclusion proof
needs a signed checkpoint in the database (bench/lineage.py signs one).

    .venv/bin/python bench/console_pages.py --sessions 2000 --generations 30
    .venv/bin/python bench/console_pages.py --database-url postgresql+psycopg://hcp:hcp@127.0.0.1/bench
    .venv/bin/python bench/console_pages.py --database-url …/hcp_bench_lineage --add-sessions 20000 \
        --data-dir /tmp/hcp-bench-lineage
    .venv/bin/python bench/console_pages.py --build --sessions 60000 --database-url postgresql+psycopg://…/empty
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi.testclient import TestClient

from api.app import create_app
from console.session import COOKIE, SessionCodec
from contract.vocabulary import SESSION_STARTED
from events.ingest import Author, IngestLimits, ingest
from harness.synthetic import synthetic_sessions
from hcp import migrate
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.clock import utcnow
from kernel.db import make_engine
from trainer.registry.model import NewAdapter

ACTOR = "user:bench"
FLOOR = "/console/sign-in"
EXAMPLE = Path(__file__).parents[1] / "examples" / "contracts" / "default.toml"


def build(container: Container, sessions: int, generations: int, base_dir: Path) -> None:
    """Traffic in rounds (each scored), the contract reweighted once, and a chain of
    ``generations`` coding adapters, each trained (in name) on the rewards before it."""
    from trainer.ml.tiny_model import build_tiny_base_model

    container.registry.register_base_model(
        "hcp-tiny", build_tiny_base_model(container.settings.resolved_models_dir / "hcp-tiny", seed=0), ACTOR)
    contracts = container.contracts
    contracts.create_draft("default", EXAMPLE.read_text(), ACTOR)
    contracts.publish("default", 1, ACTOR)
    limits = IngestLimits(500, 262_144)
    rounds = max(1, generations)
    parent: str | None = None
    for number in range(rounds):
        adapters = {"coding": parent} if parent else {}
        batch: list[Any] = []
        for session in synthetic_sessions(max(1, sessions // rounds), number, adapters):
            if len(batch) + len(session) > limits.max_batch_events:
                ingest(container.store, batch, limits, Author(ACTOR))
                batch = []
            batch += session
        if batch:
            ingest(container.store, batch, limits, Author(ACTOR))
        container.evaluator(group="bench").drain(timeout=3600)
        if number == rounds // 2:
            draft = contracts.draft_from("default", 1, ACTOR)
            contracts.edit_draft("default", draft.version, draft.document.replace(
                'id = "brevity"\nweight = 1.0', 'id = "brevity"\nweight = 3.0'), ACTOR)
            contracts.publish("default", draft.version, ACTOR)
        if number < generations:
            parent = register(container, parent or "root", number, base_dir)
        print(f"  round {number + 1}/{rounds}: log head {container.store.head()}, "
              f"rewards {container.rewards.head()}", flush=True)


def register(container: Container, parent: str, number: int, tmp: Path) -> str:
    """Fire a coding run from ``parent`` and register a made-up artifact for it."""
    firing = container.triggers.fire_manual("coding", ACTOR, "bench", parent=parent)
    run = container.runs.claim(firing.run_id, "bench", 600, 3).run
    out = tmp / f"adapter-{number}"
    out.mkdir(parents=True)
    (out / "adapter_model.safetensors").write_bytes(f"bench adapter {number}".encode())
    ref = container.artifacts.put_dir(out)
    manifest = container.manifests.rebuild(run.manifest_id)
    gate = {"promote": True, "reason": "bench", "metric": "offline",
            "comparison": {"heldout_margin": {"successor": 0.1 * number, "parent": 0.0,
                                              "delta": 0.1 * number, "required": 0.0, "ok": True}}}
    new = NewAdapter(
        specialist="coding", parent_adapter_id=run.parent_adapter_id, base_model=run.base_model,
        training_run_id=run.run_id, manifest_id=run.manifest_id, hyper=run.hyper,
        contract_versions=tuple((c["name"], c["version"]) for c in manifest.contract_versions),
        metrics={"gate": gate, "loss_curve": [[i, 2.0 - i / 10] for i in range(1, 11)]},
        artifact_sha256=ref.sha256, artifact_uri=ref.uri, status="promoted")
    # Registered as promoted, so the registration also moves production to it.
    return container.runner.registration.register(run, "bench", new, "bench").adapter_id


def pages(container: Container) -> dict[str, str]:
    """One address per page, on what the database holds (the deepest adapter, …)."""
    adapters = container.registry.adapters(limit=1000)
    deepest = max(adapters, key=lambda a: (a.parent_adapter_id is not None, a.version))
    versions = container.contracts.versions()
    name = versions[-1].name
    numbers = [v.version for v in versions if v.name == name]
    starts = container.store.closers((SESSION_STARTED,), 0, container.store.head(), 1, newest_first=True)
    members = f"/console/adapters/{deepest.adapter_id}/members"
    found = {
        "overview": "/console", "specialists": "/console/specialists",
        "specialist": f"/console/specialists/{deepest.specialist}",
        "adapter": f"/console/adapters/{deepest.adapter_id}",
        "adapter audit (fragment)": f"/console/adapters/{deepest.adapter_id}/audit",
        "adapter members, held out (fragment)": f"{members}?split=held_out",
        "adapter members, score >= 0.9 (fragment)": f"{members}?min_score=0.9",
        "contracts": "/console/contracts",
        "contract version": f"/console/contracts/{name}/{numbers[-1]}",
        "rewards": "/console/rewards",
        "rewards by specialist and criterion": f"/console/rewards?specialist={deepest.specialist}"
                                               "&criterion=brevity",
        "rewards, two adapters": f"/console/rewards?compare=adapter&a={deepest.parent_adapter_id}"
                                 f"&b={deepest.adapter_id}&contract={name}@{numbers[-1]}",
        "sessions": "/console/sessions",
        "sessions by specialist and outcome": f"/console/sessions?specialist={deepest.specialist}"
                                              "&outcome=failure",
        "sessions by adapter version": f"/console/sessions?adapter={deepest.adapter_id}",
        "sessions by tenant": "/console/sessions?tenant=tenant-7",
        "as of now": "/console/as-of",
        "as of a past time": f"/console/as-of?at={quote(_middle_move(container).isoformat())}",
        "audit": "/console/audit",
    }
    if len(numbers) > 1:
        found["contract diff"] = f"/console/contracts/{name}/diff?a={numbers[0]}&b={numbers[-1]}"
        found["rewards, two contract versions"] = (f"/console/rewards?compare=contract"
                                                   f"&a={name}@{numbers[0]}&b={name}@{numbers[-1]}")
    if starts:
        found["session"] = f"/console/sessions/{starts[0].stream_id}"
    trained = container.manifest_index.members(deepest.manifest_id, limit=1)
    if trained:
        found["session a version trained on (downstream)"] = f"/console/sessions/{trained[0].stream_id}"
    runs = container.audit_runs.latest(limit=1)
    if runs:
        found["audit run"] = f"/console/audit/runs/{runs[0].event_id}"
    return found


def downloads(container: Container) -> dict[str, str]:
    """The audit page's files, where the database has what they need."""
    deepest = max(container.registry.adapters(limit=1000),
                  key=lambda a: (a.parent_adapter_id is not None, a.version))
    prov = f"/console/audit/files/prov?adapter_id={deepest.adapter_id}"
    found = {"PROV-JSON of the deepest ancestry": prov,
             "OpenLineage run events": "/console/audit/files/openlineage.jsonl"}
    latest = container.checkpoint_store.latest()
    if latest is not None:
        middle = container.store.read_all(max(0, latest.checkpoint.size // 2 - 1), 1)[0]
        found["inclusion proof"] = f"/console/audit/files/inclusion?event_id={middle.event_id}"
        if latest.position > 1:
            found["consistency proof"] = f"/console/audit/files/consistency?old=1&new={latest.position}"
    return found


def _middle_move(container: Container) -> datetime:
    """The time of an alias move halfway through the history (the deepest specialist's)."""
    moves = container.aliases.all_at(utcnow())
    history = container.aliases.history(moves[0].specialist, moves[0].alias, 1000) if moves else []
    return history[len(history) // 2].moved_at if history else utcnow()


def measure(client: TestClient, path: str, repeats: int) -> tuple[list[float], list[float]]:
    """Milliseconds per request, and each request's ratio to the floor request after it."""
    client.get(path)  # warm: template compilation, contract parsing caches
    client.get(FLOOR)
    timings, ratios = [], []
    for _ in range(repeats):
        took = _timed(client, path)
        floor = _timed(client, FLOOR)
        timings.append(took)
        ratios.append(took / floor)
    return timings, ratios


def _timed(client: TestClient, path: str) -> float:
    started = time.perf_counter()
    answer = client.get(path)
    took = (time.perf_counter() - started) * 1000
    if answer.status_code != 200:
        raise SystemExit(f"{path}: HTTP {answer.status_code}: {answer.text[:300]}")
    return took


def add_sessions(container: Container, count: int) -> None:
    """Synthetic harness sessions served by the deepest versions, a tenth of them a tenant's."""
    deepest: dict[str, tuple[int, str]] = {}
    for adapter in container.registry.adapters(limit=100_000):
        if adapter.version > deepest.get(adapter.specialist, (0, ""))[0]:
            deepest[adapter.specialist] = (adapter.version, adapter.adapter_id)
    served = {specialist: adapter_id for specialist, (_, adapter_id) in deepest.items()}
    limits = IngestLimits(500, 262_144)
    for number, session in enumerate(synthetic_sessions(count, 11, served)):
        tenant = "tenant-7" if number % 10 == 0 else None
        ingest(container.store, session, limits, Author("harness:bench", tenant))
    print(f"  added {count} sessions: log head {container.store.head()}", flush=True)


def signed_in_client(container: Container) -> TestClient:
    """A client with an admin session minted in-process for a fresh admin key (the console
    checks the session's key on every request, as it does in service)."""
    app = create_app(container)
    codec = SessionCodec(b"bench-console-secret-0123456789", 3600)
    app.state.console_codec = codec
    key_id = container.keys.create(["admin"], f"bench-console-{uuid.uuid4().hex[:8]}").split("_")[1]
    cookie, _ = codec.issue(key_id, "bench", frozenset({"admin"}),
                            generation=container.keys.console_generation(key_id))
    client = TestClient(app)
    client.cookies.set(COOKIE, cookie, path="/console")
    return client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", help="measure this database (one key is written)")
    parser.add_argument("--build", action="store_true",
                        help="build the data into --database-url (an empty database) first")
    parser.add_argument("--data-dir", type=Path, help="where to build one (default: a temp dir)")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--generations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--add-sessions", type=int, default=0,
                        help="ingest this many synthetic harness sessions first")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="hcp-bench-console-"))
    url = args.database_url or f"sqlite:///{data_dir / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=data_dir, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(url), dispatch_to=_NoDispatch())
    if not args.database_url or args.build:
        migrate.upgrade(url)
        print(f"building {url}: {args.sessions} sessions, {args.generations} generations", flush=True)
        build(container, args.sessions, args.generations, data_dir)
    if args.add_sessions:
        add_sessions(container, args.add_sessions)
    if not container.audit_runs.latest(limit=1):  # the audit page lists runs: keep one
        deepest = max(container.registry.adapters(limit=1000), key=lambda a: a.version)
        container.audit_runs.adapter(deepest.adapter_id, ACTOR, "cli")
    adapters = len(container.registry.adapter_ids(limit=1_000_000))
    print(f"database: {url.split('@')[-1]}; events {container.store.head()}, "
          f"rewards {container.rewards.head()}, adapters {adapters}")
    client = signed_in_client(container)
    floor, _ = measure(client, FLOOR, args.repeats)
    print(f"\nfloor (the sign-in form): p50 {statistics.median(floor):.1f} ms, p95 {_p95(floor):.1f} ms")
    print(f"{'page':<44} {'p50 ms':>8} {'p95 ms':>8} {'x floor':>8}   goal p95 < 300 ms, "
          f"{args.repeats} requests each")
    for kind, addresses in (("page", pages(container)), ("download", downloads(container))):
        for label, path in addresses.items():
            timings, ratios = measure(client, path, args.repeats)
            p95 = _p95(timings)
            verdict = ("ok" if p95 < 300 else "SLOW") if kind == "page" else "(a download)"
            print(f"{label:<44} {statistics.median(timings):8.1f} {p95:8.1f} "
                  f"{statistics.median(ratios):8.1f}   {verdict}", flush=True)
    container.close()


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


class _NoDispatch:
    """Runs are registered by the bench itself; nothing is sent to a worker."""

    def dispatch(self, run_id: str) -> Any:
        return None


if __name__ == "__main__":
    main()
