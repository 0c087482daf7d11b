"""Data other features will add slots in where the pages already look for it: a dry run's
per-criterion and per-specialist results, a serving contract version per specialist."""

from __future__ import annotations

from types import SimpleNamespace

from console.render import templates
from console.views.charts import bar_chart
from console.views.specialists import serving_contracts, serving_of


def dry_run_result(report_extra: dict) -> dict:
    report = {"applicable": 3, "scored": 3, "errors": 0, "mean": 0.7, "baseline_mean": 0.6,
              "mean_delta": 0.1, "compared": 3, "became_eligible": 0, "became_ineligible": 1,
              "largest_movers": [], "error_samples": [], **report_extra}
    return {"report": report, "baseline": {"version": 1, "status": "published"}, "subjects": 3,
            "selection": {"last": 3}, "truncated": False, "draft": {"status": "draft"},
            "chart": bar_chart("dry run", [{"label": "v2", "data": [0] * 10}]),
            "criteria": report_extra.get("criteria"), "specialists": report_extra.get("specialists")}


def render_dry_run(result: dict) -> str:
    return templates.get_template("fragments/dry_run.html").render(
        result=result, name="default", number=2, can_publish=False, proof="", csrf="")


def test_a_dry_run_shows_per_criterion_and_per_specialist_results_when_reported():
    plain = render_dry_run(dry_run_result({}))
    assert "Per criterion" not in plain and "Per specialist" not in plain and "+0.100" in plain
    richer = render_dry_run(dry_run_result({
        "criteria": {"brevity": {"mean": 0.5, "baseline_mean": 0.9, "mean_delta": -0.4, "compared": 3,
                                 "errors": 0}},
        "specialists": {"coding": {"count": 3, "mean": 0.7, "baseline_mean": 0.6, "mean_delta": 0.1,
                                   "errors": 0}}}))
    assert "Per criterion" in richer and "-0.400" in richer and "Per specialist" in richer


def test_serving_contract_versions_show_where_the_server_records_them():
    contracts = SimpleNamespace(versions=lambda: [SimpleNamespace(name="default")])
    assert serving_contracts(SimpleNamespace(contracts=contracts)) is None
    serving = SimpleNamespace(current=lambda name, at=None: {"coding": SimpleNamespace(ref=f"{name}@2")})
    found = serving_contracts(SimpleNamespace(contracts=contracts, serving=serving))
    assert found == {"coding": ["default@2"]}


def test_the_version_this_server_serves_under_is_told_from_the_others() -> None:
    serving = {"coding": ["default@1", "harness@2", "other@3"]}
    assert serving_of(serving, "coding", "harness") == {
        "used": "harness", "here": "harness@2", "others": ["default@1", "other@3"]}
    assert serving_of(serving, "genui", "harness") == {"used": "harness", "here": None, "others": []}
    assert serving_of(None, "coding", "harness") is None
