"""Frames built from shared parts: the runs of one comparison share their ids' dtype, and
concatenating parts of one categorical dtype keeps it (missing rows where a part lacks it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import sykit as sy
from sykit._results.result import concat_frames
from sykit._run.frames import _ids


def test_runs_of_one_comparison_share_their_ids_dtype() -> None:
    requests = [sy.Request("a", id="x"), sy.Request("b", id="y"), sy.Request("c", id="z")]
    host = sy.SimHost({"A": sy.ModelProfile(), "B": sy.ModelProfile()})
    cmp = sy.compare(
        {"a": sy.strategies.single("A"), "b": sy.strategies.single("B")},
        requests,
        host=host,
        progress=False,
    )
    first, second = (r.requests["request_id"] for r in cmp.results)
    assert first.dtype is second.dtype
    merged = cmp.requests["request_id"]
    assert list(merged.cat.categories) == ["x", "y", "z"]
    assert merged.astype(str).tolist() == ["x", "y", "z", "x", "y", "z"]


def test_ids_are_made_again_for_another_list_of_equal_length() -> None:
    assert _ids(["p", "q"], np.array([1, 0])).astype(str).tolist() == ["q", "p"]
    assert _ids(["r", "s"], np.array([1, 0])).astype(str).tolist() == ["s", "r"]
    assert _ids([5, 7], np.array([1, 1])).tolist() == [7, 7]


def test_a_shared_categorical_dtype_is_kept_and_a_missing_part_is_missing() -> None:
    dtype = pd.CategoricalDtype(["u", "v"])
    one = pd.DataFrame(
        {"strategy": pd.Categorical(["s1"] * 2), "c": pd.Categorical(["v", "u"], dtype=dtype)}
    )
    two = pd.DataFrame({"strategy": pd.Categorical(["s2"])})
    three = pd.DataFrame(
        {"strategy": pd.Categorical(["s3"]), "c": pd.Categorical(["v"], dtype=dtype)}
    )
    merged = concat_frames([one, two, three], ["s1", "s2", "s3"])
    assert merged["c"].dtype == dtype
    assert merged["c"].tolist()[:2] == ["v", "u"]
    assert pd.isna(merged["c"].iloc[2])
    assert merged["c"].iloc[3] == "v"
