"""The single-run executor: a checked plan of runs (strategies × seeds over one list of
requests), and one run of it on whichever engine it is handed.

``sy.run``, ``sy.compare`` and the grid's cells all execute runs through :class:`Plan`; the
engines package (:mod:`sykit._run.engines`) chooses the engine and deals with deadlocks and Ctrl-C.
"""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError, SykitError
from sykit._base.interrupts import interrupts_held
from sykit._results.result import Lazy, Result
from sykit._run import engines as _engines
from sykit._run.engines import ENGINES, Engine
from sykit._run.engines.choice import request_machinery
from sykit._run.inputs import (
    arrival_times,
    as_requests,
    as_source,
    check_arrivals,
    check_concurrency,
    check_host,
)
from sykit._run.lifecycle import StrategyRun
from sykit._run.progress import label, make_progress
from sykit._run.spill import Spill
from sykit._run.state import RunState
from sykit._world.models import GroundTruth, Request
from sykit._world.sessions import SessionPlan, flatten_sessions

__all__ = [
    "ENGINES",
    "IncompleteRecords",
    "Plan",
    "RunInterrupted",
    "execute",
    "run_real",
    "warn_interrupted",
]

#: With the cyclic collector paused during a kernel run, a young-generation pass every this many
#: finished requests bounds what an algorithm's own cyclic garbage can pile up.
_GC_EVERY = 20_000


class IncompleteRecords(SykitError, RuntimeError):
    """A run ended with fewer request rows than requests sent (a bug in sykit, never silent)."""


class RunInterrupted(Exception):
    """Carries the partial result of a run stopped by Ctrl-C."""

    def __init__(self, result: Result) -> None:
        self.result = result


def _run_items(requests: object) -> Sequence[tuple[Any, Request, GroundTruth | None]]:
    """The run's requests by position: a dataset's built as the run reaches them (a
    ``_run_items()`` of its own), any other input checked and listed at once."""
    requests = as_source(requests)  # a DataFrame as its dataset
    lazy = getattr(requests, "_run_items", None)
    if callable(lazy) and not isinstance(requests, Sequence | str):
        items: Sequence[tuple[Any, Request, GroundTruth | None]] = lazy()
        if not len(items):
            raise ArgumentError("requests is empty")
        return items
    return as_requests(requests)


