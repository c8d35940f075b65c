"""litellm_like's load-aware routing strategies (least-busy, latency-based-routing,
usage-based-routing-v2) on a SimHost, against deployments that declare a capacity, so a busy one
really is slower. tests/test_litellm_conformance.py checks them against the real Router."""

from __future__ import annotations

import pandas as pd
import pytest

import sykit as sy
from sykit.strategies._litellm_routing import LoadState, RoutingArgs
from tests.helpers import constant_profile

st = sy.strategies


def takes(
    seconds: float, capacity: sy.Capacity | None = None, tokens: int = 100
) -> sy.ModelProfile:
    """A deployment that answers ``tokens`` tokens in ``seconds`` alone, first token at once."""
    return sy.ModelProfile(
        latency=sy.Latency(ttft=0.0, tokens_per_s=tokens / seconds),
        output_tokens=tokens,
        capacity=capacity,
    )


def group(*deployments: str, **params: dict) -> list[dict]:
    """A model_list of the group "a", each deployment with its extra litellm_params, and a
    fallback group "b"."""
    return [
        *(
            {"model_name": "a", "litellm_params": {"model": m, **params.get(m, {})}}
            for m in deployments
        ),
        {"model_name": "b", "litellm_params": {"model": "b"}},
    ]


def run(router, profiles: dict, arrivals: list[float], seed: int = 0, **kwargs) -> sy.Result:
    host = sy.SimHost(
        {"b": takes(0.1), **profiles}, policy=kwargs.pop("policy", None) or sy.HostPolicy()
    )
    requests = [sy.Request(f"q{i}", id=i) for i in range(len(arrivals))]
    return sy.run(router, requests, host=host, arrivals=arrivals, seed=seed, **kwargs)


def served(result: sy.Result) -> list[str]:
    return list(result.requests["served_model"])


def latencies(result: sy.Result) -> list[float]:
    return [round(x, 3) for x in result.requests["latency_s"]]


# -- settings -------------------------------------------------------------------------------------


def test_an_unknown_routing_strategy_lists_the_supported_ones():
    with pytest.raises(sy.ArgumentError) as caught:
        st.litellm_like(["a"], routing_strategy="lowest-latency")
    message = str(caught.value)
    assert "unknown routing_strategy 'lowest-latency'" in message
    for name in ("simple-shuffle", "least-busy", "latency-based-routing", "usage-based-routing-v2"):
        assert name in message
    with pytest.raises(sy.ArgumentError, match="usage-based-routing is not modelled"):
        st.litellm_like(["a"], routing_strategy="usage-based-routing")


def test_routing_strategy_args_are_checked_against_the_strategy():
    with pytest.raises(sy.ArgumentError, match=r"\['lowest_latency_buffer'\] are not read by"):
        st.litellm_like(["a"], routing_strategy_args={"lowest_latency_buffer": 1})
    with pytest.raises(sy.ArgumentError, match="ttft_percentile must be in"):
        st.litellm_like(
            ["a"],
            routing_strategy="latency-based-routing",
            routing_strategy_args={"ttft_percentile": 1.5},
        )
    with pytest.raises(sy.ArgumentError, match="lowest_latency_buffer"):
        st.litellm_like(
            ["a"],
            routing_strategy="latency-based-routing",
            routing_strategy_args={"lowest_latency_buffer": -1},
        )
    with pytest.raises(sy.ArgumentError, match="rpm"):
        st.litellm_like(
            model_list=group("a1", a1={"rpm": -2}), routing_strategy="usage-based-routing-v2"
        )


# -- least-busy -----------------------------------------------------------------------------------


