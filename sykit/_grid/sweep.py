"""Sweeps: one parametric strategy at many settings, its cost–quality curve, APGR and AIQ.

Quality on the curve and at the reference points is counted as in summaries: a failed request is 0,
a served but ungraded answer is left out, and each request is averaged over seeds first.

* APGR (RouteLLM): performance gap recovered, ``(q − q_weak) / (q_strong − q_weak)``, averaged over
  the share of requests sent to the strong model from 0 to 1 (trapezoids, with the weak model at
  share 0 and the strong model at share 1). A random router scores 0.5.
* AIQ (RouterBench): the area under the non-decreasing upper convex hull of the router's
  (cost, quality) points, divided by the cost range they span.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._grid.compare import compare
from sykit._results.curve_stats import CurveBootstrap, aiq, apgr, bootstrap_curve, curve_of
from sykit._results.metrics import mean_quality, ungraded
from sykit._results.result import Comparison
from sykit._run.inputs import as_algorithm
from sykit.strategies import oracle, single

__all__ = ["Sweep", "aiq", "apgr", "sweep"]


#: The columns :attr:`Sweep.curve` computes, which the swept value's name must not shadow.
_CURVE_COLUMNS = (
    "strategy",
    "cost_per_request_usd",
    "mean_quality",
    "strong_share",
    "success_rate",
    "n_ungraded",
    "realizable",
)


@dataclass(frozen=True, repr=False)
class Sweep:
    """A parametric strategy run at several settings, next to reference strategies: the weak and
    the strong model alone, and the bounds (by default the oracle on a SimHost)."""

    comparison: Comparison
    values: tuple[float, ...]
    labels: tuple[str, ...]
    weak: str
    strong: str
    reference_labels: dict[str, str]
    value_name: str = "value"

    def _points(self) -> pd.DataFrame:
        requests = self.comparison.requests
        rows = []
        names = [*self.labels, *self.reference_labels.values()]
        for name in names:
            frame = requests[requests["strategy"].astype(str) == name]
            rows.append(
                {
                    "strategy": name,
                    "cost_per_request_usd": float(frame["cost_usd"].mean()),
                    "mean_quality": mean_quality(frame),
                    "strong_share": float(
                        (frame["served_model"].astype(str) == self.strong).mean()
                    ),
                    "success_rate": float((frame["status"] == "ok").mean()),
                    "n_ungraded": int(ungraded(frame).sum()),
                    "realizable": not bool(frame["reads_truth"].any()),
                }
            )
        return pd.DataFrame(rows)

    @property
    def curve(self) -> pd.DataFrame:
        """One row per setting: the swept value (in a column named after what it is, ``value_name``:
        ``threshold``, ``target_share``, …; ``value`` when the sweep was not told), the strategy's
        label, cost per request, mean
        quality (failed = 0, ungraded left out), share served by the strong model, success rate,
        the number of ungraded answers, and ``realizable`` (False when the swept strategy read the
        ground truth, e.g. a simulated router score: the curve is then a bound, not a router)."""
        points = self._points().iloc[: len(self.labels)].reset_index(drop=True)
        points.insert(0, self.value_name, list(self.values))
        return points

    @property
    def references(self) -> dict[str, tuple[float, float]]:
        """(cost per request, mean quality) of the weak and strong models alone and of every
        bound (``"oracle"`` by default on a SimHost)."""
        points = self._points().set_index("strategy")
        return {
            label: (
                float(points.loc[name, "cost_per_request_usd"]),
                float(points.loc[name, "mean_quality"]),
            )
            for label, name in self.reference_labels.items()
        }

    def apgr(self) -> float:
        """RouteLLM's APGR of the swept strategy (0.5 for a random router)."""
        curve = self.curve
        refs = self.references
        return apgr(
            curve["strong_share"],
            curve["mean_quality"],
            weak_quality=refs["weak"][1],
            strong_quality=refs["strong"][1],
        )

    def aiq(self) -> float:
        """RouterBench's AIQ of the swept strategy."""
        curve = self.curve
        return aiq(curve["cost_per_request_usd"], curve["mean_quality"])

    def intervals(
        self,
        *,
        resamples: int = 2000,
        level: float = 0.95,
        seed: int = 0,
        group: str | None = None,
    ) -> CurveBootstrap:
        """APGR and AIQ with bootstrap intervals: ``.apgr`` and ``.aiq`` are
        :class:`sykit.learn.Estimate` s (value, low, high). The requests are resampled with
        replacement (each with its runs under every setting and reference, so the curve is
        recomputed on each resample); ``group`` names a column of the requests frame whose rows
        are resampled together, e.g. ``"question"`` on the RouteLLM table (MT-Bench's two turns).
        The point values equal :meth:`apgr` and :meth:`aiq`."""
        curve = curve_of(
            self.comparison.requests,
            list(self.labels),
            self.reference_labels["weak"],
            self.reference_labels["strong"],
            self.strong,
            group,
        )
        return bootstrap_curve(curve, resamples=resamples, level=level, seed=seed)

    def plot(self, ax: Any = None) -> Any:
        """The cost–quality curve with the weak, strong and bound references; returns the Axes."""
        from sykit._viz import plot_cost_quality_curve

        return plot_cost_quality_curve(**curve_plot_arguments(self), ax=ax)

    def __repr__(self) -> str:
        return (
            f"<sykit.Sweep {len(self.values)} settings, weak={self.weak!r}, strong={self.strong!r}>"
        )


