"""A wake-up whose instant may move while a task waits for it.

It lives at the ground level because both sides meet on it: a simulated server (:mod:`sykit._world`)
moves it, and the engines (:mod:`sykit._run.engines`) wake a task at it (the ``ALARM`` trap).
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["Alarm"]


class Alarm:
    """A wake-up at an instant that may move while a task waits for it (``yield (ALARM,
    alarm)``). A simulated server that shares its rate among the calls it serves re-times each
    call's end at every arrival and departure; a sleep could not follow. :meth:`move` works
    before the wait starts and while it lasts; once the task has woken, or been cancelled, a
    move only changes :attr:`when`. Each engine wakes the task as it would from a sleep ending at
    :attr:`when`, and a moved alarm counts as a timer set at the move, so equal instants wake in
    one order on every engine."""

    __slots__ = ("_reset", "_token", "when")

    def __init__(self, when: float = math.inf) -> None:
        self.when = when
        self._reset: Callable[[float], None] | None = None  # set by the engine while it waits
        self._token = 0  # the engine's mark of the wait it set last

    def move(self, when: float) -> None:
        """Wake at ``when`` (seconds on the run's clock, not before now) instead."""
        if when != self.when:
            self.when = when
            reset = self._reset
            if reset is not None:
                reset(when)
