"""Train/test splits and folds: exact partitions, whole groups, even sizes, seeded, loud on bad
input, and sub-datasets that hold nothing of the other side."""

from __future__ import annotations

import pandas as pd
import pytest

import sykit as sy
from sykit._base.errors import ArgumentError, ArgumentTypeError


@pytest.fixture(scope="module")
def routellm():
    return sy.datasets.load("routellm")


@pytest.fixture(scope="module")
def table():
    """60 rows in 20 groups of 1 to 5 rows (group sizes cycle), three topics."""
    sizes = [1, 2, 3, 4, 5] * 4
    rows = []
    for g, size in enumerate(sizes):
        for j in range(size):
            rows.append(
                {
                    "q": f"question {g}.{j}",
                    "family": f"f{g}",
                    "topic": ["a", "b", "c"][g % 3],
                    "ok": float((g + j) % 2),
                }
            )
    return sy.datasets.from_frame(pd.DataFrame(rows), prompt="q", quality={"m": "ok"})


def ids(ds) -> set:
    return set(ds.frame["id"])


def assert_partition(whole, parts) -> None:
    seen: list = []
    for part in parts:
        seen.extend(part.frame["id"])
    assert len(seen) == len(set(seen)) == len(whole)
    assert set(seen) == ids(whole)


# -- the group column of the shipped table -----------------------------------------------------


def test_routellm_groups_mt_bench_turns_by_question(routellm):
    assert routellm.group_column == "question"
    assert "question" in routellm.analysis_columns  # hidden from the algorithm
    assert "question" not in routellm.metadata_columns
    frame = routellm.frame.set_index("id")
    assert frame.loc["mt_bench/81/turn1", "question"] == "mt_bench/81"
    assert frame.loc["mt_bench/81/turn2", "question"] == "mt_bench/81"
    assert frame.loc["gsm8k/0", "question"] == "gsm8k/0"
    mt = routellm.filter(benchmark="mt_bench")
    assert mt.frame.groupby("question").size().eq(2).all()
    assert mt.frame["question"].nunique() == 80


def test_the_group_column_survives_filter_sample_head_and_renames(routellm):
    derived = [
        routellm.filter(contaminated=False),
        routellm.sample(100, seed=1),
        routellm.head(3),
        routellm[5:9],
        routellm.rename_models({"gpt-4-1106-preview": "strong"}),
        routellm.split(0.3)[0],
        routellm.folds(3)[1][1],
    ]
    assert {d.group_column for d in derived} == {"question"}
    table = sy.datasets.from_frame(pd.DataFrame({"q": ["a", "b"]}), prompt="q")
    assert table.group_column is None


# -- split -------------------------------------------------------------------------------------


def test_split_is_an_exact_partition_in_table_order(routellm):
    train, test = routellm.split(0.2, seed=3)
    assert_partition(routellm, [train, test])
    assert len(test) == pytest.approx(0.2 * len(routellm), abs=2)  # groups of 1 or 2 rows
    order = list(routellm.frame["id"])
    for side in (train, test):
        positions = [order.index(i) for i in side.frame["id"][:50]]
        assert positions == sorted(positions)


def test_split_never_separates_the_turns_of_a_question(routellm):
    mt = routellm.filter(benchmark="mt_bench")
    for seed in range(10):
        train, test = mt.split(0.5, seed=seed)
        assert not set(train.frame["question"]) & set(test.frame["question"])
        assert len(test) % 2 == 0
    # row by row, some seed separates a pair
    separated = False
    for seed in range(10):
        train, test = mt.split(0.5, seed=seed, group=None)
        separated |= bool(set(train.frame["question"]) & set(test.frame["question"]))
    assert separated


def test_split_takes_a_count_and_hits_it_with_single_rows(routellm):
    train, test = routellm.split(500, seed=0, group=None)
    assert len(test) == 500 and len(train) == len(routellm) - 500
    train, test = routellm.split(0.25, seed=0, group=None)
    assert len(test) == round(0.25 * len(routellm))


