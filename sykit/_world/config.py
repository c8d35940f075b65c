"""Immutable configuration: model profiles, faults, the judge, host policy and arrivals.

Every class here is a frozen, keyword-only dataclass that checks its fields on construction and names
the field in its error, so a typo in a notebook fails at the line that made it::

    sy.ModelProfile(price_in=0.15, price_out=0.60)                       # a cheap text model
    sy.ModelProfile(price_in=2.5, price_out=10, vision=True,
                    latency=sy.Latency(ttft=sy.dists.LogNormal(0.6, p95=2.0), tokens_per_s=80))
    sy.HostPolicy(max_retries=0, cooldown_s=30, allow_policy_fallback=True)
    sy.Faults(rate_limit=0.05, retry_after_s=2, unavailable=0.01, outages=[(60, 120)])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sykit._base.checks import check_int, check_real
from sykit._base.error_bodies import ERROR_DEFAULTS as ERROR_DEFAULTS
from sykit._base.error_bodies import error_object
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.capacity import Capacity
from sykit._world.classify import FallbackReason
from sykit._world.dists import U_LOW, Distribution, LogNormal, as_distribution, check_number
from sykit._world.prompt_cache import TIERS

if TYPE_CHECKING:
    from sykit._base.types import Converted, converted

__all__ = [
    "ErrorFault",
    "Faults",
    "Flapping",
    "HostPolicy",
    "Judge",
    "Latency",
    "ModelProfile",
    "Poisson",
    "RateLimit",
]


def _probability(value: Any, name: str) -> float:
    return check_number(value, name, low=0.0, high=1.0)


def _int(value: Any, name: str, *, low: int = 0, high: int | None = None) -> int:
    """``value`` if it is an int in range: a float (even ``3.0``), a bool or a string is refused."""
    return check_int(value, name, low=low, high=high)


def _flag(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r:.40}")


def _http_status(value: Any, name: str, allowed: str, ok: Callable[[int], bool]) -> int:
    """An int HTTP status accepted by ``ok``; ``"503"`` or ``503.0`` is a type error, not a 503."""
    value = check_int(value, name, expected=f"an int HTTP status ({allowed})")
    if not ok(value):
        raise ArgumentError(f"{name} must be an int HTTP status ({allowed}), got {value}")
    return value


def _unavailable_status(status: int) -> bool:
    return 500 <= status <= 599 or status in (403, 408)


class _Replaceable:
    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (checked like the original)."""
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class Latency(_Replaceable):
    """Time to first token plus output tokens over tokens per second.

    ``prefill_tokens_per_s``, when given, is how fast the model reads the prompt: the time to
    first token is then the ``ttft`` draw plus ``input_tokens / prefill_tokens_per_s``, so long
    prompts answer later (``sy.profiles.fit`` estimates it from measurements that vary in length).

    sy.Latency(ttft=0.4, tokens_per_s=60)
    sy.Latency(ttft=sy.dists.LogNormal(0.8, p95=2.5), tokens_per_s=sy.dists.Uniform(40, 90))
    sy.Latency(ttft=0.2, tokens_per_s=80, prefill_tokens_per_s=5_000)
    """

    if TYPE_CHECKING:  # __post_init__ makes both distributions
        ttft: Converted[float | Distribution, Distribution] = converted(0.5)
        tokens_per_s: Converted[float | Distribution, Distribution] = converted(50.0)
    else:
        ttft: float | Distribution = 0.5
        tokens_per_s: float | Distribution = 50.0
    prefill_tokens_per_s: float | None = None

    def __post_init__(self) -> None:
        if self.prefill_tokens_per_s is not None:
            check_number(self.prefill_tokens_per_s, "prefill_tokens_per_s", low_open=True)
        object.__setattr__(self, "ttft", as_distribution(self.ttft, "ttft"))
        tps = as_distribution(self.tokens_per_s, "tokens_per_s")
        if not tps.quantile(U_LOW) > 0:  # the slowest draw divides the output tokens
            raise ArgumentError(f"tokens_per_s must be > 0 at every draw, got {tps!r}")
        object.__setattr__(self, "tokens_per_s", tps)


@dataclass(frozen=True, kw_only=True)
class Flapping(_Replaceable):
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
        _http_status(self.status, "status", "429, 403, 408 or 5xx", _flapping_status)
        if self.until_s < self.start_s:
            raise ArgumentError(f"until_s ({self.until_s}) must be ≥ start_s ({self.start_s})")

    def is_down(self, t: float) -> bool:
        if t < self.start_s or t >= self.until_s:
            return False
        return (t - self.start_s) % (self.up_s + self.down_s) >= self.up_s


