"""What every plot shares: fixed colours, one colour per strategy, and small axis helpers.

A status, a cancel cause and a fallback reason look the same in every plot (``STATUS_COLORS``,
``CAUSE_HATCHES``, ``FALLBACK_COLORS``), and a strategy keeps its colour across the plots of one
comparison (:func:`strategy_colors`), so a reader learns the legend once. The helpers give each
plot its Axes, USD and log ticks that read as plain numbers, a legend clear of the data, the
strategy order, and a clear error for a frame that lacks a column. Matplotlib is imported inside
the helpers, when a plot is drawn.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import CancelCause, Status
from sykit._world.classify import FallbackReason

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import XAxis, YAxis


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

# tab10, then ten colours picked to stay apart from it and from each other (at least 24 CIELAB
# units between any two, none pale), so up to 20 strategies never share a colour.
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
    "#a6761d",
    "#f0027f",
    "#637939",
    "#1b9e77",
    "#fb8072",
    "#393b79",
    "#9e9ac8",
    "#bf5b17",
    "#7b4173",
    "#e7969c",
)
#: The WCAG contrast a text colour keeps against a white background (AA for normal text).
TEXT_CONTRAST = 4.5


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


#: Strategy names longer than this are wrapped onto lines in tick labels and legends, so one long
#: name cannot squeeze the plot beside it away.
NAME_WIDTH = 30


def wrapped_name(name: str) -> str:
    """``name`` as it is written on an axis or in a legend: wrapped when longer than
    :data:`NAME_WIDTH`, unchanged otherwise."""
    if len(name) <= NAME_WIDTH:
        return name
    return "\n".join(textwrap.wrap(name, NAME_WIDTH)) or name


def _luminance(color: Any) -> float:
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(color))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_on_white(color: Any) -> float:
    """WCAG contrast ratio of ``color`` against white (1 to 21)."""
    return 1.05 / (_luminance(color) + 0.05)


def text_color(color: Any) -> str:
    """``color`` darkened just enough to be read as text on white: a pale strategy colour (olive,
    cyan, orange) keeps its hue on tick and point labels but not its glare."""
    from matplotlib.colors import to_hex, to_rgb

    rgb = np.array(to_rgb(color))
    for step in range(21):
        shade = rgb * (1 - step / 20)
        if contrast_on_white(shade) >= TEXT_CONTRAST:
            return to_hex(tuple(shade))
    return "#000000"


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


#: Costs per request are tiny; the axis reads them per this many requests instead.
_COST_UNITS: tuple[tuple[float, str], ...] = (
    (1.0, "request"),
    (1e3, "1k requests"),
    (1e6, "1M requests"),
)


def cost_unit(costs: Any) -> tuple[float, str]:
    """The scale and the unit ("1k requests", …) that make the largest cost read as at least
    $0.10, so tick labels stay short (``$0.05`` per 1k requests rather than ``$0.00005``)."""
    values = np.abs(np.asarray(costs, dtype=float))
    values = values[np.isfinite(values)]
    top = float(values.max()) if len(values) else 0.0
    for scale, unit in _COST_UNITS:
        if top * scale >= 0.1:
            return scale, unit
    return _COST_UNITS[-1] if top > 0 else _COST_UNITS[0]


def _text_width(text: str, size: float) -> float:
    """Width of ``text`` in points at font ``size``, the way matplotlib lays it out."""
    import matplotlib as mpl

    font = tuple(
        str(mpl.rcParams[k])
        for k in ("font.family", "font.sans-serif", "font.style", "font.weight")
    )
    return _measured_width(text, size, font)


@functools.lru_cache(maxsize=4096)
def _measured_width(text: str, size: float, font: tuple[str, ...]) -> float:
    """:func:`_text_width`, measured once per text, size and font settings (``font``): a figure
    tries many tick layouts with the same labels."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    width, _, _ = text_to_path.get_text_width_height_descent(
        text, FontProperties(size=size), ismath=False
    )
    return float(width)


