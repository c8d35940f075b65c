"""Properties of the evaluation machinery on random inputs: folds partition and keep groups whole,
calibrated thresholds hit their share exactly whatever the ties, APGR is computed alike row by row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sykit as sy
from sykit._results.curve_stats import apgr, apgr_of

SETTINGS = settings(max_examples=60, deadline=None)


def dataset(groups: list[int]) -> sy.datasets.Dataset:
    frame = pd.DataFrame(
        {
            "prompt": [f"prompt {i}" for i in range(len(groups))],
            "g": groups,
            "ok": [float(i % 2) for i in range(len(groups))],
        }
    )
    return sy.datasets.from_frame(frame, prompt="prompt", quality={"m": "ok"}, group="g")


@SETTINGS
@given(
    groups=st.lists(st.integers(0, 12), min_size=2, max_size=60),
    k=st.integers(2, 6),
    seed=st.integers(0, 2**16),
)
def test_folds_partition_the_rows_and_never_split_a_group(groups, k, seed):
    data = dataset(groups)
    n_groups = len(set(groups))
    if k > n_groups:
        with pytest.raises(sy.ArgumentError):
            data.folds(k, seed=seed)
        return
    folds = data.folds(k, seed=seed)
    assert len(folds) == k
    tested: list[str] = []
    biggest = max(pd.Series(groups).value_counts())
    sizes = []
    for train, test in folds:
        train_ids, test_ids = set(train.frame["id"]), set(test.frame["id"])
        assert train_ids.isdisjoint(test_ids)
        assert train_ids | test_ids == set(data.frame["id"])
        assert set(train.frame["g"]).isdisjoint(test.frame["g"])
        tested += list(test_ids)
        sizes.append(len(test_ids))
    assert sorted(tested) == sorted(data.frame["id"])  # each row held out exactly once
    assert max(sizes) - min(sizes) <= biggest  # as even as whole groups allow
    assert [set(t.frame["id"]) for _, t in data.folds(k, seed=seed)] == [
        set(t.frame["id"]) for _, t in folds
    ]


@SETTINGS
@given(
    scores=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=80),
    share=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**16),
)
def test_a_calibrated_threshold_sends_exactly_the_share_asked_for(scores, share, seed):
    requests = [sy.Request(f"q{i}", id=i) for i in range(len(scores))]
    by_id = dict(zip(range(len(scores)), scores, strict=True))
    threshold = sy.strategies.calibrate(lambda r: by_id[r.id], requests, share, seed=seed)
    strong = sum(threshold.goes_strong(by_id[r.id], r.id) for r in requests)
    assert strong == max(1, round(share * len(scores)))


@SETTINGS
@given(
    rows=st.integers(1, 4),
    points=st.integers(1, 9),
    data=st.data(),
)
def test_apgr_of_rows_equals_the_scalar_formula(rows, points, data):
    unit = st.floats(0.0, 1.0)
    share = np.array([[data.draw(unit) for _ in range(points)] for _ in range(rows)])
    quality = np.array([[data.draw(unit) for _ in range(points)] for _ in range(rows)])
    weak = np.array([data.draw(st.floats(0.0, 0.5)) for _ in range(rows)])
    strong = np.array([data.draw(st.floats(0.6, 1.0)) for _ in range(rows)])
    got = apgr_of(share, quality, weak, strong)
    for r in range(rows):
        assert got[r] == pytest.approx(
            apgr(share[r], quality[r], weak_quality=weak[r], strong_quality=strong[r]), abs=1e-9
        )
