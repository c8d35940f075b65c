"""The playground's plots: ``cmp.plot`` drawn on a Figure of the playground's size, and the PNG output
an ipywidgets.Output shows."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sykit._base.errors import ArgumentError
from sykit._results.result import Comparison

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["DPI", "PLOTS", "draw", "drawable_plots", "figure_output", "text_output"]

#: The plots the playground can draw, by ``plot=`` value.
PLOTS: dict[str, str] = {
    "cost_quality": "cost vs quality",
    "latency_cdf": "latency CDF",
    "outcomes": "attempt outcomes",
    "timeline": "timeline",
}


#: Dots per inch of the playground's figures: its smallest text (7 pt) is 10 px or more.
DPI = 110

#: Why a plot is not offered, when the data cannot draw it.
_UNDRAWABLE = {
    "cost_quality": "cost vs quality is not offered: no strategy has graded answers (give the "
    "models a quality, or the requests a ground truth)",
}


def drawable_plots(summary: pd.DataFrame | None) -> tuple[list[str], list[str]]:
    """The plots (:data:`PLOTS` keys) a comparison with this ``summary`` can draw, and one
    readable line for each one it cannot, so a menu never offers a plot that fails."""
    graded = summary is not None and bool(
        summary[["cost_per_request_usd", "mean_quality"]].notna().all(axis=1).any()
    )
    missing = [] if graded else ["cost_quality"]
    return [p for p in PLOTS if p not in missing], [_UNDRAWABLE[p] for p in missing]


def draw(
    plot: str,
    comparison: Comparison,
    colors: Mapping[str, str] | None = None,
    strategy: str | None = None,
    summary: pd.DataFrame | None = None,
) -> Figure:
    """A Figure (not managed by pyplot, so nothing shows twice) with one of :data:`PLOTS`, drawn by
    ``comparison.plot`` with the playground's ``colors``; the timeline shows ``strategy`` (the
    first one when None or not in the comparison). ``summary``: the comparison's, if known."""
    from matplotlib.figure import Figure

    from sykit._viz import ComparisonPlots

    if plot not in PLOTS:
        raise ArgumentError(f"plot must be one of {list(PLOTS)}, got {plot!r}")
    plots = ComparisonPlots(comparison, colors=colors, summary=summary)
    if plot == "outcomes":
        figure = Figure(figsize=(10, 3.8), layout="constrained", dpi=DPI)
        plots.outcomes(ax=figure.subplots(1, 2))
        return figure
    if plot == "timeline":
        figure = Figure(figsize=(8.5, 3.2), layout="constrained", dpi=DPI)
        shown = strategy if strategy in comparison.strategies else comparison.strategies[0]
        plots.timeline(shown, ax=figure.subplots())
        return figure
    figure = Figure(figsize=(8.5, 3.8), layout="constrained", dpi=DPI)
    getattr(plots, plot)(ax=figure.subplots())
    return figure


def figure_output(figure: Figure) -> dict[str, Any]:
    """The figure as a PNG display output, at the figure's own dpi."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=figure.dpi, bbox_inches="tight")
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {
        "output_type": "display_data",
        "data": {"image/png": png, "text/plain": repr(figure)},
        "metadata": {},
    }


def text_output(text: str) -> dict[str, Any]:
    """A line of text as a stream output."""
    return {"output_type": "stream", "name": "stdout", "text": text + "\n"}
