"""A dataset's metadata and analysis columns reach ``result.requests`` by column: the frames are
the ones each request's own values make (a list of the same requests), whatever the names,
missing values, engines, evidence of the same name or requests left unfinished."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import sykit as sy


def hostile(n: int = 120) -> sy.datasets.Dataset:
    """Columns named as the records' own (``status``, ``seed``), an analysis column named as
    an algorithm's evidence, missing values in text, nullable integers and flags."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "prompt": [f"prompt {i}" for i in range(n)],
            "status": ["x" if i % 3 else None for i in range(n)],
            "evidence_score": [i * 0.5 if i % 4 else None for i in range(n)],
            "turn": pd.array([i if i % 5 else None for i in range(n)], dtype="Int64"),
            "flag": [bool(i % 2) if i % 7 else None for i in range(n)],
            "note": [f"n{i}" for i in range(n)],
            "seed": list(range(n)),
            "qa": rng.random(n),
            "qb": rng.random(n),
        }
    )
    return sy.datasets.from_frame(
        frame, prompt="prompt", quality={"A": "qa", "B": "qb"}, metadata=["status", "turn", "flag"]
    )


HOST = sy.SimHost({"A": sy.ModelProfile(), "B": sy.ModelProfile()})


@sy.strategies.static
async def with_evidence(request, driver):
    if request.id % 2:
        driver.evidence(score=1.5, other=str(request.id))
    return sy.route_to("A", request, fallbacks=["B"])


async def some_evidence(request, driver):
    if request.id % 10 == 3:
        driver.evidence(score=2.0)
    return sy.route_to("B", request)


LINEUP = {
    "static": with_evidence,
    "general": some_evidence,
    "threshold": sy.strategies.threshold_router(
        "A", "B", score=lambda r: len(r.messages[0]["content"]), threshold=9
    ),
}


@pytest.mark.parametrize("engine", ["auto", "kernel", "asyncio"])
def test_a_datasets_columns_are_those_of_its_requests_values(engine: str) -> None:
    data = hostile()
    by_column = sy.compare(LINEUP, data, host=HOST, progress=False, engine=engine, seeds=(0, 1))
    by_row = sy.compare(LINEUP, list(data), host=HOST, progress=False, engine=engine, seeds=(0, 1))
    pd.testing.assert_frame_equal(by_column.requests, by_row.requests, check_exact=True)
    for mine, theirs in zip(by_column.results, by_row.results, strict=True):
        pd.testing.assert_frame_equal(mine.requests, theirs.requests, check_exact=True)
    columns = list(by_column.requests.columns)
    assert columns[columns.index("reads_truth") + 1 :][:6] == [
        "meta_status",
        "turn",
        "flag",
        "meta_evidence_score",  # the analysis column: not the evidence column of that name
        "note",
        "meta_seed",
    ]
    static = by_column.result("static", seed=0).requests.set_index("request_id")
    assert static.loc[1, "evidence_score"] == 1.5  # the algorithm's evidence
    assert pd.isna(static.loc[2, "evidence_score"])  # none given for this request
    assert static.loc[1, "meta_evidence_score"] == 0.5  # the dataset's values, in every row
    assert static.loc[2, "meta_evidence_score"] == 1.0
    assert static["turn"].dtype == by_row.result("static", seed=0).requests["turn"].dtype


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_an_interrupted_run_over_a_dataset_has_its_finished_rows_values(engine: str) -> None:
    async def interrupted(request, driver):
        if request.id == 40:
            raise KeyboardInterrupt
        await driver.sleep(1.0 + request.id % 3)  # requests finish out of order
        return sy.route_to("A", request)

    def run(requests):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sy.run(
                interrupted, requests, host=HOST, concurrency=4, engine=engine, progress=False
            )

    data = hostile()
    by_column, by_row = run(data), run(list(data))
    assert by_column.interrupted and 0 < len(by_column.requests) < len(data)
    ids = by_column.requests["request_id"].tolist()
    assert ids != list(range(len(ids)))  # not the first rows alone
    pd.testing.assert_frame_equal(by_column.requests, by_row.requests, check_exact=True)


def test_the_columns_are_made_once_per_dataset() -> None:
    data = hostile()
    first = sy.run(sy.strategies.single("A"), data, host=HOST, progress=False)
    second = sy.run(sy.strategies.single("B"), data, host=HOST, progress=False, engine="kernel")
    made = data._columns_by_row().made  # what the frames made of each column
    assert set(made) == {"status", "turn", "flag", "evidence_score", "note", "seed"}
    for result in (first, second):
        assert result.requests["note"].tolist() == [f"n{i}" for i in range(len(data))]


def test_a_spilling_run_writes_each_rows_values(tmp_path) -> None:
    data = hostile()
    spilled = sy.run(with_evidence, data, host=HOST, progress=False, spill=tmp_path / "run")
    kept = sy.run(with_evidence, data, host=HOST, progress=False)
    pd.testing.assert_frame_equal(
        spilled.requests[kept.requests.columns], kept.requests, check_exact=True, check_dtype=False
    )


def test_grades_from_the_dataset_and_from_profiles_are_the_same_in_bulk() -> None:
    """A run in bulk grades its answers many at once: the dataset's grades where it has the
    model (NaN where a row has none), a profile's keyed draws for the others, none for a model
    with neither, as the event engines grade them one by one."""
    frame = pd.DataFrame(
        {
            "prompt": [f"p{i}" for i in range(150)],
            "qa": [None if i % 6 == 0 else (i % 3) / 2 for i in range(150)],
            "note": [f"n{i}" for i in range(150)],
        }
    )
    data = sy.datasets.from_frame(frame, prompt="prompt", quality={"A": "qa"})
    host = sy.SimHost(
        {"A": sy.ModelProfile(), "B": sy.ModelProfile(quality=0.7), "C": sy.ModelProfile()},
        policy=sy.HostPolicy(cooldown_s=0.0),  # (a cooldown would send a run to the events)
    )
    lineup = {
        "random": sy.strategies.weighted_random(["A", "B", "C"]),
        "threshold": sy.strategies.threshold_router(
            "A", "B", score=lambda r: len(r.prompt) % 4, threshold=2
        ),
    }
    bulk = sy.compare(lineup, data, host=host, progress=False, seeds=(0, 4))
    kernel = sy.compare(lineup, data, host=host, progress=False, seeds=(0, 4), engine="kernel")
    assert {r.engine for r in bulk.results} == {"bulk"}
    pd.testing.assert_frame_equal(bulk.requests, kernel.requests, check_exact=True)
    pd.testing.assert_frame_equal(bulk.attempts, kernel.attempts, check_exact=True)
    rows = bulk.requests
    by_model = rows.groupby("served_model", observed=True)["quality"]
    assert by_model.apply(lambda q: q.isna().all())["C"]  # neither the dataset nor a profile
    assert set(by_model.apply(lambda q: set(q.dropna()))["B"]) == {0.0, 1.0}
    assert rows.loc[rows["served_model"] == "A", "quality"].isna().any()  # a row without one
