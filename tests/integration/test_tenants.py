"""Tenants over HTTP, on SQLite and PostgreSQL: who writes for whom, and who reads what.

Two tenants (acme, globex) with their own keys, and an operator key (no tenant). The
matrix: writes are stamped with the key's tenant and actor; a tenant key cannot name or
write into another tenant; every read (event, stream, feed, rewards, dry runs, jobs) sees
the key's tenant only; shared state (contracts, registry, training, the whole log's
audit) is changed and audited by operators only.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import tenant_world
from tests.integration.tenant_world import World, conversation, feed
from tests.unit.evaluators.factories import contract_text

world = tenant_world.world


def test_writes_are_stamped_with_the_key_and_the_claim_is_kept_apart(world: World) -> None:
    events = world.container.store.read_stream(world.streams["acme"])
    assert {(e.metadata.tenant, e.metadata.actor, e.metadata.claimed_actor) for e in events} == {
        ("acme", "key:acme-w", "someone-else")}
    ops_events = world.container.store.read_stream(world.streams["ops-globex"])
    assert {(e.metadata.tenant, e.metadata.actor) for e in ops_events} == {("globex", "key:ops")}
    assert world.container.store.verify().intact  # claimed_actor is chained where it is set


def test_a_tenant_key_cannot_write_for_another_tenant(world: World) -> None:
    client, head = world.client, world.container.store.head()
    named = client.post("/v1/events", json={"events": conversation("new-1", "globex")},
                        headers=world.as_("acme-w"))
    into = client.post("/v1/events", json={"events": conversation(world.streams["globex"])},
                       headers=world.as_("acme-w"))
    # An operator must name the stream's tenant too: a stream belongs to one tenant.
    untenanted = client.post("/v1/events", json={"events": conversation(world.streams["acme"])},
                             headers=world.as_("ops"))

    assert (named.status_code, named.json()["error"]["field"]) == (403, "events[0].metadata.tenant")
    assert (into.status_code, into.json()["error"]["field"]) == (403, "events[0].stream_id")
    assert untenanted.status_code == 403
    assert world.container.store.head() == head


@pytest.mark.parametrize("stream", ["contract:default", "training_run:x", "specialist:chat",
                                    "base_model:tiny", "api_key:x"])
def test_server_streams_take_no_client_events(world: World, stream: str) -> None:
    body = {"events": [{"stream_id": stream, "type": "x.note", "payload": {}}]}
    response = world.client.post("/v1/events", json=body, headers=world.as_("ops"))
    assert (response.status_code, response.json()["error"]["field"]) == (422, "events[0].stream_id")
    history = world.client.get("/v1/contracts/default/history", headers=world.as_("ops")).json()
    # only what the server itself wrote when the contract was published
    assert {h["type"] for h in history} <= {"contract.draft_created", "contract.published",
                                           "contract.serving_moved"}


def test_each_tenant_reads_its_own_events_only(world: World) -> None:
    acme, globex = feed(world, "acme-r"), feed(world, "globex-r")
    everything = feed(world, "ops")

    assert {e["metadata"]["tenant"] for e in acme} == {"acme"}
    assert {e["metadata"]["tenant"] for e in globex} == {"globex"}
    assert {e["stream_id"] for e in globex} == {world.streams["globex"], world.streams["ops-globex"]}
    # The operator also sees the server's own events (keys, contracts): no tenant.
    assert len(everything) > len(acme) + len(globex)
    other = globex[0]
    assert world.client.get(f"/v1/events/{other['event_id']}", headers=world.as_("acme-r")).status_code == 404
    assert world.client.get(f"/v1/events/{other['event_id']}", headers=world.as_("ops")).status_code == 200
    stream = world.client.get(f"/v1/streams/{world.streams['globex']}", headers=world.as_("acme-r")).json()
    assert stream["events"] == [] and stream["head"] == acme[-1]["position"]


def test_rewards_carry_the_subjects_tenant_and_are_filtered_by_it(world: World) -> None:
    def rewards(who: str) -> list[dict[str, Any]]:
        return world.client.get("/v1/rewards?limit=5000", headers=world.as_(who)).json()["rewards"]

    acme, everything = rewards("acme-r"), rewards("ops")
    assert acme and {r["tenant"] for r in acme} == {"acme"}
    assert {r["tenant"] for r in everything} == {"acme", "globex"}
    assert {r["subject"]["stream_id"] for r in acme} == {world.streams["acme"]}
    globex_reward = next(r for r in everything if r["tenant"] == "globex")
    url = f"/v1/rewards/{globex_reward['reward_id']}"
    assert world.client.get(url, headers=world.as_("acme-r")).status_code == 404
    assert world.client.get(url, headers=world.as_("globex-r")).status_code == 200


def test_dry_runs_score_only_the_keys_tenant(world: World) -> None:
    draft = world.container.contracts.create_draft("default", contract_text(answered_weight=2.0),
                                                   "t", 1)
    url = f"/v1/contracts/default/versions/{draft.version}/dry-run"

    def subjects(who: str) -> tuple[set[str], dict[str, Any]]:
        response = world.client.post(url, json={"last": 100}, headers=world.as_(who))
        assert response.status_code == 200, response.text
        body = response.json()
        job = world.client.get(f"/v1/dry-runs/{body['job_id']}", headers=world.as_(who))
        assert job.status_code == 200 and job.json()["status"] == "succeeded"
        return {m["subject_id"].split(":")[1] for m in body["report"]["largest_movers"]}, body

    acme, acme_body = subjects("acme-r")
    everyone, ops_body = subjects("ops")
    assert acme == {world.streams["acme"]} and acme_body["tenant"] == "acme"
    assert acme_body["subjects"] == 2 and ops_body["subjects"] == 6
    assert len(everyone) == 3
    other_job = world.client.get(f"/v1/dry-runs/{ops_body['job_id']}", headers=world.as_("acme-r"))
    assert other_job.status_code == 404


@pytest.mark.parametrize(("method", "url", "body"), [
    ("post", "/v1/contracts/default/versions", {"parent_version": 1}),
    ("post", "/v1/contracts/default/versions/1/retire", {"reason": "x"}),
    ("post", "/v1/contracts/default/versions/1/reevaluation", {}),
    ("post", "/v1/specialists", {"name": "acme-slot"}),
    ("post", "/v1/base-models", {"name": "m", "path": "m"}),
    ("post", "/v1/training-runs", {"specialist": "chat"}),
    ("put", "/v1/triggers/chat", {"min_new_rewards": 5}),
    ("get", "/v1/audit/verify", None),
    ("get", "/v1/lineage/as-of?at=2026-01-01T00:00:00Z", None),
    ("get", "/v1/lineage/downstream?tenant=globex", None),
])
def test_shared_state_is_changed_by_operators_only(world: World, method: str, url: str,
                                                   body: Any) -> None:
    response = getattr(world.client, method)(url, headers=world.as_("acme-admin"),
                                             **({"json": body} if body is not None else {}))
    assert response.status_code == 403, response.text
    assert "operator" in response.json()["error"]["message"]


def test_a_tenant_key_reads_registry_metadata_but_not_deep_lineage(world: World) -> None:
    assert world.client.get("/v1/specialists", headers=world.as_("acme-r")).status_code == 200
    assert world.client.get("/v1/training-runs", headers=world.as_("acme-r")).status_code == 200
    deep = world.client.get("/v1/adapters/none/lineage?deep=true", headers=world.as_("acme-r"))
    assert deep.status_code == 403
    assert world.client.get("/v1/adapters/none/lineage?deep=true",
                            headers=world.as_("ops")).status_code == 404
