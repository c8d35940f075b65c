"""``sy.grid``: strategies × their parameters × host variants × traffic × seeds, on any executor."""

from __future__ import annotations

import contextvars
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from sykit._base.errors import ArgumentError, SykitError
from sykit._base.types import AlgorithmLike as Algorithm
from sykit._grid.axes import Binding, Cell, bind, cells_of, check_axes, check_strategies
from sykit._grid.cell import CellOutcome, GridSpec, plan_cell
from sykit._grid.execute import Pool, check_executor
from sykit._grid.result import CellFrames, Grid, axis_column
from sykit._grid.store import check_out, finished_cells, open_store, requests_fingerprint
from sykit._run.inputs import as_requests, as_source, check_seeds
from sykit._run.progress import make_progress
from sykit._world.models import Request
from sykit._world.sessions import flatten_sessions

__all__ = ["compare_runs", "grid"]

#: Set while ``sy.compare`` runs on an executor: it raises a failed run's error itself, so the
#: grid does not also warn about it.
_FAILURES_RAISED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "sykit_grid_failures_raised", default=False
)


def grid(
    strategies: Mapping[str, Algorithm | Callable[..., Algorithm]] | Sequence[Algorithm],
    requests: Iterable[Request | str],
    *,
    host: Any,
    axes: Mapping[str, Sequence[Any] | Mapping[Any, Any]] | None = None,
    seeds: Sequence[int] = (0,),
    concurrency: int | Callable[..., int | None] | None = None,
    arrivals: Any = None,
    workers: int | None = None,
    executor: Any = None,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    strict: bool = False,
    engine: str = "auto",
) -> Grid:
    """Run every cell of a grid — each strategy at every combination of the axes it uses, with
    every seed — and return them as one :class:`Grid`.

        g = sy.grid(
            {"router": lambda threshold: sy.strategies.threshold_router(
                 "weak", "strong", score=score, threshold=threshold),
             "strong only": sy.strategies.single("strong")},
            dataset,
            host=lambda faults: make_host(faults),
            axes={"threshold": [0.2, 0.4, 0.6], "faults": {"none": 0.0, "high": 0.2}},
            seeds=range(5),
            workers=2,
        )
        g.summary()                      # one row per strategy × axis values, over seeds
        g.plot.lines(x="threshold", col="faults")

    ``axes`` maps a name to its values (numbers, strings, booleans: also the frames' column) or
    to a dict ``label → object`` (the column holds the label). A strategy is an algorithm, as
    :func:`sy.compare` takes, or a plain function whose parameters name axes and which returns
    one; ``host``, ``concurrency`` and ``arrivals`` are fixed values or functions of the axes
    their parameters name. Axes a strategy does not use are not multiplied for it. Strategies
    in the same cell of the host and traffic axes see the same arrivals and draws (common random
    numbers), as in :func:`sy.compare`.

    ``workers=N`` runs cells in N local worker processes; ``executor=`` takes any
    ``concurrent.futures.Executor`` or a ``dask.distributed.Client``. The frames are the same on
    every executor. Algorithms and factories defined in a notebook travel to the workers with
    cloudpickle. A failing cell is reported (``grid.failures``, and a warning) and the others
    run; Ctrl-C and a lost worker return the cells finished so far.

    ``out=folder`` writes each cell's records as Parquet, partitioned by the axes, and keeps
    them there (``summary()`` reads only what it needs); running the grid again with the same
    folder skips the cells already finished there (``overwrite=True`` first deletes what sykit
    wrote there, and nothing else). docs/grids.md has more.
    """
    items_source = as_source(requests)  # a DataFrame as its dataset, before it is listed
    if not isinstance(items_source, Sequence) and not hasattr(items_source, "analysis_columns"):
        items_source = list(items_source)  # an iterator is read once, here
    flat = flatten_sessions(items_source) if isinstance(items_source, Sequence) else None
    items = as_requests(items_source if flat is None else flat[0])
    protected = tuple(getattr(items_source, "analysis_columns", ()) or ())
    checked_axes = check_axes(axes, protected)
    entries = check_strategies(strategies, checked_axes)
    seed_list = check_seeds(seeds)
    if not isinstance(overwrite, bool):
        raise ArgumentError(f"overwrite must be True or False, got {overwrite!r}")
    is_host = hasattr(host, "virtual") and hasattr(host, "profiles")
    host_binding = Binding(host) if is_host else bind("host", host, checked_axes, factory_only=True)
    shared = [
        host_binding,
        bind("concurrency", concurrency, checked_axes, factory_only=True),
        bind("arrivals", arrivals, checked_axes, factory_only=True),
    ]
    runner = check_executor(workers, executor)
    path = check_out(out)
    spec = GridSpec(
        requests=items_source,
        strategies={entry.name: entry for entry in entries},
        axes=checked_axes,
        host=shared[0],
        concurrency=shared[1],
        arrivals=shared[2],
        strict=strict,
        engine=engine,
        out=None if path is None else str(path),
    )
    cells = cells_of(entries, checked_axes, shared, seed_list)
    _check_first_cells(spec, cells)
    frames = CellFrames(path)
    resumed: set[int] = set()
    if path is not None:
        open_store(path, requests_fingerprint([item[0] for item in items]), overwrite)
        found, damaged = finished_cells(path, {cell.key for cell in cells})
        _report_damaged(path, damaged)
        for cell in cells:
            record = found.get(cell.key)
            if record is not None:
                resumed.add(cell.index)
                frames.records[cell.index] = record
                frames.counts[cell.index] = record["counts"]
    outcomes: dict[int, CellOutcome] = {}
    todo = [cell for cell in cells if cell.index not in resumed]
    pool = Pool(spec, runner, len(todo))
    try:
        bar = make_progress(len(cells), progress, "grid", unit="cell")
    except BaseException:
        pool.close(interrupted=True)
        raise
    failed = 0

    def done(outcome: CellOutcome) -> None:
        nonlocal failed
        outcomes[outcome.index] = outcome
        if outcome.status == "done":
            frames.counts[outcome.index] = outcome.counts
            if outcome.record is not None:
                frames.records[outcome.index] = outcome.record
            elif outcome.requests is not None and outcome.attempts is not None:
                frames.held[outcome.index] = (outcome.requests, outcome.attempts)
        else:
            failed += 1
            if bar is not None:
                bar.set_postfix(failed=failed)
        if bar is not None:
            bar.update(1)

    try:
        if bar is not None and resumed:
            bar.update(len(resumed))
        stopped = pool.run(todo, done)
    finally:
        if bar is not None:
            bar.close()
    table = _cells_table(cells, checked_axes, outcomes, resumed, frames, stopped.lost)
    result = Grid(
        axes=tuple(checked_axes),
        strategies=tuple(entry.name for entry in entries),
        cells=table,
        out=path,
        _frames=frames,
        _axes=checked_axes,
        executor=runner.describe(),
    )
    _report(result, cells, resumed, stopped.interrupted, path)
    return result


