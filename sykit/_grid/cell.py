"""Running one cell of a grid, wherever it runs: in the caller's process or in a worker.

A worker receives the grid's :class:`GridSpec` once, pickled with cloudpickle (so algorithms and
factories defined in a notebook cell travel too), and then cells as plain data. It runs each cell
as ``sy.run`` would, and sends back a :class:`CellOutcome`: the frames (or, with an output folder,
only where it wrote them), the attempt counts a summary needs, the warnings the run raised, or the
error that failed it.
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sykit._grid.axes import Axis, Binding, Cell, StrategyEntry
from sykit._results.health import broken_message
from sykit._results.metrics import attempt_counts
from sykit._run.plan import Plan, RunInterrupted, run_real

__all__ = ["CellOutcome", "GridSpec", "init_worker", "run_cell", "work"]


@dataclass
class GridSpec:
    """What every cell of a grid shares; shipped once to each worker."""

    requests: Any
    strategies: Mapping[str, StrategyEntry]
    axes: Mapping[str, Axis]
    host: Binding
    concurrency: Binding
    arrivals: Binding
    strict: bool
    engine: str
    out: str | None = None


@dataclass
class CellOutcome:
    """What running a cell produced. ``status`` is ``"done"`` or ``"failed"``."""

    index: int
    key: str
    status: str
    wall_s: float
    engine: str | None = None
    error: str | None = None
    traceback: str | None = None
    notes: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    rows: tuple[int, int] = (0, 0)  # requests, attempts
    requests: pd.DataFrame | None = None  # None when written to the output folder
    attempts: pd.DataFrame | None = None
    record: dict[str, Any] | None = None  # what the output folder holds of the cell


def run_cell(spec: GridSpec, cell: Cell, capture: bool) -> CellOutcome:
    """Run ``cell``; an error fails this cell only. ``capture``: record the warnings the run
    raises in the outcome (in a worker, where nobody would see them) instead of letting them
    show. Ctrl-C (``RunInterrupted`` from the run) is raised as KeyboardInterrupt."""
    started = time.perf_counter()
    caught: list[warnings.WarningMessage] = []
    try:
        if capture:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                return _run_and_keep(spec, cell, started, caught)
        return _run_and_keep(spec, cell, started, caught)
    except RunInterrupted:
        raise KeyboardInterrupt from None
    except Exception as error:
        return CellOutcome(
            cell.index,
            cell.key,
            "failed",
            time.perf_counter() - started,
            error=f"{type(error).__name__}: {error}",
            traceback="".join(traceback.format_exception(error)),
            notes=_notes(caught),
        )


def _run_and_keep(
    spec: GridSpec, cell: Cell, started: float, caught: list[warnings.WarningMessage]
) -> CellOutcome:
    """Run the cell, and write its records to the output folder if there is one (a folder that
    cannot be written fails the cell, with the reason)."""
    result = _run(spec, cell)
    notes = list(_notes(caught))
    broken = broken_message(cell.strategy, result.requests)
    if broken is not None:
        notes.append(f"AlgorithmWarning: {broken}")
    outcome = CellOutcome(
        cell.index,
        cell.key,
        "done",
        time.perf_counter() - started,
        engine=result.engine,
        notes=tuple(notes),
        counts=attempt_counts(result.attempts),
        rows=(len(result.requests), len(result.attempts)),
        requests=result.requests,
        attempts=result.attempts,
    )
    if spec.out is not None:
        from sykit._grid.store import write_cell

        outcome.record = write_cell(Path(spec.out), cell, outcome, spec.axes)
        outcome.requests = outcome.attempts = None
    return outcome


def plan_cell(spec: GridSpec, cell: Cell) -> tuple[Plan, Any]:
    """The checked run of a cell (its algorithm built, host and traffic resolved), not started."""
    values = {name: spec.axes[name].value(label) for name, label in cell.labels}
    fn = spec.strategies[cell.strategy].build(values)
    plan = Plan(
        [(cell.strategy, fn)],
        spec.requests,
        spec.host.resolve(values),
        spec.concurrency.resolve(values),
        spec.arrivals.resolve(values),
        [cell.seed],
        spec.strict,
        spec.engine,
    )
    return plan, fn


def _run(spec: GridSpec, cell: Cell) -> Any:
    plan, fn = plan_cell(spec, cell)
    if plan.host.virtual:
        return plan.run_simulated(cell.strategy, fn, cell.seed, None)
    result = run_real(plan, None)[0]
    if result.interrupted:
        raise KeyboardInterrupt
    return result


def _notes(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))


# -- in a worker ----------------------------------------------------------------------------------
_SPECS: dict[str, GridSpec] = {}
_LOCK = threading.Lock()


def _spec(digest: str, payload: bytes | None) -> GridSpec:
    """The grid spec with this digest, unpickled once per worker process."""
    with _LOCK:
        spec = _SPECS.get(digest)
        if spec is None:
            if payload is None:
                raise RuntimeError("this worker was not given the grid (no payload)")
            import cloudpickle

            spec = cloudpickle.loads(payload)
            _SPECS.clear()  # one grid at a time: the last one's requests are not kept
            _SPECS[digest] = spec
        return spec


def init_worker(digest: str, payload: bytes) -> None:
    """A pool worker's start: Ctrl-C is the caller's to handle (it cancels what has not run and
    keeps what finished), and the grid is unpickled before the first cell."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _spec(digest, payload)


def work(digest: str, payload: bytes | None, cells: list[Cell]) -> list[CellOutcome]:
    """A worker's task: run ``cells`` of the grid ``digest`` (``payload`` once per worker)."""
    spec = _spec(digest, payload)
    return [run_cell(spec, cell, capture=True) for cell in cells]
