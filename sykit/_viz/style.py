"""What every plot shares: fixed colours, one colour per strategy, and small axis helpers.

A status, a cancel cause and a fallback reason look the same in every plot (``STATUS_COLORS``,
``CAUSE_HATCHES``, ``FALLBACK_COLORS``), and a strategy keeps its colour across the plots of one
comparison (:func:`strategy_colors`), so a reader learns the legend once. The helpers give each
plot its Axes, USD and log ticks that read as plain numbers, a legend clear of the data, the
strategy order, and a clear error for a frame that lacks a column. Matplotlib is imported inside
the helpers, when a plot is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._classify import FallbackReason
from .._errors import ArgumentError, ArgumentTypeError
from .._vocab import CancelCause, Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes


# -- fixed colours ---------------------------------------------------------------------------------

#: Attempt status → colour, in the timeline and the outcome bars.
STATUS_COLORS: dict[str, str] = {
    Status.OK: "#3a9a4f",
    Status.ERROR: "#d1495b",
    Status.CANCELLED: "#9e9e9e",
    Status.SKIPPED: "#dedede",
}
#: Cancel cause → hatch, so a cancelled bar says why without reading its label.
CAUSE_HATCHES: dict[str, str] = {
    CancelCause.LOST_RACE: "///",
    CancelCause.TIMEOUT: "xxx",
    CancelCause.ABANDONED: "...",
    CancelCause.REQUEST_FAILED: "\\\\\\",
    CancelCause.CANCELLED: "---",
}
CAUSE_LABELS: dict[str, str] = {
    CancelCause.LOST_RACE: "lost race",
    CancelCause.TIMEOUT: "timeout",
    CancelCause.ABANDONED: "abandoned",
    CancelCause.REQUEST_FAILED: "request failed",
    CancelCause.CANCELLED: "by the algorithm",
}
#: Fallback reason → colour (oranges: an error the candidate loop moved past).
FALLBACK_COLORS: dict[str, str] = {
    FallbackReason.RATE_LIMIT: "#f0a04b",
    FallbackReason.UNAVAILABLE: "#e07b39",
    FallbackReason.CONTEXT_WINDOW: "#c65f22",
    FallbackReason.CAPABILITY: "#f6c48b",
    FallbackReason.POLICY: "#a3501c",
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
        raise ArgumentTypeError("names must be a list of strategy names, not a single string")
    names = [str(n) for n in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ArgumentError(f"names must be unique; repeated: {repeated}")
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
        raise ArgumentTypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
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
        raise ArgumentTypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ArgumentError(f"{name} lacks the column(s) {missing}; it has {list(frame.columns)}")
    return frame
