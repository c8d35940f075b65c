"""One part of a job run on a second core while this process runs the others.

``sykit compare``'s sweeps and learned routers need nothing the other parts compute, so on a
machine with two cores or more they run in a worker process started before anything else (a fork, while this
process runs no other thread, so the worker starts at once with everything imported). With one
core, or ``workers=1``, the part runs here when its result is asked for. Either way the result and
the seconds it took are the same; an error in the worker is raised here, when the result is asked
for.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sykit._grid.execute import _context, _stop_pool, cpu_count

__all__ = ["Background", "later"]

T = TypeVar("T")


def later(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """What runs ``fn(*args)`` here when its result is asked for: a side task without a spare
    worker (see :meth:`Background.also`)."""
    return lambda: fn(*args)


def _timed(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float]:
    started = time.perf_counter()
    return fn(*args), time.perf_counter() - started


class Background(Generic[T]):
    """``fn(*args)`` started now in a worker process (when ``workers`` ≥ 2 and the machine has
    two cores or more), else run in this process by :meth:`result`."""

    def __init__(self, fn: Callable[..., T], *args: Any, workers: int = 2) -> None:
        self._fn = fn
        self._args = args
        self._pool: cf.ProcessPoolExecutor | None = None
        self._future: cf.Future[tuple[T, float]] | None = None
        if workers >= 2 and cpu_count() >= 2:
            # a second worker, started with the first, for the side tasks of :meth:`also`: the
            # part's own worker is busy, and one started later, from a process running the
            # pool's threads, could not be a fork
            self._pool = cf.ProcessPoolExecutor(max_workers=2, mp_context=_context())
            self._future = self._pool.submit(_timed, fn, args)

    def also(self, fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        """Run ``fn(*args)`` on the pool's spare worker (its arguments pickled to it), while this
        process goes on; returns what waits for its result. Without a pool, ``fn`` runs when
        the result is asked for. Ask before :meth:`result`, which stops the pool."""
        if self._pool is None:
            return later(fn, *args)
        future = self._pool.submit(fn, *args)
        return future.result

    @property
    def alongside(self) -> bool:
        """Whether the part runs in a worker process, alongside this one."""
        return self._future is not None

    def result(self) -> tuple[T, float]:
        """The part's result and the wall seconds it took (waiting for the worker if need be)."""
        if self._future is None:
            return _timed(self._fn, self._args)
        assert self._pool is not None
        interrupted = True
        try:
            found = self._future.result()
            interrupted = False
            return found
        finally:
            _stop_pool(self._pool, interrupted)
            self._pool = None

    def cancel(self) -> None:
        """Stop the worker (the job failed or was interrupted before asking for the result)."""
        if self._pool is not None:
            _stop_pool(self._pool, True)
            self._pool = None
