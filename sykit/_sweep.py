"""Threshold sweeps: one parametric strategy at many settings, its cost–quality curve, APGR and AIQ.

* APGR (RouteLLM): performance gap recovered, ``(q − q_weak) / (q_strong − q_weak)``, averaged over
  the share of requests sent to the strong model from 0 to 1 (trapezoids, with the weak model at
  share 0 and the strong model at share 1). A random router scores 0.5.
* AIQ (RouterBench): the area under the non-decreasing upper convex hull of the router's
  (cost, quality) points, divided by the cost range they span.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._errors import ArgumentError, ArgumentTypeError
from ._metrics import request_quality
from ._results import Comparison
from ._runner import compare
from .strategies import oracle, single

__all__ = ["Sweep", "aiq", "apgr", "sweep"]


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
    xs = [x for x, _ in hull]
    ys = list(np.maximum.accumulate([y for _, y in hull]))  # never worse for spending more
    return float(np.trapezoid(ys, xs) / (xs[-1] - xs[0]))


@dataclass(frozen=True, repr=False)
class Sweep:
    """A parametric strategy run at several settings, next to the weak, strong and oracle references."""

    comparison: Comparison
    values: tuple[float, ...]
    labels: tuple[str, ...]
    weak: str
    strong: str
    reference_labels: dict[str, str]

    def _points(self) -> pd.DataFrame:
        requests = self.comparison.requests
        rows = []
        names = [*self.labels, *self.reference_labels.values()]
        for name in names:
            frame = requests[requests["strategy"].astype(str) == name]
            quality = request_quality(frame)
            rows.append(
                {
                    "strategy": name,
                    "cost_per_request_usd": float(frame["cost_usd"].mean()),
                    "mean_quality": float(quality.mean()),
                    "strong_share": float(
                        (frame["served_model"].astype(str) == self.strong).mean()
                    ),
                    "success_rate": float((frame["status"] == "ok").mean()),
                }
            )
        return pd.DataFrame(rows)

    @property
    def curve(self) -> pd.DataFrame:
        """One row per setting: threshold, cost per request, mean quality, share served by strong."""
        points = self._points().iloc[: len(self.labels)].reset_index(drop=True)
        points.insert(0, "threshold", list(self.values))
        return points

    @property
    def references(self) -> dict[str, tuple[float, float]]:
        """(cost per request, mean quality) of the weak and strong models alone and of the oracle."""
        points = self._points().set_index("strategy")
        return {
            label: (
                float(points.loc[name, "cost_per_request_usd"]),
                float(points.loc[name, "mean_quality"]),
            )
            for label, name in self.reference_labels.items()
        }

    def apgr(self) -> float:
        """RouteLLM's APGR of the swept strategy (0.5 for a random router)."""
        curve = self.curve
        refs = self.references
        return apgr(
            curve["strong_share"],
            curve["mean_quality"],
            weak_quality=refs["weak"][1],
            strong_quality=refs["strong"][1],
        )

    def aiq(self) -> float:
        """RouterBench's AIQ of the swept strategy."""
        curve = self.curve
        return aiq(curve["cost_per_request_usd"], curve["mean_quality"])

    def plot(self, ax: Any = None) -> Any:
        """The cost–quality curve with the weak, strong and oracle references; returns the Axes."""
        from ._viz import plot_cost_quality_curve

        return plot_cost_quality_curve(
            self.curve.drop(columns=["strategy"]), references=self.references, ax=ax
        )

    def __repr__(self) -> str:
        return (
            f"<sykit.Sweep {len(self.values)} settings, weak={self.weak!r}, strong={self.strong!r}>"
        )


def sweep(
    make_strategy: Callable[[float], Any],
    values: Iterable[float],
    requests: Iterable[Any],
    *,
    host: Any,
    weak: str,
    strong: str,
    seeds: Sequence[int] = (0,),
    concurrency: int | None = None,
    arrivals: Any = None,
    with_oracle: bool = True,
    progress: bool | None = None,
) -> Sweep:
    """Run ``make_strategy(value)`` for every value, plus ``weak`` alone, ``strong`` alone and (on a
    SimHost) the oracle, all on the same requests and draws; return the :class:`Sweep`.

        sweep(lambda t: sy.strategies.threshold_router("weak", "strong", score=s, threshold=t),
              thresholds, dataset, host=host, weak="weak", strong="strong")
    """
    if not callable(make_strategy):
        raise ArgumentTypeError(
            "make_strategy must be a function of the swept value returning an algorithm"
        )
    settings = [float(v) for v in values]
    if not settings:
        raise ArgumentError("values is empty")
    labels = [f"{v:g}" for v in settings]
    if len(set(labels)) != len(labels):
        raise ArgumentError("values must be distinct")
    lineup: dict[str, Any] = {
        label: make_strategy(value) for label, value in zip(labels, settings, strict=True)
    }
    references = {"weak": f"{weak} only", "strong": f"{strong} only"}
    lineup[references["weak"]] = single(weak)
    lineup[references["strong"]] = single(strong)
    if with_oracle and getattr(host, "virtual", False):
        references["oracle"] = "oracle"
        lineup["oracle"] = oracle([weak, strong])
    comparison = compare(
        lineup,
        requests,
        host=host,
        seeds=seeds,
        concurrency=concurrency,
        arrivals=arrivals,
        progress=progress,
    )
    return Sweep(comparison, tuple(settings), tuple(labels), weak, strong, references)
