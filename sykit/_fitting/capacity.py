"""A model's capacity measured from a real server: how its decode rate falls as it serves more
sequences at once, and from how many on it queues.

``sy.profiles.fit`` turns a run into a profile of one request alone; it says nothing of what the
server does under load. ``fit_capacity`` loads the server in closed loops of ``n`` concurrent
streamed requests, for each ``n`` of ``levels``, and fits a :class:`sykit.Capacity`:

* the slowdown: each level's per-sequence decode rate (output tokens over the seconds after the
  first token, ``sy.profiles.fit``'s rule) over level 1's, as ``(n, factor)`` points, and the
  processor-sharing number ``k`` (factor ``min(1, k / n)``) when that fits the points;
* the slots: in a closed loop of ``n`` requests on a server with ``s < n`` slots, ``n - s`` wait,
  so the time to first token grows by the wait. Each request's wait is its time to first token
  beyond level 1's; the requests in service on average while the loop is full (each from its start
  plus its wait to its end) are then ``s``;
* a queue limit, only when some level saw its requests refused (a 429 or 503 answered at once).

What a closed loop cannot see (docs/capacity.md): prefill contention and prompt caching mixed into
the time to first token, a slots number beyond the highest level (then it is a lower bound), a
queue timeout, and the exact queue limit between two levels.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError, UnknownModel
from sykit._fitting.profile import fit
from sykit._hosts.sim import SimHost
from sykit._run.api import run
from sykit._world.capacity import Capacity
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.models import Request
from sykit.strategies import single

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

__all__ = ["CapacityFit", "fit_capacity"]

#: A level's steady attempts: those that had about ``n`` requests in flight while they ran.
_STEADY_SLACK = 0.5
_LEVELS = (1, 2, 4, 8, 16)
_MIN_STEADY = 3
#: The HTTP statuses of a request refused because the server was full.
_REFUSALS = (429, 503)


@dataclass(frozen=True)
class _Timings:
    """One level's timings beyond its summary row: the steady attempts' times to first token and
    latencies, every served attempt's start, end and time to first token, and the full loop's
    window (from the first start to the last: ``n`` requests in flight all along)."""

    ttft: np.ndarray
    latency: np.ndarray
    start: np.ndarray
    end: np.ndarray
    first_token: np.ndarray
    window: tuple[float, float]


Samples = list[_Timings]
_PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


@dataclass(frozen=True)
class CapacityFit:
    """What :func:`fit_capacity` measured and fitted.

    ``measurements``: one row per level (``level``, the requests ``in_flight`` while the level's
    steady attempts ran, median ``ttft_s``, ``latency_s`` and per-sequence ``tokens_per_s``,
    ``factor`` (that rate over level 1's), the mean ``queue_s`` (time to first token beyond
    level 1's) and ``service_s``, ``slots_implied`` (the requests in service on average while
    the loop was full: the slots, at a level that queues), ``queueing``, aggregate
    ``throughput_tokens_per_s``, counts of ``requests``, ``ok``, ``errors`` and ``refused``, and
    the fit's ``fitted_factor`` and ``k_factor``, and ``sim_ttft_s`` / ``sim_tokens_per_s``: the
    same closed loop run in simulation on ``profile``). ``attempts``: every measured attempt,
    with its ``level``, ``in_flight`` and ``steady``.

    ``capacity`` is the fitted :class:`sykit.Capacity` with the measured ``(n, factor)`` points;
    ``k_capacity`` the same with ``slowdown=k`` when the rule ``min(1, k / n)`` is within
    ``k_tolerance`` of every point (else None; ``k`` and ``k_error`` say how close it came).
    ``slots_measured`` is False when no level queued: ``capacity.slots`` is then the highest
    level, a lower bound. ``profile`` is ``sy.profiles.fit`` of level 1 with ``capacity``: a
    ``ModelProfile`` for a ``SimHost`` (None when level 1 had too few answers).
    """

    model: str
    measurements: pd.DataFrame
    attempts: pd.DataFrame
    capacity: Capacity
    k: float | None
    k_error: float
    k_capacity: Capacity | None
    slots_measured: bool
    profile: ModelProfile | None

    def text(self) -> str:
        """A short report: the levels, measured against fitted, then the fitted capacity."""
        table = self.measurements
        lines = [
            f"capacity of {self.model!r}: closed loops of {_join(table['level'])} concurrent "
            f"streamed requests ({int(table['requests'].sum())} requests)",
            "",
            "level  in_flight  ttft_s  sim_ttft_s  tokens/s/seq  factor  fitted  queueing",
        ]
        for row in table.itertuples(index=False):
            lines.append(
                f"{row.level:>5}  {row.in_flight:>9.2f}  {row.ttft_s:>6.3f}  "
                f"{row.sim_ttft_s:>10.3f}  {row.tokens_per_s:>12.1f}  {row.factor:>6.3f}  "
                f"{row.fitted_factor:>6.3f}  {'yes' if row.queueing else 'no':>8}"
            )
        capacity = self.capacity
        lines.append("")
        if self.slots_measured:
            queued = table.loc[table["queueing"], "level"]
            implied = table.loc[table["queueing"], "slots_implied"].median()
            lines.append(
                f"slots: {capacity.slots} (the time to first token grows from "
                f"{int(queued.min())} concurrent requests, with {implied:.2f} in service)"
            )
        else:
            lines.append(
                f"slots: at least {capacity.slots} (no level queued: measure higher levels)"
            )
        if self.k is None:
            lines.append("slowdown: the measured points (one level: no rule to fit)")
        elif self.k_capacity is not None:
            lines.append(
                f"slowdown: k = {self.k:.3g} fits, min(1, {self.k:.3g}/n), within "
                f"{self.k_error:.3f} of every point"
            )
        else:
            lines.append(
                f"slowdown: the measured points (the best k, {self.k:.3g}, is off by "
                f"{self.k_error:.3f})"
            )
        if capacity.queue_limit is not None:
            lines.append(
                f"queue limit: {capacity.queue_limit} (requests refused with "
                f"{capacity.reject_status} from {int(table.loc[table['refused'] > 0, 'level'].min())}"
                " concurrent requests; the limit may be higher, up to the next level)"
            )
        lines.append(repr(capacity))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def plot(self, ax: Any = None) -> Figure | SubFigure:
        """Two panels: the rate factor by level, measured (dots) against the fitted points and the
        ``k`` rule; and the time to first token, measured against the simulated closed loop.
        ``ax`` is None (a new figure) or two Axes. Returns the Figure."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, pair = plt.subplots(1, 2, figsize=(10.0, 4.0), layout="constrained")
            rate_ax, ttft_ax = pair[0], pair[1]
        else:
            given = list(ax) if isinstance(ax, Sequence | np.ndarray) else []
            if len(given) != 2:
                raise ArgumentError("ax must be None or two matplotlib Axes (rate, ttft)")
            rate_ax, ttft_ax = given
        table = self.measurements
        top = int(table["level"].max())
        grid = np.arange(1, top + 1)
        slots = self.capacity.slots
        rate_ax.plot(table["level"], table["factor"], "o", label="measured")
        fitted = [self.capacity.factor(min(int(n), slots)) for n in grid]
        rate_ax.plot(grid, fitted, "-", label="fitted points")
        if self.k is not None:
            rule = [min(1.0, self.k / min(int(n), slots)) for n in grid]
            rate_ax.plot(grid, rule, "--", label=f"k = {self.k:.3g}")
        rate_ax.set_xlabel("concurrent requests")
        rate_ax.set_ylabel("decode rate per sequence / alone")
        rate_ax.set_ylim(bottom=0)
        rate_ax.legend()
        ttft_ax.plot(table["level"], table["ttft_s"], "o-", label="measured")
        ttft_ax.plot(table["level"], table["sim_ttft_s"], "s--", label="simulated (fitted)")
        ttft_ax.axvline(slots, color="grey", linewidth=0.8, label=f"slots = {slots}")
        ttft_ax.set_xlabel("concurrent requests")
        ttft_ax.set_ylabel("median time to first token (s)")
        ttft_ax.legend()
        for axis in (rate_ax, ttft_ax):
            axis.set_xscale("log", base=2)
            axis.set_xticks(table["level"], [str(n) for n in table["level"]])
        return ttft_ax.figure


