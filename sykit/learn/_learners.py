"""Learned routers in NumPy: kNN, logistic regression, a per-category prior, matrix factorisation.

A *learner* (``Knn()``, ``Logistic()``, ...) holds settings; ``learner.fit(train)`` reads the
prompts and metadata of a training :class:`~sykit.datasets.Dataset` and its grades
(``train.quality``; a model's ungraded rows are left out of that model's fit) and returns a
:class:`~sykit.learn._routers.Router`, which predicts each model's quality for a request and turns
that into the score a threshold router needs.

Every random draw comes from ``numpy.random.default_rng(seed)``: the same seed gives the same
router. Only NumPy and pandas are needed; the optimisers and sparse products the fits use are in
:mod:`sykit.learn._optim` and :mod:`sykit.learn._sparse`, what a fit reads in
:mod:`sykit.learn._training`.
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
from sykit._world.models import Request
from sykit.datasets import Dataset
from sykit.learn._features import Features, check_features, feature_key
from sykit.learn._optim import _Adam, _fit_logistic, _logit_of_mean, _sigmoid
from sykit.learn._routers import Router, _hashable
from sykit.learn._sparse import _RowIndex, _Sparse
from sykit.learn._training import _fresh, _matrix, _seed, _Training, _training

__all__ = ["CategoryPrior", "Knn", "Logistic", "MatrixFactorization"]

#: Query rows per similarity matrix product in kNN (a 256 × n_train float32 block): small enough
#: that a block of TF-IDF queries uses a minority of the vocabulary.
_CHUNK = 256


# -- kNN -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Neighbours:
    """The training rows graded for one set of models (models sharing their graded rows share
    their neighbours): positions in the training matrix, model columns and their grades."""

    rows: np.ndarray
    columns: np.ndarray
    quality: np.ndarray  # (len(rows), len(columns))


def _neighbour_sets(quality: np.ndarray, rows: np.ndarray) -> list[_Neighbours]:
    graded = np.isfinite(quality[rows])
    sets: dict[bytes, list[int]] = {}
    for j in range(quality.shape[1]):
        sets.setdefault(graded[:, j].tobytes(), []).append(j)
    out = []
    for columns in sets.values():
        kept = rows[graded[:, columns[0]]]
        cols = np.asarray(columns)
        out.append(_Neighbours(kept, cols, quality[np.ix_(kept, cols)]))
    return out


def _nearest(similarity: np.ndarray, k: int, ordered: bool) -> np.ndarray:
    """Column positions of the ``k`` largest similarities of each row (best first if ``ordered``)."""
    if k < similarity.shape[1]:
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    else:
        top = np.broadcast_to(np.arange(similarity.shape[1]), similarity.shape).copy()
    if ordered:
        order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
    return top


def _similarities(queries: np.ndarray, train_t: np.ndarray) -> np.ndarray:
    """``queries @ train_t`` (``train_t``: the training rows as columns), over only the features
    the queries use when that is under half of them: a TF-IDF prompt uses a few dozen of 4,096
    columns, so scoring one request costs microseconds, not a pass over the training matrix."""
    used = np.flatnonzero(queries.any(axis=0))
    if len(used) < queries.shape[1] // 2:
        return queries[:, used] @ train_t[used]
    return queries @ train_t


def _knn_means(
    queries: np.ndarray, train_t: np.ndarray, sets: list[_Neighbours], ks: Sequence[int], m: int
) -> np.ndarray:
    """Mean grade of the k nearest graded training rows, per query, model and k: ``(len(ks),
    n_queries, m)``; NaN where a model has no graded training row."""
    out = np.full((len(ks), len(queries), m), np.nan)
    kmax = max(ks)
    for start in range(0, len(queries), _CHUNK):
        block = _similarities(queries[start : start + _CHUNK], train_t)
        for s in sets:
            n = len(s.rows)
            if n == 0:
                continue
            top = min(kmax, n)
            near = _nearest(block[:, s.rows], top, ordered=len(ks) > 1)
            grades = s.quality[near]  # (chunk, top, columns)
            if len(ks) == 1:
                out[0, start : start + len(near)][:, s.columns] = grades.mean(axis=1)
                continue
            sums = np.cumsum(grades, axis=1)
            for i, k in enumerate(ks):
                kk = min(k, top)
                out[i, start : start + len(near)][:, s.columns] = sums[:, kk - 1] / kk
    return out


def _fold_labels(groups: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """A fold per row, whole groups to a fold, groups dealt in a seeded random order."""
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    order = rng.permutation(n_groups)
    fold_of_group = np.empty(n_groups, dtype=np.int64)
    fold_of_group[order] = np.arange(n_groups) % folds
    return fold_of_group[groups]


def _cv_errors(
    x: np.ndarray, x_t: np.ndarray, data: _Training, ks: tuple[int, ...], folds: int, seed: int
) -> dict[int, float]:
    """Out-of-fold loss of each k (lower is better): with two models, minus the APGR of routing
    the held-out rows by the predicted gain (second model − first), the measure a router is
    judged by; with more, the squared error of every model's predicted quality."""
    n, m = data.quality.shape
    n_groups = int(data.groups.max()) + 1
    folds = min(folds, n_groups)
    predicted = np.full((len(ks), n, m), np.nan)
    labels = _fold_labels(data.groups, folds, np.random.default_rng(seed))
    for f in range(folds):
        test = np.flatnonzero(labels == f)
        fit_rows = np.flatnonzero(labels != f)
        sets = _neighbour_sets(data.quality, fit_rows)
        predicted[:, test] = _knn_means(x[test], x_t, sets, ks, m)
    truth = data.quality
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
    return _mean_per_k(ks, (predicted[:, graded] - truth[graded]) ** 2)


