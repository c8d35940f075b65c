"""The failoverbench catalogue in simulated time: reference routers pass every check, and the checks
catch a router that does the wrong thing, on both engines (the ``engine`` fixture)."""

from __future__ import annotations

import dataclasses

import pytest

import sykit as sy

SCENARIOS = sy.failoverbench.catalogue()


def test_there_are_sixteen_scenarios_in_order():
    assert list(SCENARIOS) == [f"S{i:02d}" for i in range(1, 17)]
    assert all(s.title and s.description for s in SCENARIOS.values())


@pytest.mark.parametrize("scenario_id", list(SCENARIOS))
def test_the_reference_router_passes(scenario_id, engine):
    outcome = SCENARIOS[scenario_id].run(engine=engine)
    assert outcome.problems == ()
    assert outcome.result.engine == engine


def test_the_whole_catalogue_as_one_report(engine):
    report = sy.failoverbench.run_catalogue(engine=engine)
    assert report["passed"].all()
    assert list(report.columns) == [
        "id",
        "title",
        "passed",
        "problems",
        "attempts",
        "latency_s",
        "cost_usd",
    ]


NAIVE_FAILS = {"S02", "S04", "S05", "S06", "S07", "S08", "S10", "S12", "S14", "S15", "S16"}


def test_a_router_without_fallbacks_fails_the_scenarios_that_need_one(engine):
    report = sy.failoverbench.run_catalogue(
        sy.strategies.single("primary"), engine=engine
    ).set_index("id")
    assert set(report.index[~report["passed"]]) == NAIVE_FAILS
    assert "failed" in report.loc["S04", "problems"]


def test_a_router_that_falls_back_on_policy_denials_fails_s13(engine):
    scenario = SCENARIOS["S13"]
    lenient = dataclasses.replace(
        scenario, host=scenario.host.replace(policy=sy.HostPolicy(allow_policy_fallback=True))
    )
    assert "must be returned" in " ".join(lenient.run(engine=engine).problems)


def test_without_cooldown_the_flapping_primary_is_tried_every_time(engine):
    scenario = SCENARIOS["S15"]
    no_cooldown = dataclasses.replace(
        scenario, host=scenario.host.replace(policy=sy.HostPolicy(cooldown_s=0))
    )
    assert any("no cooldown" in p for p in no_cooldown.run(engine=engine).problems)


def test_unknown_ids_are_named():
    with pytest.raises(ValueError, match="S99"):
        sy.failoverbench.run_catalogue(ids=["S01", "S99"])


async def prefilling_router(request, driver):
    """Streams the primary; when it breaks mid-answer, asks the fallback to continue the partial
    answer (an assistant prefill), as a naive streaming client might."""
    text = []
    try:
        async for chunk in driver.stream_model(request, ["primary"]):
            text.append(chunk.text)
    except sy.ModelError:
        messages = [*request.messages, {"role": "assistant", "content": "".join(text)}]
        continued = sy.Request(messages, id=request.id, input_tokens=request.input_tokens + 33)
        return sy.answered("secondary", await driver.call_model(continued, ["secondary"]))
    return sy.answered("primary", None)


def test_s14_fails_a_router_that_resends_the_partial_answer_as_a_prefill(engine):
    outcome = SCENARIOS["S14"].run(prefilling_router, engine=engine)
    assert outcome.problems
    refused = outcome.result.attempts.query("model == 'secondary'").iloc[0]
    assert (refused["http_status"], refused["error_kind"]) == (400, "invalid_request")
    assert "prefill" in refused["error_message"]
    assert outcome.result.requests.iloc[0]["status"] == "failed"


def test_a_model_without_prefill_refuses_a_conversation_ending_with_the_assistant(engine):
    host = sy.SimHost({"m": sy.ModelProfile(prefill=False, output_tokens=5)})
    asks = sy.Request([{"role": "user", "content": "hi"}])
    continues = sy.Request(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "He"}]
    )
    res = sy.run(sy.strategies.single("m"), [asks, continues], host=host, engine=engine)
    assert res.requests["status"].tolist() == ["ok", "failed"]
    assert res.requests["error_kind"].tolist()[1] == "invalid_request"
    with pytest.raises(sy.ArgumentTypeError, match="prefill"):
        sy.ModelProfile(prefill="no")
