"""Latency CDFs over all requests, one line per strategy, p50 and p99 in the legend.

Routing strategies differ most in the tail (a hedge or a timeout trims it, a cascade stretches
it), so the whole distribution is drawn on a log x axis rather than one summary number.

A failed request never finishes: it counts as latency +∞. Each curve is the share of *all* the
strategy's requests (every seed pooled) served within a given time, so it levels off at the
strategy's success rate and runs flat to the right edge; a strategy that fails fast cannot draw
the leftmost curve by dropping its failures. The legend gives each success rate, rounded down,
and says which percentiles the curve never reaches (a percentile over all requests that falls
among the failures is infinite).

The legend also gives each strategy's p50 and p99 (and p99.9 on the survival plot) as the
summary and the job's tables give them: over the answered requests, to one decimal of a second.
Markers on the curves would pile into one blob where tails end together; a legend line per
strategy cannot collide. Curves that lie on top of each other are drawn with interleaved dashes, one colour
after the other, so every strategy's colour shows on the shared path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.vocab import RequestStatus
from sykit._results.metrics import _quantile
from sykit._viz.style import (
    _axes,
    _check_flag,
    _check_frame,
    _legend_outside,
    _plain_axis,
    _strategy_order,
    strategy_colors,
    wrapped_name,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

#: The percentiles the legend gives; the survival plot reaches further into the tail, where
#: hedges and timeouts differ.
_SHOWN = (0.5, 0.99)
_SHOWN_TAIL = (0.5, 0.99, 0.999)

#: Two CDFs closer than this everywhere (largest vertical gap, a share of requests) cannot be told
#: apart on the plot: a few pixels at the default size.
COINCIDE = 0.01

#: Length of one dash of an interleaved curve, in line widths.
_DASH = 4.0

_LINE_WIDTH = 1.6


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


def seconds_text(value: float) -> str:
    """A latency in seconds to one decimal, as the job's tables print it, so the two agree to the
    digit; under 0.05 s, which one decimal shows as 0.0, to two significant figures."""
    if not math.isfinite(value):
        return "–"
    if 0 < abs(value) < 0.05:
        return f"{value:.2g}"
    return f"{round(value, 1) + 0.0:.1f}"  # + 0.0: no "-0.0"


@dataclass(frozen=True)
class _Curve:
    """One strategy's latencies: ``served`` (sorted, finite) out of ``requests`` rows, and
    ``answered`` (the latencies of its ok rows, as the summary takes its percentiles from)."""

    name: str
    served: np.ndarray
    requests: int
    answered: pd.Series

    def level(self) -> float:
        """The share served: where the curve levels off."""
        return len(self.served) / self.requests if self.requests else 0.0


def _curve(requests: pd.DataFrame, name: str) -> _Curve:
    mine = requests[requests["strategy"].astype(str) == name]
    latency = mine["latency_s"].to_numpy(dtype=float)
    ok = (mine["status"] == RequestStatus.OK).to_numpy()
    # served and timed; a request without a finite latency never finished, like a failure
    served = np.sort(latency[ok & np.isfinite(latency)])
    return _Curve(name, served, len(mine), mine.loc[ok, "latency_s"].astype(float))


def _numbers(curve: _Curve, shown: Sequence[float]) -> str:
    """``p50 0.9 · p99 54.7 s``: the summary's percentiles of the answered requests (the same
    :func:`numpy.quantile`), empty when none was answered."""
    values = [_quantile(curve.answered, q) for q in shown]
    if not all(math.isfinite(v) for v in values):
        return ""
    pairs = zip(shown, values, strict=True)
    return " · ".join(f"{_quantile_name(q)} {seconds_text(v)}" for q, v in pairs) + " s"


def _details(served: int, requests: int, unreached: list[str], numbers: str = "") -> str:
    """``(85.2 % ok; p99 not reached; answered: p50 0.8 · p99 57.1 s)``: the success rate, the
    percentiles the curve never reaches, and the answered requests' percentiles (``answered:``
    only when some failed, since only then they differ from where the curve crosses 50 % and
    99 %)."""
    if requests == 0:
        return "(no requests)"
    parts = [f"{_percent(served, requests)} % ok"]
    if unreached:
        parts.append(", ".join(unreached) + " not reached")
    if numbers:
        parts.append(numbers if served == requests else f"answered: {numbers}")
    return "(" + "; ".join(parts) + ")"


def _label(name: str, served: int, requests: int, unreached: list[str], numbers: str = "") -> str:
    return f"{name} {_details(served, requests, unreached, numbers)}"


def _gap(a: _Curve, b: _Curve, log: bool) -> float:
    """The largest vertical distance between two curves over the plotted range (x > 0 on a log
    axis), their plateaus included; ``inf`` when either has no requests."""
    if not a.requests or not b.requests:
        return math.inf
    x = np.union1d(a.served, b.served)
    if log:
        x = x[x > 0]
    share_a = np.searchsorted(a.served, x, side="right") / a.requests
    share_b = np.searchsorted(b.served, x, side="right") / b.requests
    return float(np.max(np.abs(share_a - share_b), initial=abs(a.level() - b.level())))


def _groups(curves: Sequence[_Curve], tolerance: float, log: bool) -> list[list[int]]:
    """Curves that coincide, by position: each joins the first group it is within ``tolerance``
    of every member of (so a chain of small gaps never groups curves far apart), ``tolerance``
    0 for identical curves only."""
    groups: list[list[int]] = []
    for i, curve in enumerate(curves):
        for group in groups:
            gaps = [_gap(curve, curves[j], log) for j in group]
            if all(g == 0 or g < tolerance for g in gaps):
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def _linestyle(position: int, size: int) -> str | tuple[float, tuple[float, float]]:
    """Solid for a curve alone; for the ``position``-th of ``size`` coinciding curves, dashes
    that leave room for the others', so their colours take turns along the shared path rather
    than the last one hiding the rest."""
    if size == 1:
        return "-"
    return (position * _DASH, (_DASH, (size - 1) * _DASH))


def _entries(groups: list[list[int]], details: list[str]) -> list[list[int]]:
    """Legend entries: the curves of one group whose details read the same share one entry
    (``a = b (100 % ok; …)``), since nothing on the plot or in the text tells them apart; a
    group whose numbers differ keeps one entry per curve."""
    entries: list[list[int]] = []
    for group in groups:
        same: dict[str, list[int]] = {}
        for i in group:
            same.setdefault(details[i], []).append(i)
        entries.extend(same.values())
    return sorted(entries, key=lambda entry: entry[0])


def _percent_tick(value: float, _pos: object = None) -> str:
    return f"{100 * value:g} %"


def _x_range(curves: Sequence[_Curve], log: bool) -> tuple[float, float]:
    """The smallest drawn latency and the right edge the plateaus run to."""
    drawable = np.concatenate([c.served for c in curves] + [np.array([])])
    if log:
        drawable = drawable[drawable > 0]
    if not len(drawable):
        return 1.0, 2.0
    low, high = float(drawable.min()), float(drawable.max())
    return low, high * 1.25 if log else high + 0.05 * (high - low or high or 1.0)


def _draw_curve(
    ax: Axes,
    curve: _Curve,
    color: str,
    linestyle: Any,
    survival: bool,
    log: bool,
    edges: tuple[float, float],
) -> Line2D:
    """The step curve and, when some requests never finished, its plateau to the right edge."""
    n, served = curve.requests, curve.served
    shares = np.arange(1, len(served) + 1) / n if n else np.array([])
    shown = served > 0 if log else np.ones(len(served), dtype=bool)
    (line,) = ax.plot(
        served[shown],
        (1 - shares[shown]) if survival else shares[shown],
        color=color,
        lw=_LINE_WIDTH,
        ls=linestyle,
        drawstyle="steps-post",
        gid=f"{'survival' if survival else 'cdf'}:{curve.name}",
    )
    level = curve.level()
    if n and not (survival and level == 1.0):
        # the failures never arrive: the curve stays at the success rate to the right edge
        low, right = edges
        start = float(served[shown][-1]) if shown.any() else low
        ax.plot(
            [start, right],
            [1 - level if survival else level] * 2,
            color=color,
            lw=_LINE_WIDTH,
            ls=linestyle,
            gid=f"plateau:{curve.name}",
        )
    return line


def _fit_figure(ax: Axes, legend: Any) -> None:
    """Widen (and for many strategies heighten) a figure this plot created, so the legend's long
    lines do not squeeze the axes."""
    figure = ax.get_figure(root=True)
    if figure is None:
        return
    box = legend.get_window_extent()
    width, height = box.width / figure.dpi, box.height / figure.dpi
    figure.set_size_inches(max(8.0, 5.4 + width), max(4.2, 0.9 + height))


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
    levels off at the success rate, which the legend gives), with each strategy's p50 and p99
    in the legend, as the summary gives them (over the answered requests, one decimal).

    Rows of several seeds are pooled. A percentile over all requests that falls among the failed
    ones is infinite: the legend says it is not reached. The tail is where routing strategies
    differ, hence the log x axis. ``survival=True`` draws 1 − CDF, the share of requests still
    waiting, on a log y axis, so p99 and p99.9 are as far apart as p50 and p90; a failed request
    waits forever, so the curve levels off at the failure rate. Curves within 0.01 of each other
    everywhere (identical ones on the survival plot, whose log axis parts small gaps) share their
    path in interleaved dashes, and one legend entry when their numbers read the same.
    """
    _check_frame(requests, "requests", ("strategy", "status", "latency_s"))
    log, survival = _check_flag(log, "log"), _check_flag(survival, "survival")
    names = _strategy_order(requests, strategies)
    colors = dict(colors) if colors is not None else strategy_colors(names)
    shown = _SHOWN_TAIL if survival else _SHOWN
    created = ax is None
    ax = _axes(ax, (8.0, 4.2))
    curves = [_curve(requests, name) for name in names]
    edges = _x_range(curves, log)
    groups = _groups(curves, 0.0 if survival else COINCIDE, log)
    lines: dict[int, Line2D] = {}
    for group in groups:
        for position, i in enumerate(group):
            style = _linestyle(position, len(group))
            color = colors.get(curves[i].name, "0.3")
            lines[i] = _draw_curve(ax, curves[i], color, style, survival, log, edges)
    details = []
    for curve in curves:
        at = [percentile_over_all(curve.served, curve.requests, q) for q in shown]
        unreached = [_quantile_name(q) for q, x in zip(shown, at, strict=True) if math.isinf(x)]
        numbers = _numbers(curve, shown)
        details.append(_details(len(curve.served), curve.requests, unreached, numbers))
    handles: list[Any] = []
    labels: list[str] = []
    for entry in _entries(groups, details):
        label = " = ".join(wrapped_name(curves[i].name) for i in entry) + " " + details[entry[0]]
        for i in entry:
            lines[i].set_label(label)
        handles.append(tuple(lines[i] for i in entry) if len(entry) > 1 else lines[entry[0]])
        labels.append(label)
    for q in shown:
        ax.axhline(1 - q if survival else q, color="0.75", lw=0.8, ls=":", zorder=0)
    if log:
        ax.set_xscale("log")
        _plain_axis(ax.xaxis, lambda x, _pos: f"{x:g}", True)
    ax.set_xlim(right=edges[1])
    if survival:
        most = max((c.requests for c in curves), default=1)
        ax.set_yscale("log", nonpositive="clip")
        ax.set_ylim(0.5 * min(1 - shown[-1], 1 / max(most, 1)), 1.6)
        _plain_axis(ax.yaxis, _percent_tick, True)
    else:
        ax.set_ylim(0, 1.02)
    ax.autoscale_view()
    ax.set_xlabel("latency (s, log scale)" if log else "latency (s)")
    if survival:
        ax.set_ylabel("share of all requests still waiting (log)")
        ax.set_title(
            "Latency tail over all requests: 1 − CDF (failed = waits forever)",
            fontsize=10,
            loc="left",
        )
    else:
        ax.set_ylabel("share of all requests served")
        ax.set_title(
            "Latency CDF over all requests (failed = never served)", fontsize=10, loc="left"
        )
    ax.grid(color="0.92", which="major")
    _legend(ax, handles, labels, created)
    return ax


def _legend(ax: Axes, handles: list[Any], labels: list[str], created: bool) -> None:
    """The legend, a tuple handle drawing a shared entry's interleaved dashes as on the plot."""
    from matplotlib.legend_handler import HandlerTuple

    legend = _legend_outside(
        ax,
        handles,
        labels=labels,
        title="strategy",
        handler_map={tuple: HandlerTuple(ndivide=1)},
    )
    if created:
        _fit_figure(ax, legend)
