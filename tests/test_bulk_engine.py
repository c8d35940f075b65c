"""The bulk engine: runs of fixed chains and static routers evaluated column-wise, with records
identical to the event engines' (``assert_frame_equal``, no tolerance), chosen automatically and
visibly, refused (with the reason) where requests depend on one another.

``SYKIT_PROPERTY_EXAMPLES`` sets the number of examples of the property test (default 100).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import pandas.testing as pdt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sykit as sy
from sykit._run.engines.bulk import _run
from sykit._world.faults import RANDOM_FAULTS
from sykit.strategies._litellm import _LiteLLMLike as LiteLLMLike

EXAMPLES = int(os.environ.get("SYKIT_PROPERTY_EXAMPLES", "100"))
IMAGE = "https://example.com/x.png"


def same_frames(one: sy.Result, two: sy.Result) -> None:
    pdt.assert_frame_equal(one.attempts, two.attempts, check_exact=True)
    pdt.assert_frame_equal(one.requests, two.requests, check_exact=True)


def run(algorithm: Any, requests: Any, **kwargs: Any) -> sy.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        return sy.run(algorithm, requests, progress=False, **kwargs)


def faulty_host(**policy: Any) -> sy.SimHost:
    """Every random fault (HTTP errors, timeouts, resets, cut and malformed streams, non-chat
    answers, a profile's own errors), with spikes and stalls, and structural refusals."""
    latency = sy.Latency(
        ttft=sy.dists.LogNormal(0.4, sigma=0.6), tokens_per_s=sy.dists.Uniform(40, 160)
    )
    faults = sy.Faults(
        rate_limit=0.05,
        unavailable=0.05,
        timeout=0.02,
        policy=0.03,
        invalid=0.01,
        reset=0.02,
        cut_stream=0.02,
        malformed=0.02,
        non_chat=0.01,
        retry_after_s=0.7,
        spike_p=0.1,
        stall_p=0.05,
        errors=[
            sy.faults.ErrorFault.capability(0.03),
            sy.faults.ErrorFault(503, 0.02, retry_after_s=0.3),
        ],
    )
    weak = sy.ModelProfile(
        latency=latency,
        output_tokens=sy.dists.LogNormal(80, p95=400),
        price_in=0.2,
        price_out=0.8,
        faults=faults,
        reject_delay_s=sy.dists.Uniform(0.01, 0.2),
        context_window=2_000,
        tools=False,
    )
    strong = sy.ModelProfile(
        latency=latency,
        output_tokens=120,
        price_in=3.0,
        price_out=15.0,
        vision=True,
        faults=sy.Faults(unavailable=0.02, timeout=0.01),
        prefill=False,
    )
    policy.setdefault("cooldown_s", 0.0)
    return sy.SimHost({"weak": weak, "strong": strong}, policy=sy.HostPolicy(**policy))


def mixed_requests(n: int) -> list[sy.Request]:
    """Plain requests, and some with images, tools, long contexts, an assistant prefill, a cap."""
    out = []
    for i in range(n):
        kind = i % 9
        out.append(
            sy.Request(
                [{"role": "user", "content": f"q{i}"}]
                + ([{"role": "assistant", "content": "Sure,"}] if kind == 5 else []),
                id=i,
                input_tokens=3_000 if kind == 3 else 100 + i % 50,
                images=[IMAGE] if kind == 1 else [],
                tools=[{"type": "function", "function": {"name": "f"}}] if kind == 2 else [],
                max_output_tokens=30 if kind == 4 else None,
                metadata={"lane": "x" if kind % 2 else "y"},
            )
        )
    return out


async def static_with_evidence(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    driver.evidence(length=len(request.prompt))
    if request.images:
        return sy.route_to("strong", request, fallbacks=["weak"])
    return sy.route_to("weak", request, fallbacks=["strong"])


STRATEGIES = {
    "chain": sy.strategies.fallback_chain(["weak", "strong"]),
    "single": sy.strategies.single("weak"),
    "random": sy.strategies.weighted_random({"weak": 0.6, "strong": 0.4}),
    "threshold": sy.strategies.threshold_router(
        "weak", "strong", score=lambda r: (r.input_tokens % 7) / 7, threshold=0.5
    ),
    "static fn": sy.strategies.static(
        lambda r: ["strong", "weak"] if r.tools else "weak", name="static fn"
    ),
    "static async": sy.strategies.static(static_with_evidence),
    "capability": sy.strategies.capability_aware(["weak", "strong"], vision=["strong"]),
    "litellm": sy.strategies.litellm_like(["weak", "strong"]),
    "litellm, no retries": sy.strategies.litellm_like(
        ["strong", "weak"], num_retries=0, retry_after="any"
    ),
}

LOOPS = {
    "closed": {"concurrency": 7},
    "poisson": {"arrivals": sy.traffic.Poisson(20.0)},
    "poisson, 3 slots": {"arrivals": sy.traffic.Poisson(20.0), "concurrency": 3},
    "same instant": {"arrivals": [0.0] * 60 + [1.5] * 60, "concurrency": 5},
}


@pytest.mark.parametrize("loop", list(LOOPS))
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_bulk_frames_equal_the_kernels(name, loop):
    requests = mixed_requests(120)
    host = faulty_host(max_retries=2, timeout_s=3.0)
    kwargs = {"host": host, "seed": 11, "strategy": name, **LOOPS[loop]}
    bulk = run(STRATEGIES[name], requests, **kwargs)
    kernel = run(STRATEGIES[name], requests, engine="kernel", **kwargs)
    assert (bulk.engine, kernel.engine) == ("bulk", "kernel")
    same_frames(bulk, kernel)
    assert bulk.attempts["status"].eq("error").any()  # the faults were met, not avoided


@pytest.mark.parametrize("name", ["chain", "static fn", "litellm"])
def test_requests_a_model_cannot_take_are_refused_column_wise(exact_calls, name):
    """Images without vision, tools a model lacks, an overflowing context and a refused prefill
    are 400s the host answers at once: planned with the waves, not the exact way, and recorded
    as the event engines record them (each wording, each fallback reason)."""
    weak = sy.ModelProfile(output_tokens=40, context_window=2_000, tools=False, price_in=1.0)
    strong = sy.ModelProfile(output_tokens=60, vision=True, prefill=False, price_in=2.0)
    host = sy.SimHost({"weak": weak, "strong": strong}, policy=sy.HostPolicy(cooldown_s=0))
    requests = mixed_requests(90)
    kwargs = {"host": host, "seed": 5, "strategy": name, "concurrency": 4}
    bulk = run(STRATEGIES[name], requests, **kwargs)
    kernel = run(STRATEGIES[name], requests, engine="kernel", **kwargs)
    assert bulk.engine == "bulk" and exact_calls == []
    same_frames(bulk, kernel)
    refused = bulk.attempts[bulk.attempts["http_status"] == 400]
    assert refused["error_message"].nunique() >= 2  # capability phrasings, overflow counts, prefill
    if name == "chain":
        assert set(refused["fallback_reason"].dropna()) == {"capability", "context_window"}


@pytest.fixture
def exact_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions of the requests the bulk engine runs the exact way, as it runs them."""
    calls: list[int] = []
    original = _run._Bulk._exact

    def counted(self: Any, index: int, *args: Any) -> float:
        calls.append(index)
        return original(self, index, *args)

    monkeypatch.setattr(_run._Bulk, "_exact", counted)
    return calls


@pytest.mark.parametrize("bill_cancelled", ["generated", "full", "none"])
@pytest.mark.parametrize("name", ["chain", "threshold", "litellm"])
def test_timeouts_are_planned_column_wise_and_billed_as_the_events_bill_them(
    exact_calls, name, bill_cancelled
):
    """A timeout fault and an answer that would end after the deadline (spiked, stalled or
    long) both end at ``start + timeout_s``; the answer under way is billed for what it produced
    by then. Planned with the waves and timed as each request is placed: no request goes the
    exact way, and the frames are the kernel's."""
    latency = sy.Latency(
        ttft=sy.dists.LogNormal(0.5, sigma=0.9), tokens_per_s=sy.dists.Uniform(20, 90)
    )
    faults = sy.Faults(timeout=0.1, unavailable=0.05, spike_p=0.2, stall_p=0.2, stall_s=1.5)
    weak = sy.ModelProfile(
        latency=latency, output_tokens=sy.dists.LogNormal(60, p95=300), faults=faults, price_out=2.0
    )
    strong = sy.ModelProfile(latency=latency, output_tokens=90, faults=sy.Faults(timeout=0.05))
    policy = sy.HostPolicy(
        timeout_s=2.5, max_retries=1, cooldown_s=0, bill_cancelled=bill_cancelled
    )
    host = sy.SimHost({"weak": weak, "strong": strong}, policy=policy)
    requests = [sy.Request(f"q{i}", id=i, input_tokens=50 + i % 40) for i in range(200)]
    kwargs = {"host": host, "seed": 3, "strategy": name, "arrivals": sy.traffic.Poisson(30.0)}
    bulk = run(STRATEGIES[name], requests, concurrency=6, **kwargs)
    kernel = run(STRATEGIES[name], requests, concurrency=6, engine="kernel", **kwargs)
    assert bulk.engine == "bulk" and exact_calls == []
    same_frames(bulk, kernel)
    timeouts = bulk.attempts[bulk.attempts["error_kind"] == "timeout"]
    assert len(timeouts) > 10
    billed = timeouts["output_tokens"] > 0  # answers under way when the deadline came
    assert billed.any() == (bill_cancelled != "none")
    assert (bulk.requests["wasted_usd"] > 0).any() == (bill_cancelled != "none")


@pytest.mark.parametrize("name", ["chain", "litellm"])
def test_resets_and_non_chat_answers_are_planned_column_wise(exact_calls, name):
    """A dropped connection and a 200 whose JSON is no chat completion come after the rejection
    delay, as error answers do: planned with the waves, recorded as the event engines record
    them."""
    faults = sy.Faults(reset=0.15, non_chat=0.1, unavailable=0.05)
    weak = sy.ModelProfile(faults=faults, reject_delay_s=sy.dists.Uniform(0.05, 0.3))
    strong = sy.ModelProfile(faults=sy.Faults(reset=0.1))
    host = sy.SimHost({"weak": weak, "strong": strong}, policy=sy.HostPolicy(cooldown_s=0))
    requests = [sy.Request(f"q{i}", id=i) for i in range(150)]
    kwargs = {"host": host, "seed": 8, "strategy": name, "concurrency": 5}
    bulk = run(STRATEGIES[name], requests, **kwargs)
    kernel = run(STRATEGIES[name], requests, engine="kernel", **kwargs)
    assert bulk.engine == "bulk" and exact_calls == []
    same_frames(bulk, kernel)
    messages = set(bulk.attempts["error_message"].dropna())
    assert any("connection reset" in m for m in messages)
    assert any("chat completion" in m for m in messages)


@pytest.mark.parametrize("break_after", [None, 0, 4])
@pytest.mark.parametrize("bill_cancelled", ["generated", "full"])
@pytest.mark.parametrize("name", ["chain", "litellm"])
def test_broken_streams_are_planned_column_wise_and_billed_for_what_they_produced(
    exact_calls, name, bill_cancelled, break_after
):
    """A stream cut part-way (a 502) or sending a malformed chunk ends at its break and is billed
    for the tokens it produced, a malformed first chunk at the first token with nothing billed:
    planned with the waves and billed as each request is placed, as the event engines bill."""
    latency = sy.Latency(
        ttft=sy.dists.LogNormal(0.4, sigma=0.5), tokens_per_s=sy.dists.Uniform(30, 90)
    )
    faults = sy.Faults(
        cut_stream=0.15,
        malformed=0.15,
        unavailable=0.05,
        spike_p=0.2,
        stall_p=0.3,
        stall_s=0.7,
        break_after_tokens=break_after,
    )
    weak = sy.ModelProfile(
        latency=latency, output_tokens=sy.dists.LogNormal(50, p95=200), faults=faults, price_out=2.0
    )
    strong = sy.ModelProfile(
        latency=latency, output_tokens=40, faults=sy.Faults(cut_stream=0.1), price_out=5.0
    )
    policy = sy.HostPolicy(
        timeout_s=30.0, max_retries=1, cooldown_s=0, bill_cancelled=bill_cancelled
    )
    host = sy.SimHost({"weak": weak, "strong": strong}, policy=policy)
    requests = [sy.Request(f"q{i}", id=i, input_tokens=40 + i % 30) for i in range(200)]
    kwargs = {"host": host, "seed": 6, "strategy": name, "concurrency": 6}
    bulk = run(STRATEGIES[name], requests, **kwargs)
    kernel = run(STRATEGIES[name], requests, engine="kernel", **kwargs)
    assert bulk.engine == "bulk" and exact_calls == []
    same_frames(bulk, kernel)
    messages = bulk.attempts["error_message"].dropna()
    assert messages.str.contains("ended early after").any()
    assert messages.str.contains("malformed stream chunk").any()
    broken = bulk.attempts[messages.reindex(bulk.attempts.index).str.contains("after", na=False)]
    assert (broken["output_tokens"] > 0).all() and (broken["cost_usd"] > 0).all()


def test_a_malformed_first_chunk_after_the_deadline_goes_the_exact_way(exact_calls):
    """A malformed first chunk that would come after the deadline is a timeout or the chunk's
    error depending on how the start rounds: that request goes the exact way, with the same
    records."""
    latency = sy.Latency(ttft=sy.dists.Constant(1.5), tokens_per_s=50.0)
    profile = sy.ModelProfile(latency=latency, faults=sy.Faults(malformed=0.5), price_in=1.0)
    policy = sy.HostPolicy(timeout_s=1.0, max_retries=0, cooldown_s=0)
    host = sy.SimHost({"a": profile, "b": sy.ModelProfile()}, policy=policy)
    requests = [sy.Request("x", id=i, input_tokens=10) for i in range(20)]
    chain = sy.strategies.fallback_chain(["a", "b"])
    bulk = run(chain, requests, host=host, concurrency=3)
    kernel = run(chain, requests, host=host, concurrency=3, engine="kernel")
    assert bulk.engine == "bulk" and len(exact_calls) > 0
    same_frames(bulk, kernel)


def test_a_late_answer_that_its_start_brings_in_on_time_goes_the_exact_way(exact_calls):
    """An answer that ends 2**-52 s after ``timeout_s`` from its start is late at start 0 but on
    time at start 2 (``2 + total`` rounds to ``2 + timeout_s``): the event engines compare the
    sums, and so does the bulk engine, sending that request the exact way."""
    latency = sy.Latency(ttft=sy.dists.Constant(1.0000000000000002), tokens_per_s=1e300)
    profile = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1.0, price_out=1.0)
    policy = sy.HostPolicy(timeout_s=1.0, max_retries=0, cooldown_s=0)
    host = sy.SimHost({"a": profile}, policy=policy)
    requests = [sy.Request("x", id=i, input_tokens=10) for i in range(2)]
    kwargs = {"host": host, "arrivals": [0.0, 2.0]}
    bulk = run(sy.strategies.single("a"), requests, **kwargs)
    kernel = run(sy.strategies.single("a"), requests, engine="kernel", **kwargs)
    assert bulk.engine == "bulk" and exact_calls == [1]
    same_frames(bulk, kernel)
    assert bulk.attempts["status"].tolist() == ["error", "ok"]
    assert bulk.attempts["end_s"].tolist() == [1.0, 3.0]


@pytest.mark.parametrize("loop", ["closed", "poisson, 3 slots"])
def test_requests_placed_a_block_at_a_time_give_the_same_frames(monkeypatch, loop):
    """The bulk engine places requests in time a block at a time; blocks that split a run's
    requests anywhere (a retry, a slow request, a fallback at a block's edge) change nothing."""
    from sykit._run.engines.bulk import _run as bulk_run

    monkeypatch.setattr(bulk_run, "_BLOCK", 7)
    requests = mixed_requests(120)
    host = faulty_host(max_retries=2, timeout_s=3.0)
    kwargs = {"host": host, "seed": 5, **LOOPS[loop]}
    bulk = run(STRATEGIES["chain"], requests, **kwargs)
    kernel = run(STRATEGIES["chain"], requests, engine="kernel", **kwargs)
    assert bulk.engine == "bulk"
    same_frames(bulk, kernel)
    assert (bulk.requests["n_attempts"] > 1).any()


def test_bulk_frames_equal_the_asyncio_engines_too():
    requests = mixed_requests(90)
    host = faulty_host(max_retries=1, timeout_s=1.5, bill_cancelled="full")
    bulk = run(STRATEGIES["chain"], requests, host=host, seed=3)
    on_asyncio = run(STRATEGIES["chain"], requests, host=host, seed=3, engine="asyncio")
    assert (bulk.engine, on_asyncio.engine) == ("bulk", "asyncio")
    same_frames(bulk, on_asyncio)


def test_every_kind_of_outcome_is_met_on_the_bulk_engine():
    result = run(STRATEGIES["chain"], mixed_requests(400), host=faulty_host(timeout_s=2.0), seed=5)
    assert result.engine == "bulk"
    attempts = result.attempts
    kinds = set(attempts["error_kind"].dropna().astype(str))
    assert {"rate_limit", "unavailable", "timeout", "policy", "capability"} <= kinds
    assert {"context_window", "invalid_request", "invalid_response"} <= kinds
    reasons = set(attempts["fallback_reason"].dropna().astype(str))
    assert {"capability", "context_window", "unavailable"} <= reasons
    assert attempts["retried"].any() and attempts["served"].any()
    requests = result.requests
    assert len(requests) == 400 and requests["status"].eq("failed").any()
    assert requests["lane"].notna().all()  # metadata reaches the rows


def test_a_dataset_with_grades_gives_the_same_grades_and_columns_in_bulk():
    ds = sy.datasets.load("routellm").sample(300, seed=1)
    host = sy.SimHost(sy.profiles.from_catalog(ds.models), policy=sy.HostPolicy(cooldown_s=0))
    weak, strong = sorted(ds.models)[::-1][:2]
    score = sy.strategies.simulated_score(weak, strong)
    threshold = sy.strategies.calibrate(score, ds, 0.4)
    for algorithm in (
        sy.strategies.fallback_chain([weak, strong]),
        sy.strategies.threshold_router(weak, strong, score=score, threshold=threshold),
    ):
        bulk = run(algorithm, ds, host=host)
        kernel = run(algorithm, ds, host=host, engine="kernel")
        assert bulk.engine == "bulk"
        same_frames(bulk, kernel)
        assert bulk.requests["quality"].notna().mean() > 0.9
        assert bulk.requests["status"].eq("ok").all()
    assert bulk.requests["reads_truth"].all()  # the simulated score reads the truth
    assert bulk.requests["evidence_score"].notna().all()


def test_the_same_seed_gives_the_same_frames_and_another_seed_other_draws():
    requests = mixed_requests(80)
    host = faulty_host()
    one = run(STRATEGIES["random"], requests, host=host, seed=1)
    two = run(STRATEGIES["random"], requests, host=host, seed=1)
    other = run(STRATEGIES["random"], requests, host=host, seed=2)
    same_frames(one, two)
    assert not one.attempts["end_s"].equals(other.attempts["end_s"])


# -- which engine runs -------------------------------------------------------------------------------


HOST = sy.SimHost({"a": sy.ModelProfile(), "b": sy.ModelProfile()})


def test_the_choice_is_automatic_and_visible():
    assert run(sy.strategies.single("a"), ["x", "y"], host=HOST).engine == "bulk"
    cascade = sy.strategies.cascade("a", "b", judge="b")
    assert run(cascade, ["x", "y"], host=HOST).engine == "kernel"
    comparison = sy.compare(
        {"single": sy.strategies.single("a"), "cascade": cascade}, ["x"], host=HOST, progress=False
    )
    assert [(r.strategy, r.engine) for r in comparison.results] == [
        ("single", "bulk"),
        ("cascade", "kernel"),
    ]


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_an_event_engine_named_forbids_the_bulk_engine(engine):
    assert run(sy.strategies.single("a"), ["x"], host=HOST, engine=engine).engine == engine


def test_engine_bulk_refuses_what_it_cannot_take_and_says_why():
    cascade = sy.strategies.cascade("a", "b", judge="b")
    with pytest.raises(sy.ArgumentError, match=r"cannot run on the bulk engine: .*declared static"):
        run(cascade, ["x"], host=HOST, engine="bulk")

    async def unmarked(request, driver):
        return sy.route_to("a", request)

    with pytest.raises(sy.ArgumentError, match="neither a fixed chain nor declared static"):
        run(unmarked, ["x"], host=HOST, engine="bulk")
    outage = sy.SimHost({"a": sy.ModelProfile(faults=sy.Faults(outages=[(0, 1)]))})
    with pytest.raises(sy.ArgumentError, match="scripted faults"):
        run(sy.strategies.single("a"), ["x"], host=outage, engine="bulk")
    limited = sy.SimHost({"a": sy.ModelProfile(rate_limit=sy.faults.RateLimit(requests_per_min=5))})
    with pytest.raises(sy.ArgumentError, match="rate limit"):
        run(sy.strategies.single("a"), ["x"], host=limited, engine="bulk")
    cached = sy.SimHost({"a": sy.ModelProfile(cache=sy.profiles.PromptCache(read_price=0.1))})
    with pytest.raises(sy.ArgumentError, match="prompt cache"):
        run(sy.strategies.single("a"), ["x"], host=cached, engine="bulk")
    with pytest.raises(sy.ArgumentError, match="sessions"):
        run(
            sy.strategies.single("a"),
            [sy.sessions.Session([sy.Request("x"), sy.Request("y")])],
            host=HOST,
            engine="bulk",
        )


def test_engine_bulk_with_a_real_host_is_refused():
    host = sy.HttpHost("http://127.0.0.1:9/v1", api_key="sk-x", models={"a": sy.ModelProfile()})
    with pytest.raises(sy.ArgumentError, match="runs simulations only"):
        run(sy.strategies.single("a"), ["x"], host=host, engine="bulk")


@pytest.mark.parametrize("router", ["chain", "litellm"])
@pytest.mark.parametrize("block", [3, 16384])
def test_a_spilling_run_stays_in_bulk_and_reads_back_the_same_frames(
    tmp_path, monkeypatch, block, router
):
    from sykit._run import spill as _spill
    from sykit._run.engines.bulk import _run as bulk_run

    monkeypatch.setattr(_spill, "CHUNK_ROWS", 4)  # many chunks, flushed inside and across blocks
    monkeypatch.setattr(bulk_run, "_BLOCK", block)
    host = sy.SimHost(
        {
            "a": sy.ModelProfile(faults=sy.Faults(unavailable=0.3, timeout=0.1, cut_stream=0.1)),
            "b": sy.ModelProfile(faults=sy.Faults(rate_limit=0.2, retry_after_s=0.5)),
        },
        policy=sy.HostPolicy(max_retries=1, cooldown_s=0, timeout_s=2.0),
    )
    # a chain that returns to a model goes the exact way: every fourth request's records are
    # written a request at a time, inside a block
    chain = (
        sy.strategies.static(
            lambda r: ["a", "b", "a"] if r.metadata["n"] % 4 == 0 else ["a", "b"], name="c"
        )
        if router == "chain"
        else sy.strategies.litellm_like(["a", "b"])
    )
    requests = [sy.Request(f"q{i}", metadata={"n": i}) for i in range(23)]
    spilled = run(chain, requests, host=host, concurrency=3, spill=tmp_path / "s")
    assert spilled.engine == "bulk"
    if router == "chain" or block == 3:  # one block of planned requests is written at once
        assert len(list((tmp_path / "s").glob("attempts-*.parquet"))) > 1
        assert len(list((tmp_path / "s").glob("requests-*.parquet"))) > 1
    in_memory = run(chain, requests, host=host, concurrency=3)
    kernel = run(chain, requests, host=host, concurrency=3, engine="kernel", spill=tmp_path / "k")
    same_frames(spilled, in_memory)
    same_frames(spilled, kernel)
    assert spilled.requests["n"].tolist() == list(range(23))


def test_a_cooldown_that_later_requests_would_see_sends_the_run_to_the_events():
    faults = sy.Faults(unavailable=0.3)
    host = sy.SimHost(
        {"a": sy.ModelProfile(faults=faults), "b": sy.ModelProfile()},
        policy=sy.HostPolicy(cooldown_s=5.0, max_retries=0),
    )
    chain = sy.strategies.fallback_chain(["a", "b"])
    requests = [f"q{i}" for i in range(40)]
    auto = run(chain, requests, host=host)
    assert auto.engine == "kernel"
    assert auto.attempts["status"].eq("skipped").any()  # the cooldown mattered
    same_frames(auto, run(chain, requests, host=host, engine="kernel"))
    with pytest.raises(sy.ArgumentError, match="cooldown"):
        run(chain, requests, host=host, engine="bulk")
    # one model: a cooldown never skips the last candidate, so it cannot matter
    single = run(sy.strategies.single("a"), requests, host=host)
    assert single.engine == "bulk"
    same_frames(single, run(sy.strategies.single("a"), requests, host=host, engine="kernel"))


def test_a_cooldown_that_a_retry_ended_still_sends_the_run_to_the_events():
    # timeouts go the exact way; a retry that succeeds ends the cooldown, but other requests
    # started meanwhile were skipped past the cooling model
    faults = sy.Faults(timeout=0.1)
    host = sy.SimHost(
        {"a": sy.ModelProfile(faults=faults), "b": sy.ModelProfile()},
        policy=sy.HostPolicy(cooldown_s=5.0, max_retries=10, timeout_s=5.0),
    )
    chain = sy.strategies.fallback_chain(["a", "b"])
    requests = [f"q{i}" for i in range(200)]
    auto = run(chain, requests, host=host, arrivals=sy.traffic.Poisson(20.0))
    kernel = run(chain, requests, host=host, arrivals=sy.traffic.Poisson(20.0), engine="kernel")
    attempts = kernel.attempts
    assert kernel.requests["status"].eq("ok").all()  # every cooldown ended with a success
    assert auto.engine == "kernel" and attempts["status"].eq("skipped").any()
    same_frames(auto, kernel)


def test_a_static_router_that_awaits_or_reads_the_clock_runs_on_the_events():
    async def awaits(request, driver):
        await driver.call_model(request, ["a"])
        return sy.route_to("b", request)

    async def reads_the_clock(request, driver):
        return sy.route_to("a" if driver.now < 1 else "b", request)

    for algorithm in (sy.strategies.static(awaits), sy.strategies.static(reads_the_clock)):
        assert run(algorithm, ["x", "y"], host=HOST).engine == "kernel"
        with pytest.raises(sy.ArgumentError, match="cannot run on the bulk engine"):
            run(algorithm, ["x"], host=HOST, engine="bulk")


def test_a_static_router_whose_routing_fails_is_recorded_by_the_events():
    calls = []

    def route(request):
        calls.append(request.prompt)
        if request.prompt == "bad":
            raise ValueError("no route")
        return "nope" if request.prompt == "unknown" else "a"

    result = run(sy.strategies.static(route), ["x", "bad", "unknown"], host=HOST)
    assert result.engine == "kernel"
    kinds = result.requests["error_kind"]
    assert kinds.isna().tolist() == [True, False, False]
    assert kinds.iloc[1:].tolist() == ["algorithm_error", "unknown_model"]
    assert calls[:2] == ["x", "bad"]  # routed in bulk until it failed, then on the events
    assert calls[2:] == ["x", "bad", "unknown"]


def test_sy_static_checks_what_it_is_given():
    with pytest.raises(sy.ArgumentTypeError, match="function of the request"):
        sy.strategies.static("a")  # type: ignore[arg-type]
    with pytest.raises(sy.ArgumentTypeError, match="name must be a str"):
        sy.strategies.static(lambda r: "a", name=3)  # type: ignore[arg-type]
    bad = run(sy.strategies.static(lambda r: 42, name="bad"), ["x"], host=HOST)
    assert "must return a model name" in str(bad.requests["error_message"].iloc[0])
    named = sy.strategies.static(lambda r: ["a", "b"], name="mine")
    result = run(named, ["x"], host=HOST)
    assert result.strategy == "mine" and result.engine == "bulk"
    assert result.requests["selected_model"].tolist() == ["a"]


def test_frames_name_only_the_error_kinds_they_hold_in_the_order_they_appear():
    result = run(STRATEGIES["chain"], mixed_requests(200), host=faulty_host(timeout_s=2.0), seed=2)
    kinds = result.attempts["error_kind"]
    seen = list(dict.fromkeys(kinds.dropna().astype(str)))
    assert list(kinds.cat.categories) == seen
    messages = result.requests["error_message"]
    assert list(messages.cat.categories) == list(dict.fromkeys(messages.dropna().astype(str)))


def test_the_failover_catalogue_scenarios_the_bulk_engine_takes_give_the_same_frames():
    taken = []
    for scenario_id, scenario in sy.failoverbench.catalogue().items():
        auto = scenario.run().result
        kernel = scenario.run(engine="kernel").result
        same_frames(auto, kernel)
        if auto.engine == "bulk":
            taken.append(scenario_id)
    assert len(taken) >= 3, taken


# -- property: any host, policy, chain or static router, loop and seed ----------------------------

error_faults = st.one_of(
    st.builds(sy.faults.ErrorFault, st.sampled_from([400, 404, 408, 429, 500, 503]), st.just(0.05)),
    st.builds(sy.faults.ErrorFault.capability, st.just(0.05)),
    st.builds(sy.faults.ErrorFault.context_window, st.just(0.05)),
    st.builds(lambda p: sy.faults.ErrorFault(503, p, retry_after_s=0.3), st.just(0.05)),
)


@st.composite
def profiles(draw: st.DrawFn) -> sy.ModelProfile:
    weights = draw(st.lists(st.floats(0.0, 1.0), min_size=len(RANDOM_FAULTS), max_size=9))
    total = sum(weights) or 1.0
    share = draw(st.sampled_from([0.0, 0.1, 0.4, 0.85]))
    names = [*RANDOM_FAULTS, "non_chat"]
    faults = sy.Faults(
        **{name: share * w / total for name, w in zip(names, weights, strict=False)},
        retry_after_s=draw(st.none() | st.sampled_from([0.0, 0.5])),
        spike_p=draw(st.sampled_from([0.0, 0.3])),
        stall_p=draw(st.sampled_from([0.0, 0.2])),
        break_after_tokens=draw(st.sampled_from([None, None, 0, 3])),
        errors=draw(st.lists(error_faults, max_size=2)),
    )
    continuous = draw(st.booleans())
    ttft: Any = (
        sy.dists.LogNormal(0.5, sigma=0.7) if continuous else draw(st.sampled_from([0.25, 1.0]))
    )
    return sy.ModelProfile(
        latency=sy.Latency(
            ttft=ttft,
            tokens_per_s=sy.dists.Uniform(30, 150) if continuous else 100.0,
            prefill_tokens_per_s=draw(st.sampled_from([None, 5_000.0])),
        ),
        output_tokens=sy.dists.Exponential(60) if continuous else draw(st.sampled_from([1, 50])),
        reject_delay_s=draw(st.sampled_from([0.0, 0.125])),
        price_in=1.0,
        price_out=draw(st.sampled_from([0.0, 3.0])),
        faults=faults,
        vision=draw(st.booleans()),
        tools=draw(st.booleans()),
        prefill=draw(st.booleans()),
        context_window=draw(st.sampled_from([1_000, 128_000])),
    )


@st.composite
def hosts(draw: st.DrawFn) -> sy.SimHost:
    policy = sy.HostPolicy(
        max_retries=draw(st.integers(0, 2)),
        cooldown_s=draw(st.sampled_from([0.0, 0.0, 5.0])),
        timeout_s=draw(st.sampled_from([0.5, 2.0, 30.0])),
        bill_cancelled=draw(st.sampled_from(["generated", "none", "full"])),
        allow_policy_fallback=draw(st.booleans()),
        backoff_initial_s=draw(st.sampled_from([0.0, 0.25])),
        # False: the first routing-phase error fails the request (litellm_like's own retries
        # and fallbacks included), on every engine or the bulk engine declines the run
        recover_errors=draw(st.booleans()),
    )
    return sy.SimHost({m: draw(profiles()) for m in ("a", "b", "c")}, policy=policy)


@st.composite
def algorithms(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["chain", "random", "static", "litellm"]))
    if kind == "litellm":
        return sy.strategies.litellm_like(
            draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True)),
            num_retries=draw(st.integers(0, 3)),
            max_fallbacks=draw(st.integers(0, 2)),
            retry_after=draw(st.sampled_from(["integer", "any", "ignore"])),
        )
    if kind == "chain":
        return sy.strategies.fallback_chain(
            draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3))
        )
    if kind == "random":
        return sy.strategies.weighted_random(["a", "b", "c"], seed=draw(st.integers(0, 9)))
    routes = draw(
        st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=3), min_size=1, max_size=3)
    )
    return sy.strategies.static(lambda r: routes[len(r.prompt) % len(routes)], name="static")


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 12))
    requests = [
        sy.Request(
            "q" * draw(st.integers(1, 5)),
            id=i,
            images=[IMAGE] if draw(st.booleans()) else [],
            tools=[{"type": "function"}] if draw(st.integers(0, 3)) == 0 else [],
            input_tokens=draw(st.sampled_from([10, 900, 2_000])),
            max_output_tokens=draw(st.none() | st.sampled_from([5, 100])),
        )
        for i in range(n)
    ]
    loop = draw(st.sampled_from(["closed", "arrivals", "poisson"]))
    kwargs: dict[str, Any] = {"seed": draw(st.integers(0, 2**16))}
    if loop == "closed":
        kwargs["concurrency"] = draw(st.integers(1, 3))
    elif loop == "arrivals":
        gaps = draw(st.lists(st.sampled_from([0.0, 0.1, 0.7]), min_size=n, max_size=n))
        kwargs["arrivals"] = [sum(gaps[: i + 1]) for i in range(n)]
        kwargs["concurrency"] = draw(st.none() | st.integers(1, 2))
    else:
        kwargs["arrivals"] = sy.traffic.Poisson(draw(st.sampled_from([0.5, 4.0])))
    return {"requests": requests, **kwargs}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(algorithm=algorithms(), host=hosts(), workload=workloads())
