"""Ground truth, kept away from algorithms, and the one door through which simulation reaches it.

A dataset knows how good each model's answer to a request is. A routing algorithm must not: a real
router never sees the grade of an answer. So responses given to algorithms carry no quality, and
request metadata holds only the columns a user names. Three simulation-only components do need the
truth — the simulated judge (inside :class:`~sykit.SimHost`), the simulated router score and the
oracle — and they reach it through :func:`peek_truth`, which marks the request (and so its strategy)
as *not realizable*: the ``reads_truth`` column of ``result.requests`` and the ``realizable`` column
of the summary say so, and plots draw such strategies as bounds.

Nothing an algorithm holds leads to the truth. A run keeps it in a :class:`TruthTable` (by request
index) that no attribute of the driver, the request state, the run, the host session or the records
refers to: the run reaches it only through closures (:meth:`sykit._run.state.RunState.open`): the
simulated host's planning function, the accessor :func:`peek_truth` calls (which marks the request
first), and the records' fill-in, which writes the grades and the dataset's analysis columns into
the records when they are handed over or framed — after the request ended, never while an algorithm
could read them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

from sykit._base.errors import ArgumentTypeError, SykitError
from sykit._base.rng import uniforms

__all__ = ["TruthTable", "TruthView", "graded", "peek_truth"]


def graded(quality: float | None) -> TypeGuard[float]:
    """True when ``quality`` is a grade (not None, not NaN)."""
    return quality is not None and not math.isnan(quality)


class TruthView:
    """What the simulation knows about one request: the quality each model's answer would earn, and
    its length.

    From the dataset's ground truth where it covers the model (NaN when the dataset has the model
    but no grade for this request); for a model the dataset does not cover, from the profile's
    ``quality`` with one keyed difficulty draw per request (so a stronger model is right whenever a
    weaker one is); None when nothing says.
    """

    __slots__ = ("_profiles", "_request_id", "_seed", "truth")

    def __init__(
        self,
        truth: Any,
        profiles: Mapping[str, Any],
        seed: int,
        request_id: Any,
    ) -> None:
        self.truth = truth
        self._profiles = profiles
        self._seed = seed
        self._request_id = request_id

    def quality(self, model: str) -> float | None:
        """The quality of ``model``'s answer to this request: a grade, NaN (ungraded) or None."""
        if self.truth is not None and model in self.truth.quality:
            return float(self.truth.quality[model])
        return _profile_grade(self._profiles, self._seed, self._request_id, model)

    def output_tokens(self, model: str) -> int | None:
        """The dataset's answer length for ``model``, when it has one."""
        if self.truth is None:
            return None
        known = self.truth.output_tokens.get(model)
        return None if known is None else int(known)

    def expected_cost_usd(
        self, model: str, input_tokens: int, max_output_tokens: int | None
    ) -> float:
        """What an answer from ``model`` would cost: the dataset's answer length where known, else
        the profile's mean output length, capped by ``max_output_tokens``."""
        profile = self._profiles[model]
        out = self.output_tokens(model)
        if out is None:
            out = profile.output_tokens.mean
        if max_output_tokens is not None:
            out = min(out, max_output_tokens)
        return float(profile.cost_usd(input_tokens, int(out)))


def _profile_grade(
    profiles: Mapping[str, Any], seed: int, request_id: Any, model: str
) -> float | None:
    """The grade of ``model``'s answer from its profile's ``quality`` (a keyed difficulty draw per
    request: a stronger model is right whenever a weaker one is), None when nothing says."""
    profile = profiles.get(model)
    if profile is None or profile.quality is None:
        return None
    difficulty = uniforms(seed, request_id, "difficulty")[0]
    return 1.0 if difficulty < profile.quality else 0.0


