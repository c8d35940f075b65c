"""``sy.datasets.from_frame`` keeps every column it is given or refuses the table, naming the
column and what to change; a group names the user's column; NaN filters as missing, as None does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sykit as sy

HOST = sy.SimHost({"small": sy.ModelProfile(), "large": sy.ModelProfile()})


def table(**columns: list) -> pd.DataFrame:
    base: dict[str, list] = {"q": ["one", "two", "three"], "s": [1.0, 0.0, 1.0]}
    return pd.DataFrame({**base, **columns})


def make(frame: pd.DataFrame, **kwargs) -> sy.datasets.Dataset:
    return sy.datasets.from_frame(frame, prompt="q", quality={"small": "s"}, **kwargs)


# -- A: no column is silently lost ---------------------------------------------------------------


def test_columns_named_like_the_records_and_their_prefixed_names_all_reach_the_requests():
    """Each column holds values no other column holds: every one of them must come out in a
    column of its own, whatever the requests frame names it."""
    names = ["cost_usd", "meta_cost_usd", "meta_meta_cost_usd", "seed", "meta_seed", "strategy"]
    names += ["evidence_x", "meta_evidence_x", "status"]
    frame = table(**{name: [100 * i + k for k in range(3)] for i, name in enumerate(names, 1)})
    ds = make(frame, metadata=["seed", "meta_cost_usd", "status"])
    requests = sy.run(sy.strategies.single("small"), ds, host=HOST, progress=False).requests
    for i, name in enumerate(names, 1):
        expected = [100 * i + k for k in range(3)]
        holding = [c for c in requests.columns if requests[c].tolist() == expected]
        assert len(holding) == 1, (name, holding)


@pytest.mark.parametrize(
    ("extra", "kwargs", "words"),
    [
        ({"prompt": ["x", "y", "z"]}, {}, r"column 'prompt' would be lost.*prompt='q'.*Rename"),
        (
            {"input_tokens": [1, 2, 3], "n": [4, 5, 6]},
            {"input_tokens": "n"},
            r"column 'input_tokens' would be lost.*input_tokens='n'.*Rename",
        ),
        ({"id": ["a", "b", "c"], "k": [4, 5, 6]}, {"id": "k"}, r"column 'id' would be lost"),
        (
            {"images": [None, None, None], "im": [None, "https://x/a.png", None]},
            {"images": "im"},
            r"column 'images' would be lost",
        ),
        (
            {"quality:small": [0.5, 0.5, 0.5]},
            {},
            r"'quality:small' is named like the dataset's ground truth.*"
            r"quality=\{'small': 'quality:small'\}.*rename it",
        ),
        ({"quality:other": [0.5, 0.5, 0.5]}, {}, r"'quality:other' is named like"),
        (
            {"output_tokens:small": [5, 6, 7]},
            {},
            r"'output_tokens:small'.*output_tokens=\{'small': 'output_tokens:small'\}",
        ),
    ],
)
def test_a_column_the_datasets_own_columns_would_replace_is_refused(extra, kwargs, words):
    with pytest.raises(sy.ArgumentError, match=words):
        make(table(**extra), **kwargs)
    with pytest.raises(sy.ArgumentError, match=words):
        make(table(**extra), metadata=[next(iter(extra))], **kwargs)


def test_a_ground_truth_named_column_given_as_ground_truth_is_taken():
    frame = table(**{"quality:large": [0.0, 1.0, 0.5], "output_tokens:large": [5, 6, 7]})
    ds = sy.datasets.from_frame(
        frame,
        prompt="q",
        quality={"small": "s", "large": "quality:large"},
        output_tokens={"large": "output_tokens:large"},
    )
    assert ds.quality["large"].tolist() == [0.0, 1.0, 0.5]
    assert ds.output_tokens["large"].tolist() == [5, 6, 7]


@pytest.mark.parametrize("engine", ["bulk", "kernel"])
def test_a_kept_column_whose_name_is_not_a_str_reaches_the_requests_under_it(engine):
    data = make(table().assign(x=[1, 2, 3], y=[4, 5, 6]).rename(columns={"x": 5}))
    frame = sy.run(
        sy.strategies.single("small"), data, host=HOST, engine=engine, progress=False
    ).requests
    assert frame[5].tolist() == [1, 2, 3]
    assert frame["y"].tolist() == [4, 5, 6]


# -- B: sykit errors, not pandas' ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"metadata": ["q"]}, r"metadata column 'q' is the prompt column.*request\.prompt"),
        ({"id": "k", "metadata": ["k"]}, r"metadata column 'k' is the id column.*request\.id"),
        ({"input_tokens": "k", "metadata": ["k"]}, r"'k' is the input_tokens column"),
        ({"metadata": ["t", "k", "t"]}, r"metadata names 't' more than once"),
    ],
)
def test_metadata_naming_a_role_column_or_a_column_twice_is_refused(kwargs, words):
    with pytest.raises(sy.ArgumentError, match=words):
        make(table(k=[4, 5, 6], t=["a", "b", "c"]), **kwargs)


@pytest.mark.parametrize(
    "columns", [["q", "s", "l", "l"], ["q", "s", "l", "t", "t"], ["q", "s", "q", "l", "l"]]
)
def test_a_frame_with_two_columns_of_one_name_is_refused(columns):
    frame = pd.DataFrame([["a", 1.0] + [0.0] * (len(columns) - 2)], columns=columns)
    repeated = list(dict.fromkeys(c for c in columns if columns.count(c) > 1))
    named = ", ".join(map(repr, repeated))
    with pytest.raises(sy.ArgumentError, match=rf"more than one column named {named}; rename"):
        make(frame)


# -- C: a group names the user's column ------------------------------------------------------------


def test_a_group_naming_the_prompt_or_a_quality_column_groups_by_it():
    frame = pd.DataFrame(
        {
            "q": ["same", "same", "other", "other", "third", "third"],
            "s": [1.0, 1.0, 0.0, 0.0, 0.5, 0.5],
            "k": [f"r{i}" for i in range(6)],
        }
    )
    by_prompt = make(frame, group="q", id="k")
    assert by_prompt.group_column == "prompt"
    by_grade = make(frame, group="s")
    assert by_grade.group_column == "quality:small"
    by_id = make(frame, group="k", id="k")
    assert by_id.group_column == "id"
    for ds, column in ((by_prompt, "prompt"), (by_grade, "quality:small")):
        for train, test in ds.folds(3, seed=0):
            assert set(train.frame[column]).isdisjoint(test.frame[column])


def test_a_group_naming_no_column_lists_the_frames_own_columns():
    with pytest.raises(sy.ArgumentError, match=r"got 'nope'; the frame's columns are: q, s$"):
        make(table(), group="nope")


# -- D: blank prompts ------------------------------------------------------------------------------


def test_a_blank_prompt_is_refused_naming_the_rows():
    with pytest.raises(
        sy.ArgumentError, match=r"prompt column 'q' is blank .* in 2 row\(s\).*ids \['b', 'c'\]"
    ):
        make(table(q=["fine", "", "  \n"], k=["a", "b", "c"]), id="k")


def test_a_blank_prompt_with_images_is_kept():
    ds = make(
        table(q=["look", "", " "], im=[None, "https://x/a.png", ["https://x/b.png"]]), images="im"
    )
    assert [r.prompt for r in ds] == ["look", "", " "]


def test_no_shipped_dataset_has_a_blank_prompt():
    for name in sy.datasets.names():
        prompts = sy.datasets.load(name).frame["prompt"]
        assert not prompts.str.strip().eq("").any(), name


# -- E: NaN filters as missing ---------------------------------------------------------------------


def test_filter_takes_nan_as_a_missing_value_as_it_takes_none():
    frame = table(cat=["a", None, np.nan], x=[1.0, np.nan, 2.0])
    ds = make(frame, metadata=["cat"])
    for missing in (None, np.nan, float("nan"), pd.NA, np.float32("nan")):
        assert ds.filter(cat=missing).frame["prompt"].tolist() == ["two", "three"]
        assert ds.filter(x=missing).frame["prompt"].tolist() == ["two"]
        assert ds.filter(cat=["a", missing]).frame["prompt"].tolist() == ["one", "two", "three"]
        assert ds.filter(x=(2.0, missing)).frame["prompt"].tolist() == ["two", "three"]
    assert ds.filter(x=[1.0]).frame["prompt"].tolist() == ["one"]


def test_a_filter_predicate_reading_a_column_the_dataset_renamed_names_its_columns():
    """The user's grade column ``s`` became ``quality:small``: a predicate reading ``s`` is told
    which columns there are, not left with pandas' bare ``KeyError: 's'``."""
    ds = make(table())
    with pytest.raises(sy.ArgumentError, match=r"KeyError 's'.*quality:small") as caught:
        ds.filter(lambda f: f["s"] > 0)
    assert isinstance(caught.value.__cause__, KeyError)
    assert ds.filter(lambda f: f["quality:small"] > 0).frame["prompt"].tolist() == ["one", "three"]
    with pytest.raises(KeyError, match="prompt"):  # a key that is a column: the predicate's own
        ds.filter(lambda f: {}[f.columns[1]])
