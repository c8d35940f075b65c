"""The calibration of a threshold on a router's score: :func:`calibrate` and the
:class:`Threshold` it returns.

RouteLLM calibrates on a sample of traffic: the threshold at which the score sends a target share
of it to the strong model. With a coarse score many requests tie at that value, so the
:class:`Threshold` also says how to split them (a keyed draw per request, :func:`tie_draw`) to hit
the share exactly. The scores it calibrates are the user's functions of the request or the
simulated score of :mod:`sykit.strategies._router_score`.
"""

from __future__ import annotations

import inspect
import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

from sykit._base.checks import check_int, check_probability
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.rng import uniforms
from sykit._world.models import Request, request_list, truth_of
from sykit._world.truth import TruthView
from sykit.strategies._router_score import SimulatedScore, _request_id

__all__ = ["Threshold", "calibrate", "calibrate_shares", "tie_draw"]


def tie_draw(seed: int, request_id: Any) -> float:
    """The keyed uniform that decides a request tied at a :class:`Threshold`: a function of the
    seed and the request id only, so calibration and every run agree on it."""
    return uniforms(seed, "tie", request_id)[0]


class Threshold(float):
    """A calibrated threshold: the number itself, plus how to break ties at it.

    With a coarse score (0/1, a grade out of 10) many requests share the threshold's value, so
    "score ≥ threshold" sends all of them one way and misses the target share by the size of the
    tie. A ``Threshold`` from :func:`calibrate` remembers how many calibration requests tie there
    (:attr:`tied`), how many of them must go to the strong model to hit the share exactly
    (:attr:`tied_strong`), and a :attr:`cut` on a seeded hash of the request id
    (:func:`tie_draw`) below which exactly that many of them fall. :func:`threshold_router` sends
    a tied request to the strong model only when its hash is below the cut. :attr:`note` says
    what was done. It is a ``float``, so code that uses the number keeps working; without a
    :attr:`cut` it routes exactly as the plain number."""

    __slots__ = ("_cut", "_requests", "_seed", "_share", "_strong", "_tied", "_tied_strong")

    _cut: float | None
    _requests: int
    _seed: int
    _share: float
    _strong: int
    _tied: int
    _tied_strong: int

    def __new__(
        cls,
        value: float,
        *,
        tied: int = 0,
        tied_strong: int = 0,
        seed: int = 0,
        cut: float | None = None,
        requests: int = 0,
        strong: int = 0,
        share: float = math.nan,
    ) -> Threshold:
        self = super().__new__(cls, value)
        self._tied, self._tied_strong, self._seed, self._cut = tied, tied_strong, seed, cut
        self._requests, self._strong, self._share = requests, strong, share
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_threshold, (float(self), self._fields()))

    def _fields(self) -> dict[str, Any]:
        return {name.lstrip("_"): getattr(self, name) for name in self.__slots__}

    @property
    def tied(self) -> int:
        """Calibration requests whose score equals the threshold."""
        return self._tied

    @property
    def tied_strong(self) -> int:
        """How many of the tied requests go to the strong model (those hashing below the cut)."""
        return self._tied_strong

    @property
    def seed(self) -> int:
        """The seed of the tie-breaking hash (:func:`tie_draw`)."""
        return self._seed

    @property
    def cut(self) -> float | None:
        """A request tied at the threshold goes strong when ``tie_draw(seed, id) < cut``; None
        when no tie needs breaking (every tied request goes strong, as with a plain float)."""
        return self._cut

    @property
    def requests(self) -> int:
        """Requests calibrated on."""
        return self._requests

    @property
    def strong(self) -> int:
        """Calibration requests this threshold sends to the strong model."""
        return self._strong

    @property
    def share(self) -> float:
        """The target share of strong calls it was calibrated for."""
        return self._share

    def goes_strong(self, value: float, request_id: Any) -> bool:
        """Whether a request with score ``value`` and id ``request_id`` goes to the strong model."""
        if value != self:
            return value > self
        return self._cut is None or tie_draw(self._seed, request_id) < self._cut

    @property
    def note(self) -> str:
        """What the calibration did, in one sentence."""
        n, value = self._requests, f"{float(self):.6g}"
        if n == 0:
            return ""
        if math.isinf(self):
            return f"target share 0: the threshold is infinite, so none of {n} requests goes strong"
        reached = f"{100 * self._strong / n:.1f} %"
        if self._cut is None:
            if self._tied > 1:
                return (
                    f"{self._tied} requests tie at {value} and all go to the strong model, so "
                    f"{reached} of {n} do"
                )
            return f"no ties at {value}: {reached} of {n} requests go to the strong model"
        go = "goes" if self._tied_strong == 1 else "go"
        return (
            f"{self._tied} requests tie at {value}; {self._tied_strong} of them, chosen by a "
            f"seeded hash of their ids (seed {self._seed}), {go} to the strong model so that "
            f"{reached} of {n} do"
        )

    def __repr__(self) -> str:
        note = self.note
        return f"Threshold({float(self)!r}{': ' + note if note else ''})"

    __str__ = float.__repr__


