"""Cross-fitting: judge a router you could deploy only on requests it was not trained on.

A learned router's score on the table it was fitted to says little: it has seen the answers. Here
the dataset is cut into grouped folds (related prompts, such as MT-Bench's two turns of a question,
stay together); each fold's router is fitted on the other folds only — ``fit`` receives a dataset
holding no row, and so no grade, of the held-out fold — and routes that fold's requests. Each
strategy runs once over the whole dataset, every request routed by its own fold's router, into
one :class:`~sykit.Comparison` with the usual frames, so every request is routed exactly once by
a router that never saw its grade. The threshold for each
strong share is calibrated on the held-out fold's *scores* (no grades needed, as a deployment
calibrates on recent traffic), with ties broken by a seeded hash so each share is hit exactly.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import ErrorKind
from sykit._grid.compare import compare
from sykit._hosts.sim import SimHost
from sykit._results.curve_stats import Curve, Estimate, bootstrap_curve, curve_of, random_apgr
from sykit._results.metrics import UngradedWarning
from sykit._results.result import Comparison
from sykit._run.driver import Driver
from sykit._run.strategy_kit import named_algorithm
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.models import Outcome, Request
from sykit.datasets import Dataset
from sykit.datasets._splits import DATASET_GROUP, DatasetGroup, GroupBy, group_codes
from sykit.learn._training import check_seed
from sykit.strategies import single, threshold_router
from sykit.strategies._calibration import calibrate_shares
from sykit.strategies._router_score import SWEEP_SHARES, SimulatedScore

__all__ = ["CrossFit", "cross_fit", "default_group", "evaluation_host", "how_to_price"]

#: A deadline no simulated attempt reaches: the routing comparison has no hidden timeouts.
NO_DEADLINE = HostPolicy(timeout_s=3600.0, cooldown_s=0.0)


def evaluation_host(models: Sequence[str]) -> SimHost:
    """A fault-free simulated host for ``models``: the shipped catalogue's prices and latencies
    where it knows a model, a generic profile (no price) otherwise, and no attempt deadline, so
    that nothing but the routing decides which model answers."""
    return _evaluation_host(models)[0]


def _evaluation_host(models: Sequence[str]) -> tuple[SimHost, list[str]]:
    """:func:`evaluation_host`, and the models the catalogue does not know (priced at zero)."""
    from sykit import profiles

    known: dict[str, ModelProfile] = {}
    unpriced: list[str] = []
    for name in models:
        try:
            known.update(profiles.from_catalog([name]))
        except Exception:  # not in the catalogue: a neutral profile (costs then read 0)
            known[name] = ModelProfile()
            unpriced.append(name)
    return SimHost(known, policy=NO_DEADLINE), unpriced


def how_to_price(unpriced: Sequence[str]) -> str:
    """What to pass to price models the catalogue does not know."""
    example = ", ".join(
        f"{m!r}: sy.ModelProfile(price_in=..., price_out=...)" for m in unpriced[:2]
    )
    return (
        f"the price catalogue does not know {list(unpriced)}: give their prices (USD per million "
        f"tokens) with host=sy.SimHost({{{example}}})"
    )


def prompt_keys(frame: pd.DataFrame) -> list[str]:
    """Each row's prompt as the key identical prompts share (its text; another value's repr)."""
    return [p if isinstance(p, str) else repr(p) for p in frame["prompt"]]


def default_group(data: Dataset) -> GroupBy:
    """The dataset's group column, with rows of one prompt text kept together as well: the same
    prompt under two ids in two folds would let a router that memorises prompts see the grades of
    the prompt it is judged on. Where no prompt repeats this is the group column itself (the folds
    are exactly those of ``group=data.group_column``)."""
    frame = data.frame
    column = data.group_column
    if "prompt" not in frame.columns or "id" not in frame.columns:
        return column
    prompts = prompt_keys(frame)
    if len(set(prompts)) == len(prompts):
        return column
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    # each row linked to the first row of its prompt and of its group (a missing key: none)
    links = [
        pd.factorize(np.asarray(prompts, dtype=object))[0],
        group_codes(frame, column, "folds"),
    ]
    n = len(prompts)
    edges = (np.tile(np.arange(n), 2), np.concatenate([_first_rows(codes) for codes in links]))
    graph = coo_matrix((np.ones(2 * n), edges), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    # a component is named by its first row (the bootstrap orders clusters by name)
    component = dict(zip(frame["id"].tolist(), _first_rows(labels).tolist(), strict=True))
    return lambda row: component[row["id"]]


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Per row, the first row holding its code."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return np.asarray(first[inverse])


@dataclass(frozen=True, repr=False)
class CrossFit:
    """The pooled held-out evaluation of a router over a two-model sweep of strong shares.

    ``comparison`` holds one strategy per share (``"<router> <share>% strong"``) plus the weak and
    the strong model alone, every request routed once by the fold's router that did not see it.
    ``apgr``/``aiq`` are :class:`Estimate` s with cluster-bootstrap intervals; ``random`` is the
    random router's APGR on the same requests (expected value and spread). ``realizable`` is True
    only when no routing decision read the ground truth."""

    name: str
    weak: str
    strong: str
    shares: tuple[float, ...]
    comparison: Comparison
    apgr: Estimate
    aiq: Estimate
    random: Estimate
    realizable: bool
    folds: int
    routers: tuple[Any, ...]
    curve: pd.DataFrame
    wall_s: float

    def __repr__(self) -> str:
        tag = "" if self.realizable else f" ({self._unrealizable})"
        return (
            f"<{type(self).__name__} {self.name}{tag}: APGR {self.apgr} AIQ {self.aiq}; random "
            f"APGR {self.random.value:.3f} ± {self.random.sd:.3f}; {self._extent()}>"
        )

    #: Why a result is not realizable, as its repr says it.
    _unrealizable = "not realizable: read the ground truth"

    def _extent(self) -> str:
        """What the judgement covered, for the repr."""
        return f"{self.folds} folds, {len(self.curve)} shares"

    def summary(self) -> pd.DataFrame:
        """One row: the router, its APGR and AIQ with intervals, and the random baseline."""
        return pd.DataFrame(
            [
                {
                    "router": self.name,
                    "apgr": self.apgr.value,
                    "apgr_low": self.apgr.low,
                    "apgr_high": self.apgr.high,
                    "aiq": self.aiq.value,
                    "aiq_low": self.aiq.low,
                    "aiq_high": self.aiq.high,
                    "random_apgr": self.random.value,
                    "random_apgr_sd": self.random.sd,
                    "realizable": self.realizable,
                    "folds": self.folds,
                }
            ]
        )


def check_learner(learner: object) -> None:
    """Refuse, before any fit, what cannot fit a router: a learner's class instead of an instance
    (its ``fit`` would take the training table as ``self``), or an object that neither has
    ``fit`` nor is a function."""
    if isinstance(learner, type) and callable(getattr(learner, "fit", None)):
        name = learner.__name__
        raise ArgumentTypeError(f"{name} is a class: pass {name}() (an instance)")
    if not callable(getattr(learner, "fit", None)) and not callable(learner):
        raise ArgumentTypeError(
            "learner must have a fit(train, models=...) method (e.g. sy.learn.Knn()) or be a "
            f"function fit(train) -> router; got {type(learner).__name__}"
        )


def _fit(learner: Any, train: Dataset, models: Sequence[str]) -> Any:
    check_learner(learner)
    fit = getattr(learner, "fit", None)
    if callable(fit):
        return fit(train, models=list(models))
    return learner(train)


def _scorer(router: Any, weak: str, strong: str) -> Callable[[Any], float]:
    """The router's strong-minus-weak score as a function of the request."""
    if isinstance(router, SimulatedScore):
        return router  # type: ignore[return-value]  # (threshold_router reads it: not realizable)
    score = getattr(router, "score", None)
    if callable(score):
        made = score(weak, strong)
        if not callable(made):
            raise ArgumentTypeError(
                "router.score(weak, strong) must return a function of the request"
            )
        return made
    if callable(router):
        return router
    raise ArgumentTypeError(
        "fit must return a router (with score(weak, strong)) or a score function of the request; "
        f"got {type(router).__name__}"
    )