def _fitting_locator(formatter: Any, log: bool) -> Any:
    """A tick locator that never puts labels on top of each other."""
    from matplotlib.ticker import Locator, MaxNLocator

    class FittingLocator(Locator):
        """The densest readable ticks (1-2-5, 1-3, then powers of ten on a log axis; 1-2-2.5-5
        steps on a linear one) whose labels, measured at the tick font size, leave a gap."""

        @property
        def _axis(self) -> XAxis | YAxis:
            return cast("XAxis | YAxis", self.axis)  # the axis this locator was set on

        def __call__(self) -> Any:
            vmin, vmax = self._axis.get_view_interval()
            return self.tick_values(vmin, vmax)

        def tick_values(self, vmin: float, vmax: float) -> Any:
            vmin, vmax = sorted((float(vmin), float(vmax)))
            candidates = self._log(vmin, vmax) if log else self._linear(vmin, vmax)
            first = None  # the first fitting plan (used when none has two ticks)
            for ticks in candidates:
                if self._fits(ticks, vmin, vmax):
                    if len(ticks) >= 2:
                        return np.array(ticks)
                    first = ticks if first is None else first
            return np.array(first if first is not None else candidates[-1] if candidates else [])

        def _log(self, vmin: float, vmax: float) -> list[list[float]]:
            if vmin <= 0 or not math.isfinite(vmin) or not math.isfinite(vmax):
                return [[]]
            low, high = math.floor(math.log10(vmin)), math.ceil(math.log10(vmax))
            plans: list[tuple[tuple[float, ...], int]] = [
                ((1.0, 2.0, 5.0), 1),
                ((1.0, 3.0), 1),
                *[((1.0,), every) for every in (1, 2, 3, 5, 10)],
                (tuple(float(s) for s in range(1, 10)), 1),
            ]
            out = []
            for subs, every in plans:
                ticks = [
                    float(f"{s * 10.0**e:.12g}")
                    for e in range(low - 1, high + 1)
                    if e % every == 0
                    for s in subs
                ]
                out.append([t for t in ticks if vmin * (1 - 1e-9) <= t <= vmax * (1 + 1e-9)])
            return out

        def _linear(self, vmin: float, vmax: float) -> list[list[float]]:
            out = []
            for bins in range(9, 0, -1):
                ticks = MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)
                span = vmax - vmin or 1.0
                out.append(
                    [float(t) for t in ticks if vmin - 1e-9 * span <= t <= vmax + 1e-9 * span]
                )
            return out

        def _fits(self, ticks: list[float], vmin: float, vmax: float) -> bool:
            if len(ticks) < 2:
                return True
            import matplotlib as mpl

            ax = self._axis.axes
            horizontal = self._axis.axis_name == "x"
            key: Literal["xtick.labelsize", "ytick.labelsize"] = (
                "xtick.labelsize" if horizontal else "ytick.labelsize"
            )
            from matplotlib.font_manager import FontProperties

            size = FontProperties(size=mpl.rcParams[key]).get_size_in_points()
            length = (ax.bbox.width if horizontal else ax.bbox.height) * 72.0 / ax.figure.dpi
            if log:
                scale = math.log10(vmax) - math.log10(vmin)
                where = [(math.log10(t) - math.log10(vmin)) / scale * length for t in ticks]
            else:
                where = [(t - vmin) / ((vmax - vmin) or 1.0) * length for t in ticks]
            if horizontal:
                extents = [_text_width(str(formatter(t, i)), size) for i, t in enumerate(ticks)]
            else:
                extents = [1.2 * size] * len(ticks)
            gap = 0.8 * size
            return all(
                b - a >= (wa + wb) / 2 + gap
                for a, b, wa, wb in zip(where, where[1:], extents, extents[1:], strict=False)
            )

    return FittingLocator()


def _plain_axis(axis: Any, formatter: Any, log: bool, *, decades: float = 0.0) -> None:
    """Readable ticks: 0.2, 0.5, 1, 2, 5 on a log axis rather than powers of ten, and never more
    than the axis has room for (labels are measured, so they cannot collide)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    format_tick = FuncFormatter(formatter)
    axis.set_major_locator(_fitting_locator(format_tick, log))
    axis.set_major_formatter(format_tick)
    axis.set_minor_formatter(NullFormatter())


def _usd_axis(axis: Any, *, log: bool = False, decades: float = 0.0, scale: float = 1.0) -> None:
    """USD ticks; ``scale`` turns a cost per request into one per ``scale`` requests."""
    if scale == 1.0:
        _plain_axis(axis, _usd, log)
    else:
        _plain_axis(axis, lambda value, _pos=None: _usd(value * scale), log)


def _legend_outside(ax: Axes, handles: list[Any] | None = None, **kwargs: Any) -> Any:
    """A legend to the right of the Axes, clear of the data."""
    options: dict[str, Any] = {
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


def _check_flag(value: Any, name: str, *, none: bool = False) -> Any:
    """``value`` as a bool, or an error: a string such as ``"no"`` is truthy and would silently
    turn the option on."""
    if none and value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    allowed = "True, False or None" if none else "True or False"
    raise ArgumentTypeError(f"{name} must be {allowed}, got {value!r}")


def _check_frame(frame: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise ArgumentTypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ArgumentError(f"{name} lacks the column(s) {missing}; it has {list(frame.columns)}")
    return frame


def chosen_strategies(every: list[str], strategies: Sequence[str] | None, where: str) -> list[str]:
    """The strategies to draw: ``every`` one, or the named ones, checked against ``every``
    (``where`` names the results in the error: "this comparison", "these results")."""
    if strategies is None:
        return every
    if isinstance(strategies, str):
        raise ArgumentTypeError("strategies must be a list of strategy names, not one string")
    if not isinstance(strategies, Iterable):
        raise ArgumentTypeError(
            f"strategies must be a list of strategy names or None, got {type(strategies).__name__}"
        )
    names = [str(s) for s in strategies]
    if not names:
        raise ArgumentError(f"strategies is empty: name at least one of {every}, or pass None")
    unknown = [s for s in names if s not in every]
    if unknown:
        raise ArgumentError(f"strategies {unknown} are not in {where}: {every}")
    repeated = list(dict.fromkeys(s for s in names if names.count(s) > 1))
    if repeated:
        raise ArgumentError(f"strategies repeats {repeated}; name each strategy once")
    return names
