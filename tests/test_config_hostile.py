"""Hostile configuration values: each is refused where it is written, naming the field and the
fix, or runs to frames of finite, non-negative numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sykit as sy


async def _route(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    return sy.route_to("m", request)


async def _decide_then_route(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    question = sy.DecisionRequest({"hard": sy.Boolean("Is this hard?")}, context=request.prompt)
    await driver.call_decision(question, "m")
    return sy.route_to("m", request)


def _run(profile: sy.ModelProfile, algorithm=_route, k: int = 4, **host: object) -> sy.Result:
    requests = [sy.Request(f"q{i}") for i in range(k)]
    return sy.run(algorithm, requests, host=sy.SimHost({"m": profile}, **host))


def _finite(result: sy.Result) -> None:
    for frame in (result.requests, result.attempts):
        for column in frame.columns:
            if frame[column].dtype.kind == "f":
                values = frame[column].dropna().to_numpy()
                assert np.isfinite(values).all(), column
                assert (values >= 0).all(), column


# -- seconds: deadlines, waits and pauses ---------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["timeout_s", "backoff_initial_s", "backoff_max_s", "retry_after_cap_s"]
)
def test_policy_seconds_beyond_the_longest_span_are_refused(field):
    with pytest.raises(sy.ArgumentError, match=rf"{field} must be ≤ 1e10 seconds"):
        sy.HostPolicy(**{field: 1e300})


def test_a_huge_backoff_is_refused_rather_than_failing_the_run_with_nan():
    with pytest.raises(sy.ArgumentError, match="backoff_initial_s"):
        sy.HostPolicy(backoff_initial_s=1e308, backoff_max_s=1e308)


def test_the_longest_timeout_keeps_latencies_finite():
    profile = sy.ModelProfile(latency=sy.Latency(ttft=1e308))
    result = _run(profile, policy=sy.HostPolicy(timeout_s=1e10, max_retries=0))
    _finite(result)
    assert result.attempts["latency_s"].max() == pytest.approx(1e10)


def test_a_huge_stall_is_refused_rather_than_overflowing_the_billing():
    with pytest.raises(sy.ArgumentError, match="stall_s must be ≤ 1e10 seconds"):
        sy.Faults(stall_p=1.0, stall_s=1e308)


@pytest.mark.parametrize("seconds", [2.6e11, 1e20])
def test_a_date_retry_after_beyond_the_year_9999_is_refused(seconds):
    with pytest.raises(sy.ArgumentError, match="retry_after_s must be ≤ 1e10"):
        sy.Faults(rate_limit=1.0, retry_after_s=seconds, retry_after_as="date")
    with pytest.raises(sy.ArgumentError, match="ErrorFault retry_after_s must be ≤ 1e10"):
        sy.faults.ErrorFault(429, 1.0, retry_after_s=seconds, retry_after_as="date")


def test_the_longest_date_retry_after_runs():
    faults = sy.Faults(rate_limit=1.0, retry_after_s=1e10, retry_after_as="date")
    assert faults.retry_after_headers(now_s=0)["retry-after"].endswith("GMT")
    _finite(_run(sy.ModelProfile(faults=faults), policy=sy.HostPolicy(max_retries=1)))


# -- arrivals ---------------------------------------------------------------------------------


def test_a_poisson_rate_too_low_for_the_clock_is_refused_where_it_is_written():
    with pytest.raises(sy.ArgumentError, match="rate_per_s must be ≥ 1e-10"):
        sy.traffic.Poisson(1e-300)
    assert sy.traffic.Poisson(1e-10).rate_per_s == 1e-10


# -- prices and token counts ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["price_in", "price_out"])
def test_a_price_that_makes_costs_infinite_is_refused(field):
    with pytest.raises(sy.ArgumentError, match=rf"{field} must be ≤ 1e12 USD per 1M tokens"):
        sy.ModelProfile(**{field: 1e308})


def test_a_cache_price_that_makes_costs_infinite_is_refused():
    with pytest.raises(sy.ArgumentError, match="read_price must be ≤ 1e12"):
        sy.profiles.PromptCache(read_price=1e300)


def test_the_highest_price_keeps_costs_finite():
    _finite(_run(sy.ModelProfile(price_in=1e12, price_out=1e12)))


def test_a_judge_answer_longer_than_the_records_count_is_refused():
    with pytest.raises(sy.ArgumentError, match=r"output_tokens must be an int from 0 to 2\*\*31"):
        sy.Judge(output_tokens=10**30)


def test_the_longest_judge_answer_is_billed_in_full():
    judge = sy.Judge(output_tokens=2**31 - 1)
    policy = sy.HostPolicy(bill_cancelled="full", max_retries=0)
    result = _run(sy.ModelProfile(), _decide_then_route, k=2, judge=judge, policy=policy)
    decisions = result.attempts[result.attempts["kind"] == "decision"]
    assert (decisions["output_tokens"] == 2**31 - 1).all()


# -- capacity -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sharing", ["at_start", "exact"])
def test_a_small_measured_factor_after_a_large_one_is_kept(sharing):
    capacity = sy.Capacity(slots=3, slowdown=[(1, 1.0), (2, 1e-20)], sharing=sharing)
    assert capacity.factor(2) == 1e-20
    _finite(_run(sy.ModelProfile(capacity=capacity), k=5))


def test_interpolated_factors_stay_between_their_points():
    capacity = sy.Capacity(slots=8, slowdown=[(1, 1.0), (2**53, 1e-300)])
    assert all(0 < f <= 1.0 for f in capacity.factors())


def test_a_slowdown_point_beyond_any_count_is_refused():
    with pytest.raises(sy.ArgumentError, match=r"slowdown\[1\] n must be an int from 1 to 2\*\*53"):
        sy.Capacity(slots=2, slowdown=[(1, 1.0), (10**400, 0.5)])


# -- the catalogue ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("odd", "plain"),
    [
        ("Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b-instruct-v0.1"),
        ("Claude-3-5-Haiku", "claude-3-5-haiku"),
    ],
)
def test_aliases_and_undated_names_resolve_in_any_case_as_keys_do(odd, plain):
    assert sy.profiles.from_catalog([odd])[odd] == sy.profiles.from_catalog([plain])[plain]


@pytest.mark.parametrize("name", [" gpt-4o", "gpt-4o\n"])
def test_a_name_with_whitespace_around_it_says_so(name):
    with pytest.raises(sy.ArgumentError, match="remove the whitespace around it: 'gpt-4o'"):
        sy.profiles.from_catalog([name])


@pytest.mark.parametrize("limit", ["3", 2.5, True])
def test_search_refuses_a_limit_that_is_not_an_int(limit):
    with pytest.raises(sy.ArgumentTypeError, match="limit must be an int ≥ 0"):
        sy.profiles.search("gpt", limit=limit)


def test_search_refuses_a_negative_limit():
    with pytest.raises(sy.ArgumentError, match="limit must be an int ≥ 0"):
        sy.profiles.search("gpt", limit=-1)


@pytest.mark.parametrize("profiles", [["m"], {"m": 1}])
def test_with_faults_names_what_is_not_a_profile(profiles):
    with pytest.raises(sy.ArgumentTypeError, match=r"sy\.ModelProfile"):
        sy.profiles.with_faults(profiles, sy.Faults())


def test_with_faults_of_no_profiles_is_none():
    assert sy.profiles.with_faults({}, sy.Faults()) == {}


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ("123456", "ttft_s must be a list of numbers"),
        (None, "ttft_s must be a list of numbers"),
        (["1"] * 6, r"ttft_s\[0\] must be a number, got str"),
        ([True] * 6, r"ttft_s\[0\] must be a number, got bool"),
        (np.ones((6, 2)), r"ttft_s\[0\] must be a number, got ndarray"),
    ],
)
def test_fit_latency_refuses_samples_that_are_not_numbers(samples, message):
    with pytest.raises(sy.ArgumentTypeError, match=message):
        sy.profiles.fit_latency(samples, [50.0] * 6)


def test_fit_latency_still_drops_failed_measurements():
    ttft = (x for x in [0.4, 0.5, math.nan, 0.6, 0.5, 0.7])
    latency = sy.profiles.fit_latency(ttft, np.array([40.0, 50, 60, 55, 45]))
    assert latency.ttft.median == pytest.approx(0.5)


def test_arrival_times_past_the_longest_span_are_refused():
    """An arrival at 1e20 s ran, with its latencies rounded away (the clock's steps there are
    16,384 s); the longest span any setting may take bounds arrivals too."""
    host = sy.SimHost({"m": sy.ModelProfile()})

    async def alg(request, driver):
        return sy.route_to("m", request)

    with pytest.raises(sy.ArgumentError, match=r"arrivals\[1\] must be ≤ 1e10 seconds"):
        sy.run(alg, [sy.Request("a"), sy.Request("b")], host=host, arrivals=[0.0, 1e20])
    result = sy.run(alg, [sy.Request("a"), sy.Request("b")], host=host, arrivals=[0.0, 1e10])
    assert (result.requests["status"] == "ok").all()


def test_a_call_cancelled_in_a_stall_of_a_very_fast_model_is_billed_its_first_half():
    """Tokens produced by the cancel: elapsed × 1e300 tokens/s overflowed an int (the whole run
    failed with OverflowError); it is the tokens before the stall, as for any speed."""
    latency = sy.Latency(ttft=0.5, tokens_per_s=1e300)
    stalling = sy.Faults(stall_p=1.0, stall_s=1e9)
    profile = sy.ModelProfile(latency=latency, output_tokens=100, faults=stalling)
    host = sy.SimHost({"m": profile}, policy=sy.HostPolicy(timeout_s=2e9))

    async def alg(request, driver):
        await sy.timeout(0.6e9, driver.call_model(request, ["m"]))
        return sy.route_to("m", request)

    result = sy.run(alg, [sy.Request("x")], host=host, strict=True)
    rows = result.attempts[["status", "output_tokens"]].to_dict("records")
    assert rows == [
        {"status": "cancelled", "output_tokens": 50},
        {"status": "ok", "output_tokens": 100},
    ]