def test_the_bulk_engine_agrees_with_the_kernel_whenever_it_runs(algorithm, host, workload):
    requests = workload.pop("requests")
    auto = run(algorithm, requests, host=host, **workload)
    kernel = run(algorithm, requests, host=host, engine="kernel", **workload)
    assert auto.engine in ("bulk", "kernel")
    declines = not host.policy.recover_errors and isinstance(algorithm, LiteLLMLike)
    if host.policy.cooldown_s == 0 and not declines:
        assert auto.engine == "bulk"  # nothing here depends on another request
    same_frames(auto, kernel)


def litellm_host(**policy: Any) -> sy.SimHost:
    """Rate limits with whole-second Retry-After (LiteLLM honours them), 503s with a fractional
    one (it does not), capability refusals (no retry), and timeouts (the exact way)."""
    latency = sy.Latency(
        ttft=sy.dists.LogNormal(0.4, sigma=0.6), tokens_per_s=sy.dists.Uniform(40, 160)
    )
    faults = sy.Faults(
        rate_limit=0.15,
        retry_after_s=2.0,
        timeout=0.05,
        errors=[
            sy.faults.ErrorFault(503, 0.1, retry_after_s=0.3),
            sy.faults.ErrorFault.capability(0.05),
        ],
    )
    profile = sy.ModelProfile(latency=latency, output_tokens=60, faults=faults)
    return sy.SimHost(
        {"a": profile, "b": profile, "c": profile.replace(faults=sy.Faults())},
        policy=sy.HostPolicy(timeout_s=2.5, **policy),
    )


