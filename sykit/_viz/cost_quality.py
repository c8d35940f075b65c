"""Cost against quality: the trade-off a routing strategy is chosen on.

:func:`plot_cost_quality` draws each strategy of a comparison as a point with its 95 %
confidence interval and the Pareto frontier through the ones nothing beats on both;
:func:`plot_cost_quality_curve` draws a sweep as a curve against reference points (weak, strong,
random mix) that a router has to beat. Quality is always the summary's (a failed request counts
as 0), never recomputed here.

A strategy that read the ground truth (the oracle, a simulated router score) is no router you
could deploy. :func:`plot_cost_quality` draws it as a star labelled "(reads the truth)": the
oracle's quality bounds what routing could reach, but a simulated score stands for a published
router, which deployable routers can beat, so no such point is called a bound. The Pareto
frontier leaves them out so they cannot hide the real trade-off. A sweep's plot draws the
references you name as ``bounds`` (the oracle by default) as stars labelled "(bound)".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._results.metrics import pareto_frontier
from sykit._viz.style import (
    _axes,
    _check_frame,
    _legend_outside,
    _usd_axis,
    cost_unit,
    strategy_colors,
    text_color,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes


#: The label of a strategy that read the ground truth (the oracle, a simulated score).
READS_TRUTH = "(reads the truth)"


def _cost_axis(ax: Axes, costs: np.ndarray, log_cost: bool | None) -> str:
    """Set the cost axis (log when costs span 20×) and return its label, in the unit the ticks
    read in (per 1k requests when costs per request are fractions of a cent)."""
    positive = costs[np.isfinite(costs) & (costs > 0)]
    if log_cost is None:
        log_cost = len(positive) > 1 and positive.max() / positive.min() >= 20
    if log_cost:
        ax.set_xscale("log")
    scale, unit = cost_unit(costs)
    _usd_axis(ax.xaxis, log=bool(log_cost), scale=scale)
    return f"cost per {unit} (USD)"


def _root(ax: Axes) -> Any:
    """The top-level Figure of ``ax`` (its figure may be a SubFigure)."""
    try:
        return ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10
        return ax.figure.figure if hasattr(ax.figure, "figure") else ax.figure


def _bounds_mask(summary: pd.DataFrame) -> pd.Series:
    """True for rows that read the ground truth (``realizable`` is False): bounds, not routers."""
    if "realizable" not in summary.columns:
        return pd.Series(False, index=summary.index)
    return summary["realizable"].eq(False)


def _select(summary: pd.DataFrame, strategies: Iterable[str] | None) -> pd.DataFrame:
    """The summary rows of ``strategies``, in that order (all rows when None)."""
    if strategies is None:
        return summary
    if isinstance(strategies, str) or not isinstance(strategies, Iterable):
        raise ArgumentTypeError(
            f"strategies must be a list of strategy names, got {type(strategies).__name__}"
        )
    wanted = [str(s) for s in strategies]
    known = [str(s) for s in summary["strategy"]]
    unknown = [s for s in wanted if s not in known]
    if unknown:
        raise ArgumentError(f"strategies {unknown} are not in the summary; it has {known}")
    position = {name: i for i, name in enumerate(known)}
    return summary.iloc[[position[name] for name in wanted]]


def _overlap_groups(points: np.ndarray, radius: float) -> list[list[int]]:
    """Points (display pixels) that a marker of ``radius`` would hide, grouped in drawing order."""
    groups: list[list[int]] = []
    for i, point in enumerate(points):
        for group in groups:
            if np.hypot(*(points[group[0]] - point)) < radius:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return bool(np.allclose(a, b, rtol=1e-9, atol=0.0))


#: Where a label may go around its point (unit directions), tried in this order.
_DIRECTIONS = ((1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1), (0, -1))
#: How far, in clearances, a label may move from its point before it needs a leader line.
_REACHES = (1.0, 2.0, 3.0, 4.5, 6.0, 8.0, 10.0)
#: Up to this many points on one spot are drawn as nested rings; more are spread on a circle.
_MAX_RINGS = 3


def _area(a: np.ndarray, b: np.ndarray) -> float:
    """Overlap area of two boxes given as (x0, y0, x1, y1)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, width) * max(0.0, height)


def _misleading(box: np.ndarray, anchor: np.ndarray, rivals: np.ndarray | None) -> float:
    """1.0 when the centre of ``box`` lies nearer to a rival point than to its own ``anchor``."""
    if rivals is None or not len(rivals):
        return 0.0
    centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
    own = float(np.hypot(*(centre - anchor)))
    others = np.hypot(*(rivals - centre).T)
    others = others[np.hypot(*(rivals - anchor).T) > 0.5]
    return float(len(others) > 0 and others.min() < own)


