"""Defects where a run lost or misread what happened ("Nothing lost, nothing misread"): each test
goes through the public API and failed before its fix."""

from __future__ import annotations

import warnings
from typing import Any

import pandas.testing as pdt
import pytest

import sykit as sy


def run(algorithm: Any, requests: Any, **kwargs: Any) -> sy.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        return sy.run(algorithm, requests, progress=False, **kwargs)


def same_frames(one: sy.Result, two: sy.Result) -> None:
    pdt.assert_frame_equal(one.attempts, two.attempts)
    pdt.assert_frame_equal(one.requests, two.requests)


# -- 1. the bulk engine and HostPolicy(recover_errors=False) ------------------------------------


def test_bulk_litellm_like_keeps_recover_errors_false() -> None:
    host = sy.SimHost(
        {"a": sy.ModelProfile(faults=sy.Faults(unavailable=1.0)), "b": sy.ModelProfile()},
        policy=sy.HostPolicy(recover_errors=False),
    )
    requests = [sy.Request("hi") for _ in range(3)]
    strategy = sy.strategies.litellm_like(["a", "b"])
    kernel = run(strategy, requests, host=host, engine="kernel")
    assert (kernel.requests["status"] == "failed").all()
    assert len(kernel.attempts) == 3
    same_frames(run(strategy, requests, host=host, engine="auto"), kernel)
    same_frames(run(strategy, requests, host=host, engine="asyncio"), kernel)
    with pytest.raises(sy.ArgumentError, match="recover_errors=False"):
        run(strategy, requests, host=host, engine="bulk")


@pytest.mark.parametrize("recover", [True, False])
@pytest.mark.parametrize("routing_fallback", [True, False])
@pytest.mark.parametrize("max_retries", [0, 2])
def test_bulk_equals_kernel_whatever_the_host_policy(
    recover: bool, routing_fallback: bool, max_retries: int
) -> None:
    policy = sy.HostPolicy(
        recover_errors=recover,
        routing_fallback=routing_fallback,
        max_retries=max_retries,
        cooldown_s=0.0,
        retry_after_cap_s=0.1,
    )
    faults = sy.Faults(unavailable=0.6, retry_after_s=1.0)
    host = sy.SimHost({"a": sy.ModelProfile(faults=faults), "b": sy.ModelProfile()}, policy=policy)
    requests = [sy.Request("hi") for _ in range(6)]
    for strategy in (
        sy.strategies.litellm_like(["a", "b"]),
        sy.strategies.litellm_like(["a", "b"], num_retries=0),
        sy.strategies.fallback_chain(["a", "b"]),
        sy.strategies.single("a"),
    ):
        same_frames(
            run(strategy, requests, host=host, engine="auto"),
            run(strategy, requests, host=host, engine="kernel"),
        )


@pytest.mark.parametrize("bill_cancelled", ["generated", "none", "full"])
def test_bulk_litellm_like_reads_the_rest_of_the_host_policy(bill_cancelled: str) -> None:
    policy = sy.HostPolicy(
        cooldown_s=5.0,
        bill_cancelled=bill_cancelled,  # type: ignore[arg-type]
        timeout_s=0.5,
        fallback_reasons=("rate_limit",),
    )
    latency = sy.Latency(ttft=sy.dists.Uniform(0.1, 1.0), tokens_per_s=50)
    faults = sy.Faults(unavailable=0.3, rate_limit=0.2, retry_after_s=1.0)
    host = sy.SimHost(
        {
            "a": sy.ModelProfile(latency=latency, faults=faults),
            "b": sy.ModelProfile(latency=latency),
        },
        policy=policy,
    )
    requests = [sy.Request("hi") for _ in range(8)]
    for strategy in (
        sy.strategies.litellm_like(["a", "b"]),
        sy.strategies.litellm_like(["a", "b"], num_retries=1, retry_after="any"),
    ):
        same_frames(
            run(strategy, requests, host=host, engine="bulk"),
            run(strategy, requests, host=host, engine="kernel"),
        )


