"""Any scikit-learn estimator or pipeline as a router: :class:`Estimator`.

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(TfidfVectorizer(), LogisticRegression())
    cv = sy.learn.cross_fit(sy.learn.Estimator(pipe, target="wins"), ds)

Each fit clones the estimator (``sklearn.base.clone``: its settings, none of its fitted state), so
cross-fitting refits it per fold on that fold's training rows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request
from sykit.datasets import Dataset
from sykit.learn._features import Features, check_features, feature_key, prompt_text
from sykit.learn._routers import Router
from sykit.learn._training import _fit_matrix, _fresh, _matrix, _one_blas_thread, _training

__all__ = ["Estimator"]

TARGETS = ("wins", "quality")


def _reads_text(estimator: Any) -> bool:
    """Whether the estimator (a pipeline's first step) reads text, as scikit-learn's text
    vectorisers do (they have ``build_analyzer``)."""
    steps = getattr(estimator, "steps", None)
    first = steps[0][1] if steps else estimator
    return callable(getattr(first, "build_analyzer", None))


@dataclass(frozen=True)
class Estimator:
    """Your own scikit-learn estimator or pipeline as a learner, cross-fitted like the others.

    ``target="wins"``: a classifier (it needs ``predict_proba``) of "the strong model's grade beats
    the weak one's", fitted on the rows graded for both; the router's score is that probability.
    It routes between two models: ``fit(train, models=[weak, strong])`` in that order (as
    :func:`cross_fit` passes them), or a two-model dataset's pair, the lower mean grade weak. Its
    :meth:`Router.predict` gives 0 for the weak model and the probability for the strong one.

    ``target="quality"``: a regressor of each model's grade, one clone per model fitted on that
    model's graded rows, for any number of models (so :func:`cross_fit_costs` takes it too).

    ``features``: any :class:`Features` (``TfIdf()``, ``Embed(fn)``, ``Column(name)``) or
    ``"text"``, the raw prompt texts, for a pipeline that starts with its own vectoriser. The
    default: ``"text"`` when the estimator (or a pipeline's first step) is one of scikit-learn's
    text vectorisers, else ``TfIdf()``. ``name`` labels the router (default: the estimator's
    steps, e.g. ``"tfidfvectorizer+logisticregression"``).
    """

    estimator: Any
    target: Literal["wins", "quality"] = "wins"
    features: Features | Literal["text"] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        estimator = self.estimator
        if isinstance(estimator, type):
            raise ArgumentTypeError(
                f"Estimator takes an estimator object, not a class: {estimator.__name__}() makes one"
            )
        if not (callable(getattr(estimator, "fit", None)) and hasattr(estimator, "get_params")):
            raise ArgumentTypeError(
                "Estimator needs a scikit-learn estimator or pipeline (with fit and get_params), "
                f"got {type(estimator).__name__}"
            )
        if self.target not in TARGETS:
            raise ArgumentError(
                f"Estimator target must be 'wins' (a classifier of the strong model winning) or "
                f"'quality' (a regressor of each model's grade), got {self.target!r}"
            )
        what = type(estimator).__name__
        if self.target == "wins" and not hasattr(estimator, "predict_proba"):
            raise ArgumentTypeError(
                f"Estimator(target='wins') needs a classifier with predict_proba; {what} has none "
                "(wrap it in sklearn.calibration.CalibratedClassifierCV, or use a regressor with "
                "target='quality')"
            )
        if self.target == "quality" and not callable(getattr(estimator, "predict", None)):
            raise ArgumentTypeError(f"Estimator(target='quality') needs predict(); {what} has none")
        if self.features is not None and self.features != "text":
            check_features(self.features, "Estimator")
        if self.name is not None and (not isinstance(self.name, str) or not self.name):
            raise ArgumentTypeError(f"Estimator name must be a non-empty string, got {self.name!r}")

    def _label(self) -> str:
        if self.name:
            return self.name
        steps = getattr(self.estimator, "steps", None)
        if steps:
            return "+".join(str(step) for step, _ in steps)
        return type(self.estimator).__name__.lower()

    @_one_blas_thread
    def fit(self, train: Dataset, models: Sequence[str] | None = None) -> Router:
        """Fit clones of the estimator on ``train``; the router predicts ``models``."""
        from sklearn.base import clone

        data = _training(train, models, "Estimator")
        quality = data.quality
        if self.target == "wins":
            if len(data.models) != 2:
                raise ArgumentError(
                    f"Estimator(target='wins') routes between two models: fit(train, "
                    f"models=[weak, strong]); got {len(data.models)} models {list(data.models)}"
                )
            if models is None and np.nanmean(quality[:, 0]) > np.nanmean(quality[:, 1]):
                return self.fit(train, models=data.models[::-1])  # the lower mean grade: weak
        text = isinstance(self.features, str) or (
            self.features is None and _reads_text(self.estimator)
        )
        features = None if text else _fresh(self.features, "Estimator")  # type: ignore[arg-type]
        if features is None:
            x: Any = [prompt_text(r) for r in data.requests]
            dim = None
        else:
            x = _fit_matrix(features, data.requests, "Estimator")
            dim = x.shape[1]
        label = self._label()

        def fitted(rows: np.ndarray, y: np.ndarray) -> Any:
            inputs = [x[i] for i in rows] if features is None else x[rows]
            try:
                return clone(self.estimator).fit(inputs, y)
            except Exception as e:
                raise ArgumentError(
                    f"Estimator {label!r}: fit failed on {len(rows)} training rows "
                    f"({'prompt texts' if features is None else type(features).__name__ + ' rows'}): "
                    f"{type(e).__name__}: {e}"
                ) from e

        if self.target == "wins":
            both = np.flatnonzero(np.isfinite(quality).all(axis=1))
            wins = (quality[both, 1] > quality[both, 0]).astype(int)
            if len(np.unique(wins)) < 2:
                raise ArgumentError(
                    f"Estimator(target='wins'): the strong model {data.models[1]!r} "
                    f"{'always' if wins.all() else 'never'} beats {data.models[0]!r} on the "
                    "training rows: no classifier to fit (try target='quality')"
                )
            estimators = [fitted(both, wins)]
        else:
            estimators = [
                fitted(
                    np.flatnonzero(np.isfinite(quality[:, j])),
                    quality[:, j][np.isfinite(quality[:, j])],
                )
                for j in range(len(data.models))
            ]

        def rows(requests: list[Request]) -> np.ndarray:
            if features is None:
                inputs: Any = [prompt_text(r) for r in requests]
            else:
                inputs = _matrix(features, requests, "Estimator", dim)
            if self.target == "quality":
                return np.column_stack([np.asarray(e.predict(inputs), float) for e in estimators])
            (classifier,) = estimators
            wins = np.asarray(classifier.predict_proba(inputs))[
                :, list(classifier.classes_).index(1)
            ]
            return np.column_stack([np.zeros(len(requests)), wins])

        return Router(
            data.models,
            label,
            rows,
            prompt_text if features is None else feature_key(features),
            {
                "estimators": estimators,
                "target": self.target,
                "features": "text" if features is None else features,
            },
        )
