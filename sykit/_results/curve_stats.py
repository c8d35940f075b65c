"""Intervals for routing curves: a cluster bootstrap of APGR and AIQ, and the random baseline.

A routing curve's APGR or AIQ is one number computed from a few thousand requests; another few
thousand would give another number. The bootstrap here resamples *clusters* of requests (a request,
or a group of related ones such as MT-Bench's two turns of a question) with replacement and
recomputes the whole curve each time: the routing decisions stay as they were, the traffic they
are judged on varies. The random baseline is not one draw of a random router but its distribution
over many random rankings of the same requests: APGR 0.5 in expectation, with a spread that shows
how far a router must be from 0.5 to be better than luck on this much traffic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_probability
from sykit._base.errors import ArgumentError
from sykit._results.metrics import request_quality

__all__ = [
    "Curve",
    "CurveBootstrap",
    "Estimate",
    "aiq",
    "apgr",
    "apgr_of",
    "bootstrap_curve",
    "curve_of",
    "point_of",
    "random_apgr",
]


def apgr(
    strong_share: Sequence[float],
    quality: Sequence[float],
    *,
    weak_quality: float,
    strong_quality: float,
) -> float:
    """RouteLLM's average performance gap recovered for points (share of strong calls, quality)."""
    gap = strong_quality - weak_quality
    if not math.isfinite(gap) or gap == 0:
        return math.nan
    points = sorted(zip(strong_share, quality, strict=True))
    xs = [0.0] + [float(x) for x, _ in points] + [1.0]
    ys = [0.0] + [(float(q) - weak_quality) / gap for _, q in points] + [1.0]
    return float(np.trapezoid(ys, xs))