def fit_capacity(
    source: Any,
    model: str | None = None,
    *,
    levels: Sequence[int] | None = None,
    requests_per_level: int | None = None,
    prompt: str = _PROMPT,
    max_tokens: int = 128,
    warmup: int = 1,
    base: ModelProfile | None = None,
    queue_tolerance: float = 0.2,
    k_tolerance: float = 0.1,
    seed: int = 0,
) -> CapacityFit:
    """Measure ``model`` on ``source`` at several concurrency levels and fit its capacity.

        host = sy.HttpHost("http://localhost:8000/v1", models=["Qwen/Qwen2.5-7B-Instruct"])
        fitted = sy.profiles.fit_capacity(
            host, "Qwen/Qwen2.5-7B-Instruct", levels=(1, 2, 4, 8, 16, 32)
        )
        print(fitted)                     # measured against fitted, level by level
        fitted.capacity                   # sy.Capacity(slots=..., slowdown=[(1, 1.0), ...])
        sy.SimHost({"local": fitted.profile})   # the model alone, and under load

    ``source`` is a host (an ``sy.HttpHost``; a ``SimHost`` works too) or the ``attempts`` frame
    of an earlier fit (with its ``level`` column), fitted again without measuring. For each ``n``
    of ``levels`` (1 among them: the rates are relative to it; default 1, 2, 4, 8, 16, or the
    frame's levels), ``requests_per_level`` requests
    (default ``4 × n``, at least 8) run in a closed loop of ``n`` at once: ``prompt`` with
    ``max_tokens``, streamed, after ``warmup`` requests alone that are not counted. The host's
    policy applies: retries and a cooldown after a 503 distort a loop, so give it
    ``sy.HostPolicy(max_retries=0, cooldown_s=0)``. A level queues when its mean wait (time to
    first token beyond level 1's) reaches ``queue_tolerance`` of its mean service time. The rule
    ``min(1, k / n)`` replaces the points (``k_capacity``) when it is within ``k_tolerance`` of
    each. ``base`` gives the fitted profile what is not measured (prices, context window).
    Returns a :class:`CapacityFit`; docs/capacity.md says what it can and cannot see.
    """
    if levels is None:
        given = isinstance(source, pd.DataFrame) and "level" in source
        levels = sorted(set(source["level"].astype(int))) if given else _LEVELS
    levels = _check_levels(levels)
    queue_tolerance = check_real(
        queue_tolerance, "queue_tolerance", low=0, low_open=True, type_error=ArgumentError
    )
    k_tolerance = check_real(k_tolerance, "k_tolerance", low=0, type_error=ArgumentError)
    if base is not None and not isinstance(base, ModelProfile):
        raise ArgumentTypeError(
            f"base must be a sy.ModelProfile or None, got {type(base).__name__}"
        )
    if isinstance(source, pd.DataFrame):
        attempts, model = _given(source, model, levels)
    else:
        if not isinstance(model, str):
            raise ArgumentTypeError(f"model must be the name of a model of the host, got {model!r}")
        attempts = _measure(
            source, model, levels, requests_per_level, prompt, max_tokens, warmup, seed
        )
    attempts = _mark_steady(attempts)
    table = _judge(*_summarise(attempts, levels), queue_tolerance)
    capacity, slots_measured = _fit(table)
    k, k_error = _fit_k(capacity)
    k_capacity = capacity.replace(slowdown=k) if k is not None and k_error <= k_tolerance else None
    table["fitted_factor"] = [capacity.factor(min(int(n), capacity.slots)) for n in table["level"]]
    table["k_factor"] = [
        math.nan if k is None else min(1.0, k / min(int(n), capacity.slots)) for n in table["level"]
    ]
    profile = _profile(attempts, model, base, capacity)
    table = _simulated(table, attempts, profile, model, seed)
    return CapacityFit(
        model=model,
        measurements=table,
        attempts=attempts,
        capacity=capacity,
        k=k,
        k_error=k_error,
        k_capacity=k_capacity,
        slots_measured=slots_measured,
        profile=profile,
    )


