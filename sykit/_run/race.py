"""Racing helpers: first completion, first success, a timeout, a hedge, and calls started now.

Each helper runs its awaitables as tasks of the run's engine, waits for the first to finish, and
cancels what it no longer needs *before* returning, waiting for the cancellations so every
cancelled attempt is recorded at the instant it lost. Calls made under a helper share a
``race_id``; losers are recorded with cause ``lost_race``, an expired timeout with ``timeout``. If
the helper itself is cancelled, its children are cancelled with the same cause.

    index, result = await sy.first(driver.call_model(req, ["fast"]), driver.call_model(req, ["strong"]))
    index, response = await sy.first_ok(call_a, call_b)      # errors do not win
    verdict = await sy.timeout(2.0, driver.call_decision(question, "judge"))   # None on timeout
    response = await sy.hedge(lambda: driver.call_model(req, ["model"]), after=1.5)
    judge, strong = sy.start(judge_call, strong_call)        # both running now, one race
    await sy.wait_first(judge, strong); await strong.cancel()

Everything here is written once against the engine contract (:mod:`sykit._run.engines.base`).
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Generic, TypeVar, overload

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import CancelCause
from sykit._run.engines.base import Engine, current

__all__ = ["Started", "first", "first_ok", "hedge", "start", "timeout", "wait_first"]

T = TypeVar("T")
D = TypeVar("D")

LOST_RACE = CancelCause.LOST_RACE
TIMEOUT = CancelCause.TIMEOUT


def _is_awaitable(value: object) -> bool:
    return hasattr(type(value), "__await__") or inspect.isawaitable(value)


def _check_awaitable(awaitable: object, what: str | int) -> None:
    if hasattr(type(awaitable), "__await__") or inspect.isawaitable(awaitable):
        return  # (the class check first: it is the common case, and cheaper than an ABC's)
    if isinstance(what, int):
        what = f"awaitables[{what}]"
    if callable(awaitable):
        raise ArgumentTypeError(
            f"{what} must be awaitable (e.g. driver.call_model(...)), got a callable; "
            "call it first or pass it to sy.hedge"
        )
    raise ArgumentTypeError(f"{what} must be awaitable, got {type(awaitable).__name__}")


def spawn(engine: Engine, awaitable: Awaitable[Any], race_id: int, what: str | int) -> Any:
    """Start ``awaitable`` as a task of the race ``race_id`` (``what`` names it in errors: a
    description, or its position among a helper's arguments)."""
    _check_awaitable(awaitable, what)
    return engine.spawn(awaitable, race_id)


def _spawn_all(engine: Engine, awaitables: Sequence[Awaitable[Any]], race_id: int) -> list[Any]:
    """Start each of ``awaitables``; if one is refused, none is left unawaited."""
    for awaitable in awaitables:
        if not hasattr(type(awaitable), "__await__"):
            break  # perhaps awaitable all the same (an old-style coroutine): checked below
    else:
        return [engine.spawn(a, race_id) for a in awaitables]  # the common case
    for i, awaitable in enumerate(awaitables):
        try:
            _check_awaitable(awaitable, i)
        except ArgumentTypeError:
            for other in awaitables:
                close = getattr(other, "close", None)
                if close is not None:
                    close()  # never to run: closed, so Python does not also warn
            raise
    return [engine.spawn(a, race_id) for a in awaitables]


async def _wait_first(engine: Engine, tasks: list[Any], timeout_s: float | None = None) -> Any:
    """The first of ``tasks`` to be done (None on timeout); if the caller is cancelled, the tasks
    are cancelled with the caller's cause first."""
    try:
        return await engine.wait_any(tasks, timeout_s)
    except asyncio.CancelledError:
        await engine.settle(tasks, engine.current_cause())
        raise


def _outcome(task: Any) -> Any:
    if task.cancelled():
        return asyncio.CancelledError()
    return task.exception() or task.result()


def _succeeded(task: Any) -> bool:
    return bool(task.done() and not task.cancelled() and task.exception() is None)


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
    engine = current()
    tasks = _spawn_all(engine, awaitables, engine.new_race())
    try:  # (_wait_first, inlined: a race's hot path)
        done = await engine.wait_any(tasks, None)
    except asyncio.CancelledError:
        await engine.settle(tasks, engine.current_cause())
        raise
    await engine.settle(tasks, LOST_RACE)  # the losers stop; every error counts as retrieved
    return tasks.index(done), _outcome(done)


async def first_ok(*awaitables: Awaitable[Any]) -> tuple[int, Any]:
    """Race ``awaitables``; return ``(index, result)`` of the first to *succeed*.

    Failures do not win; the others keep running. If every one fails, the error of the last to
    fail is raised. Losers are cancelled with cause ``lost_race``.
    """
    if not awaitables:
        raise ArgumentError("first_ok() needs at least one awaitable")
    engine = current()
    tasks = _spawn_all(engine, awaitables, engine.new_race())
    pending = list(tasks)
    last_error: BaseException | None = None
    while pending:
        await _wait_first(engine, pending)
        for i, task in enumerate(tasks):
            if task in pending and _succeeded(task):
                await engine.settle(tasks, LOST_RACE)
                return i, task.result()
        for task in pending:
            if task.done():
                last_error = _outcome(task)
        pending = [t for t in pending if not t.done()]
    assert last_error is not None
    raise last_error


def _check_seconds(seconds: Any, name: str) -> float:
    if type(seconds) is float and 0.0 <= seconds < math.inf:
        return seconds  # the common case, without the general check's calls
    return check_real(seconds, name, low=0.0, expected="a finite number of seconds ≥ 0")


@overload
async def timeout(seconds: float, awaitable: Awaitable[T]) -> T | None: ...
@overload
async def timeout(seconds: float, awaitable: Awaitable[T], default: D) -> T | D: ...


async def timeout(seconds: float, awaitable: Awaitable[Any], default: Any = None) -> Any:
    """Await ``awaitable`` for at most ``seconds``; on expiry cancel it (cause ``timeout``) and
    return ``default``. Its errors are raised as usual; a cancellation from outside propagates.
    The awaitable runs in the calling task: a deadline on it, as trio's ``move_on_after``.
    """
    try:
        if type(seconds) is not float and _is_awaitable(seconds) and not _is_awaitable(awaitable):
            raise ArgumentTypeError(
                f"sy.timeout got an awaitable for seconds and {type(awaitable).__name__} "
                f"{awaitable!r:.40} for awaitable: the order is sy.timeout(seconds, awaitable), "
                "e.g. `await sy.timeout(1.5, driver.call_model(request, model))`"
            )
        seconds = _check_seconds(seconds, "seconds")
        if not hasattr(type(awaitable), "__await__"):
            _check_awaitable(awaitable, "awaitable")
    except (ArgumentError, ArgumentTypeError):
        for given in (awaitable, seconds):
            close = getattr(given, "close", None)
            if close is not None and _is_awaitable(given):
                close()  # never to run: closed, so Python does not also warn it was never awaited
        raise
    with current().deadline(seconds, TIMEOUT) as scope:
        try:
            return await awaitable
        except asyncio.CancelledError:
            if scope.cancelled_caught():
                return default
            raise


async def hedge(
    make_call: Callable[[], Awaitable[T]],
    *,
    after: float,
    copies: int = 2,
    only_if: Callable[[], bool] | None = None,
) -> T:
    """Start ``make_call()``; if it has not finished after ``after`` seconds, start another copy
    (up to ``copies`` in all, each ``after`` seconds apart). The first success wins and the rest
    are cancelled (``lost_race``); if all fail, the last error is raised. A failure before the
    delay starts the next copy at once.

    ``only_if``: asked when a copy is due while others still run; the copy is sent only if it
    returns true, else the next is due ``after`` seconds later. A hedge adds load, so a
    load-aware one holds back while its target is busy:
    ``only_if=lambda: driver.in_flight("m") < 8``. A copy that replaces failed ones is sent
    without asking: it adds no load.
    """
    if not callable(make_call):
        raise ArgumentTypeError(
            "make_call must be a function that starts the call, e.g. lambda: driver.call_model(...)"
        )
    if only_if is not None and not callable(only_if):
        raise ArgumentTypeError(
            "only_if must be a function of no arguments that says whether to send a copy, e.g. "
            "lambda: driver.in_flight('m') < 8"
        )
    after = _check_seconds(after, "after")
    copies = check_int(copies, "copies", low=1, type_error=ArgumentError)
    engine = current()
    race_id = engine.new_race()
    tasks: list[Any] = [spawn(engine, make_call(), race_id, "make_call()")]
    held = False  # ``only_if`` held the last copy back
    while True:
        running = [t for t in tasks if not t.done()]
        can_add = len(tasks) < copies
        woke = None
        if running:
            # With after=0 the copies start one after another, each on a timer of 0 s, once
            # what is due at this instant before it has run (docs/engines.md): a race won at
            # this instant ends before they start. A copy held back with after=0 is not asked
            # for again at the same instant (the answer could not change: it would spin); the
            # hedge waits for a copy to end.
            due = after if can_add and not (held and after == 0.0) else None
            woke = await _wait_first(engine, running, due)
            held = held and woke is None
        for task in tasks:
            if _succeeded(task):
                await engine.settle(tasks, LOST_RACE)
                return task.result()
        last_error = None
        for task in tasks:
            if task.done():
                last_error = _outcome(task)
        running = [t for t in tasks if not t.done()]
        if not running and not can_add:
            assert last_error is not None  # every copy ended, none with success
            raise last_error
        # the delay passed with no answer, or every copy failed: the next copy starts now,
        # unless it would be a hedge (others still run) that ``only_if`` holds back
        if can_add and (woke is None or not running):
            if not running or only_if is None or only_if():
                tasks.append(spawn(engine, make_call(), race_id, "make_call()"))
            else:
                held = True


# -- started now, decided later ----------------------------------------------------------------------


class Started(Generic[T]):
    """A call (or any awaitable) that :func:`start` set running: it goes on while the algorithm
    does other things, until it is awaited, cancelled, or the algorithm returns (then it is
    cancelled as ``abandoned``, like every leftover).

    ``await started`` waits for its result (or raises its error); if the awaiting task is
    cancelled, the started call is cancelled with the same cause. ``await started.cancel()``
    cancels it as a race's loser (``lost_race``) and waits until it has stopped."""

    __slots__ = ("_engine", "_task")

    def __init__(self, engine: Engine, task: Any) -> None:
        self._engine = engine
        self._task = task

    def done(self) -> bool:
        """True once it has finished (answered, failed or been cancelled)."""
        return bool(self._task.done())

    def result(self) -> T:
        """Its result; raises its error, or ``asyncio.InvalidStateError`` if not done."""
        if not self._task.done():
            raise asyncio.InvalidStateError("the started call has not finished")
        return self._task.result()

    def exception(self) -> BaseException | None:
        """Its error (None if it succeeded); ``asyncio.InvalidStateError`` if not done."""
        if not self._task.done():
            raise asyncio.InvalidStateError("the started call has not finished")
        if self._task.cancelled():
            return asyncio.CancelledError()
        return self._task.exception()

    async def cancel(self) -> None:
        """Cancel it (cause ``lost_race``) and wait until it has stopped; nothing if done."""
        await self._engine.settle([self._task], LOST_RACE)

    def __await__(self) -> Generator[Any, Any, T]:
        return self._wait().__await__()

    async def _wait(self) -> T:
        await _wait_first(self._engine, [self._task])
        return _outcome_or_raise(self._task)

    def __repr__(self) -> str:
        return f"<sykit.Started {'done' if self.done() else 'running'}>"


def _outcome_or_raise(task: Any) -> Any:
    if task.cancelled():
        raise asyncio.CancelledError
    error = task.exception()
    if error is not None:
        raise error
    return task.result()


@overload
def start(a: Awaitable[T], /) -> tuple[Started[T]]: ...
@overload
def start(a: Awaitable[T], b: Awaitable[D], /) -> tuple[Started[T], Started[D]]: ...
@overload
def start(*awaitables: Awaitable[Any]) -> tuple[Started[Any], ...]: ...


def start(*awaitables: Awaitable[Any]) -> tuple[Started[Any], ...]:
    """Start ``awaitables`` now, as one race (their attempts share a ``race_id``), and return a
    :class:`Started` handle for each: the "start now, decide later" of a speculative call.

        judge, strong = sy.start(driver.call_decision(q, "judge"), driver.call_model(req, ["big"]))
        await sy.wait_first(judge, strong)
        if judge.done() and judge.result().yes("easy"):
            await strong.cancel()                 # recorded as lost_race
    """
    if not awaitables:
        raise ArgumentError("start() needs at least one awaitable")
    engine = current()
    tasks = _spawn_all(engine, awaitables, engine.new_race())
    return tuple(Started(engine, task) for task in tasks)


async def wait_first(*started: Started[Any]) -> Started[Any]:
    """Wait until one of ``started`` has finished and return it (argument order decides among
    simultaneous finishers); nothing is cancelled. If the waiting task is cancelled, every one of
    ``started`` is cancelled with the same cause."""
    if not started:
        raise ArgumentError("wait_first() needs at least one started call")
    for handle in started:
        if not isinstance(handle, Started):
            raise ArgumentTypeError(
                f"wait_first() takes what sy.start() returned, got {type(handle).__name__}"
            )
    engine = started[0]._engine
    tasks = [handle._task for handle in started]
    done = await _wait_first(engine, tasks)
    return started[tasks.index(done)]
