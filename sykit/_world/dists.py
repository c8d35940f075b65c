"""Distributions for latencies and lengths, sampled by inverse CDF from one keyed uniform.

Sampling by quantile (``dist.quantile(u)``) keeps draws aligned across strategies: the same uniform
gives the same percentile of whatever distribution a profile uses. Their public home, with an
example of each, is :mod:`sykit.dists`.
"""

from __future__ import annotations

import math
import numbers
import statistics
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sykit._base.checks import check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError

if TYPE_CHECKING:
    from sykit._base.types import Converted, converted

__all__ = [
    "Constant",
    "Distribution",
    "Empirical",
    "Exponential",
    "LogNormal",
    "Uniform",
    "as_distribution",
    "check_seconds",
]

_Z95 = NormalDist().inv_cdf(0.95)
_inv_cdf = NormalDist().inv_cdf
#: The standard normal's quantile without ``NormalDist``'s checks (the same function it calls):
#: for u strictly inside (0, 1), as every draw is.
_normal_quantile: Callable[[float, float, float], float] = getattr(
    statistics, "_normal_dist_inv_cdf", lambda p, mu, sigma: NormalDist(mu, sigma).inv_cdf(p)
)


@runtime_checkable
class Distribution(Protocol):
    """Anything with ``quantile(u)`` for u in (0, 1) and a ``mean``."""

    def quantile(self, u: float) -> float: ...

    @property
    def mean(self) -> float: ...