# -- checking and measuring ------------------------------------------------------------------------


def _check_levels(levels: object) -> tuple[int, ...]:
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence) or not levels:
        raise ArgumentTypeError(
            f"levels must be a list of ints such as (1, 2, 4, 8), got {levels!r}"
        )
    checked = sorted({check_int(n, "levels[...]", low=1, type_error=ArgumentError) for n in levels})
    if checked[0] != 1:
        raise ArgumentError(
            f"levels must include 1: every rate is relative to one request alone, got {checked}"
        )
    return tuple(checked)


def _given(
    frame: pd.DataFrame, model: str | None, levels: tuple[int, ...]
) -> tuple[pd.DataFrame, str]:
    needed = {"level", "model", "start_s", "end_s", "ttft_s", "latency_s", "output_tokens"}
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise ArgumentError(
            f"the attempts need columns {missing}: pass a CapacityFit's attempts, or a host"
        )
    names = list(pd.unique(frame["model"].dropna().astype(str)))
    if model is None:
        if len(names) != 1:
            raise ArgumentError(f"the attempts hold models {names}: name one with model=")
        model = names[0]
    elif model not in names:
        raise UnknownModel(model, names, where="the attempts")
    rows = frame[(frame["model"].astype(str) == model).to_numpy()]
    rows = rows[rows["level"].isin(levels).to_numpy()]
    absent = sorted(set(levels) - set(rows["level"].astype(int)))
    if absent:
        raise ArgumentError(f"the attempts have no rows at levels {absent}")
    cols = [c for c in rows.columns if c not in ("in_flight", "steady")]
    return rows[cols].reset_index(drop=True), model


