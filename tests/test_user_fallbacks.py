"""An algorithm's own fallback counts as the candidate loop's: a call to another model after a
failed call is a fallback with the failure's reason, whichever code made the switch.

Each test runs on every engine (the kernel, asyncio and ``auto``) and compares exact counts.
"""

from __future__ import annotations

import contextlib

import pandas as pd
import pandas.testing as pdt
import pytest
from helpers import run_both

import sykit as sy
from sykit import strategies as st

ENGINES = ["kernel", "asyncio", "auto"]
N = 40

P = {
    "latency": sy.Latency(ttft=0.5, tokens_per_s=100.0),
    "output_tokens": 10,
    "reject_delay_s": 0.125,
    "price_in": 1.0,
    "price_out": 1.0,
}
COUNTED = [
    "fallbacks",
    *(f"fallbacks_{r.value}" for r in sy.errors.FallbackReason),
    "routing_errors",
]


def vision_host(**faults: sy.Faults) -> sy.SimHost:
    """``small`` refuses images (a capability 400); ``large`` takes them."""
    return sy.SimHost(
        {
            "small": sy.ModelProfile(vision=False, faults=faults.get("small", sy.Faults()), **P),
            "large": sy.ModelProfile(vision=True, **P),
            "judge": sy.ModelProfile(faults=faults.get("judge", sy.Faults()), **P),
        },
        policy=sy.HostPolicy(max_retries=0, cooldown_s=0),
    )


def with_images(n: int = N) -> list[sy.Request]:
    return [sy.Request(f"look {i}", id=i, images=["https://example.com/a.png"]) for i in range(n)]


def summary_of(result: sy.Result) -> pd.Series:
    """The run's one summary row, every column."""
    return result.summary().iloc[0]


def counts(result: sy.Result) -> dict[str, int]:
    return {k: int(v) for k, v in summary_of(result)[COUNTED].items()}


def reasons(result: sy.Result, model: str) -> list[str | None]:
    rows = result.attempts[result.attempts["model"] == model]
    return [None if pd.isna(r) else str(r) for r in rows["fallback_reason"]]


async def own_fallback_answered(request, driver):
    """Call ``small``; on its capability error, call ``large`` and serve its answer."""
    try:
        return sy.answered("small", await driver.call_model(request, ["small"]))
    except sy.errors.CapabilityError:
        return sy.answered("large", await driver.call_model(request, ["large"]))


async def own_fallback_routed(request, driver):
    """Call ``small``; on its capability error, route the answer to ``large``."""
    try:
        return sy.answered("small", await driver.call_model(request, ["small"]))
    except sy.errors.CapabilityError:
        return sy.route_to("large", request)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("own", [own_fallback_answered, own_fallback_routed])
def test_a_users_capability_fallback_counts_as_the_chains(engine, own):
    host = vision_host()
    runs = {
        "route_to": sy.run(lambda r, d: _route(r), with_images(), host=host, engine=engine, seed=0),
        "fallback_chain": sy.run(
            st.fallback_chain(["small", "large"]), with_images(), host=host, engine=engine, seed=0
        ),
        "own": sy.run(own, with_images(), host=host, engine=engine, seed=0),
    }
    for name, result in runs.items():
        assert result.requests["status"].tolist() == ["ok"] * N, name
        assert counts(result) == {
            **dict.fromkeys(COUNTED, 0),
            "fallbacks": N,
            "fallbacks_capability": N,
        }, name
        assert reasons(result, "small") == ["capability"] * N, name
        assert reasons(result, "large") == [None] * N, name
        assert result.requests["n_fallbacks"].tolist() == [1] * N, name