# -- 2. SystemExit raised by an algorithm ------------------------------------------------------

HOST = sy.SimHost({"a": sy.ModelProfile(), "b": sy.ModelProfile()})


async def exits(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    if request.prompt == "bye":
        raise SystemExit("stop here")
    return sy.route_to("a", request)


async def exits_in_a_task(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    async def inner() -> None:
        await driver.sleep(0.1)
        raise SystemExit("stop in a task")

    if request.prompt == "bye":
        (started,) = sy.start(inner())
        await sy.wait_first(started)
        started.result()
    return sy.route_to("a", request)


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
@pytest.mark.parametrize(
    ("algorithm", "message"),
    [
        (exits, "SystemExit: stop here"),
        (sy.strategies.static(exits), "SystemExit: stop here"),
        (exits_in_a_task, "SystemExit: stop in a task"),
    ],
)
def test_system_exit_fails_its_request_only(engine: str, algorithm: Any, message: str) -> None:
    requests = [sy.Request("hi"), sy.Request("bye"), sy.Request("hi")]
    result = run(algorithm, requests, host=HOST, engine=engine)
    assert result.requests["status"].tolist() == ["ok", "failed", "ok"]
    assert result.requests["error_kind"][1] == "algorithm_error"
    assert result.requests["error_message"][1] == message
    with pytest.raises(SystemExit, match=message.split(": ")[1]):
        run(algorithm, requests, host=HOST, engine=engine, strict=True)


# -- 3. sy.answered with a Response no call of this request produced ----------------------------


async def answers_by_hand(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    return sy.answered("a", sy.Response("a", "made up"))


def answers_with_another_requests_response() -> Any:
    kept: list[sy.Response] = []

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        if not kept:
            kept.append(await driver.call_model(request, "a"))
            return sy.answered("a", kept[0])
        return sy.answered("a", kept[0])

    return algorithm


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
def test_answered_refuses_a_response_built_by_hand(engine: str) -> None:
    result = run(answers_by_hand, [sy.Request("x", id="r1")], host=HOST, engine=engine)
    assert result.requests["status"].tolist() == ["failed"]
    assert result.requests["error_kind"].tolist() == ["invalid_outcome"]
    assert "did not come from a call of request 'r1'" in result.requests["error_message"][0]
    assert result.requests["served_model"].isna().all()
    with pytest.raises(sy.ArgumentTypeError, match="did not come from a call of request"):
        run(answers_by_hand, [sy.Request("x")], host=HOST, engine=engine, strict=True)


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
def test_answered_refuses_another_requests_response(engine: str) -> None:
    requests = [sy.Request("x"), sy.Request("y")]
    algorithm = answers_with_another_requests_response()
    result = run(algorithm, requests, host=HOST, engine=engine, concurrency=1)
    assert result.requests["status"].tolist() == ["ok", "failed"]
    assert result.requests["error_kind"][1] == "invalid_outcome"
    assert "did not come from a call of request 1" in result.requests["error_message"][1]


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
def test_answered_serves_this_requests_own_responses(engine: str) -> None:
    async def called(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        return sy.answered("a", await driver.call_model(request, "a"))

    async def streamed(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        async with driver.stream_model(request, "b") as stream:
            async for _ in stream:
                pass
        assert stream.response is not None
        return sy.answered("b", stream.response)

    for algorithm in (called, streamed):
        result = run(algorithm, [sy.Request("x"), sy.Request("y")], host=HOST, engine=engine)
        assert (result.requests["status"] == "ok").all()
        assert result.attempts["served"].sum() == 2


# -- 4. a request id with a lone surrogate --------------------------------------------------------


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio", "bulk"])
def test_a_request_id_with_a_lone_surrogate_is_refused_early(engine: str) -> None:
    requests = [sy.Request("x", id="fine"), sy.Request("hi", id="a\ud800")]
    with pytest.raises(sy.ArgumentError, match=r"requests\[1\] has the id 'a\\ud800'"):
        run(sy.strategies.single("a"), requests, host=HOST, engine=engine)


def test_a_lone_surrogate_id_is_refused_by_compare_too() -> None:
    with pytest.raises(sy.ArgumentError, match=r"requests\[0\].*valid Unicode"):
        sy.compare(
            [sy.strategies.single("a")], [sy.Request("hi", id="\udfff")], host=HOST, progress=False
        )


# -- 5. sy.Capacity(slots=10**18), a user's "unlimited" ------------------------------------------


def test_a_huge_slot_count_runs_promptly_and_as_enough_slots() -> None:
    import time

    def host(slots: int) -> sy.SimHost:
        capacity = sy.Capacity(slots=slots, slowdown=[(1, 1.0), (3, 0.5), (6, 0.25)])
        return sy.SimHost({"a": sy.ModelProfile(capacity=capacity)})

    requests = [sy.Request(f"q{i}") for i in range(8)]
    for engine in ("kernel", "asyncio"):
        started = time.perf_counter()
        huge = run(sy.strategies.single("a"), requests, host=host(10**18), engine=engine)
        assert time.perf_counter() - started < 5.0
        same_frames(huge, run(sy.strategies.single("a"), requests, host=host(8), engine=engine))
        # fewer slots than requests: some wait for a slot
        few = run(sy.strategies.single("a"), requests, host=host(3), engine=engine)
        assert not few.requests["latency_s"].equals(huge.requests["latency_s"])


# -- 6. an algorithm that polls driver.sleep forever -----------------------------------------------


async def polls_forever(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    if request.prompt == "loop":
        while True:
            try:
                await driver.sleep(3600.0)
            except Exception:  # it swallows what it can
                continue
    await driver.sleep(24 * 3600.0)  # a long wait, within the horizon
    return sy.route_to("a", request)


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
def test_a_request_that_sleeps_forever_stops_at_its_horizon(engine: str) -> None:
    from sykit._run.driver import REQUEST_HORIZON_S

    requests = [sy.Request("hi"), sy.Request("loop", id="looper")]
    result = run(polls_forever, requests, host=HOST, engine=engine)
    assert result.requests["status"].tolist() == ["ok", "failed"]
    assert result.requests["error_kind"][1] == "algorithm_error"
    message = result.requests["error_message"][1]
    assert message.startswith("RequestHorizon: request 'looper' would sleep past its virtual-time")
    assert result.requests["end_s"][1] == pytest.approx(REQUEST_HORIZON_S)


# -- 7. messages for sy.timeout's order and sy.first_ok's pair ------------------------------------


async def swaps_timeout(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    response = await sy.timeout(driver.call_model(request, "a"), 1.5)  # type: ignore[arg-type]
    return sy.answered("a", response)


async def answers_the_pair(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    pair = await sy.first_ok(driver.call_model(request, "a"), driver.call_model(request, "b"))
    return sy.answered("a", pair)  # type: ignore[arg-type]


async def reads_the_pair(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    pair = await sy.first_ok(driver.call_model(request, "a"), driver.call_model(request, "b"))
    return sy.answered(pair.model, pair)  # type: ignore[attr-defined]


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_a_swapped_timeout_names_the_order(engine: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the call is closed, never "not awaited"
        result = run(swaps_timeout, [sy.Request("hi")], host=HOST, engine=engine)
    message = result.requests["error_message"][0]
    assert "the order is sy.timeout(seconds, awaitable)" in message
    assert "forget `await`" not in message
    assert len(result.attempts) == 0


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
@pytest.mark.parametrize("algorithm", [answers_the_pair, reads_the_pair])
def test_a_first_ok_pair_used_as_a_response_says_it_is_a_pair(engine: str, algorithm: Any) -> None:
    result = run(algorithm, [sy.Request("hi")], host=HOST, engine=engine)
    assert result.requests["error_kind"][0] == "algorithm_error"
    assert "return `(index, response)`" in result.requests["error_message"][0]
