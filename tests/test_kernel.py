"""The trampoline kernel on its own: exact times, FIFO ties, eager children, thrown cancellation."""

from __future__ import annotations

import asyncio
import gc

import pytest

from sykit._base.errors import ArgumentError, SimDeadlock
from sykit._run.engines.kernel import Kernel, NeedsAsyncio, checkpoint, sleep, wait_any


def run(main):
    kernel = Kernel()
    return kernel, kernel.run(main(kernel))


def test_sleeps_wake_at_exact_times_and_ties_fire_in_the_order_they_were_set():
    log = []

    async def sleeper(kernel, name, seconds):
        await sleep(seconds)
        log.append((name, kernel.now))

    async def main(kernel):
        for i in range(5):
            kernel.spawn(sleeper(kernel, i, 1.5))
        kernel.spawn(sleeper(kernel, "early", 0.25))
        await sleep(3.0)
        return kernel.now

    _, end = run(main)
    assert end == 3.0
    assert log == [("early", 0.25)] + [(i, 1.5) for i in range(5)]


def test_the_clock_stays_exact_far_in_the_future():
    async def main(kernel):
        await sleep(2.0**40)
        await sleep(1e-6)
        return kernel.now

    _, end = run(main)
    assert end == 2.0**40 + 1e-6


def test_children_start_when_their_parent_waits_and_a_loser_is_cancelled_at_the_instant_it_lost():
    """As asyncio tasks do: a child first runs once its parent has suspended, in spawn order."""
    log = []

    async def call(kernel, name, seconds):
        log.append(("start", name, kernel.now))
        try:
            await sleep(seconds)
        except asyncio.CancelledError:
            log.append(("cancelled", name, kernel.now, kernel.current.cancel_cause))
            raise
        return name

    async def main(kernel):
        a = kernel.spawn(call(kernel, "a", 1.0))
        b = kernel.spawn(call(kernel, "b", 2.0))
        log.append(("spawned", kernel.now))
        winner = await wait_any([a, b])
        kernel.cancel(b, "lost_race")
        log.append(("after cancel", b.done(), b.cancelled()))
        await wait_any([b])  # delivered on b's next turn, at this same instant
        log.append(("stopped", kernel.now, b.done(), b.cancelled()))
        return winner.result()

    _, winner = run(main)
    assert winner == "a"
    assert log == [
        ("spawned", 0.0),
        ("start", "a", 0.0),
        ("start", "b", 0.0),
        ("after cancel", False, False),
        ("cancelled", "b", 1.0, "lost_race"),
        ("stopped", 1.0, True, True),
    ]


def test_wait_any_times_out_and_the_first_cause_is_kept():
    async def slow():
        await sleep(10.0)

    async def main(kernel):
        task = kernel.spawn(slow())
        assert await wait_any([task], 2.5) is None
        assert kernel.now == 2.5
        kernel.cancel(task, "timeout")
        kernel.cancel(task, "abandoned")
        await wait_any([task])
        return task.cancel_cause, task.cancelled()

    assert run(main)[1] == ("timeout", True)


def test_a_task_that_cancels_itself_gets_it_at_its_next_suspension():
    async def main(kernel):
        me = kernel.current
        kernel.cancel(me, "cancelled")
        try:
            await sleep(1.0)
        except asyncio.CancelledError:
            return kernel.now

    assert run(main)[1] == 0.0


def test_errors_and_results_are_kept_on_the_task():
    async def boom():
        raise ValueError("boom")

    async def main(kernel):
        task = kernel.spawn(boom())
        before = task.done()
        await wait_any([task])
        return before, task.done(), type(task.exception()).__name__

    assert run(main)[1] == (False, True, "ValueError")


def test_waits_must_be_finite_and_not_negative():
    async def main(kernel):
        errors = []
        for seconds in (float("inf"), -1.0, float("nan")):
            try:
                await sleep(seconds)
            except ArgumentError as error:
                errors.append(str(error))
        return errors

    errors = run(main)[1]
    assert len(errors) == 3 and "forever" in errors[0]


def test_asyncio_primitives_are_detected():
    async def main(kernel):
        await asyncio.sleep(1.0)

    with pytest.raises(NeedsAsyncio):
        run(main)


def test_a_bare_yield_lets_others_run_first():
    log = []

    async def other():
        log.append("other")

    async def main(kernel):
        await checkpoint()
        kernel.spawn(other())
        await asyncio.sleep(0)  # a bare yield, which the kernel treats as a checkpoint
        log.append("main")

    run(main)
    assert log == ["other", "main"]


def test_a_deadlock_is_reported_or_handed_to_the_handler():
    async def forever(kernel, other):
        await wait_any([other])

    async def main(kernel):
        first = kernel.spawn(sleep(1.0))
        kernel.spawn(forever(kernel, kernel.current))
        await wait_any([first])
        await wait_any([kernel.spawn(forever(kernel, kernel.current))])

    with pytest.raises(SimDeadlock, match="deadlock at t=1"):
        run(main)


def test_finished_tasks_leave_no_cycles_behind():
    async def call():
        try:
            await sleep(1.0)
        except asyncio.CancelledError:
            raise

    async def request(kernel):
        a, b = kernel.spawn(call()), kernel.spawn(call())
        await wait_any([a, b])
        kernel.cancel(b, "lost_race")

    async def main(kernel):
        for _ in range(2000):
            kernel.spawn(request(kernel))
            await sleep(0.5)

    gc.collect()
    gc.disable()
    try:
        run(main)
        freed = gc.collect()
    finally:
        gc.enable()
    assert freed < 50
