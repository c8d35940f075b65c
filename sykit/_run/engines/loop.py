"""The virtual-time engine: an asyncio loop whose clock jumps to the next timer when it is idle.

Why a loop and not a discrete-event library: algorithms are plain ``async def`` code that also runs
against real endpoints, so simulation has to run the same coroutines, anyio scopes and asyncio
primitives unchanged. A subclass of :class:`asyncio.SelectorEventLoop` does that: ``time()`` returns a
virtual clock, and when no callback is ready the selector moves the clock exactly to the earliest
timer instead of sleeping. Nothing else in sykit touches asyncio internals.

Guarantees:

* exact times: the clock is set to a timer's own deadline, never advanced by accumulated steps;
* equal deadlines fire in the order they were scheduled (a sequence number breaks ties);
* when every task waits and no timer is pending, :class:`SimDeadlock` is raised (or a handler given
  by the runner resolves it) instead of hanging;
* real sockets raise :class:`RealIOError` at once instead of timing out after milliseconds;
* work sent to ``loop.run_in_executor`` takes zero virtual time: the loop waits for it in real time;
* a user's ``nest_asyncio.apply()`` does not change this loop: its core methods and task class are
  bound here, not inherited from the patched default loop class.

:func:`run` starts a fresh loop in the calling thread, or in a worker thread when the calling thread
already runs an event loop (a Jupyter cell), and stops it promptly on ``KeyboardInterrupt``.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import heapq
import importlib
import itertools
import math
import selectors
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple, Unpack

import anyio

from sykit._base.errors import ArgumentError, RealIOError, SimDeadlock
from sykit._run.engines.base import sleep_refusal
from sykit._run.engines.deadlock import describe_deadlock

__all__ = ["VirtualTimeLoop", "arun", "loop_is_running", "run"]

T = TypeVar("T")
_Ts = TypeVarTuple("_Ts")

# The C implementations, immune to nest_asyncio swapping asyncio.Task/Future for pure-Python ones.
# Imported after asyncio on purpose: importing _asyncio first splits asyncio's task bookkeeping.
_asyncio = importlib.import_module("_asyncio")
_CTask = _asyncio.Task
_CFuture = _asyncio.Future

#: How long an idle loop with no timers waits for a thread's callback before calling it a deadlock.
_DEADLOCK_GRACE_S = 0.02


class _SeqTimerHandle(asyncio.TimerHandle):
    """A timer handle ordered by (deadline, scheduling order), so equal deadlines fire FIFO."""

    __slots__ = ("_seq",)

    if TYPE_CHECKING:  # asyncio's own attributes this subclass relies on
        _when: float
        _scheduled: bool

    def __init__(self, when: float, callback: Any, args: Any, loop: Any, context: Any, seq: int):
        super().__init__(when, callback, args, loop, context)
        self._seq = seq

    def __lt__(self, other: Any) -> bool:
        if self._when == other._when:
            return self._seq < other._seq
        return self._when < other._when


class _VirtualSelector(selectors.BaseSelector):
    """Wraps a real selector: polls it without blocking and moves the virtual clock when idle."""

    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self.loop: VirtualTimeLoop | None = None
        self.sealed = False  # once the loop's own self-pipe is registered, nothing else may be

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        if self.sealed:
            raise RealIOError(
                "real I/O on a file descriptor was attempted on sykit's virtual-time loop; virtual "
                "time jumps, so real network calls cannot work in a simulation. Use sykit.HttpHost "
                "(real time) for real endpoints, and keep I/O out of simulated algorithms."
            )
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        loop = self.loop
        assert loop is not None
        if timeout is not None and timeout <= 0:
            return []  # callbacks are ready: no syscall, no clock movement
        if loop._external_work:
            # A thread is working for us: wait for it in real time, virtual time stands still.
            return self._real.select(None)
        events = self._real.select(0 if timeout is not None else _DEADLOCK_GRACE_S)
        if events:
            return events
        if timeout is None:
            loop._on_deadlock()
            return []
        loop._jump_to_next_timer()
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop on a virtual clock that starts at 0.0 seconds.

    ``task_created(task, context)``, when set, is called for every task the loop creates (the runner
    uses it to know which tasks belong to which request). ``deadlock_handler()``, when set, is called
    when the loop deadlocks; it returns True if it made progress possible (e.g. cancelled the stuck
    tasks), otherwise :class:`SimDeadlock` is raised.
    """

    # Bound from BaseEventLoop on purpose: nest_asyncio patches these on the default loop *class*.
    run_forever = asyncio.BaseEventLoop.run_forever
    run_until_complete = asyncio.BaseEventLoop.run_until_complete
    _check_running = asyncio.BaseEventLoop._check_running  # type: ignore[attr-defined]
    _base_run_once = asyncio.BaseEventLoop._run_once  # type: ignore[attr-defined]

    if TYPE_CHECKING:  # asyncio's own attributes and methods this subclass relies on
        _debug: bool
        _ready: collections.deque[asyncio.Handle]
        _scheduled: list[_SeqTimerHandle]
        _timer_cancelled_count: int
        _stopping: bool
        _selector: _VirtualSelector

        def _process_events(self, event_list: list[Any]) -> None: ...

        def _check_closed(self) -> None: ...

    def __init__(self) -> None:
        selector = _VirtualSelector()
        super().__init__(selector)
        selector.loop = self
        selector.sealed = True
        self._vtime = 0.0
        self._timer_seq = itertools.count()
        self._external_work = 0
        self._clock_resolution = 1e-9
        self.jumps = 0
        self.task_created: Callable[[asyncio.Task[Any], contextvars.Context | None], None] | None
        self.task_created = None
        # called as a task sets a timer of asyncio's (sykit's own are set by unwatched_timer):
        # the runner stops there a request that waits on past its limits
        self.wait_begins: Callable[[], None] | None = None
        self.deadlock_handler: Callable[[], bool] | None = None
        self.interrupt_handler: Callable[[], None] | None = None
        self.interrupt_handler_ran = False

    # -- the clock ---------------------------------------------------------------------------
    def time(self) -> float:
        return self._vtime

    def _run_once(self) -> None:
        """One loop iteration, as asyncio's, minus what virtual time never needs (I/O timeouts)."""
        if self._debug:
            # asyncio's own iteration takes timers due before ``clock + resolution``: one ulp of
            # the clock makes that "at or before the clock" exactly, at any magnitude.
            self._clock_resolution = math.ulp(self._vtime)
            self._base_run_once()
            return
        ready = self._ready
        scheduled = self._scheduled
        if len(scheduled) > 100 and self._timer_cancelled_count * 2 > len(scheduled):
            live = []
            for handle in scheduled:
                if handle._cancelled:
                    handle._scheduled = False
                else:
                    live.append(handle)
            heapq.heapify(live)
            self._scheduled = scheduled = live
            self._timer_cancelled_count = 0
        else:
            while scheduled and scheduled[0]._cancelled:
                self._timer_cancelled_count -= 1
                heapq.heappop(scheduled)._scheduled = False
        if (
            not ready
            and not self._stopping
            and not (scheduled and scheduled[0]._when <= self._vtime)
        ):
            # Idle: the selector waits for threads, jumps the clock, or reports a deadlock.
            events = self._selector.select(1.0 if scheduled else None)
            if events:
                self._process_events(events)
        # Due means at or before the clock, exactly: the clock only ever jumps to a deadline, and
        # ``clock + resolution`` would equal the clock once it passes 2**24 s (a busy spin).
        now = self._vtime
        while scheduled and scheduled[0]._when <= now:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            ready.append(handle)
        for _ in range(len(ready)):
            next_handle = ready.popleft()
            if not next_handle._cancelled:
                try:
                    next_handle._run()
                except SystemExit:
                    if not _task_of_a_request(next_handle):
                        raise

    def _jump_to_next_timer(self) -> None:
        if self._scheduled:
            when = self._scheduled[0]._when
            if when > self._vtime:
                self._vtime = when
                self.jumps += 1

    def call_at(
        self,
        when: float,
        callback: Callable[[Unpack[_Ts]], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        if when is None:
            raise TypeError("when cannot be None")
        if not when < math.inf:
            # A timer that never fires would move the virtual clock to infinity (or NaN) if it
            # did: refused as the kernel refuses ``sleep(inf)``, with the same error.
            raise ArgumentError(sleep_refusal(when - self._vtime))
        hook = self.wait_begins
        if hook is not None:
            hook()
        return self._timer(when, callback, args, context)

    def unwatched_timer(self, delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        """``call_later`` for sykit's own timers (a model call's latency, a deadline, a
        ``driver.sleep``, which counts itself): the same timer, unseen by :attr:`wait_begins`."""
        return self._timer(self.time() + delay, callback, args)

    def unwatched_timer_at(self, when: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        """:meth:`unwatched_timer` at an instant of the loop's clock (a simulated call's end,
        re-timed as its server's load changes)."""
        return self._timer(when, callback, args)

    def _timer(
        self, when: float, callback: Any, args: Any, context: contextvars.Context | None = None
    ) -> asyncio.TimerHandle:
        self._check_closed()
        timer = _SeqTimerHandle(when, callback, args, self, context, next(self._timer_seq))
        heapq.heappush(self._scheduled, timer)
        timer._scheduled = True
        return timer

    async def unwatched_sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)`` on an :meth:`unwatched_timer`."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future = self.create_future()
        handle = self.unwatched_timer(seconds, _wake, future)
        try:
            await future
        finally:
            handle.cancel()

    # -- tasks and futures (C classes, whatever nest_asyncio did to the asyncio module) ---------
    def create_task(self, coro: Any, *, name: Any = None, context: Any = None) -> Any:
        self._check_closed()
        task = _CTask(coro, loop=self, name=name, context=context)
        hook = self.task_created
        if hook is not None:
            hook(task, context)
        return task

    def create_future(self) -> Any:
        return _CFuture(loop=self)

    # -- threads take zero virtual time ----------------------------------------------------------
    def run_in_executor(
        self, executor: Any, func: Callable[[Unpack[_Ts]], T], *args: *_Ts
    ) -> asyncio.Future[T]:
        future = super().run_in_executor(executor, func, *args)
        self._external_work += 1
        future.add_done_callback(self._external_done)
        return future

    def _external_done(self, _future: Any) -> None:
        self._external_work -= 1

    async def shutdown_default_executor(self, *args: Any, **kwargs: Any) -> None:
        self._external_work += 1
        try:
            await super().shutdown_default_executor(*args, **kwargs)
        finally:
            self._external_work -= 1

    # -- no real network --------------------------------------------------------------------
    def _refuse_network(self, what: str) -> RealIOError:
        return RealIOError(
            f"{what} was attempted on sykit's virtual-time loop at t={self._vtime:g} s. Virtual time "
            "jumps, so a real network call would time out at once. Use sykit.HttpHost (real time) "
            "for real endpoints, and keep network code out of simulated algorithms."
        )

    async def create_connection(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse_network("a network connection (create_connection)")

    async def create_unix_connection(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse_network("a socket connection (create_unix_connection)")

    async def create_server(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse_network("a network server (create_server)")

    async def create_datagram_endpoint(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse_network("a datagram endpoint (create_datagram_endpoint)")

    async def sock_connect(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse_network("a socket connection (sock_connect)")

    # -- deadlock ------------------------------------------------------------------------------
    def _on_deadlock(self) -> None:
        handler = self.deadlock_handler
        if handler is not None and handler():
            return
        raise SimDeadlock(self.describe_deadlock())

    def describe_deadlock(self) -> str:
        """A readable account of what is stuck, for the SimDeadlock message."""
        waiting = [(t.get_name(), t.get_coro()) for t in asyncio.all_tasks(self) if not t.done()]
        return describe_deadlock(
            self._vtime,
            waiting,
            "e.g. awaiting an Event that nobody sets, or a lock that is never released",
        )


def _wake(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)


def loop_is_running() -> bool:
    """True when the calling thread runs an event loop (as a Jupyter cell does)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_here(
    main: Callable[[], Awaitable[T]], setup: Callable[[VirtualTimeLoop], None] | None
) -> T:
    def factory() -> VirtualTimeLoop:
        loop = VirtualTimeLoop()
        if setup is not None:
            setup(loop)
        return loop

    return anyio.run(main, backend="asyncio", backend_options={"loop_factory": factory})


def _interrupt(loop: VirtualTimeLoop) -> None:
    """Ctrl-C, delivered on the loop's own thread: the loop's ``interrupt_handler`` stops the
    run its own way (keeping what finished); without one, every task is cancelled."""
    if loop.interrupt_handler is not None:
        loop.interrupt_handler_ran = True
        loop.interrupt_handler()
        return
    for task in asyncio.all_tasks(loop):
        task.cancel()


def run(
    main: Callable[[], Awaitable[T]],
    *,
    setup: Callable[[VirtualTimeLoop], None] | None = None,
) -> T:
    """Run ``main()`` to completion on a fresh :class:`VirtualTimeLoop` and return its result.

    In a thread that already runs an event loop (a notebook cell, or after ``nest_asyncio.apply()``)
    the loop runs in a private worker thread while this thread waits; ``KeyboardInterrupt`` goes to
    the loop's ``interrupt_handler`` (``main`` then stops its own way and its result is returned)
    or, without one, cancels the simulation's tasks and, once they have stopped, is re-raised,
    unless ``main`` ended with an exception of its own, which is raised instead.
    """
    if not loop_is_running():
        return _run_here(main, setup)
    holder: dict[str, VirtualTimeLoop] = {}

    def remember(loop: VirtualTimeLoop) -> None:
        holder["loop"] = loop
        if setup is not None:
            setup(loop)

    context = contextvars.copy_context()
    executor = ThreadPoolExecutor(1, thread_name_prefix="sykit-sim")
    try:
        future = executor.submit(context.run, _run_here, main, remember)
        try:
            return future.result()
        except KeyboardInterrupt:
            loop = holder.get("loop")
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(_interrupt, loop)
            wait_futures([future])
            if future.cancelled():
                raise
            stopped = future.exception()
            if stopped is None and loop is not None and loop.interrupt_handler_ran:
                return future.result()  # ``main`` stopped its own way (keeping what finished)
            if stopped is not None and not isinstance(stopped, asyncio.CancelledError):
                raise stopped from None  # how ``main`` ended when told to stop (e.g. what finished)
            raise
    finally:
        executor.shutdown(wait=True)


async def arun(
    main: Callable[[], Awaitable[T]],
    *,
    setup: Callable[[VirtualTimeLoop], None] | None = None,
) -> T:
    """Await a virtual-time run from async code: it runs in a worker thread, the caller's loop stays free."""
    context = contextvars.copy_context()
    return await anyio.to_thread.run_sync(context.run, _run_here, main, setup)


def _task_of_a_request(handle: asyncio.Handle) -> bool:
    """Whether ``handle`` was a step of a task started inside a request, which just ended with
    ``SystemExit`` (asyncio raises it out of the loop too): the task holds it, and whoever awaits
    the task gets it, as any other error of the algorithm's (see :mod:`sykit._run.lifecycle`)."""
    from sykit._run.engines.aio import CURRENT_REQUEST

    task = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    if not isinstance(task, asyncio.Task) or not task.done() or task.cancelled():
        return False
    return (
        isinstance(task.exception(), SystemExit)
        and handle._context.get(CURRENT_REQUEST) is not None  # type: ignore[attr-defined]
    )
