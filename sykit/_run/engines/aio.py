"""The engine contract on an asyncio event loop: the virtual-time loop of :mod:`.loop` for
algorithms that await asyncio or anyio primitives, or a real loop for ``HttpHost``.

The request and race a task works for come from context variables (a task created by the user's
own ``asyncio.create_task`` inherits them), the causes of cancellations from a weak map of tasks,
and which tasks belong to which request from the loop's task hook (or a task factory on a loop
that is not sykit's).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any

from sykit._base.errors import ArgumentError
from sykit._base.vocab import CancelCause
from sykit._run.engines.base import (
    ALARM,
    NEXT,
    SEND,
    SLEEP,
    Alarm,
    Engine,
    Owner,
    set_default,
    sleep_refusal,
)
from sykit._run.engines.kernel import close_arguments

__all__ = ["AsyncioEngine", "install_task_tracking", "track_task"]

#: The request state a task works for.
CURRENT_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("sykit_request", default=None)
#: The race id of the innermost race helper a task runs under.
CURRENT_RACE: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "sykit_race", default=None
)

_CAUSES: weakref.WeakKeyDictionary[asyncio.Task[Any], CancelCause] = weakref.WeakKeyDictionary()


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class _Deadline:
    """``Engine.deadline`` on asyncio: the awaitable runs in the calling task, cancelled at the
    deadline the way ``asyncio.timeout`` does it."""

    __slots__ = (
        "_already",
        "_cause",
        "_engine",
        "_expired",
        "_handle",
        "_seconds",
        "_task",
        "_token",
    )

    def __init__(self, engine: AsyncioEngine, seconds: float, cause: CancelCause) -> None:
        self._engine = engine
        self._seconds = seconds
        self._cause = cause
        self._expired = False
        self._task: asyncio.Task[Any] | None = None
        self._already = 0
        self._handle: asyncio.TimerHandle | None = None
        self._token: contextvars.Token[int | None] | None = None

    def __enter__(self) -> _Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline must be entered inside a task")
        self._task = task
        self._already = task.cancelling()
        self._token = CURRENT_RACE.set(self._engine.new_race())
        self._handle = _call_later(self._seconds, self._expire)
        return self

    def _expire(self) -> None:
        self._expired = True
        assert self._task is not None
        self._engine.cancel(self._task, self._cause)

    def cancelled_caught(self) -> bool:
        task = self._task
        return self._expired and task is not None and task.uncancel() <= self._already

    def __exit__(self, *exc_info: object) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None  # it holds this scope (a cycle) until its time comes
        if self._token is not None:
            CURRENT_RACE.reset(self._token)
        if self._expired and self._task is not None:
            _CAUSES.pop(self._task, None)


class AsyncioEngine(Engine):
    """The engine contract on the running asyncio loop; ``origin`` is the loop time the run's
    clock counts from."""

    name = "asyncio"

    def __init__(self, origin: float = 0.0) -> None:
        self.origin = origin
        self._detached: set[asyncio.Task[Any]] = set()

    def start_clock(self) -> None:
        """The run's clock starts now (a real host: once its client is ready)."""
        self.origin = asyncio.get_running_loop().time()

    def now(self) -> float:
        return asyncio.get_running_loop().time() - self.origin

    def sleep(self, seconds: float) -> Any:
        unwatched = getattr(asyncio.get_running_loop(), "unwatched_sleep", None)  # sykit's loop
        return asyncio.sleep(seconds) if unwatched is None else unwatched(seconds)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        asyncio.get_running_loop().call_soon(fn, *args)

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
        return _call_later(seconds, fn, *args)

    def call_at_alarm(self, alarm: Alarm, fn: Callable[..., Any], *args: Any) -> Any:
        return _AlarmTimer(alarm, self.origin, fn, *args)

    def spawn(self, awaitable: Any, race_id: int | None) -> asyncio.Task[Any]:
        coro = awaitable if isinstance(awaitable, Coroutine) else _await(awaitable)
        context = contextvars.copy_context()
        context.run(CURRENT_RACE.set, race_id)
        return asyncio.get_running_loop().create_task(coro, context=context)

    def spawn_request(self, coro: Coroutine[Any, Any, Any], owner: Owner, name: str) -> Any:
        context = contextvars.copy_context()
        context.run(CURRENT_REQUEST.set, owner)
        task = asyncio.get_running_loop().create_task(coro, name=f"sykit {name}", context=context)
        owner.tasks.clear()  # the task hook counted the request's own task among its tasks
        return task

    def spawn_detached(self, coro: Coroutine[Any, Any, Any]) -> None:
        # an empty context: the task belongs to no request (none tracks or cancels it)
        task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
        self._detached.add(task)  # the loop holds tasks weakly
        task.add_done_callback(self._detached.discard)

    async def wait_any(
        self, tasks: Sequence[asyncio.Task[Any]], timeout: float | None = None
    ) -> asyncio.Task[Any] | None:
        done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:  # simultaneous finishers: argument order decides
            if task in done:
                return task
        return None

    def cancel(self, task: asyncio.Task[Any], cause: CancelCause | None) -> None:
        if task.done():
            return
        if cause is not None and not task.cancelling() and task not in _CAUSES:
            _CAUSES[task] = cause
        task.cancel()
        close_arguments(task.get_coro())

    def cancel_all(self, tasks: Sequence[asyncio.Task[Any]], cause: CancelCause | None) -> None:
        if cause is not None:
            for task in tasks:
                if not task.done() and not task.cancelling() and task not in _CAUSES:
                    _CAUSES[task] = cause
        for task in tasks:
            if not task.done():
                task.cancel()
                close_arguments(task.get_coro())

    def uncancel(self, task: asyncio.Task[Any]) -> None:
        while task.cancelling():
            task.uncancel()
        _CAUSES.pop(task, None)

    def drop(self, task: asyncio.Task[Any]) -> None:
        """Close the coroutine of a task that ignores cancellation (``GeneratorExit`` where it
        waits) and cancel the task, which then ends at its next step: left to itself it would
        keep the loop, and virtual time, running."""
        if task.done():
            return
        with contextlib.suppress(RuntimeError):  # it ignored GeneratorExit too: dropped anyway
            task.get_coro().close()
        task.add_done_callback(_quietly)  # its closed coroutine ends it with a RuntimeError
        task.cancel()

    def deadline(self, seconds: float, cause: CancelCause) -> _Deadline:
        return _Deadline(self, seconds, cause)

    def event(self) -> asyncio.Event:
        return asyncio.Event()

    def current_task(self) -> asyncio.Task[Any] | None:
        return asyncio.current_task()

    def current_cause(self) -> CancelCause | None:
        task = asyncio.current_task()
        return None if task is None else _CAUSES.get(task)

    def current_race(self) -> int | None:
        return CURRENT_RACE.get()

    def current_owner(self) -> Any:
        return CURRENT_REQUEST.get()

    def drive(self, steps: Generator[Any, Any, Any], session: Any) -> Coroutine[Any, Any, Any]:
        return _drive(steps, session, self.origin)


