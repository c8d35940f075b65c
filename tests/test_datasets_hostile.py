"""Datasets, splits, synthetic traffic and traces under unusual but legal input, and under wrong
input: every call either works or says which argument was wrong and what to do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit.datasets import _traces


@pytest.fixture(scope="module")
def table():
    """12 rows in 6 pairs, two topics; a datetime column that is empty in half the rows."""
    when = pd.to_datetime(["2024-01-01", None] * 6)
    frame = pd.DataFrame(
        {
            "q": [f"question {i}" for i in range(12)],
            "pair": [f"p{i // 2}" for i in range(12)],
            "topic": ["a", "b", "a"] * 4,
            "when": when,
            "small_ok": [float(i % 2) for i in range(12)],
            "large_ok": [1.0] * 12,
        }
    )
    return sy.datasets.from_frame(
        frame,
        prompt="q",
        quality={"small": "small_ok", "large": "large_ok"},
        metadata=["topic"],
        group="pair",
    )


def ids(ds) -> list:
    return ds.frame["id"].tolist()


# -- seeds -------------------------------------------------------------------------------------


def test_negative_seeds_sample_split_and_fold_reproducibly(table):
    assert ids(table.sample(5, seed=-1)) == ids(table.sample(5, seed=-1))
    assert ids(table.sample(5, seed=-7, stratify="topic")) == ids(
        table.sample(5, seed=-7, stratify="topic")
    )
    train, test = table.split(0.5, seed=-3)
    again = table.split(0.5, seed=-3)
    assert ids(test) == ids(again[1]) and ids(train) == ids(again[0])
    folds = [ids(te) for _, te in table.folds(3, seed=-2)]
    assert folds == [ids(te) for _, te in table.folds(3, seed=-2)]
    assert sorted(i for fold in folds for i in fold) == sorted(ids(table))


def test_negative_seeds_are_streams_of_their_own(table):
    drawn = {tuple(ids(table.sample(6, seed=s))) for s in (-3, -2, -1, 1, 2, 3)}
    assert len(drawn) == 6


def test_seeds_at_or_above_zero_draw_as_before(table):
    expected = np.sort(np.random.default_rng(5).choice(len(table), size=4, replace=False))
    assert ids(table.sample(4, seed=5)) == [ids(table)[i] for i in expected]


def test_negative_seeds_make_synthetic_traffic_and_trace_draws():
    one, two = sy.datasets.synthetic(6, seed=-4), sy.datasets.synthetic(6, seed=-4)
    assert one.frame.equals(two.frame)
    assert one.frame["id"].iloc[0] == "synthetic/-4/0"
    trace = sy.traffic.Trace(times=[0.0, 1.0, 2.0], input_tokens=[1, 2, 3], output_tokens=[4, 5, 6])
    first = [r.input_tokens for r in trace.requests(models=["m"], n=5, seed=-1)]
    assert first == [r.input_tokens for r in trace.requests(models=["m"], n=5, seed=-1)]


# -- groups and strata -------------------------------------------------------------------------


def test_group_function_reading_a_missing_column_names_it(table):
    with pytest.raises(ArgumentError, match=r"folds: the group function raised KeyError 'nope'"):
        table.folds(2, group=lambda row: row["nope"])
    with pytest.raises(ArgumentError, match=r"split: .*KeyError 'pairs'.*columns are: id, prompt"):
        table.split(0.5, group=lambda row: row["pairs"])


def test_group_function_keeps_its_own_key_errors(table):
    def lookup(row):
        return {"a": 1}["topic"]  # the function's own KeyError, for a name the rows have

    with pytest.raises(KeyError, match="topic"):
        table.folds(2, group=lookup)


def test_missing_datetimes_in_a_group_column_are_each_a_group_alone(table):
    folds = table.folds(3, group="when", seed=0)
    empty = sorted(int(te.frame["when"].isna().sum()) for _, te in folds)
    assert empty == [0, 3, 3]  # six rows alone, spread evenly; not one group of six


def test_a_group_function_returning_nat_puts_each_row_alone(table):
    folds = table.folds(4, group=lambda row: pd.NaT, seed=0)
    assert [len(te) for _, te in folds] == [3, 3, 3, 3]


def test_sample_stratify_must_be_a_column_name(table):
    with pytest.raises(ArgumentTypeError, match=r"sample: stratify must be a column name"):
        table.sample(3, stratify=["topic"])


# -- rename_models -----------------------------------------------------------------------------


@pytest.mark.parametrize("new", [5, None, ""])
def test_rename_models_refuses_names_that_are_not_text(table, new):
    with pytest.raises(ArgumentTypeError, match=r"new name of 'small' must be a non-empty string"):
        table.rename_models({"small": new})


# -- slices ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        (slice(0.5, 2), ArgumentTypeError, r"dataset slice start must be an int or None"),
        (slice("a", None), ArgumentTypeError, r"dataset slice start must be an int or None"),
        (slice(None, None, 0), ArgumentError, r"dataset slice step must not be 0"),
    ],
)
def test_slices_need_int_bounds_and_a_step(table, key, error, message):
    with pytest.raises(error, match=message):
        table[key]


def test_slices_take_numpy_ints(table):
    assert ids(table[np.int64(1) : np.int8(3)]) == ids(table)[1:3]


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["RouteLLM", " routellm ", "ROUTELLM\n"])
def test_load_ignores_case_and_surrounding_spaces(name):
    assert sy.datasets.load(name) is sy.datasets.load("routellm")


def test_load_reads_a_dash_as_an_underscore():
    assert sy.datasets.load("MMLU-Pro") is sy.datasets.load("mmlu_pro")


def test_load_still_names_what_it_does_not_know():
    with pytest.raises(ArgumentError, match=r"unknown dataset ' nope '; shipped datasets"):
        sy.datasets.load(" nope ")


def test_azure_trace_ignores_case_and_surrounding_spaces():
    assert sy.datasets.azure_trace(" Code ") is sy.datasets.azure_trace("code")


# -- synthetic ---------------------------------------------------------------------------------


def test_synthetic_shares_near_the_float_limit_keep_their_ratio():
    ds = sy.datasets.synthetic(10, sizes={"short": 1.5e308, "long": 1.5e308})
    assert ds.frame["size"].value_counts().to_dict() == {"short": 5, "long": 5}


def test_synthetic_refuses_two_size_classes_of_one_name():
    tiny = sy.dists.LogNormal(20, p95=60)
    with pytest.raises(ArgumentError, match=r"two size classes are named '5'"):
        sy.datasets.synthetic(4, sizes={5: (1.0, tiny), "5": (1.0, tiny)})


# -- traces ------------------------------------------------------------------------------------


@pytest.fixture
def trace():
    return sy.traffic.Trace(
        times=[0.0, 1.0, 2.0, 1000.0], input_tokens=[1, 2, 3, 4], output_tokens=[5, 6, 7, 8]
    )


def test_arrivals_for_refuses_a_negative_count(trace):
    with pytest.raises(ArgumentError, match=r"requests must be a count ≥ 0, got -1"):
        trace.arrivals_for(-1)


def test_arrivals_for_takes_numpy_counts(trace):
    assert trace.arrivals_for(np.int64(2)) == [0.0, 1.0]
    assert trace.arrivals_for(0) == []


def test_counts_refuses_more_bins_than_it_can_hold(trace):
    with pytest.raises(ArgumentError, match=r"counts: bin_s=1e-09 would make more than"):
        trace.counts(1e-9)


def test_counts_makes_up_to_the_most_bins(trace, monkeypatch):
    monkeypatch.setattr(_traces, "MAX_BINS", 100)
    assert len(trace.counts(1000.0 / 99)) == 100
    with pytest.raises(ArgumentError, match=r"more than 100 bins.*use bin_s ≥ 10.1"):
        trace.counts(10.0)


def test_summary_of_a_trace_spread_over_ages(trace):
    slow = trace.scaled(rate=1e-12)  # the last arrival 10**15 s in
    assert slow.summary()["busiest_second"] == 1
    assert trace.summary()["busiest_second"] == 1


def test_scaled_past_the_float_range_names_the_rate(trace):
    with pytest.raises(ArgumentError, match=r"scaled: dividing the times by .* higher rate"):
        trace.scaled(rate=1e-307)
