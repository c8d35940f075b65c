"""Where a grid's cells run: in the caller's process, a local process pool, any
``concurrent.futures`` executor, or a Dask cluster.

Every executor runs the same function on the same cells (:func:`~sykit._grid.cell.work`), and each
cell is an independent ``sy.run`` keyed by its seed, so the records do not depend on the executor,
the number of workers or the order cells finish in. Cells go in tasks of a few consecutive
cells (:func:`_tasks`), so small cells do not each pay a round trip. The grid is pickled once
with cloudpickle:
a local pool unpickles it in each worker's initializer, Dask receives it scattered to every worker,
another executor receives it with each task (each worker unpickles it once).

Ctrl-C cancels the cells not started and keeps those finished; pool workers ignore it (the caller
handles it), and a local pool's workers are stopped. A worker that dies (a crash, an
out-of-memory kill) loses the cells it held: with a local pool every cell not finished by then
(the pool is broken), with Dask those it retried until it gave up. Both are reported, not raised.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._grid.axes import Cell
from sykit._grid.cell import CellOutcome, GridSpec, init_worker, run_cell, work

__all__ = ["Executor", "Pool", "Stopped", "check_executor"]


@dataclass(frozen=True)
class Executor:
    """How the cells run: ``kind`` is serial, processes, executor or dask."""

    kind: str
    workers: int | None = None
    target: Any = None

    def describe(self) -> str:
        if self.kind == "serial":
            return "serial"
        if self.kind == "processes":
            return f"{self.workers} local worker processes"
        if self.kind == "dask":
            return "Dask"
        return type(self.target).__name__


def _is_dask_client(value: Any) -> bool:
    module = type(value).__module__ or ""
    return module.startswith("distributed") and hasattr(value, "get_executor")


def check_executor(workers: object, executor: object) -> Executor:
    if workers is not None and executor is not None:
        raise ArgumentError("give workers=N (a local process pool) or executor=…, not both")
    if workers is not None:
        return Executor("processes", check_int(workers, "workers", low=1))
    if executor is None or executor == "serial":
        return Executor("serial")
    if _is_dask_client(executor):
        return Executor("dask", target=executor)
    if isinstance(executor, cf.Executor):
        return Executor("executor", target=executor)
    raise ArgumentTypeError(
        "executor must be None (serial), a concurrent.futures.Executor or a "
        f"dask.distributed.Client, got {type(executor).__name__}"
    )


@dataclass
class Stopped:
    """Why cells did not finish: Ctrl-C, or the cells a lost worker took with it."""

    interrupted: bool = False
    lost: dict[int, str] = field(default_factory=dict)


def _pickled(spec: GridSpec) -> tuple[str, bytes]:
    import cloudpickle

    try:
        payload = cloudpickle.dumps(spec)
    except Exception as error:
        raise ArgumentError(
            f"the grid cannot be sent to workers: pickling it failed ({type(error).__name__}: "
            f"{error}). Strategies, factories and hosts must not hold open files, locks or "
            "connections; build those inside a factory, or run with executor=None"
        ) from error
    return hashlib.sha1(payload).hexdigest(), payload


def _context() -> Any:
    """How a local pool starts its workers. ``fork`` when the caller runs no other thread (a
    script): the workers start at once and a script needs no ``if __name__ == "__main__"``
    guard. Otherwise (a notebook kernel, a Dask client, a progress bar run threads) a fork could
    deadlock the child on a lock another thread held, so workers start from a fresh interpreter
    (``forkserver``, or ``spawn`` where there is none); a script then needs the guard."""
    methods = multiprocessing.get_all_start_methods()
    if threading.active_count() == 1 and "fork" in methods:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # The fork server (one per process, started on first use) imports sykit once, so the workers
    # of every later grid start in milliseconds instead of importing pandas each.
    context.set_forkserver_preload(["sykit"])
    return context


class Pool:
    """The executor a grid's cells are submitted to, opened before the progress bar starts (a
    bar's monitor thread would rule out a fork) and closed after the last cell."""

    def __init__(self, spec: GridSpec, executor: Executor, cells: int) -> None:
        self.spec = spec
        self.executor = executor
        self.own: cf.ProcessPoolExecutor | None = None
        self.submit: Callable[[list[Cell]], cf.Future[list[CellOutcome]]] | None = None
        self.slots = 1  # cells the executor runs at once
        if executor.kind == "serial" or cells == 0:
            return
        digest, payload = _pickled(spec)
        if executor.kind == "processes":
            context = _context()
            pool = self.own = cf.ProcessPoolExecutor(
                max_workers=min(executor.workers or 1, cells),
                mp_context=context,
                initializer=init_worker,
                initargs=(digest, payload),
            )
            self.slots = min(executor.workers or 1, cells)
            self.submit = lambda c: pool.submit(work, digest, None, c)
            if context.get_start_method() == "fork":
                pool.submit(int).result()  # start every worker now, while no other thread runs
        elif executor.kind == "dask":
            client = executor.target
            shared = client.scatter(payload, broadcast=True, hash=False)
            dask_pool = client.get_executor(pure=False)
            self.slots = max(1, sum(client.nthreads().values()))
            self.submit = lambda c: dask_pool.submit(work, digest, shared, c)
        else:
            target = executor.target
            self.slots = getattr(target, "_max_workers", None) or cpu_count()
            self.submit = lambda c: target.submit(work, digest, payload, c)

    def run(self, cells: Sequence[Cell], done: Callable[[CellOutcome], None]) -> Stopped:
        """Run ``cells``, handing each outcome to ``done`` as it arrives (in this thread)."""
        if self.submit is None:
            return _serial(self.spec, cells, done)
        stopped = Stopped(interrupted=True)  # until _collect returns
        try:
            stopped = _collect(_tasks(cells, self.slots), self.submit, done)
        finally:
            self.close(stopped.interrupted)
        return stopped

    def close(self, interrupted: bool = False) -> None:
        if self.own is not None:
            _stop_pool(self.own, interrupted)
            self.own = None


