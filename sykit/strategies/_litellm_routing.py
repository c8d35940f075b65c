"""LiteLLM's load-aware routing strategies, as :func:`sykit.strategies.litellm_like` picks with them.

Each keeps the state LiteLLM's own router keeps for it (read in LiteLLM 1.110.2's
``router_strategy/``), here per run and in virtual time:

* ``least-busy`` (``least_busy.py``): the calls in flight per deployment, counted from the
  moment the call starts until its answer or error; the fewest wins, a tie the deployment listed
  first. No random draw.
* ``latency-based-routing`` (``lowest_latency.py``): per deployment the last
  ``max_latency_list_size`` (10) successful calls' seconds per output token (the seconds when the
  answer has no token), and for streams the seconds to the first token; a timeout adds a 1000 s
  sample, other failures nothing. The mean picks (a stream uses the mean time to first token
  when the deployment has one, or its ``ttft_percentile``); a deployment never seen counts as
  0, so it is tried next, and once the group has a record that 0 is stored as its first sample.
  The deployments within ``lowest_latency_buffer`` × the lowest are picked among at random.
* ``usage-based-routing-v2`` (``lowest_tpm_rpm_v2.py``): per deployment and minute, the
  calls started (rpm, counted as a call starts) and the tokens of the answered ones (tpm); the
  lowest tpm wins (a tie at random) among the deployments whose tpm plus the request's input
  would stay within their ``tpm`` and whose rpm plus one stays under their ``rpm``.
* ``cost-based-routing`` (``lowest_cost.py``, ``LowestCostLoggingHandler``): the lowest
  per-token price, input plus output (:func:`deployment_price`), among the deployments whose
  tokens this minute plus the request's input stay within their ``tpm`` and whose answered calls
  this minute plus one stay within their ``rpm`` (both counted when an answer lands); a tie goes
  to the deployment LiteLLM's record lists first: the group's deployments in the order of their
  first answer, then those never answered in the group's order. No random draw.

A minute is a virtual one here (``int(now // 60)``), a wall-clock one in LiteLLM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.dists import check_number

__all__ = [
    "ROUTING_STRATEGIES",
    "UNKNOWN_PRICE_PER_TOKEN",
    "Limits",
    "LoadState",
    "RoutingArgs",
    "deployment_price",
    "routing_args",
]

#: The routing_strategy names litellm_like models.
ROUTING_STRATEGIES = (
    "simple-shuffle",
    "least-busy",
    "latency-based-routing",
    "usage-based-routing-v2",
    "cost-based-routing",
)
#: routing_strategy_args each strategy reads (``ttl``: how long LiteLLM keeps its record, which
#: a run of less than an hour, or a minute for usage, never reaches: accepted and not used).
_ARGS: dict[str, frozenset[str]] = {
    "simple-shuffle": frozenset(),
    "least-busy": frozenset(),
    "latency-based-routing": frozenset(
        {"ttl", "lowest_latency_buffer", "max_latency_list_size", "ttft_percentile"}
    ),
    "usage-based-routing-v2": frozenset({"ttl"}),
    "cost-based-routing": frozenset(),  # LiteLLM builds its handler with routing_args={}
}
#: LiteLLM's price per token for a deployment whose input or output price it does not know
#: (``lowest_cost.py``: neither in ``litellm_params`` nor in its model cost map).
UNKNOWN_PRICE_PER_TOKEN = 5.0
_TIMEOUT_SAMPLE_S = 1000.0  # what a timeout adds to a deployment's latencies


@dataclass(frozen=True)
class RoutingArgs:
    """latency-based-routing's settings (LiteLLM's ``routing_strategy_args``)."""

    lowest_latency_buffer: float = 0.0
    max_latency_list_size: int = 10
    ttft_percentile: float | None = None


@dataclass(frozen=True)
class Limits:
    """A deployment's ``tpm`` and ``rpm`` (``litellm_params`` or ``model_info``); inf: none."""

    tpm: float = math.inf
    rpm: float = math.inf


def deployment_price(
    declared: tuple[float | None, float | None], profile_prices: tuple[float, float] | None
) -> float:
    """A deployment's cost for cost-based-routing, LiteLLM's ``item_input_cost +
    item_output_cost``: each price per token from ``litellm_params`` (``declared``; LiteLLM
    passes over a 0 there), else from the host's ModelProfile (``profile_prices``, USD per
    million tokens, in place of LiteLLM's model cost map; a profile with both prices 0, sykit's
    default, counts as unpriced), else :data:`UNKNOWN_PRICE_PER_TOKEN`."""
    mapped: tuple[float | None, float | None] = (None, None)
    if profile_prices is not None and any(profile_prices):
        mapped = (profile_prices[0] / 1e6, profile_prices[1] / 1e6)
    total = 0.0
    for own, row in zip(declared, mapped, strict=True):
        price = own if own else row  # LiteLLM's truthiness test: a declared 0 is passed over
        total += UNKNOWN_PRICE_PER_TOKEN if price is None else price
    return total


