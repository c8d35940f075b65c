"""Reproduce RouteLLM's published shape on its own evaluation table: a random router's cost-quality
curve is the straight line between the weak and the strong model (APGR ≈ 0.5), and the oracle
dominates every router."""

from __future__ import annotations

import numpy as np
import pytest

import sykit as sy
from sykit import strategies as st

STRONG = "gpt-4-1106-preview"
WEAK = "mixtral-8x7b-instruct-v0.1"
SHARES = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


@pytest.fixture(scope="module")
def host():
    return sy.SimHost(sy.profiles.from_catalog([STRONG, WEAK]))


@pytest.fixture(scope="module", params=["gsm8k", "mmlu"])
def benchmark_requests(request):
    data = sy.datasets.load("routellm").filter(benchmark=request.param, contaminated=False)
    return data.sample(800, seed=0) if len(data) > 800 else data


@pytest.fixture(scope="module")
def random_sweep(benchmark_requests, host):
    return sy.sweep(
        lambda p: st.weighted_random({WEAK: 1 - p, STRONG: p}, seed=0),
        SHARES,
        benchmark_requests,
        host=host,
        weak=WEAK,
        strong=STRONG,
        concurrency=64,
    )


def test_random_router_follows_the_straight_line(random_sweep, benchmark_requests):
    curve, refs = random_sweep.curve, random_sweep.references
    weak_q, strong_q = refs["weak"][1], refs["strong"][1]
    assert strong_q > weak_q  # GPT-4 beats Mixtral on both benchmarks
    line = weak_q + (strong_q - weak_q) * curve["strong_share"]
    # binomial sampling noise of a random 0/1 mix over this many requests
    noise = 3 * np.sqrt(0.25 / len(benchmark_requests))
    assert np.abs(curve["mean_quality"] - line).max() < noise
    assert curve["strong_share"].tolist() == pytest.approx(SHARES, abs=0.05)
    assert random_sweep.apgr() == pytest.approx(0.5, abs=0.06)


def test_oracle_dominates_every_router(random_sweep, benchmark_requests, host):
    score = st.simulated_score(WEAK, STRONG, noise=0.5)
    threshold = st.calibrate(score, benchmark_requests, 0.5)
    routers = (
        sy.compare(
            {
                "threshold": st.threshold_router(WEAK, STRONG, score=score, threshold=threshold),
                "oracle": st.oracle([WEAK, STRONG]),
            },
            benchmark_requests,
            host=host,
            concurrency=64,
        )
        .summary()
        .set_index("strategy")
    )
    oracle_cost, oracle_quality = random_sweep.references["oracle"]
    assert oracle_quality == pytest.approx(routers.loc["oracle", "mean_quality"])
    others = [
        *random_sweep.curve[["cost_per_request_usd", "mean_quality"]].itertuples(
            index=False, name=None
        ),
        random_sweep.references["weak"],
        random_sweep.references["strong"],
        tuple(routers.loc["threshold", ["cost_per_request_usd", "mean_quality"]]),
    ]
    for cost, quality in others:
        assert quality <= oracle_quality + 1e-12
        if (
            quality >= oracle_quality - 1e-12
        ):  # as good as the oracle only by paying at least as much
            assert cost >= oracle_cost - 1e-12
    # a learned-router stand-in beats the random mix at the same share (APGR above the line)
    line = random_sweep.references["weak"][1] + 0.5 * (
        random_sweep.references["strong"][1] - random_sweep.references["weak"][1]
    )
    assert routers.loc["threshold", "mean_quality"] > line