def check_held_out(
    router: Any, requests: list[Any], score: Callable[[Any], float] | None = None
) -> None:
    """Predict the held-out requests once before routing them (one batch for a router that
    predicts in batches; its cache then serves the run), and score each with ``score`` if given:
    a router that fails on one (e.g. it looks up a grade it was not given) stops the evaluation
    with an error naming it."""
    predict = getattr(router, "predict", None)
    if callable(predict):
        try:
            predict(requests)
        except Exception as error:
            _first_failure(lambda request: predict([request]), requests)  # the batch's culprit
            raise ArgumentError(
                f"the fitted router failed on the batch of {len(requests)} held-out requests: "
                f"{type(error).__name__}: {error}"
            ) from error
    if score is not None:
        scores = _first_failure(lambda request: float(score(request)), requests)
        for request, value in zip(requests, scores, strict=True):
            if math.isnan(value):  # (a threshold calibrated on it would be NaN)
                raise ArgumentError(
                    f"the router's score is NaN for held-out request {request.id!r}: its score "
                    "function must give a number for every request (higher: the strong model "
                    "helps more)"
                )


def _first_failure(call: Callable[[Any], Any], requests: list[Any]) -> list[Any]:
    """``call`` of each request, or an error naming the first request it fails on."""
    results = []
    for request in requests:
        try:
            results.append(call(request))
        except Exception as error:
            raise ArgumentError(
                f"the fitted router failed on held-out request(s), e.g. {request.id!r}: "
                f"{type(error).__name__}: {error}"
            ) from error
    return results


