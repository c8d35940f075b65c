"""Learned routers as thin adapters over scikit-learn: kNN, logistic regression, a per-category
prior, and RouteLLM's matrix factorisation optimised by SciPy.

A *learner* (``Knn()``, ``Logistic()``, ...) holds settings; ``learner.fit(train)`` reads the
prompts and metadata of a training :class:`~sykit.datasets.Dataset` and its grades
(``train.quality``; a model's ungraded rows are left out of that model's fit) and returns a
:class:`~sykit.learn._routers.Router`, which predicts each model's quality for a request and turns
that into the score a threshold router needs.

The features are fitted once per fit (TF-IDF: scikit-learn's ``TfidfVectorizer``, each prompt
tokenised once); kNN is ``NearestNeighbors`` with the cosine metric, logistic regression
``LogisticRegression``, the factorisation's optimiser ``scipy.optimize.minimize`` (L-BFGS-B).
Every random draw is seeded: the same seed gives the same router. What a fit reads is in
:mod:`sykit.learn._training`; your own scikit-learn estimator is a router through
:class:`~sykit.learn._estimator.Estimator`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._results.curve_stats import apgr
from sykit._world.models import Request
from sykit.datasets import Dataset
from sykit.learn._features import Features, check_features, feature_key
from sykit.learn._routers import Router, _hashable
from sykit.learn._training import (
    _fit_matrix,
    _fresh,
    _matrix,
    _one_blas_thread,
    _seed,
    _Training,
    _training,
)

__all__ = ["CategoryPrior", "Knn", "Logistic", "MatrixFactorization"]


def _logit(p: Any) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-3, 1 - 1e-3)
    return np.asarray(np.log(p / (1 - p)))


# -- kNN -------------------------------------------------------------------------------------------
#: Per set of models sharing their graded rows: the fitted neighbour index over those rows, the
#: models' columns and their grades on those rows.
_Neighbours = list[tuple[Any, np.ndarray, np.ndarray]]


def _neighbours(x: Any, quality: np.ndarray, rows: np.ndarray, k: int) -> _Neighbours:
    """A cosine ``NearestNeighbors`` index (up to ``k`` neighbours) per set of models graded on
    the same training rows (of ``rows``)."""
    from sklearn.neighbors import NearestNeighbors

    graded = np.isfinite(quality[rows])
    sets: dict[bytes, list[int]] = {}
    for j in range(quality.shape[1]):
        sets.setdefault(graded[:, j].tobytes(), []).append(j)
    out = []
    for columns in sets.values():
        kept = rows[graded[:, columns[0]]]
        if len(kept):
            index = NearestNeighbors(
                n_neighbors=min(k, len(kept)), metric="cosine", algorithm="brute"
            )
            cols = np.asarray(columns)
            out.append((index.fit(x[kept]), cols, quality[np.ix_(kept, cols)]))
    return out


def _knn_means(sets: _Neighbours, queries: Any, ks: Sequence[int], m: int) -> np.ndarray:
    """Mean grade of the k nearest graded training rows, per k, query and model: ``(len(ks),
    n_queries, m)``, neighbours queried once for the largest k; NaN where a model has no graded
    training row."""
    out = np.full((len(ks), queries.shape[0], m), np.nan)
    for index, columns, grades in sets:
        near = index.kneighbors(queries, return_distance=False)  # nearest first
        sums = np.cumsum(grades[near], axis=1)  # (queries, neighbours, columns)
        for i, k in enumerate(ks):
            kk = min(k, near.shape[1])
            out[i][:, columns] = sums[:, kk - 1] / kk
    return out


def _cv_errors(
    x: Any, data: _Training, ks: tuple[int, ...], folds: int, seed: int
) -> dict[int, float]:
    """Out-of-fold loss of each k (lower is better), over ``GroupKFold`` folds: with two models,
    minus the APGR of routing the held-out rows by the predicted gain (second model − first),
    the measure a router is judged by; with more, the squared error of every model's quality."""
    from sklearn.model_selection import GroupKFold

    truth = data.quality
    n, m = truth.shape
    folds = min(folds, len(np.unique(data.groups)))
    predicted = np.full((len(ks), n, m), np.nan)
    splits = GroupKFold(folds, shuffle=True, random_state=seed).split(truth, groups=data.groups)
    for fit_rows, test in splits:
        sets = _neighbours(x, truth, fit_rows, max(ks))
        predicted[:, test] = _knn_means(sets, x[test], ks, m)
    if m == 2:
        gain = truth[:, 1] - truth[:, 0]
        both = np.isfinite(gain)
        if both.any() and gain[both].sum() > 0:
            guess = predicted[:, :, 1] - predicted[:, :, 0]
            shuffle = np.random.default_rng(seed).permutation(int(both.sum()))
            return {
                k: -_gap_recovered(row[both][shuffle], gain[both][shuffle])
                for k, row in zip(ks, guess, strict=True)
            }
    graded = np.isfinite(truth)
    errors = (predicted[:, graded] - truth[graded]) ** 2
    return {
        k: float(np.nanmean(row)) if np.isfinite(row).any() else math.inf
        for k, row in zip(ks, errors, strict=True)
    }