def test_split_is_seeded(routellm):
    a = routellm.split(0.2, seed=7)[1]
    b = routellm.split(0.2, seed=7)[1]
    c = routellm.split(0.2, seed=8)[1]
    assert ids(a) == ids(b)
    assert ids(a) != ids(c)


def test_split_with_a_group_function_and_with_a_column(table):
    by_column = table.split(0.3, seed=0, group="family")
    by_function = table.split(0.3, seed=0, group=lambda row: row["family"])
    assert ids(by_column[1]) == ids(by_function[1])
    train, test = by_column
    assert not set(train.frame["family"]) & set(test.frame["family"])
    assert_partition(table, [train, test])


def test_split_stratified_keeps_each_share(routellm):
    whole = routellm.frame["benchmark"].value_counts(normalize=True)
    for seed in range(3):
        train, test = routellm.split(0.2, seed=seed, stratify="benchmark")
        for side in (train, test):
            shares = side.frame["benchmark"].value_counts(normalize=True)
            assert (shares - whole).abs().max() < 0.005
    counts = test.frame["benchmark"].value_counts()
    expected = 0.2 * routellm.frame["benchmark"].value_counts()
    assert (counts - expected).abs().max() <= 2


def test_split_sides_hold_only_their_own_rows(routellm):
    list(routellm)  # build every request in the shared cache first
    train, test = routellm.split(0.2, seed=0)
    test_ids = ids(test)
    assert not test_ids & set(train.quality.index)
    # nothing reachable from the train side holds a test request (its grade)
    assert all(r.id not in test_ids for r in train._cache.values())
    assert len(train._cache) == len(train)
    assert [r.id for r in test] == list(test.frame["id"])


def test_split_refuses_bad_input(routellm, table):
    for bad in (0, 1.0, 0.0, -0.1, 1.5, float("nan"), len(routellm), -3):
        with pytest.raises(ArgumentError, match="test"):
            routellm.split(bad)
    for bad in ("0.2", True, None):
        with pytest.raises(ArgumentTypeError, match="test"):
            routellm.split(bad)
    with pytest.raises(ArgumentError, match="no_such"):
        routellm.split(0.2, group="no_such")
    with pytest.raises(ArgumentError, match="no_such"):
        routellm.split(0.2, stratify="no_such")
    with pytest.raises(ArgumentTypeError, match="group"):
        routellm.split(0.2, group=3)
    with pytest.raises(ArgumentTypeError, match="hashable"):
        table.split(0.2, group=lambda row: [row["family"]])
    with pytest.raises(ArgumentError, match="one group"):
        table.split(0.2, group=lambda row: "all")


def test_split_keeps_both_sides_non_empty_with_big_groups(table):
    train, test = table.split(1, seed=0, group="family")
    assert len(test) >= 1 and len(train) >= 1
    assert not set(train.frame["family"]) & set(test.frame["family"])


# -- folds -------------------------------------------------------------------------------------


def test_folds_partition_the_rows_exactly(routellm):
    folds = routellm.folds(5, seed=0)
    assert len(folds) == 5
    assert_partition(routellm, [test for _, test in folds])
    for train, test in folds:
        assert_partition(routellm, [train, test])


def test_folds_never_separate_a_group(routellm, table):
    for seed in range(3):
        folds = routellm.folds(5, seed=seed)
        fold_of = {}
        for f, (_, test) in enumerate(folds):
            for question in test.frame["question"]:
                assert fold_of.setdefault(question, f) == f
        # in particular MT-Bench's turns
        for train, test in folds:
            mt = test.frame[test.frame["benchmark"] == "mt_bench"]
            assert mt.groupby("question").size().eq(2).all()
            assert not set(train.frame["question"]) & set(test.frame["question"])
    for train, test in table.folds(4, seed=0, group="family"):
        assert not set(train.frame["family"]) & set(test.frame["family"])


