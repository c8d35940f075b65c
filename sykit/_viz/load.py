"""Offered load next to latency: requests per second arriving over time, and the latency of the
requests that arrived in each bin.

A burst in the arrivals shows up as a queue, rate limits or a latency tail a little later; a
whole-run percentile hides when. Binning both by arrival time puts cause and effect on one
clock. :func:`offered_load` gives the table, :func:`plot_load` draws it in two panels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import RequestStatus
from sykit._viz.style import (
    _check_flag,
    _check_frame,
    _legend_outside,
    _strategy_order,
    chosen_strategies,
    strategy_colors,
    wrapped_name,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from sykit._results.result import Comparison, Result

__all__ = ["offered_load", "plot_load"]

_COLUMNS = (
    "strategy",
    "bin_start_s",
    "bin_end_s",
    "offered",
    "offered_per_s",
    "ok",
    "failed",
    "latency_p50_s",
    "latency_p99_s",
    "response_p50_s",
    "response_p99_s",
)


def _requests_of(source: object) -> tuple[pd.DataFrame, list[str] | None]:
    """The requests frame of a Result, a Comparison or the frame itself, and the strategy order
    the source fixes (None: the frame's)."""
    if isinstance(source, pd.DataFrame):
        frame, order = source, None
    else:
        frame = getattr(source, "requests", None)
        if not isinstance(frame, pd.DataFrame):
            raise ArgumentTypeError(
                "offered load needs a Result, a Comparison or a requests DataFrame, got "
                f"{type(source).__name__}"
            )
        strategies = getattr(source, "strategies", None)
        order = list(strategies) if isinstance(strategies, list) else None
    _check_frame(frame, "requests", ("strategy", "arrival_s", "end_s", "status", "latency_s"))
    if frame.empty:
        raise ArgumentError("offered load: the run has no requests")
    return frame, order


#: The most bins :func:`offered_load` makes, and :func:`plot_load` draws: far more than a table or
#: a figure can show, and a tiny ``bin_s`` would otherwise fill memory or hang the drawing.
MAX_BINS = 1_000_000
MAX_DRAWN_BINS = 100_000


def _round_up(value: float) -> float:
    """``value`` rounded up to two significant figures (a bin size that still fits)."""
    step = 10.0 ** (math.floor(math.log10(value)) - 1)
    return float(f"{math.ceil(value / step) * step:.12g}")


def _check_bins(arrival: np.ndarray, bin_s: float, limit: int, what: str) -> int:
    """How many bins of ``bin_s`` seconds cover the arrivals, or an error naming a ``bin_s`` that
    stays within ``limit``."""
    last = float(arrival.max()) if len(arrival) else 0.0
    bins = math.floor(last / bin_s) + 1
    if bins > limit:
        smallest = _round_up(last / (limit - 1))
        raise ArgumentError(
            f"bin_s={bin_s:g} cuts {last:g} s of arrivals into {bins:,} bins, more than {what} "
            f"({limit:,}); use bin_s={smallest:g} or more"
        )
    return bins


def offered_load(
    source: Result | Comparison | pd.DataFrame,
    bin_s: float = 10.0,
    *,
    strategies: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per strategy and bin of ``bin_s`` seconds of arrival time: the load offered and the
    latency of the requests that arrived then.

        sy.traffic.offered_load(res, bin_s=5.0)
        sy.traffic.offered_load(cmp, bin_s=60.0, strategies=["hedge"])

    Bins are ``[k·bin_s, (k+1)·bin_s)`` from second 0 to the last arrival's bin, the same for
    every strategy, empty ones included. Columns: ``strategy``, ``bin_start_s``, ``bin_end_s``,
    ``offered`` (requests that arrived in the bin), ``offered_per_s`` (``offered / bin_s``, per
    seed: a comparison's seeds are averaged), ``ok`` and ``failed`` (how those requests ended),
    ``latency_p50_s`` and ``latency_p99_s`` (over the ``ok`` ones, linear interpolation; NaN
    when none was served): ``latency_s`` as in ``summary()``, from the request's start to its
    end; ``response_p50_s`` and ``response_p99_s`` the same from its arrival (``queue_s +
    latency_s``), which counts the wait for a free slot under ``concurrency=``.
    """
    bin_s = check_real(bin_s, "bin_s", low=0, low_open=True)
    frame, order = _requests_of(source)
    names = _names(frame, order, strategies)
    arrival = frame["arrival_s"].to_numpy(dtype=float)
    if not np.isfinite(arrival).all():
        raise ArgumentError("offered load: requests.arrival_s must hold finite times")
    bins = _check_bins(arrival, bin_s, MAX_BINS, "a table can hold")
    index = np.floor(arrival / bin_s).astype(np.int64)
    ok = (frame["status"].astype(str) == RequestStatus.OK).to_numpy()
    latency = frame["latency_s"].to_numpy(dtype=float)
    response = frame["end_s"].to_numpy(dtype=float) - arrival
    label = frame["strategy"].astype(str).to_numpy()
    seeds = frame["seed"] if "seed" in frame.columns else None
    starts = np.arange(bins) * bin_s
    tables = []
    for name in names:
        mine = label == name
        runs = 1 if seeds is None else max(1, int(seeds[mine].nunique()))
        offered = np.bincount(index[mine], minlength=bins)
        answered = np.bincount(index[mine & ok], minlength=bins)
        served_index = index[mine & ok]
        percentiles = {}
        for measure, values in (("latency", latency), ("response", response)):
            p50 = np.full(bins, np.nan)
            p99 = np.full(bins, np.nan)
            served = values[mine & ok]
            for k in np.unique(served_index).tolist():
                p50[k], p99[k] = np.quantile(served[served_index == k], [0.5, 0.99])
            percentiles[f"{measure}_p50_s"] = p50
            percentiles[f"{measure}_p99_s"] = p99
        tables.append(
            pd.DataFrame(
                {
                    "strategy": name,
                    "bin_start_s": starts,
                    "bin_end_s": starts + bin_s,
                    "offered": offered,
                    "offered_per_s": offered / (bin_s * runs),
                    "ok": answered,
                    "failed": offered - answered,
                    **percentiles,
                }
            )
        )
    return pd.concat(tables, ignore_index=True)[list(_COLUMNS)]


def _names(
    frame: pd.DataFrame, order: list[str] | None, strategies: Sequence[str] | None
) -> list[str]:
    every = order if order is not None else _strategy_order(frame, None)
    return chosen_strategies(every, strategies, "these results")


def plot_load(
    source: Result | Comparison | pd.DataFrame,
    bin_s: float = 10.0,
    *,
    strategies: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    queue: bool = True,
    log: bool = False,
    ax: Any = None,
) -> Figure | SubFigure:
    """Two panels on one clock: the offered load (requests/s arriving per bin) above, and the
    latency p50 (dashed) and p99 (solid) of the requests that arrived in each bin below, one
    colour per strategy. The table is :func:`offered_load`'s: with ``queue=True`` the latency
    runs from each request's arrival (its ``response_*`` columns: a burst that fills the
    ``concurrency=`` slots shows as waiting), with ``queue=False`` from its start (``latency_*``,
    as ``summary()`` has it); the two agree when nothing waited.

        sy.traffic.plot_load(res, bin_s=10.0)
        sy.traffic.plot_load(cmp, bin_s=60.0, log=True)          # log latency axis

    When every strategy was offered the same load (the same arrivals) the top panel draws one
    line; otherwise one per strategy. ``ax`` is None (a new figure) or two Axes (load,
    latency). Returns the Figure.
    """
    queue, log = _check_flag(queue, "queue"), _check_flag(log, "log")
    measure = "response" if queue else "latency"
    bin_s = check_real(bin_s, "bin_s", low=0, low_open=True)
    frame, order = _requests_of(source)
    arrival = frame["arrival_s"].to_numpy(dtype=float)
    _check_bins(arrival[np.isfinite(arrival)], bin_s, MAX_DRAWN_BINS, "a figure can show")
    table = offered_load(source, bin_s, strategies=strategies)
    names = list(dict.fromkeys(table["strategy"]))
    if colors is None:
        colors = strategy_colors(order if order is not None else names)
    load_ax, latency_ax = _load_axes(ax)
    from matplotlib.lines import Line2D

    per = {name: table[table["strategy"] == name] for name in names}
    first = per[names[0]]
    edges = np.append(first["bin_start_s"].to_numpy(), first["bin_end_s"].to_numpy()[-1])
    same = all(
        np.array_equal(per[n]["offered_per_s"].to_numpy(), first["offered_per_s"].to_numpy())
        for n in names
    )
    if same:
        load_ax.stairs(
            first["offered_per_s"].to_numpy(), edges, color="0.2", label="offered", fill=False
        )
    else:
        for name in names:
            load_ax.stairs(
                per[name]["offered_per_s"].to_numpy(),
                edges,
                color=colors[name],
                label=wrapped_name(name),
            )
    load_ax.set_ylabel("offered load (requests/s)")
    load_ax.set_title(f"Offered load and latency per {bin_s:g} s of arrivals", loc="left")
    load_ax.set_ylim(bottom=0)
    load_ax.grid(axis="y", color="0.92")

    for name in names:
        rows = per[name]
        middle = ((rows["bin_start_s"] + rows["bin_end_s"]) / 2).to_numpy()
        color = colors[name]
        latency_ax.plot(middle, rows[f"{measure}_p99_s"].to_numpy(), "-", color=color, marker=".")
        latency_ax.plot(middle, rows[f"{measure}_p50_s"].to_numpy(), "--", color=color)
    latency_ax.set_ylabel("latency from arrival (s)" if queue else "latency (s)")
    latency_ax.set_xlabel("arrival time (s)")
    latency_ax.set_xlim(edges[0], edges[-1])
    if log:
        latency_ax.set_yscale("log")
    latency_ax.grid(axis="y", color="0.92")
    handles: list[Any] = [Line2D([], [], color=colors[n], label=wrapped_name(n)) for n in names]
    handles += [
        Line2D([], [], color="0.3", linestyle="-", marker=".", label="p99"),
        Line2D([], [], color="0.3", linestyle="--", label="p50"),
    ]
    _legend_outside(latency_ax, handles)
    if not same:
        _legend_outside(load_ax)
    return latency_ax.figure


def _load_axes(ax: Any) -> tuple[Axes, Axes]:
    from matplotlib.axes import Axes

    if ax is None:
        import matplotlib.pyplot as plt

        _, pair = plt.subplots(
            2,
            1,
            figsize=(9.0, 5.5),
            sharex=True,
            layout="constrained",
            gridspec_kw={"height_ratios": (1, 1.4)},
        )
        return pair[0], pair[1]
    given = list(ax) if isinstance(ax, Sequence | np.ndarray) else None
    if given is None or len(given) != 2 or not all(isinstance(a, Axes) for a in given):
        raise ArgumentTypeError(f"ax must be None or two Axes (load, latency), got {ax!r}")
    return given[0], given[1]
