"""Cost against quality: the trade-off a routing strategy is chosen on.

:func:`plot_cost_quality` draws each strategy of a comparison as a point with its 95 %
confidence interval and the Pareto frontier through the ones nothing beats on both;
:func:`plot_cost_quality_curve` draws a sweep as a curve against reference points (weak, strong,
random mix) that a router has to beat. Quality is always the summary's (a failed request counts
as 0), never recomputed here.

A strategy that read the ground truth (the oracle, a simulated router score) is no router you
could deploy. :func:`plot_cost_quality` draws it as a star labelled "(reads the truth)": the
oracle's quality bounds what routing could reach, but a simulated score stands for a published
router, which deployable routers can beat, so no such point is called a bound. The Pareto
frontier leaves them out so they cannot hide the real trade-off. A sweep's plot draws the
references you name as ``bounds`` (the oracle by default) as stars labelled "(bound)".
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._results.metrics import pareto_frontier
from sykit._viz.style import (
    _axes,
    _check_flag,
    _check_frame,
    _legend_outside,
    _usd_axis,
    cost_unit,
    strategy_colors,
    text_color,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes


#: The label of a strategy that read the ground truth (the oracle, a simulated score).
READS_TRUTH = "(reads the truth)"


def _cost_axis(ax: Axes, costs: np.ndarray, log_cost: bool | None) -> str:
    """Set the cost axis (log when every cost is above 0 and they span 20×) and return its label,
    in the unit the ticks read in (per 1k requests when costs per request are fractions of a cent)."""
    finite = costs[np.isfinite(costs)]
    if log_cost is None:
        # a free strategy (cost 0) has no place on a log axis: it would vanish off the left edge
        log_cost = len(finite) > 1 and finite.min() > 0 and finite.max() / finite.min() >= 20
    if log_cost:
        ax.set_xscale("log")
    scale, unit = cost_unit(costs)
    _usd_axis(ax.xaxis, log=bool(log_cost), scale=scale)
    return f"cost per {unit} (USD)"


def _check_log_cost(known: pd.DataFrame, log_cost: bool | None) -> None:
    """A log cost axis cannot show a cost of 0 (a free model, a request that failed before any
    paid call): refuse it rather than drop those points off the edge."""
    if not log_cost:
        return
    free = known["cost_per_request_usd"].to_numpy(dtype=float) <= 0
    if free.any():
        names = [str(s) for s in known["strategy"][free]]
        raise ArgumentError(
            f"log_cost=True cannot show strategies that cost nothing per request: {names}; "
            "use log_cost=False, or None to choose"
        )


def _ungraded_note(shown: pd.DataFrame, known: pd.DataFrame) -> Any:
    """A legend line naming the strategies left out for want of a quality (no ground truth, no
    model ``quality``), so none goes missing without a word; None when all are drawn."""
    from matplotlib.lines import Line2D

    drawn = set(map(str, known["strategy"]))
    missing = [str(s) for s in shown["strategy"] if str(s) not in drawn]
    if not missing:
        return None
    return Line2D([], [], ls="none", label=f"not drawn (no quality): {', '.join(missing)}")


def _root(ax: Axes) -> Any:
    """The top-level Figure of ``ax`` (its figure may be a SubFigure)."""
    try:
        return ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10
        return ax.figure.figure if hasattr(ax.figure, "figure") else ax.figure


def _bounds_mask(summary: pd.DataFrame) -> pd.Series:
    """True for rows that read the ground truth (``realizable`` is False): bounds, not routers."""
    if "realizable" not in summary.columns:
        return pd.Series(False, index=summary.index)
    return summary["realizable"].eq(False)


def _select(summary: pd.DataFrame, strategies: Iterable[str] | None) -> pd.DataFrame:
    """The summary rows of ``strategies``, in that order (all rows when None)."""
    if strategies is None:
        return summary
    if isinstance(strategies, str) or not isinstance(strategies, Iterable):
        raise ArgumentTypeError(
            f"strategies must be a list of strategy names, got {type(strategies).__name__}"
        )
    wanted = [str(s) for s in strategies]
    known = [str(s) for s in summary["strategy"]]
    unknown = [s for s in wanted if s not in known]
    if unknown:
        raise ArgumentError(f"strategies {unknown} are not in the summary; it has {known}")
    position = {name: i for i, name in enumerate(known)}
    return summary.iloc[[position[name] for name in wanted]]


def _overlap_groups(points: np.ndarray, radius: float) -> list[list[int]]:
    """Points (display pixels) that a marker of ``radius`` would hide, grouped in drawing order."""
    groups: list[list[int]] = []
    for i, point in enumerate(points):
        for group in groups:
            if np.hypot(*(points[group[0]] - point)) < radius:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return bool(np.allclose(a, b, rtol=1e-9, atol=0.0))


#: Where a label may go around its point (unit directions), tried in this order.
_DIRECTIONS = ((1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1), (0, -1))
#: How far, in clearances, a label may move from its point before it needs a leader line.
_REACHES = (1.0, 2.0, 3.0, 4.5, 6.0, 8.0, 10.0)
#: Up to this many points on one spot are drawn as nested rings; more are spread on a circle.
_MAX_RINGS = 3


def _area(a: np.ndarray, b: np.ndarray) -> float:
    """Overlap area of two boxes given as (x0, y0, x1, y1)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, width) * max(0.0, height)


def _misleading(box: np.ndarray, anchor: np.ndarray, rivals: np.ndarray | None) -> float:
    """1.0 when the centre of ``box`` lies nearer to a rival point than to its own ``anchor``."""
    if rivals is None or not len(rivals):
        return 0.0
    centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
    own = float(np.hypot(*(centre - anchor)))
    others = np.hypot(*(rivals - centre).T)
    others = others[np.hypot(*(rivals - anchor).T) > 0.5]
    return float(len(others) > 0 and others.min() < own)


