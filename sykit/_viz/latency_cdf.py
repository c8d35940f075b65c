"""Latency CDFs of the successful requests, one line per strategy, p50 and p99 marked.

Routing strategies differ most in the tail (a hedge or a timeout trims it, a cascade stretches
it), so the whole distribution is drawn on a log x axis rather than one summary number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .style import (
    _axes,
    _check_frame,
    _legend_outside,
    _plain_axis,
    _strategy_order,
    strategy_colors,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes


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