def test_least_busy_routes_away_from_a_loaded_deployment():
    # a1 takes 3 s a call, a2 0.5 s, each one call at a time (a second one queues); a request
    # every 0.4 s. least-busy sends a call where fewer of its own calls are in flight, a tie to
    # a1 (listed first): a1 at 0 s, and again at 0.8 s (both busy), then a2 while a1 is busy.
    profiles = {
        "a1": takes(3.0, sy.Capacity(slots=1)),
        "a2": takes(0.5, sy.Capacity(slots=1)),
    }
    arrivals = [0.4 * i for i in range(10)]
    busy = run(
        st.litellm_like(model_list=group("a1", "a2"), routing_strategy="least-busy"),
        profiles,
        arrivals,
    )
    assert served(busy) == ["a1", "a2", "a1", "a2", "a2", "a2", "a2", "a2", "a1", "a2"]
    assert latencies(busy) == [3.0, 0.5, 5.2, 0.5, 0.6, 0.7, 0.8, 0.9, 5.8, 0.6]
    queued = [round(float(q), 3) for q in busy.attempts.sort_values("request_id")["queue_s"]]
    assert queued == [0.0, 0.0, 2.2, 0.0, 0.1, 0.2, 0.3, 0.4, 2.8, 0.1]
    shuffled = run(st.litellm_like(model_list=group("a1", "a2")), profiles, arrivals)
    assert served(shuffled).count("a1") == 4  # at random: a1's queue grows
    assert latencies(shuffled) == [0.5, 0.6, 3.0, 0.5, 0.6, 4.8, 7.4, 0.5, 9.6, 0.5]
    assert sum(latencies(busy)) == pytest.approx(18.6)
    assert sum(latencies(shuffled)) == pytest.approx(28.0)


def test_least_busy_counts_calls_until_they_end_and_draws_nothing():
    # equal deployments of 1 s, no capacity: overlapping requests alternate; at 2 s all are done
    profiles = {"a1": takes(1.0), "a2": takes(1.0)}
    router = st.litellm_like(model_list=group("a1", "a2"), routing_strategy="least-busy")
    for seed in (0, 1, 2):  # no random draw: the same for every seed
        result = run(router, profiles, [0.0, 0.2, 0.4, 0.6, 2.0], seed=seed)
        assert served(result) == ["a1", "a2", "a1", "a2", "a1"]


def test_least_busy_is_the_same_on_both_engines():
    profiles = {"a1": takes(3.0, sy.Capacity(slots=1)), "a2": takes(0.5, sy.Capacity(slots=2))}
    router = st.litellm_like(model_list=group("a1", "a2"), routing_strategy="least-busy")
    arrivals = [0.3 * i for i in range(12)]
    kernel = run(router, profiles, arrivals, engine="kernel", progress=False)
    on_asyncio = run(router, profiles, arrivals, engine="asyncio", progress=False)
    pd.testing.assert_frame_equal(kernel.attempts, on_asyncio.attempts)
    pd.testing.assert_frame_equal(kernel.requests, on_asyncio.requests)


# -- latency-based-routing ------------------------------------------------------------------------


def test_latency_based_moves_off_a_deployment_whose_queue_grows():
    # a1 serves one call at a time, a2 eight at full rate; alone both take 1 s. Two requests one
    # after the other, then one every 0.5 s. Seed 0 sends the first to a2; a1, not yet seen,
    # counts as 0 s and gets the next ones, and keeps them while its queue grows (a call counts
    # only once it has ended): its 0 s and its first 0.01 s a token keep it below a2's 0.01 s.
    # Once its queued calls end (1.5, 2, 2.5 s) its mean passes a2's and a2 takes every request.
    profiles = {
        "a1": takes(1.0, sy.Capacity(slots=1)),
        "a2": takes(1.0, sy.Capacity(slots=8, slowdown=8)),
    }
    router = st.litellm_like(model_list=group("a1", "a2"), routing_strategy="latency-based-routing")
    arrivals = [0.0, 2.0] + [2.0 + 0.5 * i for i in range(1, 13)]
    result = run(router, profiles, arrivals, seed=0)
    assert served(result) == ["a2"] + ["a1"] * 6 + ["a2"] * 7
    assert latencies(result) == [1.0, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5] + [1.0] * 7
    shuffled = run(st.litellm_like(model_list=group("a1", "a2")), profiles, arrivals, seed=0)
    assert served(shuffled).count("a1") == 7


