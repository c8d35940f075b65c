"""What sykit's own code awaits, on whichever engine runs it: the kernel or an asyncio loop.

The driver, the race helpers and the runner never touch an engine directly. They ask the current
:class:`Backend` to sleep, to start a task, to wait for the first of several tasks, to cancel one
with a cause, and who is running. Two backends implement that: :class:`KernelBackend` (the
trampoline kernel, used for simulations) and :class:`AsyncioBackend` (any asyncio loop: the
virtual-time loop for algorithms that await asyncio/anyio primitives, a real loop for
``HttpHost``). The current backend is per thread: a simulation sets it while it runs.

Cancellation causes have one writer, :meth:`Backend.cancel`: whoever cancels a task on purpose says
why, and the first cause given is kept. A cancellation with no cause (a user's ``task.cancel()``,
an anyio scope) reads back as :attr:`CancelCause.CANCELLED`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import threading
import weakref
from collections.abc import Coroutine, Sequence
from typing import Any

from . import _kernel
from ._kernel import Kernel, KTask, close_arguments
from ._vocab import CancelCause

__all__ = ["AsyncioBackend", "Backend", "KernelBackend", "backend", "using"]

#: The request state a task works for (asyncio backend; kernel tasks carry it as ``owner``).
CURRENT_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("sykit_request", default=None)
#: The race id of the innermost race helper a task runs under (asyncio backend).
CURRENT_RACE: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "sykit_race", default=None
)


class Backend:
    """The operations sykit's code needs from an engine (see the module docstring)."""

    name = "?"

    def now(self) -> float:
        raise NotImplementedError

    def sleep(self, seconds: float) -> Any:
        raise NotImplementedError

    def spawn(self, coro: Coroutine[Any, Any, Any], race_id: int | None) -> Any:
        raise NotImplementedError

    def spawn_detached(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Start ``coro`` as a task of the run, belonging to no request (a session's pause
        before its next turn)."""
        raise NotImplementedError

    async def wait_any(self, tasks: Sequence[Any], timeout: float | None = None) -> Any:
        raise NotImplementedError

    def cancel(self, task: Any, cause: CancelCause | None) -> None:
        raise NotImplementedError

    def cancel_all(self, tasks: Sequence[Any], cause: CancelCause | None) -> None:
        """Cancel ``tasks`` with ``cause``. Every cause is set before any cancellation is
        delivered, so a task stopped as a consequence of another (one awaiting it) keeps the cause
        it was given, whatever the order."""
        raise NotImplementedError

    def current_task(self) -> Any:
        raise NotImplementedError

    def current_cause(self) -> CancelCause | None:
        raise NotImplementedError

    def current_race(self) -> int | None:
        raise NotImplementedError

    def current_owner(self) -> Any:
        raise NotImplementedError

    def drop(self, task: Any) -> None:
        """Give up on a task that ignores cancellation."""

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Call ``fn(*args)`` at this instant, after what is running now."""
        raise NotImplementedError

    def new_race(self) -> int:
        """A race id unique within the current request (or process-wide outside a sykit run)."""
        state = self.current_owner()
        if state is None:
            return next(_fallback_races)
        return state.next_race_id()  # type: ignore[no-any-return]


class KernelBackend(Backend):
    """The trampoline kernel (:mod:`sykit._kernel`)."""

    name = "kernel"
    __slots__ = ("kernel",)

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def now(self) -> float:
        return self.kernel.now

    def sleep(self, seconds: float) -> Any:
        return _kernel.sleep(seconds)

    def spawn(self, coro: Coroutine[Any, Any, Any], race_id: int | None) -> KTask:
        kernel = self.kernel
        current = kernel.current
        owner = current.owner if current is not None else None
        task = kernel.spawn(coro, owner=owner, race_id=race_id, track=owner)
        return task

    def spawn_detached(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.kernel.spawn(coro, name="session pause")

    def wait_any(self, tasks: Sequence[KTask], timeout: float | None = None) -> Any:
        return _kernel.wait_any(tasks, timeout)  # awaitable as it is: no coroutine around it

    def cancel(self, task: KTask, cause: CancelCause | None) -> None:
        self.kernel.cancel(task, cause)

    def cancel_all(self, tasks: Sequence[KTask], cause: CancelCause | None) -> None:
        if cause is not None:
            for task in tasks:
                if task.cancel_cause is None and not task.done_:
                    task.cancel_cause = cause
        for task in tasks:
            self.kernel.cancel(task, cause)

    def current_task(self) -> KTask | None:
        return self.kernel.current

    def current_cause(self) -> CancelCause | None:
        current = self.kernel.current
        return None if current is None else current.cancel_cause  # type: ignore[return-value]

    def current_race(self) -> int | None:
        current = self.kernel.current
        return None if current is None else current.race_id

    def current_owner(self) -> Any:
        current = self.kernel.current
        return None if current is None else current.owner

    def drop(self, task: KTask) -> None:
        self.kernel.drop(task)

    def call_soon(self, fn: Any, *args: Any) -> None:
        self.kernel.call_soon(fn, *args)

    def new_race(self) -> int:
        current = self.kernel.current
        state = None if current is None else current.owner
        if state is None:
            return next(_fallback_races)
        return state.next_race_id()  # type: ignore[no-any-return]


_CAUSES: weakref.WeakKeyDictionary[asyncio.Task[Any], CancelCause] = weakref.WeakKeyDictionary()


class AsyncioBackend(Backend):
    """Any asyncio event loop: request and race come from context variables, causes from a weak
    map of tasks."""

    name = "asyncio"

    def __init__(self, origin: float = 0.0) -> None:
        self.origin = origin
        self._detached: set[asyncio.Task[Any]] = set()

    def now(self) -> float:
        return asyncio.get_running_loop().time() - self.origin

    def sleep(self, seconds: float) -> Any:
        return asyncio.sleep(seconds)

    def spawn(self, coro: Coroutine[Any, Any, Any], race_id: int | None) -> asyncio.Task[Any]:
        context = contextvars.copy_context()
        context.run(CURRENT_RACE.set, race_id)
        return asyncio.get_running_loop().create_task(coro, context=context)

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

    def current_task(self) -> asyncio.Task[Any] | None:
        return asyncio.current_task()

    def current_cause(self) -> CancelCause | None:
        task = asyncio.current_task()
        return None if task is None else _CAUSES.get(task)

    def call_soon(self, fn: Any, *args: Any) -> None:
        asyncio.get_running_loop().call_soon(fn, *args)

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

    def forget_cause(self, task: asyncio.Task[Any]) -> None:
        _CAUSES.pop(task, None)

    def current_race(self) -> int | None:
        return CURRENT_RACE.get()

    def current_owner(self) -> Any:
        return CURRENT_REQUEST.get()


def _quietly(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a dropped task's end is no error of its own


_ASYNCIO = AsyncioBackend()
_local = threading.local()
_fallback_races = itertools.count()


def backend() -> Backend:
    """The backend of the simulation running in this thread (asyncio when none is)."""
    return getattr(_local, "backend", None) or _ASYNCIO


class using:
    """``with using(backend): ...`` makes ``backend`` current in this thread for the block."""

    __slots__ = ("_backend", "_previous")

    def __init__(self, chosen: Backend) -> None:
        self._backend = chosen
        self._previous: Backend | None = None

    def __enter__(self) -> Backend:
        self._previous = getattr(_local, "backend", None)
        _local.backend = self._backend
        return self._backend

    def __exit__(self, *exc: object) -> None:
        _local.backend = self._previous


def new_race_id() -> int:
    """A race id unique within the current request (or process-wide outside a sykit run)."""
    return backend().new_race()
