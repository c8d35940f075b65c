"""A stand-in for a learned router's score, and the calibration of a threshold on it.

RouteLLM-style routers compute a score per request ("how much does the strong model help here?") and
send the request to the strong model when the score passes a threshold. In simulation the score is
built from the ground truth (the real quality gain) blurred by noise, so it reads the truth through
:func:`sykit.peek_truth` and every strategy using it is marked as not realizable.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from ._driver import Driver
from ._errors import ArgumentError, ArgumentTypeError
from ._models import Request, truth_of
from ._rng import uniforms
from ._truth import TruthView, graded, peek_truth

__all__ = ["SimulatedScore", "calibrate", "score_of", "simulated_score"]

_inv_cdf = NormalDist().inv_cdf


@dataclass(frozen=True)
class SimulatedScore:
    """A stand-in for a learned router (RouteLLM's matrix factorisation, a BERT classifier): the true
    quality gain of ``strong`` over ``weak`` plus Gaussian noise of standard deviation ``noise``.
    Higher means "the strong model is needed". It reads the simulation's truth view, so it only
    works on a SimHost; ``noise`` sets how good the simulated router is (0: perfect)."""

    weak: str
    strong: str
    noise: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        if not (
            isinstance(self.noise, int | float) and math.isfinite(self.noise) and self.noise >= 0
        ):
            raise ArgumentError(f"noise must be a number ≥ 0, got {self.noise!r}")

    def value(self, view: TruthView, request_id: Any) -> float:
        strong_q = view.quality(self.strong)
        weak_q = view.quality(self.weak)
        gain = strong_q - weak_q if graded(strong_q) and graded(weak_q) else 0.0
        u_noise, u_tie = uniforms(self.seed, request_id, "router_score")[:2]
        return gain + self.noise * _inv_cdf(u_noise) + 1e-9 * u_tie  # tiny tie-break, keyed


def simulated_score(weak: str, strong: str, *, noise: float = 0.5, seed: int = 0) -> SimulatedScore:
    """A simulated router score (see :class:`SimulatedScore`)."""
    return SimulatedScore(weak, strong, noise, seed)


def calibrate(
    score: Any, requests: Iterable[Request], target_share: float, *, host: Any = None, seed: int = 0
) -> float:
    """The threshold at which ``score`` sends about ``target_share`` of ``requests`` to the strong
    model (RouteLLM's calibration on a sample of traffic). A simulated score needs the requests'
    ground truth (dataset requests carry it) or, for synthetic requests, the ``host``'s profiles."""
    if (
        isinstance(target_share, bool)
        or not isinstance(target_share, int | float)
        or not 0 <= target_share <= 1
    ):
        raise ArgumentError(f"target_share must be between 0 and 1, got {target_share!r}")
    values = []
    for index, request in enumerate(requests):
        request_id = index if request.id is None else request.id
        if isinstance(score, SimulatedScore):
            profiles = getattr(host, "profiles", {}) if host is not None else {}
            view = TruthView(truth_of(request), profiles, seed, request_id)
            values.append(score.value(view, request_id))
        else:
            value = score(request)
            if inspect.isawaitable(value):
                raise ArgumentTypeError("calibrate() needs a synchronous score function")
            values.append(float(value))
    if not values:
        raise ArgumentError("requests is empty")
    values.sort()
    if target_share <= 0:
        return math.inf
    if target_share >= 1:
        return values[0]
    cut = len(values) - round(target_share * len(values))
    cut = min(max(cut, 0), len(values) - 1)
    return values[cut]


async def score_of(score: Any, request: Request, driver: Driver) -> float:
    """The value of ``score`` for ``request``: a simulated score reads the truth (marking the
    request as not realizable); a user's function of the request is called, and awaited if async."""
    if isinstance(score, SimulatedScore):
        return score.value(peek_truth(driver), driver.request_id)
    value = score(request)
    if inspect.isawaitable(value):
        value = await value
    return float(value)
