"""Agent sessions: what a strategy pays per session for the tasks it gets done, and one session
turn by turn.

:func:`plot_session_cost_success` puts each strategy at (cost per session, task success rate)
with both 95 % intervals, the trade-off a router for agents is chosen on;
:func:`plot_session_timeline` draws one session's turns as bars of prompt size, coloured by the
model that served each, split into the part read from the cache and the cold part, with model
switches, the failed turn and the turns never sent marked, which is where the cost of switching
models mid-session shows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import Kind
from sykit._results.health import shorten
from sykit._results.result import Comparison, Result
from sykit._viz.cost_quality import _place_labels, _root
from sykit._viz.style import (
    EDGE_COLOR,
    STATUS_COLORS,
    _axes,
    _check_frame,
    _legend_outside,
    _plain_axis,
    _usd,
    _usd_axis,
    strategy_colors,
    text_color,
)
from sykit.sessions._outcome import TaskOutcomes
from sykit.sessions._summary import CACHE_COLUMNS, _turns, session_summary

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The hatch of the prompt tokens a turn did not read from the cache (its cold part).
COLD_HATCH = "///"
NOT_SENT_COLOR = "#eeeeee"


def plot_session_cost_success(
    summary_or_comparison: pd.DataFrame | Comparison | Result,
    ax: Axes | None = None,
    *,
    outcomes: TaskOutcomes | None = None,
    colors: Mapping[str, str] | None = None,
) -> Axes:
    """Each strategy as a point (cost per session, task success rate) with its 95 % intervals as
    bars, in its strategy colour and labelled with its name beside the point.

    Takes a :func:`~sykit.sessions.session_summary` frame, or a Comparison (or Result) whose
    summary is computed here with ``outcomes``: success needs a
    :class:`~sykit.sessions.TaskOutcomes` and sessions whose turns name their task."""
    if isinstance(summary_or_comparison, Comparison | Result):
        summary = session_summary(summary_or_comparison, outcomes=outcomes)
    elif isinstance(summary_or_comparison, pd.DataFrame):
        if outcomes is not None:
            raise ArgumentError(
                "outcomes applies to a Comparison; a summary frame has its success rates already"
            )
        summary = summary_or_comparison
    else:
        raise ArgumentTypeError(
            "expected a session_summary() frame or a sy.Comparison, got "
            f"{type(summary_or_comparison).__name__}"
        )
    _check_frame(summary, "summary", ("strategy", "cost_per_session_usd", "success_rate"))
    names = [str(s) for s in summary["strategy"]]
    colors = dict(colors) if colors is not None else strategy_colors(names)
    known = summary.dropna(subset=["cost_per_session_usd", "success_rate"])
    if known.empty:
        raise ArgumentError(
            "no strategy has a task success rate: pass outcomes=sy.sessions.TaskOutcomes(...) "
            "and run sessions whose turns name their task (sy.sessions.grounded_sessions())"
        )
    ax = _axes(ax, (7.5, 4.5))
    points = []
    obstacles_data: list[tuple[tuple[float, float], tuple[float, float]]] = []
    for _, row in known.iterrows():
        name = str(row["strategy"])
        color = colors.get(name, "0.3")
        cost, success = float(row["cost_per_session_usd"]), float(row["success_rate"])
        success_ci = _interval(row, "success_ci_low", "success_ci_high")
        if success_ci is not None:
            low, high = success_ci
            ax.vlines(cost, low, high, color=color, lw=1.4, zorder=2, gid=f"ci:{name}")
            obstacles_data.append(((cost, low), (cost, high)))
        cost_ci = _interval(row, "cost_per_session_ci_low", "cost_per_session_ci_high")
        if cost_ci is not None:
            left, right = cost_ci
            ax.hlines(success, left, right, color=color, lw=1.4, zorder=2, gid=f"cost_ci:{name}")
            obstacles_data.append(((left, success), (right, success)))
        ax.plot(
            [cost],
            [success],
            ls="none",
            marker="o",
            ms=8,
            color=color,
            mec="white",
            mew=0.8,
            zorder=3,
            label=name,
            gid=f"point:{name}",
        )
        points.append((name, cost, success))
    from matplotlib.ticker import PercentFormatter

    _usd_axis(ax.xaxis)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("cost per session (USD)")
    ax.set_ylabel("task success rate")
    ax.set_title("Cost per session vs task success (bars: 95 % CIs)", fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.15)
    ax.autoscale_view()
    _root(ax).draw_without_rendering()
    anchors = ax.transData.transform([(cost, success) for _, cost, success in points])
    px_per_pt = ax.figure.dpi / 72.0
    radius = 4.0 * px_per_pt
    obstacles = [np.array([x - radius, y - radius, x + radius, y + radius]) for x, y in anchors]
    for start, end in obstacles_data:
        (x0, y0), (x1, y1) = ax.transData.transform([start, end])
        obstacles.append(
            np.array([min(x0, x1) - 1.5, min(y0, y1) - 1.5, max(x0, x1) + 1.5, max(y0, y1) + 1.5])
        )
    _place_labels(
        ax,
        anchors,
        [name for name, _, _ in points],
        [text_color(colors.get(name, "0.3")) for name, _, _ in points],
        [f"label:{name}" for name, _, _ in points],
        obstacles,
        clearance=7.0 * px_per_pt,
    )
    return ax


def _interval(row: pd.Series, low: str, high: str) -> tuple[float, float] | None:
    if low not in row.index or high not in row.index:
        return None
    a, b = float(row[low]), float(row[high])
    return (a, b) if math.isfinite(a) and math.isfinite(b) else None


def plot_session_timeline(result: Result, session_id: Any, ax: Axes | None = None) -> Axes:
    """One session turn by turn: a bar per sent turn as tall as its prompt, coloured by the model
    that served it; the part read from the cache solid and the cold part hatched (when the run
    records cache tokens), a dotted line where the model changed, the failed turn crossed and
    the planned turns never sent shaded."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    if isinstance(result, Comparison):
        raise ArgumentTypeError(
            "plot_session_timeline draws one run: pick it from the comparison, "
            "e.g. cmp['strategy'] or cmp.result('strategy', seed=0)"
        )
    if not isinstance(result, Result):
        raise ArgumentTypeError(f"result must be a sy.Result, got {type(result).__name__}")
    requests = result.requests.assign(seed=result.seed)
    if "session_id" not in requests.columns or requests["session_id"].isna().all():
        raise ArgumentError(
            "this run has no session rows (its requests have no session_id): run a list of "
            "sy.sessions.Session to draw one"
        )
    if isinstance(session_id, np.generic):
        session_id = session_id.item()
    mine = requests[requests["session_id"] == session_id]
    if mine.empty:
        known = list(dict.fromkeys(requests["session_id"].dropna().tolist()))
        sample = ", ".join(repr(k) for k in known[:5]) + (", …" if len(known) > 5 else "")
        raise ArgumentError(f"session {session_id!r} is not in this run (sessions: {sample})")
    ids = set(mine["request_id"].astype(object))
    attempts = result.attempts.assign(seed=result.seed)
    attempts = attempts[attempts["request_id"].astype(object).isin(ids)]
    turns = _turns(mine, attempts)
    cache = all(c in result.attempts.columns for c in CACHE_COLUMNS)
    models = _model_order(result.requests)
    palette = strategy_colors(models)
    ax = _axes(ax, (max(6.0, 1.5 + 0.28 * len(turns)), 3.8))

    handles: dict[str, Any] = {}
    previous = None
    for row in turns.itertuples(index=False):
        k = int(row.turn)
        if row.ok:
            model = str(row.served_model)
            color = palette.get(model, "0.5")
            total = float(row.input_tokens) if not pd.isna(row.input_tokens) else 0.0
            cached = float(row.cached_input_tokens) if cache else 0.0
            cached = 0.0 if math.isnan(cached) else min(cached, total)
            if cached > 0:
                ax.bar(
                    k,
                    cached,
                    width=0.8,
                    color=color,
                    edgecolor=EDGE_COLOR,
                    lw=0.5,
                    gid=f"cached:{k}",
                    zorder=2,
                )
            ax.bar(
                k,
                total - cached,
                bottom=cached,
                width=0.8,
                color=color,
                alpha=0.55 if cache else 1.0,
                edgecolor=EDGE_COLOR,
                lw=0.5,
                hatch=COLD_HATCH if cache else None,
                gid=f"turn:{k}",
                zorder=2,
            )
            handles.setdefault(model, Patch(facecolor=color, edgecolor=EDGE_COLOR, label=model))
            if previous is not None and previous != model:
                handles["switch"] = ax.axvline(
                    k - 0.5, color="0.3", ls=":", lw=1.0, gid=f"switch:{k}", label="model switch"
                )
            previous = model
        else:
            height = _failed_prompt(attempts, row.request_id)
            ax.bar(
                k,
                height,
                width=0.8,
                color=NOT_SENT_COLOR,
                edgecolor=STATUS_COLORS["error"],
                lw=0.8,
                gid=f"failed:{k}",
                zorder=2,
            )
            (cross,) = ax.plot(
                [k],
                [height],
                ls="none",
                marker="X",
                ms=10,
                color=STATUS_COLORS["error"],
                mec="black",
                mew=0.6,
                gid=f"failed_marker:{k}",
                label="turn failed",
                zorder=4,
            )
            handles["failed"] = cross
            previous = None
    sent = len(turns)
    planned = _planned(turns)
    if planned is not None and planned > sent:
        handles["not sent"] = ax.axvspan(
            sent - 0.5,
            planned - 0.5,
            color=NOT_SENT_COLOR,
            lw=0,
            zorder=0,
            gid="not_sent",
            label="planned, not sent",
        )
    if cache:
        handles["cached"] = Patch(
            facecolor="0.55", edgecolor=EDGE_COLOR, label="prompt read from cache"
        )
        handles["cold"] = Patch(
            facecolor="0.55",
            alpha=0.55,
            edgecolor=EDGE_COLOR,
            hatch=COLD_HATCH,
            label="prompt not cached (cold)",
        )
    ax.set_xlim(-0.6, max(sent, planned or 0) - 0.4)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("turn")
    ax.set_ylabel("prompt tokens")
    _plain_axis(ax.yaxis, lambda value, _pos=None: f"{value:,.0f}", False)
    ax.grid(axis="y", color="0.92", zorder=0)
    ax.set_axisbelow(True)
    answered = int(turns["ok"].sum())
    of = f"{answered} of {planned if planned is not None else '?'} turns answered"
    note = "" if cache else "; cache not recorded"
    ax.set_title(
        f"{shorten(result.strategy, 40)} · session {shorten(repr(session_id), 48)}\n{of}, "
        f"{_usd(float(turns['cost_usd'].sum()))}{note}",
        fontsize=10,
        loc="left",
    )
    legend = [h for key, h in handles.items() if key in models]
    legend += [
        handles[key] for key in ("switch", "failed", "not sent", "cached", "cold") if key in handles
    ]
    _legend_outside(ax, legend)
    return ax


def _model_order(requests: pd.DataFrame) -> list[str]:
    """Every model the run served, in a fixed order, so a model keeps its colour across the
    sessions of one run."""
    column = requests["served_model"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        return [str(c) for c in column.cat.categories]
    return [str(m) for m in dict.fromkeys(column.dropna())]


def _failed_prompt(attempts: pd.DataFrame, request_id: Any) -> float:
    """The prompt size a failed turn sent (its largest model attempt), 0 when none was made."""
    tried = attempts[
        (attempts["request_id"].astype(object) == request_id) & (attempts["kind"] == Kind.MODEL)
    ]
    return float(tried["input_tokens"].max()) if len(tried) else 0.0


def _planned(turns: pd.DataFrame) -> int | None:
    """The session's planned length from its metadata; the turns sent when every one was
    answered; None when unknown."""
    if "planned_turns" in turns.columns:
        values = pd.to_numeric(turns["planned_turns"], errors="coerce").dropna()
        if len(values):
            return int(values.iloc[0])
    return len(turns) if bool(turns["ok"].all()) else None
