"""The Sessions pages: filters by tenant, specialist, adapter version and outcome; a
session's tenant; and what a session influenced downstream (manifests, versions, the
windows an alias served them), as `hcp lineage downstream --stream` answers."""

from __future__ import annotations

import re

from evaluators.rewards import RewardQuery
from events.ingest import Author, ClientEvent, IngestLimits, ingest
from events.session_search import SessionFilter
from harness.synthetic import synthetic_sessions
from tests.integration import test_console
from tests.integration.test_console import get, sign_in
from tests.unit.trainer_core import fixtures

container, recorder = fixtures.container, fixtures.recorder
console = test_console.console
SESSION_LINK = re.compile(r'<th scope="row"><a href="/console/sessions/(session-[^"]+)">')


def listed(html: str) -> list[str]:
    return SESSION_LINK.findall(html)


def tenant_traffic(container, tenant: str, count: int = 3) -> list[str]:
    streams = []
    for session in synthetic_sessions(count, seed=99, adapter_versions={}):
        ingest(container.store, session, IngestLimits(500, 262_144), Author("harness:acme", tenant))
        streams.append(session[0].stream_id)
    return streams


def test_sessions_are_filtered_by_tenant_specialist_adapter_and_outcome(console):
    client, data = console
    c = client.app.state.container
    acme = tenant_traffic(c, "acme")
    sign_in(client, data.keys["auditor"])

    everything = listed(get(client, "/console/sessions"))
    assert len(everything) == 50 and set(acme) <= set(everything)
    assert listed(get(client, "/console/sessions?tenant=acme")) == acme[::-1]
    assert listed(get(client, "/console/sessions?tenant=nobody")) == []

    coding = get(client, "/console/sessions?specialist=coding")
    assert listed(coding) and all(c.store.read_stream(s)[0].metadata.specialist == "coding"
                                  for s in listed(coding))
    served = listed(get(client, f"/console/sessions?adapter={data.root}"))
    assert served and all(any(e.metadata.adapter_version == data.root for e in c.store.read_stream(s))
                          for s in served)
    assert not set(served) & set(listed(get(client, "/console/sessions?adapter=coding@0")))

    failed = listed(get(client, "/console/sessions?outcome=failure&specialist=coding"))
    assert failed and all(c.store.read_stream(s)[-1].payload["outcome"] == "failure" for s in failed)
    page = get(client, "/console/sessions?outcome=failure")
    assert "failure" in page and "success" not in page.split("<tbody>", 1)[1]
    assert 'value="failure"' in page  # the form keeps the filter


def test_a_filter_that_matches_little_stops_at_its_scan_bound_and_says_so(console):
    client, data = console
    search = client.app.state.container.session_search
    found = search.latest(SessionFilter(adapter_version=data.root), limit=50, scan=5)
    assert found.older is None and found.searched_to is not None
    everything = search.latest(SessionFilter(adapter_version=data.root), limit=50)
    assert everything.searched_to is None and len(everything.starts) >= len(found.starts)


def test_the_session_page_shows_its_tenant_and_what_it_influenced(console):
    client, data = console
    c = client.app.state.container
    stream = tenant_traffic(c, "acme", 1)[0]
    sign_in(client, data.keys["admin"])
    page = get(client, f"/console/sessions/{stream}")
    assert re.search(r'id="session-tenant"><strong>acme</strong>', page)

    trained = c.manifest_index.members(c.registry.adapter(data.root).manifest_id, limit=1)[0].stream_id
    page = get(client, f"/console/sessions/{trained}")
    assert "none (an operator" in page
    reached = c.downstream.of_stream(trained)
    downstream = page.split('id="downstream-title"', 1)[1]
    assert "hcp lineage downstream --stream" in downstream
    for man in reached.manifests:
        assert man.manifest_id[:12] in downstream
    for adapter in reached.adapters:
        assert f">{adapter.adapter_id}</a>" in downstream
    assert data.root in downstream and "production" in downstream  # the window it served in
    rewards = c.rewards.find(RewardQuery(stream_id=trained, limit=10))
    assert rewards and all(f'id="reward-{r.reward_id}"' in page for r in rewards)  # members link here

    client.cookies.clear()
    sign_in(client, data.keys["auditor"])  # no lineage:read
    assert "Downstream lineage needs the scope lineage:read" in get(client, f"/console/sessions/{trained}")


def test_a_session_whose_stream_id_holds_slashes_opens_from_its_link(console):
    client, data = console
    c = client.app.state.container
    stream = "otel:acme:conv/2026/12?x=1#a b"  # OTLP conversation ids are the client's
    event = ClientEvent(stream_id=stream, type="session.started", payload={"harness": "otel"})
    ingest(c.store, [event], IngestLimits(500, 262_144), Author("otel", "acme"), opens_derived=True)
    sign_in(client, data.keys["admin"])
    listing = get(client, "/console/sessions?tenant=acme")
    [link] = re.findall(r'href="(/console/sessions/otel[^"#]*)"', listing)
    page = get(client, link.replace("&amp;", "&"))
    assert re.search(r'id="session-tenant"><strong>acme</strong>', page)
    assert "session.started" in page
    found = client.get("/console/sessions", params={"stream": stream})  # the find-a-session box
    assert found.status_code == 303
    assert get(client, found.headers["location"]) == page