def test_latency_based_picks_the_unseen_deployment_then_the_faster():
    profiles = {"a1": takes(0.3), "a2": takes(0.02)}
    router = st.litellm_like(model_list=group("a1", "a2"), routing_strategy="latency-based-routing")
    firsts = set()
    for seed in range(8):
        picks = served(run(router, profiles, [1.0 * i for i in range(6)], seed=seed))
        assert sorted(picks[:2]) == ["a1", "a2"]  # both unseen, then the other one
        assert picks[2:] == ["a2"] * 4
        firsts.add(picks[0])
    assert firsts == {"a1", "a2"}  # the first pick is a keyed draw


def test_latency_buffer_picks_at_random_within_it_the_same_way_for_a_seed():
    profiles = {"a1": takes(0.3), "a2": takes(0.02)}
    arrivals = [1.0 * i for i in range(20)]

    def picks(buffer: float, seed: int) -> list[str]:
        router = st.litellm_like(
            model_list=group("a1", "a2"),
            routing_strategy="latency-based-routing",
            routing_strategy_args={"lowest_latency_buffer": buffer},
        )
        return served(run(router, profiles, arrivals, seed=seed))

    # a1: 0.003 s a token, a2 0.0002. Seed 0 sends the first request to a2, so a1 is seen with a
    # stored 0: a mean of 0.0015, then 0.002, then 0.00225 as its answers come. Within 10x a2's
    # 0.0002 above the lowest (0.0022) it is picked at random until its mean passes that.
    assert picks(10, 0) == list(
        "21122122222222222222".replace("1", "a1 ").replace("2", "a2 ").split()
    )
    for seed in range(4):
        assert picks(0, seed)[2:] == ["a2"] * 18  # no buffer: the faster one only
    # with 50x both are always within it: a draw each time, keyed by the seed
    wide = [picks(50, seed) for seed in range(4)]
    assert wide[0] == picks(50, 0)
    assert len({tuple(p) for p in wide}) == 4
    assert all(p[2:].count("a1") >= 5 for p in wide)


def test_a_timeout_counts_1000_s_and_other_errors_nothing():
    # a1 never answers within the 0.5 s timeout: after its one timeout it is never picked again
    router = st.litellm_like(
        model_list=group("a1", "a2"),
        routing_strategy="latency-based-routing",
        num_retries=0,
        fallbacks={"a": ["b"]},
    )
    profiles = {"a1": takes(3.0), "a2": takes(0.02)}
    policy = sy.HostPolicy(timeout_s=0.5)
    for seed in range(4):  # seed 1 tries a1 first, the others a2 (then a1, unseen)
        result = run(router, profiles, [1.0 * i for i in range(8)], seed=seed, policy=policy)
        assert sorted(served(result)) == ["a2"] * 7 + ["b"]
        calls = result.attempts[result.attempts["model"] == "a1"]
        assert calls["error_kind"].tolist() == ["timeout"]
        assert served(result)[int(calls["request_id"].iloc[0])] == "b"
    # a 503 adds no sample: a1 stays at the 0 it got when first seen, so it is picked every time
    profiles = {"a1": constant_profile(0.01, 16, 2000.0, faults=sy.Faults(unavailable=1.0))}
    profiles["a2"] = takes(0.02)
    result = run(router, profiles, [1.0 * i for i in range(4)], seed=0)  # a2 first
    assert served(result) == ["a2", "b", "b", "b"]
    assert (result.attempts[result.attempts["model"] == "a1"]["request_id"] == [1, 2, 3]).all()


def test_a_stream_is_routed_by_its_time_to_first_token():
    # a1: first token after 0.25 s, 100 tokens at 1000/s (0.35 s in all); a2: first token after
    # 0.02 s, 100 tokens at 100/s (1.02 s). Seconds a token favour a1, the first token a2.
    profiles = {
        "a1": sy.ModelProfile(latency=sy.Latency(ttft=0.25, tokens_per_s=1000), output_tokens=100),
        "a2": sy.ModelProfile(latency=sy.Latency(ttft=0.02, tokens_per_s=100), output_tokens=100),
    }
    arrivals = [2.0 * i for i in range(6)]
    for stream, faster in ((True, "a2"), (False, "a1")):
        router = st.litellm_like(
            model_list=group("a1", "a2"), routing_strategy="latency-based-routing", stream=stream
        )
        picks = served(run(router, profiles, arrivals, seed=0))
        assert sorted(picks[:2]) == ["a1", "a2"]
        assert picks[2:] == [faster] * 4


