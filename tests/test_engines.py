"""Both engines, same frames: sykit's kernel and the asyncio engine give identical ``attempts`` and
``requests`` for algorithms that await only sykit's primitives.

Latencies, reject delays and arrivals here are continuous draws, so no two events coincide by
chance; where two do coincide on purpose (a same-instant tie), both engines order them by one rule
(docs/engines.md, "What happens first at one instant"), pinned at the end of this file.
"""

from __future__ import annotations

import asyncio
import warnings

import pandas as pd
import pandas.testing as pdt
import pytest

import sykit as sy


def jittery(**kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(
            ttft=sy.dists.LogNormal(0.6, sigma=0.5), tokens_per_s=sy.dists.Uniform(40, 120)
        ),
        "output_tokens": sy.dists.LogNormal(80, p95=300),
        "reject_delay_s": sy.dists.Uniform(0.02, 0.2),
        "price_in": 1.0,
        "price_out": 3.0,
        "quality": 0.6,
    }
    settings.update(kwargs)
    return sy.ModelProfile(**settings)


PROFILES = {
    "fast": jittery(),
    "strong": jittery(
        latency=sy.Latency(
            ttft=sy.dists.LogNormal(1.2, sigma=0.4), tokens_per_s=sy.dists.Uniform(30, 60)
        ),
        price_in=10.0,
        price_out=30.0,
        vision=True,
        context_window=400_000,
        quality=0.9,
    ),
    # every random fault, and latency spikes
    "flaky": jittery(
        faults=sy.Faults(
            rate_limit=0.08,
            retry_after_s=0.75,
            unavailable=0.08,
            timeout=0.04,
            policy=0.08,
            invalid=0.03,
            reset=0.05,
            cut_stream=0.05,
            malformed=0.04,
            spike_p=0.1,
            spike_factor=6.0,
        ),
        tools=False,
    ),
    # scripted faults: an outage, a failing start, flapping
    "scripted": jittery(
        faults=sy.Faults(
            outages=[(3.0, 6.5)],
            fail_first=4,
            fail_first_status=500,
            flapping=sy.faults.Flapping(up_s=2.5, down_s=1.5, until_s=20.0),
        )
    ),
    "limited": jittery(rate_limit=sy.faults.RateLimit(requests_per_min=20, tokens_per_min=2_500)),
    "small": jittery(context_window=2_000),
}

HOSTS = {
    "default": sy.SimHost(PROFILES, judge=sy.Judge(accuracy=0.8)),
    "strict_client": sy.SimHost(
        PROFILES,
        policy=sy.HostPolicy(
            timeout_s=3.0,
            max_retries=3,
            cooldown_s=4.0,
            routing_fallback=True,
            allow_policy_fallback=True,
            bill_cancelled="full",
        ),
    ),
}


def make_requests(n: int = 24) -> list[sy.Request]:
    """Plain text, images (a capability error for text models), tools, and long inputs (a
    context-window overflow for "small")."""
    requests = []
    for i in range(n):
        kind = i % 4
        if kind == 1:
            requests.append(sy.Request(f"picture {i}", id=i, images=["https://example.com/a.png"]))
        elif kind == 2:
            requests.append(sy.Request(f"tool {i}", id=i, tools=[{"name": "search"}]))
        elif kind == 3:
            requests.append(
                sy.Request(f"long {i}", id=i, input_tokens=1_900, max_output_tokens=400)
            )
        else:
            requests.append(sy.Request(f"question {i}", id=i))
    return requests


REQUESTS = make_requests()


# -- algorithms that await only sykit ------------------------------------------------------------


async def fallbacks(request, driver):
    chain = ["flaky", "scripted", "limited", "small", "strong"]
    if request.id % 2:
        chain = ["limited", "small", "flaky", "scripted", "strong"]
    return sy.route_to(chain[0], request, fallbacks=chain[1:])


async def race(request, driver):
    _, result = await sy.first(
        driver.call_model(request, ["flaky"]), driver.call_model(request, ["scripted"])
    )
    if isinstance(result, Exception):
        return sy.route_to("fast", request, fallbacks=["strong"])
    return sy.answered(result.model, result)


