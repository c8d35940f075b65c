"""Cost against quality: the trade-off a routing strategy is chosen on.

:func:`plot_cost_quality` draws each strategy of a comparison as a point with the Pareto frontier
through the ones nothing beats on both; :func:`plot_cost_quality_curve` draws a threshold sweep as
a curve against reference points (weak, strong, oracle, random mix) that a router has to beat.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ArgumentError, ArgumentTypeError
from .._metrics import pareto_frontier
from .style import _axes, _check_frame, _legend_outside, _usd_axis, strategy_colors

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _cost_axis(ax: Axes, costs: np.ndarray, log_cost: bool | None) -> None:
    positive = costs[np.isfinite(costs) & (costs > 0)]
    if log_cost is None:
        log_cost = len(positive) > 1 and positive.max() / positive.min() >= 20
    if log_cost:
        ax.set_xscale("log")
    decades = float(np.log10(positive.max() / positive.min())) if len(positive) > 1 else 0.0
    _usd_axis(ax.xaxis, log=bool(log_cost), decades=decades)


def plot_cost_quality(
    summary: pd.DataFrame,
    *,
    colors: Mapping[str, str] | None = None,
    log_cost: bool | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Each strategy as a point (cost per request, mean quality) and the Pareto frontier through
    the ones nothing beats on both. ``log_cost=None`` uses a log x axis when costs span 20×."""
    _check_frame(summary, "summary", ("strategy", "cost_per_request_usd", "mean_quality"))
    known = summary.dropna(subset=["cost_per_request_usd", "mean_quality"])
    if known.empty:
        raise ArgumentError(
            "no strategy has both a cost and a quality: give models a `quality` or the requests "
            "ground truth, so answers can be scored"
        )
    names = [str(s) for s in summary["strategy"]]
    colors = dict(colors) if colors is not None else strategy_colors(names)
    ax = _axes(ax, (7.5, 4.5))
    for row in known.itertuples(index=False):
        ax.scatter(
            [row.cost_per_request_usd],
            [row.mean_quality],
            s=60,
            color=colors.get(str(row.strategy), "0.3"),
            edgecolor="white",
            linewidth=0.8,
            zorder=3,
            label=str(row.strategy),
            gid=f"point:{row.strategy}",
        )
    frontier = pareto_frontier(known)
    ax.plot(
        frontier["cost_per_request_usd"].to_numpy(dtype=float),
        frontier["mean_quality"].to_numpy(dtype=float),
        color="black",
        ls="--",
        lw=1.0,
        zorder=2,
        label="Pareto frontier",
        gid="pareto",
    )
    _cost_axis(ax, known["cost_per_request_usd"].to_numpy(dtype=float), log_cost)
    ax.set_xlabel("cost per request (USD)")
    ax.set_ylabel("mean quality (failed = 0)")
    ax.set_title("Cost vs quality", fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.12)
    _legend_outside(ax)
    return ax


_REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "weak": {"marker": "v", "color": "#555555"},
    "strong": {"marker": "^", "color": "#111111"},
    "oracle": {"marker": "*", "color": "#d4a500", "ms": 14},
    "random": {"marker": "X", "color": "#888888"},
}


def _check_references(references: Any) -> dict[str, tuple[float, float]]:
    if references is None:
        return {}
    if not isinstance(references, Mapping):
        raise ArgumentTypeError(
            "references must map a label to a (cost_per_request_usd, mean_quality) pair, "
            f"got {type(references).__name__}"
        )
    checked = {}
    for label, point in references.items():
        try:
            cost, quality = point
            checked[str(label)] = (float(cost), float(quality))
        except (TypeError, ValueError):
            raise ArgumentError(
                f"references[{label!r}] must be a (cost_per_request_usd, mean_quality) pair, "
                f"got {point!r}"
            ) from None
    return checked


def plot_cost_quality_curve(
    curve: pd.DataFrame,
    *,
    references: Mapping[str, tuple[float, float]] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """A cost–quality curve from a threshold sweep, with reference points to beat.

    ``curve`` has ``cost_per_request_usd`` and ``mean_quality`` (one row per threshold), and
    optionally ``threshold`` (some points are labelled with it) and ``label`` (one line per label).
    ``references`` maps e.g. ``"weak"``, ``"strong"``, ``"oracle"``, ``"random"`` to a point;
    with both ``weak`` and ``strong`` the dotted line between them is what routing a random share
    of requests to the strong model buys, the baseline a router has to beat.
    """
    _check_frame(curve, "curve", ("cost_per_request_usd", "mean_quality"))
    points = _check_references(references)
    labels = (
        list(dict.fromkeys(curve["label"].astype(str))) if "label" in curve.columns else ["sweep"]
    )
    colors = strategy_colors(labels)
    ax = _axes(ax, (7.5, 4.5))
    costs = [curve["cost_per_request_usd"].to_numpy(dtype=float)]
    for label in labels:
        part = curve if "label" not in curve.columns else curve[curve["label"].astype(str) == label]
        part = part.dropna(subset=["cost_per_request_usd", "mean_quality"])
        part = part.sort_values("cost_per_request_usd", kind="stable")
        ax.plot(
            part["cost_per_request_usd"].to_numpy(dtype=float),
            part["mean_quality"].to_numpy(dtype=float),
            marker="o",
            ms=3.5,
            lw=1.6,
            color=colors[label],
            label=label,
            gid=f"curve:{label}",
            zorder=3,
        )
        if "threshold" in part.columns and len(part):
            step = max(1, math.ceil(len(part) / 6))
            for row in part.iloc[::step].itertuples(index=False):
                ax.annotate(
                    f"{row.threshold:g}",
                    (row.cost_per_request_usd, row.mean_quality),
                    xytext=(4, -10),
                    textcoords="offset points",
                    fontsize=7,
                    color="0.35",
                    gid="threshold",
                )
    if "weak" in points and "strong" in points:
        (wx, wy), (sx, sy) = points["weak"], points["strong"]
        # a random mix is linear in cost, so sample it densely: on a log cost axis it curves
        share = np.linspace(0.0, 1.0, 101)
        ax.plot(
            wx + (sx - wx) * share,
            wy + (sy - wy) * share,
            color="0.5",
            ls=":",
            lw=1.2,
            label="random mix",
            zorder=1,
        )
    for label, (cost, quality) in points.items():
        style = {"marker": "P", "color": "#666666", "ms": 9}
        style.update(_REFERENCE_STYLES.get(label, {}))
        style.setdefault("ms", 9)
        ax.plot(
            [cost],
            [quality],
            ls="none",
            mec="white",
            mew=0.8,
            label=label,
            zorder=4,
            gid=f"reference:{label}",
            **style,
        )
        costs.append(np.array([cost]))
    _cost_axis(ax, np.concatenate(costs), None)
    ax.set_xlabel("cost per request (USD)")
    ax.set_ylabel("mean quality")
    title = "Cost–quality curve"
    if "threshold" in curve.columns:
        title += " (points labelled with their threshold)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.08)
    _legend_outside(ax)
    return ax
