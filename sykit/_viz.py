"""Plots of runs and comparisons: what each attempt did, and what each strategy costs and earns.

Matplotlib loads only when a plot is drawn. Like seaborn, every plot draws on the Axes it is given
(or on a new figure) and returns it. Colours mean the same thing everywhere: status and cause
colours are fixed, and a strategy keeps its colour in every plot of a comparison because colours
follow the comparison's strategy order (:func:`strategy_colors`).

    res.plot.timeline()              # the request with the most attempts
    cmp.plot.cost_quality()          # scatter + Pareto frontier
    cmp.plot.latency_cdf()           # per strategy, log x, p50/p99 marked
    cmp.plot.outcomes()              # attempt outcomes and wasted spend per strategy
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._metrics import pareto_frontier

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ._results import Comparison, Result

__all__ = [
    "CAUSE_HATCHES",
    "FALLBACK_COLORS",
    "STATUS_COLORS",
    "ComparisonPlots",
    "ResultPlots",
    "outcome_categories",
    "plot_cost_quality",
    "plot_cost_quality_curve",
    "plot_latency_cdf",
    "plot_outcomes",
    "plot_timeline",
    "strategy_colors",
]

# -- fixed colours ---------------------------------------------------------------------------------

#: Attempt status → colour, in the timeline and the outcome bars.
STATUS_COLORS: dict[str, str] = {
    "ok": "#3a9a4f",
    "error": "#d1495b",
    "cancelled": "#9e9e9e",
    "skipped": "#dedede",
}
#: Cancel cause → hatch, so a cancelled bar says why without reading its label.
CAUSE_HATCHES: dict[str, str] = {
    "lost_race": "///",
    "timeout": "xxx",
    "abandoned": "...",
    "request_failed": "\\\\\\",
    "cancelled": "---",
}
CAUSE_LABELS: dict[str, str] = {
    "lost_race": "lost race",
    "timeout": "timeout",
    "abandoned": "abandoned",
    "request_failed": "request failed",
    "cancelled": "by the algorithm",
}
#: Fallback reason → colour (oranges: an error the candidate loop moved past).
FALLBACK_COLORS: dict[str, str] = {
    "rate_limit": "#f0a04b",
    "unavailable": "#e07b39",
    "context_window": "#c65f22",
    "capability": "#f6c48b",
    "policy": "#a3501c",
}
RETRIED_COLOR = "#f2a7b0"
UNUSED_COLOR = "#a9d6b0"
EDGE_COLOR = "#444444"
RACE_COLOR = "#4c78a8"

# tab10, then the lighter half of tab20: readable, and distinct for up to 20 strategies.
_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#c7c7c7",
    "#dbdb8d",
    "#9edae5",
)


def strategy_colors(names: Sequence[str]) -> dict[str, str]:
    """One colour per strategy, by position: the same ordered names always get the same colours,
    so a strategy looks the same in every plot of one comparison."""
    if isinstance(names, str):
        raise TypeError("names must be a list of strategy names, not a single string")
    names = [str(n) for n in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"names must be unique; repeated: {repeated}")
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(names)}


# -- helpers --------------------------------------------------------------------------------------


def _axes(ax: Any, figsize: tuple[float, float]) -> Axes:
    """The given Axes, or one on a new pyplot figure (so Jupyter shows it after the cell)."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=figsize, layout="constrained")
        return ax
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def _usd(value: float, _pos: Any = None) -> str:
    if value == 0 or not math.isfinite(value):
        return "$0"
    text = np.format_float_positional(abs(value), precision=3, fractional=False, trim="-")
    return ("-$" if value < 0 else "$") + text