@pytest.mark.parametrize(
    "router",
    [
        sy.strategies.litellm_like(["a", "b", "c"]),
        sy.strategies.litellm_like(["a", "b"], num_retries=1, max_fallbacks=0),
        sy.strategies.litellm_like({"a": ["a"], "b": ["b"]}, fallbacks={"a": ["b"]}),
        sy.strategies.litellm_like(["a", "b"], retry_after="ignore", num_retries=3),
    ],
    ids=["three groups", "no fallback", "groups by name", "ignores Retry-After"],
)
@pytest.mark.parametrize("cooldown_s", [0.0, 30.0])
def test_litellm_like_runs_in_bulk_with_the_kernels_frames(router, cooldown_s):
    requests = mixed_requests(150)
    kwargs = {"host": litellm_host(cooldown_s=cooldown_s), "seed": 5, "concurrency": 9}
    bulk = run(router, requests, **kwargs)
    kernel = run(router, requests, engine="kernel", **kwargs)
    assert (bulk.engine, kernel.engine) == ("bulk", "kernel")
    same_frames(bulk, kernel)
    attempts = bulk.attempts
    assert (attempts["phase"] == "routing").all() and not attempts["retried"].any()
    assert (attempts["error_kind"] == "timeout").any()  # requests that went the exact way