def _flapping_status(status: int) -> bool:
    return status == 429 or _unavailable_status(status)


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


@dataclass(frozen=True)
class ErrorFault(_Replaceable):
    """A random fault that answers ``status`` (400–599) with an OpenAI-style error body, with
    probability ``p`` per attempt: one entry of ``sy.Faults(errors=[...])``.

    ``message``, ``type`` and ``code`` are the body's ``error`` fields; each left None takes the
    status's realistic default (401 ``invalid_api_key``, 402 ``insufficient_quota``, 404
    ``model_not_found``, 408 ``request_timeout``, 422 ``unprocessable_entity``, ...; a 400 with
    ``code="content_policy_violation"`` or ``"context_length_exceeded"`` gets that code's wording).
    ``{model}`` in a message is replaced by the model's name. ``retry_after_s`` sends a
    ``Retry-After`` header. The answer is classified like any other (``sy.errors.classify``): the
    text decides what a 400 is.

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

    def __post_init__(self) -> None:
        _http_status(self.status, "ErrorFault status", "400-599", lambda s: 400 <= s <= 599)
        _probability(self.p, "ErrorFault p")
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
            check_number(self.retry_after_s, "ErrorFault retry_after_s")

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

    def headers(self) -> dict[str, str]:
        """The response headers: ``retry-after`` when ``retry_after_s`` is set."""
        return {} if self.retry_after_s is None else {"retry-after": f"{self.retry_after_s:g}"}


@dataclass(frozen=True, kw_only=True)
class Faults(_Replaceable):
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

        sy.Faults(rate_limit=0.05, retry_after_s=2.0)       # 5% of attempts get 429, Retry-After 2
        sy.Faults(fail_first=2, fail_first_status=500)      # the soak mock's "upstream_500" marker
        sy.Faults(outages=[(60, 120)], spike_p=0.01, spike_factor=20)
        sy.Faults(errors=[sy.faults.ErrorFault(401, 0.01), sy.faults.ErrorFault.capability(0.05)],
                  non_chat=0.01)
    """

    rate_limit: float = 0.0
    retry_after_s: float | None = 1.0
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
            total += _probability(getattr(self, name), name)
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
            check_number(self.retry_after_s, "retry_after_s")
        _http_status(self.unavailable_status, "unavailable_status", "5xx, 403 or 408",
                     _unavailable_status)  # fmt: skip
        _probability(self.spike_p, "spike_p")
        check_number(self.spike_factor, "spike_factor", low=1.0)
        _probability(self.stall_p, "stall_p")
        check_number(self.stall_s, "stall_s")
        if self.break_after_tokens is not None:
            _int(self.break_after_tokens, "break_after_tokens")
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
        _int(self.fail_first, "fail_first")
        status = self.fail_first_status
        if isinstance(status, str):
            if status not in ("timeout", "reset"):
                raise ArgumentError(
                    f"fail_first_status must be an int HTTP status (429 or 5xx), 'timeout' or "
                    f"'reset', got {status!r}"
                )
        else:
            _http_status(status, "fail_first_status", "429 or 5xx, or 'timeout' / 'reset'",
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


@dataclass(frozen=True, kw_only=True)
class RateLimit(_Replaceable):
    """A provider quota as token buckets, per model and run: ``requests_per_min`` and/or
    ``tokens_per_min`` (input plus requested output). Over quota, the target answers 429 with a
    truthful Retry-After: the time until the bucket holds enough again."""

    requests_per_min: float | None = None
    tokens_per_min: float | None = None

    def __post_init__(self) -> None:
        if self.requests_per_min is None and self.tokens_per_min is None:
            raise ArgumentError("RateLimit needs requests_per_min and/or tokens_per_min")
        if self.requests_per_min is not None:
            check_number(self.requests_per_min, "requests_per_min", low_open=True)
        if self.tokens_per_min is not None:
            check_number(self.tokens_per_min, "tokens_per_min", low_open=True)


@dataclass(frozen=True, kw_only=True)
class PromptCache(_Replaceable):
    """A model's prompt cache (prices in USD per 1M tokens).

    Within a session — an agent session (:class:`sy.sessions.Session`), or any requests whose
    metadata share a ``session_id``, such as ``sy.datasets.synthetic(sessions=k)``'s conversations —
    a prompt that starts with the prompt this model saw on an earlier request of the session reads
    that prefix from the cache at ``read_price``
    — if the entry is younger than ``ttl_s`` (a hit refreshes it) and at least ``min_tokens``
    long — and the rest is written at ``write_price`` (``None``: the plain input price, no
    surcharge, as OpenAI bills; Anthropic charges 1.25× for a 5-minute cache). The cache is per
    model and per session, so a session that switches models pays the cold prefix again. A
    turn's prompt shorter than the cached one (a compacted history) misses. A prompt the
    provider answers is cached (even if the algorithm then cancels the attempt, as a provider
    caches what it has read); cache prices apply to answered attempts, while a cancelled or
    failed one is billed per ``HostPolicy`` at the plain input price. Reading the cached prefix
    takes no prefill time (``Latency.prefill_tokens_per_s`` applies to the uncached part only).

    The 1-hour tier: ``write_price_1h`` (Anthropic: 2× the input price) writes entries that live
    ``ttl_1h_s`` (one hour). ``tier="1h"`` makes every write of this cache a 1-hour one; a single
    call asks for it with ``metadata={"cache_ttl": "1h"}`` on its ``sy.Request`` (or
    ``cache_ttl="1h"`` on a ``sy.DecisionRequest``). Reads cost ``read_price`` in either tier.
    """

    read_price: float
    write_price: float | None = None
    ttl_s: float = 300.0
    min_tokens: int = 1024
    write_price_1h: float | None = None
    ttl_1h_s: float = 3600.0
    tier: str = "5m"

    def __post_init__(self) -> None:
        check_number(self.read_price, "read_price")
        if self.write_price is not None:
            check_number(self.write_price, "write_price")
        if self.write_price_1h is not None:
            check_number(self.write_price_1h, "write_price_1h")
        for name in ("ttl_s", "ttl_1h_s"):
            check_real(
                getattr(self, name),
                name,
                low=0,
                low_open=True,
                expected="a finite number of seconds > 0",
            )
        _int(self.min_tokens, "min_tokens", low=0)
        self.check_tier(self.tier, "tier")

    def check_tier(self, tier: object, what: str = "cache_ttl") -> str:
        """``tier`` if this cache has it (``"5m"``, or ``"1h"`` with a ``write_price_1h``), else
        a clear error naming the fix."""
        if tier not in TIERS:
            raise ArgumentError(
                f"{what} must be one of {', '.join(map(repr, TIERS))}, got {tier!r}"
            )
        if tier == "1h" and self.write_price_1h is None:
            raise ArgumentError(
                f"{what}='1h' needs a 1-hour tier: give the PromptCache a write_price_1h "
                "(sy.profiles.from_catalog sets it where the price table lists one)"
            )
        return str(tier)

    def write_price_for(self, tier: str) -> float | None:
        """The write price of ``tier`` (``"5m"`` or ``"1h"``); None: the plain input price."""
        return self.write_price_1h if tier == "1h" else self.write_price

    def ttl_for(self, tier: str) -> float:
        """How long an entry written at ``tier`` lives after its last use, in seconds."""
        return self.ttl_1h_s if tier == "1h" else self.ttl_s


@dataclass(frozen=True, kw_only=True)
class ModelProfile(_Replaceable):
    """A simulated model: prices (USD per 1M tokens), limits, capabilities, latency and faults.

    ``output_tokens`` is the answer length drawn when the dataset does not know it; ``quality``
    is the chance of a correct answer on requests without ground truth (requests share one keyed
    difficulty draw, so a model with higher quality is right whenever a weaker one is).
    ``reject_delay_s`` is how long an error answer (400, 429, 5xx) takes. ``prefill=False``
    refuses (400) a request whose last message is the assistant's, a partial answer to continue,
    as some providers do. ``capacity`` (a ``sy.Capacity``) makes the model a server with slots
    and a queue, whose calls slow one another down (see docs/capacity.md); without it every call
    is answered as if the model served it alone.
    """

    price_in: float = 0.0
    price_out: float = 0.0
    context_window: int = 128_000
    vision: bool = False
    tools: bool = True
    prefill: bool = True
    latency: Latency = field(default_factory=Latency)
    if TYPE_CHECKING:  # __post_init__ makes it a distribution
        output_tokens: Converted[float | Distribution, Distribution] = converted(
            field(default_factory=lambda: LogNormal(200, p95=800))
        )
    else:
        output_tokens: float | Distribution = field(default_factory=lambda: LogNormal(200, p95=800))
    quality: float | None = None
    faults: Faults = field(default_factory=Faults)
    rate_limit: RateLimit | None = None
    if TYPE_CHECKING:  # __post_init__ makes it a distribution
        reject_delay_s: Converted[float | Distribution, Distribution] = converted(0.05)
    else:
        reject_delay_s: float | Distribution = 0.05
    cache: PromptCache | None = None
    capacity: Capacity | None = None

    def __post_init__(self) -> None:
        check_number(self.price_in, "price_in")
        check_number(self.price_out, "price_out")
        _int(self.context_window, "context_window", low=1)
        for flag in ("vision", "tools", "prefill"):
            _flag(getattr(self, flag), flag)
        if not isinstance(self.latency, Latency):
            raise ArgumentTypeError("latency must be a sy.Latency(ttft=..., tokens_per_s=...)")
        object.__setattr__(
            self, "output_tokens", as_distribution(self.output_tokens, "output_tokens")
        )
        if self.quality is not None:
            _probability(self.quality, "quality")
        if not isinstance(self.faults, Faults):
            raise ArgumentTypeError("faults must be a sy.Faults(...)")
        if self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise ArgumentTypeError("rate_limit must be a sy.faults.RateLimit(...) or None")
        object.__setattr__(
            self, "reject_delay_s", as_distribution(self.reject_delay_s, "reject_delay_s")
        )
        if self.cache is not None and not isinstance(self.cache, PromptCache):
            raise ArgumentTypeError(
                "cache must be a sy.profiles.PromptCache(read_price=...) or None"
            )
        if self.capacity is not None and not isinstance(self.capacity, Capacity):
            raise ArgumentTypeError("capacity must be a sy.Capacity(slots=...) or None")

    def cost_usd(
        self,
        input_tokens: int,
        output_tokens: int,
        cached: int = 0,
        written: int = 0,
        written_1h: int = 0,
    ) -> float:
        """What the provider bills for these tokens: of the input, ``cached`` tokens read from
        the prompt cache and ``written`` tokens written to it, ``written_1h`` of them to its
        1-hour tier (see :class:`PromptCache`)."""
        cost = (input_tokens - cached - written) * self.price_in + output_tokens * self.price_out
        if cached or written:
            cache = self.cache
            read = cache.read_price if cache is not None else self.price_in
            write = cache.write_price if cache is not None else None
            write_1h = cache.write_price_1h if cache is not None else None
            cost += cached * read + (written - written_1h) * (
                self.price_in if write is None else write
            )
            cost += written_1h * (self.price_in if write_1h is None else write_1h)
        return cost / 1e6


@dataclass(frozen=True, kw_only=True)
class Judge(_Replaceable):
    """How a simulated model answers decision calls.

    With probability ``accuracy`` it gives the right answer (the question's oracle), otherwise a
    wrong one; questions without an oracle get an uninformed, keyed-random answer. Each question
    costs ``output_tokens`` output tokens.
    """

    accuracy: float = 0.9
    output_tokens: int = 5

    def __post_init__(self) -> None:
        _probability(self.accuracy, "accuracy")
        _int(self.output_tokens, "output_tokens")


BillCancelled = Literal["generated", "none", "full"]


@dataclass(frozen=True, kw_only=True)
class HostPolicy(_Replaceable):
    """How a host retries, falls back, cools down and bills; shared by SimHost and HttpHost.

    * ``max_retries`` (0–10, default 2) per target for 408/429/5xx/transport/timeout; the wait is
      Retry-After capped at ``retry_after_cap_s``, else ``backoff_initial_s`` doubling to
      ``backoff_max_s``.
    * ``timeout_s``: the per-attempt deadline.
    * Across candidates, an error falls back only for a reason in ``fallback_reasons``; ``policy``
      also needs ``allow_policy_fallback=True``. The last candidate's own error is returned.
    * ``cooldown_s``: a transient failure makes a target skipped for this long while another
      candidate remains (0 turns cooldown off); a 400 never starts one.
    * ``routing_fallback``: routing-phase ``call_model`` uses only its first candidate unless True.
    * ``recover_errors``: routing-phase errors are raised into the algorithm (True) or fail the
      request (False). Decision errors always go back to the algorithm.
    * ``bill_cancelled``: what an attempt that ends unserved after the provider accepted it
      (cancelled, stopped at the client deadline, broken mid-answer) is billed: input plus the
      output generated until then (``"generated"``), nothing (``"none"``), or input plus the whole
      planned answer (``"full"``). An attempt rejected before generating is never billed.
    * ``resend_cut_streams``: over HTTP, a stream that breaks after its first token is a broken
      answer (``invalid_response``): neither retried nor sent to the next candidate, as the answer
      had started (the default, the seed system's boundary). With True, for a provider whose
      contract allows resending, it counts as ``unavailable``: retried, then the next candidate.
      (A simulated ``Faults(cut_stream=...)`` is a 502, retried either way.)
    """

    max_retries: int = 2
    backoff_initial_s: float = 0.25
    backoff_max_s: float = 2.0
    retry_after_cap_s: float = 60.0
    timeout_s: float = 60.0
    fallback_reasons: Collection[FallbackReason | str] = tuple(FallbackReason)
    allow_policy_fallback: bool = False
    cooldown_s: float = 5.0
    routing_fallback: bool = False
    recover_errors: bool = True
    bill_cancelled: BillCancelled = "generated"
    resend_cut_streams: bool = False

    def __post_init__(self) -> None:
        _int(self.max_retries, "max_retries", high=10)
        check_number(self.backoff_initial_s, "backoff_initial_s")
        check_number(self.backoff_max_s, "backoff_max_s")
        check_number(self.retry_after_cap_s, "retry_after_cap_s")
        check_number(self.timeout_s, "timeout_s", low_open=True)
        check_number(self.cooldown_s, "cooldown_s")
        object.__setattr__(self, "fallback_reasons", _fallback_reasons(self.fallback_reasons))
        for flag in (
            "allow_policy_fallback",
            "routing_fallback",
            "recover_errors",
            "resend_cut_streams",
        ):
            _flag(getattr(self, flag), flag)
        if not isinstance(self.bill_cancelled, str) or self.bill_cancelled not in (
            "generated",
            "none",
            "full",
        ):
            raise ArgumentError(
                f"bill_cancelled must be 'generated', 'none' or 'full', got {self.bill_cancelled!r}"
            )

    def backoff_s(self, retry_index: int, retry_after_s: float | None) -> float:
        """How long to wait before retry number ``retry_index + 1``."""
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_cap_s)
        return min(self.backoff_initial_s * 2**retry_index, self.backoff_max_s)

    def allows_fallback(self, reason: FallbackReason | None) -> bool:
        if reason is None or reason not in self.fallback_reasons:
            return False
        return reason is not FallbackReason.POLICY or self.allow_policy_fallback


