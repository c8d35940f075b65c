"""A fake model's capacity in real time: slots, a FIFO queue, and a decode rate shared by the
sequences in service.

A ``FakeModel(capacity=sy.Capacity(...))`` behaves as a self-hosted server does under load, so that
a measurement over HTTP (``sy.profiles.fit_capacity``) has something with a known answer to recover:

* at most ``slots`` requests are served at once; the others wait in a FIFO queue, and one that
  would wait while ``queue_limit`` others already do is refused with ``reject_status``;
* a request in service holds its slot from its service start (the time to first token is counted
  from there) until its answer ends or its client goes away;
* while ``n`` requests are in service, each one's tokens come at ``factor(n)`` times its own rate.
  Unlike the simulated host, which sets a call's rate once when it starts, the rate here follows
  ``n`` as it changes (true processor sharing): every stream waits on one shared clock of *work*,
  the seconds of full-rate decoding each sequence in service has received, and wakes early when a
  departure speeds it up.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from sykit._world.capacity import Capacity

__all__ = ["Slots"]

#: A pace: wait until ``at`` seconds into an answer that ran at its full rate.
Pace = Callable[[float], Awaitable[None]]

_EPS = 1e-9


class Slots:
    """One fake model's slots and queue (used from the server's event loop only)."""

    def __init__(self, capacity: Capacity) -> None:
        self.capacity = capacity
        self.factors = capacity.factors()
        self.serving = 0
        self.waiting: deque[asyncio.Future[None]] = deque()
        self._work = 0.0  # seconds of full-rate decoding each sequence in service has had
        self._since = 0.0  # loop time of the last change of ``serving``
        self._changed: asyncio.Future[None] | None = None

    @property
    def full(self) -> bool:
        """Whether a request arriving now would be refused: every slot busy and the queue full."""
        limit = self.capacity.queue_limit
        busy = self.serving >= len(self.factors) or bool(self.waiting)
        return busy and limit is not None and len(self.waiting) >= limit

    def _factor(self) -> float:
        return self.factors[self.serving - 1] if self.serving else 1.0

    def work(self) -> float:
        """The shared clock of work, now."""
        now = asyncio.get_running_loop().time()
        return self._work + (now - self._since) * self._factor()

    def _change(self, serving: int) -> None:
        """``serving`` changes now: bank the work done at the old rate, wake the paced streams."""
        self._work = self.work()
        self._since = asyncio.get_running_loop().time()
        self.serving = serving
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    async def acquire(self) -> None:
        """Wait for a slot (FIFO). The caller checks :attr:`full` first."""
        if self.serving < len(self.factors) and not self.waiting:
            self._change(self.serving + 1)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn in self.waiting:
                self.waiting.remove(turn)
            elif turn.done() and not turn.cancelled():
                self.release()  # handed a slot as its client left: pass it on
            raise

    def release(self) -> None:
        """Free a slot: the first request still waiting takes it, else it stays free."""
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                self._change(self.serving)  # one leaves, one enters: bank the work to now
                turn.set_result(None)
                return
        self._change(self.serving - 1)

    def pace(self, start: float, ttft: float) -> Pace:
        """The pace of an answer whose service started at ``start`` (loop time): its first token
        ``ttft`` later in real time (no prefill to slow), then its decoding on the shared clock."""
        decode: list[float] = []  # the work clock when decoding started

        async def until(at: float) -> None:
            loop = asyncio.get_running_loop()
            if at <= ttft or not decode:
                delay = start + min(at, ttft) - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if not decode:
                    decode.append(self.work())
                if at <= ttft:
                    return
            target = decode[0] + (at - ttft)
            while True:
                left = target - self.work()
                if left <= _EPS:
                    return
                if self._changed is None:
                    self._changed = loop.create_future()
                changed = self._changed
                await asyncio.wait((changed,), timeout=left / self._factor())

        return until