def _gap_recovered(guess: np.ndarray, gain: np.ndarray) -> float:
    """The APGR of routing by ``guess`` on rows whose true gain is ``gain``: at each strong share
    of RouteLLM's sweep (0.1 … 0.9) the top rows by guess go strong, and the share of the total
    gain they recover is the gap recovered. Ties keep the rows' order (the caller shuffles them).
    NaN guesses rank last."""
    order = np.argsort(-np.nan_to_num(guess, nan=-np.inf), kind="stable")
    recovered = np.concatenate([[0.0], np.cumsum(gain[order])]) / gain.sum()
    shares = np.arange(1, 10) / 10
    ys = recovered[np.round(shares * len(gain)).astype(int)]
    return apgr(shares.tolist(), ys.tolist(), weak_quality=0.0, strong_quality=1.0)


@dataclass(frozen=True)
class Knn:
    """k nearest neighbours: a model's predicted quality for a prompt is its mean grade on the
    ``k`` most similar training prompts graded for it (scikit-learn's ``NearestNeighbors``, cosine
    distance of ``features``, TF-IDF by default). Simple, hard to overfit, and a strong baseline
    on benchmark-like traffic.

    ``k=None`` picks k among ``ks`` by ``folds``-fold cross-validation inside the training set
    (``GroupKFold``: whole groups per fold, shuffled by ``seed``; the features fitted once, the
    neighbours queried once for the largest k): with two models the k whose out-of-fold
    predicted gain ranks the prompts best (the highest APGR), with more the smallest squared
    error of every model's quality; ties go to the smaller k.
    The router's name records the k it uses; a k above a model's graded rows is clipped to them.
    """

    k: int | None = None
    features: Features | None = None
    ks: tuple[int, ...] = (5, 10, 20, 40, 80)
    folds: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.k is not None:
            check_int(self.k, "Knn k", low=1, expected="an int ≥ 1 or None (pick by CV)")
        if isinstance(self.ks, str) or not isinstance(self.ks, Iterable):
            raise ArgumentTypeError(f"Knn ks must be a list of ints ≥ 1, got {self.ks!r}")
        ks = tuple(sorted({check_int(k, "Knn ks entries", low=1) for k in self.ks}))
        if not ks:
            raise ArgumentError("Knn ks must hold at least one k")
        object.__setattr__(self, "ks", ks)
        check_int(self.folds, "Knn folds", low=2)
        _seed(self.seed, "Knn")
        if self.features is not None:
            check_features(self.features, "Knn")

    @_one_blas_thread
    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit on ``train``'s prompts and grades; the router predicts ``models`` (default: all)."""
        data = _training(train, models, "Knn")
        features = _fresh(self.features, "Knn")
        x = _fit_matrix(features, data.requests, "Knn")
        dim = x.shape[1]
        errors: dict[int, float] = {}
        if self.k is not None:
            k = int(self.k)
        elif len(self.ks) == 1 or len(np.unique(data.groups)) < 2:
            k = self.ks[0]
        else:
            errors = _cv_errors(x, data, self.ks, self.folds, self.seed)
            k = min(errors, key=lambda c: (errors[c], c))
        sets = _neighbours(x, data.quality, np.arange(x.shape[0]), k)
        m = len(data.models)

        def rows(requests: list[Request]) -> np.ndarray:
            return _knn_means(sets, _matrix(features, requests, "Knn", dim), (k,), m)[0]

        return Router(
            data.models,
            f"knn(k={k})",
            rows,
            feature_key(features),
            {"k": k, "cv_error": errors, "features": features},
        )


# -- logistic regression ---------------------------------------------------------------------------
def _soft_logistic(x: Any, y: np.ndarray, C: float, max_iter: int) -> tuple[Any, np.ndarray, float]:
    """scikit-learn's ``LogisticRegression`` on grades in [0, 1] as soft labels: each row once as
    a positive weighted by its grade and once as a negative weighted by 1 − grade (the same
    cross-entropy). Returns the fitted estimator (None when every grade is 0 or every grade 1:
    then a constant), the weights and the bias."""
    from sklearn.linear_model import LogisticRegression

    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 1)
    if not len(pos) or not len(neg):
        return None, np.zeros(x.shape[1]), float(_logit(y.mean()))
    model = LogisticRegression(C=C, max_iter=max_iter)
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    model.fit(x[np.r_[pos, neg]], labels, sample_weight=np.r_[y[pos], 1 - y[neg]])
    return model, model.coef_[0].astype(np.float64), float(model.intercept_[0])