def run_splits(
    learner: Any,
    splits: Sequence[tuple[Dataset, Dataset]],
    data: Dataset,
    models: Sequence[str],
    lineup: Callable[[str, Any, Dataset], tuple[dict[str, Any], list[str]]],
    seed: int,
    host: Any,
    progress: bool | None,
) -> tuple[Comparison, list[Any], str]:
    """Fit ``learner`` for ``models`` on the training side of each ``(train, test)`` split (the
    test sides partition ``data``) and get ``lineup(name, router, test)`` — the strategies to run
    on the test side, and those of them whose router errors must stop the evaluation; run each
    strategy once over the whole dataset, every request routed by its own split's strategy (see
    :func:`_by_fold`); return the runs, the fitted routers and the router's name."""
    by_fold: dict[str, dict[Any, Any]] = {}  # strategy → request id → its fold's strategy
    checked: set[str] = set()
    routers = []
    name = None
    for train, test in splits:
        router = _fit(learner, train, models)
        routers.append(router)
        if name is None:
            name = _name_of(learner, router)
        strategies, routed = lineup(name, router, test)
        checked.update(routed)
        ids = test.frame["id"].tolist()
        for label, strategy in strategies.items():
            by_fold.setdefault(label, {}).update(dict.fromkeys(ids, strategy))
    assert name is not None
    merged = {label: _by_fold(label, chosen) for label, chosen in by_fold.items()}
    runs = compare(merged, data, host=host, seeds=(seed,), progress=progress)
    _refuse_router_errors(runs, checked)
    return runs, routers, name


