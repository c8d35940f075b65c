"""A stand-in for a learned router's score: :func:`simulated_score`.

RouteLLM-style routers compute a score per request ("how much does the strong model help here?") and
send the request to the strong model when the score passes a threshold. In simulation the score is
built from the ground truth (the real quality gain) blurred by noise, so it reads the truth through
:func:`sykit.strategies.peek_truth` and every strategy using it is marked as not realizable.

How good the stand-in is must not depend on the grading scale (a 1/0 grade, a grade out of 10), so
by default its quality is set in APGR, RouteLLM's scale-free measure: a preset reproduces a published
router's APGR on each benchmark, or ``apgr=`` asks for any target. The score is fitted to the
traffic it is calibrated on; docs/router-score.md explains the model and the presets' source. The
threshold calibrated on a score (:func:`~sykit.strategies._calibration.calibrate`) is in
:mod:`sykit.strategies._calibration`.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist, fmean
from types import FrameType, MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.rng import uniforms
from sykit._run.driver import Driver
from sykit._world.models import Request, request_list, truth_of
from sykit._world.truth import TruthView, graded, peek_truth
from sykit.strategies._router_presets import BENCHMARKS, DEFAULT_PRESET, PRESETS

__all__ = [
    "SWEEP_SHARES",
    "SimulatedScore",
    "score_of",
    "simulated_score",
]


_inv_cdf = NormalDist().inv_cdf

SWEEP_SHARES = tuple(i / 10 for i in range(1, 10))
"""The strong-model shares of RouteLLM's evaluation sweep: thresholds at the deciles of the score
(plus the weak model alone at 0 and the strong model alone at 1). A fit targets the APGR of this
sweep, so sweep these shares to measure what the paper measured."""


@dataclass(frozen=True)
class _GroupFit:
    """The fitted score on one benchmark: the population of gains its normal scores come from, the
    correlation ``rho`` and the APGR it reaches there."""

    gains: tuple[float, ...]  # sorted gains of the requests graded for both models
    rho: float
    target: float
    apgr: float
    requests: int
    #: the normal score of each gain met so far (grades take few values, so gains repeat)
    scores: dict[float, float] = field(default_factory=dict, compare=False, repr=False)

    def normal_score(self, gain: float) -> float:
        """:func:`_normal_score` of ``gain`` among :attr:`gains`, kept once computed."""
        z = self.scores.get(gain)
        if z is None:
            z = self.scores[gain] = _normal_score(self.gains, gain)
        return z


@dataclass(frozen=True)
class SimulatedScore:
    """A stand-in for a learned router (RouteLLM's matrix factorisation, a BERT classifier):
    higher means "the strong model is needed". It reads the simulation's truth view, so it only
    works on a SimHost and marks its strategies as not realizable.

    **Quality in APGR (the default).** The score is
    ``rho · z(gain) + sqrt(1 − rho²) · ε``: ``z(gain)`` is the normal score of the request's true
    quality gain (strong − weak) among the gains of the traffic it was fitted on (ties share a
    score, so 1/0 grades and grades out of 10 behave alike), ``ε`` standard normal noise. ``rho``
    in [−1, 1] is found by bisection so that RouteLLM's threshold sweep (:data:`SWEEP_SHARES`)
    on that traffic recovers the target APGR: ``preset`` (a published router, see
    :attr:`PRESETS`; default ``"mf_augmented"``) or ``apgr`` (any target; below 0.5 means worse
    than random, as RouteLLM's Arena-only BERT router on MT-Bench).

    The fit is per benchmark: requests are grouped by their ``benchmark`` metadata (the shipped
    datasets have that column), and a preset targets its published figure on ``mt_bench``,
    ``mmlu`` and ``gsm8k``, and the mean of the three on other traffic. ``benchmark=`` fits all
    traffic as one group with that benchmark's figure. :func:`calibrate` fits the score on the
    traffic it calibrates on (each benchmark not fitted yet); :meth:`fit` refits explicitly. A
    fitted score is a fixed function of the request: on other requests of a fitted benchmark it
    ranks the gain against the fitted population with the same ``rho``; a request of a benchmark
    never fitted raises. A request without a grade for both models has no known gain: its score
    is pure noise, and it is left out of the fit.

    **Legacy: ``noise=``.** The true gain plus Gaussian noise of standard deviation ``noise`` in
    quality units, no fit. Its meaning depends on the grading scale: ``noise=0.4`` is about the best
    published router on MT-Bench (grades / 10), but on 1/0 grades the same quality needs about 3
    (GSM8K) or 6 (MMLU), and ``noise=0.5`` there is a better router than GPT-4 alone.

    The noise is keyed by ``seed`` and the request id, not by the run's seed: a trained router is a
    fixed function of the request, so the same request gets the same score in every run and every
    strategy, and run seeds change only the simulation (latencies, faults). Change ``seed`` for
    another router of the same quality. docs/router-score.md has the presets' source and the
    figures they reproduce on the shipped RouteLLM table.
    """

    weak: str
    strong: str
    preset: str | None = None
    apgr: float | None = None
    noise: float | None = None
    benchmark: str | None = None
    seed: int = 0
    _fits: dict[str | None, _GroupFit] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    PRESETS = PRESETS
    """Published APGR per preset and benchmark (Ong et al. 2024, arXiv 2406.18665, Tables 1–3)."""

    SWEEP_SHARES = SWEEP_SHARES
    """The strong-model shares of RouteLLM's sweep (0.1, 0.2, …, 0.9), which a fit targets."""

    def __post_init__(self) -> None:
        for name in ("weak", "strong"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ArgumentTypeError(f"{name} must be a model name, got {value!r}")
        if self.weak == self.strong:
            raise ArgumentError(f"weak and strong must be different models, got {self.weak!r}")
        given = [n for n in ("preset", "apgr", "noise") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ArgumentError(
                f"give one of preset=, apgr= or noise=, not {' and '.join(n + '=' for n in given)}"
            )
        if not given:
            object.__setattr__(self, "preset", DEFAULT_PRESET)
        if self.preset is not None:
            if not isinstance(self.preset, str):
                raise ArgumentTypeError(f"preset must be a string, got {self.preset!r}")
            if self.preset not in PRESETS:
                raise ArgumentError(
                    f"unknown preset {self.preset!r}; the presets are {', '.join(PRESETS)}"
                )
        if self.apgr is not None:
            apgr = check_real(self.apgr, "apgr", expected="a finite number (0.5: random)")
            object.__setattr__(self, "apgr", apgr)
        if self.noise is not None:
            noise = check_real(self.noise, "noise", low=0, expected="a number ≥ 0")
            object.__setattr__(self, "noise", noise)
        if self.benchmark is not None:
            if self.preset is None:
                raise ArgumentError(
                    "benchmark= picks a preset's published figure; it needs preset=, not apgr= "
                    "or noise="
                )
            if self.benchmark not in BENCHMARKS:
                raise ArgumentError(
                    f"benchmark must be one of {', '.join(BENCHMARKS)}, got {self.benchmark!r}"
                )
        object.__setattr__(self, "seed", check_int(self.seed, "seed", expected="an integer"))

    # -- fitting ----------------------------------------------------------------------------------

    def _target(self, benchmark: str | None) -> float:
        """The APGR this score aims for on ``benchmark`` (None: traffic without a benchmark)."""
        if self.apgr is not None:
            return float(self.apgr)
        if self.preset is None:
            raise ArgumentError("a noise= score has no target APGR")
        row = PRESETS[self.preset]
        return row[benchmark] if benchmark is not None and benchmark in row else fmean(row.values())

    def fit(
        self, requests: Iterable[Request], *, host: Any = None, seed: int = 0
    ) -> SimulatedScore:
        """Fit on ``requests`` per benchmark, replacing any earlier fit, and return the score.

        ``host`` and ``seed`` are needed only for synthetic requests whose quality comes from the
        host's profiles (as in :func:`calibrate`). A ``noise=`` score has nothing to fit."""
        fits = self._fit_groups(request_list(requests, "fit()"), host, seed, skip=())
        self._fits.clear()
        self._fits.update(fits)
        return self

    def _fit_new_groups(self, requests: Sequence[Request], host: Any, seed: int) -> None:
        self._fits.update(self._fit_groups(requests, host, seed, skip=tuple(self._fits)))

    def _fit_groups(
        self, requests: Sequence[Request], host: Any, seed: int, *, skip: tuple[Any, ...]
    ) -> dict[str | None, _GroupFit]:
        if self.noise is not None:
            return {}
        columns: dict[str | None, list[tuple[float, float, float, float]]] = {}
        profiles = getattr(host, "profiles", {}) if host is not None else {}
        for index, request in enumerate(requests):
            group = self._group(request)
            if group in skip:
                continue
            request_id = _request_id(request, index)
            view = TruthView(truth_of(request), profiles, seed, request_id)
            eps, tie = self._noise(request_id)
            columns.setdefault(group, []).append(
                (_grade(view, self.weak), _grade(view, self.strong), eps, tie)
            )
        for group, rows in columns.items():
            self._warn_if_ungraded(group, rows)
        return {
            group: _fit_group(np.array(rows), self._target(group), group)
            for group, rows in columns.items()
        }

    def _warn_if_ungraded(
        self, group: str | None, rows: list[tuple[float, float, float, float]]
    ) -> None:
        """Say so when no request of ``group`` has a grade for both models: the score is then
        pure noise there, a random router, which nothing else in the results would show."""
        if any(not (math.isnan(weak) or math.isnan(strong)) for weak, strong, _, _ in rows):
            return
        where = "traffic without a benchmark" if group is None else f"benchmark {group!r}"
        warnings.warn(
            f"none of the {len(rows)} requests of {where} has a grade for both {self.weak!r} and "
            f"{self.strong!r}, so the simulated score there is pure noise (a random router). For "
            "requests without a dataset's grades, pass host= (and the run's seed=) so that their "
            "quality comes from the host's profiles, and check that both models are on it",
            UserWarning,
            stacklevel=_stacklevel_outside_package(),
        )

    @property
    def fitted(self) -> pd.DataFrame:
        """Per fitted benchmark: requests, target_apgr, rho and the apgr reached there.

        ``apgr`` is what RouteLLM's threshold sweep gets on the fitted traffic (NaN where the two
        models tie on average, so that APGR is undefined)."""
        return pd.DataFrame(
            [
                {
                    "benchmark": group,
                    "requests": fit.requests,
                    "target_apgr": fit.target,
                    "rho": fit.rho,
                    "apgr": fit.apgr,
                }
                for group, fit in self._fits.items()
            ],
            columns=["benchmark", "requests", "target_apgr", "rho", "apgr"],
        )

    # -- values -----------------------------------------------------------------------------------

    def _group(self, request: Request | None) -> str | None:
        if self.benchmark is not None:
            return self.benchmark
        metadata = getattr(request, "metadata", None)
        # (a request's metadata is a mapping proxy: no abstract-class check for the common case)
        plain = type(metadata) is MappingProxyType or isinstance(metadata, Mapping)
        value = metadata.get("benchmark") if plain else None  # type: ignore[union-attr]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return str(value)

    def _noise(self, request_id: Any) -> tuple[float, float]:
        return _keyed_noise(self.seed, request_id)

    def _fit_for(self, group: str | None) -> _GroupFit:
        """The fit of ``group``; refused when the score was not fitted there."""
        fit = self._fits.get(group)
        if fit is None:
            where = "traffic without a benchmark" if group is None else f"benchmark {group!r}"
            raise ArgumentError(
                f"this simulated score has not been fitted on {where}: calibrate it on traffic "
                "that includes it first (sy.strategies.calibrate(score, requests, share)) or call "
                "score.fit(requests)"
            )
        return fit

    def value(self, view: TruthView, request_id: Any, request: Request | None = None) -> float:
        """The score of one request, from its truth view (``request`` gives its benchmark)."""
        eps, tie = _keyed_noise(self.seed, request_id)
        strong_q, weak_q = view.quality(self.strong), view.quality(self.weak)
        if strong_q is None:  # (as _grade reads them, inline: this runs once per request)
            strong_q = math.nan
        if weak_q is None:
            weak_q = math.nan
        known = not (math.isnan(strong_q) or math.isnan(weak_q))
        if self.noise is not None:
            gain = strong_q - weak_q if known else 0.0
            return gain + self.noise * eps + tie
        fit = self._fit_for(self._group(request))
        if not known or not fit.gains:
            return eps + tie
        z = fit.normal_score(_gain(weak_q, strong_q))
        return fit.rho * z + math.sqrt(1.0 - fit.rho * fit.rho) * eps + tie

    def values(
        self,
        weak_q: np.ndarray,
        strong_q: np.ndarray,
        request_ids: Sequence[Any],
        requests: Sequence[Request],
    ) -> np.ndarray:
        """The :meth:`value` of many requests at once, bit for bit.

        From their grades (``weak_q``, ``strong_q``: NaN where a model has none), ids and
        requests (for their benchmarks): the same operations in the same order, on arrays."""
        n = len(request_ids)
        noise = [_keyed_noise(self.seed, rid) for rid in request_ids]
        eps = np.fromiter((e for e, _ in noise), dtype=np.float64, count=n)
        tie = np.fromiter((t for _, t in noise), dtype=np.float64, count=n)
        known = ~(np.isnan(strong_q) | np.isnan(weak_q))
        if self.noise is not None:
            gain = np.where(known, strong_q - weak_q, 0.0)
            return gain + self.noise * eps + tie
        out = eps + tie  # a request without both grades, or on a fit with none
        codes: dict[str | None, int] = {}
        group_of = np.fromiter(
            (codes.setdefault(self._group(r), len(codes)) for r in requests),
            dtype=np.int64,
            count=n,
        )
        for group, code in codes.items():
            fit = self._fit_for(group)
            rows = np.flatnonzero((group_of == code) & known)
            if not len(rows) or not fit.gains:
                continue
            pairs = list(zip(weak_q[rows].tolist(), strong_q[rows].tolist(), strict=True))
            scores = {pair: fit.normal_score(_gain(*pair)) for pair in dict.fromkeys(pairs)}
            z = np.fromiter(map(scores.__getitem__, pairs), dtype=np.float64, count=len(rows))
            out[rows] = fit.rho * z + math.sqrt(1.0 - fit.rho * fit.rho) * eps[rows] + tie[rows]
        return out


def simulated_score(
    weak: str,
    strong: str,
    *,
    preset: str | None = None,
    apgr: float | None = None,
    noise: float | None = None,
    benchmark: str | None = None,
    seed: int = 0,
) -> SimulatedScore:
    """A simulated router score (see :class:`SimulatedScore`): by default RouteLLM's matrix
    factorisation router trained on augmented data, at its published APGR on each benchmark.

        score = sy.strategies.simulated_score("weak", "strong")                        # mf_augmented
        score = sy.strategies.simulated_score("weak", "strong", preset="bert_arena")   # a weaker one
        score = sy.strategies.simulated_score("weak", "strong", apgr=0.7)              # any target
        threshold = sy.strategies.calibrate(score, requests, 0.3)   # fits the score, then calibrates

    Give at most one of ``preset`` (a name in ``SimulatedScore.PRESETS``), ``apgr`` (a target
    APGR) or ``noise`` (legacy: Gaussian noise in quality units, scale-dependent).

    It is a bound, not a router: it reads the ground truth of the traffic it is fitted to, and its
    APGR holds on that traffic only (fitted on one half of MT-Bench, it scores 0.91 on the other,
    not 0.80). For routers you could deploy, judged on held-out traffic, see
    :func:`sykit.learn.cross_fit`.
    """
    return SimulatedScore(
        weak, strong, preset=preset, apgr=apgr, noise=noise, benchmark=benchmark, seed=seed
    )


async def score_of(score: Any, request: Request, driver: Driver) -> float:
    """The value of ``score`` for ``request``: a simulated score reads the truth (marking the
    request as not realizable); a user's function of the request is called, and awaited if async."""
    if isinstance(score, SimulatedScore):
        return score.value(peek_truth(driver), driver.request_id, request)
    value = score(request)
    if inspect.isawaitable(value):
        value = await value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _not_a_number(value) from None


def score_value(score: Any, request: Request, request_id: Any, truth: Any) -> float:
    """:func:`score_of` without awaiting, for a run that routes every request at once: a
    simulated score reads ``truth()`` (which marks the request); a function of the request is
    called, and one that gives an awaitable raises ``TypeError`` (the run then takes the event
    engines, where it is awaited)."""
    if isinstance(score, SimulatedScore):
        return score.value(truth(), request_id, request)
    return _called(score, request)


def score_values(score: Any, batch: Any) -> np.ndarray:
    """:func:`score_value` of every request of a :class:`~sykit._run.static.RoutingBatch` at
    once: a simulated score from the batch's grades (reading them marks every request), a
    function of the request called on each (one that gives an awaitable raises ``TypeError``)."""
    if isinstance(score, SimulatedScore):
        return score.values(
            batch.quality(score.weak), batch.quality(score.strong), batch.ids, batch.requests
        )
    values = [_called(score, request) for request in batch.requests]
    return np.asarray(values, dtype=np.float64).reshape(len(batch.requests))


def _called(score: Any, request: Request) -> float:
    """A score function's value for ``request``, without awaiting: an awaitable it gives is
    closed and refused with ``TypeError``."""
    value = score(request)
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if close is not None:
            close()
        raise TypeError("the score gave an awaitable")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _not_a_number(value) from None


def _not_a_number(value: Any) -> ArgumentTypeError:
    """Why a score function's value cannot be compared with a threshold, said as such rather than
    as ``float()``'s error."""
    return ArgumentTypeError(
        f"the score function must return a number, got {type(value).__name__} {value!r:.40}"
    )


# -- helpers -----------------------------------------------------------------------------------------


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _stacklevel_outside_package() -> int:
    """The ``stacklevel`` that points a warning issued by our caller at the first frame outside
    sykit (the user's ``calibrate()`` or ``fit()``, however many sykit frames lie between)."""
    frame: FrameType | None = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def _request_id(request: Request, index: int) -> Any:
    return index if request.id is None else request.id


def _grade(view: TruthView, model: str) -> float:
    quality = view.quality(model)
    return float(quality) if graded(quality) else math.nan


@lru_cache(maxsize=1 << 16)  # a sweep asks for the same requests' noise at every setting
def _keyed_noise(seed: int, request_id: Any) -> tuple[float, float]:
    """The score's standard normal noise for a request and a tiny tie-break, keyed by the score's
    seed and the request id."""
    u_noise, u_tie = uniforms(seed, request_id, "router_score")[:2]
    return _inv_cdf(u_noise), 1e-9 * u_tie


def _gain(weak_q: float, strong_q: float) -> float:
    """The quality gain, rounded so that equal gains from different grade pairs (0.3 − 0.2 and
    1.0 − 0.9 differ in the last bit) are ties."""
    return round(strong_q - weak_q, 9)


def _normal_score(gains: Sequence[float], gain: float) -> float:
    """The normal score of ``gain`` among ``gains`` (sorted): Φ⁻¹ of its mid-rank fraction, so that
    ties share a score; clipped inside the population's range for gains outside it."""
    m = len(gains)
    below = bisect_left(gains, gain)
    equal = bisect_right(gains, gain) - below
    p = (below + equal / 2) / m
    return _inv_cdf(min(max(p, 0.5 / m), 1 - 0.5 / m))


def _fit_group(rows: np.ndarray, target: float, group: str | None) -> _GroupFit:
    """Find ``rho`` so that the threshold sweep over these requests recovers ``target``.

    ``rows`` holds per request (weak grade, strong grade, noise, tie-break). The sweep's APGR is
    computed exactly as :func:`calibrate` and :func:`sykit.sweep` would measure it: at each share
    of :data:`SWEEP_SHARES` the ``round(share · n)`` highest scores go to the strong model, and
    the mean quality over graded answers is compared with each model alone.
    """
    weak_q, strong_q, eps, tie = rows.T
    n = len(rows)
    known = ~(np.isnan(weak_q) | np.isnan(strong_q))
    known_gains = [
        _gain(w, s) for w, s in zip(weak_q[known].tolist(), strong_q[known].tolist(), strict=True)
    ]
    gains = sorted(known_gains)
    z = np.zeros(n)
    if gains:
        z[known] = [_normal_score(gains, g) for g in known_gains]
    weak_mean = float(np.nanmean(weak_q)) if (~np.isnan(weak_q)).any() else math.nan
    strong_mean = float(np.nanmean(strong_q)) if (~np.isnan(strong_q)).any() else math.nan
    gap = strong_mean - weak_mean
    population = tuple(float(g) for g in gains)
    if len(gains) < 2 or not math.isfinite(gap) or gap == 0:
        return _GroupFit(population, 0.0, target, math.nan, n)  # no APGR to aim at: pure noise

    ks = np.array([n - min(max(n - round(s * n), 0), n - 1) for s in SWEEP_SHARES])
    weak_sum, weak_count = float(np.nansum(weak_q)), float((~np.isnan(weak_q)).sum())
    delta_sum = np.nan_to_num(strong_q) - np.nan_to_num(weak_q)
    delta_count = (~np.isnan(strong_q)).astype(float) - (~np.isnan(weak_q)).astype(float)
    xs = np.concatenate([[0.0], ks / n, [1.0]])

    def sweep_apgr(rho: float) -> float:
        values = np.where(known, rho * z + math.sqrt(1.0 - rho * rho) * eps, eps) + tie
        order = np.argsort(-values, kind="stable")
        sums = weak_sum + np.cumsum(delta_sum[order])[ks - 1]
        counts = weak_count + np.cumsum(delta_count[order])[ks - 1]
        recovered = (sums / counts - weak_mean) / gap
        # rounded so that the last bits of the grading scale never steer the search
        return round(float(np.trapezoid(np.concatenate([[0.0], recovered, [1.0]]), xs)), 12)

    rhos = list(np.linspace(-1.0, 1.0, 41))
    reached = [sweep_apgr(r) for r in rhos]
    low, high = min(reached), max(reached)
    if not low - 1e-9 <= target <= high + 1e-9:
        where = "traffic without a benchmark" if group is None else f"benchmark {group!r}"
        closest = min(range(len(rhos)), key=lambda i: abs(reached[i] - target))
        warnings.warn(
            f"APGR {target:.3f} is out of reach on {where} ({n} requests): a score recovers "
            f"between {low:.3f} and {high:.3f} there, so the simulated score gets "
            f"{reached[closest]:.3f}. Fit on more traffic, or pick another apgr=, preset= or "
            "benchmark=",
            UserWarning,
            stacklevel=5,
        )
        return _GroupFit(population, float(rhos[closest]), target, reached[closest], n)
    best = min(range(len(rhos)), key=lambda i: abs(reached[i] - target))
    # bracket the target next to the closest grid point, then bisect
    lo, hi = max(best - 1, 0), min(best + 1, len(rhos) - 1)
    a, b = (lo, best) if (reached[lo] - target) * (reached[best] - target) <= 0 else (best, hi)
    r_a, r_b, f_a = rhos[a], rhos[b], reached[a] - target
    candidates = [(abs(reached[best] - target), rhos[best], reached[best])]
    for _ in range(40):
        mid = (r_a + r_b) / 2
        value = sweep_apgr(mid)
        candidates.append((abs(value - target), mid, value))
        if (value - target) * f_a <= 0:
            r_b = mid
        else:
            r_a, f_a = mid, value - target
    _, rho, achieved = min(candidates)
    return _GroupFit(population, float(rho), target, achieved, n)
