"""A dataset's requests reach a run a block at a time: the same records as a list of the same
requests, with never more than a few blocks of them built at once."""

from __future__ import annotations

import weakref

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import sykit as sy
from sykit import strategies as st
from sykit._run.engines.bulk import _run as bulk_run
from sykit._run.inputs import DEFAULT_CONCURRENCY
from sykit.datasets import _dataset, _items
from sykit.datasets._dataset import Dataset


@pytest.fixture(scope="module")
def data():
    ds = sy.datasets.load("routellm")
    return ds.sample(300, seed=1, stratify="benchmark")


def _host(ds):
    faults = sy.Faults(unavailable=0.05, rate_limit=0.02)
    profiles = sy.profiles.from_catalog([*ds.models, "gpt-4o-mini"])
    first = ds.models[-1]
    profiles[first] = profiles[first].replace(faults=faults)
    return sy.SimHost(profiles, judge=sy.Judge(accuracy=0.8), policy=sy.HostPolicy(cooldown_s=0))


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
def test_a_dataset_and_the_list_of_its_requests_give_the_same_frames(data, engine):
    strong, weak = data.models[0], data.models[-1]
    lineup = {
        "chain": st.fallback_chain([weak, strong]),
        "random": st.weighted_random({weak: 0.6, strong: 0.4}),
        "cascade": st.cascade(weak, strong, judge="gpt-4o-mini"),
    }
    host = _host(data)
    fresh = sy.datasets.load("routellm").sample(300, seed=1, stratify="benchmark")
    listed = list(fresh)  # built and kept, as before
    by_dataset = sy.compare(lineup, data, host=host, engine=engine, progress=False)
    by_list = sy.compare(lineup, listed, host=host, engine=engine, progress=False)
    assert [r.engine for r in by_dataset.results] == [r.engine for r in by_list.results]
    assert_frame_equal(by_dataset.attempts, by_list.attempts)
    assert_frame_equal(by_dataset.requests, by_list.requests)
    assert "benchmark" in by_dataset.requests.columns  # the dataset's columns still come through


def test_a_run_does_not_keep_a_datasets_requests(monkeypatch):
    """A run over more rows than a dataset keeps builds them a block at a time and holds only a
    few blocks."""
    monkeypatch.setattr(_dataset, "KEPT_ROWS", 4_999)
    monkeypatch.setattr(_items, "BLOCK", 64)
    monkeypatch.setattr(_items, "HELD", 2)
    monkeypatch.setattr(bulk_run, "_BLOCK", 256)  # the bulk engine holds a block of its own
    frame = pd.DataFrame({"prompt": [f"question {i}" for i in range(5_000)]})
    ds = sy.datasets.from_frame(frame, prompt="prompt", name="many")
    alive: list[weakref.ref] = []
    peak = {"n": 0}
    build = Dataset._build

    def counting(self, rows):
        built = build(self, rows)
        alive[:] = [ref for ref in alive if ref() is not None]  # freed as soon as dropped
        alive.extend(weakref.ref(request) for request, _ in built)
        peak["n"] = max(peak["n"], len(alive))
        return built

    monkeypatch.setattr(Dataset, "_build", counting)
    host = sy.SimHost({"a": sy.ModelProfile()})
    for engine in ("bulk", "kernel"):
        peak["n"] = 0
        result = sy.run(st.single("a"), ds, host=host, engine=engine, progress=False)
        assert len(result.requests) == 5_000
        # the blocks held (on the bulk engine, enough for its own block), the one being built
        # and the requests in flight
        held = 64 * 3 + (256 if engine == "bulk" else 0)
        assert peak["n"] <= held + DEFAULT_CONCURRENCY, engine
    assert not ds._cache  # nor does it fill the dataset's own cache


def count_builds(monkeypatch) -> dict[str, int]:
    """Count the rows every dataset turns into requests from now on (``["rows"]``)."""
    built = {"rows": 0}
    build = Dataset._build

    def counting(self, rows):
        built["rows"] += len(rows)
        return build(self, rows)

    monkeypatch.setattr(Dataset, "_build", counting)
    return built


def test_a_small_dataset_builds_each_request_once_across_runs_and_folds(monkeypatch):
    """A comparison's strategies and a cross-fit's folds share the requests a dataset of at most
    KEPT_ROWS rows built: each row becomes a request once, and every run sees the same rows."""
    frame = pd.DataFrame({"prompt": [f"question {i}" for i in range(300)], "q": [0.5] * 300})
    ds = sy.datasets.from_frame(frame, prompt="prompt", quality={"a": "q"}, name="few")
    built = count_builds(monkeypatch)
    host = sy.SimHost({"a": sy.ModelProfile()})
    lineup = {"x": st.single("a"), "y": st.single("a")}
    for engine in ("bulk", "kernel"):
        comparison = sy.compare(lineup, ds, host=host, engine=engine, progress=False)
        assert len(comparison.requests) == 600
        assert comparison.requests["quality"].eq(0.5).all()
    for train, test in ds.folds(3, seed=0):
        assert len(list(train)) + len(list(test)) == 300
    assert built["rows"] == 300