def _by_fold(label: str, chosen: dict[Any, Any]) -> Any:
    """One strategy that routes each request as the strategy of its fold does (``chosen``: per
    request id), so the folds' strategies run as one run instead of one run per fold; static
    when every fold's strategy is."""
    distinct = list({id(s): s for s in chosen.values()}.values())
    if len(distinct) == 1:
        return distinct[0]  # the same strategy in every fold (a model alone)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        return await chosen[request.id](request, driver)

    if all(getattr(s, "static", False) is True for s in distinct):
        algorithm.__dict__["static"] = True
        plain: dict[int, Any] = {id(s): getattr(s, "route", None) for s in distinct}
        if all(callable(r) for r in plain.values()):  # each fold's routing as a function
            routes = {rid: plain[id(s)] for rid, s in chosen.items()}

            def route(request: Request, request_id: Any, seed: int, truth: Any) -> Any:
                return routes[request.id](request, request_id, seed, truth)

            algorithm.__dict__["route"] = route
    return named_algorithm(label, algorithm)


def _refuse_router_errors(fold: Comparison, checked: set[str]) -> None:
    """A router that raised on a held-out request (e.g. it looked up a grade it was not given)
    fails the evaluation loudly instead of counting as a failed request."""
    for result in fold.results:  # each run's own rows: no frame of the whole fold is built
        if result.strategy not in checked:
            continue
        requests = result.requests
        broken = requests[requests["error_kind"] == ErrorKind.ALGORITHM_ERROR]
        if len(broken):
            first = broken.iloc[0]
            raise ArgumentError(
                f"the fitted router failed on {len(broken)} held-out request(s), e.g. "
                f"{first['request_id']!r}: {first['error_message']}"
            )


def _share_labels(name: str, shares: Sequence[float]) -> list[str]:
    return [f"{name} {share * 100:.3g}% strong" for share in shares]


def _name_of(learner: Any, router: Any) -> str:
    for obj in (learner, router):
        name = getattr(obj, "name", None)
        if isinstance(name, str) and name:
            return name
    return getattr(learner, "__name__", type(learner).__name__)


def _check_pair(data: Dataset, weak: str | None, strong: str | None) -> tuple[str, str]:
    models = data.models
    if weak is None and strong is None:
        if len(models) != 2:
            raise ArgumentError(
                f"the dataset has {len(models)} models: say which two to route between with "
                f"weak= and strong= (models: {list(models)})"
            )
        means = data.quality.mean()
        weak, strong = sorted(models, key=lambda m: float(means[m]))
    if weak is None or strong is None:
        raise ArgumentError("give both weak= and strong= (or neither, for a two-model dataset)")
    for name, model in (("weak", weak), ("strong", strong)):
        if model not in models:
            raise ArgumentError(
                f"{name}={model!r} has no grades in the dataset; models: {list(models)}"
            )
    if weak == strong:
        raise ArgumentError("weak and strong must be two different models")
    return weak, strong


def _clusters(data: Dataset, group: GroupBy, ids: pd.Index) -> np.ndarray:
    """Per request of ``ids``, its group's key as text (rows sharing one are resampled together);
    a function of the row gets the row as a dict, as in :meth:`Dataset.folds`."""
    frame = data.frame.set_index("id", drop=False)
    if group is None:
        return np.asarray(ids.astype(str))
    if isinstance(group, str):
        keys = frame[group]
    else:
        keys = pd.Series([group(row) for row in frame.to_dict("records")], index=frame.index)
    return np.asarray(keys.reindex(ids).astype(str))


