"""Routing over n models with a cost–quality trade-off, and its cross-fitted evaluation.

A learned router predicts each model's quality for a request; the cost router picks the model that
maximises ``predicted quality − λ × cost / (the request's most expensive option)``. ``λ = 0`` buys
the best predicted answer whatever it costs; a large ``λ`` the cheapest. Sweeping ``λ`` traces a
cost–quality curve, judged by AIQ (RouterBench: the area under its non-decreasing convex hull per
unit of cost) and by which points are non-dominated next to each model alone. Costs are what the
host's profiles expect for the request (its prompt length, the profile's mean answer length):
what a deployed router can know, never the answer's real length.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.types import Algorithm
from sykit._results.curve_stats import ClusterSums, Estimate, _estimate, aiq, weighted_means
from sykit._results.metrics import UngradedWarning, pareto_frontier, request_quality, summarize
from sykit._results.result import Comparison
from sykit._results.summary_frame import summary_frame
from sykit._run.driver import Driver
from sykit._run.strategy_kit import named_algorithm
from sykit._world.models import Outcome, Request, route_to
from sykit.datasets import Dataset
from sykit.datasets._splits import DATASET_GROUP, DatasetGroup, GroupBy
from sykit.learn._crossfit import (
    _clusters,
    _evaluation_host,
    check_held_out,
    check_learner,
    default_group,
    how_to_price,
    run_splits,
)
from sykit.learn._routers import _model_names
from sykit.learn._training import check_seed
from sykit.strategies import single

__all__ = ["DEFAULT_LAMBDAS", "CostCrossFit", "cost_router", "cross_fit_costs"]

#: λ values of the default sweep: from "best predicted answer" (0) to "nearly always cheapest".
DEFAULT_LAMBDAS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0)


def _expected_costs(
    profiles: Mapping[str, Any], models: Sequence[str], request: Request
) -> np.ndarray:
    costs = []
    for model in models:
        profile = profiles[model]
        out = profile.output_tokens.mean
        if request.max_output_tokens is not None:
            out = min(out, request.max_output_tokens)
        costs.append(float(profile.cost_usd(request.input_tokens, int(out))))
    return np.asarray(costs)


def cost_router(router: Any, models: Sequence[str], *, lam: float, host: Any) -> Algorithm:
    """Route each request to the model of ``models`` with the best ``predicted quality − lam ×
    cost / max cost`` (ties: the cheaper, then the earlier in ``models``); the other models, best
    first, are its fallbacks. ``router`` predicts qualities (``router.predict([request])`` gives a
    row per request, one column per ``router.models``); ``host`` gives the expected costs."""
    lam = check_real(lam, "lam", low=0.0, expected="a number ≥ 0")
    names = list(models)
    known = list(getattr(router, "models", ()))
    missing = [m for m in names if m not in known]
    if missing:
        raise ArgumentError(f"the router was not fitted for {missing}; it predicts {known}")
    profiles = getattr(host, "profiles", None)
    if profiles is None or any(m not in profiles for m in names):
        raise ArgumentError(f"host must be a SimHost with profiles for every model of {names}")
    columns = [known.index(m) for m in names]

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        predicted = np.asarray(router.predict([request]), dtype=float)[0, columns]
        costs = _expected_costs(profiles, names, request)
        top = costs.max()
        utility = predicted - (lam * costs / top if top > 0 else 0.0)
        order = sorted(range(len(names)), key=lambda i: (-utility[i], costs[i], i))
        driver.evidence(lam=lam, choice=names[order[0]])
        return route_to(names[order[0]], request, fallbacks=[names[i] for i in order[1:]])

    return named_algorithm(f"{getattr(router, 'name', 'router')} λ={lam:g}", algorithm)


@dataclass(frozen=True, repr=False)
class CostCrossFit:
    """The pooled held-out evaluation of a cost router over a sweep of λ.

    ``curve`` has one row per λ (cost per request, mean quality, the model mix); ``models`` one
    row per model alone; ``frontier`` the non-dominated rows of both; ``aiq`` the AIQ of the λ
    curve with a cluster-bootstrap interval; ``comparison`` the pooled runs."""

    name: str
    models: tuple[str, ...]
    lambdas: tuple[float, ...]
    comparison: Comparison
    curve: pd.DataFrame
    singles: pd.DataFrame
    frontier: pd.DataFrame
    aiq: Estimate
    realizable: bool
    folds: int
    wall_s: float

    def __repr__(self) -> str:
        return (
            f"<CostCrossFit {self.name} over {len(self.models)} models: AIQ {self.aiq}; "
            f"{len(self.frontier)} non-dominated points; {self.folds} folds>"
        )


def cross_fit_costs(
    learner: Any,
    data: Dataset,
    *,
    models: Sequence[str] | None = None,
    lambdas: Sequence[float] = DEFAULT_LAMBDAS,
    folds: int = 5,
    seed: int = 0,
    group: GroupBy | DatasetGroup = DATASET_GROUP,
    host: Any = None,
    resamples: int = 1000,
    progress: bool | None = False,
) -> CostCrossFit:
    """Cross-fit ``learner`` on ``data`` over ``models`` (default: all) and sweep the cost router's
    ``λ`` on held-out folds; each model alone is run on the same requests for reference.

        mmlu = sy.datasets.load("mmlu_pro")
        cv = sy.learn.cross_fit_costs(sy.learn.Knn(), mmlu)
        cv.aiq, cv.frontier

    ``group`` is as in :func:`cross_fit`: by default the dataset's group column joined with
    identical prompt texts, so one prompt under two ids never lands in two folds. ``host``
    defaults to :func:`evaluation_host` (catalogue prices); a model the catalogue does not know
    is refused with :class:`ArgumentError` (the costs are the point here: give
    ``host=sy.SimHost({...: sy.ModelProfile(price_in=..., price_out=...)})``). A router that
    fails on a held-out request stops the evaluation with an :class:`ArgumentError` naming it.
    """
    if not isinstance(data, Dataset):
        raise ArgumentTypeError(f"data must be a sy.datasets.Dataset, got {type(data).__name__}")
    check_learner(learner)
    if isinstance(models, str):
        raise ArgumentTypeError(
            f"models must be a list of two or more model names, got the one name {models!r}; "
            f"the dataset's models: {list(data.models)}"
        )
    names = list(data.models if models is None else _model_names(models, "cross_fit_costs"))
    unknown = [m for m in names if m not in data.models]
    if unknown or len(names) < 2:
        raise ArgumentError(
            f"models must be two or more of the dataset's models {list(data.models)}; got {names}"
        )
    if isinstance(lambdas, str) or not isinstance(lambdas, Iterable):
        raise ArgumentTypeError(
            f"lambdas must be a list of numbers ≥ 0 (the λ of each point of the sweep), got "
            f"{type(lambdas).__name__} {lambdas!r:.40}"
        )
    points = tuple(check_real(v, "lambdas[]", low=0.0) for v in lambdas)
    if not points or len(set(points)) != len(points):
        raise ArgumentError(f"lambdas must be distinct numbers ≥ 0, got {lambdas!r}")
    folds = check_int(folds, "folds", low=2, type_error=ArgumentError)
    seed = check_seed(seed, "seed")
    resamples = check_int(resamples, "resamples", low=100, type_error=ArgumentError)
    if group is DATASET_GROUP:
        group = default_group(data)
    if host is None:
        host, unpriced = _evaluation_host(names)
        if unpriced:  # every cost would read 0: the λ sweep would mean nothing
            raise ArgumentError(f"{how_to_price(unpriced)}: a cost router needs every price")
    started = time.perf_counter()

    alone = {f"{model} only": single(model) for model in names}  # the same in every fold

    def lineup(name: str, router: Any, test: Dataset) -> tuple[dict[str, Any], list[str]]:
        if not callable(getattr(router, "predict", None)):
            raise ArgumentTypeError(
                f"the fitted router must have predict(requests); got {type(router).__name__}"
            )
        check_held_out(router, list(test))
        strategies: dict[str, Any] = {
            f"{name} λ={lam:g}": cost_router(router, names, lam=lam, host=host) for lam in points
        }
        strategies.update(alone)
        # a router that fails on a held-out request stops the evaluation, as in cross_fit
        return strategies, [f"{name} λ={lam:g}" for lam in points]

    splits = data.folds(folds, seed=seed, group=group)
    pooled, _, name = run_splits(learner, splits, data, names, lineup, seed, host, progress)
    swept = [f"{name} λ={lam:g}" for lam in points]
    requests = pooled.requests.assign(_q=lambda f: request_quality(f))
    ids = pd.Index(requests.loc[requests["strategy"] == swept[0], "request_id"].unique())
    requests, ids, table = _graded_for_all(pooled, requests, ids, names)

    served = requests[requests["strategy"].isin(swept)]
    quality, cost = (
        served.pivot(index="request_id", columns="strategy", values=column)
        .reindex(index=ids, columns=swept)
        .to_numpy(float)
        for column in ("_q", "cost_usd")
    )
    summary = table.set_index("strategy")
    curve = pd.DataFrame(
        {
            "strategy": swept,
            "lam": points,
            "cost_per_request_usd": np.nanmean(cost, axis=0),
            "mean_quality": np.nanmean(quality, axis=0),
        }
    )
    mix = (
        served.groupby("strategy", observed=True)["served_model"]
        .agg(lambda s: s.astype(str).value_counts(normalize=True).round(3).to_dict())
        .reindex(swept)
    )
    curve["model_mix"] = list(mix)
    singles = summary.loc[[f"{m} only" for m in names], ["cost_per_request_usd", "mean_quality"]]
    singles = singles.reset_index()
    frontier = pareto_frontier(table)
    clusters = ClusterSums(_clusters(data, group, ids))
    sums = clusters.sums(cost), clusters.sums(quality)
    point = _aiq_rows(clusters.ones(), *sums)[0]
    draws = [_aiq_rows(weights, *sums) for weights in clusters.weights(resamples, seed)]
    realizable = not bool(requests.loc[requests["strategy"].isin(swept), "reads_truth"].any())
    return CostCrossFit(
        name,
        tuple(names),
        points,
        pooled,
        curve,
        singles,
        frontier,
        _estimate(float(point), np.concatenate(draws), 0.95),
        realizable,
        folds,
        time.perf_counter() - started,
    )


def _graded_for_all(
    pooled: Comparison, requests: pd.DataFrame, ids: pd.Index, names: Sequence[str]
) -> tuple[pd.DataFrame, pd.Index, pd.DataFrame]:
    """The requests graded for every model of ``names`` (each model alone is graded on them),
    their ids, and the comparison's summary on them: a mean over requests graded for some models
    only would compare the models and the λ points on different requests. Warns how many were
    left out."""
    alone = [f"{m} only" for m in names]
    grades = (
        requests[requests["strategy"].isin(alone)]
        .pivot(index="request_id", columns="strategy", values="_q")
        .reindex(index=ids, columns=alone)
    )
    graded = grades.notna().to_numpy().all(axis=1)
    if graded.all():
        return requests, ids, pooled.summary()  # (its intervals: every strategy, computed once)
    if not graded.any():
        raise ArgumentError(
            f"no request is graded for every one of the {len(names)} models: pick models with "
            "grades on shared requests (models=[...])"
        )
    lacking = [m for m, column in zip(names, alone, strict=True) if grades[column].isna().any()]
    kept = ids[graded]
    warnings.warn(
        f"{len(ids) - len(kept)} of the {len(ids)} requests have no grade for "
        f"{', '.join(map(repr, lacking))}: the curve, the models alone, the frontier and AIQ are "
        f"judged on the {len(kept)} graded for every model (every request is still routed; "
        "cv.comparison has them all)",
        UngradedWarning,
        stacklevel=3,
    )
    requests = requests[requests["request_id"].isin(kept)]
    attempts = pooled.attempts
    attempts = attempts[attempts["request_id"].isin(kept)]
    table = summary_frame(summarize(requests.drop(columns="_q"), attempts), None)
    return requests, kept, table


def _aiq_rows(
    weights: np.ndarray, cost: tuple[np.ndarray, np.ndarray], quality: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """The AIQ per row of cluster weights, from the clusters' sums of cost and quality."""
    q = weighted_means(weights, quality)
    c = weighted_means(weights, cost)
    return np.array(
        [aiq(c[i], q[i]) if np.isfinite(q[i]).any() else math.nan for i in range(len(q))]
    )