def _measure(
    host: Any,
    model: str,
    levels: tuple[int, ...],
    per_level: int | None,
    prompt: str,
    max_tokens: int,
    warmup: int,
    seed: int,
) -> pd.DataFrame:
    known = getattr(host, "profiles", None)
    if not isinstance(known, dict):
        raise ArgumentTypeError(
            f"source must be a host (sy.HttpHost) or a CapacityFit's attempts, got "
            f"{type(host).__name__}"
        )
    if model not in known:
        raise UnknownModel(model, list(known), where="the host")
    if per_level is not None:
        per_level = check_int(per_level, "requests_per_level", low=1, type_error=ArgumentError)
        if per_level < levels[-1]:
            raise ArgumentError(
                f"requests_per_level ({per_level}) must be at least the highest level "
                f"({levels[-1]}): a closed loop of n needs n requests"
            )
    if not isinstance(prompt, str) or not prompt:
        raise ArgumentTypeError("prompt must be a non-empty string")
    max_tokens = check_int(max_tokens, "max_tokens", low=2, type_error=ArgumentError)
    warmup = check_int(warmup, "warmup", low=0, type_error=ArgumentError)

    def requests(tag: str, count: int) -> list[Request]:
        stream = {"stream": True}  # the time to first token needs a stream
        return [
            Request(f"{prompt} ({tag}.{i})", id=f"{tag}.{i}", max_output_tokens=max_tokens,
                    metadata=stream)
            for i in range(count)
        ]  # fmt: skip

    strategy = single(model)
    if warmup:
        run(strategy, requests("warmup", warmup), host=host, concurrency=1, seed=seed,
            progress=False)  # fmt: skip
    frames = []
    for n in levels:
        count = per_level if per_level is not None else max(8, 4 * n)
        result = run(strategy, requests(f"n{n}", count), host=host, concurrency=n, seed=seed,
                     progress=False)  # fmt: skip
        attempts = result.attempts
        frames.append(attempts[(attempts["kind"] == "model").to_numpy()].assign(level=n))
        if n == 1:  # nothing answers: say why now, without measuring the other levels
            _refuse_if_all_failed(frames[-1])
    return pd.concat(frames, ignore_index=True)