def aiq(cost: Sequence[float], quality: Sequence[float]) -> float:
    """RouterBench's AIQ: area under the non-decreasing convex hull of (cost, quality), per unit cost."""
    pts = sorted(
        (float(c), float(q))
        for c, q in zip(cost, quality, strict=True)
        if math.isfinite(c) and math.isfinite(q)
    )
    if not pts:
        return math.nan
    if pts[-1][0] == pts[0][0]:
        return max(q for _, q in pts)
    hull: list[tuple[float, float]] = []
    for point in pts:  # upper hull, Andrew's monotone chain
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (point[1] - y1) - (y2 - y1) * (point[0] - x1) >= 0:
                hull.pop()
            else:
                break
        hull.append(point)
    # the trapezoids under the hull, never worse for spending more (plain floats: a bootstrap
    # computes this thousands of times on a handful of points)
    area = 0.0
    x0, y0 = hull[0]
    for x, y in hull[1:]:
        y = max(y, y0)
        area += (x - x0) * (y0 + y) / 2.0
        x0, y0 = x, y
    return area / (hull[-1][0] - hull[0][0])


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a percentile interval (``low``, ``high``) at ``level``.

    For a random baseline ``low``/``high`` span the central ``level`` of its distribution and
    ``sd`` is its standard deviation."""

    value: float
    low: float
    high: float
    level: float = 0.95
    sd: float = math.nan

    def __float__(self) -> float:
        return self.value

    def excludes(self, other: Estimate) -> bool:
        """True when the two intervals do not overlap."""
        return self.low > other.high or self.high < other.low

    def __format__(self, spec: str) -> str:
        spec = spec or ".3f"
        return f"{self.value:{spec}} [{self.low:{spec}}, {self.high:{spec}}]"

    def __str__(self) -> str:
        return format(self)

    def __repr__(self) -> str:
        return f"Estimate({self:.3f}, level={self.level:g})"


@dataclass(frozen=True)
class Curve:
    """A routing curve as per-request columns, aligned on the same requests.

    ``quality`` is (requests × points): each request's quality under each routing point (failed
    = 0, ungraded = NaN); ``strong`` the same shape, the share of its runs the strong model
    served; ``cost`` its cost in USD. ``weak``/``strong_only`` are the references' per-request
    qualities and ``clusters`` one key per request (requests sharing a key are resampled together).
    Each value is a request's mean over the seeds it ran with.
    """

    quality: np.ndarray
    strong: np.ndarray
    cost: np.ndarray
    weak: np.ndarray
    strong_only: np.ndarray
    clusters: np.ndarray

    def __post_init__(self) -> None:
        n, points = self.quality.shape
        for name in ("strong", "cost"):
            if getattr(self, name).shape != (n, points):
                raise ArgumentError(f"{name} must have the shape of quality, {(n, points)}")
        for name in ("weak", "strong_only", "clusters"):
            if getattr(self, name).shape != (n,):
                raise ArgumentError(f"{name} must have one value per request ({n})")


#: Rows of bootstrap weights drawn at a time (bounds the memory of a bootstrap's products).
_BLOCK = 250
#: The latest bootstrap's weights as counts (see :meth:`ClusterSums.weights`), kept when they
#: hold at most this many numbers (32 MB of int32).
_WEIGHTS: dict[tuple[int, int, int], list[np.ndarray]] = {}
_WEIGHTS_KEPT = 8_000_000


class ClusterSums:
    """Per-request values summed per cluster, so that a bootstrap's weights (one count per
    cluster) are applied to a cluster's sums instead of being spread over its requests: the same
    means, from a matrix ``clusters × columns`` instead of ``requests × columns``."""

    def __init__(self, clusters: np.ndarray) -> None:
        keys, self.index = np.unique(clusters, return_inverse=True)
        self.size = len(keys)

    def weights(self, resamples: int, seed: int) -> list[np.ndarray]:
        """The weight rows of a bootstrap of ``resamples`` with ``seed``, in blocks of
        :data:`_BLOCK` rows: in each row, every cluster drawn with replacement as many times as
        there are clusters, a cluster's weight its count. They depend on the number of clusters alone, not on
        which request is in which, so they are kept for the latest such bootstrap: the learners of
        one cross-fit table are judged on the same requests, and each would draw them again (the
        draws are most of a bootstrap's time)."""
        key = (self.size, resamples, seed)
        counts = _WEIGHTS.get(key)
        if counts is None:
            rng = np.random.default_rng(seed)
            p = np.full(self.size, 1.0 / self.size)
            counts = [
                rng.multinomial(self.size, p, size=min(_BLOCK, resamples - start)).astype(np.int32)
                for start in range(0, resamples, _BLOCK)
            ]
            _WEIGHTS.clear()
            if self.size * resamples <= _WEIGHTS_KEPT:
                _WEIGHTS[key] = counts
        return [c.astype(float) for c in counts]

    def ones(self) -> np.ndarray:
        """The weights of the requests as they are (no resampling)."""
        return np.ones((1, self.size))

    def sums(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per cluster and column of ``values`` (requests × columns): the sum of the finite
        values and their count."""
        finite = np.isfinite(values)
        totals = np.zeros((self.size, values.shape[1]))
        counts = np.zeros((self.size, values.shape[1]))
        np.add.at(totals, self.index, np.where(finite, values, 0.0))
        np.add.at(counts, self.index, finite)
        return totals, counts


def weighted_means(weights: np.ndarray, sums: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per weight row (one weight per cluster), the weighted mean of each column whose
    :meth:`ClusterSums.sums` are ``sums``, NaNs left out."""
    totals, counts = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ totals) / (weights @ counts)


def apgr_of(
    share: np.ndarray, quality: np.ndarray, weak: np.ndarray, strong: np.ndarray
) -> np.ndarray:
    """APGR of curves given per row (share and quality: rows × points; weak, strong: rows):
    the trapezoid area of the recovered gap over the strong share, from the weak model at 0 to the
    strong model at 1, as :func:`sykit.sweep` computes it for one curve."""
    share = np.atleast_2d(share)
    quality = np.atleast_2d(quality)
    gap = (strong - weak)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        ys = (quality - weak[:, None]) / gap
    rows = share.shape[0]
    # the points in order of share, then of quality (as the scalar formula sorts them), between
    # the weak model at 0 and the strong model at 1
    order = np.lexsort((quality, share), axis=1)
    xs = np.take_along_axis(share, order, axis=1)
    ys = np.take_along_axis(ys, order, axis=1)
    xs = np.concatenate([np.zeros((rows, 1)), xs, np.ones((rows, 1))], axis=1)
    ys = np.concatenate([np.zeros((rows, 1)), ys, np.ones((rows, 1))], axis=1)
    with np.errstate(invalid="ignore"):  # a resample with no gap gives NaN: dropped later
        area = np.trapezoid(ys, xs, axis=1)
    bad = ~np.isfinite(gap[:, 0]) | (gap[:, 0] == 0)
    return np.where(bad, math.nan, area)


@dataclass(frozen=True)
class CurveBootstrap:
    """APGR and AIQ of a curve with their bootstrap intervals."""

    apgr: Estimate
    aiq: Estimate
    resamples: int


def bootstrap_curve(
    curve: Curve, *, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> CurveBootstrap:
    """APGR and AIQ of ``curve`` with percentile intervals from a cluster bootstrap (AIQ over the
    curve's points, as :meth:`sykit.Sweep.aiq` computes it)."""
    resamples = check_int(resamples, "resamples", low=100, type_error=ArgumentError)
    level = check_probability(level, "level", type_error=ArgumentError)
    point = point_of(curve)
    clusters = ClusterSums(curve.clusters)
    sums = _curve_sums(curve, clusters)
    apgrs: list[np.ndarray] = []
    aiqs: list[np.ndarray] = []
    for weights in clusters.weights(resamples, seed):
        a, q = _curve_stats(sums, weights)
        apgrs.append(a)
        aiqs.append(q)
    return CurveBootstrap(
        _estimate(point[0], np.concatenate(apgrs), level),
        _estimate(point[1], np.concatenate(aiqs), level),
        resamples,
    )


def point_of(curve: Curve) -> tuple[float, float]:
    """APGR and AIQ of ``curve`` itself, on its requests as they are (no resampling)."""
    clusters = ClusterSums(curve.clusters)
    apgrs, aiqs = _curve_stats(_curve_sums(curve, clusters), clusters.ones())
    return float(apgrs[0]), float(aiqs[0])


#: The columns of a curve's per-cluster sums, in the order :func:`_curve_sums` stacks them.
_PARTS = ("quality", "share", "weak", "strong", "cost")


def _curve_sums(curve: Curve, clusters: ClusterSums) -> tuple[np.ndarray, list[slice]]:
    """A curve's per-cluster sums and counts side by side, ``[totals | counts]`` (clusters ×
    2·columns), and the columns of each part of :data:`_PARTS`: one product with a bootstrap's
    weights gives every mean, reading the weights once instead of once a part."""
    parts = [
        clusters.sums(curve.quality),
        clusters.sums(curve.strong.astype(float)),
        clusters.sums(curve.weak[:, None]),
        clusters.sums(curve.strong_only[:, None]),
        clusters.sums(curve.cost),
    ]
    totals = np.concatenate([t for t, _ in parts], axis=1)
    counts = np.concatenate([c for _, c in parts], axis=1)
    edges = np.cumsum([0] + [t.shape[1] for t, _ in parts])
    slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(edges)]
    return np.concatenate([totals, counts], axis=1), slices


def _curve_stats(
    sums: tuple[np.ndarray, list[slice]], weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    stacked, slices = sums
    width = stacked.shape[1] // 2
    products = weights @ stacked
    with np.errstate(invalid="ignore", divide="ignore"):
        means = products[:, :width] / products[:, width:]
    quality, share, weak, strong, cost = (means[:, part] for part in slices)
    apgrs = apgr_of(share, quality, weak[:, 0], strong[:, 0])
    # rows as lists of floats: aiq reads them point by point, thousands of times
    aiqs = np.array([aiq(c, q) for c, q in zip(cost.tolist(), quality.tolist(), strict=True)])
    return apgrs, aiqs


def _estimate(value: float, draws: np.ndarray, level: float) -> Estimate:
    finite = draws[np.isfinite(draws)]
    if len(finite) < 2:
        return Estimate(value, math.nan, math.nan, level)
    tail = (1 - level) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return Estimate(value, float(low), float(high), level, float(np.std(finite, ddof=1)))


def random_apgr(
    weak: np.ndarray,
    strong: np.ndarray,
    shares: Sequence[float],
    *,
    rankings: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """The APGR of a random router on these requests: its expected value (the value field: the
    mean over ``rankings`` random rankings, 0.5 up to rounding of the shares) and its spread.

    Each ranking sends the first ``round(share × n)`` requests of a random order to the strong
    model at each share; ``weak``/``strong`` are the per-request qualities of each model alone
    (requests where either is unknown are left out)."""
    rankings = check_int(rankings, "rankings", low=100, type_error=ArgumentError)
    weak = np.asarray(weak, dtype=float)
    strong = np.asarray(strong, dtype=float)
    key = (weak.tobytes(), strong.tobytes(), tuple(shares), rankings, level, seed)
    found = _RANDOM.get(key)
    if found is None:
        found = _random_apgr(weak, strong, shares, rankings, level, seed)
        _RANDOM.clear()  # the latest only: the learners of one cross-fit table share it
        _RANDOM[key] = found
    return found


#: The latest random baseline (see :func:`random_apgr`).
_RANDOM: dict[tuple[object, ...], Estimate] = {}


def _random_apgr(
    weak: np.ndarray,
    strong: np.ndarray,
    shares: Sequence[float],
    rankings: int,
    level: float,
    seed: int,
) -> Estimate:
    known = np.isfinite(weak) & np.isfinite(strong)
    gain = (strong - weak)[known]
    n = len(gain)
    if n < 2 or gain.sum() == 0:
        return Estimate(math.nan, math.nan, math.nan, level)
    cut = np.array([min(max(round(s * n), 0), n) for s in shares])
    xs = cut / n
    rng = np.random.default_rng(seed)
    draws = []
    for start in range(0, rankings, 200):
        rows = min(200, rankings - start)
        order = rng.permuted(np.tile(np.arange(n), (rows, 1)), axis=1)
        recovered = np.concatenate([np.zeros((rows, 1)), np.cumsum(gain[order], axis=1)], axis=1)
        ys = recovered[:, cut] / gain.sum()
        full_x = np.concatenate([[0.0], xs, [1.0]])
        full_y = np.concatenate([np.zeros((rows, 1)), ys, np.ones((rows, 1))], axis=1)
        draws.append(np.trapezoid(full_y, full_x, axis=1))
    values = np.concatenate(draws)
    estimate = _estimate(float(values.mean()), values, level)
    return estimate


def curve_of(
    requests: pd.DataFrame,
    points: Sequence[str],
    weak: str,
    strong: str,
    strong_model: str,
    group: str | None = None,
) -> Curve:
    """The :class:`Curve` of the strategies ``points`` in a comparison's ``requests`` frame, with
    the strategies ``weak`` and ``strong`` (labels) as references and ``strong_model`` the model
    whose answers count as strong; ``group`` names a column whose values cluster the requests
    (default: each request alone). Quality is counted as summaries count it."""
    frame = requests.assign(
        _q=request_quality(requests),
        _strong=(requests["served_model"].astype(str) == strong_model).astype(float),
        _strategy=requests["strategy"].astype(str),
    )
    for name in (*points, weak, strong):
        if not (frame["_strategy"] == name).any():
            raise ArgumentError(f"no strategy {name!r} in these requests")
    ids = pd.Index(frame.loc[frame["_strategy"] == weak, "request_id"].unique())
    means = frame.groupby(["_strategy", "request_id"], observed=True, sort=False)[
        ["_q", "_strong", "cost_usd"]
    ].mean()

    def column(strategy: str, values: str) -> np.ndarray:
        return np.asarray(means.loc[strategy][values].reindex(ids), dtype=float)

    if group is None:
        clusters = np.asarray(ids.astype(str))
    else:
        if group not in frame.columns:
            raise ArgumentError(f"group {group!r} is not a column of the requests frame")
        keys = frame.drop_duplicates("request_id").set_index("request_id")[group]
        clusters = np.asarray(keys.reindex(ids).astype(str))
    return Curve(
        np.column_stack([column(s, "_q") for s in points]),
        np.column_stack([column(s, "_strong") for s in points]),
        np.column_stack([column(s, "cost_usd") for s in points]),
        column(weak, "_q"),
        column(strong, "_q"),
        clusters,
    )