def cross_fit(
    learner: Any,
    data: Dataset,
    *,
    weak: str | None = None,
    strong: str | None = None,
    folds: int = 5,
    seed: int = 0,
    group: GroupBy | DatasetGroup = DATASET_GROUP,
    shares: Sequence[float] = SWEEP_SHARES,
    host: Any = None,
    resamples: int = 2000,
    progress: bool | None = False,
) -> CrossFit:
    """Cross-fit ``learner`` on ``data`` and evaluate it on held-out folds only.

        ds = sy.datasets.load("routellm").filter(benchmark="gsm8k", contaminated=False)
        cv = sy.learn.cross_fit(sy.learn.Knn(), ds)
        cv.apgr            # 0.61 [0.57, 0.65]: pooled held-out APGR, 95 % cluster bootstrap
        cv.random          # the random router on the same requests: 0.500 ± 0.02

    ``learner`` is a learner (``fit(train, models=[weak, strong]) -> router``, e.g.
    :class:`Knn`) or a function ``fit(train) -> router`` returning a router or a score function
    of the request (higher: the strong model helps more). ``weak``/``strong`` default to the two
    models of a two-model dataset (the one with the higher mean grade is strong; a ``strong``
    given with the lower mean grade is judged with a ``UserWarning``). ``group`` keeps
    related rows in one fold and resamples them together (default: the dataset's group column,
    e.g. routellm's ``question``), joined with identical prompt texts: rows with the same prompt
    under different ids always share a fold, so a router that memorises prompts gains nothing
    held out (where no prompt repeats, the folds are the group column's). An explicit ``group=``
    (a column, a function of the row, or ``None``: every row alone) is used as given. ``host``
    defaults to :func:`evaluation_host` (catalogue prices, no faults, no deadline); a model the
    catalogue does not know then costs 0, with a ``UserWarning`` saying how to price it
    (``host=sy.SimHost({"my-model": sy.ModelProfile(price_in=..., price_out=...)})``): APGR does
    not read prices, but the AIQ and the cost columns would be wrong without a warning.
    """
    if not isinstance(data, Dataset):
        raise ArgumentTypeError(f"data must be a sy.datasets.Dataset, got {type(data).__name__}")
    check_learner(learner)
    weak, strong = _check_pair(data, weak, strong)
    folds = check_int(folds, "folds", low=2, type_error=ArgumentError)
    seed = check_seed(seed, "seed")
    return judge(
        learner,
        data,
        lambda group: data.folds(folds, seed=seed, group=group),
        weak,
        strong,
        shares=shares,
        seed=seed,
        group=group,
        host=host,
        resamples=resamples,
        progress=progress,
        folds=folds,
    )


