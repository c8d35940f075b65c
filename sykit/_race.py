"""Racing helpers: first completion, first success, a timeout, a hedge.

Each helper runs its awaitables as tasks, waits natively (an anyio task group per race measured
three times slower), and cancels what it no longer needs *before* returning, awaiting the
cancellations so every cancelled attempt is recorded at the instant it lost. Calls made under a
helper share a ``race_id``; losers are recorded with cause ``lost_race``, an expired timeout with
``timeout``. If the helper itself is cancelled, its children are cancelled with the same cause.

    index, result = await sy.first(driver.call_model(req, ["fast"]), driver.call_model(req, ["strong"]))
    index, response = await sy.first_ok(call_a, call_b)      # errors do not win
    verdict = await sy.timeout(2.0, driver.call_decision(question, "judge"))   # None on timeout
    response = await sy.hedge(lambda: driver.call_model(req, ["model"]), after=1.5)
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Awaitable, Callable, Coroutine
from types import CoroutineType
from typing import Any, TypeVar, overload

from ._context import CAUSES, CURRENT_RACE, cancel_with_cause, cause_of_current, new_race_id
from ._errors import ArgumentError, ArgumentTypeError

__all__ = ["first", "first_ok", "hedge", "timeout"]

T = TypeVar("T")
D = TypeVar("D")

LOST_RACE = "lost_race"
TIMEOUT = "timeout"


def _spawn(awaitable: Awaitable[Any], race_id: int, what: str) -> asyncio.Task[Any]:
    if type(awaitable) is not CoroutineType and not isinstance(awaitable, Awaitable):
        if isinstance(awaitable, Callable):  # type: ignore[arg-type]
            raise ArgumentTypeError(
                f"{what} must be awaitable (e.g. driver.call_model(...)), got a callable; "
                "call it first or pass it to sy.hedge"
            )
        raise ArgumentTypeError(f"{what} must be awaitable, got {type(awaitable).__name__}")
    context = contextvars.copy_context()
    context.run(CURRENT_RACE.set, race_id)
    coro = (
        awaitable
        if type(awaitable) is CoroutineType or isinstance(awaitable, Coroutine)
        else _await(awaitable)
    )
    return asyncio.get_running_loop().create_task(coro, context=context)


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _cancel_and_settle(tasks: list[asyncio.Task[Any]], cause: str | None) -> None:
    """Cancel the unfinished tasks with ``cause`` and wait until each has stopped.

    If the caller is cancelled meanwhile, the wait still completes (the cancellations are already
    on their way) and the caller's cancellation is re-raised afterwards.
    """
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        cancel_with_cause(task, cause)
    interrupted = False
    while pending:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            interrupted = True
        pending = [t for t in pending if not t.done()]
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a loser's error is not "never retrieved"
    if interrupted:
        raise asyncio.CancelledError


async def _wait_first(
    tasks: list[asyncio.Task[Any]], timeout_s: float | None = None
) -> set[asyncio.Task[Any]]:
    try:
        done, _ = await asyncio.wait(tasks, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _cancel_and_settle(tasks, cause_of_current())
        raise
    return done


def _outcome(task: asyncio.Task[Any]) -> Any:
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
    race_id = new_race_id()
    tasks = [_spawn(a, race_id, f"awaitables[{i}]") for i, a in enumerate(awaitables)]
    done = await _wait_first(tasks)
    winner = next(i for i, t in enumerate(tasks) if t in done)
    await _cancel_and_settle([t for t in tasks if not t.done()], LOST_RACE)
    for task in done:
        _outcome(task)  # mark every finished task's exception as retrieved
    return winner, _outcome(tasks[winner])


async def first_ok(*awaitables: Awaitable[Any]) -> tuple[int, Any]:
    """Race ``awaitables``; return ``(index, result)`` of the first to *succeed*.

    Failures do not win; the others keep running. If every one fails, the error of the last to
    fail is raised. Losers are cancelled with cause ``lost_race``.
    """
    if not awaitables:
        raise ArgumentError("first_ok() needs at least one awaitable")
    race_id = new_race_id()
    tasks = [_spawn(a, race_id, f"awaitables[{i}]") for i, a in enumerate(awaitables)]
    return await _first_success(tasks)


async def _first_success(tasks: list[asyncio.Task[Any]]) -> tuple[int, Any]:
    pending = list(tasks)
    last_error: BaseException | None = None
    while pending:
        done = await _wait_first(pending)
        for i, task in enumerate(tasks):
            if task in done and not task.cancelled() and task.exception() is None:
                await _cancel_and_settle([t for t in tasks if not t.done()], LOST_RACE)
                return i, task.result()
        for task in tasks:
            if task in done:
                last_error = _outcome(task)
        pending = [t for t in pending if not t.done()]
    assert last_error is not None
    raise last_error


def _check_seconds(seconds: Any, name: str) -> float:
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or math.isnan(seconds)
        or seconds < 0
    ):
        raise ArgumentError(f"{name} must be a number of seconds ≥ 0, got {seconds!r}")
    return float(seconds)


async def timeout(seconds: float, awaitable: Awaitable[T], default: D = None) -> T | D:  # type: ignore[assignment]
    """Await ``awaitable`` for at most ``seconds``; on expiry cancel it (cause ``timeout``) and
    return ``default``. Its errors are raised as usual.

    The awaitable runs in the calling task (no extra task), cancelled at the deadline the way
    ``asyncio.timeout`` does it; a cancellation from outside still propagates.
    """
    seconds = _check_seconds(seconds, "seconds")
    if type(awaitable) is not CoroutineType and not isinstance(awaitable, Awaitable):
        raise ArgumentTypeError(
            f"awaitable must be awaitable (e.g. driver.call_model(...)), got {type(awaitable).__name__}"
        )
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("sy.timeout() must be awaited inside a task")
    loop = asyncio.get_running_loop()
    already_cancelling = task.cancelling()
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        CAUSES[task] = TIMEOUT
        if isinstance(awaitable, asyncio.Future):
            CAUSES[awaitable] = TIMEOUT  # type: ignore[index]
        task.cancel()

    token = CURRENT_RACE.set(new_race_id())
    handle = loop.call_later(seconds, expire)
    try:
        return await awaitable
    except asyncio.CancelledError:
        if expired and task.uncancel() <= already_cancelling:
            return default
        raise
    finally:
        handle.cancel()
        CURRENT_RACE.reset(token)
        if expired:
            CAUSES.pop(task, None)


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
    race_id = new_race_id()
    tasks: list[asyncio.Task[Any]] = [_spawn(make_call(), race_id, "make_call()")]
    last_error: BaseException | None = None
    while True:
        running = [t for t in tasks if not t.done()]
        can_add = len(tasks) < copies
        if not running and not can_add:
            assert last_error is not None
            raise last_error
        if running:
            done = await _wait_first(running, after if can_add else None)
        else:
            done = set()
        for task in tasks:
            if task in done and not task.cancelled() and task.exception() is None:
                await _cancel_and_settle([t for t in tasks if not t.done()], LOST_RACE)
                return task.result()
        for task in tasks:
            if task in done:
                last_error = _outcome(task)
        if can_add and (not done or not [t for t in tasks if not t.done()]):
            tasks.append(_spawn(make_call(), race_id, "make_call()"))
