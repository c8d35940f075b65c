"""Attempt outcomes and wasted spend per strategy: where the extra calls and the money go.

Each attempt gets one outcome (ok, retried, fell back: reason, failed, cancelled: cause, skipped),
stacked as attempts per request; beside it, the spend on answers nobody was served, by cause, with
its share of all spend. Together they show what a strategy's retries, races and fallbacks cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, SupportsFloat

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentTypeError
from sykit._base.vocab import Kind, RequestStatus, Status
from sykit._results.metrics import moved_on_by_strategy, retried_by_strategy
from sykit._viz.cost_quality import _root
from sykit._viz.latency_cdf import _percent, share_text
from sykit._viz.style import (
    CAUSE_HATCHES,
    CAUSE_LABELS,
    EDGE_COLOR,
    FALLBACK_COLORS,
    RETRIED_COLOR,
    STATUS_COLORS,
    UNUSED_COLOR,
    _check_flag,
    _check_frame,
    _legend_outside,
    _strategy_order,
    _usd_axis,
    strategy_colors,
    text_color,
    wrapped_name,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure


def outcome_categories(attempts: pd.DataFrame) -> pd.Series:
    """Each attempt's outcome: ``ok``, ``retried``, ``fell back: <reason>``, ``another model
    next``, ``failed``, ``cancelled: <cause>`` or ``skipped (cooldown)``.

    A failed attempt is ``retried`` whoever retried it: the host (``retried``), or the algorithm
    calling the same model again, as LiteLLM retries; ``another model next`` when the algorithm
    itself went on to another model; ``failed`` only when nothing followed it."""
    status = attempts["status"].astype(str).to_numpy()
    reason = attempts["fallback_reason"].astype(object).to_numpy()
    cause = attempts["cancel_cause"].astype(object).to_numpy()
    retried = attempts["retried"].to_numpy(dtype=bool)
    if "start_s" in attempts and "end_s" in attempts:
        by_strategy = retried_by_strategy(attempts)
        moved_on = moved_on_by_strategy(attempts, by_strategy)
        retried = retried | by_strategy
    else:
        moved_on = np.zeros(len(attempts), dtype=bool)
    out = np.empty(len(attempts), dtype=object)
    for i in range(len(attempts)):
        s = status[i]
        if s == Status.ERROR:
            if isinstance(reason[i], str):
                out[i] = f"fell back: {reason[i]}"
            elif retried[i]:
                out[i] = "retried"
            elif moved_on[i]:
                out[i] = "another model next"
            else:
                out[i] = "failed"
        elif s == Status.CANCELLED:
            c = cause[i] if isinstance(cause[i], str) else "cancelled"
            out[i] = f"cancelled: {CAUSE_LABELS.get(c, c)}"
        elif s == Status.SKIPPED:
            out[i] = "skipped (cooldown)"
        else:
            out[i] = s
    return pd.Series(out, index=attempts.index, name="outcome")


def _category_styles() -> dict[str, dict[str, Any]]:
    styles: dict[str, dict[str, Any]] = {"ok": {"color": STATUS_COLORS["ok"]}}
    styles["retried"] = {"color": RETRIED_COLOR}
    for reason, color in FALLBACK_COLORS.items():
        styles[f"fell back: {reason}"] = {"color": color}
    styles["another model next"] = {"color": STATUS_COLORS["error"], "hatch": "\\\\"}
    styles["failed"] = {"color": STATUS_COLORS["error"]}
    for cause, hatch in CAUSE_HATCHES.items():
        styles[f"cancelled: {CAUSE_LABELS[cause]}"] = {
            "color": STATUS_COLORS["cancelled"],
            "hatch": hatch,
        }
    styles["skipped (cooldown)"] = {"color": STATUS_COLORS["skipped"]}
    styles["unused answers"] = {"color": UNUSED_COLOR}
    return styles


#: Legend names that say what is counted: a "failed" bar segment is attempts, not requests.
OUTCOME_LABELS: dict[str, str] = {"failed": "failed attempt (no retry, no fallback)"}


def _color_ticklabels(ax: Axes, names: list[str], colors: Mapping[str, str]) -> None:
    """Strategy names in their colour, darkened where needed to read on white."""
    for label, name in zip(ax.get_xticklabels(), names, strict=True):
        label.set_color(text_color(colors.get(name, "black")))


def plot_outcomes(
    attempts: pd.DataFrame,
    requests: pd.DataFrame,
    *,
    strategies: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    ax: Any = None,
    wasted: bool = True,
) -> Figure | SubFigure:
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
    wasted = _check_flag(wasted, "wasted")
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
    axes[0].set_xticks(x, [wrapped_name(n) for n in names], rotation=25, ha="right")
    _color_ticklabels(axes[0], names, colors)
    axes[0].set_ylabel("attempts per request")
    title = "Attempt outcomes"
    status = requests["status"].astype(str) != RequestStatus.OK
    failed = status.groupby(requests["strategy"].astype(str)).sum().reindex(names).fillna(0)
    if failed.sum() > 0:
        title += " (on top: share of requests failed)"
        tops = per.sum(axis=1).to_numpy(dtype=float)
        for xi, top, lost, total in zip(x, tops, failed, n_requests, strict=True):
            text = f"{_percent(int(lost), int(total), up=True)} %" if total else ""
            _bar_note(axes[0], xi, top, text, "0.25", "failed_requests")
        axes[0].set_ylim(0, max(float(tops.max()), 1e-9) * 1.12)
    axes[0].set_title(title, fontsize=10, loc="left")
    axes[0].grid(axis="y", color="0.92")
    axes[0].set_axisbelow(True)

    if wasted:
        model = attempts[
            (attempts["kind"] == Kind.MODEL) & (attempts["status"] == Status.CANCELLED)
        ]
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
            _bar_note(axes[1], xi, top, f"{share_text(float(share))} %", "0.3", "wasted_share")
        axes[1].set_xlim(-0.5 - pad, len(names) - 0.5 + pad)
        axes[1].set_xticks(x, [wrapped_name(n) for n in names], rotation=25, ha="right")
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
            label=OUTCOME_LABELS.get(category, category),
        )
        for category, style in used.items()
    ]
    _legend_outside(axes[-1], handles, title="outcome")
    _fit_notes(axes)
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
            _, pair = plt.subplots(1, 2, figsize=(width, 4.3), layout="constrained", sharex=True)
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
        raise ArgumentTypeError(
            f"ax must be None or {'two Axes (outcomes, wasted spend)' if wasted else 'one Axes'}"
            f" with wasted={wasted}, got {ax!r}"
        )
    return given


def _notes(ax: Axes) -> list[Any]:
    return [t for t in ax.texts if t.get_gid() in ("failed_requests", "wasted_share")]


def _collide(boxes: list[Any], pad: float) -> bool:
    """Whether any two neighbouring boxes (left to right) come closer than ``pad`` pixels."""
    ordered = sorted(boxes, key=lambda b: b.x0)
    return any(b.x0 - a.x1 < pad for a, b in pairwise(ordered))


def _fit_notes(axes: list[Axes]) -> None:
    """Turn the notes on top of the bars upright when, laid out, any two would touch (many
    strategies on a narrow figure), and raise the y limit so upright notes stay inside."""
    root = _root(axes[0])
    root.draw_without_rendering()
    pad = 2.0 * root.dpi / 72.0
    crowded = [ax for ax in axes if _collide([t.get_window_extent() for t in _notes(ax)], pad)]
    for ax in crowded:
        for note in _notes(ax):
            note.set_rotation(90)
            note.set_ha("center")
    if not crowded:
        return
    root.draw_without_rendering()
    for ax in crowded:
        height = ax.bbox.height
        bottom, top = ax.get_ylim()
        needed = top
        for note in _notes(ax):
            tall = note.get_window_extent().height + 4.0 * root.dpi / 72.0
            bar = float(note.xy[1])
            if tall < 0.9 * height:
                needed = max(needed, bottom + (bar - bottom) * height / (height - tall))
        ax.set_ylim(bottom, needed)


def _bar_note(ax: Any, x: SupportsFloat, top: float, text: str, color: str, gid: str) -> None:
    """A small note centred just above a bar's top."""
    ax.annotate(
        text,
        (x, top),
        xytext=(0, 2),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=7,
        color=color,
        gid=gid,
    )