def _serial(spec: GridSpec, cells: Sequence[Cell], done: Callable[[CellOutcome], None]) -> Stopped:
    stopped = Stopped()
    for cell in cells:
        try:
            outcome = run_cell(spec, cell, capture=True)
        except KeyboardInterrupt:
            stopped.interrupted = True
            return stopped
        done(outcome)
    return stopped


#: Most cells in one task: bounds what a lost worker takes with it and how far the bar jumps.
MAX_CELLS_PER_TASK = 16


def _tasks(cells: Sequence[Cell], slots: int) -> list[list[Cell]]:
    """Consecutive cells grouped into tasks, about four per slot or more, so that small cells do
    not each pay a task's scheduling and round trip, while every worker stays busy to the end."""
    size = max(1, min(MAX_CELLS_PER_TASK, len(cells) // (4 * max(1, slots))))
    return [list(cells[i : i + size]) for i in range(0, len(cells), size)]


def _collect(
    tasks: Sequence[list[Cell]],
    submit: Callable[[list[Cell]], cf.Future[list[CellOutcome]]],
    done: Callable[[CellOutcome], None],
) -> Stopped:
    stopped = Stopped()
    futures: dict[cf.Future[list[CellOutcome]], list[Cell]] = {}
    try:
        for task in tasks:
            futures[submit(task)] = task
        for future in cf.as_completed(futures):
            task = futures[future]
            if future.cancelled():
                continue
            error = future.exception()
            if error is not None:
                why = f"{type(error).__name__}: {error}".rstrip(": ")
                stopped.lost.update(dict.fromkeys((cell.index for cell in task), why))
                continue
            for outcome in future.result():
                done(outcome)
    except KeyboardInterrupt:
        stopped.interrupted = True
        for future in futures:
            future.cancel()
    return stopped


def _stop_pool(pool: cf.ProcessPoolExecutor, interrupted: bool) -> None:
    """Shut a local pool down; after Ctrl-C, without waiting for the cells under way."""
    if not interrupted:
        pool.shutdown(wait=True)
        return
    processes = dict(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes.values():
        if process.is_alive():
            process.terminate()
    for process in processes.values():
        process.join(timeout=5)


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
