"""The engine under abuse: algorithms that raise what they should not, tasks that refuse to stop,
virtual times far in the future, inputs too large for the records, cancellation mid-backoff,
garbage left per request, and nest_asyncio. Each test runs on both engines where both apply, and
fails (rather than hangs) on an engine that gets it wrong."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import subprocess
import sys
import textwrap
import warnings

import pytest
from helpers import constant_profile
from helpers import finishes as _finishes

import sykit as sy
from sykit._run.engines.kernel import Kernel, checkpoint

#: A generous bound on the wall time of runs that would spin forever on a broken engine.
HANG_S = 60.0


def finishes(work):
    """``work()``'s result within :data:`HANG_S` of wall time (see :func:`helpers.finishes`)."""
    return _finishes(work, HANG_S)


def requests(n: int) -> list[sy.Request]:
    return [sy.Request(f"question {i}", id=i) for i in range(n)]


def leave_running(driver, request, model: str) -> None:
    """Start a call the algorithm never awaits (the runner must stop it)."""
    sy.start(driver.call_model(request, [model]))[0]


# -- what an algorithm raises ----------------------------------------------------------------------


class Abort(BaseException):
    """A user's BaseException subclass."""


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (asyncio.CancelledError(), "CancelledError: the algorithm raised asyncio.CancelledError"),
        (Abort("gave up"), "Abort: gave up"),
    ],
    ids=["CancelledError", "BaseException"],
)
def test_an_algorithm_raising_a_base_exception_fails_only_its_request(host, engine, error, message):
    async def algorithm(request, driver):
        if request.id == 1:
            leave_running(driver, request, "strong")
            await driver.sleep(0.4)
            raise error
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    res = sy.run(algorithm, requests(3), host=host, engine=engine)
    assert res.engine == engine and not res.interrupted
    frame = res.requests.set_index("request_id")
    assert frame["status"].tolist() == ["ok", "failed", "ok"]
    assert frame.loc[1, "error_kind"] == "algorithm_error"
    assert frame.loc[1, "error_message"].startswith(message)
    assert frame.loc[1, "end_s"] == 0.4
    left = res.attempts.query("request_id == 1")  # its rows are kept
    assert left[["model", "status", "cancel_cause", "end_s"]].values.tolist() == [
        ["strong", "cancelled", "request_failed", 0.4]
    ]


def no_escape(work):
    """``work()``, failing the test (instead of stopping the whole session) if a
    KeyboardInterrupt escapes it."""
    try:
        return work()
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt escaped the run instead of ending it with a Result")


def test_keyboard_interrupt_stops_the_run_and_returns_what_finished(host, engine):
    async def algorithm(request, driver):
        if request.id == 5:
            leave_running(driver, request, "strong")
            await driver.sleep(0.25)
            raise KeyboardInterrupt
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    with pytest.warns(UserWarning, match="interrupted: returning the 4 of 10 requests"):
        res = no_escape(
            lambda: sy.run(algorithm, requests(10), host=host, concurrency=2, engine=engine)
        )
    assert res.engine == engine and res.interrupted
    # Requests 0-3 finished (at 1.0 and 2.0); 4 and 5 were running at 2.25; 6-9 never started.
    assert res.requests["request_id"].tolist() == [0, 1, 2, 3]
    assert res.requests["end_s"].tolist() == [1.0, 1.0, 2.0, 2.0]
    assert res.attempts["request_id"].tolist() == [0, 1, 2, 3]
    assert set(res.attempts["status"]) == {"ok"}


