"""A trampoline kernel: sykit's own virtual-time scheduler for algorithms that await only sykit.

Why not asyncio: an asyncio loop pays for handles, futures, tasks and a loop turn per wake-up; a
simulation needs none of that. Here coroutines are driven directly with ``send``/``throw``, and a
coroutine suspends by yielding a *trap* — a plain tuple saying "wake me after this many seconds" or
"wake me when one of these tasks finishes". The same technique as simpy's, curio's and trio's cores.

* Timers are a heap of plain tuples ``(when, seq, task)``: C tuple comparison, ties fire in the order
  they were set, and a cancelled wait is deleted lazily (a stale ``seq`` is skipped when popped).
  A timer due at the instant it is set (a wait or deadline of 0 s) fires on the next turn, behind
  what the current turn queued, as asyncio moves due timers to its ready queue once a turn.
* The clock is set to each timer's own deadline, so it stays exact at any time; waits must be
  finite.
* What happens at one instant happens in asyncio's order, so both engines start a request's calls
  (and key their draws) alike: a child starts once what is ready at this instant has run; a task
  waiting for others resumes two turns after one ends (``asyncio.wait``'s callback, then the
  waiter), and still waits until then; a cancelled task that waits (that extra turn included)
  gets its ``CancelledError`` on a turn queued when it is cancelled. A race's loser is still
  recorded at the virtual instant it lost.
* A task that ends keeps its result, not its coroutine: nothing ties a finished request to its
  frames, so no per-request reference cycle is left for the cyclic collector.

Algorithms that await asyncio or anyio primitives cannot run here. While the kernel runs, the
thread's "running loop" is a stand-in whose first use raises :class:`NeedsAsyncio` (and whose
later uses stop the coroutine at its next await, should it swallow that); the runner catches it
and runs the whole simulation again on the asyncio engine (see :mod:`sykit._run.api`).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import inspect
import math
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Iterator, Sequence
from typing import Any

from sykit._base.errors import ArgumentError, SimDeadlock
from sykit._base.vocab import CancelCause
from sykit._run.engines.base import (
    ALARM,
    SLEEP,
    Alarm,
    Call,
    Engine,
    EngineExit,
    current,
    sleep,
    sleep_refusal,
)
from sykit._run.engines.deadlock import describe_deadlock, unreported_ignored_exits

__all__ = [
    "Call",
    "KTask",
    "Kernel",
    "KernelEngine",
    "NeedsAsyncio",
    "Timer",
    "checkpoint",
    "close_arguments",
    "sleep",
    "wait_any",
]

#: Trap codes: what a suspended coroutine yields to say what it waits for (SLEEP: the base's).
_WAIT_ANY = 1
_YIELD = 2
_TWO_TURNS = 3
#: In the ready queue in place of a value: "one more turn before this task runs" (the turn of
#: ``asyncio.wait``'s callback, during which the task still waits).
_HOP = object()
#: ``KTask.wake`` of a task whose wait has ended but which has its ``_HOP`` still to take: it still
#: waits, so a cancellation wakes it at once (and its ``_HOP`` is then skipped).
_HOPPING = -1

_CancelledError = asyncio.CancelledError


class NeedsAsyncio(EngineExit):
    """An algorithm awaited something only an asyncio event loop can run (an asyncio or anyio
    primitive). A BaseException, so an algorithm's ``except Exception`` cannot swallow it."""


class Timer:
    """A callback due at a virtual time (``Kernel.call_later``); ``cancel()`` it before then."""

    __slots__ = ("args", "fn", "wake")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.wake = 0

    def cancel(self) -> None:
        self.wake = 0


