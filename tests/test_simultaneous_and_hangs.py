"""Two kinds of trouble an engine must not have.

1. Simultaneous events. A hedge with ``after=0`` sets timers of 0 s: its copies are due at the
   instant it starts, and start one after another, each once what is due at that instant before
   it has run (docs/engines.md, "What happens first at one instant"). Both event engines follow
   that rule, so inside a race won at that instant, or queued for a ``sy.Capacity``, the copies
   start in the same order and number and the frames are identical.
2. Algorithms that would run forever: one that polls ``driver.sleep`` or ``asyncio.sleep``
   forever stops at its request's virtual-time horizon; one that swallows the cancellation sent
   to stop it is abandoned after a few. Each such run is guarded by a wall-clock limit, so an
   engine that gets it wrong fails the test instead of hanging the suite.

Latencies are constant: "m" answers in 1.0 s; "down" fails with a 503 at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from helpers import constant_profile, run_both
from helpers import finishes as _finishes

import sykit as sy
from sykit._run.driver import REQUEST_HORIZON_S, SWALLOWED_CANCELLATIONS

#: The wall time a guarded run may take before it counts as a hang.
HANG_S = 20.0


def host(**models: sy.ModelProfile) -> sy.SimHost:
    profiles = {
        "m": constant_profile(0.5, 50, 100.0, price_in=1.0, price_out=2.0),
        "down": constant_profile(
            0.5, 50, 100.0, reject_delay_s=0.0, faults=sy.Faults(fail_first=10**6)
        ),
        **models,
    }
    return sy.SimHost(profiles, policy=sy.HostPolicy(max_retries=0))


def one_slot(queue_timeout_s: float | None = None) -> sy.ModelProfile:
    """One call at a time; a call that would wait longer than ``queue_timeout_s`` times out."""
    return constant_profile(
        0.5, 50, 100.0, capacity=sy.Capacity(slots=1, queue_timeout_s=queue_timeout_s)
    )


def requests(n: int) -> list[sy.Request]:
    return [sy.Request(f"q{i}", id=i) for i in range(n)]


def timeline(result: sy.Result) -> list[tuple]:
    """(request, model, status, start, end, error kind) of every attempt, in the frame's order."""
    columns = ["request_id", "model", "status", "start_s", "end_s", "error_kind"]
    frame = result.attempts[columns].astype(object).fillna("-")
    return [tuple(str(value) for value in row) for row in frame.values.tolist()]


# -- 1. hedges due after 0 s ---------------------------------------------------------------------


async def returns_at_once() -> str:
    return "at once"


def hedge_in_a_race(rival: str, copies: int) -> Callable[..., Any]:
    """A hedge of "m" (after=0) raced against ``rival``, which ends at t=0: a coroutine that
    returns at once, or a call of "down", which fails at once."""

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        hedged = sy.hedge(lambda: driver.call_model(request, ["m"]), after=0.0, copies=copies)
        other = returns_at_once() if rival == "returns" else driver.call_model(request, ["down"])
        index, _ = await sy.first(hedged, other)
        driver.evidence(winner=index)
        return sy.route_to("m", request)

    return algorithm


@pytest.mark.parametrize("rival", ["returns", "fails"])
@pytest.mark.parametrize("copies", [2, 3])
def test_a_hedge_after_0_in_a_race_won_at_that_instant_starts_one_copy_on_both_engines(
    copies: int, rival: str
) -> None:
    """The rival ends at t=0, before the hedge's 0 s timer is due: the race ends having started
    the hedge's first copy only (the kernel used to start every copy at once)."""
    result = run_both(hedge_in_a_race(rival, copies), requests(2), host=host())
    assert result.requests["evidence_winner"].tolist() == [1, 1]
    hedged = result.attempts[result.attempts["model"] == "m"]
    # per request: the hedge's first copy, lost at 0.0, then the answer-phase call
    assert (
        hedged[["status", "start_s", "end_s"]].astype(str).values.tolist()
        == [
            ["cancelled", "0.0", "0.0"],
            ["ok", "0.0", "1.0"],
        ]
        * 2
    )


def hedge_of(model: str, copies: int) -> Callable[..., Any]:
    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        make = lambda: driver.call_model(request, [model])  # noqa: E731
        return sy.answered(model, await sy.hedge(make, after=0.0, copies=copies))

    return algorithm


