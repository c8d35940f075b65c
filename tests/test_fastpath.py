"""The fixed-chain fast path gives the frames the general path gives."""

from __future__ import annotations

import pandas as pd
import pytest

import sykit as sy
from sykit._run.engines.fastpath import fixed_chain


def general(algorithm):
    """The same strategy, hidden from the fast path behind an ordinary algorithm."""

    async def wrapped(request, driver):
        return await algorithm(request, driver)

    return wrapped


def host() -> sy.SimHost:
    flaky = sy.ModelProfile(
        price_in=1.0,
        price_out=2.0,
        latency=sy.Latency(
            ttft=sy.dists.LogNormal(0.5, p95=2.0), tokens_per_s=sy.dists.Uniform(40, 90)
        ),
        faults=sy.Faults(
            rate_limit=0.08,
            retry_after_s=0.5,
            unavailable=0.05,
            timeout=0.02,
            reset=0.02,
            cut_stream=0.03,
            malformed=0.02,
            policy=0.01,
            spike_p=0.05,
            outages=[(20.0, 35.0)],
        ),
        rate_limit=sy.faults.RateLimit(requests_per_min=400),
        context_window=2_000,
    )
    steady = sy.ModelProfile(price_in=3.0, price_out=9.0, vision=True, context_window=100_000)
    return sy.SimHost(
        {"flaky": flaky, "steady": steady},
        policy=sy.HostPolicy(max_retries=1, cooldown_s=3.0, timeout_s=20.0),
    )


def requests(n: int) -> list[sy.Request]:
    out = []
    for i in range(n):
        images = ["https://example.com/a.png"] if i % 13 == 0 else []
        tokens = 3_000 if i % 17 == 0 else 50 + i % 300
        out.append(sy.Request(f"q{i}", id=f"r{i}", images=images, input_tokens=tokens))
    return out


@pytest.mark.parametrize(
    "strategy",
    [
        sy.strategies.single("flaky"),
        sy.strategies.fallback_chain(["flaky", "steady"]),
        sy.strategies.fallback_chain(["steady", "flaky"]),
    ],
    ids=["single", "fallback", "fallback-reversed"],
)
@pytest.mark.parametrize("arrivals", [None, sy.traffic.Poisson(12.0)], ids=["closed", "open"])
def test_the_fast_path_gives_the_general_paths_frames(strategy, arrivals):
    assert fixed_chain(strategy) is not None and fixed_chain(general(strategy)) is None
    reqs = requests(400)
    for seed in (0, 3):
        run = {"host": host(), "seed": seed, "arrivals": arrivals, "strategy": "s"}
        if arrivals is None:
            run["concurrency"] = 16
        fast = sy.run(strategy, reqs, **run)
        slow = sy.run(general(strategy), reqs, engine="kernel", **run)
        assert fast.engine == slow.engine == "kernel"
        pd.testing.assert_frame_equal(fast.attempts, slow.attempts)
        pd.testing.assert_frame_equal(fast.requests, slow.requests)
        # the workload really exercises the loop: errors, retries, and fallbacks when it can
        assert (fast.attempts["status"] == "error").any()
        if fixed_chain(strategy)[0] == "flaky":
            assert fast.attempts["retried"].any()
            if len(fixed_chain(strategy)) > 1:
                assert fast.attempts["fallback_reason"].notna().any()
                assert (fast.attempts["status"] == "skipped").any()


def test_a_fixed_chain_naming_an_unknown_model_takes_the_general_path_and_fails_loudly():
    with pytest.warns(sy.AlgorithmWarning, match="unknown model 'nope'"):
        result = sy.run(sy.strategies.single("nope"), ["q"], host=host())
    assert result.requests["error_kind"].tolist() == ["unknown_model"]
