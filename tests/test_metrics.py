"""Comparison metrics: bootstrap intervals, paired differences, the Pareto frontier."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pandas as pd
import pytest
from helpers import weak_strong_host

import sykit as sy
from sykit import strategies as st
from sykit._results.metrics import (
    BOOTSTRAP_SEED,
    bootstrap_mean_ci,
    bootstrap_mean_cis,
    pareto_frontier,
)


@pytest.fixture
def host():
    return weak_strong_host()


REQUESTS = [sy.Request(f"q{i}", id=i) for i in range(300)]


def test_bootstrap_interval_is_deterministic_and_brackets_the_mean():
    values = np.random.default_rng(3).normal(10, 2, size=500)
    low, high = bootstrap_mean_ci(values)
    assert low < values.mean() < high
    assert (low, high) == bootstrap_mean_ci(values)
    assert high - low == pytest.approx(2 * 1.96 * 2 / math.sqrt(500), rel=0.2)
    assert all(math.isnan(x) for x in bootstrap_mean_ci(np.array([1.0])))


def test_intervals_computed_together_are_each_the_one_computed_alone():
    """A summary bootstraps all its strategies at once (one resample matrix per sample size);
    each interval is still exactly the one its sample gives alone, whatever it came with."""
    rng = np.random.default_rng(5)
    samples = [
        rng.random(400),
        rng.normal(size=400),
        rng.random(37),
        np.array([2.0]),
        rng.random(400),
    ]
    samples[1][[3, 9]] = np.nan  # left out: this sample has 398 units
    together = bootstrap_mean_cis(samples)
    assert together == [bootstrap_mean_ci(s) for s in samples]
    assert together[2:] == bootstrap_mean_cis(samples[2:])
    assert all(math.isnan(x) for x in together[3])
    # the matrix product is the mean of the resampled values, as a loop over resamples takes it
    picks = np.random.default_rng(BOOTSTRAP_SEED).integers(0, 37, size=(1000, 37))
    means = samples[2][picks].mean(axis=1)
    assert together[2] == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])), rel=1e-12)


def test_a_comparisons_intervals_do_not_depend_on_the_other_strategies(host):
    both = sy.compare(
        {"weak": st.single("weak"), "strong": st.single("strong")}, REQUESTS, host=host
    )
    alone = sy.run(st.single("strong"), REQUESTS, host=host, strategy="strong").summary()
    row = both.summary().set_index("strategy").loc["strong"]
    assert (row["quality_ci_low"], row["quality_ci_high"]) == tuple(
        alone.iloc[0][["quality_ci_low", "quality_ci_high"]]
    )


def test_summary_has_quality_intervals_and_fallbacks_by_reason(host):
    async def to_strong(request, driver):
        return sy.route_to("strong", request, fallbacks=["weak"])

    policy_host = host.replace(policy=sy.HostPolicy(max_retries=0))
    summary = sy.run(to_strong, REQUESTS, host=policy_host).summary().iloc[0]
    assert summary["quality_ci_low"] < summary["mean_quality"] < summary["quality_ci_high"]
    assert summary["fallbacks_rate_limit"] == summary["fallbacks"] > 0
    assert summary["fallbacks_capability"] == 0


def test_paired_differences_against_a_baseline(host):
    cmp = sy.compare(
        {"weak": st.single("weak"), "strong": st.single("strong"), "again": st.single("weak")},
        REQUESTS,
        host=host,
        seeds=[0, 1],
    )
    paired = cmp.paired("weak").set_index("strategy")
    assert paired.loc["weak", "d_quality"] == 0.0
    assert paired.loc["again", ["d_quality_ci_low", "d_quality_ci_high"]].tolist() == [0.0, 0.0]
    # 300 requests, each averaged over its 2 seeds: the interval resamples requests, not rows
    assert paired.loc["again", "n_requests_quality"] == 300
    assert paired["seeds"].tolist() == [2, 2, 2]
    gain = paired.loc["strong"]
    assert gain["d_quality_ci_low"] > 0.3  # strong is right on every request weak is, and more
    assert gain["d_cost_usd"] > 0 and gain["d_latency_s"] > 0
    summary = cmp.summary(baseline="weak")
    assert summary["requests"].tolist() == [300] * 3 and summary["seeds"].tolist() == [2] * 3
    assert "d_quality" in summary.columns and summary["strategy"].tolist() == [
        "weak",
        "strong",
        "again",
    ]
    with pytest.raises(ValueError, match="baseline"):
        cmp.paired("nobody")


def test_pareto_frontier_keeps_only_undominated_points():
    points = pd.DataFrame(
        {
            "strategy": ["a", "b", "c", "d", "e"],
            "cost_per_request_usd": [1.0, 2.0, 2.0, 3.0, 0.5],
            "mean_quality": [0.5, 0.7, 0.6, 0.65, 0.4],
        }
    )
    frontier = pareto_frontier(points)
    assert frontier["strategy"].tolist() == ["e", "a", "b"]


def test_a_bound_is_never_on_the_pareto_frontier():
    points = pd.DataFrame(
        {
            "strategy": ["cheap", "good", "oracle", "mid"],
            "realizable": [True, True, False, True],
            "cost_per_request_usd": [1.0, 3.0, 1.5, 2.0],
            "mean_quality": [0.5, 0.8, 0.95, 0.6],
        }
    )
    # the oracle beats "mid" on both, but it read the truth: it neither joins nor shapes the frontier
    frontier = pareto_frontier(points)
    assert frontier["strategy"].tolist() == ["cheap", "mid", "good"]


def test_comparison_pareto_leaves_out_the_oracle(host):
    cmp = sy.compare(
        {
            "weak": st.single("weak"),
            "strong": st.single("strong"),
            "oracle": st.oracle(["weak", "strong"]),
        },
        REQUESTS[:50],
        host=host,
    )
    summary = cmp.summary().set_index("strategy")
    assert not summary.loc["oracle", "realizable"]
    assert summary.loc["oracle", "mean_quality"] >= summary["mean_quality"].max()
    assert cmp.pareto()["strategy"].tolist() == ["weak", "strong"]


def test_summary_reports_the_percentiles_asked_for(host):
    res = sy.run(st.single("strong"), REQUESTS, host=host)
    default = res.summary()
    assert [c for c in default.columns if c.startswith(("latency_p", "ttft_p"))] == [
        "latency_p50_s",
        "latency_p95_s",
        "latency_p99_s",
        "ttft_p50_s",
    ]
    table = res.summary(percentiles=[0.9, "p99.9"])
    latencies = res.requests.loc[res.requests["status"] == "ok", "latency_s"]
    assert table["latency_p90_s"].iloc[0] == pytest.approx(latencies.quantile(0.9))
    assert table["latency_p99.9_s"].iloc[0] == pytest.approx(latencies.quantile(0.999))
    assert "ttft_p99.9_s" in table and "latency_p50_s" not in table
    as_numpy = res.summary(percentiles=np.array([0.9], dtype=np.float32))
    assert as_numpy["latency_p90_s"].iloc[0] == pytest.approx(latencies.quantile(0.9), rel=1e-6)
    for bad in (1.5, 0, "p100", "ninety", [], True, float("nan")):
        with pytest.raises(sy.ArgumentError, match="percentile"):
            res.summary(percentiles=bad)


def test_summary_by_a_requests_column_gives_one_row_per_value(host):
    tagged = [
        sy.Request(f"q{i}", id=i, metadata={"tier": "pro" if i % 3 else "free"}) for i in range(90)
    ]
    cmp = sy.compare(
        {"strong": st.single("strong"), "fallback": st.fallback_chain(["strong", "weak"])},
        tagged,
        host=host,
        seeds=[0, 1],
    )
    table = cmp.summary(by="tier")
    assert list(table.columns[:2]) == ["strategy", "tier"]
    assert table[["strategy", "tier"]].values.tolist() == [
        ["strong", "free"],
        ["strong", "pro"],
        ["fallback", "free"],
        ["fallback", "pro"],
    ]
    assert table["requests"].tolist() == [30, 60, 30, 60]
    pro = cmp.requests[(cmp.requests["strategy"] == "fallback") & (cmp.requests["tier"] == "pro")]
    row = table.iloc[3]
    assert row["cost_usd"] == pytest.approx(pro["cost_usd"].sum())
    attempts = cmp.attempts
    fallback = attempts[(attempts["strategy"] == "fallback") & (attempts["status"] != "skipped")]
    attempts = fallback.merge(pro[["seed", "request_id"]], on=["seed", "request_id"])
    assert row["attempts_per_request"] == pytest.approx(len(attempts) / len(pro))
    per_seed = cmp.summary(by="seed")
    assert per_seed["seeds"].tolist() == [1, 1, 1, 1]
    with pytest.raises(sy.ArgumentError, match=r"choose from .*tier"):
        cmp.summary(by="tierr")
    with pytest.raises(sy.ArgumentError, match="baseline"):
        cmp.summary("strong", by="tier")


def test_summary_money_per_1k_requests_and_routing_errors(host):
    async def probe_then_route(request, driver):
        with contextlib.suppress(sy.RateLimitError):  # rate limited 10 % of the time
            await driver.call_model(request, ["strong"])
        return sy.route_to("weak", request)

    no_retries = host.replace(policy=sy.HostPolicy(max_retries=0))
    table = sy.run(probe_then_route, REQUESTS, host=no_retries).summary().iloc[0]
    assert table["cost_per_1k_requests_usd"] == pytest.approx(1000 * table["cost_per_request_usd"])
    res = sy.run(probe_then_route, REQUESTS, host=no_retries)
    routing = res.attempts[
        (res.attempts["phase"] == "routing") & (res.attempts["status"] == "error")
    ]
    summary = res.summary().iloc[0]
    # the probe's 429, then a call to weak: the algorithm's own fallback, not a routing error
    assert summary["fallbacks_rate_limit"] == summary["fallbacks"] == len(routing) > 0
    assert summary["routing_errors"] == 0


def test_a_comparison_with_several_seeds_asks_which_run_is_meant(host):
    cmp = sy.compare({"strong": st.single("strong")}, REQUESTS[:5], host=host, seeds=[3, 4])
    with pytest.raises(KeyError, match=r"2 seeds \[3, 4\].*cmp\['strong', 3\]"):
        cmp["strong"]
    assert cmp["strong", 4].seed == 4 and cmp.result("strong", seed=3).seed == 3
    with pytest.raises(KeyError, match="seeds: \\[3, 4\\]"):
        cmp.result("strong", seed=9)
    single = sy.compare({"strong": st.single("strong")}, REQUESTS[:5], host=host)
    assert single["strong"].seed == 0


def test_error_messages_are_categorical_in_both_frames(host):
    res = sy.run(
        st.single("strong"), REQUESTS[:50], host=host.replace(policy=sy.HostPolicy(max_retries=0))
    )
    assert isinstance(res.attempts["error_message"].dtype, pd.CategoricalDtype)
    assert isinstance(res.requests["error_message"].dtype, pd.CategoricalDtype)
    assert res.requests["error_message"].notna().any()


def _always_failing_host():
    return sy.SimHost(
        {"a": sy.ModelProfile(faults=sy.Faults(unavailable=1.0)), "b": sy.ModelProfile()},
        policy=sy.HostPolicy(max_retries=0, cooldown_s=0),
    )


def test_retries_an_algorithm_makes_as_new_calls_count_as_retries():
    """LiteLLM retries by calling the model again; so may any algorithm. The summary counts those
    retries and the outcomes name them, as they do the host's own."""
    from sykit._viz.outcomes import outcome_categories

    async def again_then_other(request, driver):
        for model in ("a", "a", "b"):
            try:
                return sy.answered(model, await driver.call_model(request, [model]))
            except sy.ModelError:
                continue
        raise AssertionError("b never fails")

    async def in_a_race(request, driver):  # a failure while the other call runs: no retry
        index, winner = await sy.first_ok(
            driver.call_model(request, ["a"]), driver.call_model(request, ["b"])
        )
        return sy.answered("ab"[index], winner)

    host = _always_failing_host()
    requests = [sy.Request(f"q{i}", id=i) for i in range(5)]
    result = sy.run(again_then_other, requests, host=host)
    row = result.summary().iloc[0]
    assert row["retries"] == 5 and row["attempts_per_request"] == 3
    outcomes = outcome_categories(result.attempts).groupby(result.attempts["call_id"]).first()
    assert outcomes.tolist() == ["retried", "fell back: unavailable", "ok"]  # a to b: a fallback

    litellm = sy.run(
        st.litellm_like(["a", "b"], num_retries=2, cooldown_time=0), requests[:1], host=host
    )
    assert outcome_categories(litellm.attempts).tolist() == [
        "retried",
        "retried",
        "fell back: unavailable",
        "ok",
    ]
    assert litellm.summary().iloc[0]["retries"] == 2

    raced = sy.run(in_a_race, requests[:1], host=host)
    assert raced.requests["status"].tolist() == ["ok"]
    assert sorted(outcome_categories(raced.attempts)) == ["failed", "ok"]
    assert raced.summary().iloc[0]["retries"] == 0
