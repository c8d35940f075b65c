"""Learned routers in NumPy: kNN, logistic regression, a per-category prior, matrix factorisation.

A *learner* (``Knn()``, ``Logistic()``, ...) holds settings; ``learner.fit(train)`` reads the
prompts and metadata of a training :class:`~sykit.datasets.Dataset` and its grades
(``train.quality``; a model's ungraded rows are left out of that model's fit) and returns a
:class:`Router`. A router predicts each model's quality for a request, on the dataset's quality
scale, and turns that into the score a threshold router needs: ``router.score(weak, strong)`` is
``predicted quality(strong) − predicted quality(weak)``, higher where the strong model helps more.

Predictions are cached per request (by prompt text, or by what the router reads: the category for
:class:`CategoryPrior`, the vector for :func:`~sykit.learn._features.Column` features), because a
threshold router scores every request it routes and a sweep routes the same requests many times.
Every random draw comes from ``numpy.random.default_rng(seed)``: the same seed gives the same
router. Only NumPy and pandas are needed.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request
from sykit.datasets import Dataset
from sykit.datasets._splits import group_codes
from sykit.learn._features import Features, TfIdf, check_features, feature_key, prompt_text

__all__ = [
    "CategoryPrior",
    "Knn",
    "Logistic",
    "MatrixFactorization",
    "Router",
    "from_scores",
]

#: Requests predicted per batch: bounds the dense feature and similarity matrices in memory.
_BATCH = 2048
#: Query rows per similarity matrix product in kNN (a 256 × n_train float32 block): small enough
#: that a block of TF-IDF queries uses a minority of the vocabulary.
_CHUNK = 256


# -- the router ------------------------------------------------------------------------------------
class Router:
    """A fitted router: predicted quality per model for any request, cached per request.

    ``predict(requests)`` gives an array ``(len(requests), len(models))``; ``score(weak, strong)``
    the function of one request a threshold router calls (a cached request costs a dict lookup).
    ``details`` holds what the fit chose (kNN's ``k`` and its cross-validation errors, the category
    table, ...). Build one from your own function with :func:`from_scores`.
    """

    __slots__ = ("_cache", "_key", "_models", "_name", "_rows", "details")

    def __init__(
        self,
        models: Sequence[str],
        name: str,
        rows: Callable[[list[Request]], Any],
        key: Callable[[Request], Hashable],
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self._models = tuple(models)
        self._name = name
        self._rows = rows
        self._key = key
        self._cache: dict[Hashable, np.ndarray] = {}
        self.details: Mapping[str, Any] = MappingProxyType(dict(details or {}))

    @property
    def models(self) -> tuple[str, ...]:
        """The models it predicts, in the order of :meth:`predict`'s columns."""
        return self._models

    @property
    def name(self) -> str:
        """A short label for tables and plots, e.g. ``"knn(k=20)"``."""
        return self._name

    def __repr__(self) -> str:
        return f"<Router {self._name!r}: models {list(self._models)}>"

    def predict(self, requests: Iterable[Request]) -> np.ndarray:
        """Predicted quality of each model's answer (columns: :attr:`models`) to each request."""
        items = _request_list(requests, f"{self._name}.predict")
        key = self._key
        keys = [key(r) for r in items]
        cache = self._cache
        missing: dict[Hashable, Request] = {}
        for k, request in zip(keys, items, strict=True):
            if k not in cache and k not in missing:
                missing[k] = request
        if missing:
            self._fill(missing)
        if not items:
            return np.zeros((0, len(self._models)))
        return np.stack([cache[k] for k in keys])

    def _fill(self, missing: dict[Hashable, Request]) -> None:
        keys = list(missing)
        todo = list(missing.values())
        m = len(self._models)
        for start in range(0, len(todo), _BATCH):
            batch = todo[start : start + _BATCH]
            result = self._rows(batch)
            try:
                rows = np.array(result, dtype=np.float64)  # a copy: cached rows are read-only
            except (TypeError, ValueError) as e:
                raise ArgumentError(
                    f"{self._name}: the predictions ({type(result).__name__}) are not an array "
                    f"of numbers: {e}"
                ) from e
            if rows.shape != (len(batch), m):
                raise ArgumentError(
                    f"{self._name}: predictions for {len(batch)} request(s) came back with shape "
                    f"{rows.shape}; expected ({len(batch)}, {m}): one column per model {list(self._models)}"
                )
            if not np.isfinite(rows).all():
                raise ArgumentError(f"{self._name}: the predictions contain NaN or infinite values")
            rows.setflags(write=False)
            self._cache.update(zip(keys[start : start + _BATCH], rows, strict=True))

    def score(self, weak: str, strong: str) -> Callable[[Request], float]:
        """``request -> predicted quality(strong) − predicted quality(weak)``: how much the strong
        model is expected to help. Send a request to ``strong`` when it passes a threshold."""
        i = self._index(weak, "weak")
        j = self._index(strong, "strong")
        if i == j:
            raise ArgumentError(f"score: weak and strong are the same model {weak!r}")
        cache = self._cache
        key = self._key
        predict = self.predict

        def score(request: Request) -> float:
            row = cache.get(key(request))
            if row is None:
                row = predict([request])[0]
            return float(row[j] - row[i])

        score.__qualname__ = score.__name__ = f"{self._name} score({strong} − {weak})"
        return score

    def _index(self, model: object, role: str) -> int:
        if not isinstance(model, str):
            raise ArgumentTypeError(f"score: {role} must be a model name (str), got {model!r}")
        if model not in self._models:
            raise ArgumentError(
                f"score: {role} model {model!r} is not one the router {self._name!r} was fitted "
                f"for; it predicts {list(self._models)}"
            )
        return self._models.index(model)