def _place_labels(
    ax: Axes,
    anchors: np.ndarray,
    texts: list[str],
    colors: list[str],
    gids: list[str],
    obstacles: list[np.ndarray],
    clearance: float,
    rivals: np.ndarray | None = None,
) -> list[Any]:
    """Label each anchor (display pixels) with its text, beside the point where the label hides
    the fewest other labels, markers and error bars and stays inside the Axes: a greedy search
    over eight directions at growing distances, in drawing order, so the result is deterministic.
    A label pushed away from its point gets a leader line. With ``rivals`` (display pixels), a
    label avoids spots nearer to one of them than to its own anchor, where it would name the
    wrong point."""
    px_per_pt = ax.figure.dpi / 72.0
    frame = ax.bbox.extents
    placed: list[np.ndarray] = []
    drawn = []
    for anchor, text, color, gid in zip(anchors, texts, colors, gids, strict=True):
        probe = ax.annotate(text, (0, 0), xycoords="figure pixels", fontsize=8)
        extent = probe.get_window_extent()
        probe.remove()
        width, height = extent.width, extent.height
        best: tuple[float, int, np.ndarray, float] | None = None
        for distance_index, reach in enumerate(_REACHES):
            for dx, dy in _DIRECTIONS:
                gap = clearance * reach
                x0 = anchor[0] + (gap if dx > 0 else -gap - width if dx < 0 else -width / 2)
                y0 = anchor[1] + (
                    gap * 0.6 if dy > 0 else -gap * 0.6 - height if dy < 0 else -height / 2
                )
                if dx == 0:
                    y0 = anchor[1] + (gap if dy > 0 else -gap - height)
                box = np.array([x0, y0, x0 + width, y0 + height])
                inside = _area(box, np.array(frame))
                score = 5.0 * (width * height - inside)
                score += sum(20.0 * _area(box, other) for other in placed)
                score += sum(1.0 * _area(box, other) for other in obstacles)
                score += _misleading(box, anchor, rivals) * width * height
                score += distance_index * 1e-3
                if best is None or score < best[0]:
                    best = (score, distance_index, box, gap)
        assert best is not None
        _, distance_index, box, _ = best
        placed.append(box)
        offset = ((box[0] - anchor[0]) / px_per_pt, (box[1] - anchor[1]) / px_per_pt)
        arrow = (
            {"arrowstyle": "-", "color": color, "lw": 0.6, "shrinkA": 0, "shrinkB": 4}
            if distance_index > 0
            else None
        )
        label = ax.annotate(
            text,
            tuple(ax.transData.inverted().transform(anchor)),
            xytext=offset,
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=8,
            color=color,
            gid=gid,
            zorder=5,
            arrowprops=arrow,
            annotation_clip=False,
        )
        label.set_in_layout(False)
        drawn.append(label)
    return drawn


#: Where a cost–quality label may go around its point, in order of preference among spots as
#: near: (side, slide). Beside the point (E, W) a slide moves the label up or down by half its
#: height; above or below it (N, S), 1 puts it right of the error bar and -1 left of it.
_SPOTS = (
    ("E", 0), ("W", 0), ("E", 1), ("E", -1), ("W", 1), ("W", -1),
    ("N", 1), ("N", -1), ("S", 1), ("S", -1), ("N", 0), ("S", 0),
    ("E", 2), ("E", -2), ("W", 2), ("W", -2), ("E", 3), ("E", -3), ("W", 3), ("W", -3),
    ("E", 4), ("E", -4), ("W", 4), ("W", -4),
)  # fmt: skip
#: How far past its marker a label may sit (points), nearest first.
_GAPS_PT = (0.0, 4.0, 8.0, 13.0, 19.0, 26.0, 35.0, 46.0, 60.0, 78.0, 100.0)
#: Spots this much nearer (points) count as nearer; within that, the order of :data:`_SPOTS`.
_NEAR_PT = 4.0
#: A label on the Pareto frontier's line only wins over spots this much (points) further out.
_LINE_COST_PT = 12.0
#: A label more than this (points) off its marker is joined to its point by a leader line.
_LEADER_PT = 4.0
#: Room kept between a label and anything else (points).
_PAD_PT = 1.5
#: A label naming several strategies wraps between names past this many characters.
_WRAP = 32


def _joined(names: list[str], width: int = _WRAP) -> str:
    """One label for strategies drawn on one spot, e.g. ``weak only = litellm-like``: wrapped
    between names, so a long list stays narrow enough to fit beside its point."""
    lines = [names[0]]
    for name in names[1:]:
        if len(lines[-1]) + 3 + len(name) <= width:
            lines[-1] += f" = {name}"
        else:
            lines.append(f"= {name}")
    return "\n".join(lines)


def _coincident(rows: list[tuple[str, float, float]], group: list[int]) -> list[list[int]]:
    """The members of an overlap group split into runs of equal cost and quality, in order."""
    spots: list[list[int]] = []
    for i in group:
        for spot in spots:
            if _same(rows[i][1:], rows[spot[0]][1:]):
                spot.append(i)
                break
        else:
            spots.append([i])
    return spots


def _array(rows: Sequence[Any] | np.ndarray, width: int = 4) -> np.ndarray:
    """``rows`` as an n×``width`` float array (0×``width`` when empty)."""
    return np.asarray(rows, dtype=float).reshape(-1, width)


