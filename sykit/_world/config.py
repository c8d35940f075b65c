"""Immutable configuration: model profiles, latency, prompt caching, the judge, host policy and
arrivals (what can go wrong lives in :mod:`sykit._world.faults`).

Every class here is a frozen, keyword-only dataclass that checks its fields on construction and names
the field in its error, so a typo in a notebook fails at the line that made it::

    sy.ModelProfile(price_in=0.15, price_out=0.60)                       # a cheap text model
    sy.ModelProfile(price_in=2.5, price_out=10, vision=True,
                    latency=sy.Latency(ttft=sy.dists.LogNormal(0.6, p95=2.0), tokens_per_s=80))
    sy.HostPolicy(max_retries=0, cooldown_s=30, allow_policy_fallback=True)
    sy.Faults(rate_limit=0.05, retry_after_s=2, unavailable=0.01, outages=[(60, 120)])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.capacity import Capacity
from sykit._world.classify import FallbackReason
from sykit._world.dists import (
    MAX_SECONDS,
    U_LOW,
    Distribution,
    LogNormal,
    as_distribution,
    check_number,
    check_seconds,
)
from sykit._world.faults import Faults, RateLimit
from sykit._world.models import TOKEN_LIMIT
from sykit._world.prompt_cache import TIERS
from sykit._world.values import Replaceable, check_flag, integer, probability, spelled

if TYPE_CHECKING:
    from sykit._base.types import Converted, converted

__all__ = [
    "HostPolicy",
    "Judge",
    "Latency",
    "ModelProfile",
    "Poisson",
    "PromptCache",
    "check_profiles",
]


#: The highest price, in USD per 1M tokens: the cost of the most tokens a record counts stays a
#: finite number (a price near the largest float makes every cost inf).
MAX_PRICE = 1e12


def check_price(value: object, name: str) -> float:
    """``value`` as a float if it is a price from 0 to :data:`MAX_PRICE`, else an error naming
    ``name``."""
    price = check_number(value, name)
    if price > MAX_PRICE:
        raise ArgumentError(
            f"{name} must be ≤ 1e12 USD per 1M tokens (a higher price makes costs overflow to "
            f"inf), got {value!r}"
        )
    return price


@spelled
@dataclass(frozen=True, kw_only=True)
class Latency(Replaceable):
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


@spelled
@dataclass(frozen=True, kw_only=True)
class PromptCache(Replaceable):
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
        check_price(self.read_price, "read_price")
        if self.write_price is not None:
            check_price(self.write_price, "write_price")
        if self.write_price_1h is not None:
            check_price(self.write_price_1h, "write_price_1h")
        for name in ("ttl_s", "ttl_1h_s"):
            check_real(
                getattr(self, name),
                name,
                low=0,
                low_open=True,
                expected="a finite number of seconds > 0",
            )
        integer(self.min_tokens, "min_tokens", low=0)
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


@spelled
@dataclass(frozen=True, kw_only=True)
class ModelProfile(Replaceable):
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
        check_price(self.price_in, "price_in")
        check_price(self.price_out, "price_out")
        integer(self.context_window, "context_window", low=1)
        for flag in ("vision", "tools", "prefill"):
            check_flag(getattr(self, flag), flag)
        if not isinstance(self.latency, Latency):
            raise ArgumentTypeError("latency must be a sy.Latency(ttft=..., tokens_per_s=...)")
        object.__setattr__(
            self, "output_tokens", as_distribution(self.output_tokens, "output_tokens")
        )
        if self.quality is not None:
            probability(self.quality, "quality")
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


@spelled
@dataclass(frozen=True, kw_only=True)
class Judge(Replaceable):
    """How a simulated model answers decision calls.

    With probability ``accuracy`` it gives the right answer (the question's oracle), otherwise a
    wrong one; questions without an oracle get an uninformed, keyed-random answer. Each question
    costs ``output_tokens`` output tokens.
    """

    accuracy: float = 0.9
    output_tokens: int = 5

    def __post_init__(self) -> None:
        probability(self.accuracy, "accuracy")
        check_int(
            self.output_tokens,
            "output_tokens",
            low=0,
            high=TOKEN_LIMIT,
            expected="an int from 0 to 2**31 - 1 (the most tokens the records can count)",
        )


BillCancelled = Literal["generated", "none", "full"]


@spelled
@dataclass(frozen=True, kw_only=True)
class HostPolicy(Replaceable):
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
        integer(self.max_retries, "max_retries", high=10)
        check_seconds(self.backoff_initial_s, "backoff_initial_s")
        check_seconds(self.backoff_max_s, "backoff_max_s")
        check_seconds(self.retry_after_cap_s, "retry_after_cap_s")
        check_seconds(self.timeout_s, "timeout_s", low_open=True)
        check_number(self.cooldown_s, "cooldown_s")
        object.__setattr__(self, "fallback_reasons", _fallback_reasons(self.fallback_reasons))
        for flag in (
            "allow_policy_fallback",
            "routing_fallback",
            "recover_errors",
            "resend_cut_streams",
        ):
            check_flag(getattr(self, flag), flag)
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


@spelled
@dataclass(frozen=True)
class Poisson:
    """Open-loop arrivals at ``rate_per_s`` requests per second (exponential gaps, keyed by seed)."""

    rate_per_s: float

    def __post_init__(self) -> None:
        rate = check_number(self.rate_per_s, "rate_per_s", low_open=True)
        if rate < 1 / MAX_SECONDS:
            raise ArgumentError(
                f"rate_per_s must be ≥ 1e-10 (a mean gap of at most 1e10 seconds; slower arrivals "
                f"overflow the virtual clock), got {self.rate_per_s!r}"
            )


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
