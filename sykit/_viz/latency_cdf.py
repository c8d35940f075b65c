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
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from sykit._base.vocab import RequestStatus
from sykit._viz.style import (
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


def _percent(part: int, whole: int, *, up: bool = False) -> str:
    """``part / whole`` as a percentage to two significant figures (one decimal at least), rounded
    *down* for a success share and *up* (``up=True``) for a failure share: a legend never claims
    more success than there was, a note never fewer failures, and a share that is neither none
    nor all never reads 0 or 100."""
    if (100 * part) % whole == 0:
        return str(100 * part // whole)
    return _round_percent(Fraction(100 * part, whole), up=up)


def _round_percent(exact: Fraction, *, up: bool) -> str:
    """A percentage strictly between 0 and 100, rounded one way to two significant figures."""
    digits = max(1, 1 - math.floor(math.log10(exact)))
    while True:
        scaled = exact * 10**digits
        shown = Fraction(math.ceil(scaled) if up else math.floor(scaled), 10**digits)
        if 0 < shown < 100:
            text = f"{float(shown):.{digits}f}"
            return text.rstrip("0").rstrip(".")
        digits += 1


def share_text(share: float, *, up: bool = True) -> str:
    """A share (0 to 1) as a percentage like :func:`_percent`: ``0.00027`` reads ``0.027``."""
    if not math.isfinite(share) or share <= 0:
        return "0"
    if share >= 1:
        return f"{100 * share:.0f}" if up else "100"
    return _round_percent(Fraction(f"{share:.12g}") * 100, up=up)


def _label(name: str, served: int, requests: int, unreached: list[str]) -> str:
    if requests == 0:
        return f"{name} (no requests)"
    label = f"{name} ({_percent(served, requests)} % ok"
    if unreached:
        label += "; " + ", ".join(unreached) + " not reached"
    return label + ")"


def _rings(xs: list[float], width: float) -> list[int]:
    """How many rings each marker gets so that markers closer than ``width`` (display units)
    along x all stay visible on the same spot: the first of a cluster is drawn largest, each
    later one inside it, so every marker stays exactly on its curve."""
    rings = [0] * len(xs)
    clusters: list[list[int]] = []
    for i in sorted(range(len(xs)), key=lambda k: (xs[k], k)):
        if clusters and xs[i] - xs[clusters[-1][0]] < width:
            clusters[-1].append(i)
        else:
            clusters.append([i])
    for cluster in clusters:
        for depth, i in enumerate(sorted(cluster)):
            rings[i] = len(cluster) - 1 - depth
    return rings


def _percent_tick(value: float, _pos: object = None) -> str:
    return f"{100 * value:g} %"


def _percentile_marker(
    ax: Axes,
    name: str,
    marker: str,
    q: float,
    x: float,
    rings: int,
    colors: Mapping[str, str],
    survival: bool,
) -> None:
    """A percentile marker exactly on its curve; one with ``rings`` is hollow and larger, so the
    markers drawn inside it on the same spot stay visible."""
    color = colors.get(name, "0.3")
    ax.plot(
        [x],
        [1 - q if survival else q],
        marker=marker,
        ms=6 + 3 * rings,
        color=color,
        mfc="none" if rings else color,
        mec=color if rings else "white",
        mew=1.3 if rings else 0.8,
        ls="none",
        zorder=4 + 0.01 * (10 - min(rings, 10)),
        gid=f"{_quantile_name(q)}:{name}",
    )


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
    p90; a failed request waits forever, so the curve levels off at the failure rate. Each
    marker sits exactly on its curve; markers that would hide each other are nested as rings.
    """
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
    width = 6.0 * figure.dpi / 72.0
    for q, _ in marked:
        here = [m for m in marks_to_draw if m[2] == q]
        where = [float(ax.transData.transform((x, 0.5))[0]) for *_, x in here]
        for (name, marker, _, x), rings in zip(here, _rings(where, width), strict=True):
            _percentile_marker(ax, name, marker, q, x, rings, colors, survival)
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
