"""A simulated model's capacity: the sequences it serves at once, how they slow one another, and
the queue beyond them.

Without a capacity a simulated model answers every call as if it were alone, so a strategy that
adds load (a hedge, a race, retries) pays nothing for it. ``sy.Capacity`` makes the model a server:

* ``slots`` sequences are served at once; a call beyond them waits in a FIFO queue;
* each sequence's decode and prefill rates are the profile's times a factor that falls with the
  number of sequences in service (``slowdown``: processor sharing, or a measured curve);
* the queue holds at most ``queue_limit`` calls (one more is rejected) and a call waits at most
  ``queue_timeout_s`` (then fails as a timeout).

The rule, exact on every engine (see docs/capacity.md): a call is planned when it arrives, against
the calls planned before it. It starts service at the first instant, no earlier than its arrival
nor than any earlier call's start (FIFO), at which fewer than ``slots`` calls hold a slot. Its
rate factor is the one for the sequences in service at that instant, itself included, and holds
for the whole call: later arrivals do not slow it, departures do not speed it up. It holds its slot
until its answer ends (or fails, or reaches the client's deadline). A call cancelled at instant
``c`` frees its slot (or its place in the queue) for calls that arrive after ``c``; calls already
planned keep the start and the rate they were given. That is ``sharing="at_start"``, the default;
``sharing="exact"`` re-times every call at each change (:mod:`.sharing`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.values import spelled

__all__ = ["Capacity", "Server", "rejection"]

#: The statuses a full queue may answer with: 503 (the server is overloaded) or 429.
REJECT_STATUSES = (429, 503)
#: How the rate is shared: set once at a call's service start, or re-timed at every change.
SHARING = ("at_start", "exact")
NAN = math.nan
#: The largest ``n`` of a ``slowdown`` point: every count up to it is exact as a float.
MAX_POINT_N = 2**53


@spelled
@dataclass(frozen=True, kw_only=True)
class Capacity:
    """How many calls a simulated model serves at once, and how it slows down as it fills.

        sy.Capacity(slots=8)                                   # rate shared: each of n runs at 1/n
        sy.Capacity(slots=16, slowdown=4)                      # full rate up to 4, then 4/n
        sy.Capacity(slots=16, slowdown=[(1, 1.0), (8, 0.8), (16, 0.5)])   # a measured curve
        sy.Capacity(slots=8, queue_limit=32, queue_timeout_s=10)

    ``slots``: sequences in service at once; a call beyond them waits in a FIFO queue.
    ``slowdown``: each sequence's decode and prefill rates, as a factor of the profile's, with
    ``n`` sequences in service. A number ``k`` (≥ 1) is processor sharing of ``k`` sequences' worth
    of rate: ``min(1, k / n)`` (the default, 1: one sequence's rate shared by all). Points
    ``(n, factor)`` (a list of pairs or a dict), e.g. measured tokens per second at ``n``
    concurrent sequences over that at one, are interpolated linearly in ``n`` and held flat
    beyond the first and last. ``queue_limit``: calls that may wait (None: no limit; 0: no
    queue); one more is answered ``reject_status`` (503, "overloaded", or 429) after the model's
    ``reject_delay_s``. ``queue_timeout_s``: the longest a call waits for a slot (None: until the
    client's deadline, ``HostPolicy.timeout_s``); a call that would wait longer fails as a
    timeout at that instant.

    ``sharing``: ``"at_start"`` (the default) sets a call's rate factor when its service starts
    (from the sequences in service then, itself included) and holds it to its end; a cancelled
    call frees its slot for calls arriving after the cancellation. ``"exact"`` is processor
    sharing proper: every call in service runs at the factor for the sequences in service *now*,
    re-timed at each arrival and departure, and a cancelled call's slot (or place in the queue)
    goes at once to the calls behind it (a stream's tokens come as the load lets them); it is
    slower to simulate. docs/capacity.md gives both rules and how far apart they are. The
    waiting time of each attempt is the ``queue_s`` column of ``result.attempts`` (present when
    a model of the host declares a capacity).
    """

    slots: int
    slowdown: float | Sequence[tuple[int, float]] | Mapping[int, float] = 1.0
    queue_limit: int | None = None
    queue_timeout_s: float | None = None
    reject_status: int = 503
    sharing: str = "at_start"

    def __post_init__(self) -> None:
        slots = check_int(self.slots, "slots", low=1, expected="an int ≥ 1 (sequences at once)")
        object.__setattr__(self, "slots", slots)
        object.__setattr__(self, "slowdown", _slowdown(self.slowdown))
        if self.queue_limit is not None:
            limit = check_int(self.queue_limit, "queue_limit", low=0, expected="an int ≥ 0 or None")
            object.__setattr__(self, "queue_limit", limit)
        if self.queue_timeout_s is not None:
            object.__setattr__(
                self,
                "queue_timeout_s",
                check_real(
                    self.queue_timeout_s,
                    "queue_timeout_s",
                    low=0,
                    low_open=True,
                    expected="a finite number of seconds > 0, or None",
                ),
            )
        status = check_int(self.reject_status, "reject_status", expected="an int HTTP status")
        if status not in REJECT_STATUSES:
            raise ArgumentError(
                f"reject_status must be 503 (overloaded) or 429 (too many requests), got {status}"
            )
        object.__setattr__(self, "reject_status", status)
        if self.sharing not in SHARING:
            raise ArgumentError(
                f"sharing must be one of {', '.join(map(repr, SHARING))}, got {self.sharing!r:.40}"
            )

    def factor(self, n: int) -> float:
        """The rate factor of each sequence with ``n`` (≥ 1) sequences in service."""
        n = check_int(n, "n", low=1)
        slowdown = self.slowdown
        if isinstance(slowdown, float):
            return min(1.0, slowdown / n)
        assert isinstance(slowdown, tuple)
        return _interpolate(slowdown, n)

    def factors(self) -> tuple[float, ...]:
        """The rate factors with 1, 2, … ``slots`` sequences in service."""
        return tuple(self.factor(n) for n in range(1, self.slots + 1))

    def replace(self, **changes: Any) -> Capacity:
        """A copy with some fields changed (checked like the original)."""
        return replace(self, **changes)


def _slowdown(value: object) -> float | tuple[tuple[int, float], ...]:
    """``slowdown`` checked: a float ≥ 1, or points ``(n, factor)`` sorted by ``n``."""
    if isinstance(value, bool) or value is None:
        raise ArgumentTypeError(_SLOWDOWN_HELP + f", got {value!r:.40}")
    if not isinstance(value, str | bytes | Mapping | Sequence):
        return check_real(value, "slowdown", low=1, expected="a number ≥ 1, or (n, factor) points")
    if isinstance(value, str | bytes):
        raise ArgumentTypeError(_SLOWDOWN_HELP + f", got {value!r:.40}")
    pairs = list(value.items()) if isinstance(value, Mapping) else list(value)
    if not pairs:
        raise ArgumentError(_SLOWDOWN_HELP + ", got no points")
    points = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ArgumentTypeError(
                f"slowdown[{i}] must be a pair (n, factor), e.g. (8, 0.5), got {pair!r:.40}"
            )
        n = check_int(
            pair[0],
            f"slowdown[{i}] n",
            low=1,
            high=MAX_POINT_N,
            expected="an int from 1 to 2**53 (sequences)",
        )
        factor = check_real(
            pair[1], f"slowdown[{i}] factor", low=0, low_open=True, expected="a number > 0"
        )
        points.append((n, factor))
    points.sort()
    for (a, _), (b, _) in pairwise(points):
        if a == b:
            raise ArgumentError(f"slowdown gives two factors for n={a}; give one point per n")
    return tuple(points)


_SLOWDOWN_HELP = (
    "slowdown must be a number k ≥ 1 (processor sharing: factor min(1, k/n)) or (n, factor) "
    "points such as [(1, 1.0), (8, 0.5)]"
)


def _interpolate(points: tuple[tuple[int, float], ...], n: int) -> float:
    """The factor at ``n``: a point's own factor at its ``n`` (the formula would round a small
    factor after a large one to 0, a rate that never ends a call), else the straight line
    between its neighbours, kept between their factors."""
    if n <= points[0][0]:
        return points[0][1]
    for (n0, f0), (n1, f1) in pairwise(points):
        if n == n1:
            return f1
        if n < n1:
            value = f0 + (f1 - f0) * (n - n0) / (n1 - n0)
            return min(max(value, min(f0, f1)), max(f0, f1))
    return points[-1][1]


class Server:
    """One model's slots and queue during one run: the calls planned on it, each as its
    ``[service start, end]``, and the cancellations not yet in effect."""

    __slots__ = (
        "capacity",
        "factors",
        "held",
        "pending",
        "queue_limit",
        "queue_timeout_s",
        "slots",
    )

    def __init__(self, capacity: Capacity) -> None:
        self.capacity = capacity
        self.slots = capacity.slots
        # the rate factors with 1, 2, … sequences in service, made as a run first reaches each
        # count: never more than the calls in flight, however many slots (10**18: "unlimited")
        self.factors: list[float] = []
        self.queue_limit = math.inf if capacity.queue_limit is None else capacity.queue_limit
        self.queue_timeout_s = (
            math.inf if capacity.queue_timeout_s is None else capacity.queue_timeout_s
        )
        self.held: dict[Any, list[float]] = {}  # attempt → [service start, end], planning order
        self.pending: list[tuple[float, Any]] = []  # (instant, attempt): cancellations

    def _catch_up(self, now: float) -> None:
        """Put in effect the cancellations made before ``now``; forget the calls that ended."""
        held = self.held
        if self.pending:
            waiting = []
            for at, attempt in self.pending:
                if at >= now:  # at this very instant: in effect for later arrivals only
                    waiting.append((at, attempt))
                    continue
                span = held.get(attempt)
                if span is None:
                    continue
                if at <= span[0]:  # still queued: it leaves the queue
                    del held[attempt]
                elif at < span[1]:
                    span[1] = at
            self.pending = waiting
        ended = [attempt for attempt, span in held.items() if span[1] <= now]
        for attempt in ended:
            del held[attempt]

    def admit(self, now: float) -> tuple[float, float] | None:
        """When a call arriving at ``now`` starts service and its rate factor; None when it
        would have to queue and the queue is full."""
        self._catch_up(now)
        spans = self.held.values()
        begin = now  # FIFO: no earlier than any call planned before it
        queued = 0
        for start, _ in spans:
            if start > begin:
                begin = start
            if start > now:
                queued += 1
        # every call planned starts by ``begin``: those in service then are those ending after it
        ends = sorted(end for _, end in spans if end > begin)
        slots = self.slots
        busy = len(ends)
        start = begin if busy < slots else ends[busy - slots]
        if start > now and queued >= self.queue_limit:
            return None
        in_service = sum(1 for end in ends if end > start)
        factors = self.factors
        while len(factors) <= in_service:
            factors.append(self.capacity.factor(len(factors) + 1))
        return start, factors[in_service]

    def rejection(self, model: str) -> tuple[int, dict[str, Any]]:
        """The answer to a call that finds the queue full: a 503 (overloaded) or a 429."""
        return rejection(self.capacity, model)

    def hold(self, attempt: Any, start: float, end: float) -> None:
        """``attempt`` holds a slot from ``start`` to ``end``."""
        if end > start:
            self.held[attempt] = [start, end]

    def release(self, attempt: Any, now: float) -> float:
        """``attempt`` was cancelled at ``now``: its slot, or its place in the queue, is free for
        calls that arrive after ``now``. Its service start was recorded when it was planned
        (NaN: nothing to record anew)."""
        if attempt in self.held:
            self.pending.append((now, attempt))
        return NAN


def rejection(capacity: Capacity, model: str) -> tuple[int, dict[str, Any]]:
    """The answer to a call that finds a server's queue full: a 503 (overloaded) or a 429."""
    message = (
        f"{model} is overloaded: its {capacity.slots} slots are busy and its queue of "
        f"{capacity.queue_limit} calls is full. Please try again later."
    )
    kind = "requests" if capacity.reject_status == 429 else "server_error"
    error = {"message": message, "type": kind, "param": None, "code": "overloaded"}
    return capacity.reject_status, {"error": error}