async def first_success(request, driver):
    try:
        _, response = await sy.first_ok(
            driver.call_model(request, ["limited", "fast"]),
            driver.call_model(request, ["flaky"]),
            driver.call_model(request, ["small", "strong"]),
        )
    except sy.ModelError as error:
        driver.evidence(all_failed=error.kind)
        return sy.route_to("strong", request)
    return sy.answered(response.model, response)


async def judged(request, driver):
    question = sy.DecisionRequest({"easy": sy.Boolean("Is it easy?", oracle=request.id % 3 == 0)})
    verdict = await sy.timeout(0.9, driver.call_decision(question, "flaky"))
    if verdict is None:
        driver.evidence(source="timeout")
        return sy.route_to("strong", request)
    return sy.route_to("fast" if verdict.yes("easy") else "strong", request, fallbacks=["strong"])


async def hedged(request, driver):
    try:
        response = await sy.hedge(
            lambda: driver.call_model(request, ["flaky", "scripted"]), after=0.7, copies=3
        )
    except sy.ModelError:
        return sy.route_to("strong", request)
    return sy.answered(response.model, response)


async def nested(request, driver):
    async def judge_then_call():
        verdict = await sy.timeout(
            1.1, driver.call_decision(sy.DecisionRequest({"go": sy.Boolean()}), "fast")
        )
        await driver.sleep(0.15)
        model = "limited" if verdict is None or verdict.yes("go") else "scripted"
        return await driver.call_model(request, [model])

    # Nested helpers go last, where both engines start them in the same order (see the pins below).
    _, result = await sy.first(
        sy.timeout(2.5, driver.call_model(request, ["strong"])),
        sy.first_ok(judge_then_call(), driver.call_model(request, ["flaky"])),
    )
    if result is None or isinstance(result, BaseException):
        return sy.route_to("fast", request, fallbacks=["strong"])
    return sy.answered(result.model, result)


async def sleepy_retries(request, driver):
    for attempt in range(3):
        await driver.sleep(0.3 * attempt)
        try:
            response = await sy.timeout(
                1.8, driver.call_model(request, ["scripted", "limited", "fast"])
            )
        except sy.ModelError:
            continue
        if response is not None:
            return sy.answered(response.model, response)
    return sy.route_to("strong", request)


async def leaves_work_behind(request, driver):
    """Starts calls it never awaits and sometimes fails: the runner cancels them (abandoned,
    request_failed)."""
    sy.start(driver.call_model(request, ["strong"]))[0]
    sy.start(sy.first(driver.call_model(request, ["limited"])))[0]
    await driver.sleep(0.01)  # a task starts at once on the kernel, a loop turn later on asyncio
    response = await driver.call_model(request, ["fast"])
    if request.id % 5 == 0:
        raise ValueError("a bug in the router")
    return sy.answered("fast", response)


ALGORITHMS = {
    "fallbacks": fallbacks,
    "race": race,
    "first_ok": first_success,
    "judged": judged,
    "hedged": hedged,
    "nested": nested,
    "sleepy_retries": sleepy_retries,
    "leaves_work_behind": leaves_work_behind,
    "speculative": sy.strategies.speculative("fast", "strong", judge="flaky"),
    "litellm_like": sy.strategies.litellm_like(["flaky", "scripted", "strong"]),
    "hedge_p90": sy.strategies.hedge("flaky", after="p90", warmup=5),
}

LOOPS = {
    "closed_4": {"concurrency": 4},
    "closed_32": {},
    "poisson": {"arrivals": sy.traffic.Poisson(3.0)},
    "poisson_limited": {"arrivals": sy.traffic.Poisson(8.0), "concurrency": 3},
}


def run_both(algorithm, requests, **kwargs) -> tuple[sy.Result, sy.Result]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        kernel = sy.run(algorithm, requests, engine="kernel", **kwargs)
        on_asyncio = sy.run(algorithm, requests, engine="asyncio", **kwargs)
    assert (kernel.engine, on_asyncio.engine) == ("kernel", "asyncio")
    return kernel, on_asyncio


def assert_same_frames(kernel: sy.Result, on_asyncio: sy.Result) -> None:
    pdt.assert_frame_equal(kernel.attempts, on_asyncio.attempts, check_exact=True)
    pdt.assert_frame_equal(kernel.requests, on_asyncio.requests, check_exact=True)


SEEN: list[pd.DataFrame] = []  # every attempt compared, for the coverage check below


