"""The fitted router every learner returns, and :func:`from_scores` for one of your own.

A :class:`Router` predicts each model's quality for a request, on the dataset's quality scale, and
turns that into the score a threshold router needs: ``router.score(weak, strong)`` is
``predicted quality(strong) − predicted quality(weak)``, higher where the strong model helps more.

Predictions are cached per request (by prompt text, or by what the router reads: the category for
:class:`~sykit.learn._learners.CategoryPrior`, the vector for
:func:`~sykit.learn._features.Column` features), because a threshold router scores every request it
routes and a sweep routes the same requests many times. The learners that build routers are in
:mod:`sykit.learn._learners`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request
from sykit.learn._features import prompt_text, request_list

__all__ = ["Router", "from_scores"]

#: Requests predicted per batch: bounds the dense feature and similarity matrices in memory.
_BATCH = 2048


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
        items = request_list(requests, f"{self._name}.predict")
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


# -- shared checks ---------------------------------------------------------------------------------
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
