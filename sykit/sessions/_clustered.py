"""Bootstrap intervals over tasks, for sessions that share a task.

Sessions of one task are not independent evidence: they face the same difficulty, so a run with
four sessions per task (one per trial, say, or a session and its sub-agents) does not know the
success rate four times as well as a run with one. An interval that resamples sessions treats them
as independent and comes out too narrow; resampling whole tasks (a cluster bootstrap) keeps each
task's sessions together. With one session per task the two are the same, and so are the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from sykit._results.metrics import BOOTSTRAP_RESAMPLES, bootstrap_mean_ci, resample_counts

__all__ = ["clustered_mean_cis", "task_clusters"]


def task_clusters(frame: pd.DataFrame) -> pd.Series:
    """Per session id of a session frame, its cluster: its task (``task_id``) where the session
    names one, else the session itself."""
    ids = frame["session_id"].to_numpy(dtype=object)
    if "task_id" in frame.columns:
        tasks = frame["task_id"].to_numpy(dtype=object)
    else:
        tasks = np.full(len(ids), None, dtype=object)
    keys: dict[object, tuple[str, object]] = {}
    for session, task in zip(ids, tasks, strict=True):
        if session in keys and keys[session][0] == "task":
            continue
        known = not (
            task is None or task is pd.NA or (isinstance(task, float) and math.isnan(task))
        )
        keys[session] = ("task", task) if known else ("session", session)
    return pd.Series(keys, dtype=object)


def clustered_mean_cis(
    samples: Sequence[pd.Series], clusters: pd.Series, *, level: float = 0.95
) -> list[tuple[float, float]]:
    """Per sample (values indexed by session id; NaN left out), the percentile bootstrap
    interval of its mean over sessions that resamples the clusters ``clusters`` maps each session
    to: each resample draws as many clusters as there are, with replacement, and takes the mean
    of all their sessions. With one session per cluster it is :func:`bootstrap_mean_ci`'s
    interval, to the bit; NaN with fewer than two clusters."""
    out = []
    for values in samples:
        values = values[np.isfinite(values.to_numpy(dtype=float))]
        keys = clusters.reindex(values.index)
        if keys.isna().any():  # a session the frame does not know: its own cluster
            keys = keys.where(keys.notna(), pd.Series(values.index, index=values.index))
        if keys.is_unique:
            out.append(bootstrap_mean_ci(values.to_numpy(dtype=float), level=level))
            continue
        grouped = values.astype(float).groupby(keys.map(repr).to_numpy(), sort=False)
        out.append(
            _cluster_bootstrap(
                grouped.sum().to_numpy(dtype=float), grouped.size().to_numpy(dtype=float), level
            )
        )
    return out


def _cluster_bootstrap(sums: np.ndarray, sizes: np.ndarray, level: float) -> tuple[float, float]:
    """The interval of sum/size over resamples of the clusters, with sykit's bootstrap seed and
    resample count (docs/statistics.md)."""
    n = len(sums)
    if n < 2:
        return (math.nan, math.nan)
    means = np.empty(BOOTSTRAP_RESAMPLES)
    for start, stop, counts in resample_counts(n, BOOTSTRAP_RESAMPLES):
        means[start:stop] = (counts @ sums) / (counts @ sizes)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))