class TruthTable:
    """A run's ground truth by request index (the position of the request in the run's list).

    Made when the run opens, over the runner's own list of requests, and held only by the closures
    the run reaches it through (see the module docstring): never an attribute of anything an
    algorithm can walk to."""

    __slots__ = ("_grades", "has_columns", "has_grades", "has_truth", "items", "profiles", "seed")

    def __init__(
        self, items: Sequence[tuple[Any, Any, Any]], profiles: Mapping[str, Any], seed: int
    ) -> None:
        self.items = items  # (request id, request, truth): the run's own list, not a copy
        self.profiles = profiles
        self.seed = seed
        has_truth = getattr(items, "has_truth", None)  # a dataset's items know, unbuilt
        if has_truth is None:
            known = [item[2] for item in items if item[2] is not None]
            self.has_truth = bool(known)
            #: whether any request has analysis columns (the dataset's other columns)
            self.has_columns = any(truth.columns for truth in known)
        else:
            self.has_truth = bool(has_truth)
            self.has_columns = bool(getattr(items, "has_columns", True))
        #: whether any answer can have a grade: from the dataset, or from a profile's ``quality``
        self.has_grades = self.has_truth or any(p.quality is not None for p in profiles.values())
        # a dataset's grades as a matrix (its models' columns, requests × models): grading reads
        # them without building the requests again
        table = getattr(items, "grades", None)
        self._grades = table() if callable(table) else None

    def view(self, index: int) -> TruthView:
        """What the simulation knows about request ``index``."""
        request_id, _, truth = self.items[index]
        return TruthView(truth, self.profiles, self.seed, request_id)

    def grade(self, index: int, model: str) -> float | None:
        """The quality of ``model``'s answer to request ``index``: as :meth:`TruthView.quality`."""
        if self._grades is not None:
            columns, matrix = self._grades
            column = columns.get(model)
            if column is not None:  # the dataset's grade (NaN: the dataset has none)
                return float(matrix[index, column])
            request_id = self.items.ids[index]  # type: ignore[attr-defined]  # a dataset's items
            if type(request_id) is not str:
                request_id = int(request_id)  # as the run's rows hold it: a Python int
            return _profile_grade(self.profiles, self.seed, request_id, model)
        truth = self.items[index][2]
        if truth is not None and model in truth.quality:
            return float(truth.quality[model])  # the dataset's grade: the common case, no view
        return self.view(index).quality(model)

    def grades(self, indices: np.ndarray, codes: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """:meth:`grade` of each request ``indices[k]`` and model ``names[codes[k]]`` as an
        array (NaN where it is None): a dataset's grades read from its matrix at once, the
        others one by one."""
        out = np.full(len(indices), math.nan)
        rest: Sequence[int] = range(len(indices))
        if self._grades is not None and len(indices):
            columns, matrix = self._grades
            column = np.asarray([columns.get(m, -1) for m in names], dtype=np.int64)[codes]
            known = column >= 0
            out[known] = matrix[indices[known], column[known]]
            rest = np.flatnonzero(~known).tolist()
        for k in rest:
            value = self.grade(int(indices[k]), names[int(codes[k])])
            if value is not None:
                out[k] = value
        return out


def peek_truth(driver: Any) -> TruthView:
    """Simulation only: the ground truth of the request ``driver`` serves.

    For components that stand in for something a real router would learn or measure (an oracle
    bound, a simulated router score). Calling it marks the request as read-the-truth: the strategy's
    rows get ``reads_truth=True``, its summary ``realizable=False``, and plots draw it as a bound,
    not as a strategy you could deploy. On an ``HttpHost`` there is no truth and it raises.

        view = sy.strategies.peek_truth(driver)
        view.quality("large")      # 1.0, 0.0, a grade in [0, 1], NaN (ungraded) or None
    """
    state = getattr(driver, "_state", None)
    if state is None or not hasattr(state, "run"):
        raise ArgumentTypeError(
            f"peek_truth needs the algorithm's driver, got {type(driver).__name__}"
        )
    run = state.run
    if not getattr(run.host, "virtual", False):
        raise SykitError(
            "peek_truth is simulation-only: a real host has no ground truth to read. Strategies that "
            "read the truth (oracle, simulated scores) run on a SimHost."
        )
    view = getattr(run, "truth_view", None)
    if view is None:
        raise SykitError("peek_truth: this run has not started yet")  # a bug in sykit
    return view(state)  # marks the request, then reads