def test_litellm_like_in_bulk_waits_a_whole_second_retry_after_and_backs_off_otherwise():
    router = sy.strategies.litellm_like(["a", "b"])
    result = run(router, mixed_requests(150), host=litellm_host(), seed=2, engine="bulk")
    attempts = result.attempts.sort_values(["request_id", "call_id"])
    following = attempts.groupby("request_id", observed=True)["start_s"].shift(-1)
    gap = following - attempts["end_s"]
    rate_limited = (attempts["error_kind"] == "rate_limit") & gap.notna()
    # Retry-After: 2 plus LiteLLM's jitter of up to 0.75 s; a 503's 0.3 s is not a whole number:
    # the backoff (0.5 s, then 1 s, ...) plus the jitter
    assert rate_limited.any() and gap[rate_limited].between(2.0, 2.75).all()
    unavailable = (attempts["error_kind"] == "unavailable") & gap.notna()
    assert unavailable.any() and gap[unavailable].between(0.5, 0.5 * 2**2 + 0.75).all()
    refused = (attempts["error_kind"] == "capability") & gap.notna()
    assert refused.any() and (gap[refused] == 0).all()  # not retried: the next group at once


@pytest.mark.parametrize(
    "router",
    [
        sy.strategies.litellm_like({"g": ["a", "b"]}),  # a group of two can cool a deployment
        sy.strategies.litellm_like(["a", "b"], allowed_fails=1),
        sy.strategies.litellm_like(["a", "b"], stream=True),
        sy.strategies.litellm_like(["a", "b"], routing_strategy="least-busy"),
        sy.strategies.litellm_like(["a", "b", "c"], context_window_fallbacks={"a": ["c"]}),
        sy.strategies.litellm_like(["a", "b", "c"], fallbacks={"a": ["b", "c"]}),
    ],
    ids=["two deployments", "allowed_fails", "stream", "least-busy", "context fallbacks", "tree"],
)
def test_litellm_like_settings_with_state_or_branches_run_on_the_events(router):
    result = run(router, mixed_requests(30), host=litellm_host(), seed=1)
    assert result.engine == "kernel"
    with pytest.raises(sy.ArgumentError, match="can change one another's course"):
        run(router, mixed_requests(3), host=litellm_host(), engine="bulk")


@pytest.mark.parametrize("tagged", [None, 0, 7, 19])
def test_metadata_reaches_the_records_wherever_it_is_in_the_list(tagged):
    """A list of requests says whether any carries metadata, so records of a list without any
    skip reading the requests again; one request with metadata, anywhere, brings its column."""
    requests = [
        sy.Request(f"q{i}", metadata={"tier": "pro"} if i == tagged else None) for i in range(20)
    ]
    host = sy.SimHost({"A": sy.ModelProfile(price_in=1, price_out=1)})
    chain = sy.strategies.fallback_chain(["A"])
    bulk = run(chain, requests, host=host, seed=1, engine="bulk")
    same_frames(bulk, run(chain, requests, host=host, seed=1, engine="kernel"))
    if tagged is None:
        assert "tier" not in bulk.requests.columns
    else:
        tiers = bulk.requests["tier"]
        assert tiers.iloc[tagged] == "pro" and tiers.drop(index=tagged).isna().all()