@dataclass(frozen=True)
class Logistic:
    """Logistic regression per model: predicted quality ``sigmoid(x·w + b)`` of the prompt's
    features (TF-IDF by default), scikit-learn's ``LogisticRegression(C=C, max_iter=max_iter)``
    (L2 penalty ``0.5 |w|²`` against ``C ×`` the summed cross-entropy, L-BFGS) on each model's
    graded rows, grades in [0, 1] read as soft labels.
    """

    C: float = 1.0
    features: Features | None = None
    max_iter: int = 100

    def __post_init__(self) -> None:
        check_real(self.C, "Logistic C", low=0.0, low_open=True)
        check_int(self.max_iter, "Logistic max_iter", low=1)
        if self.features is not None:
            check_features(self.features, "Logistic")

    @_one_blas_thread
    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit on ``train``'s prompts and grades; the router predicts ``models`` (default: all)."""
        from scipy.special import expit

        data = _training(train, models, "Logistic")
        features = _fresh(self.features, "Logistic")
        x = _fit_matrix(features, data.requests, "Logistic")
        fits = []
        for j in range(len(data.models)):
            graded = np.flatnonzero(np.isfinite(data.quality[:, j]))
            fits.append(_soft_logistic(x[graded], data.quality[graded, j], self.C, self.max_iter))
        w = np.column_stack([f[1] for f in fits])
        b = np.array([f[2] for f in fits])
        iterations = [int(f[0].n_iter_[0]) for f in fits if f[0] is not None]
        dim = x.shape[1]

        def rows(requests: list[Request]) -> np.ndarray:
            return expit(_matrix(features, requests, "Logistic", dim) @ w + b)

        return Router(
            data.models,
            "logistic",
            rows,
            feature_key(features),
            {
                "weights": w,
                "bias": b,
                "estimators": [f[0] for f in fits],
                "iterations": max(iterations, default=0),
                "converged": all(i < self.max_iter for i in iterations),
                "features": features,
            },
        )


# -- per-category prior ----------------------------------------------------------------------------
def _category(value: Any) -> Hashable:
    """A metadata value as a table key: missing values (None, NaN) as None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return _hashable(value)


@dataclass(frozen=True)
class CategoryPrior:
    """Each model's mean grade in the request's category (metadata ``column``), shrunk toward the
    model's overall mean by ``smoothing`` pseudo-counts: ``(sum + s·mean) / (count + s)``. A
    baseline that needs no text at all; a category not seen in training, or a request without
    one, gets the overall mean."""

    column: str = "category"
    smoothing: float = 5.0

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ArgumentTypeError(
                f"CategoryPrior column must be a column name (str), got {self.column!r}"
            )
        check_real(self.smoothing, "CategoryPrior smoothing", low=0.0)

    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit the per-category means of ``train``; the router predicts ``models`` (default all)."""
        if isinstance(train, Dataset) and self.column not in train.metadata_columns:
            hidden = (
                f" ({self.column!r} is an analysis column: hidden from routers)"
                if self.column in train.analysis_columns
                else ""
            )
            raise ArgumentError(
                f"CategoryPrior: {self.column!r} is not a metadata column of the dataset{hidden}; "
                f"its metadata columns are: {', '.join(map(repr, train.metadata_columns)) or 'none'}"
            )
        data = _training(train, models, "CategoryPrior")
        column = self.column
        keys = [_category(r.metadata.get(column)) for r in data.requests]
        quality = data.quality
        graded = np.isfinite(quality)
        values = np.where(graded, quality, 0.0)
        overall = values.sum(axis=0) / graded.sum(axis=0)
        s = float(self.smoothing)
        categories = sorted({k for k in keys if k is not None}, key=repr)
        codes = {c: i for i, c in enumerate(categories)}
        which = np.array([codes.get(k, -1) for k in keys])
        sums = np.zeros((len(categories), quality.shape[1]))
        counts = np.zeros_like(sums)
        present = which >= 0
        np.add.at(sums, which[present], values[present])
        np.add.at(counts, which[present], graded[present])
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts + s > 0, (sums + s * overall) / (counts + s), overall)
        table = {c: means[i] for i, c in enumerate(categories)}

        def rows(requests: list[Request]) -> np.ndarray:
            return np.stack(
                [table.get(_category(r.metadata.get(column)), overall) for r in requests]
            )

        def key(request: Request) -> Hashable:
            return _category(request.metadata.get(column))

        index = pd.Index(categories, name=column)
        return Router(
            data.models,
            "category prior",
            rows,
            key,
            {
                "means": pd.DataFrame(means, index=index, columns=list(data.models)),
                "counts": pd.DataFrame(counts.astype(int), index=index, columns=list(data.models)),
                "overall": pd.Series(overall, index=list(data.models)),
            },
        )