def _fallback_reasons(value: object) -> tuple[FallbackReason, ...]:
    """The reasons in canonical order (stable reprs); a single string is one reason."""
    valid = ", ".join(repr(r.value) for r in FallbackReason)
    if isinstance(value, str):
        value = (value,)
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise ArgumentTypeError(
            f"fallback_reasons must be a list of reasons ({valid}), got {type(value).__name__}"
        )
    given = set()
    for reason in value:
        try:
            given.add(FallbackReason(reason))
        except ValueError:
            raise ArgumentError(
                f"fallback_reasons: unknown reason {reason!r}; valid reasons: {valid}"
            ) from None
    return tuple(r for r in FallbackReason if r in given)


@dataclass(frozen=True)
class Poisson:
    """Open-loop arrivals at ``rate_per_s`` requests per second (exponential gaps, keyed by seed)."""

    rate_per_s: float

    def __post_init__(self) -> None:
        check_number(self.rate_per_s, "rate_per_s", low_open=True)


def check_profiles(
    models: Mapping[str, ModelProfile] | Iterable[tuple[str, ModelProfile]],
) -> dict[str, ModelProfile]:
    """Validate a name → profile map, naming the bad entry."""
    if not isinstance(models, Mapping):
        raise ArgumentTypeError("models must be a dict of model name → sy.ModelProfile")
    if not models:
        raise ArgumentError("models must name at least one model")
    checked = {}
    for name, profile in models.items():
        if not isinstance(name, str) or not name:
            raise ArgumentTypeError(f"model names must be non-empty strings, got {name!r}")
        if not isinstance(profile, ModelProfile):
            raise ArgumentTypeError(
                f"models[{name!r}] must be a sy.ModelProfile, got {type(profile).__name__}"
            )
        checked[name] = profile
    return checked