def _failure_kind(row: Any) -> str:
    """An error attempt in a few words: ``HTTP 503 (unavailable)``, ``unavailable: connection
    refused by 127.0.0.1:8000``."""
    kind = str(row.get("error_kind") or "error")
    status = row.get("http_status")
    if status is not None and not pd.isna(status):
        return f"HTTP {int(status)} ({kind})"
    message = row.get("error_message")
    if isinstance(message, str) and message.strip():
        short = message.strip().split(" (", 1)[0].splitlines()[0]
        return f"{kind}: {short[:80]}"
    return kind


def _refuse_if_all_failed(level: pd.DataFrame) -> None:
    """An error saying what went wrong when no attempt of level 1 succeeded: the most common
    error kinds with their counts."""
    if not len(level) or "status" not in level:
        return
    status = level["status"].astype(str).to_numpy()
    if (status == "ok").any():
        return
    failed = level[status == "error"]
    if not len(failed):
        return
    counts = pd.Series([_failure_kind(row) for row in failed.to_dict("records")]).value_counts()
    shown = "; ".join(f"{count} × {what}" for what, count in counts.head(3).items())
    if len(counts) > 3:
        shown += f"; {int(counts.iloc[3:].sum())} other"
    requests = level["request_id"].nunique() if "request_id" in level else len(level)
    attempts = "" if requests == len(level) else f" ({len(level)} attempts)"
    raise ArgumentError(
        f"all {requests} requests at level 1 failed{attempts}: {shown}; check that the server "
        "is up at the host's base_url and serves this model"
    )


# -- summarising ---------------------------------------------------------------------------------