def routing_args(strategy: str, args: Mapping[str, Any] | None) -> RoutingArgs:
    """Check ``routing_strategy_args`` against what ``strategy`` reads."""
    if args is None:
        return RoutingArgs()
    if not isinstance(args, Mapping):
        raise ArgumentTypeError(f"routing_strategy_args must be a dict, got {args!r:.60}")
    known = _ARGS[strategy]
    unknown = sorted(str(k) for k in args if k not in known)
    if unknown:
        raise ArgumentError(
            f"routing_strategy_args {unknown} are not read by {strategy!r}; it reads "
            f"{sorted(known) or 'none'}"
        )
    if "ttl" in args:
        check_number(args["ttl"], "routing_strategy_args ttl", low=0.0)
    buffer = args.get("lowest_latency_buffer", 0.0)
    buffer = check_number(buffer, "routing_strategy_args lowest_latency_buffer", low=0.0)
    size = check_int(
        args.get("max_latency_list_size", 10),
        "routing_strategy_args max_latency_list_size",
        low=1,
        type_error=ArgumentError,
    )
    percentile = args.get("ttft_percentile")
    if percentile is not None:
        percentile = check_number(percentile, "routing_strategy_args ttft_percentile")
        if not 0.0 < percentile <= 1.0:
            raise ArgumentError(
                f"routing_strategy_args ttft_percentile must be in (0, 1], got {percentile!r}"
            )
    return RoutingArgs(float(buffer), size, None if percentile is None else float(percentile))


class _Latencies:
    """One deployment's entry in a group's latency record."""

    __slots__ = ("latency", "minute", "rpm", "tpm", "ttft")

    def __init__(self, latency: list[float]) -> None:
        self.latency = latency
        self.ttft: list[float] = []
        self.minute, self.rpm, self.tpm = -1, 0, 0

    def counts(self, minute: int) -> tuple[int, int]:
        return (self.rpm, self.tpm) if self.minute == minute else (0, 0)


def _push(samples: list[float], value: float, size: int) -> None:
    if len(samples) >= size:
        del samples[: len(samples) - size + 1]
    samples.append(value)


def _usable(samples: list[float]) -> list[float]:
    return [s for s in samples if math.isfinite(s) and s >= 0]