def _plain_axis(axis: Any, formatter: Any, log: bool, *, decades: float = 0.0) -> None:
    """Readable ticks: 0.2, 0.5, 1, 2, 5 on a log axis rather than powers of ten (only powers of
    ten when the data span more than two and a half decades, so labels do not collide)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if log:
        subs = (1.0,) if decades > 2.5 else (1.0, 2.0, 5.0)
        axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(formatter))
    axis.set_minor_formatter(NullFormatter())


def _usd_axis(axis: Any, *, log: bool = False, decades: float = 0.0) -> None:
    _plain_axis(axis, _usd, log, decades=decades)


def _legend_outside(ax: Axes, handles: list[Any] | None = None, **kwargs: Any) -> Any:
    """A legend to the right of the Axes, clear of the data."""
    options = {
        "loc": "upper left",
        "bbox_to_anchor": (1.02, 1.0),
        "borderaxespad": 0.0,
        "frameon": False,
        "fontsize": "small",
    }
    options.update(kwargs)
    if handles is None:
        return ax.legend(**options)
    return ax.legend(handles=handles, **options)


def _strategy_order(frame: pd.DataFrame, strategies: Sequence[str] | None) -> list[str]:
    if strategies is not None:
        return [str(s) for s in strategies]
    column = frame["strategy"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        present = set(column.astype(str))
        return [str(c) for c in column.cat.categories if str(c) in present]
    return list(dict.fromkeys(column.astype(str)))


def _check_frame(frame: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks the column(s) {missing}; it has {list(frame.columns)}")
    return frame


# -- timeline -------------------------------------------------------------------------------------


def _lanes(rows: pd.DataFrame) -> pd.DataFrame:
    """Attempts in drawing order: each race's calls together, each call's retries together, groups
    by when they started."""
    group = [
        f"c{call}" if pd.isna(race) else f"r{int(race)}"
        for race, call in zip(rows["race_id"], rows["call_id"], strict=True)
    ]
    ordered = rows.assign(_group=group)
    ordered["_group_start"] = ordered.groupby("_group")["start_s"].transform("min")
    ordered["_call_start"] = ordered.groupby("call_id")["start_s"].transform("min")
    return ordered.sort_values(
        ["_group_start", "_group", "_call_start", "call_id", "start_s", "retry_index"],
        kind="stable",
    ).reset_index(drop=True)


def _served_lane(lanes: pd.DataFrame, request: pd.Series | None) -> int | None:
    """The lane of the attempt that served the request (the ``served`` column says which)."""
    if request is None or request["status"] != "ok" or pd.isna(request["served_model"]):
        return None
    if "served" in lanes:
        flagged = lanes.index[lanes["served"].astype(bool)]
        return int(flagged[0]) if len(flagged) else None
    candidates = lanes[
        (lanes["status"] == "ok")
        & (lanes["kind"] == "model")
        & (lanes["model"].astype(str) == str(request["served_model"]))
    ]
    if candidates.empty:
        return None
    served_cost = request["cost_usd"] - request["wasted_usd"] - request["routing_usd"]
    score = pd.DataFrame(
        {
            "gap": (candidates["cost_usd"] - served_cost).abs().round(12),
            "answer": (candidates["phase"] != "answer").astype(int),
            "end": -candidates["end_s"],
        },
        index=candidates.index,
    )
    return int(score.sort_values(["gap", "answer", "end"], kind="stable").index[0])


def _attempt_label(row: Any) -> str:
    status = row.status
    if status == "ok":
        return f"ok · {_usd(row.cost_usd)}"
    if status == "skipped":
        return "skipped (cooldown)"
    if status == "cancelled":
        cause = CAUSE_LABELS.get(str(row.cancel_cause), str(row.cancel_cause))
        return f"cancelled: {cause} · {_usd(row.cost_usd)}"
    code = "" if pd.isna(row.http_status) else f"{int(row.http_status)} "
    what = f"{code}{row.error_kind}"
    if isinstance(row.fallback_reason, str):
        return f"{what} · fell back: {row.fallback_reason}"
    if row.retried:
        return f"{what} · retried"
    return f"{what} · failed"


def _lane_names(lanes: pd.DataFrame) -> list[str]:
    """``model · phase``, plus ``call k`` when one model is called more than once in a phase (a
    hedge's copies) and ``retry k`` for retries."""
    calls: dict[tuple[str, str, str], list[int]] = {}
    for row in lanes.itertuples(index=False):
        seen = calls.setdefault((str(row.model), str(row.phase), str(row.kind)), [])
        if row.call_id not in seen:
            seen.append(row.call_id)
    names = []
    for row in lanes.itertuples(index=False):
        key = (str(row.model), str(row.phase), str(row.kind))
        parts = [key[0], key[1]]
        if row.kind == "decision":
            parts.append("decision")
        if len(calls[key]) > 1:
            parts.append(f"call {calls[key].index(row.call_id) + 1}")
        if row.retry_index > 0:
            parts.append(f"retry {row.retry_index}")
        names.append(" · ".join(parts))
    return names


def plot_timeline(
    attempts: pd.DataFrame,
    requests: pd.DataFrame,
    request_id: Any = None,
    *,
    strategy: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Every attempt of one request as a bar on the run clock: colour by status, hatch and label by
    cause (lost race, timeout, abandoned, fell back: reason), races shaded, the outcome starred.

    ``request_id=None`` picks the request with the most attempts: usually the one worth reading.
    """
    from matplotlib.patches import Patch

    _check_frame(attempts, "attempts", ("request_id", "start_s", "end_s", "status"))
    if attempts.empty:
        raise ValueError("attempts is empty: this run made no attempts to draw")
    if request_id is None:
        counts = attempts.groupby("request_id", observed=True, sort=False).size()
        request_id = counts.idxmax()
    if isinstance(request_id, np.generic):
        request_id = request_id.item()
    rows = attempts[attempts["request_id"] == request_id]
    if rows.empty:
        known = list(dict.fromkeys(attempts["request_id"].tolist()))
        sample = ", ".join(repr(k) for k in known[:5]) + (", …" if len(known) > 5 else "")
        raise ValueError(f"request_id {request_id!r} has no attempts in this run (ids: {sample})")
    match = requests[requests["request_id"] == request_id]
    request = match.iloc[0] if len(match) else None
    lanes = _lanes(rows)
    n = len(lanes)
    ax = _axes(ax, (10.0, max(2.6, 1.3 + 0.42 * n)))

    first = float(lanes["start_s"].min())
    last = float(np.nanmax(lanes["end_s"].to_numpy()))
    if request is not None:
        first = min(first, float(request["start_s"]))
        last = max(last, float(request["end_s"]))
    span = max(last - first, 0.05)
    served = _served_lane(lanes, request)
    failed_lane = None
    if served is None and request is not None and request["status"] != "ok":
        # the error that failed the request: the last attempt to end in an error, else the last lane
        errors = lanes.index[lanes["status"] == "error"]
        failed_lane = int(lanes.loc[errors, "end_s"].idxmax()) if len(errors) else n - 1
    marked = served if served is not None else failed_lane

    for y, row in enumerate(lanes.itertuples(index=False)):
        start, end = float(row.start_s), float(row.end_s)
        status = str(row.status)
        cause = str(row.cancel_cause) if status == "cancelled" else None
        ax.barh(
            y,
            end - start,
            left=start,
            height=0.62,
            color=STATUS_COLORS.get(status, STATUS_COLORS["error"]),
            edgecolor=EDGE_COLOR,
            linewidth=0.6,
            hatch=CAUSE_HATCHES.get(cause) if cause else None,
            gid="attempt",
            zorder=2,
        )
        if status == "skipped":
            ax.plot([start], [y], marker="x", color=EDGE_COLOR, ms=6, ls="none", zorder=3)
        ax.text(
            end + (0.04 if y == marked else 0.008) * span,
            y,
            _attempt_label(row),
            va="center",
            ha="left",
            fontsize=8,
            color="#222222",
            gid="attempt_label",
            zorder=4,
        )

    causes = lanes.loc[lanes["status"] == "cancelled", "cancel_cause"].dropna().astype(str).unique()
    handles: list[Any] = [
        Patch(facecolor=STATUS_COLORS[s], edgecolor=EDGE_COLOR, label=s)
        for s in STATUS_COLORS
        if (lanes["status"] == s).any() and s != "cancelled"
    ]
    handles += [
        Patch(
            facecolor=STATUS_COLORS["cancelled"],
            edgecolor=EDGE_COLOR,
            hatch=CAUSE_HATCHES.get(c),
            label=f"cancelled: {CAUSE_LABELS.get(c, c)}",
        )
        for c in CAUSE_HATCHES
        if c in causes
    ]

    races = lanes.dropna(subset=["race_id"]).groupby("race_id", sort=True)
    for race_id, members in races:
        ys = members.index
        ax.axhspan(
            ys.min() - 0.45,
            ys.max() + 0.45,
            color=RACE_COLOR,
            alpha=0.12,
            lw=0,
            zorder=0,
            gid=f"race:{race_id}",
        )
    if len(races):
        handles.append(Patch(facecolor=RACE_COLOR, alpha=0.12, label="race / timeout group"))

    if served is not None:
        (star,) = ax.plot(
            [float(lanes.loc[served, "end_s"])],
            [served],
            marker="*",
            ms=15,
            color="#ffcc00",
            mec="black",
            mew=0.8,
            ls="none",
            zorder=5,
            label=f"served by {request['served_model']}",
            gid="outcome",
        )
        handles.append(star)
    elif failed_lane is not None:
        (cross,) = ax.plot(
            [float(request["end_s"])],
            [failed_lane],
            marker="X",
            ms=11,
            color=STATUS_COLORS["error"],
            mec="black",
            mew=0.8,
            ls="none",
            zorder=5,
            label=f"failed: {request['error_kind']}",
            gid="outcome",
        )
        handles.append(cross)
    if request is not None:
        routing_end = float(request["start_s"] + request["routing_s"])
        if (lanes["phase"] == "answer").any() and (lanes["phase"] == "routing").any():
            handles.append(
                ax.axvline(routing_end, color="0.45", ls="--", lw=0.9, label="routing done")
            )
        handles.append(
            ax.axvline(float(request["end_s"]), color="black", lw=1.0, label="request end")
        )

    ax.set_yticks(range(n), _lane_names(lanes), fontsize=8)
    ax.set_ylim(n - 0.4, -0.6)
    ax.set_xlim(first - 0.02 * span, last + 0.42 * span)
    ax.set_xlabel("run clock (s)")
    ax.grid(axis="x", color="0.9", zorder=0)
    ax.set_axisbelow(True)
    who = f"{strategy} · " if strategy else ""
    if request is not None:
        verdict = (
            f"served by {request['served_model']}"
            if request["status"] == "ok"
            else f"failed ({request['error_kind']})"
        )
        title = (
            f"{who}request {request_id!r}: {verdict} in {request['latency_s']:.2f} s, "
            f"{n} attempts, {_usd(request['cost_usd'])}"
        )
    else:
        title = f"{who}request {request_id!r}: {n} attempts"
    ax.set_title(title, fontsize=10, loc="left")
    _legend_outside(ax, handles)
    return ax


# -- latency CDF ----------------------------------------------------------------------------------


def plot_latency_cdf(
    requests: pd.DataFrame,
    *,
    strategies: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    log: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Latency CDF of successful requests per strategy, p50 (●) and p99 (◆) marked: the tail is
    where routing strategies differ, hence the log x axis."""
    _check_frame(requests, "requests", ("strategy", "status", "latency_s"))
    names = _strategy_order(requests, strategies)
    colors = dict(colors) if colors is not None else strategy_colors(names)
    ax = _axes(ax, (8.0, 4.2))
    for name in names:
        mine = requests[(requests["strategy"].astype(str) == name) & (requests["status"] == "ok")]
        latencies = np.sort(mine["latency_s"].dropna().to_numpy(dtype=float))
        if log:
            latencies = latencies[latencies > 0]
        color = colors.get(name, "0.3")
        if not len(latencies):
            ax.plot([], [], color=color, label=name, gid=f"cdf:{name}")
            continue
        fraction = np.arange(1, len(latencies) + 1) / len(latencies)
        ax.plot(latencies, fraction, color=color, lw=1.6, label=name, gid=f"cdf:{name}")
        for q, marker in ((0.5, "o"), (0.99, "D")):
            ax.plot(
                [float(np.quantile(latencies, q))],
                [q],
                marker=marker,
                ms=6,
                color=color,
                mec="white",
                mew=0.8,
                ls="none",
                zorder=4,
                gid=f"p{round(q * 100)}:{name}",
            )
    for q in (0.5, 0.99):
        ax.axhline(q, color="0.75", lw=0.8, ls=":", zorder=0)
    if log:
        ax.set_xscale("log")
        _plain_axis(ax.xaxis, lambda x, _pos: f"{x:g}", True)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("latency (s, log scale)" if log else "latency (s)")
    ax.set_ylabel("fraction of successful requests")
    ax.set_title("Latency CDF of successful requests (● p50, ◆ p99)", fontsize=10, loc="left")
    ax.grid(color="0.92", which="major")
    _legend_outside(ax, title="strategy")
    return ax


# -- cost vs quality ------------------------------------------------------------------------------


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
        raise ValueError(
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
        raise TypeError(
            "references must map a label to a (cost_per_request_usd, mean_quality) pair, "
            f"got {type(references).__name__}"
        )
    checked = {}
    for label, point in references.items():
        try:
            cost, quality = point
            checked[str(label)] = (float(cost), float(quality))
        except (TypeError, ValueError):
            raise ValueError(
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


# -- attempt outcomes -----------------------------------------------------------------------------


def outcome_categories(attempts: pd.DataFrame) -> pd.Series:
    """Each attempt's outcome: ``ok``, ``retried``, ``fell back: <reason>``, ``failed``,
    ``cancelled: <cause>`` or ``skipped (cooldown)``."""
    status = attempts["status"].astype(str).to_numpy()
    reason = attempts["fallback_reason"].astype(object).to_numpy()
    cause = attempts["cancel_cause"].astype(object).to_numpy()
    retried = attempts["retried"].to_numpy(dtype=bool)
    out = np.empty(len(attempts), dtype=object)
    for i in range(len(attempts)):
        s = status[i]
        if s == "error":
            if isinstance(reason[i], str):
                out[i] = f"fell back: {reason[i]}"
            elif retried[i]:
                out[i] = "retried"
            else:
                out[i] = "failed"
        elif s == "cancelled":
            c = cause[i] if isinstance(cause[i], str) else "cancelled"
            out[i] = f"cancelled: {CAUSE_LABELS.get(c, c)}"
        elif s == "skipped":
            out[i] = "skipped (cooldown)"
        else:
            out[i] = s
    return pd.Series(out, index=attempts.index, name="outcome")


def _category_styles() -> dict[str, dict[str, Any]]:
    styles: dict[str, dict[str, Any]] = {"ok": {"color": STATUS_COLORS["ok"]}}
    styles["retried"] = {"color": RETRIED_COLOR}
    for reason, color in FALLBACK_COLORS.items():
        styles[f"fell back: {reason}"] = {"color": color}
    styles["failed"] = {"color": STATUS_COLORS["error"]}
    for cause, hatch in CAUSE_HATCHES.items():
        styles[f"cancelled: {CAUSE_LABELS[cause]}"] = {
            "color": STATUS_COLORS["cancelled"],
            "hatch": hatch,
        }
    styles["skipped (cooldown)"] = {"color": STATUS_COLORS["skipped"]}
    styles["unused answers"] = {"color": UNUSED_COLOR}
    return styles


def _color_ticklabels(ax: Axes, names: list[str], colors: Mapping[str, str]) -> None:
    for label, name in zip(ax.get_xticklabels(), names, strict=True):
        label.set_color(colors.get(name, "black"))


def plot_outcomes(
    attempts: pd.DataFrame,
    requests: pd.DataFrame,
    *,
    strategies: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    ax: Any = None,
    wasted: bool = True,
) -> Figure:
    """Attempts per request by outcome, stacked per strategy, and (``wasted=True``) the spend on
    answers nobody was served, by cause: where a strategy's extra calls and money go.

    ``ax`` is None (a new figure), one Axes (outcomes only) or two (outcomes, wasted spend).
    Returns the Figure.
    """
    from matplotlib.patches import Patch

    _check_frame(
        attempts, "attempts", ("strategy", "status", "fallback_reason", "cancel_cause", "retried")
    )
    _check_frame(requests, "requests", ("strategy", "cost_usd", "wasted_usd"))
    names = _strategy_order(requests, strategies)
    colors = dict(colors) if colors is not None else strategy_colors(names)
    axes = _outcome_axes(ax, wasted, len(names))
    styles = _category_styles()

    n_requests = requests["strategy"].astype(str).value_counts().reindex(names).fillna(0)
    per = pd.crosstab(attempts["strategy"].astype(str), outcome_categories(attempts))
    per = per.reindex(index=names, fill_value=0)
    order = [c for c in styles if c in per.columns and per[c].sum() > 0]
    per = per[order].div(n_requests.replace(0, np.nan), axis=0).fillna(0.0)

    x = np.arange(len(names))
    width = 0.7
    used: dict[str, dict[str, Any]] = {}
    _stack_bars(
        axes[0], x, width, {c: per[c].to_numpy(dtype=float) for c in order}, styles, used, "outcome"
    )
    pad = max(0.0, (3 - len(names)) * 0.5)
    axes[0].set_xlim(-0.5 - pad, len(names) - 0.5 + pad)
    axes[0].set_xticks(x, names, rotation=25, ha="right")
    _color_ticklabels(axes[0], names, colors)
    axes[0].set_ylabel("attempts per request")
    axes[0].set_title("Attempt outcomes", fontsize=10, loc="left")
    axes[0].grid(axis="y", color="0.92")
    axes[0].set_axisbelow(True)

    if wasted:
        model = attempts[(attempts["kind"] == "model") & (attempts["status"] == "cancelled")]
        model_cause = outcome_categories(model)
        cancelled = (
            model.groupby([model["strategy"].astype(str), model_cause])["cost_usd"]
            .sum()
            .unstack(fill_value=0.0)
            .reindex(index=names, fill_value=0.0)
        )
        total = requests.groupby(requests["strategy"].astype(str))["wasted_usd"].sum()
        total = total.reindex(names).fillna(0.0)
        spend = requests.groupby(requests["strategy"].astype(str))["cost_usd"].sum()
        spend = spend.reindex(names).fillna(0.0)
        cancelled_total = (
            cancelled.sum(axis=1) if len(cancelled.columns) else pd.Series(0.0, index=names)
        )
        parts = {c: cancelled[c] for c in styles if c in cancelled.columns}
        parts["unused answers"] = (total - cancelled_total).clip(lower=0.0)
        heights = {
            category: (values / n_requests.replace(0, np.nan)).fillna(0.0).to_numpy(dtype=float)
            for category, values in parts.items()
        }
        bottom = _stack_bars(
            axes[1], x, width, {c: h for c, h in heights.items() if h.any()}, styles, used, "wasted"
        )
        for xi, top, share in zip(
            x, bottom, (total / spend.replace(0, np.nan)).fillna(0.0), strict=True
        ):
            axes[1].annotate(
                f"{share:.0%}",
                (xi, top),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                color="0.3",
                gid="wasted_share",
            )
        axes[1].set_xlim(-0.5 - pad, len(names) - 0.5 + pad)
        axes[1].set_xticks(x, names, rotation=25, ha="right")
        _color_ticklabels(axes[1], names, colors)
        axes[1].set_ylabel("wasted spend per request (USD)")
        _usd_axis(axes[1].yaxis)
        axes[1].set_title("Wasted spend (share of spend on top)", fontsize=10, loc="left")
        axes[1].grid(axis="y", color="0.92")
        axes[1].set_axisbelow(True)
        if bottom.max() > 0:
            axes[1].set_ylim(0, bottom.max() * 1.12)
        else:
            axes[1].set_ylim(0, 1e-4)
            axes[1].text(
                0.5,
                0.5,
                "no wasted spend",
                transform=axes[1].transAxes,
                ha="center",
                va="center",
                color="0.4",
                fontsize=9,
            )

    handles = [
        Patch(
            facecolor=style["color"],
            edgecolor=EDGE_COLOR,
            linewidth=0.5,
            hatch=style.get("hatch"),
            label=category,
        )
        for category, style in used.items()
    ]
    _legend_outside(axes[-1], handles, title="outcome")
    return axes[0].figure


def _stack_bars(
    ax: Axes,
    x: np.ndarray,
    width: float,
    heights: dict[str, np.ndarray],
    styles: dict[str, dict[str, Any]],
    used: dict[str, dict[str, Any]],
    prefix: str,
) -> np.ndarray:
    """Stack one bar segment per category, in order; record the styles used; return the tops."""
    bottom = np.zeros(len(x))
    for category, values in heights.items():
        ax.bar(
            x,
            values,
            width,
            bottom=bottom,
            edgecolor=EDGE_COLOR,
            linewidth=0.5,
            label=category,
            gid=f"{prefix}:{category}",
            **styles[category],
        )
        bottom = bottom + values
        used[category] = styles[category]
    return bottom


def _outcome_axes(ax: Any, wasted: bool, n: int) -> list[Axes]:
    from matplotlib.axes import Axes

    if ax is None:
        import matplotlib.pyplot as plt

        width = min(16.0, max(10.0 if wasted else 6.0, 5.5 + 1.1 * n * (2 if wasted else 1)))
        if wasted:
            _, pair = plt.subplots(1, 2, figsize=(width, 4.3), layout="constrained")
            return list(pair)
        _, one = plt.subplots(figsize=(width, 4.3), layout="constrained")
        return [one]
    given = (
        [ax]
        if isinstance(ax, Axes)
        else list(ax)
        if isinstance(ax, Sequence | np.ndarray)
        else None
    )
    need = 2 if wasted else 1
    if given is None or len(given) != need or not all(isinstance(a, Axes) for a in given):
        raise TypeError(
            f"ax must be None or {'two Axes (outcomes, wasted spend)' if wasted else 'one Axes'}"
            f" with wasted={wasted}, got {ax!r}"
        )
    return given


# -- accessors ------------------------------------------------------------------------------------


class ResultPlots:
    """``res.plot``: plots of one run."""

    def __init__(self, result: Result) -> None:
        self._result = result

    @property
    def colors(self) -> dict[str, str]:
        return strategy_colors([self._result.strategy])

    def timeline(self, request_id: Any = None, ax: Axes | None = None) -> Axes:
        """One request's attempts on the run clock (default: the request with the most attempts)."""
        r = self._result
        return plot_timeline(r.attempts, r.requests, request_id, strategy=r.strategy, ax=ax)

    def latency_cdf(self, ax: Axes | None = None, *, log: bool = True) -> Axes:
        """The latency CDF of the successful requests, p50 and p99 marked."""
        return plot_latency_cdf(
            self._result.requests,
            strategies=[self._result.strategy],
            colors=self.colors,
            log=log,
            ax=ax,
        )

    def outcomes(self, ax: Any = None, *, wasted: bool = True) -> Figure:
        """Attempts per request by outcome, and wasted spend by cause; returns the Figure."""
        r = self._result
        return plot_outcomes(
            r.attempts,
            r.requests,
            strategies=[r.strategy],
            colors=self.colors,
            ax=ax,
            wasted=wasted,
        )


class ComparisonPlots:
    """``cmp.plot``: plots of a comparison, one colour per strategy throughout."""

    def __init__(self, comparison: Comparison) -> None:
        self._comparison = comparison

    @property
    def colors(self) -> dict[str, str]:
        """Strategy → colour, as every plot of this comparison uses them."""
        return strategy_colors(self._comparison.strategies)

    def cost_quality(self, ax: Axes | None = None, *, log_cost: bool | None = None) -> Axes:
        """Cost per request vs mean quality per strategy, with the Pareto frontier."""
        summary = self._comparison.summary()
        return plot_cost_quality(summary, colors=self.colors, log_cost=log_cost, ax=ax)

    def latency_cdf(self, ax: Axes | None = None, *, log: bool = True) -> Axes:
        """Latency CDFs of the successful requests, p50 and p99 marked."""
        return plot_latency_cdf(
            self._comparison.requests,
            strategies=self._comparison.strategies,
            colors=self.colors,
            log=log,
            ax=ax,
        )

    def outcomes(self, ax: Any = None, *, wasted: bool = True) -> Figure:
        """Attempts per request by outcome and wasted spend, per strategy; returns the Figure."""
        c = self._comparison
        return plot_outcomes(
            c.attempts,
            c.requests,
            strategies=c.strategies,
            colors=self.colors,
            ax=ax,
            wasted=wasted,
        )

    def timeline(
        self,
        strategy: str,
        request_id: Any = None,
        *,
        seed: int | None = None,
        ax: Axes | None = None,
    ) -> Axes:
        """One request's attempts under one strategy (and seed; default: the first run)."""
        c = self._comparison
        if strategy not in c.strategies:
            raise ValueError(f"strategy {strategy!r} is not in this comparison: {c.strategies}")
        runs = [r for r in c.results if r.strategy == strategy]
        if seed is not None:
            runs = [r for r in runs if r.seed == seed]
            if not runs:
                seeds = sorted({r.seed for r in c.results})
                raise ValueError(f"seed {seed!r} is not in this comparison: {seeds}")
        result = runs[0]
        return plot_timeline(result.attempts, result.requests, request_id, strategy=strategy, ax=ax)