@pytest.mark.parametrize("loop", list(LOOPS))
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_both_engines_give_the_same_frames(algorithm, loop):
    for host, seed in (("default", 0), ("strict_client", 1), ("default", 2)):
        kernel, on_asyncio = run_both(
            ALGORITHMS[algorithm], REQUESTS, host=HOSTS[host], seed=seed, **LOOPS[loop]
        )
        assert_same_frames(kernel, on_asyncio)
        SEEN.append(kernel.attempts)


def test_the_comparison_covers_every_status_cause_and_fault():
    """The frames compared above are not trivially equal: they hold every kind of attempt."""
    if not SEEN:  # run on its own: make the frames
        for name in ALGORITHMS:
            for loop in LOOPS:
                SEEN.append(
                    run_both(ALGORITHMS[name], REQUESTS, host=HOSTS["default"], **LOOPS[loop])[
                        0
                    ].attempts
                )
    attempts = pd.concat(SEEN, ignore_index=True)
    assert set(attempts["status"].astype(str)) == {"ok", "error", "cancelled", "skipped"}
    assert set(attempts["cancel_cause"].dropna().astype(str)) == {
        "lost_race",
        "timeout",
        "abandoned",
        "request_failed",
    }
    assert set(attempts["error_kind"].dropna().astype(str)) >= {
        "rate_limit",
        "unavailable",
        "timeout",
        "policy",
        "invalid_request",
        "invalid_response",
        "capability",
        "context_window",
        "cooldown",
    }
    assert set(attempts["fallback_reason"].dropna().astype(str)) >= {
        "capability",
        "context_window",
        "unavailable",
        "rate_limit",
        "policy",
    }
    assert attempts["retried"].any() and (attempts["kind"] == "decision").any()
    assert (attempts["status"].eq("cancelled") & attempts["output_tokens"].gt(0)).any()


@pytest.mark.parametrize("scenario_id", list(sy.failoverbench.catalogue()))
def test_every_catalogue_scenario_gives_the_same_frames(scenario_id):
    scenario = sy.failoverbench.catalogue()[scenario_id]
    kernel = scenario.run(engine="kernel").result
    on_asyncio = scenario.run(engine="asyncio").result
    assert (kernel.engine, on_asyncio.engine) == ("kernel", "asyncio")
    assert_same_frames(kernel, on_asyncio)


def test_a_comparison_over_seeds_is_the_same_on_both_engines():
    strategies = {"race": race, "fallbacks": fallbacks, "hedged": hedged}
    kwargs = {"host": HOSTS["default"], "seeds": [3, 4], "arrivals": sy.traffic.Poisson(4.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        kernel = sy.compare(strategies, REQUESTS, engine="kernel", **kwargs)
        on_asyncio = sy.compare(strategies, REQUESTS, engine="asyncio", **kwargs)
    pdt.assert_frame_equal(kernel.attempts, on_asyncio.attempts, check_exact=True)
    pdt.assert_frame_equal(kernel.requests, on_asyncio.requests, check_exact=True)


def test_simultaneous_finishers_are_ranked_by_argument_order_on_both_engines():
    host = sy.SimHost(CONSTANT)

    async def algorithm(request, driver):
        index, _ = await sy.first(
            driver.call_model(request, ["x"]), driver.call_model(request, ["x"])
        )
        driver.evidence(first=index)
        index, response = await sy.first_ok(
            driver.call_model(request, ["flaky"]),  # fails at 0.125 s: no tie
            driver.call_model(request, ["x"]),
            driver.call_model(request, ["x"]),
        )
        driver.evidence(first_ok=index)
        return sy.answered("x", response)

    kernel, on_asyncio = run_both(algorithm, ["q"], host=host)
    assert_same_frames(kernel, on_asyncio)
    assert kernel.requests[["evidence_first", "evidence_first_ok"]].values.tolist() == [[0, 1]]
    # the tied calls both finished at the same instant: both are answers, neither was cancelled
    x = kernel.attempts[kernel.attempts["model"] == "x"]
    assert x[["status", "end_s", "served"]].values.tolist() == [
        ["ok", 1.0, False],
        ["ok", 1.0, False],
        ["ok", 2.0, True],
        ["ok", 2.0, False],
    ]


# -- which engine runs what ----------------------------------------------------------------------


async def waits_with_asyncio(request, driver):
    task = asyncio.ensure_future(driver.call_model(request, ["fast"]))
    done, _ = await asyncio.wait({task})
    return sy.answered("fast", done.pop().result())


async def uses_a_task_group(request, driver):
    async with asyncio.TaskGroup() as group:
        task = group.create_task(driver.call_model(request, ["fast"]))
    return sy.answered("fast", task.result())


def test_auto_runs_sykit_only_algorithms_on_the_kernel():
    result = sy.run(race, REQUESTS[:4], host=HOSTS["default"])
    assert result.engine == "kernel"


@pytest.mark.parametrize("algorithm", [waits_with_asyncio, uses_a_task_group])
def test_asyncio_primitives_fall_back_under_auto_and_are_refused_by_the_kernel(algorithm):
    auto = sy.run(algorithm, REQUESTS[:4], host=HOSTS["default"])
    assert auto.engine == "asyncio"
    direct = sy.run(algorithm, REQUESTS[:4], host=HOSTS["default"], engine="asyncio")
    assert_same_frames(auto, direct)  # the rerun from the start gives the records of a direct run
    with pytest.raises(sy.ArgumentError, match="sykit's kernel cannot run; use engine='asyncio'"):
        sy.run(algorithm, REQUESTS[:4], host=HOSTS["default"], engine="kernel")


def test_an_unknown_engine_is_refused():
    with pytest.raises(sy.ArgumentError, match="engine must be one of"):
        sy.run(race, REQUESTS[:1], host=HOSTS["default"], engine="trio")


# -- same-instant order -----------------------------------------------------------------------------
#
# Both engines start a task (a request, a call raced by a helper) the way asyncio does: once what
# is ready at that instant has run, in the order the tasks were started. Calls started at one
# instant therefore start, and draw, in the same order on both, and the frames are identical.

CONSTANT = {
    "x": sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100), output_tokens=50, reject_delay_s=0.125
    ),
    "flaky": sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100),
        output_tokens=50,
        reject_delay_s=0.125,
        faults=sy.Faults(fail_first=4, fail_first_status=503),
    ),
}


