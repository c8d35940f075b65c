"""The engines a run happens on, behind one contract (:class:`Engine`, in :mod:`.base`).

* :mod:`.kernel`: sykit's trampoline kernel, for simulations whose algorithms await only sykit;
* :mod:`.aio` on :mod:`.loop`'s virtual-time asyncio loop: simulations whose algorithms await
  asyncio or anyio primitives;
* :mod:`.aio` on the caller's real loop: runs against real endpoints (``HttpHost``);
* :mod:`.columnwise`: the engine of runs whose requests do not depend on one another, evaluated
  column-wise with no events by the bulk evaluator (:mod:`.bulk`; the run says whether it can: its
  ``evaluate()`` raises :class:`NeedsEvents` when it cannot);
* :mod:`.fastpath`: fixed chains of models (``single``, ``fallback_chain``) with no coroutine.

Only this package knows which engine runs. A run gives :func:`simulate` or :func:`run_real` a
function that builds its request machinery (a :class:`Run`) on the engine it is handed;
:mod:`.choice` builds that machinery (the fast path or the general lifecycle, the bulk evaluator
offered); the fallback from the kernel to the asyncio loop, deadlocks and Ctrl-C are dealt with
here. This ``__init__`` imports the event engines and their contract only: the request lifecycle
(:mod:`sykit._run.lifecycle`) is written against the contract, and the bulk evaluator, the fast path
and the choice are built on the lifecycle, so they are imported from their own modules.

May import: :mod:`sykit._base`; the bulk evaluator, the fast path and the choice also the rest of
:mod:`sykit._run` below :mod:`sykit._run.plan`.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

import anyio

from sykit._base.collection import collection_paused
from sykit._base.errors import ArgumentError
from sykit._run.engines.aio import (
    CURRENT_REQUEST,
    AsyncioEngine,
    install_task_tracking,
    track_task,
)
from sykit._run.engines.base import Engine, current, new_race_id, using
from sykit._run.engines.columnwise import BulkEngine, NeedsEvents
from sykit._run.engines.kernel import Kernel, KernelEngine, NeedsAsyncio
from sykit._run.engines.loop import VirtualTimeLoop, arun, loop_is_running
from sykit._run.engines.loop import run as run_on_loop

__all__ = [
    "ENGINES",
    "Engine",
    "NeedsEvents",
    "Run",
    "arun",
    "block_on",
    "check_choice",
    "current",
    "loop_is_running",
    "new_race_id",
    "run_on_loop",
    "run_real",
    "simulate",
]

#: The values ``engine=`` takes.
ENGINES = ("auto", "bulk", "kernel", "asyncio")

R = TypeVar("R", bound="Run")
T = TypeVar("T")


class Run(Protocol):
    """What a run gives its engine: its main coroutine and what to do when it is stuck or
    interrupted."""

    interrupted: bool

    @property
    def strict(self) -> bool:
        """``strict=True``: a deadlock is raised, not turned into failed requests."""
        ...

    def feed(self) -> Coroutine[Any, Any, None]:
        """Start every request and return when the last one has finished."""
        ...

    def unstick(self, describe: Callable[[], str]) -> bool:
        """On a deadlock: fail what is stuck (True) or leave it to be raised (False)."""
        ...

    def interrupt(self) -> None:
        """Ctrl-C while the run goes on: stop the requests in flight, keep what finished."""
        ...

    def abandon(self) -> None:
        """Ctrl-C that stopped the engine itself: nothing more runs; what finished is kept."""
        ...

    def close(self) -> None:
        """The run is over."""
        ...


def check_choice(engine: object, virtual: bool) -> str:
    """The checked ``engine=`` of a run on a simulated (``virtual``) or real host."""
    if engine not in ENGINES:
        raise ArgumentError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    if engine in ("kernel", "bulk") and not virtual:
        raise ArgumentError(
            f"engine={engine!r} runs simulations only; a real host (HttpHost) runs on an asyncio "
            "loop in real time: leave engine at 'auto'"
        )
    return engine


def simulate(
    build: Callable[[Engine], R], choice: str, *, restart: Callable[[], None], what: str
) -> R:
    """Run a simulation on the engine ``choice`` names (see :data:`ENGINES`): ``"auto"`` evaluates
    the run in bulk when it can (the run has an ``evaluate()``, which raises :class:`NeedsEvents`
    when it cannot), else on the kernel and, when the run awaits an asyncio or anyio primitive,
    calls ``restart()`` and runs it again from the start on the virtual-time asyncio loop.
    ``"bulk"`` refuses the fallback from the bulk engine. Returns the finished run."""
    if choice in ("auto", "bulk"):
        bulk = BulkEngine()
        run = build(bulk)
        evaluate = getattr(run, "evaluate", None)
        try:
            if evaluate is None:
                raise NeedsEvents("it needs the event engines")
            with using(bulk), collection_paused():
                evaluate()
            return run
        except KeyboardInterrupt:
            run.abandon()  # the blocks recorded so far are whole: they are kept
            return run
        except NeedsEvents as need:
            run.close()
            if choice == "bulk":
                raise ArgumentError(
                    f"{what} cannot run on the bulk engine: {need}; use engine='auto' (the bulk "
                    "engine when it can, else the event engines)"
                ) from None
            restart()
    if choice != "asyncio":
        try:
            return _on_kernel(build)
        except NeedsAsyncio as need:
            if choice == "kernel":
                raise ArgumentError(
                    f"{what} awaited an asyncio/anyio primitive ({need}), which sykit's kernel "
                    "cannot run; use engine='asyncio' (or 'auto')"
                ) from None
            restart()
    return run_on_loop(lambda: _on_virtual_loop(build))


def _on_kernel(build: Callable[[Engine], R]) -> R:
    kernel = Kernel()
    engine = KernelEngine(kernel)
    run = build(engine)
    if not run.strict:
        kernel.deadlock_handler = lambda: run.unstick(kernel.describe_deadlock)
    try:
        with using(engine), collection_paused():  # the runner collects now and then
            kernel.run(run.feed())
    except KeyboardInterrupt:
        run.abandon()
        kernel.close()
    finally:
        kernel.deadlock_handler = None
        run.close()  # no reference cycle outlives the run
    return run


async def _on_virtual_loop(build: Callable[[Engine], R]) -> R:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    engine = AsyncioEngine(origin=loop.time())
    run = build(engine)
    loop.task_created = track_task
    wait_begins = getattr(run, "wait_begins", None)  # the limits of the request's tasks
    if wait_begins is not None:
        loop.wait_begins = lambda: wait_begins(CURRENT_REQUEST.get())
    if not run.strict:
        loop.deadlock_handler = lambda: run.unstick(loop.describe_deadlock)
    loop.interrupt_handler = run.interrupt  # Ctrl-C while the loop runs in a thread
    try:
        with using(engine):
            await run.feed()
    except asyncio.CancelledError:
        # Ctrl-C: asyncio's runner cancels this task. Stop the requests in flight and keep those
        # that finished, as the kernel does.
        run.interrupt()
    finally:
        loop.deadlock_handler = loop.interrupt_handler = loop.wait_begins = None
        run.close()
    return run


def block_on(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` on a new asyncio loop in real time, in a worker thread when this thread
    already runs a loop (a notebook cell), and return its result."""
    if not loop_is_running():
        return anyio.run(main)
    context = contextvars.copy_context()

    def in_thread() -> T:
        return anyio.run(main)

    with ThreadPoolExecutor(1, thread_name_prefix="sykit-real") as executor:
        return executor.submit(context.run, in_thread).result()


async def run_real(build: Callable[[Engine], R]) -> R:
    """Run on the caller's asyncio loop in real time (a run against real endpoints)."""
    engine = AsyncioEngine(origin=asyncio.get_running_loop().time())
    run = build(engine)
    restore = install_task_tracking(asyncio.get_running_loop())
    try:
        with using(engine):
            await run.feed()
    finally:
        restore()
        run.close()
    return run
