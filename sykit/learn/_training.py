"""What a learner's fit reads, checked: the training requests, models and grades of a
:class:`~sykit.datasets.Dataset`, and the feature matrix of its prompts."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request
from sykit.datasets import Dataset
from sykit.datasets._splits import group_codes
from sykit.learn._features import Features, TfIdf, check_features
from sykit.learn._routers import _model_names

Fit = TypeVar("Fit", bound=Callable[..., Any])


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
    grades = train.quality.reindex(columns=list(names)).to_numpy(np.float64, na_value=np.nan)
    quality = np.array(grades, order="C")  # (a writable copy, laid out as the learners read it)
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


def _fit_matrix(features: Features, requests: list[Request], where: str) -> Any:
    """Fit ``features`` on the training requests and return their rows (one pass when the
    features have ``fit_transform``, as :class:`TfIdf` has: each prompt tokenised once)."""
    fit_transform = getattr(features, "fit_transform", None)
    if callable(fit_transform):
        return _checked(features, fit_transform(requests), requests, where, None)
    features.fit(requests)
    return _matrix(features, requests, where, None)


def _matrix(features: Features, requests: list[Request], where: str, dim: int | None) -> Any:
    """``features.transform(requests)`` checked: float32, one finite row per request."""
    return _checked(features, features.transform(requests), requests, where, dim)


def _checked(
    features: Features, result: Any, requests: list[Request], where: str, dim: int | None
) -> Any:
    """Rows of ``features`` checked: a float32 array or SciPy CSR matrix, one finite row per
    request, ``dim`` columns if given."""
    from scipy import sparse

    what = type(features).__name__
    try:
        if sparse.issparse(result):
            rows: Any = sparse.csr_matrix(result, dtype=np.float32)
            values = rows.data
        else:
            rows = values = np.ascontiguousarray(result, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise ArgumentError(
            f"{where}: {what}.transform gave {type(result).__name__}, not an array of numbers: {e}"
        ) from e
    if rows.ndim != 2 or rows.shape[0] != len(requests) or rows.shape[1] == 0:
        raise ArgumentError(
            f"{where}: {what}.transform gave shape {rows.shape} for {len(requests)} request(s); "
            "expected one row (of at least one number) per request"
        )
    if dim is not None and rows.shape[1] != dim:
        raise ArgumentError(
            f"{where}: {what}.transform gave {rows.shape[1]} columns, {dim} when fitted"
        )
    if not np.isfinite(values).all():
        raise ArgumentError(f"{where}: {what}.transform gave NaN or inf")
    return rows


def _one_blas_thread(fit: Fit) -> Fit:
    """Run a fit with BLAS on one thread: on tables of a few thousand prompts, SciPy's L-BFGS-B
    (the one ``LogisticRegression`` uses too) spends more on waking BLAS threads than on the
    work (measured: 1.7 s against 0.07 s for 5 iterations over 64,000 parameters on 2 cores)."""

    @functools.wraps(fit)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # the limit reaches only the BLAS libraries loaded when it is set: load SciPy's (which
        # scikit-learn calls too) first, or the process's first fit runs on every core and its
        # sums come out in another order than every later fit's
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fit(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


#: The largest seed of an evaluation: NumPy's generators and the runs read it as a 64-bit int.
MAX_SEED = 2**63 - 1
#: The largest seed of a learner: scikit-learn's ``random_state`` is a 32-bit seed.
MAX_LEARNER_SEED = 2**32 - 1


def check_seed(seed: object, name: str, high: int = MAX_SEED) -> int:
    """``seed`` as an int from 0 to ``high`` (not a bool), refused before any draw reads it."""
    bits = high.bit_length()
    return check_int(seed, name, low=0, high=high, expected=f"an int from 0 to 2**{bits} - 1")


def _seed(seed: object, where: str) -> int:
    return check_seed(seed, f"{where} seed", MAX_LEARNER_SEED)
