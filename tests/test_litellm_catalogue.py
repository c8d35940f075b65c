"""The LiteLLM catalogue page (docs/litellm-catalogue.md) is generated from the recorded run
(conformance/litellm_catalogue.json): the page's table must be the one the JSON gives, and the
JSON must cover the whole failoverbench catalogue. No LiteLLM needed: only the recording is."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import sykit as sy

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "conformance" / "litellm_catalogue.py"


def _script():
    spec = importlib.util.spec_from_file_location("litellm_catalogue", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data():
    return json.loads((ROOT / "conformance" / "litellm_catalogue.json").read_text())


def test_the_recording_covers_s01_to_s16():
    data = _data()
    catalogue = sy.failoverbench.catalogue()
    assert list(data["scenarios"]) == [f"S{i:02d}" for i in range(1, 17)] == list(catalogue)
    assert data["litellm_version"] and 0 < data["time_scale"] <= 1
    for sid, row in data["scenarios"].items():
        assert row["title"] == catalogue[sid].title
        for who in ("litellm", "reference", "litellm_like"):
            requests = row[who]["requests"]
            assert len(requests) == len(catalogue[sid].requests), (sid, who)
            for request in requests:
                assert request["served"] == (request["served_by"] is not None), (sid, who)
                assert request["time_s"] >= 0 and all(len(a) == 2 for a in request["attempts"])
        for who in ("reference", "litellm_like"):
            assert row[who]["passed"] == (row[who]["problems"] == []), (sid, who)


def test_the_reference_routers_pass_in_the_recording():
    assert all(row["reference"]["passed"] for row in _data()["scenarios"].values())


def test_the_docs_table_is_the_one_the_recording_gives():
    script = _script()
    page = (ROOT / "docs" / "litellm-catalogue.md").read_text()
    assert script.table_of_page(page) == script.markdown(_data()), (
        "docs/litellm-catalogue.md is stale: run "
        "`python conformance/litellm_catalogue.py --markdown --write`"
    )


def test_litellm_like_did_what_the_router_did_in_the_recording():
    script = _script()
    rows = _data()["scenarios"].values()
    assert [script.agreement(r["litellm"], r["litellm_like"]) for r in rows] == ["yes"] * 14 + [
        "yes (totals)",
        "yes",
    ]


def test_agreement_says_where_they_differ():
    agreement = _script().agreement

    def request(served_by, *attempts):
        return {"served": served_by is not None, "served_by": served_by, "attempts": attempts}

    router = {"requests": [request("b", ("a", "503"), ("a", "503"), ("b", "200"))]}
    # what each attempt answered is not compared (a reset here is "unavailable" in sykit)
    relabelled = {"requests": [request("b", ("a", "x"), ("a", "y"), ("b", "200"))]}
    assert agreement(router, relabelled) == "yes"
    assert agreement(router, router) == "yes"
    assert agreement(router, {"requests": [request(None, ("a", "503"))]}) == "no: failed"
    assert agreement(router, {"requests": [request("b", ("a", "503"), ("b", "200"))]}) == (
        "no: called a → b"
    )
    skipped = {
        "requests": [request("b", ("a", "503"), ("a", "skipped"), ("a", "503"), ("b", "200"))]
    }
    assert agreement(router, skipped) == "yes"  # a skipped row is not a call
    many = {"requests": [request("a", ("a", "200")), request("b", ("a", "503"), ("b", "200"))]}
    other = {"requests": [request("a", ("a", "200")), request("b", ("b", "200"))]}
    assert agreement(many, many) == "yes (totals)"
    assert agreement(many, other) == "no: different totals"
    assert agreement(many, router) == "no: 2 requests against 1"


def test_litellm_like_does_what_the_recorded_router_did_on_the_simulated_host():
    """Each catalogue scenario on its SimHost (virtual time, no LiteLLM) under
    litellm_like(stream=True), with the recording's settings and, as in the recording, its
    backoff in real seconds while the scenario ran at time_scale (so every wait counts
    1/time_scale over): the same outcome and calls as the real Router's, request by request
    (S15, many requests: the same totals)."""
    script = _script()
    data = _data()
    catalogue = sy.failoverbench.catalogue()
    for sid, row in data["scenarios"].items():
        k = 1 / row["time_scale"]
        settings = {
            key: value * (k if key == "cooldown_time" else 1)
            for key, value in row["litellm_router"].items()
            if key in ("allowed_fails", "cooldown_time")
        }
        router = sy.strategies.litellm_like(["primary", "secondary"], stream=True, **settings)
        own_wait = router._wait_s
        router._wait_s = lambda error, retry, jitter, own=own_wait, k=k: (
            own(error, retry, jitter) * k
        )
        for seed in (0, 1):
            result = catalogue[sid].run(router, seed=seed).result
            simulated = {"requests": script.sykit_requests(result, 1.0)}
            assert script.agreement(row["litellm"], simulated).startswith("yes"), (sid, seed)