def test_calls_started_at_one_instant_by_nested_helpers_start_in_one_order_on_both_engines():
    async def nested_first(request, driver):
        await sy.first(
            sy.first(driver.call_model(request, ["x"]), driver.call_model(request, ["x"])),
            driver.call_model(request, ["flaky"]),
        )
        return sy.route_to("x", request)

    kernel, on_asyncio = run_both(nested_first, ["q"], host=sy.SimHost(CONSTANT))
    # The outer race's second call starts before the inner race's calls (the inner race's task
    # starts them when it first runs), on both engines.
    assert list(kernel.attempts["model"][:3]) == ["flaky", "x", "x"]
    assert_same_frames(kernel, on_asyncio)


def test_host_state_read_at_the_instant_it_changes_is_read_in_one_order_on_both_engines():
    policy = sy.HostPolicy(cooldown_s=5.0)
    host = sy.SimHost(CONSTANT, policy=policy)

    async def flaky_first(request, driver):
        return sy.route_to("flaky", request, fallbacks=["x"])

    # Request 0 fails at 0.125 (cooling flaky until 5.125), retries at 0.375 and fails again at
    # 0.5 (until 5.5) — the instant request 1 arrives and checks the cooldown. Request 1 starts
    # once what was ready at 0.5 has run, on both engines.
    kernel, on_asyncio = run_both(flaky_first, ["a", "b"], host=host, arrivals=[0.0, 0.5])
    skipped = [r.attempts.query("request_id == 1")["error_message"].iloc[0] for r in (kernel, on_asyncio)]  # fmt: skip
    assert skipped == ["cooling down after a transient failure, until t=5.5 s"] * 2
    assert_same_frames(kernel, on_asyncio)


# A task waiting for others (``sy.first``, ``sy.first_ok``, ``sy.hedge``) resumes two turns after
# one of them ends, as ``asyncio.wait`` resumes: its wait's callback, then the task. In between it
# still waits, so a cancellation sent then wakes it on its next turn from the cancellation, like
# any waiting task, not at the turn its wait would have ended.