def judge(
    learner: Any,
    data: Dataset,
    splits: Callable[[GroupBy], Sequence[tuple[Dataset, Dataset]]],
    weak: str,
    strong: str,
    *,
    shares: Sequence[float],
    seed: int,
    group: GroupBy | DatasetGroup,
    host: Any,
    resamples: int,
    progress: bool | None,
    folds: int,
) -> CrossFit:
    """The evaluation :func:`cross_fit` and :func:`~sykit.learn._transfer.transfer` share: fit on
    each ``(train, test)`` of ``splits(group)`` (their test sides partition ``data``), route each
    test side over the sweep of ``shares`` at thresholds calibrated on its scores, pool, and
    measure APGR/AIQ (bootstrap by ``group``'s clusters of ``data``) and the random baseline."""
    resamples = check_int(resamples, "resamples", low=100, type_error=ArgumentError)
    if isinstance(shares, str) or not isinstance(shares, Sequence):
        raise ArgumentTypeError(f"shares must be a list of strong shares, got {shares!r}")
    points = tuple(check_real(s, "shares[]", expected="a share between 0 and 1") for s in shares)
    if not points or any(not 0 < s < 1 for s in points):
        raise ArgumentError(
            f"shares must be strong shares strictly between 0 and 1, got {shares!r}"
        )
    if len(set(points)) != len(points):
        raise ArgumentError(f"shares must be distinct, got {shares!r}")
    if group is DATASET_GROUP:
        group = default_group(data)
    if host is None:
        host, unpriced = _evaluation_host([weak, strong])
        if unpriced:
            warnings.warn(
                f"{how_to_price(unpriced)}; until then they cost 0, so AIQ and the cost "
                "columns do not mean anything (APGR, which reads only grades, stands)",
                UserWarning,
                stacklevel=3,
            )
    started = time.perf_counter()

    alone = {f"{weak} only": single(weak), f"{strong} only": single(strong)}  # every fold's

    def lineup(name: str, router: Any, test: Dataset) -> tuple[dict[str, Any], list[str]]:
        scorer = _scorer(router, weak, strong)
        held_out = list(test)
        if not isinstance(router, SimulatedScore):  # (fitted on the traffic by calibrate)
            check_held_out(router, held_out, scorer)
        labels = _share_labels(name, points)
        thresholds = calibrate_shares(scorer, held_out, points, seed=seed)  # scored once
        strategies = {
            label: threshold_router(weak, strong, score=scorer, threshold=threshold)
            for label, threshold in zip(labels, thresholds, strict=True)
        }
        return {**strategies, **alone}, labels

    pooled, routers, name = run_splits(
        learner, splits(group), data, (weak, strong), lineup, seed, host, progress
    )
    named = _share_labels(name, points)
    curve_data, table, ungraded = _curve(pooled, named, points, weak, strong, data, group)
    if ungraded:
        warnings.warn(
            f"{ungraded} of the {ungraded + len(curve_data.weak)} requests have no grade for "
            f"{weak!r} or {strong!r}: APGR, AIQ and the curve are judged on the "
            f"{len(curve_data.weak)} graded for both (every request is still routed; "
            "cv.comparison has them all)",
            UngradedWarning,
            stacklevel=3,
        )
    boot = bootstrap_curve(curve_data, resamples=resamples, seed=seed)
    if not math.isfinite(boot.apgr.value):
        warnings.warn(
            f"APGR is undefined here: {weak!r} and {strong!r} have the same mean quality on these "
            "requests, so there is no gap to recover (AIQ is still computed)",
            UserWarning,
            stacklevel=3,
        )
    elif np.nanmean(curve_data.strong_only) < np.nanmean(curve_data.weak):
        warnings.warn(
            f"strong={strong!r} has the lower mean quality on these requests "
            f"({np.nanmean(curve_data.strong_only):.3f}, against {np.nanmean(curve_data.weak):.3f} "
            f"for weak={weak!r}): the router is judged on finding where the worse model helps; "
            "swap weak= and strong= if that is not what you meant",
            UserWarning,
            stacklevel=3,
        )
    random = random_apgr(curve_data.weak, curve_data.strong_only, points, seed=seed)
    requests = pooled.requests
    realizable = not bool(requests.loc[requests["strategy"].isin(named), "reads_truth"].any())
    return CrossFit(
        name,
        weak,
        strong,
        points,
        pooled,
        boot.apgr,
        boot.aiq,
        random,
        realizable,
        folds,
        tuple(routers),
        table,
        time.perf_counter() - started,
    )


def _curve(
    pooled: Comparison,
    named: list[str],
    shares: tuple[float, ...],
    weak: str,
    strong: str,
    data: Dataset,
    group: Any,
) -> tuple[Curve, pd.DataFrame, int]:
    """The curve of the shares on the requests graded for both models (a request ungraded
    for one would count the other's grade alone: the means would not compare), its table, and
    how many requests were left out."""
    requests = pooled.requests
    curve = curve_of(requests, named, f"{weak} only", f"{strong} only", strong)
    ids = pd.Index(requests.loc[requests["strategy"] == f"{weak} only", "request_id"].unique())
    clusters = _clusters(data, group, ids)
    both = np.isfinite(curve.weak) & np.isfinite(curve.strong_only)
    if not both.any():
        raise ArgumentError(
            f"no request is graded for both {weak!r} and {strong!r} (of {len(both)}): there is "
            "no gap between them to judge a router on"
        )
    curve = Curve(
        curve.quality[both],
        curve.strong[both],
        curve.cost[both],
        curve.weak[both],
        curve.strong_only[both],
        clusters[both],
    )
    table = pd.DataFrame(
        {
            "strategy": named,
            "target_share": shares,
            "strong_share": curve.strong.mean(axis=0),
            "mean_quality": np.nanmean(curve.quality, axis=0),
            "cost_per_request_usd": np.nanmean(curve.cost, axis=0),
        }
    )
    if not math.isfinite(float(table["mean_quality"].sum())):
        raise ArgumentError("no graded request was served: the dataset has no usable grades")
    return curve, table, int((~both).sum())