def curve_plot_arguments(sweep: Sweep) -> dict[str, Any]:
    """What :meth:`Sweep.plot` draws, as keyword arguments of ``plot_cost_quality_curve``:
    small tables, cheap to hand to another process (the sweep itself holds every run's
    records)."""
    references = sweep.references
    return {
        "curve": sweep.curve.drop(columns=["strategy"]),
        "references": references,
        "bounds": [name for name in references if name not in ("weak", "strong")],
        "setting": sweep.value_name,
    }


def _check_values(values: Any) -> list[float]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ArgumentTypeError(
            f"values must be a list of numbers to sweep, got {type(values).__name__} {values!r}"
        )
    settings = list(values)
    if not settings:
        raise ArgumentError("values is empty: give at least one setting to sweep")
    for value in settings:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ArgumentTypeError(
                f"values must be numbers; got {value!r} ({type(value).__name__}) among them"
            )
        if not math.isfinite(float(value)):
            raise ArgumentError(f"values must be finite numbers; got {value!r} among them")
    return [float(v) for v in settings]


def _labels(settings: Sequence[float]) -> list[str]:
    """Each setting's strategy name: short (``0.2``), or, when values differ beyond six
    significant digits, every value with all the digits that tell it apart (``0.1000001``)."""
    short = [f"{v:g}" for v in settings]
    if len(set(short)) == len(short):
        return short
    return [repr(v) for v in settings]


def _check_models(host: Any, weak: Any, strong: Any) -> None:
    for name, model in (("weak", weak), ("strong", strong)):
        if not isinstance(model, str):
            raise ArgumentTypeError(f"{name} must be a model name, got {type(model).__name__}")
    if weak == strong:
        raise ArgumentError(
            f"weak and strong are both {weak!r}: a sweep needs two different models"
        )
    models = list(getattr(host, "profiles", None) or ())
    for name, model in (("weak", weak), ("strong", strong)):
        if models and model not in models:
            raise ArgumentError(f"{name}={model!r} is not a model of the host; it has {models}")


def _check_bounds(bounds: Any, taken: Sequence[str]) -> dict[str, Any]:
    if not isinstance(bounds, Mapping):
        raise ArgumentTypeError(
            f"bounds must map a name to an algorithm (e.g. {{'oracle': oracle([weak, strong])}}), "
            f"got {type(bounds).__name__}"
        )
    checked: dict[str, Any] = {}
    for name, algorithm in bounds.items():
        if not isinstance(name, str) or not name:
            raise ArgumentTypeError(f"bounds names must be non-empty strings, got {name!r}")
        if name in ("weak", "strong") or name in taken:
            raise ArgumentError(
                f"bounds name {name!r} is already used by the sweep ({['weak', 'strong', *taken]}); "
                "rename it"
            )
        checked[name] = algorithm
    return checked