def _meets(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each box (n×4, x0 y0 x1 y1), whether it overlaps any of ``others`` (m×4)."""
    if not len(others):
        return np.zeros(len(boxes), dtype=bool)
    a, b = boxes[:, None, :], others[None, :, :]
    hit = (a[..., 0] < b[..., 2]) & (b[..., 0] < a[..., 2])
    hit &= (a[..., 1] < b[..., 3]) & (b[..., 1] < a[..., 3])
    return np.asarray(hit.any(axis=1))


def _overlap(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each box (n×4), the summed area it shares with ``others`` (m×4)."""
    if not len(others):
        return np.zeros(len(boxes))
    a, b = boxes[:, None, :], others[None, :, :]
    width = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0])
    height = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1])
    return np.asarray((np.clip(width, 0, None) * np.clip(height, 0, None)).sum(axis=1))


def _crossed(boxes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each box (n×4), whether any segment ``starts[k]``–``ends[k]`` passes through its
    inside (Liang–Barsky clipping, all at once)."""
    if not len(starts) or not len(boxes):
        return np.zeros(len(boxes), dtype=bool)
    start, delta = starts[None, :, :], (ends - starts)[None, :, :]
    delta = np.where(np.abs(delta) < 1e-9, 1e-9, delta)  # parallel: inside or out, never between
    enter, leave = np.zeros(delta.shape[:2]), np.ones(delta.shape[:2])
    for axis in (0, 1):
        a = (boxes[:, None, axis] - start[..., axis]) / delta[..., axis]
        b = (boxes[:, None, axis + 2] - start[..., axis]) / delta[..., axis]
        enter = np.maximum(enter, np.minimum(a, b))
        leave = np.minimum(leave, np.maximum(a, b))
    return np.asarray((enter < leave).any(axis=1))


def _turn(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> float:
    return float(np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])))


def _segments_cross(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> bool:
    """Whether segments ``a``–``b`` and ``c``–``d`` cross or touch."""
    ab_c, ab_d, cd_a, cd_b = _turn(a, b, c), _turn(a, b, d), _turn(c, d, a), _turn(c, d, b)
    if ab_c == ab_d == cd_a == cd_b == 0:  # on one line: crossing when their spans overlap
        low = np.maximum(np.minimum(a, b), np.minimum(c, d))
        high = np.minimum(np.maximum(a, b), np.maximum(c, d))
        return bool((low <= high).all())
    return ab_c != ab_d and cd_a != cd_b


def _candidates(
    anchor: np.ndarray, reach: float, size: tuple[float, float], px_per_pt: float
) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (n×4) a label of ``size`` may take around ``anchor``, clear of a marker reaching
    ``reach`` (all display pixels): every spot of :data:`_SPOTS` at every gap of
    :data:`_GAPS_PT`; with each box's distance from ``anchor``."""
    width, height = size
    x, y = anchor
    nudge = 2 * _PAD_PT * px_per_pt  # off the error bar through the point
    boxes = []
    for gap in reach + np.array(_GAPS_PT) * px_per_pt:
        for side, slide in _SPOTS:
            if side in "EW":
                x0 = x + gap if side == "E" else x - gap - width
                y0 = y - height / 2 + slide * (height / 2 + nudge / 2)
            else:
                x0 = x - width / 2 if slide == 0 else x + nudge if slide > 0 else x - nudge - width
                y0 = y + gap if side == "N" else y - gap - height
            boxes.append((x0, y0, x0 + width, y0 + height))
    candidates = np.array(boxes)
    nearest = np.clip(anchor, candidates[:, :2], candidates[:, 2:])
    return candidates, np.hypot(*(nearest - anchor).T)


def _leader(anchor: np.ndarray, reach: float, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The line from the edge of a point's marker (``reach`` from ``anchor``) to the nearest
    point of its label's box."""
    end = np.clip(anchor, box[:2], box[2:])
    direction = end - anchor
    start = anchor + direction / max(float(np.hypot(*direction)), 1e-9) * reach
    return start, end


def _set_text(text: Any, value: str) -> None:
    """Show ``value`` (left alone when shown already: a redraw then changes nothing)."""
    if text.get_text() != value:
        text.set_text(value)


def _size(text: Any, renderer: Any) -> tuple[float, float]:
    """Width and height of a text alone (an Annotation's extent would take in its arrow)."""
    from matplotlib.text import Text

    extent = Text.get_window_extent(text, renderer)
    return extent.width, extent.height


def _within(point: np.ndarray, frame: Sequence[float] | np.ndarray) -> bool:
    """Whether ``point`` lies inside ``frame`` (x0, y0, x1, y1)."""
    return bool(frame[0] <= point[0] <= frame[2] and frame[1] <= point[1] <= frame[3])


def _within_all(boxes: np.ndarray, frame: np.ndarray) -> np.ndarray:
    """For each box (n×4), whether it lies wholly inside ``frame``."""
    inside = (boxes[:, :2] >= frame[:2]).all(axis=1) & (boxes[:, 2:] <= frame[2:]).all(axis=1)
    return np.asarray(inside)


def _marker_box(line: Any, px_per_pt: float) -> tuple[np.ndarray, float]:
    """Where a one-point marker line is drawn (display pixels) and half its drawn width."""
    xy = np.asarray(line.get_xydata(), dtype=float)[0]
    centre = np.asarray(line.get_transform().transform(xy), dtype=float)
    half = (line.get_markersize() + line.get_markeredgewidth()) * px_per_pt / 2
    return centre, half


@dataclass
class _Label:
    """One label of a cost–quality plot: the strategies on one spot, named once."""

    text: Any  # the Annotation, anchored at the spot's data point
    leader: Any  # a Line2D in display pixels, shown when the label sits away from its point
    spot: list[Any]  # the markers of the strategies it names
    ring: list[Any]  # every marker drawn around the spot (its own and those nested with it)
    full: str  # the names, as the legend spells them when the label falls back to a number
    texts: list[str]  # what it may show, in order of preference (the names, wrapped narrower)
    side: str = ""  # how its lines align: towards the point


class _Spots(NamedTuple):
    """Where a label may go (display pixels): boxes, the same with room around them, their
    distance from the point and whether that takes a leader line."""

    boxes: np.ndarray
    padded: np.ndarray
    distance: np.ndarray
    far: np.ndarray


@dataclass
class _Scene:
    """What a label has to keep off (display pixels): the Axes, markers, error bars, the
    frontier's line (only preferably), and the labels and leader lines placed so far."""

    frame: np.ndarray
    markers: list[Any]
    marker_boxes: np.ndarray
    bars: np.ndarray
    line: tuple[np.ndarray, np.ndarray]
    boxes: list[np.ndarray] = field(default_factory=list)
    leaders: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def fits(self, padded: np.ndarray) -> np.ndarray:
        """For each padded box, whether it hides nothing and stays inside the Axes."""
        starts = _array([p for p, _ in self.leaders], 2)
        ends = _array([q for _, q in self.leaders], 2)
        ok = _within_all(padded, self.frame) & ~_meets(padded, _array(self.boxes))
        ok &= ~_meets(padded, self.marker_boxes) & ~_meets(padded, self.bars)
        return ok & ~_crossed(padded, starts, ends)

    def clear(self, leader: tuple[np.ndarray, np.ndarray], ring: list[Any]) -> bool:
        """Whether ``leader`` crosses no label, leader line, error bar or marker but those of
        its own spot (``ring``)."""
        p, q = leader
        others = [b for m, b in zip(self.markers, self.marker_boxes, strict=True) if m not in ring]
        obstacles = _array([*self.boxes, *others, *self.bars])
        if _crossed(obstacles, p[None, :], q[None, :]).any():
            return False
        return not any(_segments_cross(p, q, a, b) for a, b in self.leaders)


class _LabelLayout:
    """Places the labels of a cost–quality plot whenever the figure is drawn: where they fit
    depends on the final layout (a title added afterwards, a legend, the dpi it is saved at), so
    they are placed then, in a fixed order, each at the nearest spot that hides nothing."""

    def __init__(self, ax: Axes, labels: list[_Label], bars: list[Any], line: Any) -> None:
        self._ax = ax
        self.labels = labels
        self._bars = bars
        self._line = line
        #: Labels that found no free spot at the last placement (indices into ``labels``).
        self.failed: list[int] = []

    def number(self, numbered: list[int]) -> list[Any]:
        """Write a number instead of the names on each of ``numbered``; the legend entries that
        say what each number stands for."""
        from matplotlib.lines import Line2D

        handles = []
        for n, i in zip(self._free_numbers(numbered), sorted(numbered), strict=False):
            label = self.labels[i]
            label.texts = [str(n)]
            marker = label.spot[0]
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="none",
                    marker=marker.get_marker(),
                    ms=7,
                    color=marker.get_color(),
                    label=textwrap.fill(f"{n}  {label.full}", _WRAP, subsequent_indent="    "),
                )
            )
        return handles

    def _free_numbers(self, numbered: list[int]) -> Iterator[int]:
        """1, 2, 3, … skipping any that is also a label's text: a strategy named ``"1"`` must
        not be confused with the number standing for another one."""
        taken = {label.full for label in self.labels}
        taken |= {
            t for j, label in enumerate(self.labels) if j not in numbered for t in label.texts
        }
        return (n for n in itertools.count(1) if str(n) not in taken)

    def _scene(self, px_per_pt: float) -> _Scene:
        """The Axes, every marker, the error bars and the frontier, in display pixels."""
        ax = self._ax
        markers = list(dict.fromkeys(m for label in self.labels for m in label.ring))
        boxes = []
        for marker in markers:
            (x, y), half = _marker_box(marker, px_per_pt)
            boxes.append((x - half, y - half, x + half, y + half))
        bars = []
        for bar in self._bars:
            half = max(bar.get_linewidth()) * px_per_pt / 2
            for segment in bar.get_segments():
                (x0, y0), (x1, y1) = ax.transData.transform(segment)
                bars.append((min(x0, x1) - half, min(y0, y1), max(x0, x1) + half, max(y0, y1)))
        path = np.empty((0, 2))
        if self._line is not None:
            path = ax.transData.transform(np.asarray(self._line.get_xydata(), dtype=float))
            path = path[np.isfinite(path).all(axis=1)]
        frame = np.array(ax.bbox.extents) + np.array([1.0, 1.0, -1.0, -1.0])
        line = (path[:-1], path[1:])
        return _Scene(frame, markers, _array(boxes), _array(bars), line)

    def place(self, renderer: Any) -> list[int]:
        """Put each label at its nearest free spot; return the labels that found none (each is
        put where it hides the least instead)."""
        px_per_pt = self._ax.figure.dpi / 72.0
        scene = self._scene(px_per_pt)
        # a point on the edge of the Axes is drawn (half of it); one past it gets no label
        edge = np.array(self._ax.bbox.extents) + np.array([-1.0, -1.0, 1.0, 1.0])
        failed = []
        for i, label in enumerate(self.labels):
            anchor, reach = self._anchor(label, px_per_pt)
            shown = bool(np.isfinite(anchor).all()) and _within(anchor, edge)
            label.text.set_visible(shown)
            label.leader.set_visible(False)
            if shown and not self._place_one(label, anchor, reach, scene, renderer):
                failed.append(i)
        return failed

    def _place_one(
        self, label: _Label, anchor: np.ndarray, reach: float, scene: _Scene, renderer: Any
    ) -> bool:
        """Place ``label`` with the first of its texts that fits somewhere free (a long list of
        names may fit one per line); when none does, with its first text where it hides the
        least. Whether it found a free spot."""
        for text in label.texts:
            spots = self._spots_for(label, text, anchor, reach, renderer)
            found = self._nearest_free(label, anchor, reach, spots, scene)
            if found is not None:
                self._take(label, spots, found, anchor, reach, scene)
                return True
        spots = self._spots_for(label, label.texts[0], anchor, reach, renderer)
        self._take(label, spots, self._least_bad(spots.boxes, scene), anchor, reach, scene)
        return False

    def _spots_for(
        self, label: _Label, text: str, anchor: np.ndarray, reach: float, renderer: Any
    ) -> _Spots:
        """Where ``label`` showing ``text`` may go around ``anchor``."""
        px_per_pt = self._ax.figure.dpi / 72.0
        pad = _PAD_PT * px_per_pt
        _set_text(label.text, text)
        clearance = reach + pad + 0.5  # half a pixel more: rounding never lets it touch a marker
        boxes, distance = _candidates(anchor, clearance, _size(label.text, renderer), px_per_pt)
        padded = boxes + np.array([-pad, -pad, pad, pad])
        far = (distance - reach) > _LEADER_PT * px_per_pt
        return _Spots(boxes, padded, distance, far)

    def _nearest_free(
        self, label: _Label, anchor: np.ndarray, reach: float, spots: _Spots, scene: _Scene
    ) -> int | None:
        """The nearest spot that hides nothing and whose leader line (when it needs one) crosses
        nothing; one off the frontier's line is preferred over a slightly nearer one."""
        near = _NEAR_PT * self._ax.figure.dpi / 72.0
        on_line = _crossed(spots.boxes, *scene.line)
        rank = np.floor(spots.distance / near) + on_line * (_LINE_COST_PT / _NEAR_PT)
        preference = np.arange(len(spots.boxes)) % len(_SPOTS)
        order = np.lexsort((preference, rank))
        fits = scene.fits(spots.padded)
        for k in order[fits[order]]:
            if not spots.far[k] or scene.clear(_leader(anchor, reach, spots.boxes[k]), label.ring):
                return int(k)
        return None

    def _take(
        self,
        label: _Label,
        spots: _Spots,
        k: int,
        anchor: np.ndarray,
        reach: float,
        scene: _Scene,
    ) -> None:
        """Put ``label`` at spot ``k``, with its leader line when it sits away from its point."""
        leader = _leader(anchor, reach, spots.boxes[k]) if spots.far[k] else None
        scene.boxes.append(spots.padded[k])
        if leader is not None:
            scene.leaders.append(leader)
        self._put(label, spots.boxes[k], anchor, leader, self._ax.figure.dpi / 72.0)

    @staticmethod
    def _least_bad(boxes: np.ndarray, scene: _Scene) -> int:
        """The candidate that hides the least: labels weigh most, then leaving the Axes."""
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        score = 20.0 * (area - _overlap(boxes, scene.frame[None, :]))
        score += 50.0 * _overlap(boxes, _array(scene.boxes))
        score += _overlap(boxes, scene.marker_boxes) + _overlap(boxes, scene.bars)
        return int(np.argmin(score))

    @staticmethod
    def _anchor(label: _Label, px_per_pt: float) -> tuple[np.ndarray, float]:
        """Where the label's strategies are drawn (display pixels) and how far from there the
        markers around them reach."""
        anchor = np.mean([_marker_box(m, px_per_pt)[0] for m in label.spot], axis=0)
        reach = 0.0
        for marker in label.ring:
            centre, half = _marker_box(marker, px_per_pt)
            reach = max(reach, float(np.hypot(*(centre - anchor))) + half)
        return anchor, reach

    def _put(
        self,
        label: _Label,
        box: np.ndarray,
        anchor: np.ndarray,
        leader: tuple[np.ndarray, np.ndarray] | None,
        px_per_pt: float,
    ) -> None:
        """Move the label's text and leader line to ``box``, touching them only when they move
        (a redraw then leaves the figure as it was)."""
        origin = self._ax.transData.transform(label.text.xy)
        offset = ((box[0] - origin[0]) / px_per_pt, (box[1] - origin[1]) / px_per_pt)
        if not np.allclose(label.text.xyann, offset):
            label.text.xyann = offset
        side = "left" if box[0] > anchor[0] else "right" if box[2] < anchor[0] else "center"
        if label.side != side:
            label.side = side
            label.text.set_multialignment(side)
        label.leader.set_visible(leader is not None)
        if leader is not None:
            xs, ys = [leader[0][0], leader[1][0]], [leader[0][1], leader[1][1]]
            old = np.asarray(label.leader.get_data(), dtype=float)
            if old.shape != (2, 2) or not np.allclose(old, (xs, ys)):
                label.leader.set_data(xs, ys)