def _gap_recovered(guess: np.ndarray, gain: np.ndarray) -> float:
    """The APGR of routing by ``guess`` on rows whose true gain is ``gain``: at each strong share
    of RouteLLM's sweep (0.1 … 0.9) the top rows by guess go strong; the share of the total gain
    they recover, averaged over the sweep (trapezoids, 0 at share 0 and 1 at share 1). Ties keep
    the rows' order (the caller shuffles them). NaN guesses rank last."""
    n = len(gain)
    order = np.argsort(-np.nan_to_num(guess, nan=-np.inf), kind="stable")
    recovered = np.concatenate([[0.0], np.cumsum(gain[order])]) / gain.sum()
    shares = np.arange(1, 10) / 10
    ys = recovered[np.round(shares * n).astype(int)]
    return float(np.trapezoid(np.r_[0.0, ys, 1.0], np.r_[0.0, shares, 1.0]))


def _mean_per_k(ks: tuple[int, ...], errors: np.ndarray) -> dict[int, float]:
    out = {}
    for k, row in zip(ks, errors, strict=True):
        finite = row[np.isfinite(row)]
        out[k] = float(finite.mean()) if len(finite) else math.inf
    return out


@dataclass(frozen=True)
class Knn:
    """k nearest neighbours: a model's predicted quality for a prompt is its mean grade on the
    ``k`` most similar training prompts graded for it (cosine similarity of ``features``, TF-IDF
    by default). Simple, hard to overfit, and a strong baseline on benchmark-like traffic.

    ``k=None`` picks k among ``ks`` by ``folds``-fold cross-validation inside the training set
    (whole groups per fold, seeded by ``seed``): with two models the k whose out-of-fold
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

    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit on ``train``'s prompts and grades; the router predicts ``models`` (default: all)."""
        data = _training(train, models, "Knn")
        features = _fresh(self.features, "Knn")
        features.fit(data.requests)
        x = _matrix(features, data.requests, "Knn", None)
        dim = x.shape[1]
        x_t = np.ascontiguousarray(x.T)  # feature-major: a query's features are rows to gather
        m = len(data.models)
        errors: dict[int, float] = {}
        if self.k is not None:
            k = int(self.k)
        elif len(self.ks) == 1 or int(data.groups.max()) < 1:
            k = self.ks[0]
        else:
            errors = _cv_errors(x, x_t, data, self.ks, self.folds, self.seed)
            k = min(errors, key=lambda c: (errors[c], c))
        sets = _neighbour_sets(data.quality, np.arange(len(x)))
        del x  # the router keeps the transposed copy only

        def rows(requests: list[Request]) -> np.ndarray:
            return _knn_means(_matrix(features, requests, "Knn", dim), x_t, sets, (k,), m)[0]

        return Router(
            data.models,
            f"knn(k={k})",
            rows,
            feature_key(features),
            {"k": k, "cv_error": errors, "features": features},
        )