def test_fold_sizes_are_as_even_as_the_groups_allow(routellm, table):
    sizes = [len(test) for _, test in routellm.folds(5, seed=0)]
    assert max(sizes) - min(sizes) <= 1  # groups of 1 or 2 rows, smallest placed last
    sizes = [len(test) for _, test in routellm.folds(7, seed=0, group=None)]
    assert max(sizes) - min(sizes) <= 1
    # 20 groups of 1-5 rows (60 rows) in 4 folds: largest first gives 15 each
    sizes = [len(test) for _, test in table.folds(4, seed=0, group="family")]
    assert sizes == [15, 15, 15, 15]


def test_folds_are_seeded(routellm):
    a = [ids(test) for _, test in routellm.folds(5, seed=1)]
    b = [ids(test) for _, test in routellm.folds(5, seed=1)]
    c = [ids(test) for _, test in routellm.folds(5, seed=2)]
    assert a == b
    assert a != c


def test_folds_stratified_spread_each_value_evenly(routellm):
    for seed in range(3):
        folds = routellm.folds(5, seed=seed, stratify="benchmark")
        counts = pd.DataFrame([test.frame["benchmark"].value_counts() for _, test in folds]).fillna(
            0
        )
        # MT-Bench comes in pairs: its counts may differ by one pair, the others by one row
        spread = counts.max() - counts.min()
        assert spread["mmlu"] <= 1 and spread["gsm8k"] <= 1 and spread["mt_bench"] <= 2
        sizes = [len(test) for _, test in folds]
        assert max(sizes) - min(sizes) <= 2


def test_folds_stratified_on_a_small_table(table):
    folds = table.folds(2, seed=0, group="family", stratify="topic")
    per_fold = [test.frame["topic"].value_counts().to_dict() for _, test in folds]
    whole = table.frame["topic"].value_counts()
    for topic in whole.index:
        a, b = (p.get(topic, 0) for p in per_fold)
        assert abs(a - b) <= 5  # at most one group (≤ 5 rows) apart


def test_folds_refuse_bad_k(routellm, table):
    with pytest.raises(ArgumentError, match="between 2"):
        routellm.folds(1)
    with pytest.raises(ArgumentError, match="number of groups"):
        table.folds(21, group="family")
    table.folds(20, group="family")  # one group per fold is fine
    with pytest.raises(ArgumentError, match="number of groups"):
        routellm.filter(benchmark="mt_bench").folds(81)
    with pytest.raises(ArgumentTypeError):
        routellm.folds(2.5)
    with pytest.raises(ArgumentError, match="no_such"):
        routellm.folds(5, group="no_such")
    with pytest.raises(ArgumentError, match="no_such"):
        routellm.folds(5, stratify="no_such")


def test_a_missing_group_key_makes_a_row_alone():
    frame = pd.DataFrame({"q": list("abcdef"), "family": ["x", "x", None, None, None, None]})
    ds = sy.datasets.from_frame(frame, prompt="q")
    folds = ds.folds(5, seed=0, group="family")  # groups: {a, b} and four singles
    assert sorted(len(test) for _, test in folds) == [1, 1, 1, 1, 2]


def test_from_frame_names_the_group_column_that_folds_keep_together():
    frame = pd.DataFrame(
        {
            "q": [f"prompt {i}" for i in range(12)],
            "conversation": [i // 3 for i in range(12)],
            "ok": [1.0, 0.0] * 6,
        }
    )
    ds = sy.datasets.from_frame(frame, prompt="q", quality={"m": "ok"}, group="conversation")
    assert ds.group_column == "conversation"
    for train, test in ds.folds(4, seed=1):
        assert set(train.frame["conversation"]).isdisjoint(test.frame["conversation"])
    with pytest.raises(sy.ArgumentError, match="group must name a column"):
        sy.datasets.from_frame(frame, prompt="q", group="nope")
