"""Which way a run's requests go, decided here alone: the fixed-chain fast path when the algorithm
is a fixed chain of models the host has, and the bulk evaluator offered to every simulated run
(it takes the run when every request's course depends on the request alone, else the run goes
on an event engine).

Kept apart from this package's ``__init__`` (the event engines and their contract), which the
request lifecycle imports: the bulk evaluator and the fast path are built on that lifecycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sykit._run.engines import bulk
from sykit._run.engines.fastpath import FixedChainRun, fixed_chain
from sykit._run.lifecycle import StrategyRun
from sykit._run.state import RunState
from sykit._world.sessions import SessionPlan

__all__ = ["request_machinery"]


def request_machinery(
    run: RunState,
    fn: Callable[..., Any],
    items: Sequence[Any],
    arrivals: Any,
    concurrency: int | None,
    progress: Any,
    *,
    sessions: SessionPlan | None,
) -> StrategyRun:
    """The run's request machinery: the fixed-chain fast path when it applies, and on a
    simulated host the bulk evaluator, which the engine tries first when the run allows it."""
    virtual = run.host.virtual
    chain = fixed_chain(fn) if virtual and sessions is None else None
    runner: StrategyRun
    if chain is not None and all(m in run.host.profiles for m in chain):
        runner = FixedChainRun(run, fn, items, arrivals, concurrency, progress, chain=chain)
    else:
        runner = StrategyRun(run, fn, items, arrivals, concurrency, progress, sessions=sessions)
    if virtual:
        runner.evaluator = bulk.evaluate  # the bulk engine's way, when it takes the run
    return runner