def from_scores(
    fn: Callable[[list[Request]], Any], models: Sequence[str], *, name: str = "custom"
) -> Router:
    """A :class:`Router` from your own function ``fn(requests) -> array (len(requests),
    len(models))`` of predicted qualities, so any model plugs into what takes a router.

    Its predictions are cached per prompt text and metadata (``fn`` is called once for each
    distinct pair)."""
    if not callable(fn):
        raise ArgumentTypeError(
            f"from_scores needs a function requests -> (n, m) array, got {type(fn).__name__}"
        )
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"from_scores: name must be a non-empty string, got {name!r}")
    names = _model_names(models, "from_scores")
    return Router(names, name, fn, _text_and_metadata)


def _text_and_metadata(request: Request) -> Hashable:
    """A user function may read the prompt and the metadata: both make the cache key."""
    text = prompt_text(request)  # refuses a non-request
    return (text, tuple(sorted((str(k), _hashable(v)) for k, v in request.metadata.items())))


def _hashable(value: Any) -> Hashable:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


# -- shared checks and fitting helpers --------------------------------------------------------------
def _request_list(requests: object, where: str) -> list[Request]:
    if isinstance(requests, str | Request) or not isinstance(requests, Iterable):
        hint = " (wrap a single request in a list)" if isinstance(requests, str | Request) else ""
        raise ArgumentTypeError(
            f"{where} takes a list of sykit.Request objects, got {type(requests).__name__}{hint}"
        )
    items = list(requests)
    for item in items:
        if not isinstance(item, Request):
            raise ArgumentTypeError(
                f"{where} takes sykit.Request objects (sy.Request(text) makes one), got "
                f"{type(item).__name__}"
            )
    return items


def _model_names(models: object, where: str) -> tuple[str, ...]:
    if isinstance(models, str) or not isinstance(models, Iterable):
        raise ArgumentTypeError(
            f"{where}: models must be a list of model names, got {type(models).__name__}"
        )
    names = tuple(models)
    if not names:
        raise ArgumentError(f"{where}: models must name at least one model")
    for model in names:
        if not isinstance(model, str) or not model:
            raise ArgumentTypeError(
                f"{where}: model names must be non-empty strings, got {model!r}"
            )
    if len(set(names)) != len(names):
        raise ArgumentError(f"{where}: models repeat a name: {list(names)}")
    return names