async def _route(request):
    return sy.route_to("small", request, fallbacks=["large"])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_users_fallback_after_a_streamed_failure_counts_too(engine):
    async def algorithm(request, driver):
        with contextlib.suppress(sy.errors.CapabilityError):
            async with driver.stream_model(request, ["small"]) as stream:
                async for _ in stream:
                    pass
            return sy.answered("small", stream.response)
        return sy.answered("large", await driver.call_model(request, ["large"]))

    result = sy.run(algorithm, with_images(), host=vision_host(), engine=engine, seed=0)
    assert counts(result)["fallbacks_capability"] == N
    assert counts(result)["routing_errors"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_users_retry_of_the_same_model_is_a_retry_then_its_switch_a_fallback(engine):
    host = vision_host(small=sy.Faults(unavailable=1.0))
    requests = [sy.Request(f"q{i}", id=i) for i in range(N)]

    async def retry_then_move_on(request, driver):
        for _ in range(2):  # the same model twice: the first failure is a retry
            with contextlib.suppress(sy.errors.UnavailableError):
                return sy.answered("small", await driver.call_model(request, ["small"]))
        return sy.answered("large", await driver.call_model(request, ["large"]))

    result = sy.run(retry_then_move_on, requests, host=host, engine=engine, seed=0)
    summary = summary_of(result)
    assert (summary["retries"], summary["fallbacks"], summary["fallbacks_unavailable"]) == (N, N, N)
    assert summary["routing_errors"] == 0
    assert reasons(result, "small") == [None, "unavailable"] * N
    assert result.requests["n_fallbacks"].tolist() == [1] * N

    async def retry_only(request, driver):
        with contextlib.suppress(sy.errors.UnavailableError):
            await driver.call_model(request, ["small"])
        return sy.route_to("small", request)

    result = sy.run(retry_only, requests, host=host, engine=engine, seed=0)
    summary = summary_of(result)
    assert (summary["retries"], summary["fallbacks"]) == (N, 0)
    assert result.requests["n_fallbacks"].tolist() == [0] * N


@pytest.mark.parametrize("engine", ENGINES)
def test_a_race_of_two_models_is_not_a_fallback(engine):
    async def race(request, driver):
        small, large = driver.call_model(request, ["small"]), driver.call_model(request, ["large"])
        _, response = await sy.first_ok(small, large)  # small fails first; large serves
        return sy.answered(response.model, response)

    result = sy.run(race, with_images(), host=vision_host(), engine=engine, seed=0)
    assert reasons(result, "small") == [None] * N
    assert result.requests["n_fallbacks"].tolist() == [0] * N
    assert counts(result) == {**dict.fromkeys(COUNTED, 0), "routing_errors": N}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_call_to_a_model_already_in_flight_is_not_a_fallback(engine):
    async def algorithm(request, driver):
        async def small_then_large():
            with contextlib.suppress(sy.ModelError):
                await driver.call_model(request, ["small"])
            # small failed at 0.125 s while the race's large call was in flight since 0 s
            return await driver.call_model(request, ["large"])

        _, response = await sy.first_ok(driver.call_model(request, ["large"]), small_then_large())
        return sy.answered(response.model, response)

    result = sy.run(algorithm, with_images(), host=vision_host(), engine=engine, seed=0)
    assert reasons(result, "small") == [None] * N
    assert result.requests["n_fallbacks"].tolist() == [0] * N
    assert counts(result)["fallbacks"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_judge_then_a_model_call_is_not_a_fallback(engine):
    host = vision_host(judge=sy.Faults(unavailable=1.0))
    requests = [sy.Request(f"q{i}", id=i) for i in range(N)]

    async def algorithm(request, driver):
        draft = await driver.call_model(request, ["large"])
        with contextlib.suppress(sy.ModelError):
            await driver.call_decision(sy.ask_good_enough(request, draft), "judge")
        return sy.route_to("small", request)

    result = sy.run(algorithm, requests, host=host, engine=engine, seed=0)
    summary = summary_of(result)
    assert (summary["fallbacks"], summary["routing_errors"]) == (0, N)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_declared_fallback_is_counted_once(engine):
    async def algorithm(request, driver):
        try:
            return sy.answered("small", await driver.call_model(request, ["small"]))
        except sy.errors.CapabilityError as error:
            driver.record_fallback(error)
        return sy.answered("large", await driver.call_model(request, ["large"]))

    result = sy.run(algorithm, with_images(), host=vision_host(), engine=engine, seed=0)
    assert result.requests["n_fallbacks"].tolist() == [1] * N
    assert counts(result)["fallbacks_capability"] == N


@pytest.mark.parametrize("own", [own_fallback_answered, own_fallback_routed])
def test_the_records_of_a_users_fallback_are_the_same_on_every_engine(own):
    host = vision_host(small=sy.Faults(unavailable=0.3))
    kernel = run_both(own, with_images(), host=host, seed=0)  # the kernel's and asyncio's
    auto = sy.run(own, with_images(), host=host, seed=0, progress=False)
    pdt.assert_frame_equal(auto.attempts, kernel.attempts)
    pdt.assert_frame_equal(auto.requests, kernel.requests)
    assert kernel.attempts["fallback_reason"].notna().sum() == N
