"""The failoverbench catalogue over HTTP: each scenario's host becomes a FakeProvider whose models
reproduce its faults, in scaled real time. The reference routers pass, a router without fallbacks
fails the same scenarios as in simulation, and S11 fails a client that insists on [DONE]."""

from __future__ import annotations

import dataclasses

import pytest
from test_catalogue import NAIVE_FAILS, prefilling_router

import sykit as sy
from sykit._hosts._openai_wire import ChatStream
from sykit.failoverbench import Tolerance, _fake_model

SCENARIOS = sy.failoverbench.catalogue()


@pytest.mark.parametrize("scenario_id", list(SCENARIOS))
def test_the_reference_router_passes_over_http(scenario_id):
    outcome = SCENARIOS[scenario_id].run_http()
    assert outcome.problems == ()
    assert outcome.result.engine == "asyncio"


def test_a_router_without_fallbacks_fails_the_same_scenarios_over_http():
    naive = sy.strategies.single("primary")
    report = sy.failoverbench.run_catalogue(naive, over="http").set_index("id")
    assert set(report.index[~report["passed"]]) == NAIVE_FAILS
    simulated = sy.failoverbench.run_catalogue(naive).set_index("id")
    for sid in ("S02", "S04", "S05", "S08", "S10", "S12", "S14", "S16"):
        assert report.loc[sid, "problems"] == simulated.loc[sid, "problems"]


def test_the_catalogue_report_over_http_has_the_simulated_columns_and_costs():
    ids = ["S01", "S08", "S12", "S16"]
    http = sy.failoverbench.run_catalogue(over="http", ids=ids)
    simulated = sy.failoverbench.run_catalogue(ids=ids)
    assert http["passed"].all()
    assert list(http.columns) == list(simulated.columns)
    assert http["attempts"].tolist() == simulated["attempts"].tolist()
    assert http["cost_usd"].tolist() == pytest.approx(simulated["cost_usd"].tolist())


def test_over_and_engine_are_checked():
    with pytest.raises(sy.ArgumentError, match="over"):
        sy.failoverbench.run_catalogue(over="tcp")
    with pytest.raises(sy.ArgumentError, match="engine"):
        sy.failoverbench.run_catalogue(over="http", engine="kernel")
    with pytest.raises(sy.ArgumentError, match="time_scale"):
        SCENARIOS["S01"].run_http(time_scale=0)


def test_a_retry_that_ignores_retry_after_fails_s02_in_both_modes():
    scenario = SCENARIOS["S02"]
    impatient = dataclasses.replace(
        scenario, host=scenario.host.replace(policy=sy.HostPolicy(retry_after_cap_s=0))
    )
    for outcome in (impatient.run(), impatient.run_http()):
        assert any("Retry-After" in p for p in outcome.problems)


def test_a_router_that_resends_the_partial_answer_fails_s14_over_http():
    outcome = SCENARIOS["S14"].run_http(prefilling_router)
    assert outcome.problems
    refused = outcome.result.attempts.query("model == 'secondary'").iloc[0]
    assert (refused["http_status"], refused["error_kind"]) == (400, "invalid_request")
    assert "prefill" in refused["error_message"]


@pytest.fixture
def strict_about_done(monkeypatch):
    """A client that ignores finish_reason: a stream is complete only once data: [DONE] came."""
    feed = ChatStream.feed

    def strict(self, line):
        token = feed(self, line)
        self.finished = False
        return token

    monkeypatch.setattr(ChatStream, "feed", strict)


def test_s11_fails_a_client_that_treats_a_missing_done_as_a_cut(strict_about_done):
    outcome = SCENARIOS["S11"].run_http()
    assert "a complete answer without [DONE] needs no retry" in outcome.problems
    primary = outcome.result.attempts.query("model == 'primary'")
    assert primary["status"].tolist() == ["error"] * 3
    assert primary["error_message"].str.contains("without finish_reason or \\[DONE\\]").all()
    assert outcome.result.requests.iloc[0]["served_model"] == "secondary"


def test_without_its_wire_fault_s11_cannot_fail(strict_about_done):
    healthy = dataclasses.replace(SCENARIOS["S11"], wire_faults={})
    assert healthy.run_http().problems == ()
    assert SCENARIOS["S01"].run_http().problems == ()  # the strict client handles [DONE] streams


def test_faults_a_fake_provider_cannot_reproduce_are_named():
    flaky = sy.SimHost({"primary": sy.ModelProfile(faults=sy.Faults(unavailable=0.3))})
    scenario = dataclasses.replace(SCENARIOS["S04"], host=flaky)
    with pytest.raises(sy.ArgumentError, match=r"unavailable=0.3"):
        scenario.run_http()


def _primary_with(faults: sy.Faults) -> sy.ModelProfile:
    return sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100), output_tokens=50, faults=faults
    )


