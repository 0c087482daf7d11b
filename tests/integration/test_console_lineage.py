"""Lineage in the console: which records trained a version (its manifest's members, paged
and filtered, each linked to its session and reward; the examples its run selected), what
was production at a time, and who answers a specialist that no alias serves."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import quote

from console.views import members as member_views
from console.views.members import selected_examples
from tests.integration import test_console
from tests.integration.test_console import get, sign_in
from tests.unit.trainer_core import fixtures

container, recorder = fixtures.container, fixtures.recorder
console = test_console.console
ROW = re.compile(r'<tr><td>(\d+)</td>\s*<th scope="row"><a href="/console/sessions/([^"#]+)#reward-([^"]+)">')


def members_of(html: str) -> list[tuple[int, str, str]]:
    table = html.split('id="members-table"', 1)[1].split("</table>", 1)[0]
    return [(int(p), s, r) for p, s, r in ROW.findall(table)]


def test_the_adapter_page_lists_the_records_that_trained_it(console, monkeypatch):
    client, data = console
    c = client.app.state.container
    adapter = c.registry.adapter(data.successor)
    manifest = c.manifest_index.summaries([adapter.manifest_id])[adapter.manifest_id]
    sign_in(client, data.keys["admin"])

    page = get(client, f"/console/adapters/{data.successor}")
    shown = members_of(page)
    expected = c.manifest_index.members(adapter.manifest_id, limit=50)
    assert [(p, r) for p, _, r in shown] == [(m.reward_position, m.reward_id) for m in expected]
    assert all(s == m.stream_id for (_, s, _), m in zip(shown, expected, strict=True))
    chosen = selected_examples(c, adapter.training_run_id)
    assert chosen  # the run recorded them: listed in training order, and marked among the members
    table = page.split('id="selected-table"', 1)[1].split("</table>", 1)[0]
    listed = re.findall(r'<tr><td>(\d+)</td>\s*<th scope="row"><a href="[^"]*#reward-([^"]+)">', table)
    assert listed == [(str(i), rid) for i, rid in enumerate(chosen[:50], 1)]
    assert "not members of the manifest" not in page
    order = {rid: i for i, rid in enumerate(chosen, 1)}
    marks = re.findall(r'#reward-([^"]+)">.*?<td>(#\d+|<span class="muted">no</span>)</td></tr>',
                       page.split('id="members-table"', 1)[1].split("</table>", 1)[0], re.S)
    assert marks and all(mark == (f"#{order[rid]}" if rid in order else '<span class="muted">no</span>')
                         for rid, mark in marks)
    root = get(client, f"/console/adapters/{data.root}")
    assert 'id="selected-none"' in root  # its run did not record them

    base = f"/console/adapters/{data.successor}/members"
    held = members_of(get(client, f"{base}?split=held_out"))
    assert len(held) == min(50, manifest.split["held_out"])
    rewards = {str(r.reward_id): r for r in c.rewards.by_ids(r for _, _, r in held)}
    assert {rewards[r].split for _, _, r in held} == {"held_out"}

    scored = {str(r.reward_id): r.score for r in c.rewards.by_ids(
        m.reward_id for m in c.manifest_index.members(adapter.manifest_id, limit=10_000))}
    high = sorted(s for s in scored.values() if s is not None)[len(scored) // 2]
    kept = members_of(get(client, f"{base}?min_score={high}"))
    assert kept and all(scored[r] >= high for _, _, r in kept)
    assert len(kept) == min(50, sum(s is not None and s >= high for s in scored.values()))
    fragment = client.get(f"{base}?min_score=2", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert "matches the filter" in fragment.text

    monkeypatch.setattr(member_views, "PAGE", 8)  # pages of 8: the second starts after the first
    first = members_of(get(client, base))
    assert len(first) == 8 and f"after={first[-1][0]}" in get(client, base)
    second = members_of(get(client, f"{base}?after={first[-1][0]}"))
    assert [p for p, _, _ in first + second] == [m.reward_position for m in expected[:16]]

    assert "split: choose" in get(client, f"{base}?split=test", 422)
    assert "min_score: expected a number" in get(client, f"{base}?min_score=high", 422)
    assert "is above max_score" in get(client, f"{base}?min_score=0.9&max_score=0.1", 422)

    client.cookies.clear()
    sign_in(client, data.keys["auditor"])  # no lineage:read
    page = get(client, f"/console/adapters/{data.successor}")
    assert "need the scopes lineage:read and rewards:read" in page
    assert "lineage:read" in get(client, base, 403)


def test_as_of_shows_aliases_serving_and_scoring_versions_at_any_time(console):
    client, data = console
    c = client.app.state.container
    promoted = c.aliases.current("coding")["production"]
    sign_in(client, data.keys["admin"])

    now = get(client, "/console/as-of")
    aliases = now.split('id="asof-aliases"', 1)[1].split("</table>", 1)[0]
    assert f">{data.root}</a>" in aliases and "production" in aliases
    scoring = now.split('id="asof-scoring"', 1)[1].split("</table>", 1)[0]
    assert "default@1" in scoring and "default@2" in scoring and "default@3" not in scoring  # a draft

    before = (promoted.moved_at - timedelta(microseconds=1)).isoformat()  # the promotion's eve
    earlier = get(client, f"/console/as-of?at={quote(before)}")
    assert "No alias pointed anywhere then." in earlier
    serves = earlier.split('id="asof-serves"', 1)[1].split("</table>", 1)[0]
    assert "the bare base model hcp-tiny" in serves
    scoring = earlier.split('id="asof-scoring"', 1)[1].split("</table>", 1)[0]
    assert "default@1" in scoring and "default@2" not in scoring  # v2 was published after it
    eve = (promoted.moved_at - timedelta(milliseconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    assert f"as-of?at={quote(eve, safe='')}" in now  # each move links to the moment before it

    assert "at: expected a date" in get(client, "/console/as-of?at=last+week", 422)
    client.cookies.clear()
    sign_in(client, data.keys["auditor"])
    assert "lineage:read" in get(client, "/console/as-of", 403)


def test_a_specialist_no_alias_serves_says_the_bare_base_serves_it(console):
    client, data = console
    sign_in(client, data.keys["viewer"])
    chat = get(client, "/console/specialists/chat")
    assert "No alias points anywhere yet: the bare base model <strong>hcp-tiny</strong> serves chat" in chat
    assert re.search(r'id="serves-now">Answers requests now: <strong class="base-serves">the bare base '
                     r'model hcp-tiny</strong>', chat)
    listed = get(client, "/console/specialists")
    row = listed.split('href="/console/specialists/coding"', 1)[1].split("</tr>", 1)[0]
    assert f">{data.root}</a>" in row and "bare base" not in row
    row = listed.split('href="/console/specialists/chat"', 1)[1].split("</tr>", 1)[0]
    assert "the bare base model hcp-tiny" in row
