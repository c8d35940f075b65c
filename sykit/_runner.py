"""``run``, ``arun`` and ``compare``: feed requests to an algorithm on a host and collect the records.

A run of one strategy with one seed on a SimHost happens on sykit's kernel (:mod:`sykit._kernel`),
in the calling thread; an algorithm that awaits an asyncio or anyio primitive cannot run there, so
the first such await stops that run and it is run again from the start on an asyncio loop in
virtual time (``engine="auto"``, the default; every draw is keyed, so the records are the same).
``engine="asyncio"`` goes there directly, which avoids running an algorithm's side effects twice;
``engine="kernel"`` refuses the fallback. An HttpHost run happens on an ordinary asyncio loop in
real time. :class:`~sykit._lifecycle.StrategyRun` does the work of each run on either engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
import numpy as np

from . import _engine
from ._config import Poisson
from ._driver import RunState
from ._errors import ArgumentError, ArgumentTypeError
from ._fastpath import FixedChainRun, fixed_chain
from ._health import check_algorithms
from ._hosts.base import Host
from ._inputs import (
    Algorithm,
    arrival_times,
    as_algorithm,
    as_requests,
    check_arrivals,
    check_concurrency,
    check_host,
    check_seed,
    check_seeds,
)
from ._kernel import Kernel, NeedsAsyncio
from ._lifecycle import StrategyRun, install_task_tracking, track_task
from ._models import Request
from ._progress import label, make_progress
from ._results import Comparison, Result, request_errors
from ._sched import AsyncioBackend, KernelBackend, using
from ._session import SessionPlan, flatten_sessions
from ._spill import Spill, check_spill

__all__ = ["ENGINES", "acompare", "arun", "compare", "run"]

_T = TypeVar("_T")

#: The values ``engine=`` takes.
ENGINES = ("auto", "kernel", "asyncio")
#: With the cyclic collector paused during a kernel run, a young-generation pass every this many
#: finished requests bounds what an algorithm's own cyclic garbage can pile up.
_GC_EVERY = 20_000


class RunInterrupted(Exception):
    """Carries the partial result of a run stopped by Ctrl-C."""

    def __init__(self, result: Result) -> None:
        self.result = result


class _Plan:
    """A checked set of runs (strategies × seeds) over one list of requests."""

    def __init__(
        self,
        strategies: list[tuple[str, Callable[..., Any]]],
        requests: object,
        host: object,
        concurrency: object,
        arrivals: object,
        seeds: list[int],
        strict: bool,
        engine: object = "auto",
    ) -> None:
        self.host = check_host(host)
        flat = flatten_sessions(requests) if isinstance(requests, Sequence) else None
        self.sessions: SessionPlan | None = None
        if flat is not None:
            requests, self.sessions = flat
        self.items = as_requests(requests)
        self.ids = [item[0] for item in self.items]
        self.concurrency = check_concurrency(concurrency, arrivals is not None)
        # now, not inside the simulation; with sessions, the arrivals are the first turns'
        starts = len(self.sessions.first) if self.sessions is not None else len(self.items)
        self.arrivals = check_arrivals(arrivals, starts)
        self.strategies = strategies
        self.seeds = seeds
        if not isinstance(strict, bool):
            raise ArgumentTypeError("strict must be True or False")
        self.strict = strict
        if engine not in ENGINES:
            raise ArgumentError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
        if engine == "kernel" and not self.host.virtual:
            raise ArgumentError(
                "engine='kernel' runs simulations only; a real host (HttpHost) runs on an asyncio "
                "loop in real time: leave engine at 'auto'"
            )
        self.engine = engine
        self.spill: Spill | None = None  # set by run/arun/compare from spill=

    @property
    def total_requests(self) -> int:
        return len(self.items) * len(self.strategies) * len(self.seeds)

    def _runner(
        self, run: RunState, fn: Callable[..., Any], progress: Any, kernel: Kernel | None = None
    ) -> StrategyRun:
        """The run's request machinery: on the kernel, the fixed-chain fast path when it applies."""
        owner = getattr(fn, "__self__", None)
        start_run = getattr(owner, "start_run", None)
        if callable(start_run):
            start_run()  # a stateful strategy starts every run afresh, so runs stay independent
        if self.spill is not None:
            self.spill.attach(run, self.ids)
        starts = len(self.sessions.first) if self.sessions is not None else len(self.items)
        arrivals = arrival_times(self.arrivals, starts, run.seed)
        chain = fixed_chain(fn) if kernel is not None and self.sessions is None else None
        if chain is not None and all(m in self.host.profiles for m in chain):
            return FixedChainRun(
                run,
                fn,
                self.items,
                arrivals,
                self.concurrency,
                progress,
                chain=chain,
                kernel=kernel,
            )
        return StrategyRun(
            run, fn, self.items, arrivals, self.concurrency, progress, sessions=self.sessions
        )

    def _result(
        self, run: RunState, runner: StrategyRun, started: float, interrupted: bool = False
    ) -> Result:
        name = run.strategy
        keep = None
        if interrupted:  # only the requests that finished, with their attempts
            keep = np.zeros(len(self.items), dtype=bool)
            keep[np.frombuffer(run.requests.index, dtype=np.int32)] = True
        if self.spill is not None:
            attempts, requests = self.spill.finish(run, self.ids)
        else:
            attempts = run.log.frame(name, self.ids, keep)
            requests = run.requests.frame(name, self.ids)
        return Result(
            strategy=name,
            seed=run.seed,
            attempts=attempts,  # type: ignore[arg-type]
            requests=requests,  # type: ignore[arg-type]
            wall_s=time.perf_counter() - started,
            engine=run.backend.name,
            interrupted=interrupted,
        )

    def _run_state(
        self, name: str, seed: int, backend: Any, clock: Callable[[], float]
    ) -> RunState:
        return RunState(
            host=self.host,
            seed=seed,
            strategy=name,
            strict=self.strict,
            backend=backend,
            clock=clock,
        )

    # -- a simulated run -------------------------------------------------------------------------
    def run_simulated(self, name: str, fn: Callable[..., Any], seed: int, progress: Any) -> Result:
        """One simulated run: on the kernel, or on the asyncio engine when it has to be."""
        if self.engine != "asyncio":
            counted = _KernelProgress(progress)
            try:
                return self.run_on_kernel(name, fn, seed, counted)
            except NeedsAsyncio as need:
                if self.engine == "kernel":
                    raise ArgumentError(
                        f"strategy {name!r} awaited an asyncio/anyio primitive ({need}), which "
                        "sykit's kernel cannot run; use engine='asyncio' (or 'auto')"
                    ) from None
                counted.undo()
        return _engine.run(lambda: self.run_on_asyncio(name, fn, seed, progress))

    def run_on_kernel(self, name: str, fn: Callable[..., Any], seed: int, progress: Any) -> Result:
        kernel = Kernel()
        backend = KernelBackend(kernel)
        run = self._run_state(name, seed, backend, lambda: kernel.now)
        if not isinstance(progress, _KernelProgress):
            progress = _KernelProgress(progress)
        runner = self._runner(run, fn, progress, kernel)
        if not self.strict:
            kernel.deadlock_handler = lambda: runner.unstick(kernel.describe_deadlock)
        started = time.perf_counter()
        collecting = gc.isenabled()
        gc.disable()  # a run makes no reference cycles of its own; see _KernelProgress for the rest
        interrupted = False
        try:
            with using(backend):
                kernel.run(runner.feed())
        except KeyboardInterrupt:
            interrupted = True
            runner.stopping = True  # the requests dropped now start no others
            kernel.close()
        finally:
            kernel.deadlock_handler = None
            runner.close()  # no reference cycle outlives the run
            if collecting:
                gc.enable()
        if runner.fatal is not None:
            raise runner.fatal
        result = self._result(run, runner, started, interrupted)
        if interrupted:
            raise RunInterrupted(result)
        return result

    async def run_on_asyncio(
        self, name: str, fn: Callable[..., Any], seed: int, progress: Any
    ) -> Result:
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        backend = AsyncioBackend(origin=loop.time())
        run = self._run_state(name, seed, backend, backend.now)
        runner = self._runner(run, fn, progress)
        restore = None
        if isinstance(loop, _engine.VirtualTimeLoop):
            loop.task_created = track_task
            if not self.strict:
                loop.deadlock_handler = lambda: runner.unstick(loop.describe_deadlock)
            loop.interrupt_handler = runner.interrupt  # Ctrl-C while the loop runs in a thread
        else:
            restore = install_task_tracking(loop)
        try:
            with using(backend):
                await runner.feed()
        except asyncio.CancelledError:
            if not isinstance(loop, _engine.VirtualTimeLoop):
                raise
            # Ctrl-C: asyncio's runner cancels this task. Stop the requests in flight and return
            # those that finished, as the kernel does.
            runner.interrupted = True
            runner.stop(None)
        finally:
            if restore is not None:
                restore()
            if isinstance(loop, _engine.VirtualTimeLoop):
                loop.deadlock_handler = loop.interrupt_handler = None
            runner.close()
        if runner.fatal is not None:
            raise runner.fatal
        result = self._result(run, runner, started, runner.interrupted)
        if runner.interrupted:
            raise RunInterrupted(result)
        return result

    async def run_all_real(self, progress: Any) -> list[Result]:
        results = []
        for seed in self.seeds:
            for name, fn in self.strategies:
                label(progress, name, seed, len(self.seeds))
                try:
                    results.append(await self.run_on_asyncio(name, fn, seed, progress))
                except RunInterrupted as stop:
                    results.append(stop.result)
                    _warn_interrupted(self, results, stacklevel=2)
                    return results
        return results