def _threshold(value: float, fields: dict[str, Any]) -> Threshold:
    return Threshold(value, **fields)


def calibrate(
    score: Any, requests: Iterable[Request], target_share: float, *, host: Any = None, seed: int = 0
) -> Threshold:
    """The threshold at which ``score`` sends ``target_share`` of ``requests`` to the strong model
    (RouteLLM's calibration on a sample of traffic): exactly ``round(target_share · n)`` of them
    (at least one for a share above 0), even when scores tie at the threshold. A simulated score
    is first fitted on each benchmark of ``requests`` it has not been fitted on; it needs the
    requests' ground truth (dataset requests carry it) or, for synthetic requests, the
    ``host``'s profiles and the run ``seed``.

    The result is a :class:`Threshold`, a float that also says how to break ties: of the requests
    tied at it, those whose hash of ``seed`` and request id falls below a cut go strong, as many
    as the share needs. ``threshold.note`` says what was done; nothing is printed or warned."""
    return calibrate_shares(score, requests, [target_share], host=host, seed=seed)[0]


def calibrate_shares(
    score: Any,
    requests: Iterable[Request],
    target_shares: Sequence[float],
    *,
    host: Any = None,
    seed: int = 0,
) -> list[Threshold]:
    """:func:`calibrate` at each of ``target_shares``, the requests scored once: the same
    thresholds, for a sweep or a cross-fit that calibrates one score at several shares."""
    shares = [
        check_probability(
            share, "target_share", expected="between 0 and 1", type_error=ArgumentError
        )
        for share in target_shares
    ]
    if not (isinstance(score, SimulatedScore) or callable(score)):
        raise ArgumentTypeError(
            "score must be a function of the request or sy.strategies.simulated_score(...)"
        )
    seed = check_int(seed, "seed", expected="an integer")
    items = request_list(requests, "calibrate()")
    if not items:
        raise ArgumentError("requests is empty")
    ids = [_request_id(request, index) for index, request in enumerate(items)]
    values: list[float] = []
    if isinstance(score, SimulatedScore):
        score._fit_new_groups(items, host, seed)
        profiles = getattr(host, "profiles", {}) if host is not None else {}
        for index, request in enumerate(items):
            request_id = _request_id(request, index)
            view = TruthView(truth_of(request), profiles, seed, request_id)
            values.append(score.value(view, request_id, request))
    else:
        for index, request in enumerate(items):
            try:
                value = score(request)
            except Exception as error:  # the user's function: say which request, keep the cause
                raise ArgumentError(
                    f"calibrate(): the score function raised on request "
                    f"{_request_id(request, index)!r}: {type(error).__name__}: {error}"
                ) from error
            if inspect.isawaitable(value):
                if inspect.iscoroutine(value):
                    value.close()
                raise ArgumentTypeError("calibrate() needs a synchronous score function")
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ArgumentTypeError(
                    f"calibrate(): the score function must return a number, got "
                    f"{type(value).__name__} for request {_request_id(request, index)!r}"
                ) from None
            if math.isnan(number):
                raise ArgumentError(
                    f"calibrate(): the score function returned NaN for request "
                    f"{_request_id(request, index)!r}: a score must be a number a threshold "
                    "can be compared with"
                )
            values.append(number)
    return [_tie_broken(values, ids, share, seed) for share in shares]


def _tie_broken(values: list[float], ids: list[Any], share: float, seed: int) -> Threshold:
    """The threshold sending ``round(share · n)`` (at least 1) of ``values`` strong, with the cut
    that splits the requests tied at it exactly."""
    n = len(values)
    if share <= 0:
        return Threshold(math.inf, requests=n, share=share, seed=seed)
    wanted = min(max(round(share * n), 1), n)  # as before: a positive share sends at least one
    ordered = sorted(values)
    threshold = ordered[n - wanted]
    above = n - bisect_right(ordered, threshold)
    tied = [ids[i] for i, v in enumerate(values) if v == threshold]
    need = wanted - above  # 1 ≤ need ≤ len(tied): ordered[n - wanted] is tied and not above
    if need >= len(tied):
        return Threshold(
            threshold,
            tied=len(tied),
            tied_strong=len(tied),
            seed=seed,
            requests=n,
            strong=above + len(tied),
            share=share,
        )
    draws = sorted(tie_draw(seed, i) for i in tied)
    cut = (draws[need - 1] + draws[need]) / 2
    chosen = sum(d < cut for d in draws)  # == need unless two tied requests share an id
    return Threshold(
        threshold,
        tied=len(tied),
        tied_strong=chosen,
        seed=seed,
        cut=cut,
        requests=n,
        strong=above + chosen,
        share=share,
    )
