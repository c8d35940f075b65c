"""Racing helpers: first completion, first success, a timeout, a hedge.

Each helper runs its awaitables as tasks of the running engine (the kernel in a simulation, an
asyncio loop otherwise), waits for the first to finish, and cancels what it no longer needs *before*
returning, waiting for the cancellations so every cancelled attempt is recorded at the instant it
lost. Calls made under a helper share a ``race_id``; losers are recorded with cause ``lost_race``,
an expired timeout with ``timeout``. If the helper itself is cancelled, its children are cancelled
with the same cause.

    index, result = await sy.first(driver.call_model(req, ["fast"]), driver.call_model(req, ["strong"]))
    index, response = await sy.first_ok(call_a, call_b)      # errors do not win
    verdict = await sy.timeout(2.0, driver.call_decision(question, "judge"))   # None on timeout
    response = await sy.hedge(lambda: driver.call_model(req, ["model"]), after=1.5)
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Coroutine
from types import CoroutineType
from typing import Any, TypeVar, overload

from ._driver import Call
from ._errors import ArgumentError, ArgumentTypeError
from ._kernel import KTask
from ._sched import CURRENT_RACE, AsyncioBackend, Backend, KernelBackend, backend, new_race_id
from ._vocab import CancelCause

__all__ = ["first", "first_ok", "hedge", "timeout"]

T = TypeVar("T")
D = TypeVar("D")

LOST_RACE = CancelCause.LOST_RACE
TIMEOUT = CancelCause.TIMEOUT


def _coroutine(awaitable: Awaitable[Any], what: str | int) -> Coroutine[Any, Any, Any]:
    if type(awaitable) is CoroutineType or type(awaitable) is Call:
        return awaitable  # type: ignore[return-value]
    if isinstance(awaitable, Coroutine):
        return awaitable
    if isinstance(awaitable, Awaitable):
        return _await(awaitable)
    if isinstance(what, int):
        what = f"awaitables[{what}]"
    if callable(awaitable):
        raise ArgumentTypeError(
            f"{what} must be awaitable (e.g. driver.call_model(...)), got a callable; "
            "call it first or pass it to sy.hedge"
        )
    raise ArgumentTypeError(f"{what} must be awaitable, got {type(awaitable).__name__}")


def spawn(b: Backend, awaitable: Awaitable[Any], race_id: int, what: str | int) -> Any:
    """Start ``awaitable`` as a task of the race ``race_id`` (``what`` names it in errors: a
    description, or its position among a helper's arguments)."""
    if type(awaitable) is Call:
        return b.spawn(awaitable.steps, race_id)  # type: ignore[attr-defined]
    return b.spawn(_coroutine(awaitable, what), race_id)


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def settle(b: Backend, tasks: list[Any], cause: CancelCause | None) -> None:
    """Cancel the unfinished tasks with ``cause`` and wait until each has stopped.

    If the caller is cancelled meanwhile, the wait still completes (the cancellations are already
    on their way) and the caller's cancellation is re-raised afterwards.
    """
    pending = [t for t in tasks if not t.done()]
    b.cancel_all(pending, cause)
    interrupted = False
    pending = [t for t in pending if not t.done()]
    while pending:
        try:
            await b.wait_any(pending)
        except asyncio.CancelledError:
            interrupted = True
        pending = [t for t in pending if not t.done()]
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a loser's error is not "never retrieved"
    if interrupted:
        raise asyncio.CancelledError


async def _wait_first(b: Backend, tasks: list[Any], timeout_s: float | None = None) -> Any:
    try:
        return await b.wait_any(tasks, timeout_s)
    except asyncio.CancelledError:
        await settle(b, tasks, b.current_cause())
        raise


def _outcome(task: Any) -> Any:
    if task.cancelled():
        return asyncio.CancelledError()
    return task.exception() or task.result()


@overload
async def first(a: Awaitable[T], /) -> tuple[int, T | BaseException]: ...
@overload
async def first(a: Awaitable[T], b: Awaitable[D], /) -> tuple[int, T | D | BaseException]: ...
@overload
async def first(*awaitables: Awaitable[Any]) -> tuple[int, Any]: ...


async def first(*awaitables: Awaitable[Any]) -> tuple[int, Any]:
    """Race ``awaitables``; return ``(index, result_or_exception)`` of the first to *complete*.

    An error can win (as in Switchyard's race recipe): it is returned, not raised. The others are
    cancelled with cause ``lost_race`` before this returns. Simultaneous finishers are ranked by
    argument order.
    """
    if not awaitables:
        raise ArgumentError("first() needs at least one awaitable")
    b = backend()
    race_id = b.new_race()
    tasks = [spawn(b, a, race_id, i) for i, a in enumerate(awaitables)]
    if type(b) is KernelBackend:
        return await _first_on_kernel(b, tasks)
    done = await _wait_first(b, tasks)
    winner = tasks.index(done)
    await settle(b, [t for t in tasks if not t.done()], LOST_RACE)
    for task in tasks:
        if task.done():
            _outcome(task)  # mark every finished task's exception as retrieved
    return winner, _outcome(tasks[winner])


async def _first_on_kernel(b: KernelBackend, tasks: list[KTask]) -> tuple[int, Any]:
    """``first`` on the kernel, where a task's outcome needs no retrieving: the same steps with
    fewer frames (the common race of two calls is a hot path)."""
    done = await _wait_first(b, tasks)
    losers = [t for t in tasks if not t.done_]
    if losers:
        b.cancel_all(losers, LOST_RACE)  # a waiting call stops at once; others when they next run
        if not all(t.done_ for t in losers):
            await settle(b, losers, LOST_RACE)
    winner = tasks.index(done)
    task = tasks[winner]
    if task.cancelled_:
        return winner, asyncio.CancelledError()
    return winner, task._error or task._result


async def first_ok(*awaitables: Awaitable[Any]) -> tuple[int, Any]:
    """Race ``awaitables``; return ``(index, result)`` of the first to *succeed*.

    Failures do not win; the others keep running. If every one fails, the error of the last to
    fail is raised. Losers are cancelled with cause ``lost_race``.
    """
    if not awaitables:
        raise ArgumentError("first_ok() needs at least one awaitable")
    b = backend()
    race_id = b.new_race()
    tasks = [spawn(b, a, race_id, i) for i, a in enumerate(awaitables)]
    return await _first_success(b, tasks)


async def _first_success(b: Backend, tasks: list[Any]) -> tuple[int, Any]:
    pending = list(tasks)
    last_error: BaseException | None = None
    while pending:
        await _wait_first(b, pending)
        for i, task in enumerate(tasks):
            if (
                task in pending
                and task.done()
                and not task.cancelled()
                and task.exception() is None
            ):
                await settle(b, [t for t in tasks if not t.done()], LOST_RACE)
                return i, task.result()
        for task in pending:
            if task.done():
                last_error = _outcome(task)
        pending = [t for t in pending if not t.done()]
    assert last_error is not None
    raise last_error


def _check_seconds(seconds: Any, name: str) -> float:
    if type(seconds) is float and 0.0 <= seconds < math.inf:
        return seconds
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ArgumentTypeError(f"{name} must be a number of seconds, got {seconds!r}")
    if math.isnan(seconds) or seconds < 0 or seconds == math.inf:
        raise ArgumentError(f"{name} must be a finite number of seconds ≥ 0, got {seconds!r}")
    return float(seconds)


async def timeout(seconds: float, awaitable: Awaitable[T], default: D = None) -> T | D:  # type: ignore[assignment]
    """Await ``awaitable`` for at most ``seconds``; on expiry cancel it (cause ``timeout``) and
    return ``default``. Its errors are raised as usual; a cancellation from outside propagates.
    """
    try:
        seconds = _check_seconds(seconds, "seconds")
    except (ArgumentError, ArgumentTypeError):
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()  # never to run: closed, so Python does not also warn it was never awaited
        raise
    coro = _coroutine(awaitable, "awaitable")
    b = backend()
    if isinstance(b, AsyncioBackend):
        return await _timeout_in_place(b, seconds, coro, default)
    return await _timeout_on_kernel(b, seconds, coro, default)  # type: ignore[arg-type]


async def _timeout_on_kernel(b: KernelBackend, seconds: float, coro: Any, default: Any) -> Any:
    """On the kernel: the awaitable runs in the calling task (no extra task); at the deadline the
    task is cancelled with cause ``timeout`` where it waits, and the cancellation stops here."""
    kernel = b.kernel
    task = kernel.current
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        if not task.done_:
            expired = True
            kernel.cancel(task, TIMEOUT)

    race = task.race_id
    task.race_id = b.new_race()
    timer = kernel.call_later(seconds, expire)
    try:
        return await coro
    except asyncio.CancelledError:
        if expired and task.cancel_cause is TIMEOUT:
            task.cancel_cause = None  # handled here: later cancellations have causes of their own
            return default
        raise
    finally:
        timer.cancel()
        task.race_id = race


async def _timeout_in_place(b: AsyncioBackend, seconds: float, coro: Any, default: Any) -> Any:
    """On asyncio: the awaitable runs in the calling task, cancelled at the deadline the way
    ``asyncio.timeout`` does it."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("sy.timeout() must be awaited inside a task")
    loop = asyncio.get_running_loop()
    already_cancelling = task.cancelling()
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        b.cancel(task, TIMEOUT)

    token = CURRENT_RACE.set(new_race_id())
    handle = loop.call_later(seconds, expire)
    try:
        return await coro
    except asyncio.CancelledError:
        if expired and task.uncancel() <= already_cancelling:
            return default
        raise
    finally:
        handle.cancel()
        CURRENT_RACE.reset(token)
        if expired:
            b.forget_cause(task)


async def hedge(
    make_call: Callable[[], Awaitable[T]],
    *,
    after: float,
    copies: int = 2,
) -> T:
    """Start ``make_call()``; if it has not finished after ``after`` seconds, start another copy
    (up to ``copies`` in all, each ``after`` seconds apart). The first success wins and the rest
    are cancelled (``lost_race``); if all fail, the last error is raised. A failure before the
    delay starts the next copy at once.
    """
    if not callable(make_call):
        raise ArgumentTypeError(
            "make_call must be a function that starts the call, e.g. lambda: driver.call_model(...)"
        )
    after = _check_seconds(after, "after")
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise ArgumentError(f"copies must be an int ≥ 1, got {copies!r}")
    b = backend()
    race_id = new_race_id()
    tasks: list[Any] = [spawn(b, make_call(), race_id, "make_call()")]
    while True:
        running = [t for t in tasks if not t.done()]
        can_add = len(tasks) < copies
        woke = None
        if running:
            woke = await _wait_first(b, running, after if can_add else None)
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is None:
                await settle(b, [t for t in tasks if not t.done()], LOST_RACE)
                return task.result()  # type: ignore[no-any-return]
        last_error = None
        for task in tasks:
            if task.done():
                last_error = _outcome(task)
        running = [t for t in tasks if not t.done()]
        if not running and not can_add:
            assert last_error is not None  # every copy ended, none with success
            raise last_error
        if can_add and (woke is None or not running):
            # the delay passed with no answer, or every copy failed: the next copy starts now
            tasks.append(spawn(b, make_call(), race_id, "make_call()"))
