"""``sykit compare``'s learned-router part: routers you could deploy, cross-fitted per benchmark.

Each benchmark of the table (or the whole table when it has no ``benchmark`` column) gets its own
5-fold cross-fit of each learner, on the same fault-free host as the routing table: APGR with a 95 %
cluster-bootstrap interval, next to the random router's expected APGR and spread on the same
requests and the simulated score's APGR (a bound: it reads the ground truth).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from sykit._results.curve_stats import curve_of, point_of

__all__ = ["learned_routers", "learners", "per_benchmark_apgr"]


def learners() -> dict[str, Any]:
    """The learners the main job cross-fits (new, unfitted ones), by the name it prints."""
    from sykit import learn

    return {
        "kNN (TF-IDF)": learn.Knn(),
        "logistic (TF-IDF)": learn.Logistic(),
        "category prior": learn.CategoryPrior(),
    }


def _benchmarks(data: Any) -> list[tuple[str, Any]]:
    frame = data.frame
    if "benchmark" not in frame.columns:
        return [("all", data)]
    return [(str(b), data.filter(benchmark=b)) for b in sorted(frame["benchmark"].unique())]


def learned_routers(
    data: Any, weak: str, strong: str, host: Any, seed: int, folds: int = 5
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Cross-fit every learner on every benchmark: a table of formatted APGRs (rows: routers and
    the random baseline; columns: benchmarks), the long table behind it, and a note for each
    benchmark with too few prompts to cross-fit (fewer than 4 per fold)."""
    from sykit.learn import cross_fit

    rows = []
    skipped = []
    for benchmark, subset in _benchmarks(data):
        if len(subset) < 4 * folds:
            skipped.append(
                f"{benchmark}: {len(subset)} prompts, too few to cross-fit over {folds} folds"
            )
            continue
        random = None
        for label, learner in learners().items():
            fitted = cross_fit(
                learner, subset, weak=weak, strong=strong, folds=folds, seed=seed, host=host
            )
            random = fitted.random
            rows.append(
                {
                    "router": label,
                    "benchmark": benchmark,
                    "apgr": fitted.apgr.value,
                    "low": fitted.apgr.low,
                    "high": fitted.apgr.high,
                    "realizable": fitted.realizable,
                    "beats_random": fitted.apgr.low > random.high,
                }
            )
        if random is not None:
            rows.append(
                {
                    "router": "random (expected ± sd)",
                    "benchmark": benchmark,
                    "apgr": random.value,
                    "low": random.low,
                    "high": random.high,
                    "sd": random.sd,
                    "realizable": True,
                    "beats_random": False,
                }
            )
    long = pd.DataFrame(rows)
    if long.empty:
        return long, long, skipped

    def cell(row: pd.Series) -> str:
        if row["router"].startswith("random"):
            return f"{row['apgr']:.3f} ± {row['sd']:.3f}"
        return f"{row['apgr']:.2f} [{row['low']:.2f}, {row['high']:.2f}]"

    long["cell"] = long.apply(cell, axis=1)
    wide = long.pivot(index="router", columns="benchmark", values="cell")
    order = [*learners(), "random (expected ± sd)"]
    wide = wide.reindex([r for r in order if r in wide.index])
    wide.columns.name = None
    return wide.reset_index(), long.drop(columns=["cell"]), skipped


def per_benchmark_apgr(sweep: Any, benchmarks: Sequence[str]) -> dict[str, float]:
    """A sweep's APGR on each benchmark's requests (its comparison must have a ``benchmark``
    column), computed as :meth:`sykit.Sweep.apgr` is."""
    requests = sweep.comparison.requests
    return {
        benchmark: point_of(
            curve_of(
                requests[requests["benchmark"] == benchmark],
                sweep.labels,
                sweep.reference_labels["weak"],
                sweep.reference_labels["strong"],
                sweep.strong,
            )
        )[0]
        for benchmark in benchmarks
    }