@dataclass(frozen=True)
class _Training:
    """What a fit reads: the training requests, the models, and their grades (NaN: ungraded)."""

    requests: list[Request]
    models: tuple[str, ...]
    quality: np.ndarray  # (n, m) float64
    groups: np.ndarray  # (n,) int: rows sharing a code stay in one inner-CV fold


def _training(train: object, models: object, where: str) -> _Training:
    if not isinstance(train, Dataset):
        raise ArgumentTypeError(
            f"{where}.fit takes a sykit Dataset (sy.datasets.load(...), from_frame(...)), got "
            f"{type(train).__name__}"
        )
    if models is None:
        if not train.models:
            raise ArgumentError(f"{where}.fit: the dataset has no models with ground truth")
        names = train.models
    else:
        names = _model_names(models, f"{where}.fit")
        unknown = [m for m in names if m not in train.models]
        if unknown:
            raise ArgumentError(
                f"{where}.fit: {', '.join(map(repr, unknown))} not among the dataset's models "
                f"{list(train.models)}"
            )
    table = train.quality
    quality = np.column_stack(
        [
            table[m].to_numpy(dtype=np.float64, na_value=np.nan)
            if m in table.columns
            else np.full(len(train), np.nan)
            for m in names
        ]
    ).reshape(len(train), len(names))
    graded = np.isfinite(quality).sum(axis=0)
    few = [f"{m!r} ({int(c)})" for m, c in zip(names, graded, strict=True) if c < 2]
    if few:
        raise ArgumentError(
            f"{where}.fit: a model needs at least 2 graded requests in the training set to be "
            f"fitted; graded requests: {', '.join(few)}"
        )
    requests = list(train)
    # rows of one group stay in one inner fold, grouped as the dataset's own folds group them
    codes = group_codes(train.frame, train.group_column, f"{where}.fit")
    return _Training(requests, tuple(names), quality, codes)


def _fresh(features: Features | None, where: str) -> Features:
    """The features a fit may change: TF-IDF by default, else a shallow copy of the given ones (an
    ``Embed``'s cache stays shared, a refit never changes an earlier router)."""
    if features is None:
        return TfIdf()
    check_features(features, where)
    return copy.copy(features)


def _matrix(features: Features, requests: list[Request], where: str, dim: int | None) -> np.ndarray:
    """``features.transform(requests)`` checked: float32, one finite row per request."""
    result = features.transform(requests)
    try:
        rows = np.asarray(result, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise ArgumentError(
            f"{where}: {type(features).__name__}.transform gave {type(result).__name__}, not an "
            f"array of numbers: {e}"
        ) from e
    if rows.ndim != 2 or rows.shape[0] != len(requests) or rows.shape[1] == 0:
        raise ArgumentError(
            f"{where}: {type(features).__name__}.transform gave shape {rows.shape} for "
            f"{len(requests)} request(s); expected one row (of at least one number) per request"
        )
    if dim is not None and rows.shape[1] != dim:
        raise ArgumentError(
            f"{where}: {type(features).__name__}.transform gave {rows.shape[1]} columns, "
            f"{dim} when fitted"
        )
    if not np.isfinite(rows).all():
        raise ArgumentError(f"{where}: {type(features).__name__}.transform gave NaN or inf")
    return np.ascontiguousarray(rows)


def _seed(seed: object, where: str) -> int:
    return check_int(seed, f"{where} seed", low=0)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -z))


def _logit_of_mean(quality: np.ndarray) -> np.ndarray:
    mean = np.clip(np.nanmean(quality, axis=0), 1e-3, 1 - 1e-3)
    return np.asarray(np.log(mean / (1 - mean)))


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
class _Optimum:
    """Where L-BFGS stopped: the point, the iterations used, whether it converged and the largest
    gradient entry there relative to the start's (how far from the optimum it stopped)."""

    x: np.ndarray
    iterations: int
    converged: bool
    gradient: float


