"""The request timeline: every attempt of one request as a bar on the run clock.

One request is where a strategy's behaviour can be read step by step: which calls raced, which
were retried, fell back, timed out or lost the race, and which one served the answer. Bars are
coloured by status and hatched by cancel cause, races are shaded, and the outcome is starred
(served) or crossed (failed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import Kind, Phase, RequestStatus, Status
from sykit._viz.style import (
    CAUSE_HATCHES,
    CAUSE_LABELS,
    EDGE_COLOR,
    RACE_COLOR,
    STATUS_COLORS,
    _axes,
    _check_frame,
    _legend_outside,
    _usd,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _lanes(rows: pd.DataFrame) -> pd.DataFrame:
    """Attempts in drawing order: each race's calls together, each call's retries together, groups
    by when they started."""
    group = [
        f"c{call}" if pd.isna(race) else f"r{int(race)}"
        for race, call in zip(rows["race_id"], rows["call_id"], strict=True)
    ]
    ordered = rows.assign(_group=group)
    ordered["_group_start"] = ordered.groupby("_group")["start_s"].transform("min")
    ordered["_call_start"] = ordered.groupby("call_id")["start_s"].transform("min")
    return ordered.sort_values(
        ["_group_start", "_group", "_call_start", "call_id", "start_s", "retry_index"],
        kind="stable",
    ).reset_index(drop=True)


def _served_lane(lanes: pd.DataFrame, request: pd.Series | None) -> int | None:
    """The lane of the attempt that served the request (the ``served`` column says which)."""
    if request is None or request["status"] != RequestStatus.OK or pd.isna(request["served_model"]):
        return None
    if "served" in lanes:
        flagged = lanes.index[lanes["served"].astype(bool)]
        return int(flagged[0]) if len(flagged) else None
    candidates = lanes[
        (lanes["status"] == Status.OK)
        & (lanes["kind"] == Kind.MODEL)
        & (lanes["model"].astype(str) == str(request["served_model"]))
    ]
    if candidates.empty:
        return None
    served_cost = request["cost_usd"] - request["wasted_usd"] - request["routing_usd"]
    score = pd.DataFrame(
        {
            "gap": (candidates["cost_usd"] - served_cost).abs().round(12),
            "answer": (candidates["phase"] != Phase.ANSWER).astype(int),
            "end": -candidates["end_s"],
        },
        index=candidates.index,
    )
    return int(score.sort_values(["gap", "answer", "end"], kind="stable").index[0])


def _attempt_label(row: Any) -> str:
    status = row.status
    if status == Status.OK:
        return f"ok · {_usd(row.cost_usd)}"
    if status == Status.SKIPPED:
        return "skipped (cooldown)"
    if status == Status.CANCELLED:
        cause = CAUSE_LABELS.get(str(row.cancel_cause), str(row.cancel_cause))
        return f"cancelled: {cause} · {_usd(row.cost_usd)}"
    code = "" if pd.isna(row.http_status) else f"{int(row.http_status)} "
    what = f"{code}{row.error_kind}"
    if isinstance(row.fallback_reason, str):
        return f"{what} · fell back: {row.fallback_reason}"
    if row.retried:
        return f"{what} · retried"
    return f"{what} · failed"


def _lane_names(lanes: pd.DataFrame) -> list[str]:
    """``model · phase``, plus ``call k`` when one model is called more than once in a phase (a
    hedge's copies) and ``retry k`` for retries."""
    calls: dict[tuple[str, str, str], list[int]] = {}
    for row in lanes.itertuples(index=False):
        seen = calls.setdefault((str(row.model), str(row.phase), str(row.kind)), [])
        if row.call_id not in seen:
            seen.append(row.call_id)
    names = []
    for row in lanes.itertuples(index=False):
        key = (str(row.model), str(row.phase), str(row.kind))
        parts = [key[0], key[1]]
        if row.kind == Kind.DECISION:
            parts.append("decision")
        if len(calls[key]) > 1:
            parts.append(f"call {calls[key].index(row.call_id) + 1}")
        if row.retry_index > 0:
            parts.append(f"retry {row.retry_index}")
        names.append(" · ".join(parts))
    return names


def plot_timeline(
    attempts: pd.DataFrame,
    requests: pd.DataFrame,
    request_id: Any = None,
    *,
    strategy: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Every attempt of one request as a bar on the run clock: colour by status, hatch and label by
    cause (lost race, timeout, abandoned, fell back: reason), races shaded, the outcome starred.

    ``request_id=None`` picks the request with the most attempts: usually the one worth reading.
    """
    from matplotlib.patches import Patch, Rectangle

    _check_frame(attempts, "attempts", ("request_id", "start_s", "end_s", "status"))
    if attempts.empty:
        raise ArgumentError("attempts is empty: this run made no attempts to draw")
    if request_id is None:
        counts = attempts.groupby("request_id", observed=True, sort=False).size()
        request_id = counts.idxmax()
    if isinstance(request_id, np.generic):
        request_id = request_id.item()
    if not pd.api.types.is_scalar(request_id):
        raise ArgumentTypeError(
            f"request_id must be one request's id (a str or an int), got "
            f"{type(request_id).__name__} {request_id!r}; draw one timeline per request"
        )
    rows = attempts[attempts["request_id"] == request_id]
    if rows.empty:
        known = list(dict.fromkeys(attempts["request_id"].tolist()))
        sample = ", ".join(repr(k) for k in known[:5]) + (", …" if len(known) > 5 else "")
        kinds = {type(k) for k in known}
        if known and type(request_id) not in kinds:
            wanted = " or ".join(sorted(k.__name__ for k in kinds))
            hint = ""
            if str in kinds and str(request_id) in set(map(str, known)):
                hint = f" (use {str(request_id)!r})"
            elif (
                int in kinds
                and isinstance(request_id, str)
                and request_id.strip().lstrip("-").isdigit()
            ):
                hint = f" (use {int(request_id)!r})"
            raise ArgumentError(
                f"request_id {request_id!r} is a {type(request_id).__name__}, but this run's "
                f"request ids are {wanted}{hint} (ids: {sample})"
            )
        raise ArgumentError(
            f"request_id {request_id!r} has no attempts in this run (ids: {sample})"
        )
    match = requests[requests["request_id"] == request_id]
    request = match.iloc[0] if len(match) else None
    lanes = _lanes(rows)
    n = len(lanes)
    ax = _axes(ax, (10.0, max(2.6, 1.3 + 0.42 * n)))

    first = float(lanes["start_s"].min())
    last = float(np.nanmax(lanes["end_s"].to_numpy()))
    if request is not None:
        first = min(first, float(request["start_s"]))
        last = max(last, float(request["end_s"]))
    span = max(last - first, 0.05)
    served = _served_lane(lanes, request)
    failed_lane = None
    if served is None and request is not None and request["status"] != RequestStatus.OK:
        # the error that failed the request: the last attempt to end in an error, else the last lane
        errors = lanes.index[lanes["status"] == Status.ERROR]
        failed_lane = int(lanes.loc[errors, "end_s"].idxmax()) if len(errors) else n - 1
    marked = served if served is not None else failed_lane

    for y, row in enumerate(lanes.itertuples(index=False)):
        start, end = float(row.start_s), float(row.end_s)
        status = str(row.status)
        cause = str(row.cancel_cause) if status == Status.CANCELLED else None
        ax.barh(
            y,
            end - start,
            left=start,
            height=0.62,
            color=STATUS_COLORS.get(status, STATUS_COLORS["error"]),
            edgecolor=EDGE_COLOR,
            linewidth=0.6,
            hatch=CAUSE_HATCHES.get(cause) if cause else None,
            gid="attempt",
            zorder=2,
        )
        if status == Status.SKIPPED:
            ax.plot([start], [y], marker="x", color=EDGE_COLOR, ms=6, ls="none", zorder=3)
        ax.text(
            end + (0.04 if y == marked else 0.008) * span,
            y,
            _attempt_label(row),
            va="center",
            ha="left",
            fontsize=8,
            color="#222222",
            gid="attempt_label",
            zorder=4,
        )

    causes = (
        lanes.loc[lanes["status"] == Status.CANCELLED, "cancel_cause"].dropna().astype(str).unique()
    )
    handles: list[Any] = [
        Patch(facecolor=STATUS_COLORS[s], edgecolor=EDGE_COLOR, label=s)
        for s in STATUS_COLORS
        if (lanes["status"] == s).any() and s != Status.CANCELLED
    ]
    handles += [
        Patch(
            facecolor=STATUS_COLORS["cancelled"],
            edgecolor=EDGE_COLOR,
            hatch=CAUSE_HATCHES.get(c),
            label=f"cancelled: {CAUSE_LABELS.get(c, c)}",
        )
        for c in CAUSE_HATCHES
        if c in causes
    ]

    races = lanes.dropna(subset=["race_id"]).groupby("race_id", sort=True)
    for race_id, members in races:
        ys = members.index
        # from the race's first start to its last end (the request's end at the latest), not
        # across the whole axis
        start, end = float(members["start_s"].min()), float(members["end_s"].max())
        ax.add_patch(
            Rectangle(
                (start, ys.min() - 0.45),
                end - start,
                ys.max() - ys.min() + 0.9,
                color=RACE_COLOR,
                alpha=0.12,
                lw=0,
                zorder=0,
                gid=f"race:{race_id}",
            )
        )
    if len(races):
        handles.append(Patch(facecolor=RACE_COLOR, alpha=0.12, label="race / timeout group"))

    if served is not None and request is not None:  # a served lane implies the request row
        (star,) = ax.plot(
            [float(lanes.loc[served, "end_s"])],
            [served],
            marker="*",
            ms=15,
            color="#ffcc00",
            mec="black",
            mew=0.8,
            ls="none",
            zorder=5,
            label=f"served by {request['served_model']}",
            gid="outcome",
        )
        handles.append(star)
    elif failed_lane is not None and request is not None:  # and so does a failed one
        (cross,) = ax.plot(
            [float(request["end_s"])],
            [failed_lane],
            marker="X",
            ms=11,
            color=STATUS_COLORS["error"],
            mec="black",
            mew=0.8,
            ls="none",
            zorder=5,
            label=f"request failed: {request['error_kind']}",
            gid="outcome",
        )
        handles.append(cross)
    if request is not None:
        routing_end = float(request["start_s"] + request["routing_s"])
        if (lanes["phase"] == Phase.ANSWER).any() and (lanes["phase"] == Phase.ROUTING).any():
            handles.append(
                ax.axvline(routing_end, color="0.45", ls="--", lw=0.9, label="routing done")
            )
        handles.append(
            ax.axvline(float(request["end_s"]), color="black", lw=1.0, label="request end")
        )

    ax.set_yticks(range(n), _lane_names(lanes), fontsize=8)
    ax.set_ylim(n - 0.4, -0.6)
    ax.set_xlim(first - 0.02 * span, last + 0.42 * span)
    _fit_labels(ax)
    ax.set_xlabel("run clock (s)")
    ax.grid(axis="x", color="0.9", zorder=0)
    ax.set_axisbelow(True)
    who = f"{strategy} · " if strategy else ""
    if request is not None:
        verdict = (
            f"served by {request['served_model']}"
            if request["status"] == RequestStatus.OK
            else f"failed ({request['error_kind']})"
        )
        title = (
            f"{who}request {request_id!r}: {verdict} in {request['latency_s']:.2f} s, "
            f"{n} attempts, {_usd(request['cost_usd'])}"
        )
    else:
        title = f"{who}request {request_id!r}: {n} attempts"
    ax.set_title(title, fontsize=10, loc="left")
    _legend_outside(ax, handles)
    return ax


def _fit_labels(ax: Axes) -> None:
    """Widen the x axis so every attempt label ends inside it: a label is anchored at its bar's
    end (in data) and has a width in pixels, so the right limit that fits it solves
    ``x + w · (right − left) / W = right``."""
    labels = [t for t in ax.texts if t.get_gid() == "attempt_label"]
    if not labels:
        return
    figure = ax.figure
    get_renderer = getattr(figure.canvas, "get_renderer", None)  # a bare Figure() has none
    # Figure._get_renderer is private matplotlib API, missing from its type hints
    renderer = get_renderer() if get_renderer is not None else figure._get_renderer()  # type: ignore[union-attr]
    left, right = ax.get_xlim()
    width = ax.get_window_extent(renderer).width
    needed = right
    for label in labels:
        share = label.get_window_extent(renderer).width / width
        if share < 0.95:
            x = label.get_position()[0]
            needed = max(needed, (x - left * share) / (1 - share) + 0.01 * (right - left))
    if needed > right:
        ax.set_xlim(left, needed)