# -- matrix factorisation --------------------------------------------------------------------------
def _principal_directions(x: Any, dim: int, seed: int) -> np.ndarray:
    """A ``(d, dim)`` starting projection onto the training prompts' main directions (scikit-learn's
    seeded ``randomized_svd``, as latent semantic analysis), scaled to unit spread of the projected
    rows: a start that keeps what distinguishes prompts. Directions beyond its rank are random."""
    from sklearn.utils.extmath import randomized_svd

    d = x.shape[1]
    rank = min(dim, *x.shape)
    _, _, rows = randomized_svd(x, rank, random_state=seed)
    proj = rows.T.astype(np.float64)
    if rank < dim:
        extra = np.random.default_rng(seed).standard_normal((d, dim - rank)) / math.sqrt(d)
        proj = np.hstack([proj, extra])
    spread = float(np.std(x @ proj)) or 1.0
    return np.asarray(proj / spread)


@dataclass(frozen=True)
class MatrixFactorization:
    """RouteLLM's matrix-factorisation router, in spirit: the prompt's features ``x`` projected by
    a learned matrix ``P`` to ``dim`` numbers, each model a learned ``dim``-vector ``v_m`` and bias
    ``b_m``, and predicted quality ``sigmoid(<P x, v_m> + b_m)``. The shared projection lets
    models with few grades borrow from the others.

    Fitted by SciPy's ``minimize`` (L-BFGS-B, at most ``max_iter`` iterations) on the mean
    cross-entropy of every graded (prompt, model) pair, grades as soft labels, plus the L2 penalty
    ``l2 / 2 × (|P|² + Σ|v_m|²)``. ``P`` starts on the training prompts' principal directions and
    the ``v_m`` near zero, seeded by ``seed``. (``l2=0.003``: of 0.003, 0.01, 0.03 and 0.1, the
    best held-out APGR on RouteLLM's GSM8K and MT-Bench; 0.1 shrinks every prompt to its mean.)
    """

    dim: int = 32
    max_iter: int = 200
    l2: float = 0.003
    features: Features | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_int(self.dim, "MatrixFactorization dim", low=1)
        check_int(self.max_iter, "MatrixFactorization max_iter", low=1)
        check_real(self.l2, "MatrixFactorization l2", low=0.0)
        _seed(self.seed, "MatrixFactorization")
        if self.features is not None:
            check_features(self.features, "MatrixFactorization")

    @_one_blas_thread
    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit on ``train``'s prompts and grades; the router predicts ``models`` (default: all)."""
        from scipy.optimize import minimize
        from scipy.special import expit

        data = _training(train, models, "MatrixFactorization")
        features = _fresh(self.features, "MatrixFactorization")
        x = _fit_matrix(features, data.requests, "MatrixFactorization")
        d, m, k, l2 = x.shape[1], len(data.models), int(self.dim), float(self.l2)
        graded = np.isfinite(data.quality)
        y = np.where(graded, data.quality, 0.0)
        mask = graded / graded.sum()
        rng = np.random.default_rng(int(self.seed))
        start = np.concatenate(
            [
                _principal_directions(x, k, int(self.seed)).ravel(),
                rng.normal(0.0, 0.01, m * k),
                _logit(np.nanmean(data.quality, axis=0)),
            ]
        )

        def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            return theta[: d * k].reshape(d, k), theta[d * k : -m].reshape(m, k), theta[-m:]

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            proj, vectors, bias = unpack(theta)
            hidden = np.asarray(x @ proj)
            z = hidden @ vectors.T + bias
            loss = float((mask * (np.logaddexp(0.0, z) - y * z)).sum())
            loss += 0.5 * l2 * (float((proj * proj).sum()) + float((vectors * vectors).sum()))
            r = mask * (expit(z) - y)
            grad_proj = np.asarray(x.T @ (r @ vectors)) + l2 * proj
            grad_vectors = r.T @ hidden + l2 * vectors
            return loss, np.concatenate([grad_proj.ravel(), grad_vectors.ravel(), r.sum(axis=0)])

        found = minimize(
            objective, start, jac=True, method="L-BFGS-B", options={"maxiter": int(self.max_iter)}
        )
        proj, vectors, bias = unpack(found.x)

        def predict_rows(requests: list[Request]) -> np.ndarray:
            hidden = np.asarray(_matrix(features, requests, "MatrixFactorization", d) @ proj)
            return expit(hidden @ vectors.T + bias)

        return Router(
            data.models,
            "mf",
            predict_rows,
            feature_key(features),
            {
                "projection": proj,
                "vectors": vectors,
                "bias": bias,
                "iterations": int(found.nit),
                "converged": bool(found.success),
                "features": features,
            },
        )