async def _drive(steps: Generator[Any, Any, Any], session: Any, origin: float = 0.0) -> Any:
    """Run a call's candidate loop on an asyncio loop: sleeps, and on a real host its exchanges.
    A live stream whose read was interrupted is closed once the loop has recorded why."""
    value: Any = None
    error: BaseException | None = None
    interrupted: Any = None
    while True:
        try:
            trap = steps.send(value) if error is None else steps.throw(error)
        except BaseException as stop:
            if interrupted is not None:
                await interrupted.aclose()
            if isinstance(stop, StopIteration):
                return stop.value
            raise
        value = error = None
        kind = trap[0]
        try:
            if kind == SLEEP:
                await asyncio.sleep(trap[1])
            elif kind == ALARM:
                await _alarm(trap[1], origin)
            elif kind == NEXT:
                value = await trap[1].next()
            else:
                value = await (session.send if kind == SEND else session.open_stream)(trap[1])
        except BaseException as exc:  # a cancellation or a host's failure: the loop records it
            error = exc
            if kind == NEXT:
                interrupted = trap[1]


async def _alarm(alarm: Alarm, origin: float) -> None:
    """Sleep until ``alarm.when`` (run clock; ``origin`` is its loop time), following its moves."""
    future = asyncio.get_running_loop().create_future()
    timer = _AlarmTimer(alarm, origin, _set_result, future)
    try:
        await future
    finally:
        timer.cancel()


class _AlarmTimer:
    """A timer calling ``fn(*args)`` at ``alarm.when``: each move of the alarm cancels the loop's
    timer and sets one anew, as the kernel pushes a new entry."""

    __slots__ = ("alarm", "args", "fn", "handle", "origin")

    def __init__(self, alarm: Alarm, origin: float, fn: Callable[..., Any], *args: Any) -> None:
        if not alarm.when < math.inf:
            raise ArgumentError(sleep_refusal(alarm.when))
        self.alarm = alarm
        self.origin = origin
        self.fn = fn
        self.args = args
        self.handle = self._set(alarm.when)
        alarm._reset = self._move

    def _set(self, when: float) -> asyncio.TimerHandle:
        loop = asyncio.get_running_loop()
        timer_at = getattr(loop, "unwatched_timer_at", None)  # sykit's virtual-time loop
        if timer_at is None:
            timer_at = loop.call_at
        return timer_at(max(when + self.origin, loop.time()), self._fire)

    def _move(self, when: float) -> None:
        self.handle.cancel()
        self.handle = self._set(when)

    def _fire(self) -> None:
        self.alarm._reset = None
        self.fn(*self.args)

    def cancel(self) -> None:
        self.handle.cancel()
        self.alarm._reset = None


def _set_result(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)


def _quietly(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a dropped task's end is no error of its own


def _call_later(seconds: float, fn: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
    """A timer of sykit's own: on the virtual loop, one its wait limits do not count."""
    loop = asyncio.get_running_loop()
    unwatched = getattr(loop, "unwatched_timer", None)  # sykit's virtual-time loop
    return (
        loop.call_later(seconds, fn, *args) if unwatched is None else unwatched(seconds, fn, *args)
    )


def track_task(task: asyncio.Task[Any], context: contextvars.Context | None) -> None:
    """List ``task`` among its request's tasks (the request its context names), unless it is the
    request's own."""
    state = context.get(CURRENT_REQUEST) if context is not None else CURRENT_REQUEST.get()
    if state is not None and task is not getattr(state, "root", None):
        state.tasks.append(task)


def install_task_tracking(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """On a loop that is not sykit's, learn which tasks belong to which request through the task
    factory; returns what restores the loop's own factory."""
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
        if previous is not None:
            task = previous(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        track_task(task, kwargs.get("context"))  # type: ignore[arg-type]
        return task

    loop.set_task_factory(factory)
    return lambda: loop.set_task_factory(previous)


_DEFAULT = AsyncioEngine()
set_default(lambda: _DEFAULT)
