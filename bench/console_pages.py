"""Console page latency: every page, p50 and p95, on a database you give or one built here.

(Named console_pages.py: a script named console.py would shadow the console package.)

The goal (issue 12) is every page under 300 ms on the lineage benchmark's database (>= 1M
events). Give that database with ``--database-url``; without one, a SQLite database is
built under ``--data-dir`` from synthetic harness traffic, scored under the example
contract, with ``--generations`` successive adapters of ``coding`` (artifacts made up, no
torch). One admin key is written to a given database (labelled ``bench-console-…``): a
console session is checked against its key's row on every request, as in service.

Requests go through the whole app in-process (``TestClient``: routing, dependencies,
queries, templates), so the figures are server time without a network.

    .venv/bin/python bench/console_pages.py --sessions 2000 --generations 30
    .venv/bin/python bench/console_pages.py --database-url postgresql+psycopg://hcp:hcp@127.0.0.1/bench
    .venv/bin/python bench/console_pages.py --build --sessions 60000 --database-url postgresql+psycopg://…/empty
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from console.session import COOKIE, SessionCodec
from contract.vocabulary import SESSION_STARTED
from events.ingest import IngestLimits, ingest
from harness.synthetic import synthetic_sessions
from hcp import migrate
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from trainer.registry.model import NewAdapter

ACTOR = "user:bench"
EXAMPLE = Path(__file__).parents[1] / "examples" / "contracts" / "default.toml"


def build(container: Container, sessions: int, generations: int, base_dir: Path) -> None:
    """Traffic in rounds (each scored), the contract reweighted once, and a chain of
    ``generations`` coding adapters, each trained (in name) on the rewards before it."""
    from trainer.ml.tiny_model import build_tiny_base_model

    container.registry.register_base_model(
        "hcp-tiny", build_tiny_base_model(base_dir / "hcp-tiny", seed=0), ACTOR)
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
                ingest(container.store, batch, limits)
                batch = []
            batch += session
        if batch:
            ingest(container.store, batch, limits)
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
    found = {
        "overview": "/console", "specialists": "/console/specialists",
        "specialist": f"/console/specialists/{deepest.specialist}",
        "adapter": f"/console/adapters/{deepest.adapter_id}",
        "adapter audit (fragment)": f"/console/adapters/{deepest.adapter_id}/audit",
        "contracts": "/console/contracts",
        "contract version": f"/console/contracts/{name}/{numbers[-1]}",
        "rewards": "/console/rewards",
        "rewards by specialist and criterion": f"/console/rewards?specialist={deepest.specialist}"
                                               "&criterion=brevity",
        "rewards, two adapters": f"/console/rewards?compare=adapter&a={deepest.parent_adapter_id}"
                                 f"&b={deepest.adapter_id}",
        "sessions": "/console/sessions", "audit": "/console/audit",
    }
    if len(numbers) > 1:
        found["contract diff"] = f"/console/contracts/{name}/diff?a={numbers[0]}&b={numbers[-1]}"
        found["rewards, two contract versions"] = (f"/console/rewards?compare=contract"
                                                   f"&a={name}@{numbers[0]}&b={name}@{numbers[-1]}")
    if starts:
        found["session"] = f"/console/sessions/{starts[0].stream_id}"
    return found


def measure(client: TestClient, path: str, repeats: int) -> list[float]:
    client.get(path)  # warm: template compilation, contract parsing caches
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        answer = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise SystemExit(f"{path}: HTTP {answer.status_code}: {answer.text[:300]}")
    return timings


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
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="hcp-bench-console-"))
    url = args.database_url or f"sqlite:///{data_dir / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=data_dir, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(url), dispatch_to=_NoDispatch())
    if not args.database_url or args.build:
        migrate.upgrade(url)
        print(f"building {url}: {args.sessions} sessions, {args.generations} generations", flush=True)
        build(container, args.sessions, args.generations, data_dir)
    adapters = len(container.registry.adapter_ids(limit=1_000_000))
    print(f"database: {url.split('@')[-1]}; events {container.store.head()}, "
          f"rewards {container.rewards.head()}, adapters {adapters}")
    client = signed_in_client(container)
    rows: list[tuple[str, float, float]] = []
    for label, path in pages(container).items():
        timings = measure(client, path, args.repeats)
        rows.append((label, statistics.median(timings), _p95(timings)))
    print(f"\n{'page':<38} {'p50 ms':>8} {'p95 ms':>8}   goal < 300 ms, {args.repeats} requests each")
    for label, p50, p95 in rows:
        print(f"{label:<38} {p50:8.1f} {p95:8.1f}   {'ok' if p95 < 300 else 'SLOW'}")
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