def _lbfgs(
    objective: Callable[[np.ndarray], tuple[float, np.ndarray]],
    start: np.ndarray,
    max_iter: int,
    memory: int = 10,
    gtol: float = 1e-5,
    ftol: float = 1e-10,
) -> _Optimum:
    """Minimise a smooth convex function with L-BFGS and a backtracking (Armijo) line search.
    Converged: a tolerance met, or the line search stopped by rounding with the gradient below
    1e-3 of its start."""
    x = start
    f, g = objective(x)
    g_first = max(float(np.abs(g).max()), 1e-12)

    def stop(at: np.ndarray, grad: np.ndarray, iterations: int, converged: bool) -> _Optimum:
        return _Optimum(at, iterations, converged, float(np.abs(grad).max()) / g_first)

    steps: list[tuple[np.ndarray, np.ndarray, float]] = []
    for iteration in range(1, max_iter + 1):
        if float(np.abs(g).max()) <= gtol * g_first:
            return stop(x, g, iteration - 1, True)
        # two-loop recursion: d = -H g
        q = g.copy()
        alphas = []
        for s, y, rho in reversed(steps):
            a = rho * float(s @ q)
            alphas.append(a)
            q -= a * y
        if steps:
            s, y, _ = steps[-1]
            q *= float(s @ y) / float(y @ y)
        else:
            q /= max(float(np.linalg.norm(g)), 1.0)
        for (s, y, rho), a in zip(steps, reversed(alphas), strict=True):
            q += s * (a - rho * float(y @ q))
        direction = -q
        slope = float(g @ direction)
        if slope >= 0:  # not a descent direction (rounding): restart from the gradient
            steps.clear()
            direction = -g / max(float(np.linalg.norm(g)), 1.0)
            slope = float(g @ direction)
        t = 1.0
        while True:
            x_new = x + t * direction
            f_new, g_new = objective(x_new)
            if f_new <= f + 1e-4 * t * slope or t < 1e-10:
                break
            t *= 0.5
        if t < 1e-10 and f_new > f:
            # no further decrease within float precision: converged if the gradient is small
            return stop(x, g, iteration, float(np.abs(g).max()) <= 1e-3 * g_first)
        s_k = x_new - x
        y_k = g_new - g
        sy = float(s_k @ y_k)
        if sy > 1e-12:
            steps.append((s_k, y_k, 1.0 / sy))
            if len(steps) > memory:
                steps.pop(0)
        done = f - f_new <= ftol * max(abs(f), abs(f_new), 1.0)
        x, f, g = x_new, f_new, g_new
        if done:
            return stop(x, g, iteration, True)
    return stop(x, g, max_iter, False)


class _Sparse:
    """A matrix as its non-zero entries, grouped by row and by column, so that ``x @ w`` and
    ``x.T @ r`` cost O(non-zeros), not O(rows × columns): TF-IDF rows fill ~1 % of their columns.
    ``rows`` must be ascending (row-major order, as ``np.nonzero`` gives)."""

    def __init__(
        self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]
    ) -> None:
        self.shape = shape
        self.row_cols, self.row_values = cols, values
        self.row_starts, self.row_ids = _runs(rows)
        order = np.argsort(cols, kind="stable")
        self.col_rows, self.col_values = rows[order], values[order]
        self.col_starts, self.col_ids = _runs(cols[order])

    @classmethod
    def of(cls, x: np.ndarray, dtype: type[np.floating[Any]]) -> _Sparse:
        rows, cols = np.nonzero(x)
        return cls(rows, cols, x[rows, cols].astype(dtype), (x.shape[0], x.shape[1]))

    def dot(self, w: np.ndarray) -> np.ndarray:
        out = np.zeros((self.shape[0], w.shape[1]), dtype=self.row_values.dtype)
        if len(self.row_ids):
            terms = w[self.row_cols] * self.row_values[:, None]
            out[self.row_ids] = np.add.reduceat(terms, self.row_starts, axis=0)
        return out

    def tdot(self, r: np.ndarray) -> np.ndarray:
        out = np.zeros((self.shape[1], r.shape[1]), dtype=self.col_values.dtype)
        if len(self.col_ids):
            terms = r[self.col_rows] * self.col_values[:, None]
            out[self.col_ids] = np.add.reduceat(terms, self.col_starts, axis=0)
        return out


