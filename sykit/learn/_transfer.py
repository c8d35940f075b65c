"""Out of distribution: fit a router on one table, judge it on another it never saw.

:func:`~sykit.learn._crossfit.cross_fit` measures a router on traffic like its training data;
:func:`transfer` fits it once on ``train`` and routes every request of ``test`` with it, through
the same sweep, curve, cluster bootstrap and random baseline, so the two figures compare directly.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit.datasets import Dataset
from sykit.datasets._splits import DATASET_GROUP, DatasetGroup, GroupBy, group_codes
from sykit.learn._crossfit import CrossFit, _check_pair, check_learner, judge, prompt_keys
from sykit.learn._training import check_seed
from sykit.strategies._router_score import SWEEP_SHARES

__all__ = ["Transfer", "transfer"]


@dataclass(frozen=True, repr=False)
class Transfer(CrossFit):
    """A :class:`CrossFit` of one router fitted on all of a training table and judged on every
    request of another (``folds`` is 1). ``shared`` counts the test requests whose prompt text is
    also in the training table: any makes the result not ``realizable``."""

    shared: int = 0

    _unrealizable = "not realizable"

    def _extent(self) -> str:
        return f"{len(self.curve)} shares; {self.shared} test prompts seen in train"

    def summary(self) -> pd.DataFrame:
        """:meth:`CrossFit.summary`'s row, with ``shared``."""
        return super().summary().assign(shared=self.shared)


def transfer(
    learner: Any,
    *,
    train: Dataset,
    test: Dataset,
    weak: str | None = None,
    strong: str | None = None,
    seed: int = 0,
    group: GroupBy | DatasetGroup = DATASET_GROUP,
    shares: Sequence[float] = SWEEP_SHARES,
    host: Any = None,
    resamples: int = 2000,
    progress: bool | None = False,
) -> Transfer:
    """Fit ``learner`` on all of ``train`` and judge it on ``test``, as :func:`cross_fit` judges
    a held-out fold: thresholds calibrated on ``test``'s scores, APGR/AIQ pooled over ``test``'s
    requests with a bootstrap of its clusters (``group``, default as in :func:`cross_fit`), the
    random router on the same requests.

        routellm = sy.datasets.load("routellm").filter(contaminated=False)
        out = sy.learn.transfer(sy.learn.Knn(), train=routellm.filter(benchmark=["gsm8k", "mmlu"]),
                                test=routellm.filter(benchmark="mt_bench"))
        out.apgr, sy.learn.cross_fit(sy.learn.Knn(), routellm.filter(benchmark="mt_bench")).apgr

    Both tables need grades for ``weak`` and ``strong`` (default: ``test``'s two models, the
    better on average strong); an :class:`ArgumentError` names what is missing where. Test
    requests whose prompt text is also in ``train`` (compared as :func:`cross_fit` groups
    identical prompts) are kept and counted in ``shared``, with a ``UserWarning``, and the result
    is not ``realizable``; leave them out of ``test`` for an honest figure.
    """
    for role, data in (("train", train), ("test", test)):
        if not isinstance(data, Dataset):
            raise ArgumentTypeError(
                f"{role} must be a sy.datasets.Dataset, got {type(data).__name__}"
            )
        if not len(data):
            raise ArgumentError(f"{role} has no rows: did a filter leave it empty?")

    check_learner(learner)
    seed = check_seed(seed, "seed")
    if group is not DATASET_GROUP:  # the clusters of test's bootstrap
        group_codes(test.frame, group, "transfer's test")

    def need(pair: tuple[str | None, ...]) -> None:
        for role, data in (("train", train), ("test", test)):
            graded = data.quality.notna().any()  # per model: any request graded
            has = [m for m in data.models if graded.get(m, False)]
            missing = [m for m in pair if m is not None and m not in has]
            if missing:
                raise ArgumentError(
                    f"{role} has no grades for {', '.join(map(repr, missing))}: both tables need "
                    f"the weak and the strong model (the models {role} has grades for: {has})"
                )

    need((weak, strong))
    weak, strong = _check_pair(test, weak, strong)
    need((weak, strong))
    if not test.quality[[weak, strong]].notna().all(axis=1).any():
        raise ArgumentError(
            f"no request of test is graded for both {weak!r} and {strong!r} (of {len(test)}): "
            "the router is judged on the gap between them, request by request; give a test "
            "table with requests graded for both"
        )
    seen = set(prompt_keys(train.frame))
    shared = sum(key in seen for key in prompt_keys(test.frame))
    if shared:
        warnings.warn(
            f"{shared} of the {len(test)} test requests have a prompt text that is also in train: "
            "the router is judged on prompts it was fitted to, so the result is not realizable; "
            'leave them out: test.filter(lambda f: ~f["prompt"].isin(train.frame["prompt"]))',
            UserWarning,
            stacklevel=2,
        )
    judged = judge(
        learner,
        test,
        lambda group: [(train, test)],
        weak,
        strong,
        shares=shares,
        seed=seed,
        group=group,
        host=host,
        resamples=resamples,
        progress=progress,
        folds=1,
    )
    fields = {f.name: getattr(judged, f.name) for f in dataclasses.fields(judged)}
    fields["realizable"] = judged.realizable and not shared
    return Transfer(**fields, shared=shared)