def test_a_bulk_run_over_a_large_dataset_builds_each_row_once(monkeypatch):
    """Routing, placing and recording a block of requests, and grading every answer, read each
    row's request once (the grades come from the table), though the dataset keeps none."""
    monkeypatch.setattr(_dataset, "KEPT_ROWS", 100)
    monkeypatch.setattr(_items, "BLOCK", 64)
    monkeypatch.setattr(bulk_run, "_BLOCK", 256)
    frame = pd.DataFrame(
        {"prompt": [f"question {i}" for i in range(1_000)], "q": np.arange(1_000) % 2 * 1.0}
    )
    ds = sy.datasets.from_frame(frame, prompt="prompt", quality={"a": "q"}, name="graded")
    built = count_builds(monkeypatch)
    host = sy.SimHost({"a": sy.ModelProfile(), "b": sy.ModelProfile(quality=0.5)})
    result = sy.run(st.single("a"), ds, host=host, engine="bulk", progress=False)
    assert built["rows"] == 1_000
    assert result.requests["quality"].tolist() == (np.arange(1_000) % 2 * 1.0).tolist()
    answered = result.attempts[result.attempts["status"] == "ok"]
    assert answered["quality"].tolist() == (answered["request_id"] % 2 * 1.0).tolist()
    # a model the table does not grade is graded from its profile, as for a list of requests
    both = sy.run(st.single("b"), ds, host=host, engine="bulk", progress=False)
    listed = sy.run(st.single("b"), list(ds), host=host, engine="bulk", progress=False)
    assert both.requests["quality"].tolist() == listed.requests["quality"].tolist()


def test_ids_that_are_the_same_as_text_are_refused():
    frame = pd.DataFrame({"prompt": ["a", "b"], "id": [1, "1"]})
    ds = sy.datasets.from_frame(frame, prompt="prompt", id="id", name="mixed")
    with pytest.raises(sy.ArgumentError, match="same as text"):
        sy.run(st.single("a"), ds, host=sy.SimHost({"a": sy.ModelProfile()}))


def test_the_items_read_by_position_in_any_order():
    frame = pd.DataFrame({"prompt": [f"q{i}" for i in range(5_000)]})
    ds = sy.datasets.from_frame(frame, prompt="prompt", name="many")
    items = ds._run_items()
    listed = list(ds)
    for i in (4_999, 0, 2_500, 2_049, 2_048, -1, 17):
        request_id, request, truth = items[i]
        assert request_id == listed[i].id and request.prompt == listed[i].prompt and truth is None
    assert [item[0] for item in items] == [r.id for r in listed]
    with pytest.raises(IndexError):
        items[5_000]


def test_a_spilled_run_of_a_dataset_reads_back_the_frames_kept_in_memory(data, tmp_path):
    host = _host(data)
    chain = st.fallback_chain([data.models[-1], data.models[0]])
    kept = sy.run(chain, data, host=host, progress=False)
    spilled = sy.run(chain, data, host=host, progress=False, spill=tmp_path)
    assert_frame_equal(spilled.attempts, kept.attempts)
    assert_frame_equal(spilled.requests, kept.requests)
    numbered = sy.datasets.from_frame(
        pd.DataFrame({"prompt": ["a", "b", "c"], "n": [7, 3, 11]}), prompt="prompt", id="n"
    )
    host = sy.SimHost({"m": sy.ModelProfile()})
    spilled = sy.run(st.single("m"), numbered, host=host, spill=tmp_path / "numbered")
    kept = sy.run(st.single("m"), numbered, host=host)
    assert_frame_equal(spilled.requests, kept.requests)
    assert kept.requests["request_id"].tolist() == [7, 3, 11]  # integer ids stay integers
    assert kept.requests["request_id"].dtype.kind == "i"


def test_positions_read_in_any_order_and_form_give_the_same_items(monkeypatch):
    """The block read last answers first; every other form of position still works, and a
    position past the end is an IndexError however it is reached."""
    monkeypatch.setattr(_items, "BLOCK", 8)
    ds = sy.datasets.load("routellm").sample(20, seed=3)
    items = ds._run_items()
    in_order = [items[k] for k in range(20)]
    assert [item[0] for item in in_order] == list(items.ids)
    assert items[np.int64(19)][0] == in_order[19][0]  # a NumPy integer
    assert items[-1][0] == in_order[19][0] and items[-20][0] == in_order[0][0]
    assert [item[0] for item in items[3:6]] == [item[0] for item in in_order[3:6]]
    assert items[5][0] == in_order[5][0]  # back to an earlier block
    for position in (20, 23, -21):
        with pytest.raises(IndexError):
            items[position]
    items[19]  # the last block, shorter than a block, read last
    with pytest.raises(IndexError):
        items[20]