class _Dense:
    """``x @ w`` and ``x.T @ r`` by BLAS, in float64 unless that copy would pass 64 MB."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x.astype(np.float64) if x.size <= 8_000_000 else x

    def dot(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(self.x @ w.astype(self.x.dtype), dtype=np.float64)

    def tdot(self, r: np.ndarray) -> np.ndarray:
        return np.asarray(self.x.T @ r.astype(self.x.dtype), dtype=np.float64)


def _products(x: np.ndarray, m: int) -> _Sparse | _Dense:
    """The cheaper way to multiply by ``x`` for ``m`` models: sparse products gather one entry
    per non-zero and model, BLAS streams the whole matrix (and wins once ``m`` is large)."""
    density = np.count_nonzero(x) / max(x.size, 1)
    return _Sparse.of(x, np.float64) if density * m <= 0.1 else _Dense(x)


class _RowIndex:
    """The non-zero entries of a matrix by row (CSR), to cut out a mini-batch of rows as a
    :class:`_Sparse` without touching the zeros."""

    def __init__(self, x: np.ndarray) -> None:
        rows, cols = np.nonzero(x)
        self.d = x.shape[1]
        self.cols = cols
        self.values = x[rows, cols]
        self.starts = np.searchsorted(rows, np.arange(x.shape[0] + 1))

    def take(self, picked: np.ndarray) -> _Sparse:
        first = self.starts[picked]
        lengths = self.starts[picked + 1] - first
        ends = np.cumsum(lengths)
        entries = np.repeat(first - (ends - lengths), lengths) + np.arange(
            int(ends[-1]) if len(ends) else 0
        )
        rows = np.repeat(np.arange(len(picked)), lengths)
        return _Sparse(rows, self.cols[entries], self.values[entries], (len(picked), self.d))


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal values of a grouped array starts, and the value of each run."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=keys.dtype)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return starts, keys[starts]


def _fit_logistic(
    x: np.ndarray, quality: np.ndarray, c: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray, _Optimum]:
    """Weights ``(d, m)`` and biases ``(m,)`` of one L2-regularised logistic regression per model
    (``0.5 |w|² + C Σ cross-entropy``, grades as soft labels, ungraded rows weighted 0), all
    models solved together: the objective is a sum of independent ones."""
    d = x.shape[1]
    m = quality.shape[1]
    graded = np.isfinite(quality)
    y = np.where(graded, quality, 0.0)
    weight = graded * c
    product = _products(x, m)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = theta[: d * m].reshape(d, m)
        b = theta[d * m :]
        z = product.dot(w) + b
        loss = float(np.sum(weight * (np.logaddexp(0.0, z) - y * z))) + 0.5 * float(np.sum(w * w))
        r = weight * (_sigmoid(z) - y)
        grad_w = product.tdot(r) + w
        return loss, np.concatenate([grad_w.ravel(), r.sum(axis=0)])

    start = np.concatenate([np.zeros(d * m), _logit_of_mean(quality)])
    optimum = _lbfgs(objective, start, max_iter)
    theta = optimum.x
    return theta[: d * m].reshape(d, m), theta[d * m :], optimum


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
@dataclass
class _Adam:
    """Adam's moment estimates for one parameter array."""

    first: np.ndarray
    second: np.ndarray

    @classmethod
    def like(cls, param: np.ndarray) -> _Adam:
        return cls(np.zeros_like(param), np.zeros_like(param))

    def step(self, param: np.ndarray, grad: np.ndarray, lr: float, t: int) -> None:
        self.first *= 0.9
        self.first += 0.1 * grad
        self.second *= 0.999
        self.second += 0.001 * grad * grad
        scale = lr * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        param -= scale * self.first / (np.sqrt(self.second) + 1e-8)


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
