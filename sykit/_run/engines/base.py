"""The engine contract: what sykit's code above the engines asks of whichever engine runs a run.

The driver, the race helpers, the request lifecycle and the runner never touch an engine directly
and never ask which one runs. They ask the current :class:`Engine` to keep the clock, to sleep, to
start a task, to wait for the first of several tasks, to cancel one with a cause, to open a
deadline scope, and to drive a call's candidate loop. Two engines implement it:
:mod:`~sykit._run.engines.kernel` (the trampoline kernel, for simulations) and
:mod:`~sykit._run.engines.aio` (any asyncio loop: the virtual-time loop for algorithms that await
asyncio/anyio primitives, a real loop for ``HttpHost``). The current engine is per thread: a run
sets it while it runs (:class:`using`).

Semantics both engines keep (trio's and asyncio's):

* a task started at an instant first runs once what is ready at that instant has run, in the
  order tasks were started, so a request's calls start (and draw) in one order on every engine;
* a task waiting for others resumes two turns after one ends (``asyncio.wait``'s callback, then
  the task), and waits until then;
* cancelling a task that waits (the extra turn above included) queues its next turn at once and
  stops it there, where it waits; one that runs (or whose turn is queued) gets its
  ``asyncio.CancelledError`` at its next suspension (docs/engines.md, "What happens first at one
  instant");
* causes have one writer, :meth:`Engine.cancel`: whoever cancels a task on purpose says why, and
  the first cause given is kept. A cancellation with no cause (a user's ``task.cancel()``, an anyio
  scope) reads back as :attr:`CancelCause.CANCELLED`.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any, Protocol

from sykit._base.alarm import Alarm
from sykit._base.vocab import CancelCause

__all__ = [
    "ALARM",
    "NEXT",
    "OPEN",
    "SEND",
    "SLEEP",
    "Alarm",
    "Call",
    "DeadlineScope",
    "Engine",
    "EngineExit",
    "Owner",
    "current",
    "new_race_id",
    "sleep",
    "sleep_refusal",
    "using",
]

# What a call's candidate loop (a generator) yields to say what it waits for; the engine answers.
#: ``(SLEEP, seconds)``: wake me after this many seconds.
SLEEP = 0
#: ``(SEND, attempt)``, on a real host: perform this attempt and send me its reply.
SEND = 16
#: ``(OPEN, attempt)``, on a real host, for a stream: send this attempt and give me its live
#: stream at its first token (or its reply, if it ended before one).
OPEN = 17
#: ``(NEXT, live_stream)``, on a real host: give me the next token of this stream (or its reply).
NEXT = 18
#: ``(ALARM, alarm)``: wake me at ``alarm.when``, an instant that may move while I wait
#: (:class:`Alarm`).
ALARM = 19


class EngineExit(BaseException):
    """Raised by an engine to stop a run (e.g. the kernel meeting an asyncio primitive): the run's
    own code lets it through. A BaseException, so an algorithm's ``except Exception`` cannot
    swallow it."""


class Owner(Protocol):
    """What a request's state gives the engine: where the tasks it starts are listed, and the
    number of its next race."""

    tasks: list[Any]

    def next_race_id(self) -> int: ...


class DeadlineScope(Protocol):
    """A deadline on the current task (``with engine.deadline(seconds, cause) as scope``): at the
    deadline the task is cancelled with ``cause``; calls made inside get a race id of their own.
    After an ``asyncio.CancelledError``, :meth:`cancelled_caught` says whether it was this
    scope's (and then forgets it, as trio's ``cancelled_caught`` does)."""

    def __enter__(self) -> DeadlineScope: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def cancelled_caught(self) -> bool: ...


class Engine:
    """The operations sykit's code needs from an engine (see the module docstring)."""

    #: Which engine this is, for the records (``result.engine``); never for branching.
    name = "?"

    # -- the clock -------------------------------------------------------------------------------
    def start_clock(self) -> None:
        """The run's clock starts now (a real host: once its client is ready)."""

    def now(self) -> float:
        """Seconds since the run started."""
        raise NotImplementedError

    @property
    def clock(self) -> Callable[[], float]:
        """A function giving :meth:`now`, as cheap to call as the engine can make it."""
        return self.now

    def sleep(self, seconds: float) -> Awaitable[None]:
        """Wait ``seconds`` (finite, ≥ 0) on the engine's clock."""
        raise NotImplementedError

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` at this instant, after what is ready now."""
        raise NotImplementedError

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` after ``seconds``; the handle returned has ``cancel()``."""
        raise NotImplementedError

    def call_at_alarm(self, alarm: Alarm, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` at ``alarm.when``, following the alarm's moves until then; the
        handle returned has ``cancel()``."""
        raise NotImplementedError

    # -- tasks -----------------------------------------------------------------------------------
    def spawn(self, awaitable: Awaitable[Any], race_id: int | None) -> Any:
        """Start ``awaitable`` as a task of the current request, in race ``race_id``."""
        raise NotImplementedError

    def spawn_request(self, coro: Coroutine[Any, Any, Any], owner: Owner, name: str) -> Any:
        """Start a request's own task: the tasks it starts (and theirs) are listed in
        ``owner.tasks``."""
        raise NotImplementedError

    def spawn_detached(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Start ``coro`` as a task of the run, belonging to no request (a session's pause
        before its next turn)."""
        raise NotImplementedError

    def wait_any(self, tasks: Sequence[Any], timeout: float | None = None) -> Awaitable[Any]:
        """Wait until one of ``tasks`` is done (return the first done, in their order) or
        ``timeout`` seconds pass (return None). Always a point where a pending cancellation of
        the waiting task is delivered."""
        raise NotImplementedError

    def cancel(self, task: Any, cause: CancelCause | None) -> None:
        raise NotImplementedError

    def cancel_all(self, tasks: Sequence[Any], cause: CancelCause | None) -> None:
        """Cancel ``tasks`` with ``cause``. Every cause is set before any cancellation is
        delivered, so a task stopped as a consequence of another (one awaiting it) keeps the cause
        it was given, whatever the order."""
        raise NotImplementedError

    async def settle(self, tasks: Sequence[Any], cause: CancelCause | None) -> None:
        """Cancel the unfinished ``tasks`` with ``cause`` and wait until each has stopped; every
        finished task's error counts as retrieved.

        If the caller is cancelled meanwhile, the wait still completes (the cancellations are
        already on their way) and the caller's cancellation is re-raised afterwards. An engine may
        do this in fewer steps, never in another order: the caller waits with :meth:`wait_any`
        on what is left each time it wakes.
        """
        pending = [t for t in tasks if not t.done()]
        if pending:
            self.cancel_all(pending, cause)
        interrupted = False
        while pending:
            try:
                await self.wait_any(pending)
            except asyncio.CancelledError:
                interrupted = True
            pending = [t for t in pending if not t.done()]
        for task in tasks:
            if not task.cancelled():
                task.exception()  # retrieved: a loser's error is not "never retrieved"
        if interrupted:
            raise asyncio.CancelledError

    def uncancel(self, task: Any) -> None:
        """``task`` (the current one) has handled the cancellations it was sent: forget them."""
        raise NotImplementedError

    def drop(self, task: Any) -> None:
        """Give up on a task that ignores cancellation."""
        raise NotImplementedError

    def deadline(self, seconds: float, cause: CancelCause) -> DeadlineScope:
        raise NotImplementedError

    def event(self) -> Any:
        """A one-shot event: ``set()`` it; ``await event.wait()`` until it is set."""
        raise NotImplementedError

    # -- who is running --------------------------------------------------------------------------
    def current_task(self) -> Any:
        raise NotImplementedError

    def current_cause(self) -> CancelCause | None:
        """The cause the current task was cancelled with (None: none given)."""
        raise NotImplementedError

    def current_race(self) -> int | None:
        raise NotImplementedError

    def current_owner(self) -> Owner | None:
        raise NotImplementedError

    def new_race(self) -> int:
        """A race id unique within the current request (or process-wide outside a sykit run)."""
        owner = self.current_owner()
        if owner is None:
            return next(_fallback_races)
        return owner.next_race_id()

    # -- a call ------------------------------------------------------------------------------------
    def drive(self, steps: Generator[Any, Any, Any], session: Any) -> Awaitable[Any]:
        """An awaitable that runs a call's candidate loop ``steps`` (a generator of the traps
        above), exchanging attempts with the host ``session`` where the loop asks to."""
        raise NotImplementedError


def sleep_refusal(seconds: float) -> str | None:
    """Why a sleep of ``seconds`` is refused (None: it is not). Both engines refuse alike: a
    sleep must end at a finite time."""
    if seconds >= 0 and seconds != float("inf"):
        return None
    if seconds == float("inf"):
        return "cannot sleep forever (seconds=inf)"
    return f"cannot sleep {seconds!r} seconds"


_local = threading.local()
_fallback_races = itertools.count()
_default: Callable[[], Engine] | None = None  # set by the asyncio engine's module


def set_default(factory: Callable[[], Engine]) -> None:
    """The engine used where no run has set one (an asyncio loop of the user's own)."""
    global _default
    _default = factory


def current() -> Engine:
    """The engine of the run in this thread (the asyncio engine when none runs)."""
    engine = getattr(_local, "engine", None)
    if engine is not None:
        return engine
    assert _default is not None
    return _default()


class using:
    """``with using(engine): ...`` makes ``engine`` current in this thread for the block."""

    __slots__ = ("_engine", "_previous")

    def __init__(self, chosen: Engine) -> None:
        self._engine = chosen
        self._previous: Engine | None = None

    def __enter__(self) -> Engine:
        self._previous = getattr(_local, "engine", None)
        _local.engine = self._engine
        return self._engine

    def __exit__(self, *exc: object) -> None:
        _local.engine = self._previous


def new_race_id() -> int:
    """A race id unique within the current request (or process-wide outside a sykit run)."""
    return current().new_race()


@types.coroutine
def sleep(seconds: float) -> Generator[Any, Any, None]:
    """Suspend the calling task for ``seconds`` of virtual time (a trap the kernel, or the bulk
    engine's exact way, runs)."""
    yield (SLEEP, seconds)


class Call:
    """A model or decision call, on an engine that runs its traps itself (the kernel, and the
    bulk engine's exact way), that has not been awaited yet: ``await`` it (or pass it to a race
    helper such as ``sy.first``) to send it. A call never awaited is never sent. (On an asyncio
    loop a call is an ordinary coroutine, which asyncio's own APIs accept.)"""

    __slots__ = ("steps",)

    def __init__(self, steps: Generator[Any, Any, Any]) -> None:
        self.steps = steps  # the candidate loop: the engine runs its traps directly

    def __await__(self) -> Generator[Any, Any, Any]:
        return self.steps

    def close(self) -> None:
        """Drop the call without sending it."""
        self.steps.close()

    def __repr__(self) -> str:
        return "<sykit call (not awaited)>"