def _place_labels(
    ax: Axes,
    anchors: np.ndarray,
    texts: list[str],
    colors: list[str],
    gids: list[str],
    obstacles: list[np.ndarray],
    clearance: float,
    rivals: np.ndarray | None = None,
) -> list[Any]:
    """Label each anchor (display pixels) with its text, beside the point where the label hides
    the fewest other labels, markers and error bars and stays inside the Axes: a greedy search
    over eight directions at growing distances, in drawing order, so the result is deterministic.
    A label pushed away from its point gets a leader line. With ``rivals`` (display pixels), a
    label avoids spots nearer to one of them than to its own anchor, where it would name the
    wrong point."""
    px_per_pt = ax.figure.dpi / 72.0
    frame = ax.bbox.extents
    placed: list[np.ndarray] = []
    drawn = []
    for anchor, text, color, gid in zip(anchors, texts, colors, gids, strict=True):
        probe = ax.annotate(text, (0, 0), xycoords="figure pixels", fontsize=8)
        extent = probe.get_window_extent()
        probe.remove()
        width, height = extent.width, extent.height
        best: tuple[float, int, np.ndarray, float] | None = None
        for distance_index, reach in enumerate(_REACHES):
            for dx, dy in _DIRECTIONS:
                gap = clearance * reach
                x0 = anchor[0] + (gap if dx > 0 else -gap - width if dx < 0 else -width / 2)
                y0 = anchor[1] + (
                    gap * 0.6 if dy > 0 else -gap * 0.6 - height if dy < 0 else -height / 2
                )
                if dx == 0:
                    y0 = anchor[1] + (gap if dy > 0 else -gap - height)
                box = np.array([x0, y0, x0 + width, y0 + height])
                inside = _area(box, np.array(frame))
                score = 5.0 * (width * height - inside)
                score += sum(20.0 * _area(box, other) for other in placed)
                score += sum(1.0 * _area(box, other) for other in obstacles)
                score += _misleading(box, anchor, rivals) * width * height
                score += distance_index * 1e-3
                if best is None or score < best[0]:
                    best = (score, distance_index, box, gap)
        assert best is not None
        _, distance_index, box, _ = best
        placed.append(box)
        offset = ((box[0] - anchor[0]) / px_per_pt, (box[1] - anchor[1]) / px_per_pt)
        arrow = (
            {"arrowstyle": "-", "color": color, "lw": 0.6, "shrinkA": 0, "shrinkB": 4}
            if distance_index > 0
            else None
        )
        label = ax.annotate(
            text,
            tuple(ax.transData.inverted().transform(anchor)),
            xytext=offset,
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=8,
            color=color,
            gid=gid,
            zorder=5,
            arrowprops=arrow,
            annotation_clip=False,
        )
        label.set_in_layout(False)
        drawn.append(label)
    return drawn


