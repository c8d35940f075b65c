"""The bulk engine: runs evaluated column-wise, with no events.

A run whose requests do not depend on one another (a fixed chain, a static router) can be planned
for all requests at once; only the clock is needed, to place each request's attempts in time. This
engine is that clock. A request the plan cannot take is run the exact way on it, alone: its
algorithm's calls and sleeps are then traps run on the clock (``exact``). Anything else an
algorithm asks of an engine (a task, a race, a deadline; a sleep or a call while a static router
routes) raises :class:`NeedsEvents`, and the run goes to the event engines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from sykit._run.engines.base import Call, Engine, EngineExit, sleep

__all__ = ["BulkEngine", "NeedsEvents"]


class NeedsEvents(EngineExit):
    """The run needs the event engines; the message says why. A BaseException, so an algorithm's
    ``except Exception`` cannot swallow it."""


class BulkEngine(Engine):
    """The clock of a run evaluated column-wise; refuses everything that needs events."""

    name = "bulk"

    def __init__(self) -> None:
        self.time = 0.0
        self.routing = False  # while static routing runs, no clock exists yet
        self.exact = False  # while one request runs the exact way: calls and sleeps are traps

    def start_clock(self) -> None:
        self.time = 0.0

    def now(self) -> float:
        if self.routing:
            self._refuse("read the clock while routing")
        return self.time

    @property
    def clock(self) -> Callable[[], float]:
        return self.now

    def _refuse(self, what: str) -> NoReturn:
        raise NeedsEvents(f"the algorithm tried to {what}, which needs the event engines")

    def sleep(self, seconds: float) -> Any:
        if not self.exact:
            self._refuse("sleep")
        return sleep(seconds)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self._refuse("schedule a callback")

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
        self._refuse("schedule a callback")

    def spawn(self, awaitable: Any, race_id: int | None) -> Any:
        self._refuse("start a task")

    def spawn_request(self, coro: Any, owner: Any, name: str) -> Any:
        self._refuse("start a task")

    def spawn_detached(self, coro: Any) -> None:
        self._refuse("start a task")

    def wait_any(self, tasks: Any, timeout: float | None = None) -> Any:
        self._refuse("wait for tasks")

    def cancel(self, task: Any, cause: Any) -> None:
        self._refuse("cancel a task")

    def cancel_all(self, tasks: Any, cause: Any) -> None:
        self._refuse("cancel tasks")

    def uncancel(self, task: Any) -> None:
        self._refuse("cancel a task")

    def drop(self, task: Any) -> None:
        self._refuse("cancel a task")

    def deadline(self, seconds: float, cause: Any) -> Any:
        self._refuse("set a deadline")

    def event(self) -> Any:
        self._refuse("wait for an event")

    def current_task(self) -> Any:
        return None

    def current_cause(self) -> Any:
        return None

    def current_race(self) -> int | None:
        return None

    def current_owner(self) -> Any:
        return None

    def new_race(self) -> int:
        self._refuse("start a race")

    def drive(self, steps: Any, session: Any) -> Any:
        if self.exact:
            return Call(steps)  # a simulated host plans its attempts: only sleeps are trapped
        steps.close()
        self._refuse("make a call while routing")
