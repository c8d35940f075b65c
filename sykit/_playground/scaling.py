"""Scaling a latency distribution by a factor, keeping its kind so scaled profiles still read well."""

from __future__ import annotations

from dataclasses import dataclass

from sykit._base.checks import check_real
from sykit._base.errors import ArgumentTypeError
from sykit._world.dists import Constant, Distribution, Empirical, Exponential, LogNormal, Uniform

__all__ = ["scale_distribution"]


@dataclass(frozen=True)
class _Scaled:
    """``factor`` times a draw from ``base``, for distributions without a closed form."""

    base: Distribution
    factor: float

    def quantile(self, u: float) -> float:
        return self.base.quantile(u) * self.factor

    @property
    def mean(self) -> float:
        return self.base.mean * self.factor


def scale_distribution(dist: Distribution, factor: float) -> Distribution:
    """The distribution of ``factor × X`` for X ~ ``dist``, of the same kind where there is one
    (a LogNormal stays a LogNormal with the same sigma), so scaled profiles still read well."""
    factor = check_real(factor, "factor", low=0, low_open=True, expected="a finite number > 0")
    if not isinstance(dist, Distribution):
        raise ArgumentTypeError(
            f"dist must be a distribution such as sy.dists.LogNormal, got {dist!r}"
        )
    if factor == 1:
        return dist
    if isinstance(dist, Constant):
        return Constant(dist.value * factor)
    if isinstance(dist, LogNormal):
        return LogNormal(dist.median * factor, sigma=dist.sigma)
    if isinstance(dist, Uniform):
        return Uniform(dist.low * factor, dist.high * factor)
    if isinstance(dist, Exponential):
        return Exponential(mean=dist.mean_value * factor)
    if isinstance(dist, Empirical):
        return Empirical(x * factor for x in dist.samples)
    if isinstance(dist, _Scaled):
        return _Scaled(dist.base, dist.factor * factor)
    return _Scaled(dist, float(factor))
