"""A grid's summary as small multiples: one panel per value of ``col`` (and ``row``), a line per
strategy along ``x``.

A strategy that does not use the ``x`` axis (a reference such as "strong only") is one value per
panel: it is drawn as a dashed horizontal line across the panel, so the curves read against it. The quality interval is drawn as a band when ``y`` is
``mean_quality``. Every panel shares its y axis, so panels compare at a glance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError
from sykit._viz.style import _legend_outside, _strategy_order, strategy_colors

__all__ = ["GridPlots", "plot_grid_lines"]

_BANDS = {"mean_quality": ("quality_ci_low", "quality_ci_high")}
#: Up to this many lines along ``x`` each get their band; more get one only when highlighted.
_MAX_BANDS = 2


def _values(table: pd.DataFrame, column: str | None) -> list[Any]:
    if column is None:
        return [None]
    series = table[column]
    if isinstance(series.dtype, pd.CategoricalDtype):
        present = set(series.dropna())
        return [c for c in series.cat.categories if c in present]
    return sorted(series.dropna().unique().tolist())


def _x_places(series: pd.Series) -> tuple[pd.Series, list[Any] | None]:
    """Where each row sits along ``x``: its value on a numeric axis; on any other axis (text,
    flags, mixed labels) its place among the axis's values in their order, with those values
    as the tick labels (None for a numeric axis)."""
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return series.astype(float), None
    if isinstance(series.dtype, pd.CategoricalDtype):
        present = set(series.dropna())
        labels = [c for c in series.cat.categories if c in present]
    else:
        labels = list(dict.fromkeys(series.dropna().tolist()))
    where = {label: float(k) for k, label in enumerate(labels)}
    places = [math.nan if pd.isna(v) else where[v] for v in series.tolist()]
    return pd.Series(places, index=series.index, dtype=float), labels


def _panel(table: pd.DataFrame, column: str | None, value: Any) -> pd.DataFrame:
    if column is None:
        return table
    # a strategy that does not use the facet's axis belongs in every panel
    return table[(table[column] == value) | table[column].isna()]


def plot_grid_lines(
    table: pd.DataFrame,
    *,
    x: str,
    y: str = "mean_quality",
    col: str | None = None,
    row: str | None = None,
    axes: Sequence[str] = (),
    strategies: Sequence[str] | None = None,
    height: float = 3.0,
    highlight: str | None = None,
) -> Any:
    """Small multiples of a grid summary (see the module docstring); returns the Figure.
    ``highlight`` names the strategy drawn bold with its interval band."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    for name, role in ((x, "x"), (y, "y"), (col, "col"), (row, "row")):
        if name is not None and name not in table.columns:
            raise ArgumentError(
                f"{role}={name!r} is not a column of the summary; axes: {list(axes)}, "
                f"columns: {list(table.columns)}"
            )
    if not pd.api.types.is_numeric_dtype(table[y]):
        raise ArgumentError(f"y={y!r} is not a numeric column of the summary")
    free = [a for a in axes if a not in (x, col, row) and table[a].nunique(dropna=True) > 1]
    if free:
        raise ArgumentError(
            f"the axis {free} varies within a panel: facet it (col=/row=), or summarise a slice "
            "(grid.summary() filtered to one value) and plot that with plot_grid_lines"
        )
    order = _strategy_order(table, strategies)
    colors = strategy_colors(order)
    banded = _banded(table, x, y, order, highlight)
    cols, rows = _values(table, col), _values(table, row)
    figure, grid = plt.subplots(
        len(rows),
        len(cols),
        figsize=(0.6 + 3.6 * len(cols) + 1.8, 0.4 + height * len(rows)),
        sharex=True,
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    place, ticks = _x_places(table[x])
    x_all = place.dropna()
    x_span = (float(x_all.min()), float(x_all.max())) if len(x_all) else (0.0, 1.0)
    band = _BANDS[y] if banded else None
    for r, row_value in enumerate(rows):
        for c, col_value in enumerate(cols):
            ax = grid[r][c]
            panel = _panel(_panel(table, row, row_value), col, col_value)
            for name in order:
                lines = panel[panel["strategy"].astype(str) == name]
                if lines.empty:
                    continue
                color = colors[name]
                along = lines[lines[x].notna()]
                along = along.iloc[np.argsort(place.loc[along.index].to_numpy(), kind="stable")]
                if not along.empty:
                    xs = place.loc[along.index].to_numpy()
                    bold = name == highlight
                    ax.plot(
                        xs,
                        along[y],
                        marker="o",
                        ms=4 if bold else 3,
                        lw=2.4 if bold else 1.3,
                        color=color,
                        label=name,
                        zorder=3 if bold else 2,
                        gid=f"line:{name}",
                    )
                    if band is not None and name in banded:
                        low, high = along[band[0]], along[band[1]]
                        ax.fill_between(
                            xs, low, high, color=color, alpha=0.18, lw=0, gid=f"band:{name}"
                        )
                flat = lines[lines[x].isna()]
                if not flat.empty:
                    level = float(flat[y].iloc[0])
                    if math.isfinite(level):
                        ax.hlines(level, *x_span, colors=color, linestyles="--", lw=1.2, label=name)

            title = [f"{n} = {v}" for n, v in ((row, row_value), (col, col_value)) if n]
            if title:
                ax.set_title(", ".join(title), fontsize="small")
            if r == len(rows) - 1:
                ax.set_xlabel(x)
            if ticks is not None:
                ax.set_xticks(range(len(ticks)), [str(t) for t in ticks])
            if c == 0:
                ax.set_ylabel(y)
            ax.grid(alpha=0.3)
    handles, labels = [], []
    for ax in np.ravel(grid):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    for name in banded:
        handles.append(Patch(color=colors[name], alpha=0.18, lw=0))
        labels.append(f"95 % CI: {name}")
    if handles:
        _legend_outside(grid[0][-1], handles=handles, labels=labels, title="strategy")
    return figure


def _banded(
    table: pd.DataFrame, x: str, y: str, order: list[str], highlight: str | None
) -> list[str]:
    """The strategies whose interval is drawn as a band: the highlighted one, or every line
    when there are few enough that their bands do not bury each other."""
    band = _BANDS.get(y)
    if band is None or not set(band) <= set(table.columns):
        return []
    if highlight is not None:
        if highlight not in order:
            raise ArgumentError(f"highlight={highlight!r} is not a strategy; strategies: {order}")
        return [highlight]
    along = table[table[x].notna()]["strategy"].astype(str)
    lines = [name for name in order if name in set(along)]
    return lines if len(lines) <= _MAX_BANDS else []


class GridPlots:
    """``grid.plot``: figures of a grid's summary."""

    def __init__(self, grid: Any) -> None:
        self._grid = grid

    def lines(
        self,
        x: str,
        y: str = "mean_quality",
        *,
        col: str | None = None,
        row: str | None = None,
        summary: pd.DataFrame | None = None,
        highlight: str | None = None,
    ) -> Any:
        """``y`` (a summary column: ``mean_quality``, ``cost_per_1k_requests_usd``,
        ``latency_p99_s``, …) against the axis ``x`` (a numeric axis at its values, any other at
        evenly spaced places in its order), a line per strategy, one panel per value
        of ``col`` and ``row``. Every other axis must have one value (facet it or pass a
        filtered ``summary``). ``highlight`` draws one strategy bold with its quality band
        (with more than two lines, no other line gets one). Returns the Figure."""
        table = self._grid.summary() if summary is None else summary
        return plot_grid_lines(
            table,
            x=x,
            y=y,
            col=col,
            row=row,
            axes=self._grid.axes,
            strategies=self._grid.strategies,
            highlight=highlight,
        )