class KTask:
    """A coroutine driven by the kernel, with the small part of ``asyncio.Task``'s API sykit uses."""

    __slots__ = (
        "_error",
        "_result",
        "cancel_cause",
        "cancel_pending",
        "cancelled_",
        "coro",
        "done_",
        "name",
        "owner",
        "race_id",
        "waiters",
        "waiting",
        "wake",
    )

    def __init__(self, coro: Coroutine[Any, Any, Any], owner: Any, race_id: int | None) -> None:
        self.coro: Coroutine[Any, Any, Any] | None = coro
        self.owner = owner  # the request state this task works for (None: the runner's own)
        self.race_id = race_id
        self.done_ = False
        self.cancelled_ = False
        self._result: Any = None
        self._error: BaseException | None = None
        self.cancel_cause: str | None = None
        self.cancel_pending = False
        self.waiters: list[KTask] | None = None
        self.waiting: Sequence[KTask] | None = None
        self.wake = 0  # the seq of the timer that may wake it; 0: none; _HOPPING: its hop
        self.name = ""

    # -- asyncio.Task-like -------------------------------------------------------------------
    def done(self) -> bool:
        return self.done_

    def cancelled(self) -> bool:
        return self.cancelled_

    def result(self) -> Any:
        if self.cancelled_:
            raise _CancelledError()
        if self._error is not None:
            raise self._error
        return self._result

    def exception(self) -> BaseException | None:
        if self.cancelled_:
            raise _CancelledError()
        return self._error

    def __await__(self) -> Generator[Any, Any, Any]:
        """Await the task's result, as an asyncio task can be awaited; as there, cancelling the
        awaiting task cancels this one instead, and the awaiter waits until it has stopped."""
        while not self.done_:
            try:
                yield (_WAIT_ANY, (self,), None)
            except _CancelledError:
                if self.done_:
                    raise
                current().cancel(self, None)
        return self.result()

    def __repr__(self) -> str:
        state = "done" if self.done_ else "pending"
        return f"<KTask {self.name or hex(id(self))} {state}>"


@types.coroutine
def wait_any(
    tasks: Sequence[KTask], timeout: float | None = None
) -> Generator[Any, Any, KTask | None]:
    """Suspend until one of ``tasks`` is done or ``timeout`` seconds pass; return the first of
    ``tasks`` (in their order) that is done, or None.

    Like ``asyncio.wait``, it wakes only after every timer due at that instant has fired, so tasks
    that finish at the same instant are all seen done, and the order of ``tasks`` decides. As
    there, a task already done still costs two turns (its callback, then the waiter's): what is
    ready meanwhile runs first."""
    for task in tasks:
        if task.done_:
            yield (_TWO_TURNS,)
            break
    else:
        yield (_WAIT_ANY, tasks, timeout)
    for task in tasks:
        if task.done_:
            return task
    return None


@types.coroutine
def _settle(
    engine: KernelEngine, tasks: Sequence[KTask], cause: CancelCause | None
) -> Generator[Any, Any, None]:
    """``Engine.settle`` on the kernel: the same waits, without a coroutine per call. (A kernel
    task's error needs no retrieving: nothing warns about it.)"""
    pending = [t for t in tasks if not t.done_]
    if not pending:
        return
    engine.cancel_all(pending, cause)
    interrupted = False
    while pending:
        try:
            yield (_WAIT_ANY, pending, None)
        except _CancelledError:
            interrupted = True
        pending = [t for t in pending if not t.done_]
    if interrupted:
        raise _CancelledError


@types.coroutine
def checkpoint() -> Generator[Any, Any, None]:
    """Let every other task that is ready at this instant run first."""
    yield (_YIELD,)


def close_arguments(coro: Any) -> None:
    """A task cancelled before its coroutine started never runs it (the cancellation is thrown
    in at the start), so the coroutines it was given — the calls passed to ``sy.first``,
    ``sy.timeout``, … — are never awaited: close them (and theirs), so Python does not warn that
    they were never awaited."""
    if not inspect.iscoroutine(coro) or inspect.getcoroutinestate(coro) != inspect.CORO_CREATED:
        return
    frame = coro.cr_frame
    if frame is None:
        return
    for value in frame.f_locals.values():
        for item in value if type(value) is tuple else (value,):
            if inspect.iscoroutine(item):
                close_arguments(item)
                item.close()