def _numbers(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _mark_steady(attempts: pd.DataFrame) -> pd.DataFrame:
    """Each attempt's ``in_flight``, the time-average of the level's attempts running while it ran
    (itself included), and ``steady``: whether that was about the level's ``n``. The first and
    last requests of a closed loop run beside fewer than ``n``."""
    in_flight = np.full(len(attempts), np.nan)
    levels = attempts["level"].to_numpy()
    for n in pd.unique(levels):
        where = np.flatnonzero(levels == n)
        start = _numbers(attempts, "start_s")[where]
        end = _numbers(attempts, "end_s")[where]
        span = end - start
        usable = np.isfinite(span) & (span > 0)
        s, e = start[usable], end[usable]
        overlap = np.clip(np.minimum(e[:, None], e[None, :]) - np.maximum(s[:, None], s[None, :]),
                          0, None)  # fmt: skip
        values = np.full(len(where), np.nan)
        values[usable] = overlap.sum(axis=1) / (e - s)
        in_flight[where] = values
    steady = in_flight >= levels.astype(float) - _STEADY_SLACK
    return attempts.assign(in_flight=in_flight, steady=steady)


def _served(rows: pd.DataFrame) -> pd.DataFrame:
    """The successful streamed attempts with a decode time: those the rates come from."""
    ttft, latency = _numbers(rows, "ttft_s"), _numbers(rows, "latency_s")
    out = _numbers(rows, "output_tokens")
    ok = (rows["status"].astype(str) == "ok").to_numpy() if "status" in rows else True
    usable = ok & np.isfinite(ttft) & (latency > ttft) & (out > 0)
    return rows[usable]


def _summarise(attempts: pd.DataFrame, levels: tuple[int, ...]) -> tuple[pd.DataFrame, Samples]:
    """One row per level, and each level's steady times to first token and latencies."""
    rows, samples = [], []
    for n in levels:
        level = attempts[(attempts["level"] == n).to_numpy()]
        served = _served(level)
        steady = served[served["steady"].to_numpy()]
        if len(steady) < _MIN_STEADY:
            steady = served
        ttft, latency = _numbers(steady, "ttft_s"), _numbers(steady, "latency_s")
        out = _numbers(steady, "output_tokens")
        status = level["status"].astype(str) if "status" in level else pd.Series("ok", level.index)
        errors = level[(status == "error").to_numpy()]
        refused = np.isin(_numbers(errors, "http_status"), _REFUSALS).sum()
        start, end = _numbers(level, "start_s"), _numbers(level, "end_s")
        elapsed = np.nanmax(end) - np.nanmin(start) if len(level) else math.nan
        tokens = float(np.nansum(_numbers(served, "output_tokens")))
        rows.append(
            {
                "level": n,
                "requests": len(level),
                "ok": len(served),
                "errors": len(errors),
                "refused": int(refused),
                "in_flight": float(np.mean(steady["in_flight"])) if len(steady) else math.nan,
                "ttft_s": _median(ttft),
                "latency_s": _median(latency),
                "tokens_per_s": _median(out / (latency - ttft)),
                "throughput_tokens_per_s": tokens / elapsed if elapsed > 0 else math.nan,
            }
        )
        window = (float(np.nanmin(start)), float(np.nanmax(start))) if len(level) else (0.0, 0.0)
        samples.append(
            _Timings(
                ttft=ttft,
                latency=latency,
                start=_numbers(served, "start_s"),
                end=_numbers(served, "end_s"),
                first_token=_numbers(served, "ttft_s"),
                window=window,
            )
        )
    table = pd.DataFrame(rows)
    if not np.isfinite(table["tokens_per_s"].iloc[0]):
        _refuse_if_all_failed(attempts[(attempts["level"] == levels[0]).to_numpy()])
        raise ArgumentError(
            "level 1 has no streamed answer with a decode time (output tokens after the first "
            "token): check that the model answers and streams, and that max_tokens ≥ 2"
        )
    return table, samples


def _median(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else math.nan


def _judge(table: pd.DataFrame, samples: Samples, queue_tolerance: float) -> pd.DataFrame:
    """Per level: the wait beyond level 1's time to first token, the service time, the requests
    in service on average (the slots, when the level queues), whether it queued, the rate factor."""
    base_ttft = table["ttft_s"].iloc[0]
    alone = table["tokens_per_s"].iloc[0]
    queue, service, implied = [], [], []
    for in_flight, timings in zip(table["in_flight"], samples, strict=True):
        ttft, latency = timings.ttft, timings.latency
        usable = np.isfinite(ttft) & np.isfinite(latency)
        wait = np.clip(ttft[usable] - base_ttft, 0, None)
        total = latency[usable]
        if not usable.any():
            queue.append(math.nan)
            service.append(math.nan)
            implied.append(math.nan)
            continue
        queue.append(float(wait.mean()))
        service.append(float((total - wait).mean()))
        implied.append(_in_service(timings, base_ttft, in_flight * service[-1] / total.mean()))
    table.insert(table.columns.get_loc("latency_s"), "queue_s", queue)
    table.insert(table.columns.get_loc("latency_s") + 1, "service_s", service)
    table["slots_implied"] = implied
    table["queueing"] = [
        bool(q >= queue_tolerance * s) if np.isfinite(q) and np.isfinite(s) else False
        for q, s in zip(queue, service, strict=True)
    ]
    table["factor"] = table["tokens_per_s"] / alone
    return table


def _in_service(timings: _Timings, base_ttft: float, little: float) -> float:
    """The requests in service on average while the loop was full: each served from its start
    plus its wait (its time to first token beyond ``base_ttft``) to its end. A loop of a single
    wave has no such window: then Little's law, ``little``."""
    t0, t1 = timings.window
    if not t1 > t0:
        return little
    wait = np.clip(timings.first_token - base_ttft, 0, None)
    begin = np.clip(timings.start + wait, t0, t1)
    end = np.clip(timings.end, t0, t1)
    usable = np.isfinite(begin) & np.isfinite(end)
    return float(np.clip(end[usable] - begin[usable], 0, None).sum() / (t1 - t0))


# -- fitting -------------------------------------------------------------------------------------


def _fit(table: pd.DataFrame) -> tuple[Capacity, bool]:
    levels = table["level"].astype(int).tolist()
    queueing = table["queueing"].tolist()
    first = next((n for n, q in zip(levels, queueing, strict=True) if q and n > 1), None)
    if first is None:
        slots, measured = levels[-1], False
    else:
        below = max(n for n in levels if n < first)
        queued = table[(table["queueing"] & (table["level"] >= first)).to_numpy()]
        implied = float(queued["slots_implied"].median())
        estimate = round(implied) if math.isfinite(implied) else below
        slots, measured = min(max(estimate, below), first - 1), True
    served = table[(table["level"] <= slots) & (table["level"] < (first or math.inf))]
    points = {
        int(n): float(f)
        for n, f in zip(served["level"], served["factor"], strict=True)
        if math.isfinite(f)
    }
    points[1] = 1.0
    if first is not None and slots not in points:
        factors = table.loc[(table["level"] >= first) & table["queueing"], "factor"]
        factor = float(factors.median())
        if math.isfinite(factor) and factor > 0:
            points[slots] = factor
    options: dict[str, Any] = {}
    refusing = table.loc[table["refused"] > 0, "level"]
    if not refusing.empty:
        clean = [n for n in levels if n < int(refusing.min())]
        options["queue_limit"] = max(0, (max(clean) if clean else 1) - slots)
    capacity = Capacity(
        slots=slots,
        slowdown=[(n, round(f, 4)) for n, f in sorted(points.items())],
        **options,
    )
    return capacity, measured


def _fit_k(capacity: Capacity) -> tuple[float | None, float]:
    """The ``k`` of ``min(1, k / n)`` nearest the points (least squares), and its largest miss."""
    points = capacity.slowdown
    assert isinstance(points, tuple)
    ns = np.array([n for n, _ in points if n > 1], dtype=float)
    fs = np.array([f for n, f in points if n > 1], dtype=float)
    if ns.size == 0:
        return None, math.nan
    ks = np.linspace(1.0, float(ns.max()), 2001)
    predicted = np.minimum(1.0, ks[:, None] / ns[None, :])
    sse = ((predicted - fs[None, :]) ** 2).sum(axis=1)
    best = int(np.argmin(sse))
    k = float(ks[best])
    return round(k, 3), float(np.abs(predicted[best] - fs).max())


def _profile(
    attempts: pd.DataFrame, model: str, base: ModelProfile | None, capacity: Capacity
) -> ModelProfile | None:
    alone = attempts[(attempts["level"] == 1).to_numpy()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = fit(alone, base={model: base or ModelProfile()}, faults=False)
    if caught or model not in fitted:
        return None
    return fitted[model].replace(capacity=capacity)


def _simulated(
    table: pd.DataFrame,
    attempts: pd.DataFrame,
    profile: ModelProfile | None,
    model: str,
    seed: int,
) -> pd.DataFrame:
    """The same closed loops run on a ``SimHost`` with the fitted profile: what the fit predicts."""
    if profile is None:
        return table.assign(sim_ttft_s=math.nan, sim_tokens_per_s=math.nan)
    policy = HostPolicy(max_retries=0, cooldown_s=0)
    host = SimHost({model: profile}, policy=policy)
    frames = []
    for n, count in zip(table["level"], table["requests"], strict=True):
        requests = [Request(f"q{i}", id=i) for i in range(max(int(count), int(n)))]
        result = run(single(model), requests, host=host, concurrency=int(n), seed=seed,
                     progress=False)  # fmt: skip
        frames.append(result.attempts.assign(level=int(n)))
    simulated = _mark_steady(pd.concat(frames, ignore_index=True))
    sim, _ = _summarise(simulated, tuple(int(n) for n in table["level"]))
    return table.assign(
        sim_ttft_s=sim["ttft_s"].to_numpy(), sim_tokens_per_s=sim["tokens_per_s"].to_numpy()
    )


def _join(values: Any) -> str:
    return ", ".join(str(int(v)) for v in values)
