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


def _is_vectoriser(estimator: Any) -> bool:
    """Whether it is one of scikit-learn's text vectorisers (they have ``build_analyzer``)."""
    return callable(getattr(estimator, "build_analyzer", None))


def _inner(estimator: Any, *, first_step: bool) -> list[Any]:
    """The estimators ``estimator`` wraps: a meta-estimator's ``estimator`` or
    ``base_estimator`` (``GridSearchCV``, ``CalibratedClassifierCV``, ...), the parts of a union
    or an ensemble, and a pipeline's steps (only the first, which reads the input, if
    ``first_step``)."""
    found = []
    steps = getattr(estimator, "steps", None)
    if isinstance(steps, list):
        parts = [step[1] for step in steps if isinstance(step, tuple) and len(step) == 2]
        parts = [part for part in parts if part is not None and part != "passthrough"]
        found += parts[:1] if first_step else parts
    for attribute in ("transformer_list", "transformers", "estimators"):
        listed = getattr(estimator, attribute, None)
        if isinstance(listed, list):
            found += [item[1] for item in listed if isinstance(item, tuple) and len(item) >= 2]
    for attribute in ("estimator", "base_estimator"):
        inner = getattr(estimator, attribute, None)
        if hasattr(inner, "get_params"):
            found.append(inner)
    return found


def _reads_text(estimator: Any) -> bool:
    """Whether the estimator reads the raw input with a text vectoriser: it is one, or a pipeline
    starting with one, or a meta-estimator wrapping one of those (recursively)."""
    return _is_vectoriser(estimator) or any(
        _reads_text(part) for part in _inner(estimator, first_step=True)
    )


def _holds_vectoriser(estimator: Any) -> bool:
    """Whether a text vectoriser is anywhere inside the estimator (any pipeline step)."""
    return _is_vectoriser(estimator) or any(
        _holds_vectoriser(part) for part in _inner(estimator, first_step=False)
    )


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
    default: ``"text"`` when the estimator is one of scikit-learn's text vectorisers or starts
    with one (a pipeline's first step, or what a meta-estimator such as ``GridSearchCV`` wraps,
    at any depth), else ``TfIdf()``. ``name`` labels the router (default: the estimator's
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
                hint = ""
                if features is not None and _holds_vectoriser(self.estimator):
                    hint = (
                        "; the estimator holds a text vectoriser, which reads prompt texts, not "
                        "feature rows: use features='text' (Estimator(..., features='text'))"
                    )
                raise ArgumentError(
                    f"Estimator {label!r}: fit failed on {len(rows)} training rows "
                    f"({'prompt texts' if features is None else type(features).__name__ + ' rows'}): "
                    f"{type(e).__name__}: {e}{hint}"
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
            win = _win_column(estimators[0], label)
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
            proba = np.asarray(classifier.predict_proba(inputs))
            if proba.ndim != 2 or proba.shape[0] != len(requests) or proba.shape[1] <= win:
                raise ArgumentError(
                    f"Estimator {label!r}: predict_proba gave shape {proba.shape} for "
                    f"{len(requests)} request(s); it must give ({len(requests)}, 2): one column "
                    f"per class of classes_ {np.ravel(classifier.classes_).tolist()}"
                )
            return np.column_stack([np.zeros(len(requests)), proba[:, win]])

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


def _win_column(classifier: Any, label: str) -> int:
    """The column of ``predict_proba`` that is the strong model's win: the class 1 of the labels
    (0, 1) it was fitted on, which a classifier that relabels them no longer has."""
    classes = getattr(classifier, "classes_", None)
    found = [] if classes is None else [i for i, c in enumerate(np.ravel(classes)) if c == 1]
    if not found:
        raise ArgumentError(
            f"Estimator {label!r} (target='wins'): after fit its classes_ are "
            f"{None if classes is None else np.ravel(classes).tolist()}, without the label 1 it was "
            "fitted on (1: the strong model wins, 0: it does not); the classifier must keep the "
            "labels it is given, with predict_proba's columns in the order of classes_"
        )
    return found[0]
