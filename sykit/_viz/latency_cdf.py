"""Latency CDFs over all requests, one line per strategy, p50 and p99 marked.

Routing strategies differ most in the tail (a hedge or a timeout trims it, a cascade stretches
it), so the whole distribution is drawn on a log x axis rather than one summary number.

A failed request never finishes: it counts as latency +∞. Each curve is the share of *all* the
strategy's requests (every seed pooled) served within a given time, so it levels off at the
strategy's success rate and runs flat to the right edge; a strategy that fails fast cannot draw
the leftmost curve by dropping its failures. The legend gives each success rate, rounded down. Percentiles are
taken over all requests the same way, so a percentile that falls among the failures is infinite:
it gets no marker, and the legend says it is not reached.
"""

from __future__ import annotations

import math
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

_MARKED = ((0.5, "o"), (0.99, "D"))


def percentile_over_all(served: np.ndarray, requests: int, q: float) -> float:
    """The ``q`` quantile of all ``requests`` latencies when only ``served`` (sorted) finished and
    the rest count as +∞; ``inf`` when it falls among those, NaN when there are no requests.

    Linear interpolation like :func:`numpy.quantile`: with no failure the value equals
    ``numpy.quantile(served, q)``, the summary's ``latency_p50_s`` / ``latency_p99_s``.
    """
    if requests == 0:
        return math.nan
    position = (requests - 1) * q
    needed = math.floor(position) + (position > math.floor(position))  # highest rank used
    if needed >= len(served):
        return math.inf
    # the failures are never reached, so any value >= the largest served one stands in for +inf
    padded = np.concatenate([served, np.full(requests - len(served), served[-1])])
    return float(np.quantile(padded, q))


def _percent(part: int, whole: int) -> str:
    """``part / whole`` as a percentage rounded *down* (one decimal, more if needed to stay above
    0), so a legend never claims more success than there was nor rounds a failure away."""
    if (100 * part) % whole == 0:
        return str(100 * part // whole)
    digits = 1
    while (scaled := 100 * 10**digits * part // whole) == 0:
        digits += 1
    return f"{scaled / 10**digits:.{digits}f}"


def _label(name: str, served: int, requests: int, unreached: list[str]) -> str:
    if requests == 0:
        return f"{name} (no requests)"
    label = f"{name} ({_percent(served, requests)} % ok"
    if unreached:
        label += "; " + ", ".join(unreached) + " not reached"
    return label + ")"


def plot_latency_cdf(
    requests: pd.DataFrame,
    *,
    strategies: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    log: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Latency CDF over all requests per strategy (a failed request counts as +∞, so the curve
    levels off at the success rate, which the legend gives), p50 (●) and p99 (◆) marked.

    Rows of several seeds are pooled. A percentile that falls among the failed requests is
    infinite: it is not drawn and the legend says "not reached". The tail is where routing
    strategies differ, hence the log x axis.
    """
    _check_frame(requests, "requests", ("strategy", "status", "latency_s"))
    names = _strategy_order(requests, strategies)
    colors = dict(colors) if colors is not None else strategy_colors(names)
    ax = _axes(ax, (8.0, 4.2))
    curves = []
    for name in names:
        mine = requests[requests["strategy"].astype(str) == name]
        latency = mine["latency_s"].to_numpy(dtype=float)
        # served and timed; a request without a finite latency never finished, like a failure
        served = np.sort(latency[(mine["status"] == "ok").to_numpy() & np.isfinite(latency)])
        curves.append((name, served, len(mine)))
    drawable = np.concatenate([s for _, s, _ in curves] + [np.array([])])
    if log:
        drawable = drawable[drawable > 0]
    if len(drawable):
        low, high = float(drawable.min()), float(drawable.max())
        right = high * 1.25 if log else high + 0.05 * (high - low or high or 1.0)
    else:
        low, right = 1.0, 2.0
    for name, served, n in curves:
        color = colors.get(name, "0.3")
        shares = np.arange(1, len(served) + 1) / n if n else np.array([])
        shown = served > 0 if log else np.ones(len(served), dtype=bool)
        marks = [(q, m, percentile_over_all(served, n, q)) for q, m in _MARKED]
        unreached = [f"p{round(q * 100)}" for q, _, x in marks if math.isinf(x)]
        ax.plot(
            served[shown],
            shares[shown],
            color=color,
            lw=1.6,
            drawstyle="steps-post",
            label=_label(name, len(served), n, unreached),
            gid=f"cdf:{name}",
        )
        if n:
            # the failures never arrive: the curve stays at the success rate to the right edge
            start = float(served[shown][-1]) if shown.any() else low
            ax.plot(
                [start, right],
                [len(served) / n] * 2,
                color=color,
                lw=1.6,
                gid=f"plateau:{name}",
            )
        for q, marker, x in marks:
            if not math.isfinite(x) or (log and x <= 0):
                continue
            ax.plot(
                [x],
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
    for q, _ in _MARKED:
        ax.axhline(q, color="0.75", lw=0.8, ls=":", zorder=0)
    if log:
        ax.set_xscale("log")
        _plain_axis(ax.xaxis, lambda x, _pos: f"{x:g}", True)
    ax.set_xlim(right=right)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("latency (s, log scale)" if log else "latency (s)")
    ax.set_ylabel("share of all requests served")
    ax.set_title(
        "Latency CDF over all requests (failed = never served; ● p50, ◆ p99)",
        fontsize=10,
        loc="left",
    )
    ax.grid(color="0.92", which="major")
    _legend_outside(ax, title="strategy")
    return ax
