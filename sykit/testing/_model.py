"""``FakeModel``: the configuration of one fake model (latency, output length, fault, limits).

Kept apart from the server so that the server module is only about serving: a ``FakeModel`` is a
frozen value checked once at construction, and everything the server draws from it per request
goes through the distributions it holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.capacity import Capacity
from sykit._world.dists import Distribution, as_distribution, check_number
from sykit._world.faults import (
    RETRY_AFTER_SPELLINGS,
    ErrorFault,
    Flapping,
    retry_after_headers,
)
from sykit.testing._faults import ERROR_FAULT, parse_fault

if TYPE_CHECKING:
    from sykit._base.types import Converted, converted

__all__ = ["FakeModel"]

#: How the test server spells the headers of :func:`~sykit._world.faults.retry_after_headers`
#: on the wire (HTTP reads names in any case).
_WIRE_NAMES = {"retry-after": "Retry-After", "date": "Date"}


@dataclass(frozen=True, kw_only=True)
class FakeModel:
    """How one fake model answers.

    Latency follows the simulated host's rule: the first token after ``ttft_s``, then one token
    every ``1 / tokens_per_s`` s, the answer complete at ``ttft_s + output_tokens / tokens_per_s``.
    Each may be a number or a distribution (``sy.dists.LogNormal(0.05, p95=0.2)``), drawn per
    request from the provider's seed. ``fault`` is a name from :data:`FAULTS` (with ``-once`` /
    ``-x<N>``), or a :class:`sykit.faults.ErrorFault`: that status with its body and headers, as a
    ``SimHost`` sends it, for a share ``p`` of the requests (drawn per model and request number from
    the provider's seed; ``p=1`` fails every one). ``error-<status>`` is ``ErrorFault(status, 1)``.
    A ``fail-<status>`` answer whose status is in ``retry_after_statuses`` carries
    ``Retry-After: retry_after_s`` (by default only a 429 does; add 503 or 529 to test a client
    against a provider that asks for a pause while it is overloaded). ``retry_after_as`` spells
    it: ``"seconds"`` (``Retry-After: 2``) or ``"date"``, an HTTP-date ``retry_after_s`` after the
    response's ``Date`` header (both in whole seconds, so a reader of the ``Date`` gets exactly
    ``retry_after_s``; such an answer leaves in the first 0.9 s of a second, so a client that
    measures the date against its own clock and truncates, as LiteLLM does, reads a whole
    ``retry_after_s`` as one second less every time). ``retry_after_ms`` adds OpenAI's
    ``retry-after-ms`` header (milliseconds) to the same answers; with ``retry_after_s=None`` it
    is sent alone. ``vision=False`` rejects images with a capability 400, ``context_window`` rejects longer
    requests with an overflow 400. ``verdict`` fixes decision answers by question id (default:
    ``true``, the first option, the highest level). ``reject_json_schema`` is the status (400–599)
    with which the model refuses ``response_format: json_schema``, as llama.cpp's server does
    ("Input should be 'text' or 'json_object'", a 500 or a 400 depending on the build), and
    ``reject_tools`` the status with which it refuses ``tools``; None accepts them.

    ``prefill=False`` refuses (400) a conversation that ends with the assistant's message, a
    partial answer to continue, as some providers do. ``fault_after_tokens`` is where a streamed
    ``cut-stream`` or ``malformed-chunk`` breaks the answer (default: half-way, after two tokens).
    ``outages`` (``[t0, t1)`` windows, answered 503) and ``flapping`` (a
    :class:`sykit.faults.Flapping`) make the model down by time, like ``sy.Faults``: seconds since
    the run's first request to the provider (per ``X-Sykit-Run``, like the fault counters). Their
    answers carry Retry-After as ``fail-<status>`` does.

    ``capacity`` (a :class:`sykit.Capacity`) makes the model a server under load, in real time:
    ``slots`` requests served at once, the others queued FIFO (the time to first token counts the
    wait), ``queue_limit`` waiting at most (one more is answered ``reject_status``, with
    Retry-After when that status is in ``retry_after_statuses``), and each of the ``n`` in
    service decoding at ``slowdown``'s factor for ``n`` times its drawn ``tokens_per_s``,
    re-timed as ``n`` changes (true processor sharing; the first token's delay is not slowed).
    The slots are the model's, shared by every run and client. ``queue_timeout_s`` is not
    supported: a client's own timeout ends a wait.
    """

    if TYPE_CHECKING:  # __post_init__ makes these three distributions
        ttft_s: Converted[float | Distribution, Distribution] = converted(0.01)
        tokens_per_s: Converted[float | Distribution, Distribution] = converted(2000.0)
        output_tokens: Converted[int | Distribution, Distribution] = converted(16)
    else:
        ttft_s: float | Distribution = 0.01
        tokens_per_s: float | Distribution = 2000.0
        output_tokens: int | Distribution = 16
    fault: str | ErrorFault | None = None
    retry_after_s: float | None = 0.05
    retry_after_statuses: tuple[int, ...] = (429,)
    retry_after_as: str = "seconds"
    retry_after_ms: float | None = None
    vision: bool = True
    context_window: int | None = None
    verdict: Mapping[str, Any] = field(default_factory=dict)
    reject_json_schema: int | None = None
    reject_tools: int | None = None
    prefill: bool = True
    fault_after_tokens: int | None = None
    outages: Sequence[tuple[float, float]] = ()
    flapping: Flapping | None = None
    capacity: Capacity | None = None
    if TYPE_CHECKING:  # set by __post_init__ from ``fault``
        _fault: str | None = field(init=False, repr=False, compare=False)
        _fault_times: int | None = field(init=False, repr=False, compare=False)
        _error: ErrorFault | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ttft_s", as_distribution(self.ttft_s, "ttft_s"))
        tps = as_distribution(self.tokens_per_s, "tokens_per_s")
        if tps.quantile(0.5) <= 0:
            raise ArgumentError("tokens_per_s must be > 0")
        object.__setattr__(self, "tokens_per_s", tps)
        object.__setattr__(
            self, "output_tokens", as_distribution(self.output_tokens, "output_tokens")
        )
        error = None
        fault: str | None
        if isinstance(self.fault, ErrorFault):
            error = self.fault
            fault, times = f"error-{error.status}", None
        else:
            fault, times = parse_fault(self.fault, "fault")
            named = ERROR_FAULT.match(fault or "")
            if named:
                error = ErrorFault(int(named["status"]), 1.0)
        object.__setattr__(self, "_fault", fault)
        object.__setattr__(self, "_fault_times", times)
        object.__setattr__(self, "_error", error)
        if self.retry_after_s is not None:
            check_real(
                self.retry_after_s,
                "retry_after_s",
                low=0,
                allow_inf=True,
                expected="a number ≥ 0 or None",
                type_error=ArgumentError,
            )
        if self.retry_after_as not in RETRY_AFTER_SPELLINGS:
            raise ArgumentError(
                f"retry_after_as must be one of {list(RETRY_AFTER_SPELLINGS)}, "
                f"got {self.retry_after_as!r}"
            )
        if self.retry_after_ms is not None:
            check_real(
                self.retry_after_ms,
                "retry_after_ms",
                low=0,
                expected="a number of milliseconds ≥ 0 or None",
                type_error=ArgumentError,
            )
        statuses = self.retry_after_statuses
        if (
            isinstance(statuses, str | bytes)
            or not isinstance(statuses, tuple | list | frozenset | set)
            or not all(type(x) is int and 100 <= x <= 599 for x in statuses)
        ):
            raise ArgumentError(
                f"retry_after_statuses must be a tuple of HTTP statuses, got {statuses!r}"
            )
        object.__setattr__(self, "retry_after_statuses", tuple(statuses))
        if self.context_window is not None:
            check_int(
                self.context_window,
                "context_window",
                low=1,
                expected="an int > 0 or None",
                type_error=ArgumentError,
            )
        if not isinstance(self.verdict, Mapping):
            raise ArgumentTypeError("verdict must be a dict of question id → answer")
        for name in ("reject_json_schema", "reject_tools"):
            status = getattr(self, name)
            if status is not None:
                check_int(
                    status,
                    name,
                    low=400,
                    high=599,
                    expected="an HTTP error status (400-599) or None",
                    type_error=ArgumentError,
                    kind="an HTTP error status",
                )
        if not isinstance(self.prefill, bool):
            raise ArgumentTypeError(f"prefill must be True or False, got {self.prefill!r}")
        after = self.fault_after_tokens
        if after is not None:
            check_int(
                after,
                "fault_after_tokens",
                low=0,
                expected="an int ≥ 0 or None",
                type_error=ArgumentError,
            )
        object.__setattr__(self, "outages", _windows(self.outages))
        if self.flapping is not None and not isinstance(self.flapping, Flapping):
            raise ArgumentTypeError(
                "flapping must be a sy.faults.Flapping(up_s=..., down_s=...) or None"
            )
        if self.capacity is not None:
            if not isinstance(self.capacity, Capacity):
                raise ArgumentTypeError(
                    "capacity must be a sy.Capacity(slots=..., slowdown=...) or None, "
                    f"got {type(self.capacity).__name__}"
                )
            if self.capacity.queue_timeout_s is not None:
                raise ArgumentError(
                    "a FakeModel's capacity cannot time out its queue (queue_timeout_s="
                    f"{self.capacity.queue_timeout_s:g}): leave it None and give the client a "
                    "timeout (sy.HttpHost(timeout_s=...))"
                )

    def retry_after_headers(self, now: float) -> dict[str, str]:
        """The Retry-After headers of an answer sent at ``now`` (seconds since the epoch), with the
        ``Date`` header a date is measured from; empty when the model sends none."""
        finite = self.retry_after_s is not None and math.isfinite(self.retry_after_s)
        spelling = self.retry_after_as if finite else "seconds"  # no date is infinitely far
        headers = retry_after_headers(self.retry_after_s, spelling, self.retry_after_ms, now)
        return {_WIRE_NAMES.get(name, name): value for name, value in headers.items()}

    def down_status(self, t: float) -> int | None:
        """The status a request gets ``t`` s into the run while an outage or flapping has the model
        down, else None."""
        if any(t0 <= t < t1 for t0, t1 in self.outages):
            return 503
        if self.flapping is not None and self.flapping.is_down(t):
            return self.flapping.status
        return None


def _windows(value: object) -> tuple[tuple[float, float], ...]:
    """``outages`` as checked ``(start_s, end_s)`` float pairs."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"outages must be a list of (start_s, end_s) pairs, got {value!r}")
    windows = []
    for i, window in enumerate(value):
        if isinstance(window, str | bytes) or not isinstance(window, Sequence) or len(window) != 2:
            raise ArgumentTypeError(f"outages[{i}] must be a (start_s, end_s) pair, got {window!r}")
        t0 = check_number(window[0], f"outages[{i}] start")
        t1 = check_number(window[1], f"outages[{i}] end", allow_inf=True)
        if not t1 > t0:
            raise ArgumentError(f"outages[{i}] ends ({t1}) before it starts ({t0})")
        windows.append((t0, t1))
    return tuple(windows)