def check_number(
    value: Any,
    name: str,
    *,
    low: float = 0.0,
    high: float = math.inf,
    low_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a float if it is a finite number in range, else an error naming ``name``.

    Infinity is refused unless ``allow_inf`` (an infinite price, rate or delay turns every cost or
    time it touches into inf or NaN far from where it was written); NaN is always refused. Strings
    and bools are not numbers here, even though ``float("1")`` and ``True + 1`` work. This is
    :func:`sykit._base.checks.check_real` with a lower bound of 0 by default.
    """
    return check_real(value, name, low=low, high=high, low_open=low_open, allow_inf=allow_inf)


#: The longest wait, deadline or pause a configuration may give, in seconds (about 317 years): the
#: virtual clock adds such spans, its durations are stored as float32 and a date Retry-After must
#: stay before the year 10000, so a longer one would turn into inf, NaN or an unwritable date.
MAX_SECONDS = 1e10


def check_seconds(value: Any, name: str, *, low_open: bool = False) -> float:
    """``value`` as a float if it is a number of seconds from 0 (excluded if ``low_open``) to
    :data:`MAX_SECONDS`, else an error naming ``name``."""
    seconds = check_number(value, name, low_open=low_open)
    if seconds > MAX_SECONDS:
        raise ArgumentError(
            f"{name} must be ≤ 1e10 seconds (about 317 years; a longer span overflows the "
            f"virtual clock), got {value!r}"
        )
    return seconds


def _check_positive(value: object, name: str, *, allow_zero: bool = False) -> float:
    return check_number(value, name, low_open=not allow_zero)


#: The lowest uniform a keyed draw gives (see ``sykit._base.rng.uniforms``) and the largest float < 1.
U_LOW = 2.0**-54
U_HIGH = 1.0 - 2.0**-53


def check_draws(dist: Any, name: str) -> None:
    """Refuse a distribution whose extreme draws are not finite numbers ≥ 0 (e.g. a LogNormal with
    a sigma so large that its 99.99…th percentile overflows), so a profile fails where it is
    written rather than in the middle of a simulation."""
    try:
        values = (dist.quantile(U_LOW), dist.quantile(U_HIGH), dist.mean)
        ok = all(isinstance(v, numbers.Real) and math.isfinite(v) and float(v) >= 0 for v in values)
    except (ArithmeticError, ValueError):
        ok = False
    if not ok:
        raise ArgumentError(
            f"{name} = {dist!r} draws values that are not finite numbers ≥ 0 "
            "(its extreme quantiles or its mean overflow); use a smaller spread"
        )


@dataclass(frozen=True)
class Constant:
    """Always the same value."""

    value: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _check_positive(self.value, "value", allow_zero=True))

    def quantile(self, u: float) -> float:
        return self.value

    @property
    def mean(self) -> float:
        return self.value


@dataclass(frozen=True)
class LogNormal:
    """Log-normal by its median and either its 95th percentile or its log-space sigma."""

    median: float
    p95: float | None = None
    if TYPE_CHECKING:  # __post_init__ sets sigma (given or derived from p95) and _mu
        sigma: Converted[float | None, float] = converted(None)
        _mu: float = field(init=False, repr=False, compare=False)
    else:
        sigma: float | None = None

    def __post_init__(self) -> None:
        _check_positive(self.median, "median")
        if self.p95 is not None and self.sigma is not None:
            raise ArgumentError("give LogNormal either p95 or sigma, not both")
        if self.p95 is not None:
            _check_positive(self.p95, "p95")
            if self.p95 < self.median:
                raise ArgumentError(f"p95 ({self.p95}) must be ≥ median ({self.median})")
            sigma = math.log(self.p95 / self.median) / _Z95
        else:
            sigma = (
                0.5 if self.sigma is None else _check_positive(self.sigma, "sigma", allow_zero=True)
            )
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "_mu", math.log(self.median))
        check_draws(self, "LogNormal")

    @classmethod
    def through(cls, samples: Iterable[float], *, tail: str = "upper") -> LogNormal:
        """The log-normal through the samples' median and their 95th percentile (``tail="upper"``,
        for latencies whose slow tail is high) or 5th percentile (``tail="lower"``, for speeds whose
        slow tail is low). Samples must be positive."""
        values = sorted(float(x) for x in samples)
        if not values or values[0] <= 0 or any(math.isnan(x) for x in values):
            raise ArgumentError("LogNormal.through needs positive samples")
        median = _sample_quantile(values, 0.5)
        if tail == "upper":
            return cls(median, p95=max(_sample_quantile(values, 0.95), median))
        if tail == "lower":
            p5 = min(_sample_quantile(values, 0.05), median)
            return cls(median, sigma=math.log(median / p5) / _Z95)
        raise ArgumentError(f"tail must be 'upper' or 'lower', got {tail!r}")

    def quantile(self, u: float) -> float:
        if 0.0 < u < 1.0:
            return math.exp(self._mu + self.sigma * _normal_quantile(u, 0.0, 1.0))
        return math.exp(self._mu + self.sigma * _inv_cdf(u))  # (refuses u outside (0, 1))

    @property
    def mean(self) -> float:
        exponent = self.sigma**2 / 2
        return self.median * math.exp(exponent) if exponent < 700 else math.inf


@dataclass(frozen=True)
class Uniform:
    """Uniform between ``low`` and ``high``."""

    low: float
    high: float

    def __post_init__(self) -> None:
        _check_positive(self.low, "low", allow_zero=True)
        _check_positive(self.high, "high", allow_zero=True)
        if self.high < self.low:
            raise ArgumentError(f"high ({self.high}) must be ≥ low ({self.low})")
        check_draws(self, "Uniform")

    def quantile(self, u: float) -> float:
        return self.low + (self.high - self.low) * u

    @property
    def mean(self) -> float:
        return self.low / 2 + self.high / 2  # (low + high) / 2 overflows near the largest float


@dataclass(frozen=True)
class Exponential:
    """Exponential with the given mean."""

    mean_value: float

    def __init__(self, mean: float) -> None:
        object.__setattr__(self, "mean_value", _check_positive(mean, "mean"))
        check_draws(self, "Exponential")

    def quantile(self, u: float) -> float:
        return -self.mean_value * math.log1p(-u)

    @property
    def mean(self) -> float:
        return self.mean_value


@dataclass(frozen=True)
class Empirical:
    """Measured samples; quantiles interpolate linearly between order statistics."""

    samples: tuple[float, ...] = field(repr=False)

    def __init__(self, samples: Iterable[float]) -> None:
        if isinstance(samples, str | bytes) or not isinstance(samples, Iterable):
            raise ArgumentTypeError(
                f"Empirical samples must be a list of numbers, got {type(samples).__name__}"
            )
        values = sorted(check_number(x, f"Empirical samples[{i}]") for i, x in enumerate(samples))
        if not values:
            raise ArgumentError("Empirical needs at least one sample")
        object.__setattr__(self, "samples", tuple(values))

    def __repr__(self) -> str:
        n = len(self.samples)
        return f"Empirical(n={n}, median={self.quantile(0.5):.4g}, p95={self.quantile(0.95):.4g})"

    def quantile(self, u: float) -> float:
        return _sample_quantile(self.samples, u)

    def cdf(self, x: float) -> float:
        return bisect_left(self.samples, x) / len(self.samples)

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)


def _sample_quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of sorted values (numpy's default method)."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    if lo >= len(ordered) - 1:
        return ordered[-1]
    return ordered[lo] + (ordered[lo + 1] - ordered[lo]) * (pos - lo)


def as_distribution(value: object, name: str) -> Distribution:
    """A number becomes :class:`Constant`; a distribution passes; anything else is a TypeError."""
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be a number or a distribution, got bool")
    if isinstance(value, numbers.Real):
        return Constant(_check_positive(value, name, allow_zero=True))
    if isinstance(value, Distribution):
        check_draws(value, name)
        return value
    raise ArgumentTypeError(
        f"{name} must be a number or a distribution such as sy.dists.LogNormal(median, p95=...), "
        f"got {type(value).__name__}"
    )
