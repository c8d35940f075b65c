"""``run``, ``arun``, ``compare`` and ``acompare``: feed requests to an algorithm on a host and
collect the records.

A run of one strategy with one seed on a SimHost happens on sykit's kernel in the calling thread;
an algorithm that awaits an asyncio or anyio primitive cannot run there, so the first such await
stops that run and it is run again from the start on an asyncio loop in virtual time
(``engine="auto"``, the default; every draw is keyed, so the records are the same).
``engine="asyncio"`` goes there directly, which avoids running an algorithm's side effects twice;
``engine="kernel"`` refuses the fallback. An HttpHost run happens on an ordinary asyncio loop in
real time. :class:`~sykit._plan.Plan` executes each run (:mod:`sykit._engines` picks the engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._config import Poisson
from ._errors import ArgumentError, ArgumentTypeError
from ._health import check_algorithms
from ._hosts.base import Host
from ._inputs import as_algorithm, as_source, check_seed, check_seeds
from ._models import Request
from ._plan import Plan, RunInterrupted, execute, warn_interrupted
from ._progress import make_progress
from ._results import Comparison, Result, request_errors
from ._spill import check_spill
from ._types import AlgorithmLike as Algorithm

if TYPE_CHECKING:
    from .datasets import Trace

__all__ = ["acompare", "arun", "compare", "run"]

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
    ``arrivals=sy.Poisson(rate_per_s)`` (or a list of arrival times, or a recorded ``sy.Trace``)
    requests arrive on their own, limited by ``concurrency`` only if it is given. ``seed`` keys every random draw. A progress bar
    appears for runs longer than a second (``progress=False`` silences it, ``True`` forces it; the
    ``SYKIT_PROGRESS=0`` environment variable turns the automatic one off). An algorithm's
    exception fails only its request unless ``strict=True``, which re-raises it. When more than
    half the requests fail the same way on the algorithm's side (a misspelt model, a forgotten
    ``await``), the run warns with an ``AlgorithmWarning`` quoting the first error
    (``strict=True``: raises ``AlgorithmError``). An ``algorithm`` that is a plain ``def`` is
    refused before the run.

    Works in scripts and in notebook cells. On a SimHost it runs in the calling thread;
    ``engine`` chooses: ``"auto"`` (the bulk engine when every request's course depends on the
    request alone: a fixed chain or a static router (``sy.static``) on a host with no state shared
    between requests; else sykit's kernel; an algorithm that awaits an asyncio or anyio primitive
    is run again from the start on an asyncio loop in virtual time; the records are the same on
    each, but an algorithm's own side effects happen again when a run moves on),
    ``"bulk"`` (the bulk engine or an error saying why not), ``"kernel"`` (no fallback to asyncio),
    ``"asyncio"`` (always the asyncio loop: slower, side effects once). ``result.engine`` says
    which ran; docs/engines.md has the rules. Ctrl-C stops the run and returns the requests that had finished
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
    _check_algorithms([result], strict)
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
                result = await _in_daemon_thread(
                    lambda: plan.run_simulated(name, fn, plan.seeds[0], bar)
                )
            else:
                result = await plan.run_real(name, fn, plan.seeds[0], bar)
        except RunInterrupted as stop:
            result = stop.result
            warn_interrupted(plan, [result], stacklevel=3)
    finally:
        if bar is not None:
            bar.close()
    _check_algorithms([result], strict)
    return result


def compare(
    strategies: Mapping[str, Algorithm] | Sequence[Algorithm],
    requests: Iterable[Request | str],
    *,
    host: Host,
    seeds: Sequence[int] = (0,),
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | Trace | None = None,
    progress: bool | None = None,
    strict: bool = False,
    engine: str = "auto",
    spill: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    executor: Any = None,
) -> Comparison:
    """Run several strategies on the same requests, with the same arrivals and the same random
    draws for the same attempts (common random numbers), once per seed. ``engine`` and ``spill``
    as in :func:`run`; with ``spill`` each strategy × seed writes to its own subfolder.

    ``workers=N`` runs the strategy × seed runs in N local worker processes, ``executor=`` on a
    ``concurrent.futures`` executor or a ``dask.distributed.Client``, as :func:`sy.grid` does
    (same results; not with ``spill``)."""
    parallel = workers is not None or executor is not None
    requests = as_source(requests)  # a DataFrame as its dataset, before anything lists it
    if (
        parallel
        and not isinstance(requests, Sequence)
        and not hasattr(requests, "analysis_columns")
    ):
        requests = list(requests)  # read once here: the workers get the same requests
    plan = _compare_plan(strategies, requests, host, seeds, concurrency, arrivals, strict, engine)
    if parallel:
        if spill is not None:
            raise ArgumentError(
                "spill= keeps one process's runs on disk; with workers= or executor= use "
                "sy.grid(..., out=folder), which writes every run's records as Parquet"
            )
        from ._grid.plan import compare_runs

        results = compare_runs(plan, requests, workers, executor, progress)
        _check_algorithms(results, strict)
        return Comparison(results)
    plan.spill = check_spill(spill, nested=True)
    results = execute(plan, progress, "compare")
    _check_algorithms(results, strict)
    return Comparison(results)


def _compare_plan(
    strategies: object,
    requests: object,
    host: object,
    seeds: object,
    concurrency: object,
    arrivals: object,
    strict: bool,
    engine: object,
) -> Plan:
    """The checked plan of a comparison: named strategies, distinct seeds."""
    if isinstance(strategies, Mapping):
        named = [as_algorithm(algo, str(key)) for key, algo in strategies.items()]
    elif isinstance(strategies, Sequence) and not isinstance(strategies, str):
        named = [as_algorithm(algo, None) for algo in strategies]
    else:
        raise ArgumentTypeError(
            "strategies must be a dict of name → algorithm or a list of algorithms"
        )
    if not named:
        raise ArgumentError("strategies is empty")
    names = [n for n, _ in named]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ArgumentError(
            f"strategy names must be unique; repeated: {duplicates} (pass a dict to name them)"
        )
    return Plan(named, requests, host, concurrency, arrivals, check_seeds(seeds), strict, engine)


async def acompare(
    strategies: Mapping[str, Algorithm] | Sequence[Algorithm],
    requests: Iterable[Request | str],
    *,
    host: Host,
    seeds: Sequence[int] = (0,),
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | Trace | None = None,
    progress: bool | None = None,
    strict: bool = False,
    engine: str = "auto",
    spill: str | os.PathLike[str] | None = None,
) -> Comparison:
    """``await``-able :func:`compare` for async code, as :func:`arun` is for :func:`run`: on a
    SimHost the runs happen in a worker thread (a daemon) and the caller's event loop stays free;
    a real host runs on the caller's loop."""
    plan = _compare_plan(strategies, requests, host, seeds, concurrency, arrivals, strict, engine)
    plan.spill = check_spill(spill, nested=True)
    if plan.host.virtual:
        results = await _in_daemon_thread(lambda: execute(plan, progress, "compare"))
    else:
        bar = make_progress(plan.total_requests, progress, "compare")
        try:
            results = await plan.run_all_real(bar)
        finally:
            if bar is not None:
                bar.close()
    _check_algorithms(results, strict)
    return Comparison(results)


def _check_algorithms(results: list[Result], strict: bool) -> None:
    """Warn (strict: raise) when most requests of a strategy failed on the algorithm's side, so a
    misspelt model or a forgotten ``await`` is not read as a router's results. The warning points
    at the caller of run / arun / compare."""
    check_algorithms(
        ((r.strategy, request_errors(r)) for r in results), strict=strict, stacklevel=3
    )


async def _in_daemon_thread(work: Callable[[], _T]) -> _T:
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
