"""``run``, ``arun`` and ``compare``: feed requests to an algorithm on a host and collect the records.

A run of one strategy with one seed happens on a fresh virtual-time loop for a SimHost (in a worker
thread when the caller already runs an event loop) or on an ordinary loop in real time for an
HttpHost; :class:`~sykit._lifecycle.StrategyRun` does the work of each run.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio

from . import _engine
from ._config import Poisson
from ._driver import RunState
from ._errors import ArgumentError, ArgumentTypeError
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
)
from ._lifecycle import StrategyRun
from ._models import Request
from ._progress import make_progress
from ._records import attempts_frame, requests_frame
from ._results import Comparison, Result

__all__ = ["arun", "compare", "run"]


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
    ) -> None:
        self.host = check_host(host)
        self.items = as_requests(requests)
        self.concurrency = check_concurrency(concurrency, arrivals is not None)
        self.arrivals = check_arrivals(arrivals, len(self.items))  # now, not inside the simulation
        self.strategies = strategies
        self.seeds = seeds
        if not isinstance(strict, bool):
            raise ArgumentTypeError("strict must be True or False")
        self.strict = strict

    @property
    def total_requests(self) -> int:
        return len(self.items) * len(self.strategies) * len(self.seeds)

    async def run_all(self, progress: Any) -> list[Result]:
        results = []
        for seed in self.seeds:
            for name, fn in self.strategies:
                results.append(await self.run_one(name, fn, seed, progress))
        return results

    async def run_one(self, name: str, fn: Callable[..., Any], seed: int, progress: Any) -> Result:
        owner = getattr(fn, "__self__", None)
        start_run = getattr(owner, "start_run", None)
        if callable(start_run):
            start_run()  # a stateful strategy starts every run afresh, so runs stay independent
        loop = asyncio.get_running_loop()
        start_wall = time.perf_counter()
        origin = loop.time()
        # A simulated run has a fresh virtual loop whose clock starts at 0; a real run counts from now.
        clock = loop.time if origin == 0.0 else (lambda: loop.time() - origin)
        run = RunState(host=self.host, seed=seed, strategy=name, strict=self.strict, clock=clock)
        runner = StrategyRun(
            run,
            fn,
            self.items,
            arrival_times(self.arrivals, len(self.items), seed),
            self.concurrency,
            progress,
        )
        await runner.main()
        runner.rows.sort(key=lambda pair: pair[0])
        return Result(
            strategy=name,
            seed=seed,
            attempts=attempts_frame(name, run.rows),
            requests=requests_frame(name, [row for _, row in runner.rows]),
            wall_s=time.perf_counter() - start_wall,
        )


def _execute(plan: _Plan, progress_flag: bool | None, description: str) -> list[Result]:
    progress = make_progress(plan.total_requests, progress_flag, description)
    try:
        if plan.host.virtual:
            return _run_each_on_fresh_loop(plan, progress)
        return _run_real(plan, progress)
    finally:
        if progress is not None:
            progress.close()


def _run_each_on_fresh_loop(plan: _Plan, progress: Any) -> list[Result]:
    results = []
    for seed in plan.seeds:
        for name, fn in plan.strategies:
            results.append(
                _engine.run(lambda n=name, f=fn, s=seed: plan.run_one(n, f, s, progress))
            )
    return results


def _run_real(plan: _Plan, progress: Any) -> list[Result]:
    async def main() -> list[Result]:
        return await plan.run_all(progress)

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

    Works in scripts and in notebook cells: with a SimHost it runs on a fresh virtual-time loop,
    in a worker thread when the calling thread already runs an event loop.
    """
    name, fn = as_algorithm(algorithm, strategy)
    plan = _Plan([(name, fn)], requests, host, concurrency, arrivals, [check_seed(seed)], strict)
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
) -> Result:
    """``await``-able :func:`run` for async code (top-level await in a notebook): a SimHost run
    happens in a worker thread and the caller's event loop stays free."""
    name, fn = as_algorithm(algorithm, strategy)
    plan = _Plan([(name, fn)], requests, host, concurrency, arrivals, [check_seed(seed)], strict)
    bar = make_progress(plan.total_requests, progress, name)
    try:
        if plan.host.virtual:
            result = await _engine.arun(lambda: plan.run_one(name, fn, plan.seeds[0], bar))
        else:
            result = await plan.run_one(name, fn, plan.seeds[0], bar)
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
) -> Comparison:
    """Run several strategies on the same requests, with the same arrivals and the same random
    draws for the same attempts (common random numbers), once per seed."""
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
    if isinstance(seeds, int) or not isinstance(seeds, Sequence) or not seeds:
        raise ArgumentTypeError("seeds must be a non-empty list of ints")
    checked = [check_seed(s) for s in seeds]
    repeated = sorted({s for s in checked if checked.count(s) > 1})
    if repeated:
        raise ArgumentError(
            f"seeds must be distinct; repeated: {repeated} (a repeated seed repeats the same "
            "draws, so every request would be counted twice)"
        )
    plan = _Plan(named, requests, host, concurrency, arrivals, checked, strict)
    results = _execute(plan, progress, "compare")
    _check_algorithms(results, strict)
    return Comparison(results)


def _check_algorithms(results: list[Result], strict: bool) -> None:
    """Warn (strict: raise) when most requests of a strategy failed on the algorithm's side, so a
    misspelt model or a forgotten ``await`` is not read as a router's results. The warning points
    at the caller of run / arun / compare."""
    check_algorithms(((r.strategy, r.requests) for r in results), strict=strict, stacklevel=3)
