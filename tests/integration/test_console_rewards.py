"""The Rewards page never pools rubrics: one series per contract version, criteria a
version's rubric lacks shown as absent (not 0), adapters compared under one version."""

from __future__ import annotations

import re

from tests.integration import test_console
from tests.integration.console_data import ACTOR, EXAMPLE, record
from tests.integration.test_console import chart, get, sign_in
from tests.unit.trainer_core import fixtures

container, recorder = fixtures.container, fixtures.recorder
console = test_console.console  # the fixture: the console over the shared test data


def publish_renamed_rubric(container) -> None:
    """A second contract whose rubric calls brevity something else."""
    document = (EXAMPLE.read_text().replace('id = "brevity"', 'id = "concision"')
                .replace('name = "default"', 'name = "terse"', 1))
    container.contracts.create_draft("terse", document, ACTOR)
    container.contracts.publish("terse", 1, ACTOR)
    record(container, 10, seed=3, adapters={})


def means_rows(html: str) -> dict[str, list[str]]:
    table = html.split('id="means"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr><th scope="row">([^<]+)</th>(.*?)</tr>', table, re.S)
    return {name: re.findall(r"<td[^>]*>([^<]*)</td>", cells) for name, cells in rows}


def test_with_no_version_chosen_each_contract_version_is_its_own_series(console):
    client, data = console
    publish_renamed_rubric(client.app.state.container)
    sign_in(client, data.keys["auditor"])
    page = get(client, "/console/rewards")
    labels = [d["label"] for d in chart(page, "reward-distribution")["datasets"]]
    assert labels == ["terse@1", "default@2", "default@1"]  # newest published first
    rows = means_rows(page)
    assert rows["concision"][1:] == ["not in this rubric", "not in this rubric"]
    assert rows["brevity"][0] == "not in this rubric" and rows["brevity"][1] != "not in this rubric"
    assert all(v != "0.000" for v in rows["concision"][1:] + rows["brevity"][:1])


def test_side_by_side_versions_keep_their_own_criteria(console):
    client, data = console
    publish_renamed_rubric(client.app.state.container)
    sign_in(client, data.keys["auditor"])
    rows = means_rows(get(client, "/console/rewards?compare=contract&a=default@2&b=terse@1"))
    assert rows["brevity"][1] == "not in this rubric" and rows["concision"][0] == "not in this rubric"
    assert rows["brevity"][2] == rows["concision"][2] == "–"  # no B − A across rubrics


def test_adapters_are_compared_under_one_contract_version(console):
    client, data = console
    sign_in(client, data.keys["auditor"])
    refused = get(client, f"/console/rewards?compare=adapter&a={data.root}&b={data.successor}", 422)
    assert "choose the contract version" in refused
    compared = get(client, f"/console/rewards?compare=adapter&a={data.root}&b={data.successor}"
                           "&contract=default@2")
    assert [d["label"] for d in chart(compared, "reward-distribution")["datasets"]] == [
        data.root, data.successor]
