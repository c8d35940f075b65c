"""``compare`` and ``acompare``: several strategies on the same requests, once per seed, with common
random numbers; in this process, or on worker processes and executors as grids are."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.types import AlgorithmLike as Algorithm
from sykit._grid.plan import compare_runs
from sykit._hosts.base import Host
from sykit._results.result import Comparison
from sykit._run.api import check_algorithms_of, in_daemon_thread
from sykit._run.inputs import as_algorithm, as_source, check_seeds
from sykit._run.plan import Plan, execute
from sykit._run.progress import make_progress
from sykit._run.spill import check_spill
from sykit._world.config import Poisson
from sykit._world.models import Request

if TYPE_CHECKING:
    from sykit.datasets import Trace

__all__ = ["acompare", "compare"]


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
        results = compare_runs(plan, requests, workers, executor, progress)
        check_algorithms_of(results, strict)
        return Comparison(results)
    plan.spill = check_spill(spill, nested=True)
    results = execute(plan, progress, "compare")
    check_algorithms_of(results, strict)
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
        results = await in_daemon_thread(lambda: execute(plan, progress, "compare"))
    else:
        bar = make_progress(plan.total_requests, progress, "compare")
        try:
            results = await plan.run_all_real(bar)
        finally:
            if bar is not None:
                bar.close()
    check_algorithms_of(results, strict)
    return Comparison(results)