class LoadState:
    """What the load-aware strategies have seen in one run: calls in flight, latencies, usage
    per minute; keyed by (group, deployment), as LiteLLM keys them by group and deployment id."""

    def __init__(
        self, strategy: str, args: RoutingArgs, limits: Mapping[str, Mapping[str, Limits]]
    ) -> None:
        self.strategy = strategy
        self.args = args
        self.limits = limits
        self.in_flight: dict[tuple[str, str], int] = {}
        self.latencies: dict[str, dict[str, _Latencies]] = {}  # absent: no record for the group
        self.usage: dict[tuple[str, str], list[Any]] = {}  # [minute, rpm or None, tpm or None]
        #: cost-based-routing: group -> model -> its price (set by the router at its first pick
        #: of a run), the answered calls and tokens per minute, and each group's record order
        self.prices: dict[str, dict[str, float]] | None = None
        self.answered: dict[tuple[str, str], list[int]] = {}  # [minute, calls, tokens]
        self.record: dict[str, dict[str, None]] = {}  # absent: no record for the group yet

    def _limits(self, group: str, model: str) -> Limits:
        return self.limits.get(group, {}).get(model, _NO_LIMITS)

    # -- picking -----------------------------------------------------------------------------------
    def choices(
        self, group: str, candidates: list[str], now: float, input_tokens: int, stream: bool
    ) -> list[str]:
        """The deployments among ``candidates`` the strategy picks from at random (one for
        least-busy; none when their limits leave none)."""
        if self.strategy == "least-busy":
            counts = [self.in_flight.get((group, m), 0) for m in candidates]
            return [candidates[counts.index(min(counts))]]
        minute = int(now // 60.0)
        if self.strategy == "latency-based-routing":
            return self._within_buffer(group, candidates, minute, input_tokens, stream)
        if self.strategy == "cost-based-routing":
            return self._lowest_cost(group, candidates, minute, input_tokens)
        return self._lowest_usage(group, candidates, minute, input_tokens)

    def _within_buffer(
        self, group: str, candidates: list[str], minute: int, input_tokens: int, stream: bool
    ) -> list[str]:
        record = self.latencies.get(group)
        if record is not None:  # LiteLLM stores the 0 it gives a deployment it has not seen
            for m in candidates:
                if m not in record:
                    record[m] = _Latencies([0.0])
        scored: list[tuple[str, float]] = []
        for m in candidates:
            entry = None if record is None else record[m]
            rpm, tpm = (0, 0) if entry is None else entry.counts(minute)
            limits = self._limits(group, m)
            if tpm + input_tokens > limits.tpm or rpm + 1 > limits.rpm:
                continue
            scored.append((m, self._latency(entry, stream)))
        if not scored:
            return []
        lowest = min(v for _, v in scored)
        ceiling = lowest + self.args.lowest_latency_buffer * lowest
        return [m for m, v in scored if v <= ceiling]

    def _latency(self, entry: _Latencies | None, stream: bool) -> float:
        if entry is None:
            return 0.0
        ttft = _usable(entry.ttft)
        if stream and ttft:
            percentile = self.args.ttft_percentile
            if percentile is not None:
                return sorted(ttft)[math.ceil(len(ttft) * percentile) - 1]
            return sum(ttft) / len(ttft)
        samples = _usable(entry.latency)
        return sum(samples) / len(samples) if samples else 0.0

    def _lowest_usage(
        self, group: str, candidates: list[str], minute: int, input_tokens: int
    ) -> list[str]:
        lowest, best = math.inf, []
        for m in candidates:
            used = self.usage.get((group, m))
            rpm, tpm = (used[1], used[2] or 0) if used and used[0] == minute else (None, 0)
            limits = self._limits(group, m)
            if tpm + input_tokens > limits.tpm or (rpm is not None and rpm + 1 >= limits.rpm):
                continue
            if tpm < lowest:
                lowest, best = tpm, [m]
            elif tpm == lowest:
                best.append(m)
        return best

    def _lowest_cost(
        self, group: str, candidates: list[str], minute: int, input_tokens: int
    ) -> list[str]:
        """LiteLLM's ``LowestCostLoggingHandler.async_get_available_deployments``: its record
        (once the group has one, a deployment it has not seen is added to it, after those it
        has), each deployment within its limits, sorted by price (a stable sort: a tie to the
        one listed first in the record)."""
        record = self.record.get(group)
        if record is not None:  # LiteLLM adds the unseen deployments to the stored record
            for m in candidates:
                record.setdefault(m)
            ordered = [m for m in record if m in candidates]
        else:
            ordered = list(candidates)
        prices = (self.prices or {}).get(group, {})
        best: str | None = None
        lowest = math.inf
        for m in ordered:
            used = self.answered.get((group, m))
            calls, tokens = (used[1], used[2]) if used and used[0] == minute else (0, 0)
            limits = self._limits(group, m)
            if tokens + input_tokens > limits.tpm or calls + 1 > limits.rpm:
                continue
            price = prices.get(m, 2 * UNKNOWN_PRICE_PER_TOKEN)
            if best is None or price < lowest:
                best, lowest = m, price
        return [] if best is None else [best]

    def over_limit(self, group: str, model: str, now: float) -> str:
        """Why ``model`` was left out of a pick, for the skip it is recorded as."""
        limits = self._limits(group, model)
        return f"over its tpm {limits.tpm:g} or rpm {limits.rpm:g} this minute (t={now:g} s)"

    # -- what the calls tell it --------------------------------------------------------------------
    def started(self, group: str, model: str, now: float) -> None:
        key = (group, model)
        self.in_flight[key] = self.in_flight.get(key, 0) + 1
        if self.strategy == "usage-based-routing-v2":  # its pre-call check counts the rpm
            used = self._usage(key, now)
            used[1] = (used[1] or 0) + 1

    def ended(self, group: str, model: str) -> None:
        key = (group, model)
        self.in_flight[key] -= 1

    def _usage(self, key: tuple[str, str], now: float) -> list[Any]:
        minute = int(now // 60.0)
        used = self.usage.get(key)
        if used is None or used[0] != minute:
            used = self.usage[key] = [minute, None, None]
        return used

    def succeeded(
        self,
        group: str,
        model: str,
        now: float,
        seconds: float,
        ttft_s: float | None,
        output_tokens: int,
        total_tokens: int,
    ) -> None:
        if self.strategy == "usage-based-routing-v2":
            used = self._usage((group, model), now)
            used[2] = (used[2] or 0) + total_tokens
        elif self.strategy == "cost-based-routing":
            minute = int(now // 60.0)
            answered = self.answered.get((group, model))
            if answered is None or answered[0] != minute:
                answered = self.answered[(group, model)] = [minute, 0, 0]
            answered[1] += 1
            answered[2] += total_tokens
            self.record.setdefault(group, {}).setdefault(model)
        elif self.strategy == "latency-based-routing":
            entry = self._entry(group, model)
            size = self.args.max_latency_list_size
            _push(entry.latency, seconds / output_tokens if output_tokens else seconds, size)
            if ttft_s is not None:
                _push(entry.ttft, ttft_s, size)
            minute = int(now // 60.0)
            if entry.minute != minute:
                entry.minute, entry.rpm, entry.tpm = minute, 0, 0
            entry.rpm += 1
            entry.tpm += total_tokens

    def timed_out(self, group: str, model: str) -> None:
        if self.strategy == "latency-based-routing":
            _push(
                self._entry(group, model).latency,
                _TIMEOUT_SAMPLE_S,
                self.args.max_latency_list_size,
            )

    def _entry(self, group: str, model: str) -> _Latencies:
        record = self.latencies.setdefault(group, {})
        entry = record.get(model)
        if entry is None:
            entry = record[model] = _Latencies([])
        return entry


_NO_LIMITS = Limits()