def test_hedge_copies_of_two_requests_queue_for_a_capacity_in_one_order_on_both_engines() -> None:
    """Two requests hedge a one-slot model at t=0, each with 2 copies, and a call waits 1 s at
    most for the slot. The copies queue in the order they start, which the rule above sets: 0's
    first, 1's first, 0's second, 1's second (the kernel queued both of 0's first). Request 0's
    first copy is served; request 1's first waits 1 s and is served at 1.0; the second copies
    time out at 1.0 having waited their second. Request 1 succeeds on both engines (on one
    engine only, before)."""
    result = run_both(hedge_of("slot", 2), requests(2), host=host(slot=one_slot(1.0)))
    assert timeline(result) == [
        ("0", "slot", "ok", "0.0", "1.0", "-"),
        ("0", "slot", "error", "0.0", "1.0", "timeout"),
        ("1", "slot", "ok", "0.0", "2.0", "-"),
        ("1", "slot", "error", "0.0", "1.0", "timeout"),
    ]
    assert result.requests["status"].tolist() == ["ok", "ok"]


def test_hedge_copies_of_three_requests_queue_in_the_order_they_start_on_both_engines() -> None:
    """Three requests, 3 copies each, one slot and no queue limit: each request's first copy is
    queued before any request's later copies, so the requests are served one second apart
    (0 at 1.0, 1 at 2.0, 2 at 3.0), their losing copies cancelled when they are served."""
    result = run_both(hedge_of("slot", 3), requests(3), host=host(slot=one_slot()))
    assert result.requests["end_s"].tolist() == [1.0, 2.0, 3.0]
    lost = result.attempts[result.attempts["status"] == "cancelled"]
    assert lost["cancel_cause"].astype(str).unique().tolist() == ["lost_race"]
    assert lost.groupby("request_id", observed=True)["end_s"].first().tolist() == [1.0, 2.0, 3.0]


