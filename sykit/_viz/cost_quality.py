"""Cost against quality: the trade-off a routing strategy is chosen on.

:func:`plot_cost_quality` draws each strategy of a comparison as a point with its 95 %
confidence interval and the Pareto frontier through the ones nothing beats on both;
:func:`plot_cost_quality_curve` draws a sweep as a curve against reference points (weak, strong,
random mix) that a router has to beat. Quality is always the summary's (a failed request counts
as 0), never recomputed here.

A strategy that read the ground truth (the oracle, a simulated router score) is a *bound*: it shows
how far routing could go, not a router you could deploy. Both plots draw bounds as stars labelled
"(bound)", and the Pareto frontier leaves them out so they cannot hide the real trade-off.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
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


def _bounds_mask(summary: pd.DataFrame) -> pd.Series:
    """True for rows that read the ground truth (``realizable`` is False): bounds, not routers."""
    if "realizable" not in summary.columns:
        return pd.Series(False, index=summary.index)
    return summary["realizable"].eq(False)


def plot_cost_quality(
    summary: pd.DataFrame,
    *,
    colors: Mapping[str, str] | None = None,
    log_cost: bool | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Each strategy as a point (cost per request, mean quality) with its 95 % confidence
    interval as a vertical bar, and the Pareto frontier through the ones nothing beats on both.

    Quality is the summary's ``mean_quality`` (a failed request counts as 0) and the bar spans
    ``quality_ci_low`` to ``quality_ci_high`` when the summary has them. A strategy that read the
    ground truth (``realizable`` False, e.g. the oracle) is a bound, not a router you could deploy:
    it is drawn as a star labelled "(bound)" and kept off the frontier. ``log_cost=None`` uses a
    log x axis when costs span 20×.
    """
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
    bounds = _bounds_mask(known)
    has_ci = {"quality_ci_low", "quality_ci_high"} <= set(known.columns)
    for (_, row), bound in zip(known.iterrows(), bounds, strict=True):
        name = str(row["strategy"])
        color = colors.get(name, "0.3")
        cost, quality = float(row["cost_per_request_usd"]), float(row["mean_quality"])
        if has_ci:
            low, high = float(row["quality_ci_low"]), float(row["quality_ci_high"])
            if math.isfinite(low) and math.isfinite(high):
                ax.vlines(cost, low, high, color=color, lw=1.4, zorder=2, gid=f"ci:{name}")
        ax.plot(
            [cost],
            [quality],
            ls="none",
            marker="*" if bound else "o",
            ms=15 if bound else 8,
            color=color,
            mec="black" if bound else "white",
            mew=0.8,
            zorder=3,
            label=f"{name} (bound)" if bound else name,
            gid=f"{'bound' if bound else 'point'}:{name}",
        )
    # only strategies you could deploy make the frontier; bounds are drawn but never on it
    frontier = pareto_frontier(known[~bounds])
    if len(frontier):
        ax.plot(
            frontier["cost_per_request_usd"].to_numpy(dtype=float),
            frontier["mean_quality"].to_numpy(dtype=float),
            color="black",
            ls="--",
            lw=1.0,
            zorder=1,
            label="Pareto frontier",
            gid="pareto",
        )
    _cost_axis(ax, known["cost_per_request_usd"].to_numpy(dtype=float), log_cost)
    ax.set_xlabel("cost per request (USD)")
    ax.set_ylabel("mean quality (failed = 0)")
    title = "Cost vs quality"
    if has_ci:
        title += " (bars: 95 % CI of the mean quality)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.12)
    _legend_outside(ax)
    return ax


_REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "weak": {"marker": "v", "color": "#555555"},
    "strong": {"marker": "^", "color": "#111111"},
    "random": {"marker": "X", "color": "#888888"},
}
#: Bounds are stars, one colour each (then other markers, when there are more bounds than colours).
_BOUND_COLORS = ("#d4a500", "#8e44ad", "#17becf", "#8c564b")
_BOUND_MARKERS = ("*", "p", "h", "8")
#: Reference labels taken as bounds when ``bounds`` is not given: what :func:`sykit.sweep` names
#: its truth-reading reference.
DEFAULT_BOUNDS = ("oracle",)
_SETTING_COLUMNS = ("threshold", "value")


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


def _check_bounds(bounds: Any, references: Mapping[str, Any]) -> list[str]:
    if bounds is None:
        return [label for label in references if label in DEFAULT_BOUNDS]
    if isinstance(bounds, str) or not isinstance(bounds, Iterable):
        raise ArgumentTypeError(
            f"bounds must be a list of reference labels, got {type(bounds).__name__}"
        )
    labels = [str(b) for b in bounds]
    unknown = [b for b in labels if b not in references]
    if unknown:
        raise ArgumentError(
            f"bounds {unknown} are not labels of references; references has {list(references)}"
        )
    return [label for label in references if label in labels]


def plot_cost_quality_curve(
    curve: pd.DataFrame,
    *,
    references: Mapping[str, tuple[float, float]] | None = None,
    bounds: Iterable[str] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """A cost–quality curve from a sweep, with reference points to beat and bounds.

    ``curve`` has ``cost_per_request_usd`` and ``mean_quality`` (one row per setting), and
    optionally ``threshold`` or ``value`` (some points are labelled with it) and ``label`` (one
    line per label). ``references`` maps e.g. ``"weak"``, ``"strong"``, ``"oracle"``,
    ``"random"`` to a point; with both ``weak`` and ``strong`` the dotted line between them is what
    routing a random share of requests to the strong model buys, the baseline a router has to beat.

    ``bounds`` names the references that read the ground truth (default: ``"oracle"`` when
    present). A bound is no router you could deploy, only how far routing could go: each is drawn
    as a star of its own colour and labelled "(bound)".
    """
    _check_frame(curve, "curve", ("cost_per_request_usd", "mean_quality"))
    points = _check_references(references)
    bound_labels = _check_bounds(bounds, points)
    setting = next((c for c in _SETTING_COLUMNS if c in curve.columns), None)
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
        if setting is not None and len(part):
            step = max(1, math.ceil(len(part) / 6))
            for value, cost, quality in zip(
                part[setting].iloc[::step],
                part["cost_per_request_usd"].iloc[::step],
                part["mean_quality"].iloc[::step],
                strict=True,
            ):
                ax.annotate(
                    f"{value:g}",
                    (cost, quality),
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
        if label in bound_labels:
            i = bound_labels.index(label)
            style = {
                "marker": _BOUND_MARKERS[i // len(_BOUND_COLORS) % len(_BOUND_MARKERS)],
                "color": _BOUND_COLORS[i % len(_BOUND_COLORS)],
                "ms": 15,
                "mec": "black",
            }
            shown, gid = f"{label} (bound)", f"bound:{label}"
        else:
            style = {"marker": "P", "color": "#666666", "ms": 9, "mec": "white"}
            style.update(_REFERENCE_STYLES.get(label, {}))
            shown, gid = label, f"reference:{label}"
        ax.plot([cost], [quality], ls="none", mew=0.8, label=shown, zorder=4, gid=gid, **style)
        costs.append(np.array([cost]))
    _cost_axis(ax, np.concatenate(costs), None)
    ax.set_xlabel("cost per request (USD)")
    ax.set_ylabel("mean quality (failed = 0)")
    title = "Cost–quality curve"
    if setting is not None:
        title += f" (points labelled with their {setting})"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.08)
    _legend_outside(ax)
    return ax
