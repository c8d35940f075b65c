"""``run`` and ``arun``: feed requests to an algorithm on a host and collect the records (the
first step of the way down this package; ``compare`` and ``acompare``, many runs at once, live in
:mod:`sykit._grid.compare`).

A run of one strategy with one seed on a SimHost happens on sykit's kernel in the calling thread;
an algorithm that awaits an asyncio or anyio primitive cannot run there, so the first such await
stops that run and it is run again from the start on an asyncio loop in virtual time
(``engine="auto"``, the default; every draw is keyed, so the records are the same).
``engine="asyncio"`` goes there directly, which avoids running an algorithm's side effects twice;
``engine="kernel"`` refuses the fallback. An HttpHost run happens on an ordinary asyncio loop in
real time. :class:`~sykit._run.plan.Plan` executes each run (:mod:`sykit._run.engines` picks the engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sykit._base.types import AlgorithmLike as Algorithm
from sykit._hosts.base import Host
from sykit._results.health import check_algorithms
from sykit._results.result import Result, request_errors
from sykit._run.inputs import as_algorithm, check_seed
from sykit._run.plan import Plan, RunInterrupted, execute, warn_interrupted
from sykit._run.progress import make_progress
from sykit._run.spill import check_spill
from sykit._world.config import Poisson
from sykit._world.models import Request

if TYPE_CHECKING:
    from sykit.datasets import Trace

__all__ = ["arun", "check_algorithms_of", "in_daemon_thread", "run"]

_T = TypeVar("_T")


def run(
    algorithm: Algorithm,
    requests: Iterable[Request | str],
    *,
    host: Host,
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | Trace | None = None,
    seed: int = 0,
    strategy: str | None = None,
    progress: bool | None = None,
    strict: bool = False,
    engine: str = "auto",
    spill: str | os.PathLike[str] | None = None,
) -> Result:
    """Run ``algorithm`` over ``requests`` on ``host`` and return the records.

    Closed loop by default: ``concurrency`` requests in flight (32 when not given). With
    ``arrivals=sy.traffic.Poisson(rate_per_s)`` (or a list of arrival times, or a recorded
    ``sy.traffic.Trace``) requests arrive on their own, limited by ``concurrency`` only if it is
    given. ``seed`` keys every random draw. A progress bar appears for runs longer than a second
    (``progress=False`` silences it, ``True`` forces it; the ``SYKIT_PROGRESS=0`` environment
    variable turns the automatic one off). An algorithm's exception fails only its request unless
    ``strict=True``, which re-raises it. When more than half the requests fail the same way on the
    algorithm's side (a misspelt model, a forgotten ``await``), the run warns with an
    ``AlgorithmWarning`` quoting the first error (``strict=True``: raises ``AlgorithmError``). An
    ``algorithm`` that is a plain ``def`` is refused before the run.

    Works in scripts and in notebook cells. On a SimHost it runs in the calling thread; ``engine``
    chooses: ``"auto"`` (the bulk engine when every request's course depends on the request alone: a
    fixed chain or a static router (``sy.strategies.static``) on a host with no state shared between
    requests; else sykit's kernel; an algorithm that awaits an asyncio or anyio primitive is run
    again from the start on an asyncio loop in virtual time; the records are the same on each, but
    an algorithm's own side effects happen again when a run moves on), ``"bulk"`` (the bulk engine
    or an error saying why not), ``"kernel"`` (no fallback to asyncio), ``"asyncio"`` (always the
    asyncio loop: slower, side effects once). ``result.engine`` says which ran; docs/engines.md has
    the rules. Ctrl-C stops the run and returns the requests that had finished
    (``result.interrupted``).

    ``spill=folder`` is for runs whose records do not fit in memory: they are written to Parquet
    files in ``folder`` while the run goes, and ``result.attempts`` / ``result.requests`` read
    them back when first used (the same frames as without ``spill``). The folder must be new,
    empty, or one an earlier spilling run wrote (it is then cleared); docs/guide.md has more.
    """
    name, fn = as_algorithm(algorithm, strategy)
    plan = Plan(
        [(name, fn)], requests, host, concurrency, arrivals, [check_seed(seed)], strict, engine
    )
    plan.spill = check_spill(spill, nested=False)
    result = execute(plan, progress, name)[0]
    check_algorithms_of([result], strict)
    return result


async def arun(
    algorithm: Algorithm,
    requests: Iterable[Request | str],
    *,
    host: Host,
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | Trace | None = None,
    seed: int = 0,
    strategy: str | None = None,
    progress: bool | None = None,
    strict: bool = False,
    engine: str = "auto",
    spill: str | os.PathLike[str] | None = None,
) -> Result:
    """``await``-able :func:`run` for async code (top-level await in a notebook): a SimHost run
    happens in a worker thread (a daemon, so it never keeps the interpreter alive) and the
    caller's event loop stays free. ``spill`` as in :func:`run`."""
    name, fn = as_algorithm(algorithm, strategy)
    plan = Plan(
        [(name, fn)], requests, host, concurrency, arrivals, [check_seed(seed)], strict, engine
    )
    plan.spill = check_spill(spill, nested=False)
    bar = make_progress(plan.total_requests, progress, name)
    try:
        try:
            if plan.host.virtual:
                result = await in_daemon_thread(
                    lambda: plan.run_simulated(name, fn, plan.seeds[0], bar)
                )
            else:
                result = await plan.run_real(name, fn, plan.seeds[0], bar)
        except RunInterrupted as stop:
            result = stop.result
            warn_interrupted(plan, [result], stacklevel=3, partial=result.interrupted)
    finally:
        if bar is not None:
            bar.close()
    check_algorithms_of([result], strict)
    return result


def check_algorithms_of(results: list[Result], strict: bool) -> None:
    """Warn (strict: raise) when most requests of a strategy failed on the algorithm's side, so a
    misspelt model or a forgotten ``await`` is not read as a router's results. The warning points
    at the caller of run / arun / compare."""
    check_algorithms(
        ((r.strategy, request_errors(r)) for r in results), strict=strict, stacklevel=3
    )


async def in_daemon_thread(work: Callable[[], _T]) -> _T:
    """Run ``work`` in a daemon thread and await its result without blocking the event loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(outcome: Any, failed: bool) -> None:
        if future.done():
            return
        if failed:
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def target() -> None:
        outcome: Any
        try:
            outcome, failed = context.run(work), False
        except BaseException as error:
            outcome, failed = error, True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(deliver, outcome, failed)

    threading.Thread(target=target, name="sykit-sim", daemon=True).start()
    return await future
