"""Distributions for latencies, token counts and gaps, drawn by inverse CDF from one keyed uniform.

Anywhere sykit takes a number of seconds or tokens (a profile's time to first token or speed, a
synthetic dataset's lengths, a session's think time) it also takes one of these, drawn per request
from a keyed uniform, so the same seed gives the same percentile of whatever distribution is used:

    sy.dists.Constant(0.4)                        # always 0.4
    sy.dists.LogNormal(0.8, p95=2.5)              # median 0.8, 95th percentile 2.5
    sy.dists.LogNormal(0.8, sigma=0.6)            # median 0.8, log-space standard deviation 0.6
    sy.dists.Uniform(0.2, 0.6)
    sy.dists.Exponential(mean=0.5)
    sy.dists.Empirical([0.31, 0.42, 0.40, 1.9])   # measured samples, interpolated quantiles

    sy.Latency(ttft=sy.dists.LogNormal(0.6, p95=2.0), tokens_per_s=sy.dists.Uniform(40, 90))
"""

from sykit._world.dists import Constant, Empirical, Exponential, LogNormal, Uniform

__all__ = ["Constant", "Empirical", "Exponential", "LogNormal", "Uniform"]

# Reprs, pickles and tracebacks say sykit.dists.LogNormal.
for _obj in (Constant, Empirical, Exponential, LogNormal, Uniform):
    _obj.__module__ = __name__
del _obj