def test_ttft_percentile_picks_by_a_percentile_of_the_first_tokens():
    # a1's first tokens: 0.1 s three times, 0.9 s once (mean 0.3, median 0.1); a2's 0.2 s
    def pick(percentile: float | None, stream: bool = True) -> list[str]:
        load = LoadState("latency-based-routing", RoutingArgs(ttft_percentile=percentile), {})
        for ttft in (0.1, 0.1, 0.1, 0.9):
            load.succeeded("a", "a1", 0.0, 1.0, ttft, 10, 15)
        for _ in range(4):
            load.succeeded("a", "a2", 0.0, 0.5, 0.2, 10, 15)
        return load.choices("a", ["a1", "a2"], 0.0, 5, stream)

    assert pick(None) == ["a2"]  # the mean
    assert pick(0.5) == ["a1"]  # the median
    assert pick(1.0) == ["a2"]  # the slowest
    assert pick(0.5, stream=False) == ["a2"]  # not a stream: seconds a token (0.1 vs 0.05)


# -- usage-based-routing-v2 ------------------------------------------------------------------------


def test_usage_v2_keeps_each_deployment_below_its_rpm_then_falls_back():
    # rpm 2 lets one call a minute through, rpm 3 two; then no deployment is left: no call, a
    # skipped row each, and the fallback. A new minute starts the counts again.
    router = st.litellm_like(
        model_list=group("a1", "a2", a1={"rpm": 2}, a2={"rpm": 3}),
        routing_strategy="usage-based-routing-v2",
        num_retries=0,
        fallbacks={"a": ["b"]},
    )
    profiles = {"a1": takes(0.1), "a2": takes(0.1)}
    result = run(router, profiles, [0.5 * i for i in range(5)] + [60.0, 60.5], seed=0)
    picks = served(result)
    assert sorted(picks[:3]) == ["a1", "a2", "a2"]
    assert picks[3:5] == ["b", "b"]
    assert sorted(picks[5:]) == ["a1", "a2"]
    skipped = result.attempts[result.attempts["status"] == "skipped"]
    assert sorted(zip(skipped["request_id"], skipped["model"], strict=True)) == [
        (3, "a1"),
        (3, "a2"),
        (4, "a1"),
        (4, "a2"),
    ]
    assert skipped["error_message"].str.contains("over its tpm inf or rpm 2").sum() == 2


def test_usage_v2_picks_the_fewest_tokens_this_minute_within_tpm():
    # a1 answers 64 tokens, a2 16; each request has 5 input tokens ("q0"...): 69 and 21 a call
    router = st.litellm_like(
        model_list=group("a1", "a2"), routing_strategy="usage-based-routing-v2", num_retries=0
    )
    profiles = {"a1": takes(0.1, tokens=64), "a2": takes(0.1, tokens=16)}
    arrivals = [0.5 * i for i in range(8)]
    assert sy.Request("q0").input_tokens == 5
    # whichever comes first, the other is next (0 tokens); then a2 (21, 42, 63) until it passes
    # a1's 69 (84), then a1 (138), then a2 (105, 126)
    for seed in range(4):
        picks = served(run(router, profiles, arrivals, seed=seed))
        assert sorted(picks[:2]) == ["a1", "a2"]
        assert picks[2:] == ["a2", "a2", "a2", "a1", "a2", "a2"]
    # tpm 73: once a1 has answered (69), 69 + 5 input tokens would pass it
    limited = st.litellm_like(
        model_list=group("a1", "a2", a1={"tpm": 73}),
        routing_strategy="usage-based-routing-v2",
        num_retries=0,
    )
    for seed in range(4):
        picks = served(run(limited, profiles, arrivals, seed=seed))
        assert picks.count("a1") == 1