class Plan:
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
        self.items = _run_items(requests)
        ids = getattr(self.items, "ids", None)
        self.ids = ids if ids is not None else [item[0] for item in self.items]
        self.concurrency = check_concurrency(concurrency, arrivals is not None)
        # now, not inside the simulation; with sessions, the arrivals are the first turns'
        starts = len(self.sessions.first) if self.sessions is not None else len(self.items)
        self.arrivals = check_arrivals(arrivals, starts)
        self.strategies = strategies
        self.seeds = seeds
        if not isinstance(strict, bool):
            raise ArgumentTypeError("strict must be True or False")
        self.strict = strict
        self.engine = _engines.check_choice(engine, self.host.virtual)
        self.spill: Spill | None = None  # set by run/arun/compare from spill=

    @property
    def total_requests(self) -> int:
        return len(self.items) * len(self.strategies) * len(self.seeds)

    def _runner(
        self, engine: Engine, name: str, fn: Callable[..., Any], seed: int, progress: Any
    ) -> StrategyRun:
        """The run's request machinery on ``engine`` (the engines package chooses its way)."""
        run = RunState(host=self.host, seed=seed, strategy=name, strict=self.strict, engine=engine)
        owner = getattr(fn, "__self__", None)
        start_run = getattr(owner, "start_run", None)
        if callable(start_run):
            start_run()  # a stateful strategy starts every run afresh, so runs stay independent
        if self.spill is not None:
            self.spill.attach(run, self.ids)
        else:  # a spilling run writes each row's values into its chunks
            run.row_values = getattr(self.items, "row_values", None)
        starts = len(self.sessions.first) if self.sessions is not None else len(self.items)
        arrivals = arrival_times(self.arrivals, starts, run.seed)
        return request_machinery(
            run, fn, self.items, arrivals, self.concurrency, progress, sessions=self.sessions
        )

    def _result(self, runner: StrategyRun, started: float) -> Result:
        """The run's records as a Result; a run Ctrl-C stopped raises them in RunInterrupted."""
        if runner.fatal is not None:
            raise runner.fatal
        run = runner.run
        interrupted = runner.interrupted
        name = run.strategy
        sent = runner.started if self.sessions is not None else len(self.items)
        if not interrupted and (runner.finished != sent or runner.started != sent):
            # Never fewer rows than requests: a run that lost one raises instead of returning.
            raise IncompleteRecords(
                f"strategy {name!r}, seed {run.seed}: {runner.started} requests were sent of "
                f"{sent} and {runner.finished} recorded; every request must have one row. This "
                "is a bug in sykit: please report it with the algorithm and host"
            )
        keep = None
        ended_early = False
        if interrupted:  # only the requests that finished, with their attempts
            keep = np.zeros(len(self.items), dtype=bool)
            keep[np.frombuffer(run.requests.index, dtype=np.int32)] = True
        attempts: Lazy
        requests: pd.DataFrame | Lazy
        if self.spill is not None:
            with interrupts_held(deliver=False) as held:  # the last chunks and run.json whole
                attempts, requests = self.spill.finish(run, self.ids)
            ended_early = held.caught  # Ctrl-C as the run ended: it is whole, and stops here
        else:
            attempts = run.log.columns(name, self.ids, keep)  # the frame is built when used
            run.log.drop()
            requests = run.requests.frame_columns(name, self.ids, run.row_values)
        result = Result(
            strategy=name,
            seed=run.seed,
            attempts=attempts,
            requests=requests,
            wall_s=time.perf_counter() - started,
            engine=run.engine.name,
            interrupted=interrupted,
        )
        if interrupted or ended_early:
            raise RunInterrupted(result)
        return result

    # -- one run ---------------------------------------------------------------------------------
    def run_simulated(self, name: str, fn: Callable[..., Any], seed: int, progress: Any) -> Result:
        """One simulated run, on the engine ``engine=`` chose."""
        counted = _CountedProgress(progress)
        started = time.perf_counter()

        def build(engine: Engine) -> StrategyRun:
            nonlocal started
            started = time.perf_counter()
            return self._runner(engine, name, fn, seed, counted)

        try:
            runner = _engines.simulate(
                build, self.engine, restart=counted.undo, what=f"strategy {name!r}"
            )
            return self._result(runner, started)
        except (Exception, KeyboardInterrupt):  # Ctrl-C before the engine ran: nothing finished
            self._abandon_spill()
            raise

    async def run_real(self, name: str, fn: Callable[..., Any], seed: int, progress: Any) -> Result:
        """One run against a real host, on the running asyncio loop."""
        started = time.perf_counter()
        try:
            runner = await _engines.run_real(
                lambda engine: self._runner(engine, name, fn, seed, progress)
            )
            return self._result(runner, started)
        except Exception:
            self._abandon_spill()
            raise

    def _abandon_spill(self) -> None:
        """A run stopped on an error (raised to the caller): its spill folder is not a killed
        run's, and a later run may clear it."""
        if self.spill is not None:
            self.spill.abandon()

    async def run_all_real(self, progress: Any) -> list[Result]:
        results = []
        for seed in self.seeds:
            for name, fn in self.strategies:
                label(progress, name, seed, len(self.seeds))
                try:
                    results.append(await self.run_real(name, fn, seed, progress))
                except RunInterrupted as stop:
                    results.append(stop.result)
                    warn_interrupted(self, results, stacklevel=2, partial=stop.result.interrupted)
                    return results
        return results


class _CountedProgress:
    """Progress of one run. It remembers what the run added to the bar, so a run started again
    on another engine can take it back, and while the cyclic collector is paused (a kernel run)
    it runs a young-generation pass now and then, so an algorithm's own cyclic garbage stays
    bounded."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.count = 0

    def update(self, n: int = 1) -> None:
        self.count += n
        if self.bar is not None:
            self.bar.update(n)
        if self.count % _GC_EVERY == 0 and not gc.isenabled():
            gc.collect(1)

    def undo(self) -> None:
        if self.bar is not None and self.count:
            self.bar.update(-self.count)
        self.count = 0


def execute(plan: Plan, progress_flag: bool | None, description: str) -> list[Result]:
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
                        warn_interrupted(plan, results, partial=stop.result.interrupted)
                        return results
                    except KeyboardInterrupt:  # between runs: the finished ones are kept
                        if not results:
                            raise
                        warn_interrupted(plan, results, partial=False)
                        return results
            return results
        return run_real(plan, progress)
    finally:
        if progress is not None:
            progress.close()


def warn_interrupted(
    plan: Plan, results: list[Result], stacklevel: int = 4, *, partial: bool = True
) -> None:
    done = sum(len(r.requests) for r in results)
    last = "the last one partial: result.interrupted is True" if partial else "each one whole"
    warnings.warn(
        f"interrupted: returning the {done} of {plan.total_requests} requests that had finished "
        f"({len(results)} run(s), {last})",
        UserWarning,
        stacklevel=stacklevel,
    )


def run_real(plan: Plan, progress: Any) -> list[Result]:
    async def main() -> list[Result]:
        return await plan.run_all_real(progress)

    return _engines.block_on(main)