def plot_cost_quality(
    summary: pd.DataFrame,
    *,
    strategies: Iterable[str] | None = None,
    colors: Mapping[str, str] | None = None,
    log_cost: bool | None = None,
    direct_labels: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Each strategy as a point (cost per request, mean quality) with its 95 % confidence
    interval as a vertical bar, and the Pareto frontier through the ones nothing beats on both.

    Quality is the summary's ``mean_quality`` (a failed request counts as 0) and the bar spans
    ``quality_ci_low`` to ``quality_ci_high`` when the summary has them. A strategy that read the
    ground truth (``realizable`` False, e.g. the oracle) is no router you could deploy: it is drawn
    as a star labelled "(reads the truth)" and kept off the frontier. ``log_cost=None`` uses a
    log x axis when costs span 20×.

    Each point is labelled with its name beside it (``direct_labels=False``: a legend instead);
    points that would hide each other are drawn as nested rings, and a strategy with exactly the
    cost and quality of an earlier one says so, e.g. ``litellm-like (= weak only)``.
    ``strategies`` draws a subset, in that order; colours stay those of the whole summary.
    """
    from matplotlib.transforms import ScaledTranslation

    _check_frame(summary, "summary", ("strategy", "cost_per_request_usd", "mean_quality"))
    names = [str(s) for s in summary["strategy"]]
    colors = dict(colors) if colors is not None else strategy_colors(names)
    shown = _select(summary, strategies)
    known = shown.dropna(subset=["cost_per_request_usd", "mean_quality"])
    if known.empty:
        raise ArgumentError(
            "no strategy has both a cost and a quality: give models a `quality` or the requests "
            "ground truth, so answers can be scored"
        )
    ax = _axes(ax, (7.5, 4.5))
    bounds = _bounds_mask(known).to_list()
    rows = [
        (str(row["strategy"]), float(row["cost_per_request_usd"]), float(row["mean_quality"]))
        for _, row in known.iterrows()
    ]
    has_ci = {"quality_ci_low", "quality_ci_high"} <= set(known.columns)
    cis = []
    for (_, row), (name, cost, _) in zip(known.iterrows(), rows, strict=True):
        if has_ci:
            low, high = float(row["quality_ci_low"]), float(row["quality_ci_high"])
            if math.isfinite(low) and math.isfinite(high):
                color = colors.get(name, "0.3")
                ax.vlines(cost, low, high, color=color, lw=1.4, zorder=2, gid=f"ci:{name}")
                cis.append((cost, low, high))
    # only strategies you could deploy make the frontier; bounds are drawn but never on it
    frontier = pareto_frontier(known[~np.array(bounds, dtype=bool)])
    frontier_line = None
    if len(frontier):
        (frontier_line,) = ax.plot(
            frontier["cost_per_request_usd"].to_numpy(dtype=float),
            frontier["mean_quality"].to_numpy(dtype=float),
            color="black",
            ls="--",
            lw=1.0,
            zorder=1,
            label="Pareto frontier",
            gid="pareto",
        )
    ax.update_datalim([(cost, quality) for _, cost, quality in rows])
    xlabel = _cost_axis(ax, known["cost_per_request_usd"].to_numpy(dtype=float), log_cost)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean quality (failed = 0)")
    title = "Cost vs quality"
    if has_ci:
        title += " (bars: 95 % CI of the mean quality)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.12)
    if direct_labels and frontier_line is not None:
        _legend_outside(ax, [frontier_line])
    # lay the figure out first: which points hide each other depends on where they land
    ax.autoscale_view()
    _root(ax).draw_without_rendering()
    points = ax.transData.transform([(cost, quality) for _, cost, quality in rows])
    px_per_pt = ax.figure.dpi / 72.0
    groups = _overlap_groups(points, 8.0 * px_per_pt)
    texts = []
    markers = []
    handles: list[Any] = []
    for group in groups:
        first = rows[group[0]]
        spread = len(group) > _MAX_RINGS
        for depth, i in enumerate(group):
            name, cost, quality = rows[i]
            bound = bounds[i]
            color = colors.get(name, "0.3")
            rings = 0 if spread else len(group) - 1 - depth  # earlier members: outer rings
            size = (15 if bound else 8) + 6 * rings
            hollow = rings > 0
            transform = ax.transData
            if spread:
                # too many for rings: each on a small circle around the spot, on screen only
                angle = 2 * math.pi * depth / len(group)
                radius = max(6.0, 2.0 * len(group))
                shift = (radius * math.cos(angle), radius * math.sin(angle))
                transform = ax.transData + ScaledTranslation(
                    shift[0] / 72.0, shift[1] / 72.0, ax.figure.dpi_scale_trans
                )
                points[i] = points[i] + np.array(shift) * px_per_pt
            (handle,) = ax.plot(
                [cost],
                [quality],
                ls="none",
                marker="*" if bound else "o",
                ms=size,
                color=color,
                mfc="none" if hollow else color,
                mec=color if hollow else ("black" if bound else "white"),
                mew=2.0 if hollow else 0.8,
                zorder=3 + 0.01 * depth,
                transform=transform,
                label=f"{name} {READS_TRUTH}" if bound else name,
                gid=f"{'bound' if bound else 'point'}:{name}",
            )
            handles.append((i, handle))
            markers.append((points[i], size * px_per_pt / 2))
            text = f"{name} {READS_TRUTH}" if bound else name
            if depth and _same(rows[i][1:], first[1:]):
                text += f" (= {first[0]})"
            texts.append((i, text))
    if direct_labels:
        obstacles = [np.array([x - r, y - r, x + r, y + r]) for (x, y), r in markers]
        for cost, low, high in cis:
            (x, y0), (_, y1) = ax.transData.transform([(cost, low), (cost, high)])
            obstacles.append(np.array([x - 1.5, min(y0, y1), x + 1.5, max(y0, y1)]))
        order = [i for i, _ in texts]
        _place_labels(
            ax,
            points[order],
            [text for _, text in texts],
            [text_color(colors.get(rows[i][0], "0.3")) for i in order],
            [f"label:{rows[i][0]}" for i in order],
            obstacles,
            clearance=7.0 * px_per_pt,
        )
    else:
        ordered = [handle for _, handle in sorted(handles, key=lambda pair: pair[0])]
        _legend_outside(ax, ordered + ([frontier_line] if frontier_line is not None else []))
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
_SETTING_COLUMNS = ("threshold", "target_share", "value")


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
    setting: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """A cost–quality curve from a sweep, with reference points to beat and bounds.

    ``curve`` has ``cost_per_request_usd`` and ``mean_quality`` (one row per setting), and
    optionally the swept setting (some points are labelled with it: the column ``setting`` names,
    by default the first of ``threshold``, ``target_share`` or ``value`` it has) and ``label``
    (one line per label). ``references`` maps e.g. ``"weak"``, ``"strong"``, ``"oracle"``,
    ``"random"`` to a point; with both ``weak`` and ``strong`` the dotted line between them is what
    routing a random share of requests to the strong model buys, the baseline a router has to beat.

    ``bounds`` names the references that read the ground truth (default: ``"oracle"`` when
    present). A bound is no router you could deploy, only how far routing could go: each is drawn
    as a star of its own colour and labelled "(bound)".
    """
    _check_frame(curve, "curve", ("cost_per_request_usd", "mean_quality"))
    points = _check_references(references)
    bound_labels = _check_bounds(bounds, points)
    if setting is None:
        setting = next((c for c in _SETTING_COLUMNS if c in curve.columns), None)
    elif setting not in curve.columns:
        raise ArgumentError(f"setting {setting!r} is not a column of curve: {list(curve.columns)}")
    labels = (
        list(dict.fromkeys(curve["label"].astype(str))) if "label" in curve.columns else ["sweep"]
    )
    colors = strategy_colors(labels)
    ax = _axes(ax, (7.5, 4.5))
    costs = [curve["cost_per_request_usd"].to_numpy(dtype=float)]
    notes: list[tuple[str, float, float]] = []
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
            notes.extend(
                (f"{value:g}", float(cost), float(quality))
                for value, cost, quality in zip(
                    part[setting].iloc[::step],
                    part["cost_per_request_usd"].iloc[::step],
                    part["mean_quality"].iloc[::step],
                    strict=True,
                )
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
            style: dict[str, Any] = {
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
    ax.set_xlabel(_cost_axis(ax, np.concatenate(costs), None))
    ax.set_ylabel("mean quality (failed = 0)")
    title = "Cost–quality curve"
    if setting is not None:
        title += f" (points labelled with their {setting.replace('_', ' ')})"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.08)
    _legend_outside(ax)
    ax.autoscale_view()
    _root(ax).draw_without_rendering()
    _nest_bounds(ax, bound_labels)
    _label_settings(ax, notes)
    return ax


def _nest_bounds(ax: Axes, bound_labels: list[str]) -> None:
    """Bounds that land on one spot are nested: each earlier star is drawn larger behind the
    later ones, so every star's colour stays visible."""
    stars = [
        line for label in bound_labels for line in ax.lines if line.get_gid() == f"bound:{label}"
    ]
    if len(stars) < 2:
        return
    xy = np.array([np.asarray(s.get_xydata(), dtype=float)[0] for s in stars])
    points = ax.transData.transform(xy)
    px_per_pt = ax.figure.dpi / 72.0
    for group in _overlap_groups(points, 12.0 * px_per_pt):
        for depth, i in enumerate(group):
            rings = len(group) - 1 - depth
            stars[i].set_markersize(15 + 9 * rings)
            stars[i].set_zorder(4 + 0.01 * depth)


def _line_obstacles(ax: Axes, step: float) -> list[np.ndarray]:
    """Boxes along every line of ``ax`` (display pixels), ``step`` apart and ``step`` wide, so
    labels keep a little off the curves, the random-mix line and the markers."""
    boxes = []
    for line in ax.lines:
        xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
        xy = xy[np.isfinite(xy).all(axis=1)]
        drawn = line.get_marker() not in (None, "None", "none", "", " ")
        r = max(line.get_markersize() * ax.figure.dpi / 72.0 / 2 if drawn else 0.0, step / 2)
        for point in xy:
            boxes.append(np.array([point[0] - r, point[1] - r, point[0] + r, point[1] + r]))
        for a, b in pairwise(xy):
            count = max(1, int(np.hypot(*(b - a)) // step))
            for t in np.linspace(0.0, 1.0, count + 1)[1:-1]:
                x, y = a + (b - a) * t
                boxes.append(np.array([x - step / 2, y - step / 2, x + step / 2, y + step / 2]))
    return boxes


def _label_settings(ax: Axes, notes: list[tuple[str, float, float]]) -> None:
    """Each setting's label beside its own sweep point, nearer to it than to any other point,
    off the lines and markers."""
    if not notes:
        return
    curves = [line for line in ax.lines if str(line.get_gid()).startswith("curve:")]
    rivals = ax.transData.transform(
        np.concatenate(
            [np.column_stack([c.get_xdata(), c.get_ydata()]) for c in curves] or [np.empty((0, 2))]
        )
    )
    px_per_pt = ax.figure.dpi / 72.0
    anchors = ax.transData.transform([(cost, quality) for _, cost, quality in notes])
    _place_labels(
        ax,
        anchors,
        [text for text, _, _ in notes],
        ["0.35"] * len(notes),
        ["setting"] * len(notes),
        _line_obstacles(ax, 3.0 * px_per_pt),
        clearance=4.0 * px_per_pt,
        rivals=rivals,
    )