class _Void:
    """What the stand-ins hand out once a use of asyncio has been refused: whatever is done with
    it gives itself (or nothing), and awaiting it yields it, which is no trap of the kernel's, so
    the kernel stops the run there (:class:`NeedsAsyncio`) from outside the coroutine. An
    algorithm that swallows the refusal (``except BaseException``) and tries again thus waits,
    instead of raising and catching again forever without ever waiting."""

    __slots__ = ()

    def __getattr__(self, name: str) -> _Void:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Void:
        return self

    def __await__(self) -> Generator[Any, Any, Any]:
        yield self
        return self

    def __aenter__(self) -> _Void:
        return self

    def __aexit__(self, *exc_info: object) -> _Void:
        return self

    def __enter__(self) -> _Void:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __int__(self) -> int:
        return 0

    __index__ = __int__

    def _same(self, other: object) -> _Void:
        return self

    def _never(self, other: object) -> bool:
        return False

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = _never


_VOID = _Void()


def _stand_ins(kernel: Kernel) -> tuple[asyncio.AbstractEventLoop, Any]:
    """The thread's "running loop" and "current task" while ``kernel`` runs: any use of them
    means asyncio is needed. Each use is also noted on the kernel, so an algorithm that catches
    the error (or an exception group that wraps it) cannot hide it; after the first, a use gives
    :data:`_VOID`, so one that catches every error and tries again stops at its next await."""

    def refuse(what: str) -> NeedsAsyncio:
        if kernel.foreign is None:
            kernel.foreign = what
        return NeedsAsyncio(what)

    def refuse_task(coro: Any, *args: Any, **kwargs: Any) -> Any:
        if hasattr(coro, "close"):
            coro.close()  # never to run: close it, so Python does not also warn it was not awaited
        if kernel.foreign is not None:
            return _VOID
        raise refuse("an asyncio task was created")

    class StandInLoop(asyncio.AbstractEventLoop):
        def __getattribute__(self, name: str) -> Any:
            if name == "create_task":
                return refuse_task
            if kernel.foreign is not None:
                return _VOID
            raise refuse(f"asyncio loop method {name!r} was used")

    class StandInTask:
        def __getattr__(self, name: str) -> Any:
            if kernel.foreign is not None:
                return _VOID
            raise refuse(f"asyncio task attribute {name!r} was used")

    # typeshed marks the loop's methods abstract; asyncio's class is no ABC, so this works
    return StandInLoop(), StandInTask()  # type: ignore[abstract]


