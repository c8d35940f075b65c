"""The playground's knobs and what they do to a simulated host."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._hosts.sim import SimHost
from sykit._playground.scaling import scale_distribution
from sykit._world.config import ModelProfile
from sykit._world.faults import LATER_RANDOM_FAULTS, RANDOM_FAULTS, Faults

__all__ = ["KNOBS", "Knobs", "apply_knobs"]


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """What the playground's controls set.

    * ``fault_scale`` multiplies every model's random fault probabilities (all of them: rate
      limits, errors, timeouts, 400s, resets, cut streams, malformed and non-chat answers, each
      ``ErrorFault`` of ``Faults.errors``) and its latency-spike and stall chances (0 turns them
      all off; scripted faults such as outages stay); ``rate_limit``, ``unavailable`` and
      ``timeout`` add that probability of a 429, a 503 or a timeout to every model. If the rates
      of a model add up to over 1 they are scaled down to sum to 1.
    * ``latency_scale`` multiplies every time to first token and reject delay and divides tokens
      per second: every answer takes that many times as long.
    * ``concurrency`` requests in flight; ``hedge_after_s`` for strategy factories that take it;
      ``judge_error_rate`` is ``1 - accuracy`` of every model's judge.
    """

    fault_scale: float = 1.0
    rate_limit: float = 0.0
    unavailable: float = 0.0
    timeout: float = 0.0
    latency_scale: float = 1.0
    concurrency: int = 32
    hedge_after_s: float = 2.0
    judge_error_rate: float = 0.1

    def __post_init__(self) -> None:
        for name in ("fault_scale", "latency_scale", "hedge_after_s"):
            value = _real(getattr(self, name), name)
            if value < 0 or (value == 0 and name != "fault_scale"):
                raise ArgumentError(f"{name} must be > 0, got {value!r}")
        for name in ("rate_limit", "unavailable", "timeout", "judge_error_rate"):
            value = _real(getattr(self, name), name)
            if not 0 <= value <= 1:
                raise ArgumentError(f"{name} must be a probability from 0 to 1, got {value!r}")
        if (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise ArgumentError(f"concurrency must be an int ≥ 1, got {self.concurrency!r}")

    def replace(self, **changes: Any) -> Knobs:
        """A copy with some knobs changed (checked like the original)."""
        unknown = sorted(set(changes) - set(KNOBS))
        if unknown:
            raise ArgumentTypeError(f"unknown knob(s) {unknown}; the knobs are {list(KNOBS)}")
        return Knobs(**{**asdict(self), **changes})


#: The knob names, which are also the parameter names a strategy factory may take.
KNOBS: tuple[str, ...] = tuple(f.name for f in fields(Knobs))


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ArgumentTypeError(f"{name} must be a number, got {value!r}")
    return float(value)


def _faults(faults: Faults, knobs: Knobs) -> Faults:
    extra = {"rate_limit": knobs.rate_limit, "unavailable": knobs.unavailable}
    extra["timeout"] = knobs.timeout
    named = RANDOM_FAULTS + LATER_RANDOM_FAULTS
    rates = {k: getattr(faults, k) * knobs.fault_scale + extra.get(k, 0.0) for k in named}
    error_rates = [error.p * knobs.fault_scale for error in faults.errors]
    # Every random fault shares one draw, so the sum over all of them (errors too) must stay ≤ 1.
    total = sum(rates.values()) + sum(error_rates)
    if total > 1:
        rates = {k: v / total for k, v in rates.items()}
        error_rates = [p / total for p in error_rates]
    return faults.replace(
        **rates,
        errors=[error.replace(p=p) for error, p in zip(faults.errors, error_rates, strict=True)],
        spike_p=min(1.0, faults.spike_p * knobs.fault_scale),
        stall_p=min(1.0, faults.stall_p * knobs.fault_scale),
    )


def _profile(profile: ModelProfile, knobs: Knobs) -> ModelProfile:
    k = knobs.latency_scale
    latency = profile.latency.replace(
        ttft=scale_distribution(profile.latency.ttft, k),
        tokens_per_s=scale_distribution(profile.latency.tokens_per_s, 1 / k),
    )
    return profile.replace(
        latency=latency,
        reject_delay_s=scale_distribution(profile.reject_delay_s, k),
        faults=_faults(profile.faults, knobs),
    )


def apply_knobs(host: SimHost, knobs: Knobs) -> SimHost:
    """``host`` with the knobs' faults, latency scale and judge error rate on every model."""
    if not isinstance(host, SimHost):
        raise ArgumentTypeError(f"host must be a sy.SimHost, got {type(host).__name__}")
    if not isinstance(knobs, Knobs):
        raise ArgumentTypeError(f"knobs must be a sy.widgets.Knobs, got {type(knobs).__name__}")
    models = {name: _profile(p, knobs) for name, p in host.profiles.items()}
    accuracy = 1.0 - knobs.judge_error_rate
    judges = {name: j.replace(accuracy=accuracy) for name, j in host.judges.items()}
    return host.replace(models=models, judge=judges)