async def hedges_in_every_way(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    """Hedges after 0 s every way the helpers nest: alone, raced, under a timeout of 0 s, two
    raced for the first success, and started beside a call; copies 2 and 3 by request."""
    copies = 2 + int(request.id) % 2
    make = lambda: driver.call_model(request, ["slot"])  # noqa: E731
    kind = int(request.id) % 5
    if kind == 0:
        await sy.hedge(make, after=0.0, copies=copies)
    elif kind == 1:
        await sy.first(
            sy.hedge(make, after=0.0, copies=copies), driver.call_model(request, ["down"])
        )
    elif kind == 2:
        await sy.timeout(0.0, sy.hedge(make, after=0.0, copies=copies))
    elif kind == 3:
        await sy.first_ok(sy.hedge(make, after=0.0, copies=copies), sy.hedge(make, after=0.0))
    else:
        hedged, plain = sy.start(sy.hedge(make, after=0.0, copies=copies), make())
        await sy.wait_first(hedged, plain)
        await hedged.cancel()
        await plain.cancel()
    return sy.route_to("m", request)


@pytest.mark.parametrize(
    "loop",
    [{}, {"concurrency": 3}, {"arrivals": [0.0] * 5 + [1.0] * 5}],
    ids=["all_at_once", "three_slots", "two_instants"],
)
@pytest.mark.parametrize("queue_timeout_s", [None, 1.5])
def test_many_requests_hedging_after_0_at_one_instant_give_the_same_frames_on_both_engines(
    loop: dict[str, Any], queue_timeout_s: float | None
) -> None:
    result = run_both(
        hedges_in_every_way, requests(10), host=host(slot=one_slot(queue_timeout_s)), **loop
    )
    assert len(result.requests) == 10
    assert (result.attempts["status"] == "cancelled").any()


# -- guarded runs ----------------------------------------------------------------------------------


def finishes(work):
    """``work()``'s result within :data:`HANG_S` of wall time (see :func:`helpers.finishes`)."""
    return _finishes(work, HANG_S)


def assert_exact_records(result: sy.Result, n: int) -> None:
    """One request row per request, and every attempt closed (an end, a final status)."""
    assert sorted(result.requests["request_id"].astype(str)) == sorted(
        str(r.id) for r in requests(n)
    )
    attempts = result.attempts
    assert attempts["end_s"].notna().all()
    assert set(attempts["status"].astype(str)) <= {"ok", "error", "cancelled", "skipped"}


def looper_failure(result: sy.Result) -> tuple[str, str, float]:
    """(error_kind, error_message, end_s) of request 1, the one whose algorithm runs away."""
    row = result.requests.set_index("request_id").loc[1]
    assert row["status"] == "failed"
    return str(row["error_kind"]), str(row["error_message"]), float(row["end_s"])


def runaway(loop: Callable[..., Any]) -> Callable[..., Any]:
    """An algorithm whose request 1 runs ``loop(request, driver)`` forever; the others answer."""

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        if request.id == 1:
            await loop(request, driver)
        return sy.route_to("m", request)

    return algorithm


# -- 1b. a held-back hedge after 0 s does not spin ------------------------------------------------


async def hedges_only_after_a_failure(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    asked: list[float] = []

    def never() -> bool:
        asked.append(driver.now())
        return False

    response = await sy.hedge(
        lambda: driver.call_model(request, ["m"]), after=0.0, copies=3, only_if=never
    )
    driver.evidence(asked=len(asked))
    return sy.answered("m", response)


def test_a_hedge_after_0_held_back_by_only_if_waits_for_a_copy_instead_of_spinning() -> None:
    """``only_if`` declines the second copy at t=0; asked again at the same instant it could
    only decline again, so the hedge waits for the first copy to end (it used to ask forever,
    at t=0)."""
    result = finishes(lambda: run_both(hedges_only_after_a_failure, requests(2), host=host()))
    assert timeline(result) == [
        ("0", "m", "ok", "0.0", "1.0", "-"),
        ("1", "m", "ok", "0.0", "1.0", "-"),
    ]
    assert result.requests["evidence_asked"].tolist() == [1, 1]


# -- 2a. polling driver.sleep forever --------------------------------------------------------------


async def polls_driver_sleep(request: sy.Request, driver: sy.Driver) -> None:
    while True:
        try:
            await driver.sleep(3600.0)
        except Exception:  # what an algorithm may catch: not a cancellation
            continue


async def polls_driver_sleep_swallowing_everything(request: sy.Request, driver: sy.Driver) -> None:
    while True:
        try:
            await driver.sleep(3600.0)
        except BaseException:  # the cancellation too
            continue


def test_polling_driver_sleep_forever_stops_at_the_horizon_on_both_engines() -> None:
    result = finishes(lambda: run_both(runaway(polls_driver_sleep), requests(3), host=host()))
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith("RequestHorizon: request 1 would sleep past its virtual-time horizon")
    assert end == REQUEST_HORIZON_S


def test_polling_driver_sleep_and_swallowing_the_cancellation_stops_on_both_engines() -> None:
    """The sleep past the horizon raises a cancellation; swallowed, the next sleep waits and is
    cancelled from outside, until the request gives up on the algorithm (it used to raise again
    at once, forever, in zero virtual time)."""
    algorithm = runaway(polls_driver_sleep_swallowing_everything)
    result = finishes(lambda: run_both(algorithm, requests(3), host=host()))
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith(
        f"SwallowedCancellation: request 1 swallowed the cancellation sent to stop it "
        f"{SWALLOWED_CANCELLATIONS} times"
    )
    assert "RequestHorizon: request 1 would sleep past its virtual-time horizon" in message
    assert end == REQUEST_HORIZON_S  # all at that instant
    assert result.requests["status"].tolist() == ["ok", "failed", "ok"]


# -- 2b. polling asyncio.sleep forever -------------------------------------------------------------


async def polls_asyncio_sleep(request: sy.Request, driver: sy.Driver) -> None:
    while True:
        await asyncio.sleep(1)


async def polls_asyncio_sleep_swallowing_everything(request: sy.Request, driver: sy.Driver) -> None:
    while True:
        try:
            await asyncio.sleep(1)
        except BaseException:
            continue


@pytest.fixture
def short_horizon(monkeypatch: pytest.MonkeyPatch) -> float:
    """A horizon of 10 minutes, so a loop of 1 s sleeps reaches it in a few hundred turns."""
    monkeypatch.setattr("sykit._run.driver.REQUEST_HORIZON_S", 600.0)
    return 600.0


def test_polling_asyncio_sleep_forever_stops_at_the_horizon(short_horizon: float) -> None:
    """The first wait the algorithm begins past its horizon fails the request, naming it and the
    horizon (virtual time used to run on forever)."""
    algorithm = runaway(polls_asyncio_sleep)
    result = finishes(lambda: sy.run(algorithm, requests(3), host=host(), progress=False))
    assert result.engine == "asyncio"
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message == (
        "RequestHorizon: request 1 waited again 601 s after its start, past its virtual-time "
        "horizon of 600 s (sykit._run.driver.REQUEST_HORIZON_S); does the algorithm wait "
        "(asyncio.sleep, a timeout) in a loop that never ends?"
    )
    assert end == short_horizon + 1.0


def test_polling_asyncio_sleep_forever_stops_at_the_default_horizon() -> None:
    async def polls_every_minute(request: sy.Request, driver: sy.Driver) -> None:
        while True:
            await asyncio.sleep(60)

    algorithm = runaway(polls_every_minute)
    result = finishes(lambda: sy.run(algorithm, requests(2), host=host(), progress=False))
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith("RequestHorizon: request 1 waited again")
    assert end == REQUEST_HORIZON_S + 60.0


def test_polling_asyncio_sleep_and_swallowing_the_cancellation_stops(short_horizon: float) -> None:
    algorithm = runaway(polls_asyncio_sleep_swallowing_everything)
    result = finishes(lambda: sy.run(algorithm, requests(3), host=host(), progress=False))
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith("SwallowedCancellation: request 1 swallowed the cancellation")
    assert "RequestHorizon: request 1 waited again 601 s after its start" in message
    # one cancellation per wait it begins past the horizon: at 601, 602 and 603 s
    assert end == short_horizon + SWALLOWED_CANCELLATIONS


async def times_out_forever(request: sy.Request, driver: sy.Driver) -> None:
    """A loop that wakes only by its timeouts: a 1 s timeout on a 1.5 s call, again and again."""
    while True:
        await sy.timeout(1.0, driver.call_model(request, ["slow"]))


def test_a_loop_of_timeouts_stops_at_the_horizon_on_both_engines(short_horizon: float) -> None:
    slow = constant_profile(1.0, 50, 100.0)
    result = finishes(
        lambda: run_both(runaway(times_out_forever), requests(2), host=host(slow=slow))
    )
    assert_exact_records(result, 2)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith("RequestHorizon: request 1 waited again 601 s after its start")
    assert end == 601.0
    calls = result.attempts[result.attempts["model"] == "slow"]
    assert len(calls) == 602  # one a second, from 0 to 601
    causes = calls["cancel_cause"].astype(str).tolist()
    assert causes == ["timeout"] * 601 + ["request_failed"]


# -- 2c. swallowing the cancellation sent on a deadlock --------------------------------------------


async def waits_for_an_event_nobody_sets(request: sy.Request, driver: sy.Driver) -> None:
    never = asyncio.Event()
    while True:
        with contextlib.suppress(BaseException):  # the cancellation too
            await never.wait()


async def waits_for_itself(request: sy.Request, driver: sy.Driver) -> None:
    """A deadlock with sykit alone (the kernel runs it): a started task that awaits itself."""
    started: list[sy.Started[None]] = []

    async def awaits_itself() -> None:
        await started[0]

    started.extend(sy.start(awaits_itself()))
    while True:
        with contextlib.suppress(BaseException):
            await started[0]


def test_swallowing_the_deadlock_cancellation_fails_the_request_after_a_few() -> None:
    algorithm = runaway(waits_for_an_event_nobody_sets)
    result = finishes(lambda: sy.run(algorithm, requests(3), host=host(), progress=False))
    assert result.engine == "asyncio"
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith(
        f"SwallowedCancellation: request 1 swallowed the cancellation sent to stop it "
        f"{SWALLOWED_CANCELLATIONS} times (sykit._run.driver.SWALLOWED_CANCELLATIONS) and was "
        "abandoned; it was stopped for SimDeadlock: simulation deadlock at t=1 s"
    )
    assert "in waits_for_an_event_nobody_sets" in message  # where it waits
    assert end == 1.0  # when the others had finished
    assert result.requests["status"].tolist() == ["ok", "failed", "ok"]


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_swallowing_the_deadlock_cancellation_fails_the_request_on_both_engines(
    engine: str,
) -> None:
    """The same with sykit alone, so on the kernel too. (The deadlock's report names the waiting
    tasks as each engine does, so only it differs between the engines.)"""
    algorithm = runaway(waits_for_itself)
    run = lambda: sy.run(algorithm, requests(3), host=host(), engine=engine, progress=False)  # noqa: E731
    result = finishes(run)
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith("SwallowedCancellation: request 1 swallowed the cancellation")
    assert "SimDeadlock: simulation deadlock at t=1 s" in message
    assert "in waits_for_itself" in message
    assert end == 1.0
    assert result.requests["status"].tolist() == ["ok", "failed", "ok"]


async def cleans_up_after_a_deadlock(request: sy.Request, driver: sy.Driver) -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await driver.sleep(0.25)  # cleanup that waits once, then lets the cancellation go
        raise


def test_cleanup_that_waits_once_after_the_deadlock_cancellation_is_not_cut_short() -> None:
    algorithm = runaway(cleans_up_after_a_deadlock)
    result = finishes(lambda: sy.run(algorithm, requests(2), host=host(), progress=False))
    kind, message, end = looper_failure(result)
    assert kind == "deadlock"
    assert message.startswith("simulation deadlock at t=1 s")
    assert end == 1.25


async def swallows_the_kernels_refusal(request: sy.Request, driver: sy.Driver) -> None:
    while True:
        with contextlib.suppress(BaseException):  # NeedsAsyncio on the kernel, too
            await asyncio.sleep(1)


def test_an_algorithm_swallowing_the_kernels_refusal_of_asyncio_is_stopped_at_its_next_await(
    short_horizon: float,
) -> None:
    """On the kernel the first use of asyncio is refused; caught and tried again, the next use
    suspends the algorithm, and the kernel stops there (it used to raise and be caught forever).
    ``engine="kernel"`` then refuses the algorithm; ``"auto"`` runs it on asyncio."""
    algorithm = runaway(swallows_the_kernels_refusal)

    def on_the_kernel() -> None:
        sy.run(algorithm, requests(2), host=host(), engine="kernel", progress=False)

    with pytest.raises(sy.ArgumentError, match="sykit's kernel cannot run"):
        finishes(on_the_kernel)
    result = finishes(lambda: sy.run(algorithm, requests(2), host=host(), progress=False))
    assert result.engine == "asyncio"
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message.startswith("SwallowedCancellation: request 1 swallowed the cancellation")
    assert end == short_horizon + SWALLOWED_CANCELLATIONS


# -- the rule itself, on the engines -------------------------------------------------------------


async def zero_second_timers(engine: Any, log: list[str]) -> float:
    """Tasks that take turns at t=0 beside a wait of 0 s and a callback due in 0 s."""

    async def takes_turns(name: str, turns: int) -> None:
        for turn in range(turns):
            log.append(f"{name} {turn}")
            await engine.sleep(0)

    async def waits_0_s(blocker: Any) -> None:
        log.append("waiter waits")
        woke = await engine.wait_any([blocker], 0.0)
        log.append(f"waiter woke {'by its timeout' if woke is None else 'by its task'}")

    blocker = engine.spawn(engine.sleep(1.0), None)
    engine.spawn(takes_turns("a", 4), None)
    engine.spawn(waits_0_s(blocker), None)
    engine.call_later(0.0, log.append, "timer of 0 s")
    engine.spawn(takes_turns("b", 4), None)
    await engine.sleep(0)
    log.append("main")
    await engine.wait_any([blocker])
    return float(engine.now())


def test_timers_of_0_s_fire_on_the_next_turn_on_both_engines() -> None:
    from sykit._run.engines.aio import AsyncioEngine
    from sykit._run.engines.kernel import Kernel, KernelEngine
    from sykit._run.engines.loop import run as run_on_loop

    kernel = Kernel()
    on_kernel: list[str] = []
    assert kernel.run(zero_second_timers(KernelEngine(kernel), on_kernel)) == 1.0
    engine = AsyncioEngine()
    on_asyncio: list[str] = []
    assert run_on_loop(lambda: zero_second_timers(engine, on_asyncio)) == 1.0
    # turn 1: main starts the others and sets its timer; turn 2: each of them runs once, then
    # main's timer fires (due now, queued behind them) and the waiter's timer is set; turn 3:
    # a, b, then the waiter's timer; turn 4: a, b, then the waiter it woke
    assert on_kernel == on_asyncio
    assert on_kernel == [
        "a 0",
        "waiter waits",
        "b 0",
        "main",
        "timer of 0 s",
        "a 1",
        "b 1",
        "a 2",
        "b 2",
        "waiter woke by its timeout",
        "a 3",
        "b 3",
    ]


# -- a limit on waits, and the limits in the tasks an algorithm starts -----------------------------


@pytest.fixture
def few_waits(monkeypatch: pytest.MonkeyPatch) -> int:
    """At most 1,000 waits a request, so a polling loop reaches the limit in a few turns."""
    monkeypatch.setattr("sykit._run.driver.WAITS_PER_REQUEST", 1000)
    return 1000


async def polls_driver_sleep_in_tiny_steps(request: sy.Request, driver: sy.Driver) -> None:
    while True:
        await driver.sleep(0.001)


def test_a_driver_sleep_loop_in_tiny_steps_stops_at_the_wait_limit_on_both_engines(
    few_waits: int,
) -> None:
    """A week of 1 ms sleeps would take hours of wall time; the wait limit stops it first, at the
    same instant on both engines."""
    algorithm = runaway(polls_driver_sleep_in_tiny_steps)
    result = finishes(lambda: run_both(algorithm, requests(3), host=host()))
    assert_exact_records(result, 3)
    kind, message, end = looper_failure(result)
    assert kind == "algorithm_error"
    assert message == (
        "RequestHorizon: request 1 began more than 1,000 driver.sleep calls "
        "(sykit._run.driver.WAITS_PER_REQUEST) without finishing; does the algorithm poll in a "
        "loop that never ends?"
    )
    assert end == pytest.approx(1.0)


def test_an_asyncio_sleep_loop_in_tiny_steps_stops_at_the_default_wait_limit() -> None:
    async def polls_every_millisecond(request: sy.Request, driver: sy.Driver) -> None:
        while True:
            await asyncio.sleep(0.001)

    algorithm = runaway(polls_every_millisecond)
    result = finishes(lambda: sy.run(algorithm, requests(2), host=host(), progress=False))
    _kind, message, end = looper_failure(result)
    assert message.startswith("RequestHorizon: request 1 began more than 100,000 waits ")
    assert end == pytest.approx(100.0)


async def polls_in_a_task_it_started(request: sy.Request, driver: sy.Driver) -> None:
    async def poll() -> None:
        while True:
            await asyncio.sleep(0.001)

    await asyncio.ensure_future(poll())


def test_a_loop_in_a_task_the_algorithm_started_stops_at_the_wait_limit(few_waits: int) -> None:
    algorithm = runaway(polls_in_a_task_it_started)
    result = finishes(lambda: sy.run(algorithm, requests(3), host=host(), progress=False))
    assert result.engine == "asyncio"
    assert_exact_records(result, 3)
    _kind, message, end = looper_failure(result)
    assert message == (
        "RequestHorizon: request 1 began more than 1,000 waits in the tasks it started "
        "(sykit._run.driver.WAITS_PER_REQUEST) without finishing; does the algorithm poll in a "
        "loop that never ends?"
    )
    assert end == pytest.approx(1.0)


def test_a_loop_in_a_task_the_algorithm_started_stops_at_the_horizon(short_horizon: float) -> None:
    async def polls_every_minute_in_a_task(request: sy.Request, driver: sy.Driver) -> None:
        async def poll() -> None:
            while True:
                await asyncio.sleep(60)

        await asyncio.ensure_future(poll())

    algorithm = runaway(polls_every_minute_in_a_task)
    result = finishes(lambda: sy.run(algorithm, requests(3), host=host(), progress=False))
    assert_exact_records(result, 3)
    _kind, message, end = looper_failure(result)
    assert message == (
        "RequestHorizon: request 1 waited again 660 s after its start, past its virtual-time "
        "horizon of 600 s (sykit._run.driver.REQUEST_HORIZON_S); does the algorithm wait "
        "(asyncio.sleep, a timeout) in a loop that never ends?"
    )
    assert end == short_horizon + 60.0


def test_a_task_cleaning_up_after_its_request_failed_may_still_wait() -> None:
    cleaned: list[float] = []

    async def cleans_up(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        async def worker() -> None:
            try:
                await asyncio.sleep(100)
            finally:
                await asyncio.sleep(0.5)  # cleanup that waits once
                cleaned.append(driver.now())

        task = asyncio.ensure_future(worker())
        await asyncio.sleep(1)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return sy.route_to("m", request)

    result = finishes(lambda: sy.run(cleans_up, requests(2), host=host(), progress=False))
    assert (result.requests["status"] == "ok").all()
    assert cleaned == [1.5, 1.5]
