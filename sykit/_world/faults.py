"""What can go wrong at a simulated model: random faults per attempt (rate limits with Retry-After,
unavailability, timeouts, policy denials, invalid requests, resets, broken streams), scripted ones
(outages, the first N attempts, flapping), error statuses of one's own, and rate limits.

Frozen, keyword-only dataclasses checked on construction, like the rest of the configuration::

    sy.Faults(rate_limit=0.05, retry_after_s=2, unavailable=0.01, outages=[(60, 120)])
    sy.Faults.realistic()
    sy.faults.ErrorFault.capability(0.02)
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate
from typing import TYPE_CHECKING, Any, Literal

from sykit._base.checks import check_real
from sykit._base.error_bodies import error_object
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.dists import check_number, check_seconds
from sykit._world.values import (
    Replaceable,
    http_status,
    integer,
    probability,
    spelled,
    unavailable_status,
)

__all__ = [
    "LATER_RANDOM_FAULTS",
    "RANDOM_FAULTS",
    "RETRY_AFTER_SPELLINGS",
    "VIRTUAL_EPOCH",
    "VIRTUAL_EPOCH_S",
    "ErrorFault",
    "Faults",
    "Flapping",
    "RateLimit",
    "retry_after_headers",
]

#: How a Retry-After is spelt (``retry_after_as``): a number of seconds, or an HTTP-date.
RETRY_AFTER_SPELLINGS = ("seconds", "date")

#: The virtual wall clock of a simulated run: a date Retry-After and its ``Date`` header name
#: this instant plus the run's virtual seconds (``VIRTUAL_EPOCH_S`` as seconds since 1970).
VIRTUAL_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
VIRTUAL_EPOCH_S = int(VIRTUAL_EPOCH.timestamp())


def _check_retry_after(owner: str, retry_after_as: object, retry_after_ms: object) -> None:
    """Refuse a ``retry_after_as`` that is not a spelling, and a ``retry_after_ms`` that is not a
    number of milliseconds ≥ 0 (``owner`` prefixes the field's name in the message)."""
    if not isinstance(retry_after_as, str) or retry_after_as not in RETRY_AFTER_SPELLINGS:
        raise ArgumentError(
            f"{owner}retry_after_as must be one of {list(RETRY_AFTER_SPELLINGS)}, "
            f"got {retry_after_as!r}"
        )
    if retry_after_ms is not None:
        check_real(
            retry_after_ms,
            f"{owner}retry_after_ms",
            low=0,
            expected="a number of milliseconds ≥ 0 or None",
            type_error=ArgumentError,
        )


def retry_after_headers(
    retry_after_s: float | None,
    retry_after_as: str = "seconds",
    retry_after_ms: float | None = None,
    now_s: float | None = None,
) -> dict[str, str]:
    """The Retry-After headers of an answer that leaves at ``now_s`` (seconds since 1970; default
    the current time, only read for a date), written as the ``FakeProvider`` writes them
    (``sy.testing.FakeModel.retry_after_headers`` writes the same, with names in title case).

    ``"seconds"``: ``retry-after: <retry_after_s>``. ``"date"``: a ``date`` header, the whole
    second the answer leaves in, and ``retry-after``, the HTTP-date ``retry_after_s`` whole seconds
    later (a fraction is dropped: 2.7 s is 2 s after the ``Date``, 0.5 s is the ``Date`` itself).
    ``retry_after_ms`` adds ``retry-after-ms`` (alone when ``retry_after_s`` is None)."""
    headers: dict[str, str] = {}
    if retry_after_s is not None:
        if retry_after_as == "date":
            sent = math.floor(time.time() if now_s is None else now_s)
            headers["date"] = formatdate(sent, usegmt=True)
            headers["retry-after"] = formatdate(sent + math.floor(retry_after_s), usegmt=True)
        else:
            headers["retry-after"] = f"{retry_after_s:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    return headers


@spelled
@dataclass(frozen=True, kw_only=True)
class Flapping(Replaceable):
    """A target that alternates ``up_s`` seconds up and ``down_s`` seconds down, from ``start_s``
    until ``until_s``; while down every attempt answers ``status``."""

    up_s: float
    down_s: float
    start_s: float = 0.0
    until_s: float = math.inf
    status: int = 503

    def __post_init__(self) -> None:
        check_number(self.up_s, "up_s", low_open=True)
        check_number(self.down_s, "down_s", low_open=True)
        check_number(self.start_s, "start_s")
        check_number(self.until_s, "until_s", allow_inf=True)  # inf: flaps for the whole run
        http_status(self.status, "status", "429, 403, 408 or 5xx", _flapping_status)
        if self.until_s < self.start_s:
            raise ArgumentError(f"until_s ({self.until_s}) must be ≥ start_s ({self.start_s})")

    def is_down(self, t: float) -> bool:
        if t < self.start_s or t >= self.until_s:
            return False
        return (t - self.start_s) % (self.up_s + self.down_s) >= self.up_s


def _flapping_status(status: int) -> bool:
    return status == 429 or unavailable_status(status)


#: The per-attempt random faults, in the order a keyed uniform is partitioned among them.
RANDOM_FAULTS = (
    "rate_limit",
    "unavailable",
    "timeout",
    "policy",
    "invalid",
    "reset",
    "cut_stream",
    "malformed",
)


#: The random faults drawn after ``RANDOM_FAULTS`` (then each of ``Faults.errors``), so that
#: adding them leaves every draw of the faults above where it was.
LATER_RANDOM_FAULTS = ("non_chat",)


@spelled
@dataclass(frozen=True)
class ErrorFault(Replaceable):
    """A random fault that answers ``status`` (400–599) with an OpenAI-style error body, with
    probability ``p`` per attempt: one entry of ``sy.Faults(errors=[...])``.

    ``message``, ``type`` and ``code`` are the body's ``error`` fields; each left None takes the
    status's realistic default (401 ``invalid_api_key``, 402 ``insufficient_quota``, 404
    ``model_not_found``, 408 ``request_timeout``, 422 ``unprocessable_entity``, ...; a 400 with
    ``code="content_policy_violation"`` or ``"context_length_exceeded"`` gets that code's wording).
    ``{model}`` in a message is replaced by the model's name. ``retry_after_s`` sends a
    ``Retry-After`` header, spelt as ``retry_after_as`` says (``"seconds"`` or ``"date"``, an
    HTTP-date with a ``Date`` header, as :class:`Faults` describes), and ``retry_after_ms`` adds
    OpenAI's ``retry-after-ms`` (alone when ``retry_after_s`` is None). The answer is classified
    like any other (``sy.errors.classify``): the text decides what a 400 is.

        sy.faults.ErrorFault(401, 0.01)                  # a revoked key, 1% of attempts
        sy.faults.ErrorFault(404, 0.05, message="No endpoints found for {model}.")
        sy.faults.ErrorFault.capability(0.1)             # 400 "does not support image input"
        sy.faults.ErrorFault.policy(0.02), sy.faults.ErrorFault.context_window(0.02)
    """

    status: int
    p: float
    _: KW_ONLY
    message: str | None = None
    type: str | None = None
    code: str | None = None
    retry_after_s: float | None = None
    retry_after_as: str = "seconds"
    retry_after_ms: float | None = None

    def __post_init__(self) -> None:
        http_status(self.status, "ErrorFault status", "400-599", lambda s: 400 <= s <= 599)
        probability(self.p, "ErrorFault p")
        for name in ("message", "type", "code"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ArgumentTypeError(
                    f"ErrorFault {name} must be a string or None, got {type(value).__name__} "
                    f"{value!r:.40}"
                )
            if value == "":
                raise ArgumentError(f"ErrorFault {name} must not be empty (None for the default)")
        if self.retry_after_s is not None:
            check_seconds(self.retry_after_s, "ErrorFault retry_after_s")
        _check_retry_after("ErrorFault ", self.retry_after_as, self.retry_after_ms)

    @classmethod
    def policy(cls, p: float, **fields: Any) -> ErrorFault:
        """A 400 ``content_policy_violation``: the request was refused by a safety system."""
        return cls(400, p, **{"code": "content_policy_violation", **fields})

    @classmethod
    def capability(cls, p: float, **fields: Any) -> ErrorFault:
        """A 400 saying the model does not support image input (a capability rejection)."""
        return cls(400, p, **{"message": "{model} does not support image input.", **fields})

    @classmethod
    def context_window(cls, p: float, **fields: Any) -> ErrorFault:
        """A 400 ``context_length_exceeded``: the request is longer than the model's window."""
        return cls(400, p, **{"code": "context_length_exceeded", **fields})

    def error(self, model: str) -> dict[str, Any]:
        """The ``error`` object of the body, defaults filled in, for ``model``."""
        return error_object(
            self.status, model, message=self.message, type_=self.type, code=self.code
        )

    def body(self, model: str) -> dict[str, Any]:
        """The JSON body the provider sends: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": self.error(model)}

    def headers(self, now_s: float | None = None) -> dict[str, str]:
        """The response headers: its Retry-After headers, as :func:`retry_after_headers` writes them.

        ``retry-after`` when ``retry_after_s`` is set (with ``date`` when it is a date: the answer
        leaves at ``now_s``, seconds since 1970, default the current time; a ``SimHost`` gives its
        virtual wall clock), ``retry-after-ms`` when ``retry_after_ms`` is."""
        return retry_after_headers(
            self.retry_after_s, self.retry_after_as, self.retry_after_ms, now_s
        )


@spelled
@dataclass(frozen=True, kw_only=True)
class Faults(Replaceable):
    """How a simulated target fails, beyond the structural 400s every profile has.

    Random, per attempt (probabilities, together at most 1): ``rate_limit`` (429 with
    ``retry_after_s``), ``unavailable`` (``unavailable_status``, 503 by default), ``timeout`` (no
    answer until the client deadline), ``policy`` (400 content_policy_violation), ``invalid``
    (plain 400), ``reset`` (the connection drops: a transport failure), ``cut_stream`` (the answer
    stops after two thirds of its tokens: a 502), ``malformed`` (a 200 whose body cannot be
    parsed), ``non_chat`` (a 200 whose body is valid JSON but not a chat completion, such as
    ``{"object": "list", ...}``: an ``invalid_response``), and ``errors``, a list of
    :class:`ErrorFault` (any status 400–599 with its OpenAI-style body and text: 401, 402, 404,
    422, a 400 whose wording makes it a policy, capability or context-window rejection, ...). The
    faults are drawn in that order from one keyed uniform, so adding a later one leaves the draws of
    the earlier ones as they were. ``spike_p``: with this probability the latency is multiplied by ``spike_factor``.
    ``stall_p``: with this probability the answer pauses for ``stall_s`` seconds half-way through
    its tokens (a streamed reader sees the gap; the whole answer ends that much later).
    ``break_after_tokens`` moves a ``cut_stream`` or ``malformed`` fault: the answer breaks after
    that many good tokens (by default a cut comes after two thirds of them and a malformed chunk
    first, before any token).

    Scripted: ``outages`` are ``[t0, t1)`` windows of virtual time in which every attempt answers
    503; ``fail_first`` fails the first N attempts at this model in a run with ``fail_first_status``
    (429 or 5xx like Switchyard's soak mock, or ``"timeout"`` / ``"reset"``); ``flapping``
    alternates up and down periods.

    Retry-After (on a ``rate_limit`` and a ``fail_first`` 429) is spelt as ``retry_after_as`` says,
    like ``sy.testing.FakeModel``'s: ``"seconds"`` (``Retry-After: 2``, the default) or ``"date"``,
    an HTTP-date with a ``Date`` header on the run's virtual wall clock: ``VIRTUAL_EPOCH``
    (2025-01-01 00:00:00 UTC) plus the virtual seconds, so a run gives the same headers every
    time. HTTP-dates are whole seconds: the ``Date`` is the second the answer leaves in (its
    virtual time rounded down) and the ``Retry-After`` ``retry_after_s`` whole seconds after it (a
    fraction dropped, as the ``FakeProvider`` drops it: 2.5 is 2 s, 0.5 is the ``Date`` itself).
    A reader of the ``Date`` (sykit's own retries) waits exactly those whole seconds; a reader of
    its own clock (LiteLLM) sees the date a fraction of a second nearer, by how far into its
    second the answer left. ``retry_after_ms`` adds OpenAI's ``retry-after-ms`` header (sykit's
    retries read it first, LiteLLM never); with ``retry_after_s=None`` it is the only one.

        sy.Faults(rate_limit=0.05, retry_after_s=2.0)       # 5% of attempts get 429, Retry-After 2
        sy.Faults(rate_limit=0.05, retry_after_s=2, retry_after_as="date")  # an HTTP-date 2 s on
        sy.Faults(rate_limit=0.05, retry_after_s=None, retry_after_ms=1500)  # retry-after-ms alone
        sy.Faults(fail_first=2, fail_first_status=500)      # the soak mock's "upstream_500" marker
        sy.Faults(outages=[(60, 120)], spike_p=0.01, spike_factor=20)
        sy.Faults(errors=[sy.faults.ErrorFault(401, 0.01), sy.faults.ErrorFault.capability(0.05)],
                  non_chat=0.01)
    """

    rate_limit: float = 0.0
    retry_after_s: float | None = 1.0
    retry_after_as: str = "seconds"
    retry_after_ms: float | None = None
    unavailable: float = 0.0
    unavailable_status: int = 503
    timeout: float = 0.0
    policy: float = 0.0
    invalid: float = 0.0
    reset: float = 0.0
    cut_stream: float = 0.0
    malformed: float = 0.0
    non_chat: float = 0.0
    errors: Sequence[ErrorFault] = ()
    spike_p: float = 0.0
    spike_factor: float = 10.0
    stall_p: float = 0.0
    stall_s: float = 30.0
    break_after_tokens: int | None = None
    outages: Sequence[tuple[float, float]] = ()
    fail_first: int = 0
    fail_first_status: int | Literal["timeout", "reset"] = 429
    flapping: Flapping | None = None
    if TYPE_CHECKING:  # set by __post_init__, for the host's fast path
        random_total: float = field(init=False, repr=False, compare=False)
        scripted: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        total = 0.0  # kept as self.random_total, with self.scripted, for the host's fast path
        for name in RANDOM_FAULTS + LATER_RANDOM_FAULTS:
            total += probability(getattr(self, name), name)
        if isinstance(self.errors, ErrorFault | str | bytes | Mapping):
            raise ArgumentTypeError(
                f"errors must be a list of sy.faults.ErrorFault, got {type(self.errors).__name__} "
                f"{self.errors!r:.60}"
            )
        if not isinstance(self.errors, Iterable):
            raise ArgumentTypeError(
                f"errors must be a list of sy.faults.ErrorFault, got {type(self.errors).__name__}"
            )
        errors = tuple(self.errors)
        for i, error in enumerate(errors):
            if not isinstance(error, ErrorFault):
                raise ArgumentTypeError(
                    f"errors[{i}] must be a sy.faults.ErrorFault(status, p), got "
                    f"{type(error).__name__} {error!r:.40}"
                )
            total += error.p
        object.__setattr__(self, "errors", errors)
        if total > 1.0 + 1e-12:
            names = " + ".join(RANDOM_FAULTS + LATER_RANDOM_FAULTS)
            raise ArgumentError(f"{names} + the errors' p must be ≤ 1, got {total:g}")
        if self.retry_after_s is not None:
            check_seconds(self.retry_after_s, "retry_after_s")
        _check_retry_after("", self.retry_after_as, self.retry_after_ms)
        http_status(self.unavailable_status, "unavailable_status", "5xx, 403 or 408",
                     unavailable_status)  # fmt: skip
        probability(self.spike_p, "spike_p")
        check_number(self.spike_factor, "spike_factor", low=1.0)
        probability(self.stall_p, "stall_p")
        check_seconds(self.stall_s, "stall_s")
        if self.break_after_tokens is not None:
            integer(self.break_after_tokens, "break_after_tokens")
        if isinstance(self.outages, str | bytes | Mapping) or not isinstance(
            self.outages, Iterable
        ):
            raise ArgumentTypeError(
                "outages must be a list of (start_s, end_s) pairs, got "
                f"{type(self.outages).__name__} {self.outages!r:.40}"
            )
        windows = []
        for i, window in enumerate(self.outages):
            if isinstance(window, str | bytes):
                raise ArgumentTypeError(
                    f"outages[{i}] must be a (start_s, end_s) pair, got {window!r}"
                )
            try:
                t0, t1 = window
            except (TypeError, ValueError):
                raise ArgumentTypeError(
                    f"outages[{i}] must be a (start_s, end_s) pair, got {window!r}"
                ) from None
            check_number(t0, f"outages[{i}] start")
            check_number(t1, f"outages[{i}] end", allow_inf=True)  # inf: never recovers
            if t1 <= t0:
                raise ArgumentError(f"outages[{i}] ends ({t1}) before it starts ({t0})")
            windows.append((float(t0), float(t1)))
        object.__setattr__(self, "outages", tuple(windows))
        integer(self.fail_first, "fail_first")
        status = self.fail_first_status
        if isinstance(status, str):
            if status not in ("timeout", "reset"):
                raise ArgumentError(
                    f"fail_first_status must be an int HTTP status (429 or 5xx), 'timeout' or "
                    f"'reset', got {status!r}"
                )
        else:
            http_status(status, "fail_first_status", "429 or 5xx, or 'timeout' / 'reset'",
                         lambda s: s == 429 or 500 <= s <= 599)  # fmt: skip
        if self.flapping is not None and not isinstance(self.flapping, Flapping):
            raise ArgumentTypeError("flapping must be a sy.faults.Flapping(up_s=..., down_s=...)")
        object.__setattr__(self, "random_total", total)
        scripted = bool(self.outages) or self.flapping is not None or self.fail_first > 0
        object.__setattr__(self, "scripted", scripted)

    @classmethod
    def realistic(cls, **changes: Any) -> Faults:
        """A fault profile in the range public APIs show on a normal day: 2% rate limits
        (Retry-After 1 s), 1% server errors, 0.2% connection resets, 0.2% hangs until the client
        deadline, and 2% of answers ten times slower than usual. Override any field:
        ``sy.Faults.realistic(rate_limit=0.1)``."""
        settings: dict[str, Any] = {
            "rate_limit": 0.02,
            "retry_after_s": 1.0,
            "unavailable": 0.01,
            "reset": 0.002,
            "timeout": 0.002,
            "spike_p": 0.02,
            "spike_factor": 10.0,
        }
        settings.update(changes)
        return cls(**settings)

    def in_outage(self, t: float) -> bool:
        return any(t0 <= t < t1 for t0, t1 in self.outages)

    def retry_after_headers(self, now_s: float | None = None) -> dict[str, str]:
        """The Retry-After headers of a ``rate_limit`` or ``fail_first`` 429.

        The answer leaves at ``now_s`` (seconds since 1970; read only for a date, default the
        current time): see :func:`retry_after_headers`."""
        return retry_after_headers(
            self.retry_after_s, self.retry_after_as, self.retry_after_ms, now_s
        )


@spelled
@dataclass(frozen=True, kw_only=True)
class RateLimit(Replaceable):
    """A provider quota as token buckets, per model and run: ``requests_per_min`` and/or
    ``tokens_per_min`` (input plus requested output). Over quota, the target answers 429 with a
    truthful Retry-After: the time until the bucket holds enough again.

    ``retry_after_as`` spells it: ``"seconds"`` (``Retry-After: 0.734``, the wait rounded up to
    the millisecond) or ``"date"``, the HTTP-date of the first whole second of the virtual wall
    clock (see :class:`Faults`) at which the bucket holds enough, with a ``Date`` header (the
    second the answer leaves in): never earlier than the truth, so a reader of the ``Date`` may
    wait up to two seconds more than the seconds spelling asks. ``retry_after_ms=True`` adds
    OpenAI's ``retry-after-ms``: the wait in whole milliseconds, rounded up."""

    requests_per_min: float | None = None
    tokens_per_min: float | None = None
    retry_after_as: str = "seconds"
    retry_after_ms: bool = False

    def __post_init__(self) -> None:
        if self.requests_per_min is None and self.tokens_per_min is None:
            raise ArgumentError("RateLimit needs requests_per_min and/or tokens_per_min")
        _check_retry_after("RateLimit ", self.retry_after_as, None)
        if not isinstance(self.retry_after_ms, bool):
            raise ArgumentError(
                "RateLimit retry_after_ms must be True or False (True adds retry-after-ms: the "
                f"truthful wait in milliseconds), got {self.retry_after_ms!r}"
            )
        if self.requests_per_min is not None:
            check_number(self.requests_per_min, "requests_per_min", low_open=True)
        if self.tokens_per_min is not None:
            check_number(self.tokens_per_min, "tokens_per_min", low_open=True)