class _KernelProgress:
    """Progress of one kernel run. It remembers what the run added to the bar, so a run started
    again on the asyncio engine can take it back, and with the cyclic collector paused it runs a
    young-generation pass now and then, so an algorithm's own cyclic garbage stays bounded."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.count = 0

    def update(self, n: int = 1) -> None:
        self.count += n
        if self.bar is not None:
            self.bar.update(n)
        if self.count % _GC_EVERY == 0:
            gc.collect(1)

    def undo(self) -> None:
        if self.bar is not None and self.count:
            self.bar.update(-self.count)
        self.count = 0


def _execute(plan: _Plan, progress_flag: bool | None, description: str) -> list[Result]:
    progress = make_progress(plan.total_requests, progress_flag, description)
    try:
        if plan.host.virtual:
            results = []
            for seed in plan.seeds:
                for name, fn in plan.strategies:
                    label(progress, name, seed, len(plan.seeds))
                    try:
                        results.append(plan.run_simulated(name, fn, seed, progress))
                    except RunInterrupted as stop:
                        results.append(stop.result)
                        _warn_interrupted(plan, results)
                        return results
            return results
        return _run_real(plan, progress)
    finally:
        if progress is not None:
            progress.close()


def _warn_interrupted(plan: _Plan, results: list[Result], stacklevel: int = 4) -> None:
    done = sum(len(r.requests) for r in results)
    warnings.warn(
        f"interrupted: returning the {done} of {plan.total_requests} requests that had finished "
        f"({len(results)} run(s), the last one partial: result.interrupted is True)",
        UserWarning,
        stacklevel=stacklevel,
    )


def _run_real(plan: _Plan, progress: Any) -> list[Result]:
    async def main() -> list[Result]:
        return await plan.run_all_real(progress)

    if _engine.loop_is_running():
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sykit-real") as executor:
            context = contextvars.copy_context()
            return executor.submit(context.run, anyio.run, main).result()
    return anyio.run(main)


def run(
    algorithm: Algorithm,
    requests: Iterable[Request | str],
    *,
    host: Host,
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | None = None,
    seed: int = 0,
    strategy: str | None = None,
    progress: bool | None = None,
    strict: bool = False,
    engine: str = "auto",
    spill: str | os.PathLike[str] | None = None,
) -> Result:
    """Run ``algorithm`` over ``requests`` on ``host`` and return the records.

    Closed loop by default: ``concurrency`` requests in flight (32 when not given). With
    ``arrivals=sy.Poisson(rate_per_s)`` (or a list of arrival times) requests arrive on their own,
    limited by ``concurrency`` only if it is given. ``seed`` keys every random draw. A progress bar
    appears for runs longer than a second (``progress=False`` silences it, ``True`` forces it; the
    ``SYKIT_PROGRESS=0`` environment variable turns the automatic one off). An algorithm's
    exception fails only its request unless ``strict=True``, which re-raises it. When more than
    half the requests fail the same way on the algorithm's side (a misspelt model, a forgotten
    ``await``), the run warns with an ``AlgorithmWarning`` quoting the first error
    (``strict=True``: raises ``AlgorithmError``). An ``algorithm`` that is a plain ``def`` is
    refused before the run.

    Works in scripts and in notebook cells. On a SimHost it runs on sykit's kernel in the calling
    thread; ``engine`` chooses: ``"auto"`` (the kernel; an algorithm that awaits an asyncio or anyio
    primitive is run again from the start on an asyncio loop in virtual time, same records, but its
    own side effects happen twice), ``"kernel"`` (no fallback: such an algorithm is an error),
    ``"asyncio"`` (always the asyncio loop: slower, side effects once). ``result.engine`` says
    which ran. Ctrl-C stops the run and returns the requests that had finished
    (``result.interrupted``).

    ``spill=folder`` is for runs whose records do not fit in memory: they are written to Parquet
    files in ``folder`` while the run goes, and ``result.attempts`` / ``result.requests`` read
    them back when first used (the same frames as without ``spill``). The folder must be new,
    empty, or one an earlier spilling run wrote (it is then cleared); docs/guide.md has more.
    """
    name, fn = as_algorithm(algorithm, strategy)
    plan = _Plan(
        [(name, fn)], requests, host, concurrency, arrivals, [check_seed(seed)], strict, engine
    )
    plan.spill = check_spill(spill, nested=False)
    result = _execute(plan, progress, name)[0]
    _check_algorithms([result], strict)
    return result


async def arun(
    algorithm: Algorithm,
    requests: Iterable[Request | str],
    *,
    host: Host,
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | None = None,
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
    plan = _Plan(
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
                result = await plan.run_on_asyncio(name, fn, plan.seeds[0], bar)
        except RunInterrupted as stop:
            result = stop.result
            _warn_interrupted(plan, [result], stacklevel=3)
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
    arrivals: Poisson | Sequence[float] | None = None,
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
    results = _execute(plan, progress, "compare")
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
) -> _Plan:
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
    return _Plan(named, requests, host, concurrency, arrivals, check_seeds(seeds), strict, engine)


async def acompare(
    strategies: Mapping[str, Algorithm] | Sequence[Algorithm],
    requests: Iterable[Request | str],
    *,
    host: Host,
    seeds: Sequence[int] = (0,),
    concurrency: int | None = None,
    arrivals: Poisson | Sequence[float] | None = None,
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
        results = await _in_daemon_thread(lambda: _execute(plan, progress, "compare"))
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
        try:
            outcome, failed = context.run(work), False
        except BaseException as error:
            outcome, failed = error, True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(deliver, outcome, failed)

    threading.Thread(target=target, name="sykit-sim", daemon=True).start()
    return await future
