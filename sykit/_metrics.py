"""Summary metrics over the ``requests`` and ``attempts`` frames of one or more runs.

Quality counts a failed request as 0 (it served nothing). Confidence intervals are percentile
bootstraps over requests with a fixed generator seed, so the same frames always give the same
intervals; paired differences resample the *same* requests for both strategies, which is what makes
them tight when strategies see the same faults.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._errors import ArgumentError

__all__ = [
    "SUMMARY_COLUMNS",
    "bootstrap_mean_ci",
    "paired_differences",
    "pareto_frontier",
    "request_quality",
    "summarize",
]

FALLBACK_REASONS = ("context_window", "capability", "unavailable", "rate_limit", "policy")
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20_240_601

SUMMARY_COLUMNS: tuple[str, ...] = (
    "strategy",
    "realizable",
    "requests",
    "success_rate",
    "mean_quality",
    "quality_ci_low",
    "quality_ci_high",
    "cost_usd",
    "cost_per_request_usd",
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
    "makespan_s",
)


def _quantile(values: pd.Series, q: float) -> float:
    clean = values.dropna()
    return float(np.quantile(clean.to_numpy(), q)) if len(clean) else math.nan


def request_quality(requests: pd.DataFrame) -> pd.Series:
    """Per-request quality with failed requests counted as 0; all NaN when no quality is known."""
    quality = requests["quality"]
    if not quality.notna().any():
        return quality
    return quality.where(requests["status"] == "ok", 0.0).fillna(0.0)


def bootstrap_mean_ci(
    values: np.ndarray, *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (NaN, NaN for fewer than two finite values)."""
    clean = values[np.isfinite(values)]
    if len(clean) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // len(clean))  # bound memory: resample in blocks
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = rng.integers(0, len(clean), size=(stop - start, len(clean)))
        means[start:stop] = clean[picks].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def summarize_one(strategy: str, requests: pd.DataFrame, attempts: pd.DataFrame) -> dict[str, Any]:
    """One summary row. Latency percentiles are over successful requests; ``mean_quality`` counts a
    failed request as quality 0 and is NaN when no request has a known quality."""
    n = len(requests)
    ok = requests[requests["status"] == "ok"]
    quality = request_quality(requests)
    mean_quality = float(quality.mean()) if quality.notna().any() else math.nan
    low, high = (
        bootstrap_mean_ci(quality.to_numpy(dtype=float))
        if quality.notna().any()
        else (math.nan,) * 2
    )
    cost = float(requests["cost_usd"].sum())
    wasted = float(requests["wasted_usd"].sum())
    attempted = attempts[attempts["status"] != "skipped"]
    reasons = attempts["fallback_reason"].astype("string").value_counts()
    row = {
        "strategy": strategy,
        # False when the algorithm read the ground truth (sy.peek_truth): a bound, not a router
        "realizable": not bool(requests["reads_truth"].any())
        if "reads_truth" in requests
        else True,
        "requests": n,
        "success_rate": float(len(ok) / n) if n else math.nan,
        "mean_quality": mean_quality,
        "quality_ci_low": low,
        "quality_ci_high": high,
        "cost_usd": cost,
        "cost_per_request_usd": cost / n if n else math.nan,
        "latency_p50_s": _quantile(ok["latency_s"], 0.50),
        "latency_p95_s": _quantile(ok["latency_s"], 0.95),
        "latency_p99_s": _quantile(ok["latency_s"], 0.99),
        "ttft_p50_s": _quantile(ok["ttft_s"], 0.50),
        "attempts_per_request": len(attempted) / n if n else math.nan,
        "cancelled_attempts": int((attempts["status"] == "cancelled").sum()),
        "wasted_usd": wasted,
        "wasted_share": wasted / cost if cost > 0 else 0.0,
        "routing_usd": float(requests["routing_usd"].sum()),
        "fallbacks": int(attempts["fallback_reason"].notna().sum()),
        "retries": int(attempts["retried"].sum()),
        "makespan_s": float(requests["end_s"].max() - requests["arrival_s"].min())
        if n
        else math.nan,
    }
    for reason in FALLBACK_REASONS:
        row[f"fallbacks_{reason}"] = int(reasons.get(reason, 0))
    return row


def _by_strategy(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return dict(iter(frame.groupby(frame["strategy"].astype(str), sort=False)))


def summarize(requests: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy, in the order strategies first appear."""
    order = list(dict.fromkeys(requests["strategy"].astype(str)))
    requests_by = _by_strategy(requests)
    attempts_by = _by_strategy(attempts)
    rows = [
        summarize_one(name, requests_by[name], attempts_by.get(name, attempts.iloc[0:0]))
        for name in order
    ]
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


_PAIRED_METRICS = {
    "quality": "mean quality (failed = 0)",
    "cost_usd": "cost per request",
    "latency_s": "latency of successful requests",
}


def paired_differences(
    requests: pd.DataFrame,
    baseline: str,
    metrics: Sequence[str] = ("quality", "cost_usd", "latency_s"),
) -> pd.DataFrame:
    """Per strategy: the mean of (strategy − baseline) over the same requests (and seeds), with a
    95% bootstrap interval. Latency pairs only requests both served successfully."""
    names = list(dict.fromkeys(requests["strategy"].astype(str)))
    if baseline not in names:
        raise ArgumentError(f"baseline {baseline!r} is not one of the strategies {names}")
    for metric in metrics:
        if metric not in _PAIRED_METRICS:
            raise ArgumentError(f"unknown metric {metric!r}; choose from {list(_PAIRED_METRICS)}")
    frame = requests.assign(
        _strategy=requests["strategy"].astype(str),
        _seed=requests.get("seed", 0),
        quality=request_quality(requests),
        latency_s=requests["latency_s"].where(requests["status"] == "ok"),
    )
    keys = ["_seed", "request_id"]
    base = frame[frame["_strategy"] == baseline].set_index(keys)
    rows = []
    for name in names:
        mine = frame[frame["_strategy"] == name].set_index(keys)
        row: dict[str, Any] = {"strategy": name, "baseline": baseline}
        for metric in metrics:
            joined = mine[[metric]].join(base[[metric]].add_suffix("_base"), how="inner")
            diff = (joined[metric] - joined[f"{metric}_base"]).to_numpy(dtype=float)
            diff = diff[np.isfinite(diff)]
            low, high = bootstrap_mean_ci(diff)
            row[f"d_{metric}"] = float(diff.mean()) if len(diff) else math.nan
            row[f"d_{metric}_ci_low"] = low
            row[f"d_{metric}_ci_high"] = high
            row[f"n_pairs_{metric}"] = len(diff)
        rows.append(row)
    return pd.DataFrame(rows)


def pareto_frontier(
    points: pd.DataFrame, *, cost: str = "cost_per_request_usd", quality: str = "mean_quality"
) -> pd.DataFrame:
    """The rows no other row beats on both cost (lower) and quality (higher), sorted by cost.

    A row is dominated if another costs no more and has at least its quality, and is strictly
    better on one of the two. Rows with a missing cost or quality are left out.
    """
    clean = points.dropna(subset=[cost, quality]).sort_values(
        [cost, quality], ascending=[True, False]
    )
    keep = []
    best = -math.inf
    for index, row in clean.iterrows():
        if row[quality] > best:
            keep.append(index)
            best = row[quality]
    return clean.loc[keep]