def _built(make_strategy: Callable[[float], Any], value: float, label: str) -> Any:
    """``make_strategy(value)``, checked here: a factory that returns no strategy would otherwise
    be reported by ``compare`` as a bad algorithm, without the factory or the value."""
    algorithm = make_strategy(value)
    try:
        as_algorithm(algorithm, label)
    except ArgumentTypeError as error:
        name = getattr(make_strategy, "__name__", "")
        call = f"{name if name.isidentifier() else 'make_strategy'}({value!r})"
        raise ArgumentTypeError(f"sweep: {call} returned {_why_not(algorithm, error)}") from None
    return algorithm


def _why_not(value: Any, error: Exception) -> str:
    """What a factory returned and why it is no strategy."""
    shown = "None" if value is None else f"{type(value).__name__} {value!r:.60}"
    if callable(value):
        return f"{shown}, which is not a strategy: {error}"
    return (
        f"{shown}; it must return a strategy (an async function (request, driver) -> Outcome, "
        "or an object with async route(request, driver))"
    )


def sweep(
    make_strategy: Callable[[float], Any],
    values: Iterable[float],
    requests: Iterable[Any],
    *,
    host: Any,
    weak: str,
    strong: str,
    seeds: Sequence[int] = (0,),
    concurrency: int | None = None,
    arrivals: Any = None,
    bounds: Mapping[str, Any] | None = None,
    with_oracle: bool = True,
    value_name: str = "value",
    progress: bool | None = None,
    workers: int | None = None,
    executor: Any = None,
) -> Sweep:
    """Run ``make_strategy(value)`` for every value, plus ``weak`` alone, ``strong`` alone and the
    ``bounds``, all on the same requests and draws; return the :class:`Sweep`.

        sweep(lambda t: sy.strategies.threshold_router("weak", "strong", score=s, threshold=t),
              thresholds, dataset, host=host, weak="weak", strong="strong")

    ``bounds`` names extra reference strategies drawn as bounds next to the curve; by default,
    on a SimHost, ``{"oracle": sy.strategies.oracle([weak, strong])}`` (``with_oracle=False`` or
    ``bounds={}`` for none).

    ``value_name`` says what the swept values are (``"threshold"``, ``"target_share"``, …): it
    names their column in :attr:`Sweep.curve` and the labels of the plot. ``workers`` and
    ``executor`` run the runs in parallel, as in :func:`sy.compare`.
    """
    if not callable(make_strategy):
        raise ArgumentTypeError(
            "make_strategy must be a function of the swept value returning an algorithm, "
            f"got {type(make_strategy).__name__}"
        )
    settings = _check_values(values)
    if not isinstance(value_name, str) or not value_name:
        raise ArgumentTypeError(
            f"value_name must name the swept values (e.g. 'threshold'), got {value_name!r}"
        )
    if value_name in _CURVE_COLUMNS:
        raise ArgumentError(f"value_name {value_name!r} is already a column of the curve")
    labels = _labels(settings)
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ArgumentError(f"values must be distinct; repeated: {repeated}")
    _check_models(host, weak, strong)
    if isinstance(seeds, Sequence) and not isinstance(seeds, str):
        doubled = sorted({s for s in seeds if list(seeds).count(s) > 1}, key=repr)
        if doubled:
            raise ArgumentError(
                f"seeds must be distinct; repeated: {doubled} (a repeated seed replays the same "
                "draws and counts them twice)"
            )
    references = {"weak": f"{weak} only", "strong": f"{strong} only"}
    if bounds is None:
        bounds = (
            {"oracle": oracle([weak, strong])}
            if with_oracle and getattr(host, "virtual", False)
            else {}
        )
    extra = _check_bounds(bounds, [*labels, *references.values()])
    lineup: dict[str, Any] = {
        label: _built(make_strategy, value, label)
        for label, value in zip(labels, settings, strict=True)
    }
    lineup[references["weak"]] = single(weak)
    lineup[references["strong"]] = single(strong)
    for name, algorithm in extra.items():
        references[name] = name
        lineup[name] = algorithm
    comparison = compare(
        lineup,
        requests,
        host=host,
        seeds=seeds,
        concurrency=concurrency,
        arrivals=arrivals,
        progress=progress,
        workers=workers,
        executor=executor,
    )
    return Sweep(comparison, tuple(settings), tuple(labels), weak, strong, references, value_name)
