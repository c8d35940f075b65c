"""Summary metrics over the ``requests`` and ``attempts`` frames of one or more runs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SUMMARY_COLUMNS", "pareto_frontier", "summarize"]

SUMMARY_COLUMNS: tuple[str, ...] = (
    "strategy",
    "requests",
    "success_rate",
    "mean_quality",
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
    "retries",
    "makespan_s",
)


def _quantile(values: pd.Series, q: float) -> float:
    clean = values.dropna()
    return float(np.quantile(clean.to_numpy(), q)) if len(clean) else math.nan


def summarize_one(strategy: str, requests: pd.DataFrame, attempts: pd.DataFrame) -> dict[str, Any]:
    """One summary row. Latency percentiles are over successful requests; ``mean_quality`` counts a
    failed request as quality 0 (it served nothing) and is NaN when no request has a known quality."""
    n = len(requests)
    ok = requests[requests["status"] == "ok"]
    quality = requests["quality"]
    if quality.notna().any():
        mean_quality = float(quality.where(requests["status"] == "ok", 0.0).fillna(0.0).mean())
    else:
        mean_quality = math.nan
    cost = float(requests["cost_usd"].sum())
    wasted = float(requests["wasted_usd"].sum())
    model_attempts = attempts[attempts["status"] != "skipped"]
    return {
        "strategy": strategy,
        "requests": n,
        "success_rate": float(len(ok) / n) if n else math.nan,
        "mean_quality": mean_quality,
        "cost_usd": cost,
        "cost_per_request_usd": cost / n if n else math.nan,
        "latency_p50_s": _quantile(ok["latency_s"], 0.50),
        "latency_p95_s": _quantile(ok["latency_s"], 0.95),
        "latency_p99_s": _quantile(ok["latency_s"], 0.99),
        "ttft_p50_s": _quantile(ok["ttft_s"], 0.50),
        "attempts_per_request": len(model_attempts) / n if n else math.nan,
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


def summarize(requests: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy, in the order strategies first appear."""
    rows = []
    order = list(dict.fromkeys(requests["strategy"].astype(str)))
    req_by = requests.groupby(requests["strategy"].astype(str), sort=False)
    att_by = attempts.groupby(attempts["strategy"].astype(str), sort=False)
    att_groups = dict(iter(att_by))
    for name in order:
        reqs = req_by.get_group(name)
        atts = att_groups.get(name, attempts.iloc[0:0])
        rows.append(summarize_one(name, reqs, atts))
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def pareto_frontier(points: pd.DataFrame, *, cost: str = "cost_per_request_usd",
                    quality: str = "mean_quality") -> pd.DataFrame:
    """The rows no other row beats on both cost (lower) and quality (higher), sorted by cost.

    A row is dominated if another costs no more and has at least its quality, and is strictly
    better on one of the two. Rows with a missing cost or quality are left out.
    """
    clean = points.dropna(subset=[cost, quality]).sort_values([cost, quality], ascending=[True, False])
    keep = []
    best = -math.inf
    for index, row in clean.iterrows():
        if row[quality] > best:
            keep.append(index)
            best = row[quality]
    return clean.loc[keep]