class Kernel:
    """Runs kernel tasks in virtual time from 0.0 until none is left.

    ``deadlock_handler()``, when set, is called when tasks remain but none can ever wake; it returns
    True if it made progress possible (e.g. cancelled the stuck tasks), otherwise
    :class:`SimDeadlock` is raised.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.current: KTask | None = None
        self.deadlock_handler: Callable[[], bool] | None = None
        self.interrupted = False
        self.foreign: str | None = None  # the first asyncio use seen (the run must be redone)
        self._heap: list[tuple[float, int, Any]] = []
        self._ready: deque[tuple[Any, Any]] = deque()
        self._seq = 0
        self._soon = False  # a timer was set for the instant it was set (see _queue_due)
        self._live: dict[KTask, None] = {}  # unfinished tasks, in the order they started

    # -- tasks -------------------------------------------------------------------------------
    def spawn(
        self,
        coro: Coroutine[Any, Any, Any],
        *,
        owner: Any = None,
        race_id: int | None = None,
        name: str = "",
        track: Any = None,
    ) -> KTask:
        """Start ``coro`` as a task: it first runs once what is ready at this instant has run, as
        an asyncio task does, so both engines start a request's calls in the same order (and key
        the same draws to them). With ``track``, the task is appended to ``track.tasks`` (a
        request's own tasks)."""
        task = KTask(coro, owner, race_id)
        task.name = name
        self._live[task] = None
        if track is not None:
            track.tasks.append(task)
        self._ready.append((task, None))
        return task

    def cancel(self, task: KTask, cause: str | None) -> None:
        """Cancel ``task``: the first cause given is kept. A suspended task stops waiting and gets
        the ``CancelledError`` on its next turn at this instant, queued now, as an asyncio task
        whose future is cancelled; that includes a task whose wait for other tasks has ended but
        which has its extra turn still to take (asyncio's wait callback has not yet run, so its
        future is still pending). A running one (the caller itself, or a task that started it)
        gets it at its next suspension; one that is ready to run when it next runs."""
        if task.done_:
            return
        if task.cancel_cause is None and cause is not None:
            task.cancel_cause = cause
        task.cancel_pending = True
        if task.waiting is None and task.wake == 0:
            return  # running or ready: delivered when it next runs
        self._unwait(task)
        self._ready.append((task, None))

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Call ``fn(*args)`` after ``seconds`` of virtual time (a finite number ≥ 0)."""
        timer = Timer(fn, args)
        self._seq += 1
        timer.wake = self._seq
        when = self.now + seconds
        heapq.heappush(self._heap, (when, self._seq, timer))
        if when == self.now:
            self._soon = True
        return timer

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` at this instant, once everything ready before it has run."""
        self._ready.append((Timer(fn, args), None))

    def drop(self, task: KTask) -> None:
        """End a task that ignores cancellation: its coroutine is closed (``GeneratorExit`` at its
        suspension point) and it counts as cancelled."""
        if task.done_:
            return
        coro = task.coro
        if coro is not None and (
            getattr(coro, "cr_running", False) or getattr(coro, "gi_running", False)
        ):
            return  # it is running (it started what drops it): its cancellation is on its way
        self._unwait(task)
        task.coro = None
        if coro is not None:
            with contextlib.suppress(RuntimeError):  # it ignored GeneratorExit too: dropped anyway
                coro.close()
        self._finish(task, None, None, True)

    def close(self) -> None:
        """Drop every task still running (after an interrupt): nothing is left half-run."""
        for task in list(self._live):
            self.drop(task)
        self._heap.clear()
        self._ready.clear()

    def _close_unstarted(self) -> None:
        """A run that stops with an error leaves its tasks to the collector; those that never ran
        are closed now, so Python does not warn that their coroutines were never awaited."""
        for task in self._live:
            coro = task.coro
            if (
                inspect.iscoroutine(coro)
                and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED
            ):
                close_arguments(coro)
                coro.close()

    def _drop_left(self) -> None:
        """The run stops for asyncio: drop the tasks it leaves now, while the stand-ins still
        hand out :data:`_VOID`. Left to the collector, an algorithm that swallows
        ``GeneratorExit`` would go on when its coroutine is freed, with no loop at all, and could
        raise and catch forever; here its next await suspends it and it is dropped (Python's
        reports that it ignored ``GeneratorExit`` are left out: the run starts again)."""
        with unreported_ignored_exits():
            self.close()
            self._close_unstarted()  # any its last steps started

    def live_tasks(self) -> list[KTask]:
        return list(self._live)

    # -- the trampoline ----------------------------------------------------------------------
    def _step(self, task: KTask, value: Any, error: BaseException | None) -> None:
        coro = task.coro
        if coro is None:
            return
        if task.cancel_pending and error is None:  # cancelled while it waited in the ready queue
            task.cancel_pending = False
            value, error = None, _CancelledError()
            if type(coro) is types.CoroutineType:  # (a call's candidate loop has nothing to close)
                close_arguments(coro)  # cancelled before it started: what it was given never runs
        previous = self.current
        self.current = task
        thrown: BaseException | None = None
        try:
            while True:
                try:
                    if error is None:
                        trap = coro.send(value)
                    else:
                        thrown, error = error, None
                        trap = coro.throw(thrown)
                except StopIteration as stop:
                    self._finish(task, stop.value, None, False)
                    return
                except _CancelledError:
                    thrown = None  # the frame must not keep the exception: that would be a cycle
                    self._finish(task, None, None, True)
                    return
                except NeedsAsyncio:
                    raise
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # SystemExit too: an algorithm's error like any
                    thrown = None
                    if self.foreign is not None:  # wrapped in a group, perhaps: stop all the same
                        raise NeedsAsyncio(self.foreign) from None
                    # Keep the algorithm's frames for the traceback, not the kernel's own (which
                    # holds the task that will hold the error: a cycle).
                    if exc.__traceback__ is not None:
                        exc.__traceback__ = exc.__traceback__.tb_next
                    self._finish(task, None, exc, False)
                    return
                thrown = None
                if task.cancel_pending:
                    task.cancel_pending = False
                    value, error = None, _CancelledError()
                    continue
                if type(trap) is not tuple:
                    if trap is None:  # a bare yield (asyncio.sleep(0)): let others run first
                        self._ready.append((task, None))
                        return
                    if self.foreign is None:  # (else a refusal it swallowed says what)
                        self.foreign = f"a coroutine awaited {type(trap).__name__}"
                    raise NeedsAsyncio(self.foreign)
                kind = trap[0]
                if kind == SLEEP:
                    seconds = trap[1]
                    if not 0 < seconds < math.inf:
                        if seconds == 0:
                            self._ready.append((task, None))
                            return
                        value, error = None, ArgumentError(sleep_refusal(seconds))
                        continue
                    self._seq += 1
                    task.wake = self._seq
                    when = self.now + seconds
                    heapq.heappush(self._heap, (when, self._seq, task))
                    if when == self.now:  # too short to move the clock: due now
                        self._soon = True
                    return
                if kind == ALARM:
                    alarm = trap[1]
                    if not alarm.when < math.inf:
                        value, error = None, ArgumentError(sleep_refusal(alarm.when - self.now))
                        continue
                    self.arm(task, alarm)
                    return
                if kind == _WAIT_ANY:
                    tasks = trap[1]
                    timeout = trap[2]
                    if timeout is not None:
                        if not timeout >= 0:  # (NaN too)
                            value, error = None, ArgumentError(f"cannot wait {timeout!r} s")
                            continue
                        if timeout == math.inf:
                            timeout = None  # waiting forever for tasks is waiting for them
                    task.waiting = tasks
                    for other in tasks:
                        if other.waiters is None:
                            other.waiters = [task]
                        else:
                            other.waiters.append(task)
                    if timeout is not None:
                        self._seq += 1
                        task.wake = self._seq
                        when = self.now + timeout
                        heapq.heappush(self._heap, (when, self._seq, task))
                        if when == self.now:  # a wait of 0 s: due now
                            self._soon = True
                    return
                if kind == _TWO_TURNS:
                    task.wake = _HOPPING
                    self._ready.append((task, _HOP))
                    return
                if kind == _YIELD:
                    self._ready.append((task, None))
                    return
                raise NeedsAsyncio(f"unknown trap {trap!r}")
        finally:
            self.current = previous

    def arm(self, waiter: KTask | Timer, alarm: Alarm) -> None:
        """Wake ``waiter`` (a task that yielded ``(ALARM, alarm)``, or a timer's callback) at
        ``alarm.when``, and at each instant the alarm moves to until then."""
        self._set_alarm(waiter, alarm, alarm.when)
        alarm._reset = lambda when: self._move_alarm(waiter, alarm, when)

    def _set_alarm(self, task: KTask | Timer, alarm: Alarm, when: float) -> None:
        """``task`` sleeps until ``when`` (never before now) for ``alarm``."""
        now = self.now
        if when < now:
            when = now
        self._seq += 1
        task.wake = alarm._token = self._seq
        heapq.heappush(self._heap, (when, self._seq, task))
        if when == now:  # due now: fires on the next turn, as a timer set now
            self._soon = True

    def _move_alarm(self, task: KTask | Timer, alarm: Alarm, when: float) -> None:
        """``alarm`` moved: a new timer, unless ``task`` no longer sleeps for it (it woke, or
        was cancelled; the old timer's entry is skipped when popped)."""
        if task.wake == alarm._token:
            self._set_alarm(task, alarm, when)
        else:
            alarm._reset = None

    def _finish(
        self, task: KTask, result: Any, error: BaseException | None, cancelled: bool
    ) -> None:
        task.done_ = True
        task.coro = None
        task._result = result
        task._error = error
        task.cancelled_ = cancelled
        self._live.pop(task, None)
        waiters = task.waiters
        if waiters:
            task.waiters = None
            ready = self._ready
            for waiter in waiters:
                if waiter.waiting is not None:
                    self._unwait(waiter)
                    # Woken two turns later, as asyncio.wait wakes its waiter (the finished
                    # task's callback, then the waiter's): what is ready meanwhile runs first.
                    waiter.wake = _HOPPING
                    ready.append((waiter, _HOP))

    def _unwait(self, task: KTask) -> None:
        waiting = task.waiting
        if waiting is not None:
            task.waiting = None
            for other in waiting:
                waiters = other.waiters
                if waiters and task in waiters:  # (a short list: cheaper than suppressing)
                    waiters.remove(task)
        task.wake = 0

    # -- the loop ------------------------------------------------------------------------------
    def run(self, main: Coroutine[Any, Any, Any]) -> Any:
        """Run ``main`` and everything it starts until nothing is left; return ``main``'s result."""
        previous_loop = asyncio._get_running_loop()
        stand_in, fake_task = _stand_ins(self)
        asyncio._set_running_loop(stand_in)
        asyncio._enter_task(stand_in, fake_task)
        try:
            root = self.spawn(main, name="main")
            self._loop()
        except BaseException:
            self._close_unstarted()
            if self.foreign is not None:
                self._drop_left()
            raise
        finally:
            asyncio._leave_task(stand_in, fake_task)
            asyncio._set_running_loop(previous_loop)
        if self.foreign is not None:
            raise NeedsAsyncio(self.foreign)
        return root.result()

    def _loop(self) -> None:
        heap = self._heap
        ready = self._ready
        popleft = ready.popleft
        pop = heapq.heappop
        step = self._step
        while True:
            n = len(ready)
            if n:
                # One turn, as asyncio's loop iteration: the timers set during the last turn
                # and due now (a wait of 0 s) join the queue behind what that turn queued; then
                # what is queued runs, and what it queues waits for the next turn.
                if self._soon:
                    self._queue_due()
                    n = len(ready)
                while n:
                    n -= 1
                    task, value = popleft()
                    if type(task) is Timer:
                        if value is _HOP:  # a timer queued by _queue_due
                            if not task.wake:
                                continue  # cancelled since
                            task.wake = 0
                        task.fn(*task.args)
                    elif value is _HOP:
                        if task.wake == _HOPPING:  # else a cancellation already woke it
                            task.wake = 0
                            ready.append((task, None))
                    else:
                        step(task, value, None)
                continue
            if self.interrupted:
                self.interrupted = False
                for task in list(self._live):
                    self.cancel(task, CancelCause.CANCELLED)
                continue
            if not heap:
                if not self._live:
                    return
                handler = self.deadlock_handler
                if handler is not None and handler():
                    continue
                raise SimDeadlock(self.describe_deadlock())
            # Every timer due at this instant fires before anything it wakes runs, as in asyncio:
            # a callback runs now; a task whose sleep (or wait) ends joins the ready queue, in
            # the timers' order, behind what the callbacks before it scheduled. A timer that one
            # of these callbacks sets for this same instant waits for the next turn.
            when = heap[0][0]
            last = self._seq
            while heap and heap[0][0] == when and heap[0][1] <= last:
                _, seq, task = pop(heap)
                if task.wake != seq:
                    continue  # a wait that was cancelled or already ended
                self.now = when
                task.wake = 0
                if type(task) is Timer:
                    task.fn(*task.args)
                    continue
                if task.waiting is not None:  # a wait_any that timed out
                    self._unwait(task)
                ready.append((task, None))

    def _queue_due(self) -> None:
        """Queue the timers due now that were set during this instant (a wait or deadline of
        0 s), in the order they were set, behind what is ready: asyncio moves a due timer to its
        ready queue at the start of a turn. A timer's callback runs on its turn; a task it wakes
        runs on the turn after (the timer's turn, then its own), and still waits until then, so
        a cancellation meanwhile wakes it at once, as it wakes a task whose wait just ended."""
        self._soon = False
        heap = self._heap
        ready = self._ready
        now = self.now
        while heap and heap[0][0] <= now:
            _, seq, task = heapq.heappop(heap)
            if task.wake != seq:
                continue  # a wait that was cancelled or already ended
            if type(task) is not Timer:
                if task.waiting is not None:  # a wait_any that timed out
                    self._unwait(task)
                task.wake = _HOPPING
            ready.append((task, _HOP))

    def describe_deadlock(self) -> str:
        """A readable account of what is stuck, for the SimDeadlock message."""
        waiting = [
            (t.name or "unnamed", t.coro)
            for t in self._live
            if t.waiting is not None or t.wake == 0
        ]
        return describe_deadlock(
            self.now, waiting, "e.g. a task waiting for another that waits for it"
        )


# -- the engine contract on the kernel ------------------------------------------------------------


async def _await(awaitable: Any) -> Any:
    return await awaitable


class _Event:
    """A one-shot event for kernel tasks: waiting is waiting for a task that ends when it is set."""

    __slots__ = ("_kernel", "_task")

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._task: KTask | None = None

    def _gate(self) -> KTask:
        if self._task is None:
            task = KTask(None, None, None)  # type: ignore[arg-type]
            task.coro = None  # never stepped: it ends when the event is set
            task.name = "event"
            self._task = task
        return self._task

    def set(self) -> None:
        task = self._gate()
        if not task.done_:
            self._kernel._finish(task, None, None, False)

    async def wait(self) -> None:
        gate = self._gate()
        if not gate.done_:  # a set event returns at once, as asyncio.Event.wait does
            await wait_any([gate])


class _Deadline:
    """``Engine.deadline`` on the kernel: the awaitable runs in the calling task (no extra task);
    at the deadline the task is cancelled with the scope's cause where it waits."""

    __slots__ = ("_cause", "_expired", "_kernel", "_race", "_seconds", "_task", "_timer", "engine")

    def __init__(self, engine: KernelEngine, seconds: float, cause: CancelCause) -> None:
        self.engine = engine
        self._kernel = engine.kernel
        self._seconds = seconds
        self._cause = cause
        self._expired = False
        self._task: KTask | None = None
        self._timer: Timer | None = None
        self._race: int | None = None

    def __enter__(self) -> _Deadline:
        task = self._kernel.current
        if task is None:
            raise RuntimeError("a deadline must be entered inside a task")
        self._task = task
        self._race = task.race_id
        task.race_id = self.engine.new_race()
        self._timer = self._kernel.call_later(self._seconds, self._expire)
        return self

    def _expire(self) -> None:
        task = self._task
        if task is not None and not task.done_:
            self._expired = True
            self._kernel.cancel(task, self._cause)

    def cancelled_caught(self) -> bool:
        task = self._task
        if self._expired and task is not None and task.cancel_cause is self._cause:
            task.cancel_cause = None  # handled: later cancellations have causes of their own
            return True
        return False

    def __exit__(self, *exc_info: object) -> None:
        timer = self._timer
        if timer is not None:
            timer.wake = 0  # (Timer.cancel, inlined: a deadline per sy.timeout)
            self._timer = None  # it holds this scope (a cycle) until its time comes
        if self._task is not None:
            self._task.race_id = self._race


class KernelEngine(Engine):
    """The engine contract on the trampoline kernel."""

    name = "kernel"
    __slots__ = ("clock", "kernel")

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.clock: Callable[[], float] = lambda: kernel.now  # fewer lookups than now()

    def now(self) -> float:
        return self.kernel.now

    def sleep(self, seconds: float) -> Any:
        return sleep(seconds)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.kernel.call_soon(fn, *args)

    def call_at_alarm(self, alarm: Alarm, fn: Callable[..., Any], *args: Any) -> Timer:
        if not alarm.when < math.inf:
            raise ArgumentError(sleep_refusal(alarm.when - self.kernel.now))
        timer = Timer(fn, args)
        self.kernel.arm(timer, alarm)
        return timer

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Timer:
        return self.kernel.call_later(seconds, fn, *args)

    def spawn(self, awaitable: Any, race_id: int | None) -> KTask:
        if type(awaitable) is Call:
            coro: Any = awaitable.steps
        elif type(awaitable) is types.CoroutineType or isinstance(awaitable, Coroutine):
            coro = awaitable
        else:
            coro = _await(awaitable)
        # Kernel.spawn, inlined: a race starts a task per call (a hot path)
        kernel = self.kernel
        running = kernel.current
        owner = running.owner if running is not None else None
        task = KTask(coro, owner, race_id)
        kernel._live[task] = None
        if owner is not None:
            owner.tasks.append(task)
        kernel._ready.append((task, None))
        return task

    def spawn_request(self, coro: Coroutine[Any, Any, Any], owner: Any, name: str) -> KTask:
        return self.kernel.spawn(coro, owner=owner, name=name)

    def spawn_detached(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.kernel.spawn(coro, name="detached")

    def wait_any(self, tasks: Sequence[KTask], timeout: float | None = None) -> Any:
        return wait_any(tasks, timeout)  # awaitable as it is: no coroutine around it

    def cancel(self, task: KTask, cause: CancelCause | None) -> None:
        self.kernel.cancel(task, cause)

    def cancel_all(self, tasks: Sequence[KTask], cause: CancelCause | None) -> None:
        if cause is not None:
            for task in tasks:
                if task.cancel_cause is None and not task.done_:
                    task.cancel_cause = cause
        for task in tasks:
            self.kernel.cancel(task, cause)

    def settle(self, tasks: Sequence[KTask], cause: CancelCause | None) -> Any:
        return _settle(self, tasks, cause)  # awaitable as it is: no coroutine around it

    def uncancel(self, task: KTask) -> None:
        task.cancel_pending = False
        task.cancel_cause = None

    def drop(self, task: KTask) -> None:
        self.kernel.drop(task)

    def deadline(self, seconds: float, cause: CancelCause) -> _Deadline:
        return _Deadline(self, seconds, cause)

    def event(self) -> _Event:
        return _Event(self.kernel)

    def current_task(self) -> KTask | None:
        return self.kernel.current

    def current_cause(self) -> CancelCause | None:
        running = self.kernel.current
        return None if running is None else running.cancel_cause  # type: ignore[return-value]

    def current_race(self) -> int | None:
        running = self.kernel.current
        return None if running is None else running.race_id

    def current_owner(self) -> Any:
        running = self.kernel.current
        return None if running is None else running.owner

    def new_race(self) -> int:
        running = self.kernel.current  # (Engine.new_race, without the call for the owner)
        owner = None if running is None else running.owner
        return Engine.new_race(self) if owner is None else owner.next_race_id()

    def drive(self, steps: Generator[Any, Any, Any], session: Any) -> Call:
        return Call(steps)  # a simulated host plans its attempts: only sleeps reach the kernel