def _report_damaged(path: os.PathLike[str], damaged: Sequence[str]) -> None:
    """Say which finished cells of the output folder were damaged, and so run again."""
    if not damaged:
        return
    more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
    warnings.warn(
        f"{len(damaged)} finished cell(s) in {str(path)!r} were damaged and run again: "
        f"{damaged[0]}{more}",
        UserWarning,
        stacklevel=3,
    )


def _check_first_cells(spec: GridSpec, cells: Sequence[Cell]) -> None:
    """Build each strategy's first cell now, so a misspelt axis value or a factory that returns
    the wrong thing stops the call before anything runs instead of failing every cell."""
    seen: set[str] = set()
    for cell in cells:
        if cell.strategy in seen:
            continue
        seen.add(cell.strategy)
        plan_cell(spec, cell)


def _cells_table(
    cells: Sequence[Cell],
    axes: Mapping[str, Any],
    outcomes: Mapping[int, CellOutcome],
    resumed: set[int],
    frames: CellFrames,
    lost: Mapping[int, str],
) -> pd.DataFrame:
    rows = []
    for cell in cells:
        labels = dict(cell.labels)
        outcome = outcomes.get(cell.index)
        record = frames.records.get(cell.index) if cell.index in resumed else None
        if record is not None:
            status, wall, engine = "done", record["wall_s"], record["engine"]
            n_requests, n_attempts = record["rows"]
            error, trace, notes = None, None, tuple(record["notes"])
        elif outcome is not None:
            status, wall, engine = outcome.status, outcome.wall_s, outcome.engine
            n_requests, n_attempts = outcome.rows
            error, trace, notes = outcome.error, outcome.traceback, outcome.notes
        else:
            status = "lost" if cell.index in lost else "missing"
            wall, engine, n_requests, n_attempts = float("nan"), None, 0, 0
            error, trace, notes = lost.get(cell.index), None, ()
        rows.append(
            {
                "cell": cell.index,
                "strategy": cell.strategy,
                **{name: labels.get(name) for name in axes},
                "seed": cell.seed,
                "status": status,
                "resumed": cell.index in resumed,
                "wall_s": wall,
                "engine": engine,
                "requests": n_requests,
                "attempts": n_attempts,
                "error": error,
                "notes": "\n".join(notes) if notes else None,
                "traceback": trace,
                "key": cell.key,
            }
        )
    table = pd.DataFrame(rows)
    strategies = list(dict.fromkeys(cell.strategy for cell in cells))
    table["strategy"] = pd.Categorical(table["strategy"], categories=strategies)
    for name, axis in axes.items():
        table[name] = axis_column(list(table[name]), axis)
    table["status"] = pd.Categorical(
        table["status"], categories=["done", "failed", "lost", "missing"]
    )
    return table


