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


def test_a_comparisons_requests_are_its_runs_frames_one_under_the_other() -> None:
    """Made from the runs' columns, or from a run's frame already made: the same frame."""
    data = sy.datasets.load("routellm").filter(lambda f: f.index < 200)
    host = sy.SimHost(sy.profiles.from_catalog(data.models), policy=sy.HostPolicy(cooldown_s=0))
    weak, strong = "mixtral-8x7b-instruct-v0.1", "gpt-4-1106-preview"
    lineup = {
        "weak": sy.strategies.single(weak),
        "random": sy.strategies.weighted_random([weak, strong]),
        "threshold": sy.strategies.threshold_router(
            weak, strong, score=lambda r: len(r.prompt) % 5, threshold=2
        ),
        "cascade": sy.strategies.cascade(weak, strong, judge=strong),
    }
    cmp = sy.compare(lineup, data, host=host, progress=False, seeds=(0, 1))
    again = sy.compare(lineup, data, host=host, progress=False, seeds=(0, 1))
    kinds = {type(r.__dict__["_requests"]).__name__ for r in again.results}
    assert kinds == {"FrameColumns"}  # no run's frame made yet
    again.results[2].requests  # noqa: B018  # one run's frame made first
    expected = concat_frames([r.requests.assign(seed=r.seed) for r in cmp.results], list(lineup))
    pd.testing.assert_frame_equal(cmp.requests, expected, check_exact=True)
    pd.testing.assert_frame_equal(again.requests, expected, check_exact=True)
    assert list(expected.columns[-4:]) == [
        "seed",
        "evidence_score",
        "evidence_threshold",
        "evidence_verdict",
    ]


def test_metadata_and_evidence_columns_come_in_request_order_on_every_engine(tmp_path) -> None:
    """Requests that finish in another order than they came (a long prompt first), with metadata
    and evidence keys of their own: every engine, a spilling run and any concurrency give the
    columns in the order the requests came, not the order they finished."""
    latency = sy.Latency(ttft=0.1, tokens_per_s=50, prefill_tokens_per_s=1000)
    host = sy.SimHost({"m": sy.ModelProfile(latency=latency)})
    requests = [
        sy.Request("slow", input_tokens=10_000, metadata={"a": 1}),
        sy.Request("fast", metadata={"b": 2}),
        sy.Request("also fast", metadata={"c": 3, "a": 4}),
    ]

    def route(request: sy.Request) -> str:
        return "m"

    static = sy.strategies.static(route, name="static")
    frames = {
        engine: sy.run(static, requests, host=host, engine=engine, progress=False).requests
        for engine in ("bulk", "kernel", "asyncio")
    }
    one_at_a_time = sy.run(
        static, requests, host=host, engine="kernel", concurrency=1, progress=False
    ).requests
    frames["spilled"] = sy.run(
        static, requests, host=host, engine="kernel", spill=tmp_path / "run", progress=False
    ).requests
    assert list(frames["kernel"].columns[-3:]) == ["a", "b", "c"]
    assert frames["kernel"]["end_s"].iloc[0] > frames["kernel"]["end_s"].iloc[1]
    for name, frame in frames.items():
        pd.testing.assert_frame_equal(frame, frames["bulk"], check_exact=True, obj=name)
    assert list(one_at_a_time.columns) == list(frames["bulk"].columns)