async def cancelled_in_its_extra_turn(engine, log, already_ended):
    """``waiter`` waits for ``child``; ``child`` ends, and before ``waiter``'s extra turn comes
    the main task cancels ``waiter`` and yields one turn."""

    async def child():
        log.append("child ends")

    async def waits(tasks):
        try:
            await engine.wait_any(tasks)
        except asyncio.CancelledError:
            log.append("waiter cancelled")
            raise
        log.append("waiter resumes")

    tasks: list = []
    if already_ended:  # the child ends before the waiter waits for it
        tasks.append(engine.spawn(child(), None))
        waiter = engine.spawn(waits(tasks), None)
    else:  # the child ends while the waiter waits for it
        waiter = engine.spawn(waits(tasks), None)
        tasks.append(engine.spawn(child(), None))
    await engine.sleep(0)  # the waiter waits, the child ends
    log.append("cancel")
    engine.cancel(waiter, None)
    await engine.sleep(0)
    log.append("main resumes")
    return engine.now()


@pytest.mark.parametrize("already_ended", [False, True], ids=["ends_while_waited", "ended_first"])
def test_a_waiter_cancelled_before_its_extra_turn_wakes_on_its_next_turn_on_both_engines(
    already_ended,
):
    from sykit._run.engines.aio import AsyncioEngine
    from sykit._run.engines.kernel import Kernel, KernelEngine
    from sykit._run.engines.loop import run as run_on_loop

    kernel = Kernel()
    on_kernel: list[str] = []
    end = kernel.run(cancelled_in_its_extra_turn(KernelEngine(kernel), on_kernel, already_ended))
    assert end == 0.0
    engine = AsyncioEngine()
    on_asyncio: list[str] = []
    end = run_on_loop(lambda: cancelled_in_its_extra_turn(engine, on_asyncio, already_ended))
    assert end == 0.0
    # the waiter's cancellation is delivered before the main task's next turn, on both engines
    assert on_kernel == on_asyncio == ["child ends", "cancel", "waiter cancelled", "main resumes"]


def test_a_request_failing_in_its_race_admits_the_next_one_at_the_same_turn_on_both_engines():
    """At 0.0, request 1's race has just lost a member that raised (its waiter has its extra turn
    to take) when its other call fails the request and cancels that waiter; request 1 ends, and
    request 2 takes its slot at 0.0. Request 0 spends five turns before its call to "once", whose
    first answer is a scripted 429, so which request gets the 429 depends on the turn at which
    the cancelled waiter woke: request 2 gets it on both engines."""
    constant = {
        "latency": sy.Latency(ttft=0.5, tokens_per_s=100),
        "output_tokens": 50,
        "reject_delay_s": 0.0,
    }
    host = sy.SimHost(
        {
            "once": sy.ModelProfile(
                **constant, faults=sy.Faults(fail_first=1, fail_first_status=429)
            ),
            "text": sy.ModelProfile(**constant, vision=False),
        },
        policy=sy.HostPolicy(max_retries=0, recover_errors=False),
    )

    async def raises_at_once():
        raise ValueError("lost at once")

    async def algorithm(request, driver):
        await sy.first(raises_at_once(), driver.call_model(request, ["text"]))
        if request.id == 0:
            for _ in range(5):
                await asyncio.sleep(0)
        response = await driver.call_model(request, ["once"])
        return sy.answered("once", response)

    requests = [
        sy.Request("q0", id=0),
        sy.Request("q1", id=1, images=["https://example.com/a.png"]),
        sy.Request("q2", id=2),
    ]
    kernel, on_asyncio = run_both(algorithm, requests, host=host, concurrency=2)
    assert_same_frames(kernel, on_asyncio)
    attempts = kernel.attempts
    assert attempts[["request_id", "model", "status"]].astype(str).values.tolist() == [
        ["0", "text", "cancelled"],  # lost to the error at 0.0
        ["0", "once", "ok"],
        ["1", "text", "error"],  # the capability 400 that fails request 1
        ["2", "text", "cancelled"],
        ["2", "once", "error"],  # the scripted 429
    ]
    assert attempts["error_kind"].tolist()[2::2] == ["capability", "rate_limit"]
    assert attempts["start_s"].tolist() == [0.0] * 5
    assert attempts["end_s"].tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    requests_frame = kernel.requests
    assert requests_frame["status"].astype(str).tolist() == ["ok", "failed", "failed"]
    assert requests_frame["start_s"].tolist() == [0.0, 0.0, 0.0]
    assert requests_frame["n_attempts"].tolist() == [2, 1, 2]