def test_non_chat_bodies_and_error_faults_at_probability_one_become_the_fake_models_fault():
    non_chat = _fake_model("primary", _primary_with(sy.Faults(non_chat=1.0)), 0.1, None)
    assert non_chat.fault == "not-chat"
    revoked = sy.faults.ErrorFault(401, 1.0, code="invalid_api_key", retry_after_s=4.0)
    error = _fake_model("primary", _primary_with(sy.Faults(errors=[revoked])), 0.1, None)
    # The FakeProvider sends an ErrorFault's own Retry-After: it is scaled like every duration.
    assert error.fault.retry_after_s == pytest.approx(0.4)
    assert error.fault == revoked.replace(retry_after_s=error.fault.retry_after_s)
    spared = sy.Faults(errors=[sy.faults.ErrorFault(404, 0.0)], non_chat=0.0)
    assert _fake_model("primary", _primary_with(spared), 0.1, None).fault is None


def test_the_retry_after_spellings_reach_the_fake_model_scaled():
    ms = _fake_model(
        "primary", _primary_with(sy.Faults(rate_limit=1.0, retry_after_ms=3000)), 0.1, None
    )
    assert ms.retry_after_ms == pytest.approx(300) and ms.retry_after_as == "seconds"
    error = sy.faults.ErrorFault(503, 1.0, retry_after_s=None, retry_after_ms=2000)
    scaled = _fake_model("primary", _primary_with(sy.Faults(errors=[error])), 0.1, None)
    assert scaled.fault.retry_after_ms == pytest.approx(200)
    dated = sy.Faults(rate_limit=1.0, retry_after_s=2, retry_after_as="date")
    assert _fake_model("primary", _primary_with(dated), 1.0, None).retry_after_as == "date"
    with pytest.raises(sy.ArgumentError, match=r"cannot reproduce retry_after_as='date'"):
        _fake_model("primary", _primary_with(dated), 0.1, None)
    dated_error = sy.faults.ErrorFault(429, 1.0, retry_after_s=2, retry_after_as="date")
    with pytest.raises(sy.ArgumentError, match=r"ErrorFault: FakeProvider cannot reproduce"):
        _fake_model("primary", _primary_with(sy.Faults(errors=[dated_error])), 0.1, None)


@pytest.mark.parametrize(
    ("faults", "named"),
    [
        (sy.Faults(non_chat=0.5), r"cannot reproduce non_chat=0.5"),
        (
            sy.Faults(errors=[sy.faults.ErrorFault(401, 0.2)]),
            r"cannot reproduce errors\[0\]=.*p=0.2",
        ),
        (
            sy.Faults(non_chat=1.0, fail_first=1, fail_first_status=500),
            r"takes one fault, this profile has \['not-chat', 'fail-500-once'\]",
        ),
        (
            sy.Faults(errors=[sy.faults.ErrorFault(402, 1.0)], fail_first=2),
            r"takes one fault, this profile has \['error-402', 'fail-429-x2'\]",
        ),
    ],
)
def test_non_chat_and_error_faults_a_fake_provider_cannot_reproduce_are_named(faults, named):
    with pytest.raises(sy.ArgumentError, match=named):
        _fake_model("primary", _primary_with(faults), 0.1, None)


def test_a_capacity_the_fake_provider_would_time_differently_is_named():
    profile = _primary_with(sy.Faults()).replace(capacity=sy.Capacity(slots=2))
    with pytest.raises(sy.ArgumentError, match=r"cannot reproduce capacity=Capacity\(slots=2"):
        _fake_model("primary", profile, 0.1, None)


def test_a_persistent_error_fault_with_retry_after_runs_over_http_as_in_simulation():
    overloaded = sy.Faults(errors=[sy.faults.ErrorFault(503, 1.0, retry_after_s=2.0)])
    host = SCENARIOS["S04"].host
    primary = host.profiles["primary"].replace(faults=overloaded)
    scenario = dataclasses.replace(
        SCENARIOS["S04"], host=host.replace(models={**host.profiles, "primary": primary})
    )
    simulated, http = scenario.run(), scenario.run_http()
    columns = ["model", "status", "http_status", "error_kind"]
    assert http.result.attempts[columns].equals(simulated.result.attempts[columns])
    assert simulated.result.attempts["http_status"].tolist() == [503, 503, 503, 200]
    retried = http.result.attempts["start_s"].iloc[1]
    assert Tolerance.http().near(retried, simulated.result.attempts["start_s"].iloc[1])


def test_tolerance_is_exact_by_default_and_scaled_over_http():
    exact = Tolerance()
    assert exact.near(2.0, 2.0) and not exact.near(2.0 + 1e-9, 2.0)
    assert exact.within(10.0, 10.0) and not exact.within(10.001, 10.0)
    http = Tolerance.http(1 / 50)
    assert http.at(66.0) == pytest.approx(1.32)
    assert http.near(0.045, 2.0) and not http.near(0.0, 2.0)  # 40 ms ± 14 ms
    assert http.within(0.21, 10.0) and not http.within(0.25, 10.0)