def test_keyboard_interrupt_in_a_comparison_keeps_the_runs_before_it(host, engine):
    async def fine(request, driver):
        return sy.route_to("fast", request)

    async def interrupted(request, driver):
        if request.id == 2:
            raise KeyboardInterrupt
        return sy.route_to("fast", request)

    with pytest.warns(UserWarning, match="the last one partial"):
        cmp = no_escape(
            lambda: sy.compare(
                {"fine": fine, "interrupted": interrupted, "never": fine},
                requests(4),
                host=host,
                concurrency=1,
                engine=engine,
            )
        )
    assert [r.strategy for r in cmp.results] == ["fine", "interrupted"]
    assert [len(r.requests) for r in cmp.results] == [4, 2]
    assert [r.interrupted for r in cmp.results] == [False, True]


def test_ctrl_c_returns_what_finished_on_both_engines():
    """A real SIGINT (sent by the algorithm itself, so it lands at a known request): the kernel
    gets a KeyboardInterrupt, asyncio's runner cancels the run's task; both return a Result."""
    script = textwrap.dedent(
        """
        import os, signal, warnings
        import sykit as sy

        signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
        host = sy.SimHost({"m": sy.ModelProfile(
            latency=sy.Latency(ttft=0.5, tokens_per_s=100), output_tokens=50)})

        for engine in ("kernel", "asyncio"):
            started = []

            async def algorithm(request, driver):
                started.append(request.id)
                if len(started) == 30:
                    os.kill(os.getpid(), signal.SIGINT)
                return sy.answered("m", await driver.call_model(request, ["m"]))

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = sy.run(algorithm, [sy.Request(str(i), id=i) for i in range(100)],
                             host=host, concurrency=10, engine=engine)
            print(res.engine, res.interrupted, len(res.requests), len(res.attempts),
                  res.requests["request_id"].tolist() == list(range(20)),
                  [str(w.message)[:45] for w in caught])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_S * 2
    )
    assert out.returncode == 0, out.stderr
    warning = "['interrupted: returning the 20 of 100 requests']"
    assert out.stdout.splitlines() == [
        f"kernel True 20 20 True {warning}",
        f"asyncio True 20 20 True {warning}",
    ]


# -- a task that will not stop -------------------------------------------------------------------


def test_a_leftover_task_that_swallows_cancellation_is_stopped_at_once(host, engine):
    async def algorithm(request, driver):
        if request.id == 1:

            async def stubborn():
                try:
                    await driver.call_model(request, ["strong"])
                except asyncio.CancelledError:
                    while True:  # refuses every cancellation
                        with contextlib.suppress(asyncio.CancelledError):
                            await driver.sleep(1000)

            sy.start(stubborn())[0]
            await driver.sleep(0.25)
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    res = finishes(lambda: sy.run(algorithm, requests(3), host=host, engine=engine))
    frame = res.requests.set_index("request_id")
    assert frame["status"].tolist() == ["ok", "failed", "ok"]
    assert frame["end_s"].tolist() == [1.0, 1.25, 1.0]  # no 1000 s wait
    assert frame.loc[1, "error_message"] == (
        "1 task(s) the algorithm left running ignored cancellation (3 tries) and were stopped; "
        "let CancelledError propagate"
    )
    strong = res.attempts.query("model == 'strong'")
    assert strong[["status", "cancel_cause", "end_s"]].values.tolist() == [
        ["cancelled", "abandoned", 1.25]
    ]


def test_a_call_left_running_that_fails_the_request_is_not_dropped_while_it_runs(engine):
    """Without recover_errors, a failing call fails its request from inside its own task: the
    request closes while that task is still on the stack, and must not try to close it there."""
    failing = sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100),
        reject_delay_s=0.125,
        faults=sy.Faults(unavailable=1.0),
    )
    host = sy.SimHost(
        {"failing": failing, "fast": constant_profile(0.5, 50, 100.0)},
        policy=sy.HostPolicy(recover_errors=False, max_retries=0),
    )

    async def algorithm(request, driver):
        leave_running(driver, request, "failing")
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    res = sy.run(algorithm, requests(2), host=host, engine=engine)
    assert (
        res.requests[["status", "error_kind", "end_s"]].values.tolist()
        == [["failed", "unavailable", 0.125]] * 2
    )
    rows = res.attempts.query("request_id == 0").set_index("model")
    assert rows.loc["failing", ["status", "error_kind", "end_s"]].tolist() == [
        "error",
        "unavailable",
        0.125,
    ]
    assert rows.loc["fast", ["status", "cancel_cause", "end_s"]].tolist() == [
        "cancelled",
        "request_failed",
        0.125,
    ]


def test_a_request_failing_inside_a_race_cancels_the_race_as_request_failed(engine):
    """Without recover_errors, a call that fails inside a race left running ends the request: its
    sibling is cancelled because the request failed, not as the loser of a race the failed call
    would have won."""
    host = sy.SimHost(
        {
            "text": constant_profile(0.5, 50, 100.0, reject_delay_s=0.125),
            "vision": constant_profile(1.0, 50, 100.0, vision=True),
        },
        policy=sy.HostPolicy(recover_errors=False),
    )

    async def algorithm(request, driver):
        race = sy.first(
            driver.call_model(request, ["text"]), driver.call_model(request, ["vision"])
        )
        sy.start(race)[0]
        await sy.first(driver.call_model(request, ["vision"]))
        return sy.route_to("vision", request)

    image = sy.Request("What is this?", id=0, images=["https://example.com/a.png"])
    res = sy.run(algorithm, [image], host=host, engine=engine)
    assert res.requests[["status", "error_kind", "end_s"]].values.tolist() == [
        ["failed", "capability", 0.125]
    ]
    rows = res.attempts.sort_values(["model", "race_id"]).astype({"cancel_cause": object})
    assert rows[["model", "status", "cancel_cause", "end_s"]].fillna("-").values.tolist() == [
        ["text", "error", "-", 0.125],
        ["vision", "cancelled", "request_failed", 0.125],
        ["vision", "cancelled", "request_failed", 0.125],
    ]


def test_a_task_awaiting_a_cancelled_leftover_is_not_taken_for_a_stubborn_one(host, engine):
    """A leftover that awaits another leftover is woken when that one is cancelled; cancelled in
    turn before it runs, it must stop when it runs (on the kernel it sits in the ready queue)."""

    async def algorithm(request, driver):
        inner = sy.start(driver.call_model(request, ["strong"]))[0]
        sy.start(inner)[0]  # a task awaiting the task
        await driver.sleep(0.5)
        return sy.route_to("fast", request)

    res = sy.run(algorithm, requests(1), host=host, engine=engine)
    assert res.requests[["status", "end_s"]].values.tolist() == [["ok", 1.5]]
    strong = res.attempts.query("model == 'strong'")
    assert strong[["status", "cancel_cause", "end_s"]].values.tolist() == [
        ["cancelled", "abandoned", 0.5]
    ]


def test_leftovers_awaiting_each_other_are_all_cancelled_as_abandoned(host, engine):
    """A race left running whose second entry is a task: closing the leftovers cancels the race,
    which cancels the task through its awaiter; the task keeps the cause it was given itself."""

    async def algorithm(request, driver):

        async def race():  # the task it races is started inside the race's own task
            task = sy.start(driver.call_model(request, ["strong"]))[0]
            return await sy.first(driver.call_model(request, ["strong"]), task)

        sy.start(race())[0]
        await driver.sleep(0.5)
        return sy.route_to("fast", request)

    res = sy.run(algorithm, requests(1), host=host, engine=engine)
    strong = res.attempts.query("model == 'strong'")
    assert (
        strong[["status", "cancel_cause", "end_s"]].values.tolist()
        == [["cancelled", "abandoned", 0.5]] * 2
    )


def test_calls_given_to_a_helper_stopped_before_it_started_are_closed_quietly(host, engine):
    """On asyncio a task starts a loop turn after it is created; cancelled before that, its
    coroutine never runs, and the calls given to it must not be reported as never awaited."""

    async def algorithm(request, driver):
        race = sy.first(
            sy.timeout(2.0, driver.call_model(request, ["strong"])),
            driver.call_model(request, ["strong"]),
        )
        sy.start(race)[0]
        return sy.route_to("fast", request)  # at once: the race may not have started yet

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = sy.run(algorithm, requests(2), host=host, engine=engine)
        gc.collect()
    assert [str(w.message) for w in caught] == []
    assert res.requests["status"].tolist() == ["ok", "ok"]


def test_the_kernel_delivers_a_cancellation_to_a_task_that_was_ready_to_run():
    kernel = Kernel()
    seen = []

    async def child():
        await checkpoint()  # ready to run again at this instant
        seen.append("resumed")  # must not happen: it was cancelled while ready

    async def main():
        task = kernel.spawn(child())
        kernel.cancel(task, "cancelled")
        await checkpoint()
        return task.cancelled(), task.cancel_cause

    assert kernel.run(main()) == (True, "cancelled")
    assert seen == []


# -- virtual time far from zero ------------------------------------------------------------------


def test_far_future_times_stay_exact_on_both_engines(host, engine, monkeypatch):
    # sleeps of 2**40 s: far past a request's default virtual-time horizon (one week)
    monkeypatch.setattr("sykit._run.driver.REQUEST_HORIZON_S", 2.0**42)

    async def algorithm(request, driver):
        await driver.sleep(2.0**30)
        response = await driver.call_model(request, ["fast"])  # 1.0 s
        await driver.sleep(2.0**40)
        await sy.timeout(0.25, driver.call_model(request, ["strong"]))
        await driver.sleep(0.125)
        return sy.answered("fast", response)

    res = finishes(
        lambda: sy.run(
            algorithm, requests(2), host=host, arrivals=[0.0, 2.0**33], engine=engine, strict=True
        )
    )
    t0 = 2.0**30 + 1.0 + 2.0**40
    assert res.attempts[["start_s", "end_s", "status"]].values.tolist() == [
        [2.0**30, 2.0**30 + 1.0, "ok"],
        [t0, t0 + 0.25, "cancelled"],
        [2.0**33 + 2.0**30, 2.0**33 + 2.0**30 + 1.0, "ok"],
        [2.0**33 + t0, 2.0**33 + t0 + 0.25, "cancelled"],
    ]
    assert res.requests["end_s"].tolist() == [t0 + 0.375, 2.0**33 + t0 + 0.375]


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "asyncio-debug"])
def test_the_virtual_time_loop_fires_timers_exactly_far_in_the_future(debug):
    from sykit._run.engines import loop as _engine

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_debug(debug)  # debug mode runs asyncio's own loop iteration
        seen = []
        for seconds in (2.0**30, 0.5, 2.0**52, 1.0):
            await asyncio.sleep(seconds)
            seen.append(loop.time())
        return seen

    assert finishes(lambda: _engine.run(main)) == [
        2.0**30,
        2.0**30 + 0.5,
        2.0**30 + 0.5 + 2.0**52,
        2.0**30 + 0.5 + 2.0**52 + 1.0,
    ]


@pytest.mark.parametrize(
    ("make", "phrase"),
    [
        (
            lambda request, driver: driver.sleep(float("inf")),
            r"cannot sleep forever \(seconds=inf\)",
        ),
        (
            lambda request, driver: sy.timeout(float("inf"), driver.call_model(request, ["fast"])),
            "seconds must be a finite number of seconds",
        ),
        (
            lambda request, driver: sy.hedge(
                lambda: driver.call_model(request, ["fast"]), after=float("inf")
            ),
            "after must be a finite number of seconds",
        ),
    ],
    ids=["sleep", "timeout", "hedge"],
)
def test_infinite_waits_are_clear_argument_errors(host, engine, make, phrase):
    async def algorithm(request, driver):
        await make(request, driver)
        return sy.route_to("fast", request)

    with pytest.raises(sy.ArgumentError, match=phrase):
        sy.run(algorithm, requests(1), host=host, engine=engine, strict=True)
    with pytest.warns(sy.AlgorithmWarning):
        res = sy.run(algorithm, requests(1), host=host, engine=engine)
    assert res.requests["error_message"].iloc[0].startswith("ArgumentError: ")


@pytest.mark.parametrize(
    "arrivals", [[0.0, float("inf")], [0.0, float("nan")], [float("-inf"), 0.0]]
)
def test_infinite_arrivals_are_refused_before_the_run(host, arrivals):
    with pytest.raises(sy.ArgumentError, match=r"arrivals\[\d\] must be ≥ 0 and finite"):
        sy.run(sy.strategies.single("fast"), requests(2), host=host, arrivals=arrivals)


# -- values too large for the records -------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "phrase"),
    [
        (lambda: sy.Request("x", id=2**70), "does not fit in 64 bits"),
        (lambda: sy.Request("x", id=-(2**63) - 1), "does not fit in 64 bits"),
        (lambda: sy.Request("x", input_tokens=2**33), r"input_tokens must be ≤ 2\*\*31 - 1"),
        (lambda: sy.Request("x", max_output_tokens=2**40), r"max_output_tokens .* ≤ 2\*\*31 - 1"),
        (
            lambda: sy.datasets.GroundTruth(output_tokens={"fast": 2**31}),
            r"output_tokens\['fast'\] must be ≤ 2\*\*31 - 1",
        ),
    ],
    ids=["id", "negative_id", "input_tokens", "max_output_tokens", "truth_output_tokens"],
)
def test_values_too_large_for_the_records_are_refused_where_they_are_written(make, phrase):
    with pytest.raises(sy.ArgumentError, match=phrase):
        make()


def test_the_largest_values_that_fit_run_to_the_end(engine):
    model = constant_profile(0.5, 50, 100.0, price_in=1.0, context_window=2**31 - 1)
    big = sy.Request("x", id=2**63 - 1, input_tokens=2**31 - 51, max_output_tokens=50)
    res = sy.run(sy.strategies.single("m"), [big], host=sy.SimHost({"m": model}), engine=engine)
    assert res.requests["request_id"].tolist() == [2**63 - 1]
    assert res.attempts[["input_tokens", "output_tokens"]].values.tolist() == [[2**31 - 51, 50]]


def test_a_profile_that_can_draw_too_many_output_tokens_is_refused_before_the_run():
    called = []

    async def algorithm(request, driver):
        called.append(request.id)
        return sy.route_to("huge", request)

    # A log-normal whose far tail passes 2**31 tokens: refused, not an OverflowError mid-run.
    host = sy.SimHost({"huge": sy.ModelProfile(output_tokens=sy.dists.LogNormal(1e6, sigma=2.0))})
    with pytest.raises(sy.ArgumentError, match=r"model 'huge': output_tokens .* more than the 2"):
        sy.run(algorithm, requests(3), host=host)
    assert called == []


def test_a_call_may_have_hundreds_of_candidates_but_not_more_than_the_limit(engine):
    many = {f"m{i}": sy.ModelProfile(faults=sy.Faults(unavailable=1.0)) for i in range(199)}
    many["last"] = sy.ModelProfile()
    host = sy.SimHost(many, policy=sy.HostPolicy(max_retries=0, cooldown_s=0))
    names = list(many)

    async def algorithm(request, driver):
        return sy.route_to(names[0], request, fallbacks=names[1:])

    res = sy.run(algorithm, requests(1), host=host, engine=engine)
    assert res.attempts["candidate_index"].tolist() == list(range(200))
    assert res.requests["served_model"].tolist() == ["last"]

    with pytest.raises(sy.ArgumentError, match="40,001 candidate models; a call may have at most"):
        sy.route_to("m0", sy.Request("x"), fallbacks=["m1"] * 40_000)

    async def calls_too_many(request, driver):
        await driver.call_model(request, ["m0"] * 40_000)

    with pytest.raises(sy.ArgumentError, match="40,000 candidate models"):
        sy.run(calls_too_many, requests(1), host=host, engine=engine, strict=True)


# -- cancelled while waiting to retry ---------------------------------------------------------------


@pytest.mark.parametrize("helper", ["timeout", "first"])
def test_a_call_cancelled_during_its_retry_backoff_claims_no_retry(engine, helper):
    failing = sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100),
        output_tokens=50,
        reject_delay_s=0.125,
        faults=sy.Faults(unavailable=1.0),
    )
    other = constant_profile(0.3, 0, 100.0)  # answers at exactly 0.3 s
    host = sy.SimHost({"failing": failing, "other": other})

    async def algorithm(request, driver):
        # The 503 comes at 0.125 s; the retry would start at 0.375 s; 0.3 s ends the wait.
        if helper == "timeout":
            await sy.timeout(0.3, driver.call_model(request, ["failing"]))
        else:
            await sy.first(
                driver.call_model(request, ["failing"]), driver.call_model(request, ["other"])
            )
        return sy.route_to("other", request)

    res = sy.run(algorithm, requests(1), host=host, engine=engine)
    failed = res.attempts.query("model == 'failing'")
    cause = "timeout" if helper == "timeout" else "lost_race"
    assert failed[["status", "retried", "cancel_cause", "end_s"]].values.tolist() == [
        ["error", False, cause, 0.125]
    ]
    assert res.requests["n_retries"].tolist() == [0]


# -- garbage ------------------------------------------------------------------------------------


def test_a_kernel_run_leaves_no_cyclic_garbage_per_request():
    latency = sy.Latency(ttft=sy.dists.LogNormal(0.8, sigma=0.6), tokens_per_s=1e9)
    profile = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1.0, price_out=1.0)
    host = sy.SimHost({"A": profile, "B": profile, "C": profile})

    async def race_then_timeout(request, driver):
        _, first = await sy.first(
            driver.call_model(request, ["A"]), driver.call_model(request, ["B"])
        )
        await sy.timeout(1.0, driver.call_model(request, ["C"]))
        return sy.answered(first.model, first)

    def freed_after(n: int) -> int:
        batch = [sy.Request("x", id=i, input_tokens=10) for i in range(n)]
        gc.collect()
        result = sy.run(race_then_timeout, batch, host=host, concurrency=64, engine="kernel")
        assert len(result.attempts) == 3 * n
        return gc.collect()

    small, large = freed_after(2_000), freed_after(10_000)
    assert abs(large - small) < 100, (small, large)


# -- nest_asyncio ----------------------------------------------------------------------------------


def test_arun_under_nest_asyncio_returns_and_the_interpreter_exits():
    script = textwrap.dedent(
        """
        import asyncio
        import nest_asyncio
        import sykit as sy

        nest_asyncio.apply()
        host = sy.SimHost({"m": sy.ModelProfile(
            latency=sy.Latency(ttft=0.5, tokens_per_s=100), output_tokens=50)})

        async def plain(request, driver):
            return sy.answered("m", await driver.call_model(request, ["m"]))

        async def needs_asyncio(request, driver):
            task = asyncio.ensure_future(driver.call_model(request, ["m"]))
            return sy.answered("m", await task)

        async def main():
            seen = []
            for algorithm, engine in ((plain, "kernel"), (plain, "asyncio"), (needs_asyncio, "auto")):
                result = await sy.arun(algorithm, ["a", "b", "c"], host=host, engine=engine)
                seen.append((result.engine, result.requests["end_s"].tolist()))
            return seen

        print(asyncio.run(main()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_S * 2
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "[('kernel', [1.0, 1.0, 1.0]), ('asyncio', [1.0, 1.0, 1.0]), ('asyncio', [1.0, 1.0, 1.0])]"
    )