# -- logistic regression ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Logistic:
    """Logistic regression per model: predicted quality ``sigmoid(x·w + b)`` of the prompt's
    features (TF-IDF by default), with the L2 penalty ``0.5 |w|²`` against ``C ×`` the
    cross-entropy summed over graded rows (grades in [0, 1] are soft labels), as scikit-learn's
    ``LogisticRegression(C=...)``. Solved with L-BFGS in NumPy, at most ``max_iter`` iterations.
    """

    C: float = 1.0
    features: Features | None = None
    max_iter: int = 100

    def __post_init__(self) -> None:
        check_real(self.C, "Logistic C", low=0.0, low_open=True)
        check_int(self.max_iter, "Logistic max_iter", low=1)
        if self.features is not None:
            check_features(self.features, "Logistic")

    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit on ``train``'s prompts and grades; the router predicts ``models`` (default: all)."""
        data = _training(train, models, "Logistic")
        features = _fresh(self.features, "Logistic")
        features.fit(data.requests)
        x = _matrix(features, data.requests, "Logistic", None)
        dim = x.shape[1]
        w, b, optimum = _fit_logistic(x, data.quality, float(self.C), int(self.max_iter))
        w32 = w.astype(np.float32)

        def rows(requests: list[Request]) -> np.ndarray:
            z = _matrix(features, requests, "Logistic", dim) @ w32
            return _sigmoid(z.astype(np.float64) + b)

        return Router(
            data.models,
            "logistic",
            rows,
            feature_key(features),
            {
                "weights": w,
                "bias": b,
                "iterations": optimum.iterations,
                "converged": optimum.converged,
                "gradient": optimum.gradient,
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
def _principal_directions(x: np.ndarray, dim: int, rng: np.random.Generator) -> np.ndarray:
    """A ``(d, dim)`` starting projection onto the training prompts' main directions (a seeded
    randomised SVD, as latent semantic analysis), scaled to unit spread of the projected rows: a
    start that keeps what distinguishes prompts, where a random projection of sparse TF-IDF rows
    would keep little of it. Directions beyond the matrix's rank are random."""
    d = x.shape[1]
    width = min(dim + 8, d)
    sketch = x @ rng.standard_normal((d, width)).astype(np.float32)
    for _ in range(2):  # power iterations sharpen the leading directions
        sketch = x @ (x.T @ np.linalg.qr(sketch)[0])
    basis = np.linalg.qr(sketch)[0]
    _, _, rows = np.linalg.svd(basis.T @ x, full_matrices=False)
    proj = rows[:dim].T.astype(np.float32)
    if proj.shape[1] < dim:
        extra = rng.standard_normal((d, dim - proj.shape[1])).astype(np.float32) / math.sqrt(d)
        proj = np.hstack([proj, extra])
    spread = float(np.std(x @ proj)) or 1.0
    return np.ascontiguousarray(proj / spread)


@dataclass(frozen=True)
class MatrixFactorization:
    """RouteLLM's matrix-factorisation router, in spirit: the prompt's features ``x`` projected by
    a learned matrix ``P`` to ``dim`` numbers, each model a learned ``dim``-vector ``v_m`` and bias
    ``b_m``, and predicted quality ``sigmoid(<P x, v_m> + b_m)``. The shared projection lets
    models with few grades borrow from the others.

    Trained with Adam (mini-batches of ``batch_size`` prompts, ``epochs`` passes, learning rate
    ``lr``, L2 penalty ``l2`` on ``P`` and the ``v_m``) on the cross-entropy of every graded
    (prompt, model) pair, grades as soft labels. ``P`` starts on the training prompts' principal
    directions and the ``v_m`` near zero, from ``default_rng(seed)``: on sparse TF-IDF features a
    random start keeps too little of the prompts to learn from in a few epochs.
    """

    dim: int = 32
    epochs: int = 20
    lr: float = 0.01
    l2: float = 0.01
    batch_size: int = 256
    features: Features | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_int(self.dim, "MatrixFactorization dim", low=1)
        check_int(self.epochs, "MatrixFactorization epochs", low=1)
        check_real(self.lr, "MatrixFactorization lr", low=0.0, low_open=True)
        check_real(self.l2, "MatrixFactorization l2", low=0.0)
        check_int(self.batch_size, "MatrixFactorization batch_size", low=1)
        _seed(self.seed, "MatrixFactorization")
        if self.features is not None:
            check_features(self.features, "MatrixFactorization")

    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit on ``train``'s prompts and grades; the router predicts ``models`` (default: all)."""
        data = _training(train, models, "MatrixFactorization")
        features = _fresh(self.features, "MatrixFactorization")
        features.fit(data.requests)
        x = _matrix(features, data.requests, "MatrixFactorization", None)
        n, d = x.shape
        m = len(data.models)
        rng = np.random.default_rng(int(self.seed))
        dim, lr, l2 = int(self.dim), float(self.lr), float(self.l2)
        proj = _principal_directions(x, dim, rng)
        vectors = rng.normal(0.0, 0.01, (m, dim)).astype(np.float32)
        bias = _logit_of_mean(data.quality).astype(np.float32)
        graded = np.isfinite(data.quality)
        y = np.where(graded, data.quality, 0.0).astype(np.float32)
        mask = graded.astype(np.float32)
        states = [_Adam.like(p) for p in (proj, vectors, bias)]
        # sparse features (TF-IDF): batches as their non-zero entries, ~10× cheaper products
        index = _RowIndex(x) if np.count_nonzero(x) <= 0.1 * x.size else None
        t = 0
        for _ in range(int(self.epochs)):
            order = rng.permutation(n)
            for start in range(0, n, int(self.batch_size)):
                rows = order[start : start + int(self.batch_size)]
                pairs = float(mask[rows].sum())
                if pairs == 0:
                    continue
                xb: _Sparse | np.ndarray = x[rows] if index is None else index.take(rows)
                hidden = xb @ proj if isinstance(xb, np.ndarray) else xb.dot(proj)
                z = hidden @ vectors.T + bias
                r = mask[rows] * (_sigmoid(z) - y[rows]) / pairs
                grad_vectors = r.T @ hidden + l2 * vectors
                back = r @ vectors
                grad_proj = (
                    xb.T @ back if isinstance(xb, np.ndarray) else xb.tdot(back)
                ) + l2 * proj
                grad_bias = r.sum(axis=0)
                t += 1
                for state, param, grad in zip(
                    states, (proj, vectors, bias), (grad_proj, grad_vectors, grad_bias), strict=True
                ):
                    state.step(param, grad.astype(np.float32, copy=False), lr, t)

        def predict_rows(requests: list[Request]) -> np.ndarray:
            hidden = _matrix(features, requests, "MatrixFactorization", d) @ proj
            return _sigmoid((hidden @ vectors.T + bias).astype(np.float64))

        return Router(
            data.models,
            "mf",
            predict_rows,
            feature_key(features),
            {"projection": proj, "vectors": vectors, "bias": bias, "features": features},
        )