def _layout_artist(layout: _LabelLayout) -> Any:
    """An artist drawn before the labels that places them (defined on first use: importing sykit
    loads no matplotlib)."""
    from matplotlib.artist import Artist

    class LabelLayoutArtist(Artist):
        def draw(self, renderer: Any) -> None:
            if self.get_visible():
                layout.failed = layout.place(renderer)
            self.stale = False

    artist = LabelLayoutArtist()
    artist.set_zorder(0)
    artist.set_in_layout(False)
    artist.set_gid("label_layout")
    return artist


def _settle(ax: Axes, layout: _LabelLayout, legend_handles: list[Any]) -> None:
    """Lay the labels out once now; a label that fits nowhere becomes a number beside its point
    with a legend entry saying what it stands for (the legend takes room, so lay out again)."""
    figure = _root(ax)
    figure.draw_without_rendering()
    numbered: list[int] = []
    while new := [i for i in layout.failed if i not in numbered]:
        numbered += new
        _legend_outside(ax, [*legend_handles, *layout.number(numbered)])
        figure.draw_without_rendering()


def plot_cost_quality(
    summary: pd.DataFrame,
    *,
    strategies: Iterable[str] | None = None,
    colors: Mapping[str, str] | None = None,
    log_cost: bool | None = None,
    direct_labels: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Each strategy as a point (cost per request, mean quality) with its 95 % confidence
    interval as a vertical bar, and the Pareto frontier through the ones nothing beats on both.

    Quality is the summary's ``mean_quality`` (a failed request counts as 0) and the bar spans
    ``quality_ci_low`` to ``quality_ci_high`` when the summary has them. A strategy that read the
    ground truth (``realizable`` False, e.g. the oracle) is no router you could deploy: it is drawn
    as a star labelled "(reads the truth)" and kept off the frontier. ``log_cost=None`` uses a
    log x axis when costs span 20× and none is 0; ``log_cost=True`` refuses a strategy that costs
    nothing, which a log axis cannot show. A strategy without a quality is named in the legend
    as not drawn.

    Each point is labelled with its name beside it (``direct_labels=False``: a legend instead).
    Labels cover no other label, marker or bar and stay inside the Axes; one moved away from its
    point is joined to it by a leader line, and leader lines do not cross. Points that would hide
    each other are drawn as nested rings; strategies with the very same cost and quality share
    one label naming them all, e.g. ``weak only = litellm-like``. A label that fits nowhere
    becomes a number, spelled out in the legend. ``strategies`` draws a subset, in that order;
    colours stay those of the whole summary.
    """
    _check_frame(summary, "summary", ("strategy", "cost_per_request_usd", "mean_quality"))
    log_cost = _check_flag(log_cost, "log_cost", none=True)
    direct_labels = _check_flag(direct_labels, "direct_labels")
    names = [str(s) for s in summary["strategy"]]
    colors = dict(colors) if colors is not None else strategy_colors(names)
    shown = _select(summary, strategies)
    known = shown.dropna(subset=["cost_per_request_usd", "mean_quality"])
    if known.empty:
        raise ArgumentError(
            "no strategy has both a cost and a quality: give models a `quality` or the requests "
            "ground truth, so answers can be scored"
        )
    _check_log_cost(known, log_cost)
    ax = _axes(ax, (7.5, 4.5))
    bounds = _bounds_mask(known).to_list()
    rows = [
        (str(row["strategy"]), float(row["cost_per_request_usd"]), float(row["mean_quality"]))
        for _, row in known.iterrows()
    ]
    has_ci = {"quality_ci_low", "quality_ci_high"} <= set(known.columns)
    bars = _draw_cis(ax, known, rows, colors) if has_ci else []
    # only strategies you could deploy make the frontier; bounds are drawn but never on it
    frontier = pareto_frontier(known[~np.array(bounds, dtype=bool)])
    frontier_line = None
    if len(frontier):
        (frontier_line,) = ax.plot(
            frontier["cost_per_request_usd"].to_numpy(dtype=float),
            frontier["mean_quality"].to_numpy(dtype=float),
            color="black",
            ls="--",
            lw=1.0,
            zorder=1,
            label="Pareto frontier",
            gid="pareto",
        )
    ax.update_datalim([(cost, quality) for _, cost, quality in rows])
    xlabel = _cost_axis(ax, known["cost_per_request_usd"].to_numpy(dtype=float), log_cost)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean quality (failed = 0)")
    title = "Cost vs quality"
    if has_ci:
        title += " (bars: 95 % CI of the mean quality)"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.12)
    legend_handles = [frontier_line] if frontier_line is not None else []
    note = _ungraded_note(shown, known)
    if note is not None:
        legend_handles.append(note)
    if direct_labels and legend_handles:
        _legend_outside(ax, legend_handles)
    # lay the figure out first: which points hide each other depends on where they land
    ax.autoscale_view()
    _root(ax).draw_without_rendering()
    points = ax.transData.transform([(cost, quality) for _, cost, quality in rows])
    groups = _overlap_groups(points, 8.0 * ax.figure.dpi / 72.0)
    handles: list[tuple[int, Any]] = []
    labels: list[_Label] = []
    for group in groups:
        spots = _coincident(rows, group)
        drawn = _draw_group(ax, [i for spot in spots for i in spot], rows, bounds, colors)
        handles.extend(drawn.items())
        spread = len(group) > _MAX_RINGS
        for spot in spots:
            name, cost, quality = rows[spot[0]]
            spelled = [f"{rows[i][0]} {READS_TRUTH}" if bounds[i] else rows[i][0] for i in spot]
            texts = list(dict.fromkeys([_joined(spelled), _joined(spelled, width=0)]))
            text, leader = _new_label(ax, texts[0], (cost, quality), colors.get(name, "0.3"), name)
            markers = [drawn[i] for i in spot]
            ring = markers if spread else list(drawn.values())
            labels.append(_Label(text, leader, markers, ring, " = ".join(spelled), texts))
    if direct_labels:
        layout = _LabelLayout(ax, labels, bars, frontier_line)
        ax.add_artist(_layout_artist(layout))
        _settle(ax, layout, legend_handles)
    else:
        ordered = [handle for _, handle in sorted(handles, key=lambda pair: pair[0])]
        _legend_outside(ax, ordered + legend_handles)
    return ax


def _draw_cis(
    ax: Axes, known: pd.DataFrame, rows: list[tuple[str, float, float]], colors: Mapping[str, str]
) -> list[Any]:
    """The 95 % CI bar of each strategy with a finite interval."""
    bars = []
    for (_, row), (name, cost, _) in zip(known.iterrows(), rows, strict=True):
        low, high = float(row["quality_ci_low"]), float(row["quality_ci_high"])
        if math.isfinite(low) and math.isfinite(high):
            color = colors.get(name, "0.3")
            bars.append(ax.vlines(cost, low, high, color=color, lw=1.4, zorder=2, gid=f"ci:{name}"))
    return bars


def _draw_group(
    ax: Axes,
    members: list[int],
    rows: list[tuple[str, float, float]],
    bounds: list[bool],
    colors: Mapping[str, str],
) -> dict[int, Any]:
    """The markers of points that would hide each other, so every colour stays visible: up to
    :data:`_MAX_RINGS` as nested rings (earlier ones wider and hollow), more spread on a small
    circle around their spot, on screen only."""
    from matplotlib.transforms import ScaledTranslation

    spread = len(members) > _MAX_RINGS
    drawn = {}
    for depth, i in enumerate(members):
        name, cost, quality = rows[i]
        bound = bounds[i]
        color = colors.get(name, "0.3")
        rings = 0 if spread else len(members) - 1 - depth
        size = (15 if bound else 8) + 6 * rings
        hollow = rings > 0
        transform = ax.transData
        if spread:
            angle = 2 * math.pi * depth / len(members)
            radius = max(6.0, 2.0 * len(members))
            transform = ax.transData + ScaledTranslation(
                radius * math.cos(angle) / 72.0,
                radius * math.sin(angle) / 72.0,
                ax.figure.dpi_scale_trans,
            )
        (drawn[i],) = ax.plot(
            [cost],
            [quality],
            ls="none",
            marker="*" if bound else "o",
            ms=size,
            color=color,
            mfc="none" if hollow else color,
            mec=color if hollow else ("black" if bound else "white"),
            mew=2.0 if hollow else 0.8,
            zorder=3 + 0.01 * depth,
            transform=transform,
            label=f"{name} {READS_TRUTH}" if bound else name,
            gid=f"{'bound' if bound else 'point'}:{name}",
        )
    return drawn


def _new_label(
    ax: Axes, text: str, xy: tuple[float, float], color: str, name: str
) -> tuple[Any, Any]:
    """A label anchored at its point and its (hidden) leader line, both placed at draw time."""
    from matplotlib.lines import Line2D
    from matplotlib.transforms import IdentityTransform

    shade = text_color(color)
    label = ax.annotate(
        text,
        xy,
        xytext=(0.0, 0.0),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontsize=8,
        color=shade,
        gid=f"label:{name}",
        zorder=5,
        annotation_clip=False,
    )
    label.set_in_layout(False)
    leader = Line2D([], [], transform=IdentityTransform(), color=shade, lw=0.6, zorder=2.5)
    leader.set_gid(f"leader:{name}")
    leader.set_visible(False)
    leader.set_in_layout(False)
    ax.add_artist(leader)
    return label, leader


_REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "weak": {"marker": "v", "color": "#555555"},
    "strong": {"marker": "^", "color": "#111111"},
    "random": {"marker": "X", "color": "#888888"},
}
#: Bounds are stars, one colour each (then other markers, when there are more bounds than colours).
_BOUND_COLORS = ("#d4a500", "#8e44ad", "#17becf", "#8c564b")
_BOUND_MARKERS = ("*", "p", "h", "8")
#: Reference labels taken as bounds when ``bounds`` is not given: what :func:`sykit.sweep` names
#: its truth-reading reference.
DEFAULT_BOUNDS = ("oracle",)
_SETTING_COLUMNS = ("threshold", "target_share", "value")


def _check_references(references: Any) -> dict[str, tuple[float, float]]:
    if references is None:
        return {}
    if not isinstance(references, Mapping):
        raise ArgumentTypeError(
            "references must map a label to a (cost_per_request_usd, mean_quality) pair, "
            f"got {type(references).__name__}"
        )
    checked = {}
    for label, point in references.items():
        try:
            cost, quality = point
            checked[str(label)] = (float(cost), float(quality))
        except (TypeError, ValueError):
            raise ArgumentError(
                f"references[{label!r}] must be a (cost_per_request_usd, mean_quality) pair, "
                f"got {point!r}"
            ) from None
    return checked


def _check_bounds(bounds: Any, references: Mapping[str, Any]) -> list[str]:
    if bounds is None:
        return [label for label in references if label in DEFAULT_BOUNDS]
    if isinstance(bounds, str) or not isinstance(bounds, Iterable):
        raise ArgumentTypeError(
            f"bounds must be a list of reference labels, got {type(bounds).__name__}"
        )
    labels = [str(b) for b in bounds]
    unknown = [b for b in labels if b not in references]
    if unknown:
        raise ArgumentError(
            f"bounds {unknown} are not labels of references; references has {list(references)}"
        )
    return [label for label in references if label in labels]


def plot_cost_quality_curve(
    curve: pd.DataFrame,
    *,
    references: Mapping[str, tuple[float, float]] | None = None,
    bounds: Iterable[str] | None = None,
    setting: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """A cost–quality curve from a sweep, with reference points to beat and bounds.

    ``curve`` has ``cost_per_request_usd`` and ``mean_quality`` (one row per setting), and
    optionally the swept setting (some points are labelled with it: the column ``setting`` names,
    by default the first of ``threshold``, ``target_share`` or ``value`` it has) and ``label``
    (one line per label). ``references`` maps e.g. ``"weak"``, ``"strong"``, ``"oracle"``,
    ``"random"`` to a point; with both ``weak`` and ``strong`` the dotted line between them is what
    routing a random share of requests to the strong model buys, the baseline a router has to beat.

    ``bounds`` names the references that read the ground truth (default: ``"oracle"`` when
    present). A bound is no router you could deploy, only how far routing could go: each is drawn
    as a star of its own colour and labelled "(bound)".
    """
    _check_frame(curve, "curve", ("cost_per_request_usd", "mean_quality"))
    points = _check_references(references)
    bound_labels = _check_bounds(bounds, points)
    if setting is None:
        setting = next((c for c in _SETTING_COLUMNS if c in curve.columns), None)
    elif setting not in curve.columns:
        raise ArgumentError(f"setting {setting!r} is not a column of curve: {list(curve.columns)}")
    labels = (
        list(dict.fromkeys(curve["label"].astype(str))) if "label" in curve.columns else ["sweep"]
    )
    colors = strategy_colors(labels)
    ax = _axes(ax, (7.5, 4.5))
    costs = [curve["cost_per_request_usd"].to_numpy(dtype=float)]
    notes: list[tuple[str, float, float]] = []
    for label in labels:
        part = curve if "label" not in curve.columns else curve[curve["label"].astype(str) == label]
        part = part.dropna(subset=["cost_per_request_usd", "mean_quality"])
        part = part.sort_values("cost_per_request_usd", kind="stable")
        ax.plot(
            part["cost_per_request_usd"].to_numpy(dtype=float),
            part["mean_quality"].to_numpy(dtype=float),
            marker="o",
            ms=3.5,
            lw=1.6,
            color=colors[label],
            label=label,
            gid=f"curve:{label}",
            zorder=3,
        )
        if setting is not None and len(part):
            step = max(1, math.ceil(len(part) / 6))
            notes.extend(
                (f"{value:g}", float(cost), float(quality))
                for value, cost, quality in zip(
                    part[setting].iloc[::step],
                    part["cost_per_request_usd"].iloc[::step],
                    part["mean_quality"].iloc[::step],
                    strict=True,
                )
            )
    if "weak" in points and "strong" in points:
        (wx, wy), (sx, sy) = points["weak"], points["strong"]
        # a random mix is linear in cost, so sample it densely: on a log cost axis it curves
        share = np.linspace(0.0, 1.0, 101)
        ax.plot(
            wx + (sx - wx) * share,
            wy + (sy - wy) * share,
            color="0.5",
            ls=":",
            lw=1.2,
            label="random mix",
            zorder=1,
        )
    for label, (cost, quality) in points.items():
        if label in bound_labels:
            i = bound_labels.index(label)
            style: dict[str, Any] = {
                "marker": _BOUND_MARKERS[i // len(_BOUND_COLORS) % len(_BOUND_MARKERS)],
                "color": _BOUND_COLORS[i % len(_BOUND_COLORS)],
                "ms": 15,
                "mec": "black",
            }
            shown, gid = f"{label} (bound)", f"bound:{label}"
        else:
            style = {"marker": "P", "color": "#666666", "ms": 9, "mec": "white"}
            style.update(_REFERENCE_STYLES.get(label, {}))
            shown, gid = label, f"reference:{label}"
        ax.plot([cost], [quality], ls="none", mew=0.8, label=shown, zorder=4, gid=gid, **style)
        costs.append(np.array([cost]))
    ax.set_xlabel(_cost_axis(ax, np.concatenate(costs), None))
    ax.set_ylabel("mean quality (failed = 0)")
    title = "Cost–quality curve"
    if setting is not None:
        title += f" (points labelled with their {setting.replace('_', ' ')})"
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(color="0.92")
    ax.margins(0.08)
    _legend_outside(ax)
    ax.autoscale_view()
    _root(ax).draw_without_rendering()
    _nest_bounds(ax, bound_labels)
    _label_settings(ax, notes)
    return ax


def _nest_bounds(ax: Axes, bound_labels: list[str]) -> None:
    """Bounds that land on one spot are nested: each earlier star is drawn larger behind the
    later ones, so every star's colour stays visible."""
    stars = [
        line for label in bound_labels for line in ax.lines if line.get_gid() == f"bound:{label}"
    ]
    if len(stars) < 2:
        return
    xy = np.array([np.asarray(s.get_xydata(), dtype=float)[0] for s in stars])
    points = ax.transData.transform(xy)
    px_per_pt = ax.figure.dpi / 72.0
    for group in _overlap_groups(points, 12.0 * px_per_pt):
        for depth, i in enumerate(group):
            rings = len(group) - 1 - depth
            stars[i].set_markersize(15 + 9 * rings)
            stars[i].set_zorder(4 + 0.01 * depth)


def _line_obstacles(ax: Axes, step: float) -> list[np.ndarray]:
    """Boxes along every line of ``ax`` (display pixels), ``step`` apart and ``step`` wide, so
    labels keep a little off the curves, the random-mix line and the markers."""
    boxes = []
    for line in ax.lines:
        xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
        xy = xy[np.isfinite(xy).all(axis=1)]
        drawn = line.get_marker() not in (None, "None", "none", "", " ")
        r = max(line.get_markersize() * ax.figure.dpi / 72.0 / 2 if drawn else 0.0, step / 2)
        for point in xy:
            boxes.append(np.array([point[0] - r, point[1] - r, point[0] + r, point[1] + r]))
        for a, b in pairwise(xy):
            count = max(1, int(np.hypot(*(b - a)) // step))
            for t in np.linspace(0.0, 1.0, count + 1)[1:-1]:
                x, y = a + (b - a) * t
                boxes.append(np.array([x - step / 2, y - step / 2, x + step / 2, y + step / 2]))
    return boxes


def _label_settings(ax: Axes, notes: list[tuple[str, float, float]]) -> None:
    """Each setting's label beside its own sweep point, nearer to it than to any other point,
    off the lines and markers."""
    if not notes:
        return
    curves = [line for line in ax.lines if str(line.get_gid()).startswith("curve:")]
    rivals = ax.transData.transform(
        np.concatenate(
            [np.column_stack([c.get_xdata(), c.get_ydata()]) for c in curves] or [np.empty((0, 2))]
        )
    )
    px_per_pt = ax.figure.dpi / 72.0
    anchors = ax.transData.transform([(cost, quality) for _, cost, quality in notes])
    _place_labels(
        ax,
        anchors,
        [text for text, _, _ in notes],
        ["0.35"] * len(notes),
        ["setting"] * len(notes),
        _line_obstacles(ax, 3.0 * px_per_pt),
        clearance=4.0 * px_per_pt,
        rivals=rivals,
    )
