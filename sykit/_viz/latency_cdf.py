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

from .._vocab import RequestStatus
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
#: The survival plot reaches further into the tail: p99.9 is where hedges and timeouts differ.
_MARKED_TAIL = ((0.5, "o"), (0.99, "D"), (0.999, "^"))


def _quantile_name(q: float) -> str:
    """``p50``, ``p99``, ``p99.9``."""
    return f"p{100 * q:.10g}"


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


def _stagger(xs: list[float], width: float) -> list[int]:
    """A row per marker so that markers closer than ``width`` (display units) along x never
    share one: the lowest free row, markers taken from left to right."""
    rows = [0] * len(xs)
    last: list[float] = []  # rightmost x in each row
    for i in sorted(range(len(xs)), key=lambda k: (xs[k], k)):
        row = next((r for r, x in enumerate(last) if xs[i] - x >= width), len(last))
        if row == len(last):
            last.append(xs[i])
        else:
            last[row] = xs[i]
        rows[i] = row
    return rows


def _percent_tick(value: float, _pos: object = None) -> str:
    return f"{100 * value:g} %"


def plot_latency_cdf(
    requests: pd.DataFrame,
    *,
    strategies: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
    log: bool = True,
    survival: bool = False,
    ax: Axes | None = None,
) -> Axes:
    """Latency CDF over all requests per strategy (a failed request counts as +∞, so the curve
    levels off at the success rate, which the legend gives), p50 (●) and p99 (◆) marked.

    Rows of several seeds are pooled. A percentile that falls among the failed requests is
    infinite: it is not drawn and the legend says "not reached". The tail is where routing
    strategies differ, hence the log x axis. ``survival=True`` draws 1 − CDF, the share of
    requests still waiting, on a log y axis, so p99 and p99.9 (▲) are as far apart as p50 and
    p90; a failed request waits forever, so the curve levels off at the failure rate. Markers
    that would hide each other are staggered in rows.
    """
    from matplotlib.transforms import ScaledTranslation

    _check_frame(requests, "requests", ("strategy", "status", "latency_s"))
    names = _strategy_order(requests, strategies)
    colors = dict(colors) if colors is not None else strategy_colors(names)
    marked = _MARKED_TAIL if survival else _MARKED
    ax = _axes(ax, (8.0, 4.2))
    curves = []
    for name in names:
        mine = requests[requests["strategy"].astype(str) == name]
        latency = mine["latency_s"].to_numpy(dtype=float)
        # served and timed; a request without a finite latency never finished, like a failure
        served = np.sort(
            latency[(mine["status"] == RequestStatus.OK).to_numpy() & np.isfinite(latency)]
        )
        curves.append((name, served, len(mine)))
    drawable = np.concatenate([s for _, s, _ in curves] + [np.array([])])
    if log:
        drawable = drawable[drawable > 0]
    if len(drawable):
        low, high = float(drawable.min()), float(drawable.max())
        right = high * 1.25 if log else high + 0.05 * (high - low or high or 1.0)
    else:
        low, right = 1.0, 2.0
    marks_to_draw: list[tuple[str, str, float, float]] = []
    for name, served, n in curves:
        color = colors.get(name, "0.3")
        shares = np.arange(1, len(served) + 1) / n if n else np.array([])
        shown = served > 0 if log else np.ones(len(served), dtype=bool)
        marks = [(q, m, percentile_over_all(served, n, q)) for q, m in marked]
        unreached = [_quantile_name(q) for q, _, x in marks if math.isinf(x)]
        ax.plot(
            served[shown],
            (1 - shares[shown]) if survival else shares[shown],
            color=color,
            lw=1.6,
            drawstyle="steps-post",
            label=_label(name, len(served), n, unreached),
            gid=f"{'survival' if survival else 'cdf'}:{name}",
        )
        level = len(served) / n if n else 0.0
        if n and not (survival and level == 1.0):
            # the failures never arrive: the curve stays at the success rate to the right edge
            start = float(served[shown][-1]) if shown.any() else low
            ax.plot(
                [start, right],
                [1 - level if survival else level] * 2,
                color=color,
                lw=1.6,
                gid=f"plateau:{name}",
            )
        for q, marker, x in marks:
            if not math.isfinite(x) or (log and x <= 0):
                continue
            marks_to_draw.append((name, marker, q, x))
    for q, _ in marked:
        ax.axhline(1 - q if survival else q, color="0.75", lw=0.8, ls=":", zorder=0)
    if log:
        ax.set_xscale("log")
        _plain_axis(ax.xaxis, lambda x, _pos: f"{x:g}", True)
    ax.set_xlim(right=right)
    if survival:
        most = max((n for _, _, n in curves), default=1)
        ax.set_yscale("log", nonpositive="clip")
        ax.set_ylim(0.5 * min(1 - marked[-1][0], 1 / max(most, 1)), 1.6)
        _plain_axis(ax.yaxis, _percent_tick, True)
    else:
        ax.set_ylim(0, 1.02)
    ax.autoscale_view()
    figure = ax.figure
    width = 7.0 * figure.dpi / 72.0
    step = 7.0 if survival else -7.0
    for q, _ in marked:
        here = [m for m in marks_to_draw if m[2] == q]
        where = [float(ax.transData.transform((x, 0.5))[0]) for *_, x in here]
        for (name, marker, _, x), row in zip(here, _stagger(where, width), strict=True):
            shift = ScaledTranslation(0, step * row / 72.0, figure.dpi_scale_trans)
            ax.plot(
                [x],
                [1 - q if survival else q],
                marker=marker,
                ms=6,
                color=colors.get(name, "0.3"),
                mec="white",
                mew=0.8,
                ls="none",
                zorder=4,
                transform=ax.transData + shift,
                gid=f"{_quantile_name(q)}:{name}",
            )
    ax.set_xlabel("latency (s, log scale)" if log else "latency (s)")
    if survival:
        ax.set_ylabel("share of all requests still waiting (log)")
        ax.set_title(
            "Latency tail over all requests: 1 − CDF (failed = waits forever; "
            "● p50, ◆ p99, ▲ p99.9)",
            fontsize=10,
            loc="left",
        )
    else:
        ax.set_ylabel("share of all requests served")
        ax.set_title(
            "Latency CDF over all requests (failed = never served; ● p50, ◆ p99)",
            fontsize=10,
            loc="left",
        )
    ax.grid(color="0.92", which="major")
    _legend_outside(ax, title="strategy")
    return ax