def _report(grid: Grid, cells: Sequence[Cell], resumed: set[int], interrupted: bool, path):
    """Say, once each, what the table of cells shows: failures, losses, Ctrl-C, warnings."""
    table = grid.cells
    total = len(table)
    if resumed:
        warnings.warn(
            f"{len(resumed)} of {total} cells were read from {str(path)!r}, finished by an "
            "earlier run (overwrite=True runs them again)",
            UserWarning,
            stacklevel=3,
        )
    failed = table[table["status"] == "failed"]
    if len(failed) and not _FAILURES_RAISED.get():
        first = failed.iloc[0]
        warnings.warn(
            f"{len(failed)} of {total} cells failed (grid.failures lists them, with the "
            f"traceback); the first, {cells[int(first['cell'])].describe()}: {first['error']}",
            UserWarning,
            stacklevel=3,
        )
    lost = table[table["status"] == "lost"]
    if len(lost):
        warnings.warn(
            f"{len(lost)} of {total} cells were lost with a worker ({lost.iloc[0]['error']}); "
            "the finished cells are kept"
            + (" and a rerun with the same out= runs only the rest" if path else ""),
            UserWarning,
            stacklevel=3,
        )
    if interrupted:
        done = int((table["status"] == "done").sum())
        warnings.warn(
            f"interrupted: {done} of {total} cells finished; grid.failures lists the "
            f"{int((table['status'] == 'missing').sum())} missing"
            + (", and a rerun with the same out= runs only those" if path else ""),
            UserWarning,
            stacklevel=3,
        )
    noted = table[table["notes"].notna() & (table["status"] == "done")]
    if len(noted):
        first = noted.iloc[0]
        warnings.warn(
            f"{len(noted)} of {total} cells raised warnings (grid.cells['notes']); the first, "
            f"{cells[int(first['cell'])].describe()}: {first['notes'].splitlines()[0]}",
            UserWarning,
            stacklevel=3,
        )


def compare_runs(
    plan: Any,
    requests: Any,
    workers: int | None,
    executor: Any,
    progress: bool | None,
) -> list[Any]:
    """``sy.compare`` on an executor: its runs as the cells of an axis-less grid, returned in
    compare's order (seed by seed, strategy by strategy). A run that failed raises a
    :class:`SykitError` naming it and its error (with ``strict``, an algorithm's exception)."""
    token = _FAILURES_RAISED.set(True)
    try:
        result = grid(
            dict(plan.strategies),
            requests,
            host=plan.host,
            seeds=plan.seeds,
            concurrency=plan.concurrency,
            arrivals=plan.arrivals,
            workers=workers,
            executor=executor,
            progress=progress,
            strict=plan.strict,
            engine=plan.engine,
        )
    finally:
        _FAILURES_RAISED.reset(token)
    cells = result.cells
    failed = cells[cells["status"] == "failed"]
    if len(failed):
        raise SykitError(
            f"{len(failed)} run(s) of the comparison failed; the first, strategy "
            f"{failed.iloc[0]['strategy']!r} seed {failed.iloc[0]['seed']}: "
            f"{failed.iloc[0]['error']}"
        )
    done = cells[cells["status"] == "done"]
    order = {name: i for i, (name, _) in enumerate(plan.strategies)}
    rows = sorted(
        (row for _, row in done.iterrows()),
        key=lambda row: (plan.seeds.index(int(row["seed"])), order[str(row["strategy"])]),
    )
    return [result._result(row) for row in rows]
