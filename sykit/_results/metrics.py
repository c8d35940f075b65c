"""Summary metrics over the ``requests`` and ``attempts`` frames of one or more runs.

Quality counts a failed request as 0 (it served nothing) and leaves out a served answer the dataset
has no grade for (it is *ungraded*: counted in ``n_ungraded``, with an :class:`UngradedWarning`).

Seeds replay the same requests, so rows of different seeds are not independent samples. Quality
means and their intervals are taken over *requests*: each request's mean over seeds first, then a
percentile bootstrap of the mean of those per-request means, with a fixed generator seed so the same
frames always give the same intervals. Paired differences resample the *same* requests for both
strategies, which is what makes them tight when strategies see the same faults. The interval covers
the sampling of requests, not simulation noise across seeds (docs/statistics.md).
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from types import FrameType

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import Phase, RequestStatus, Status

__all__ = [
    "ATTEMPT_COUNTS",
    "SUMMARY_COLUMNS",
    "UngradedWarning",
    "attempt_counts",
    "bootstrap_mean_ci",
    "bootstrap_mean_cis",
    "by_names",
    "mean_quality",
    "moved_on_by_strategy",
    "paired_differences",
    "pareto_frontier",
    "per_request_means",
    "request_quality",
    "retried_by_strategy",
    "summarize",
    "ungraded",
    "warn_ungraded",
]

FALLBACK_REASONS = ("context_window", "capability", "unavailable", "rate_limit", "policy")
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20_240_601

SUMMARY_COLUMNS: tuple[str, ...] = (
    "strategy",
    "realizable",
    "requests",
    "seeds",
    "success_rate",
    "mean_quality",
    "quality_ci_low",
    "quality_ci_high",
    "n_ungraded",
    "cost_usd",
    "cost_per_request_usd",
    "cost_per_1k_requests_usd",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "ttft_p50_s",
    "attempts_per_request",
    "cancelled_attempts",
    "wasted_usd",
    "wasted_share",
    "routing_usd",
    "fallbacks",
    *(f"fallbacks_{reason}" for reason in FALLBACK_REASONS),
    "retries",
    "routing_errors",
    "makespan_s",
)

#: The latency percentiles a summary reports unless told otherwise (and TTFT's median).
DEFAULT_PERCENTILES: tuple[float, ...] = (0.5, 0.95, 0.99)


class UngradedWarning(UserWarning):
    """Some served answers have no grade in the dataset: quality means and intervals leave them out
    (the summary's ``n_ungraded`` counts them). A mean over the graded answers only can flatter a
    strategy that serves ungraded answers more often; grade them, or compare on graded requests."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _stacklevel_outside_package() -> int:
    """The ``stacklevel`` that points a warning issued by our caller at the first frame outside
    sykit (the user's ``summary()`` call, however many sykit frames lie in between)."""
    frame: FrameType | None = sys._getframe(
        2
    )  # the caller of the function that calls warnings.warn
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def _quantile(values: pd.Series, q: float) -> float:
    clean = values.dropna()
    return float(np.quantile(clean.to_numpy(), q)) if len(clean) else math.nan


def _strategy_key(requests: pd.DataFrame) -> pd.Series:
    if "strategy" in requests:
        return requests["strategy"].astype(str)
    return pd.Series("", index=requests.index)


def ungraded(requests: pd.DataFrame) -> pd.Series:
    """True for a request that was served (status ok) but whose answer has no grade (NaN quality)."""
    return (requests["status"] == RequestStatus.OK) & requests["quality"].isna()


def request_quality(requests: pd.DataFrame) -> pd.Series:
    """Per-row quality as summaries count it: a failed request 0 (it served nothing), a served and
    graded one its grade, a served but ungraded one NaN (left out of every quality mean).

    A strategy none of whose served answers has a grade has no quality at all: all NaN, so its
    failures alone do not make a mean of 0. A strategy whose every request failed has quality 0.
    """
    ok = requests["status"] == RequestStatus.OK
    quality = requests["quality"].astype(float).where(ok, 0.0)
    key = _strategy_key(requests)
    served_any = ok.groupby(key).transform("any")
    graded_any = (ok & requests["quality"].notna()).groupby(key).transform("any")
    return quality.mask(served_any & ~graded_any)


def per_request_means(requests: pd.DataFrame, values: pd.Series) -> pd.Series:
    """Per ``request_id``, the mean over seeds of the finite ``values`` (one strategy's rows);
    requests with no finite value are left out. These are the units intervals resample."""
    finite = values.astype(float).where(np.isfinite(values.astype(float)))
    means = finite.groupby(requests["request_id"], sort=False, observed=True).mean()
    return means.dropna()


def mean_quality(requests: pd.DataFrame) -> float:
    """One strategy's mean quality: the mean over requests of each request's mean over seeds
    (failed = 0, ungraded left out); NaN when no quality is known."""
    means = per_request_means(requests, request_quality(requests))
    return float(means.mean()) if len(means) else math.nan


def bootstrap_mean_ci(
    values: np.ndarray, *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (NaN, NaN for fewer than two finite values).

    Each value is one independent unit (a request's mean over seeds, not a seed × request row)."""
    return bootstrap_mean_cis([values], level=level, resamples=resamples)[0]


def bootstrap_mean_cis(
    samples: Sequence[np.ndarray], *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> list[tuple[float, float]]:
    """:func:`bootstrap_mean_ci` of each sample, computed together.

    Samples of the same size share one resample matrix (the same generator seed draws the same
    picks for every sample of a size, so a sample's interval does not depend on what it was
    computed with): each resample is a row of counts, and the resampled means of all those
    samples are one matrix product, not a loop over samples."""
    cleaned = []
    for values in samples:
        values = np.asarray(values, dtype=float)
        cleaned.append(values[np.isfinite(values)])
    out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(cleaned)
    by_size: dict[int, list[int]] = {}
    for i, clean in enumerate(cleaned):
        if len(clean) >= 2:
            by_size.setdefault(len(clean), []).append(i)
    tail = (1 - level) / 2 * 100
    for members in by_size.values():
        table = np.stack([cleaned[i] for i in members], axis=1)  # n × samples
        means = _resampled_means(table, resamples)  # resamples × samples
        bounds = np.percentile(means, [tail, 100 - tail], axis=0)
        for j, i in enumerate(members):
            out[i] = (float(bounds[0, j]), float(bounds[1, j]))
    return out


def resample_counts(n: int, resamples: int) -> Iterator[tuple[int, int, np.ndarray]]:
    """Bootstrap resamples of ``n`` units as count matrices, with sykit's bootstrap seed: blocks
    ``(start, stop, counts)``, ``counts[r, i]`` how often resample ``start + r`` drew unit ``i``
    (blocks bound the memory). Any statistic linear in the units is then a matrix product."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = rng.integers(0, n, size=(stop - start, n))
        picks += np.arange(stop - start)[:, None] * n
        counts = np.bincount(picks.ravel(), minlength=(stop - start) * n)
        yield start, stop, counts.reshape(stop - start, n).astype(float)


def _resampled_means(table: np.ndarray, resamples: int) -> np.ndarray:
    """The mean of each column of ``table`` (n units × k samples) over ``resamples`` bootstrap
    resamples of its rows, the same resamples for every column."""
    n = table.shape[0]
    means = np.empty((resamples, table.shape[1]))
    for start, stop, counts in resample_counts(n, resamples):
        for j in range(table.shape[1]):  # column by column: the same sums however many
            means[start:stop, j] = counts @ np.ascontiguousarray(table[:, j]) / n
    return means


def percentile_label(q: float) -> str:
    """``0.5`` → ``"p50"``, ``0.999`` → ``"p99.9"``: the name a summary column uses."""
    return f"p{round(q * 100, 6):g}"


def check_percentiles(percentiles: Any) -> tuple[float, ...] | None:
    """Percentiles as fractions in (0, 1): from fractions (``0.9``) or names (``"p99.9"``)."""
    if percentiles is None:
        return None
    if isinstance(percentiles, str | int | float):
        percentiles = [percentiles]
    out = []
    for value in percentiles:
        q = value
        if isinstance(value, str):
            text = value.strip().lower()
            try:
                q = float(text[1:]) / 100 if text.startswith("p") else float("nan")
            except ValueError:
                q = float("nan")
        if (
            isinstance(q, bool | np.bool_)
            or not isinstance(q, numbers.Real)
            or not 0 < float(q) < 1
        ):
            raise ArgumentError(
                f"percentile {value!r} is not one: give fractions in (0, 1) such as 0.9 or 0.999, "
                "or names such as 'p90' or 'p99.9'"
            )
        out.append(float(q))
    if not out:
        raise ArgumentError("percentiles is empty: give at least one, e.g. [0.5, 0.99]")
    return tuple(dict.fromkeys(out))


def summary_columns(percentiles: tuple[float, ...] | None) -> list[str]:
    """The summary's columns, with one latency and one TTFT column per requested percentile."""
    if percentiles is None:
        return list(SUMMARY_COLUMNS)
    names = [percentile_label(q) for q in percentiles]
    columns = []
    for column in SUMMARY_COLUMNS:
        if column == "latency_p50_s":
            columns += [f"latency_{n}_s" for n in names]
            columns += [f"ttft_{n}_s" for n in names]
        elif not (column.startswith("latency_p") or column.startswith("ttft_p")):
            columns.append(column)
    return columns


ATTEMPT_COUNTS: tuple[str, ...] = (
    "attempted",
    "cancelled_attempts",
    "fallbacks",
    "retries",
    "routing_errors",
    *(f"fallbacks_{reason}" for reason in FALLBACK_REASONS),
)


def _counts(column: pd.Series) -> dict[Any, int]:
    """Occurrences of each value of a column (missing values left out); from the codes when the
    column is categorical, which on a small frame is many times faster than value_counts."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        tally = np.bincount(codes[codes >= 0], minlength=len(column.cat.categories))
        return {str(c): int(n) for c, n in zip(column.cat.categories, tally, strict=True) if n}
    return {str(k): int(v) for k, v in column.dropna().value_counts().items()}


#: The columns that name one request of one run: a retry or a switch is within one request, whether
#: its next call is a routing-phase call or the answer-phase call of a ``route_to``.
_SAME_CALLER = ("strategy", "seed", "request_id")


def _failed_alone(attempts: pd.DataFrame) -> np.ndarray:
    """Failed attempts the host neither retried nor fell back from."""
    return (
        (attempts["status"].to_numpy() == Status.ERROR)
        & ~attempts["retried"].to_numpy(dtype=bool)
        & attempts["fallback_reason"].isna().to_numpy()
    )


def retried_by_strategy(attempts: pd.DataFrame) -> np.ndarray:
    """Failed attempts that the *algorithm* retried: the host neither retried them nor fell back,
    and the same request called the same model again (a new call, in either phase) once the
    attempt had failed — LiteLLM's way of retrying, and any algorithm's that catches the error
    and asks again. The host's own retries are the ``retried`` column."""
    return _called_again(attempts, _failed_alone(attempts), ("model",))


def moved_on_by_strategy(attempts: pd.DataFrame, retried: np.ndarray | None = None) -> np.ndarray:
    """Failed attempts after which the algorithm called *another* model (and not this one
    again): a fallback the algorithm made itself, as LiteLLM's fallbacks between model groups.
    ``retried`` is :func:`retried_by_strategy` of the same frame, when already known."""
    if retried is None:
        retried = retried_by_strategy(attempts)
    return _called_again(attempts, _failed_alone(attempts) & ~retried, ())


def _called_again(attempts: pd.DataFrame, failed: np.ndarray, same: tuple[str, ...]) -> np.ndarray:
    """Which ``failed`` attempts were followed, once they ended, by another attempt of the same
    request (and the same ``same`` columns)."""
    out = np.zeros(len(attempts), dtype=bool)
    if not failed.any():
        return out
    keys = [k for k in (*_SAME_CALLER, *same) if k in attempts.columns]
    caller = attempts.groupby(keys, sort=False, observed=True, dropna=False).ngroup().to_numpy()
    rows = np.flatnonzero(np.isin(caller, np.unique(caller[failed])))  # callers with a failure
    start = attempts["start_s"].to_numpy(dtype=float)[rows]
    end = attempts["end_s"].to_numpy(dtype=float)[rows]
    group = caller[rows]
    # per caller, in order of start: the latest start among the attempts after each one
    order = np.lexsort((np.arange(len(rows)), start, group))
    backwards = pd.Series(start[order][::-1])
    by_group = group[order][::-1]
    following = backwards.groupby(by_group).cummax().groupby(by_group).shift(1)
    later = np.full(len(rows), -np.inf)
    later[order] = following.fillna(-np.inf).to_numpy(dtype=float)[::-1]
    out[rows] = failed[rows] & (later >= end)
    return out


def _routing_errors(attempts: pd.DataFrame, retried: np.ndarray) -> np.ndarray:
    """Routing-phase attempts that failed (a judge or router call rejected, a raced call's error)
    and that no retry or fallback followed: work the summary's retries and fallbacks do not show,
    so that an algorithm's own retry or fallback counts as the candidate loop's does.
    ``retried`` is :func:`retried_by_strategy` of the frame."""
    return (attempts["phase"].to_numpy() == Phase.ROUTING) & _failed_alone(attempts) & ~retried


def attempt_counts(attempts: pd.DataFrame) -> dict[str, int]:
    """What a summary needs from the attempts frame: counts, which add up across runs, so a
    summary of many runs needs their requests and these counts, never every attempt row."""
    status = _counts(attempts["status"])
    reasons = _counts(attempts["fallback_reason"])
    by_strategy = retried_by_strategy(attempts)
    counts = {
        "attempted": len(attempts) - status.get(Status.SKIPPED, 0),
        "cancelled_attempts": status.get(Status.CANCELLED, 0),
        "fallbacks": sum(reasons.values()),
        "retries": int(attempts["retried"].to_numpy().sum()) + int(by_strategy.sum()),
        "routing_errors": int(_routing_errors(attempts, by_strategy).sum()),
    }
    for reason in FALLBACK_REASONS:
        counts[f"fallbacks_{reason}"] = reasons.get(reason, 0)
    return counts


def summarize_one(
    strategy: str,
    requests: pd.DataFrame,
    attempts: pd.DataFrame | dict[str, int],
    percentiles: tuple[float, ...] | None = None,
) -> dict[str, Any]:
    """One summary row over all of a strategy's rows (every seed). See docs/statistics.md.

    ``requests`` counts distinct requests and ``seeds`` the seeds they were replayed with; rates and
    per-request figures (``success_rate``, ``cost_per_request_usd``, ``attempts_per_request``)
    average over rows (each request appears once per seed); ``cost_usd``, ``wasted_usd``,
    ``routing_usd``, ``cancelled_attempts``, ``fallbacks`` and ``retries`` are totals over all rows.
    ``attempts`` is the attempts frame of those rows, or its :func:`attempt_counts`.
    ``mean_quality`` is the mean over requests of each request's mean over seeds (failed = 0,
    ungraded left out and counted in ``n_ungraded``), with a 95% bootstrap interval over requests.
    Latency percentiles are over successful rows.
    """
    row, units = summary_row(strategy, requests, attempts, percentiles)
    row["quality_ci_low"], row["quality_ci_high"] = bootstrap_mean_ci(units)
    return row


def with_intervals(rows: Sequence[tuple[dict[str, Any], np.ndarray]]) -> list[dict[str, Any]]:
    """The rows of :func:`summary_row` with their quality intervals, bootstrapped together."""
    intervals = bootstrap_mean_cis([units for _, units in rows])
    for (row, _), (low, high) in zip(rows, intervals, strict=True):
        row["quality_ci_low"], row["quality_ci_high"] = low, high
    return [row for row, _ in rows]


def summary_row(
    strategy: str,
    requests: pd.DataFrame,
    attempts: pd.DataFrame | dict[str, int],
    percentiles: tuple[float, ...] | None = None,
) -> tuple[dict[str, Any], np.ndarray]:
    """:func:`summarize_one`'s row with its quality interval left NaN, and the per-request
    quality means that interval resamples (so many rows' intervals can be computed at once)."""
    n = len(requests)
    ok = requests[requests["status"] == RequestStatus.OK]
    quality_by_request = per_request_means(requests, request_quality(requests))
    quality = float(quality_by_request.mean()) if len(quality_by_request) else math.nan
    low = high = math.nan
    cost = float(requests["cost_usd"].sum())
    wasted = float(requests["wasted_usd"].sum())
    counts = attempts if isinstance(attempts, dict) else attempt_counts(attempts)
    row = {
        "strategy": strategy,
        # False when the algorithm read the ground truth (sy.strategies.peek_truth): a bound, not
        # a router
        "realizable": not bool(requests["reads_truth"].any())
        if "reads_truth" in requests
        else True,
        "requests": int(requests["request_id"].nunique()),
        "seeds": int(requests["seed"].nunique()) if "seed" in requests else 1 if n else 0,
        "success_rate": float(len(ok) / n) if n else math.nan,
        "mean_quality": quality,
        "quality_ci_low": low,
        "quality_ci_high": high,
        "n_ungraded": int(ungraded(requests).sum()),
        "cost_usd": cost,
        "cost_per_request_usd": cost / n if n else math.nan,
        "cost_per_1k_requests_usd": 1000 * cost / n if n else math.nan,
        "attempts_per_request": counts["attempted"] / n if n else math.nan,
        "cancelled_attempts": counts["cancelled_attempts"],
        "wasted_usd": wasted,
        "wasted_share": wasted / cost if cost > 0 else 0.0,
        "routing_usd": float(requests["routing_usd"].sum()),
        "fallbacks": counts["fallbacks"],
        "retries": counts["retries"],
        "routing_errors": counts["routing_errors"],
        "makespan_s": float(requests["end_s"].max() - requests["arrival_s"].min())
        if n
        else math.nan,
    }
    for reason in FALLBACK_REASONS:
        row[f"fallbacks_{reason}"] = counts[f"fallbacks_{reason}"]
    latency, ttft = ok["latency_s"], ok["ttft_s"]
    if percentiles is None:
        for q in DEFAULT_PERCENTILES:
            row[f"latency_{percentile_label(q)}_s"] = _quantile(latency, q)
        row["ttft_p50_s"] = _quantile(ttft, 0.5)
    else:
        for q in percentiles:
            row[f"latency_{percentile_label(q)}_s"] = _quantile(latency, q)
            row[f"ttft_{percentile_label(q)}_s"] = _quantile(ttft, q)
    return row, quality_by_request.to_numpy(dtype=float)


def _by_strategy(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return dict(iter(frame.groupby(frame["strategy"].astype(str), sort=False)))


def _warn_ungraded(requests: pd.DataFrame, table: pd.DataFrame) -> None:
    warn_ungraded(
        table, bool(((requests["status"] == RequestStatus.OK) & requests["quality"].notna()).any())
    )


def warn_ungraded(table: pd.DataFrame, any_graded: bool) -> None:
    """One :class:`UngradedWarning` for the strategies with ungraded answers, unless no served
    answer has a grade at all (``any_graded`` False: no ground truth, every ``mean_quality`` is
    NaN and says so)."""
    if not any_graded:
        return
    counted = table[table["n_ungraded"] > 0]
    if counted.empty:
        return
    rows = [f"{row.strategy!r}: {row.n_ungraded}" for row in counted.itertuples(index=False)]
    total = int(counted["n_ungraded"].sum())
    warnings.warn(
        f"{total} served {'answer has' if total == 1 else 'answers have'} no grade in the dataset "
        f"({', '.join(rows)}); quality means and intervals leave them out (n_ungraded counts them)",
        UngradedWarning,
        stacklevel=_stacklevel_outside_package(),
    )


def summarize(
    requests: pd.DataFrame,
    attempts: pd.DataFrame,
    percentiles: Any = None,
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per strategy (per strategy and value of the ``by`` columns), in the order they
    first appear; ``percentiles`` picks the latency and TTFT percentiles reported. Warns once
    (:class:`UngradedWarning`) when some served answers have no grade."""
    quantiles = check_percentiles(percentiles)
    keys = _group_columns(requests, by)
    columns = summary_columns(quantiles)
    empty = attempts.iloc[0:0]
    if not keys:
        order = list(dict.fromkeys(requests["strategy"].astype(str)))
        requests_by = _by_strategy(requests)
        attempts_by = _by_strategy(attempts)
        rows = with_intervals(
            [
                summary_row(name, requests_by[name], attempts_by.get(name, empty), quantiles)
                for name in order
            ]
        )
    else:
        # attempts take the values of by-columns they lack from their request's row; columns
        # both frames have (a grid's axes, seed) also identify that row
        ids = [c for c in ("strategy", "seed", "request_id") if c in requests and c in attempts]
        ids += [k for k in keys if k in attempts and k not in ids]
        extra = [k for k in keys if k not in attempts]
        labelled = attempts
        if extra:
            labels = requests[ids + extra].drop_duplicates(ids)
            labelled = attempts.merge(labels, on=ids, how="left")
        groups = ["strategy", *keys]
        grouped = dict(iter(labelled.groupby(groups, observed=True, sort=False, dropna=False)))
        parts = []
        for values, group in requests.groupby(groups, observed=True, sort=False, dropna=False):
            row, units = summary_row(str(values[0]), group, grouped.get(values, empty), quantiles)
            row.update(zip(keys, values[1:], strict=True))
            parts.append((row, units))
        rows = with_intervals(parts)
        columns = ["strategy", *keys, *columns[1:]]
    table = pd.DataFrame(rows, columns=columns)
    _warn_ungraded(requests, table)
    return table


def by_names(by: object) -> list[str]:
    """``summary(by=...)`` as a list: one column name, or several."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    if isinstance(by, Iterable) and not isinstance(by, bytes | Mapping):
        return list(by)
    raise ArgumentTypeError(
        f"summary(by=...) takes a column name of the requests frame or a list of them, "
        f"got {type(by).__name__} {by!r:.60}"
    )


def _group_columns(requests: pd.DataFrame, by: str | Sequence[str] | None) -> list[str]:
    """The ``by`` columns, each checked to be a column of the requests frame."""
    keys = by_names(by)
    unknown = [k for k in keys if not isinstance(k, str) or k not in requests.columns]
    if unknown or "strategy" in keys:
        known = [c for c in requests.columns if c != "strategy"]
        raise ArgumentError(
            f"summary(by=...) takes columns of the requests frame; {unknown or ['strategy']} "
            f"{'is not one' if unknown else 'is always grouped by'}: choose from {known}"
        )
    return list(dict.fromkeys(keys))


_PAIRED_METRICS = {
    "quality": "mean quality (failed = 0, ungraded left out)",
    "cost_usd": "cost per request",
    "latency_s": "latency of successful requests",
}


def paired_differences(
    requests: pd.DataFrame,
    baseline: str,
    metrics: Sequence[str] = ("quality", "cost_usd", "latency_s"),
) -> pd.DataFrame:
    """Per strategy, the mean over requests of (strategy − baseline), with a 95% bootstrap interval
    that resamples requests.

    Each request contributes the mean over seeds of its differences, taken on the rows where both
    values are known: quality counts a failed request as 0 and leaves out ungraded answers, latency
    pairs only rows both served successfully. Columns per metric: ``d_<metric>``,
    ``d_<metric>_ci_low``, ``d_<metric>_ci_high`` and ``n_requests_<metric>`` (requests with at
    least one pair); ``seeds`` counts the seeds both strategies ran.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    names = list(dict.fromkeys(requests["strategy"].astype(str)))
    if baseline not in names:
        raise ArgumentError(f"baseline {baseline!r} is not one of the strategies {names}")
    for metric in metrics:
        if metric not in _PAIRED_METRICS:
            raise ArgumentError(f"unknown metric {metric!r}; choose from {list(_PAIRED_METRICS)}")
    frame = pd.DataFrame(
        {
            "_strategy": requests["strategy"].astype(str),
            "_seed": requests.get("seed", 0),
            "request_id": requests["request_id"],
            "quality": request_quality(requests),
            "cost_usd": requests["cost_usd"],
            "latency_s": requests["latency_s"].where(requests["status"] == RequestStatus.OK),
        }
    )
    keys = ["_seed", "request_id"]
    columns = list(dict.fromkeys(metrics))
    base = frame.loc[frame["_strategy"] == baseline, [*keys, *columns]]
    base_seeds = set(base["_seed"])
    rows = []
    samples: list[np.ndarray] = []
    for name in names:
        mine = frame.loc[frame["_strategy"] == name, [*keys, *columns]]
        joined = mine.merge(base, on=keys, how="inner", suffixes=("", "_base"))
        diffs = pd.DataFrame(
            {m: joined[m].astype(float) - joined[f"{m}_base"].astype(float) for m in columns}
        )
        # each request's mean over seeds (NaN pairs skipped): the units the interval resamples
        by_request = diffs.groupby(joined["request_id"], sort=False, observed=True).mean()
        row: dict[str, Any] = {"strategy": name, "baseline": baseline}
        for metric in metrics:
            values = by_request[metric].dropna().to_numpy(dtype=float)
            samples.append(values)
            row[f"d_{metric}"] = float(values.mean()) if len(values) else math.nan
            row[f"d_{metric}_ci_low"] = row[f"d_{metric}_ci_high"] = math.nan
            row[f"n_requests_{metric}"] = len(values)
        row["seeds"] = len(set(mine["_seed"]) & base_seeds)
        rows.append(row)
    intervals = iter(bootstrap_mean_cis(samples))  # every strategy's, at once
    for row in rows:
        for metric in metrics:
            row[f"d_{metric}_ci_low"], row[f"d_{metric}_ci_high"] = next(intervals)
    return pd.DataFrame(rows)


def pareto_frontier(
    points: pd.DataFrame, *, cost: str = "cost_per_request_usd", quality: str = "mean_quality"
) -> pd.DataFrame:
    """The rows no other row beats on both cost (lower) and quality (higher), sorted by cost.

    A row is dominated if another costs no more and has at least its quality, and is strictly
    better on one of the two. Rows with a missing cost or quality are left out, and so are rows
    whose ``realizable`` column (when there is one) is False: a bound that read the ground truth
    (the oracle) is not a router you could deploy, so it neither joins nor shapes the frontier.
    """
    candidates = points
    if "realizable" in points.columns:
        candidates = points[points["realizable"].fillna(True).astype(bool)]
    clean = candidates.dropna(subset=[cost, quality]).sort_values(
        [cost, quality], ascending=[True, False]
    )
    keep = []
    best = -math.inf
    for index, row in clean.iterrows():
        if row[quality] > best:
            keep.append(index)
            best = row[quality]
    return clean.loc[keep]
