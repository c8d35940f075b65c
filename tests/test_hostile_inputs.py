"""Inputs that used to be silently wrong or crash deep inside: each now runs as meant or is
refused with a message naming the input and what to do."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st


def _host() -> sy.SimHost:
    quick = sy.ModelProfile(latency=sy.Latency(ttft=0.2, tokens_per_s=200), output_tokens=20)
    return sy.SimHost({"mini": quick, "big": quick})


async def to_mini(request, driver):
    return sy.route_to("mini", request)


# -- a DataFrame or Series as the requests --------------------------------------------------------


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {"prompt": ["one", "two", "three"], "id": ["a", "b", "c"], "topic": ["x", "y", "z"]}
    )


def test_a_dataframe_runs_its_prompt_column_as_from_frame_reads_it():
    seen = []

    async def algorithm(request, driver):
        seen.append((request.id, request.prompt, dict(request.metadata)))
        return sy.route_to("mini", request)

    result = sy.run(algorithm, _table(), host=_host())
    assert sorted(seen) == [("a", "one", {}), ("b", "two", {}), ("c", "three", {})]
    requests = result.requests
    assert requests["request_id"].tolist() == ["a", "b", "c"]
    assert requests["topic"].tolist() == ["x", "y", "z"]  # for analysis, hidden from the algorithm


def test_a_grid_takes_a_dataframe_as_a_run_does():
    grid = sy.grid({"mini": to_mini}, _table(), host=_host(), progress=False)
    assert grid.requests["request_id"].tolist() == ["a", "b", "c"]
    assert grid.requests["topic"].tolist() == ["x", "y", "z"]


def test_a_dataframe_without_a_prompt_column_is_refused_naming_from_frame():
    table = _table().rename(columns={"prompt": "question"})
    with pytest.raises(sy.ArgumentError, match=r"no 'prompt' column.*'question'.*from_frame"):
        sy.run(to_mini, table, host=_host())


def test_a_datasets_frame_is_refused_rather_than_losing_its_ground_truth():
    table = pd.DataFrame({"question": ["one", "two"], "graded": [1.0, 0.0]})
    frame = sy.datasets.from_frame(table, prompt="question", quality={"mini": "graded"}).frame
    with pytest.raises(sy.ArgumentError, match=r"ground-truth columns \(quality:.*from_frame"):
        sy.run(to_mini, frame, host=_host())


def test_a_dataframe_from_frame_cannot_read_names_the_call_it_made():
    table = pd.DataFrame({"prompt": ["one", None]})
    with pytest.raises(sy.ArgumentError, match=r"from_frame\(frame, prompt='prompt'\).*empty"):
        sy.run(to_mini, table, host=_host())


def test_a_series_of_prompts_runs_each_prompt():
    seen = []

    async def algorithm(request, driver):
        seen.append(request.prompt)
        return sy.route_to("mini", request)

    prompts = pd.Series(["one", "two"], index=[10, 20])
    result = sy.run(algorithm, prompts, host=_host())
    assert sorted(seen) == ["one", "two"]
    assert result.requests["request_id"].tolist() == [0, 1]


# -- answered: only as the model that answered ----------------------------------------------------


def test_answered_refuses_another_models_response():
    with pytest.raises(sy.ArgumentError, match=r"answered\('big'.*came from 'mini'"):
        sy.answered("big", sy.Response("mini", "hi"))


def test_a_run_that_answers_as_another_model_fails_the_request_instead_of_misreporting():
    async def misreports(request, driver):
        return sy.answered("big", await driver.call_model(request, ["mini"]))

    with pytest.warns(sy.AlgorithmWarning, match="came from 'mini'"):
        result = sy.run(misreports, ["q"], host=_host())
    row = result.requests.iloc[0]
    assert (row["status"], row["error_kind"]) == ("failed", "algorithm_error")
    assert pd.isna(row["selected_model"]) and pd.isna(row["served_model"])


def test_answered_as_the_model_that_answered_still_serves_it():
    async def drafts(request, driver):
        response = await driver.call_model(request, ["mini"])
        return sy.answered(response.model, response)

    row = sy.run(drafts, ["q"], host=_host()).requests.iloc[0]
    assert (row["status"], row["selected_model"], row["served_model"]) == ("ok", "mini", "mini")


# -- grid output folders --------------------------------------------------------------------------


def _grid_to(out: Path, **options):
    kwargs = {"host": _host(), "seeds": [0, 1], "out": out, "progress": False, **options}
    return sy.grid({"mini": st.single("mini")}, ["one", "two", "three"], **kwargs)


def _resumed(out: Path) -> tuple[sy.Grid, str]:
    """The grid run again on ``out``, and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grid = _grid_to(out)
    return grid, "\n".join(str(w.message) for w in caught)


def test_overwrite_refuses_to_delete_files_sykit_did_not_write(tmp_path):
    out = tmp_path / "grid"
    _grid_to(out)
    mine = [out / "cells" / "notes.txt", next((out / "requests").rglob("*.parquet")).parent / "x"]
    for path in mine:
        path.write_text("mine")
    with pytest.raises(sy.ArgumentError, match=r"cells/notes\.txt.*sykit did not write.*overwrite"):
        _grid_to(out, overwrite=True)
    assert all(path.read_text() == "mine" for path in mine)
    assert len(list((out / "cells").glob("*.json"))) == 2  # nothing deleted


def test_overwrite_deletes_what_sykit_wrote(tmp_path):
    out = tmp_path / "grid"
    sy.grid({"mini": lambda x: st.single("mini")}, ["q"], host=_host(), axes={"x": [1, 2]}, out=out)
    again = _grid_to(out, overwrite=True)
    assert not again.cells["resumed"].any()
    folders = {p.parent.parent.name for p in (out / "requests").rglob("*.parquet")}
    assert folders == {"strategy-mini"}


def test_resume_refuses_a_json_file_of_the_users_in_cells(tmp_path):
    out = tmp_path / "grid"
    _grid_to(out)
    (out / "cells" / "notes.json").write_text(json.dumps({"mine": True}))
    with pytest.raises(sy.ArgumentError, match=r"cells/notes\.json.*sykit did not write"):
        _grid_to(out)


def test_a_truncated_cell_file_is_run_again_on_resume_naming_it(tmp_path):
    out = tmp_path / "grid"
    first = _grid_to(out)
    damaged = sorted((out / "attempts").rglob("*.parquet"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])
    again, said = _resumed(out)
    assert re.search(rf"damaged and run again: attempts/.*{damaged.name}.*ArrowInvalid", said)
    assert sorted(again.cells["resumed"]) == [False, True]
    pd.testing.assert_frame_equal(again.attempts, first.attempts)


def test_a_cell_file_whose_rows_disagree_with_its_record_is_run_again(tmp_path):
    out = tmp_path / "grid"
    first = _grid_to(out)
    record_file = sorted((out / "cells").glob("*.json"))[0]
    record = json.loads(record_file.read_text())
    record["rows"][0] += 1  # as if the file were replaced by another cell's
    record_file.write_text(json.dumps(record))
    again, said = _resumed(out)
    assert re.search(rf"{record_file.stem}\.parquet holds 3 rows, its record 4", said)
    pd.testing.assert_frame_equal(again.requests, first.requests)


def test_a_corrupt_grid_marker_is_a_clear_error_and_overwrite_recovers(tmp_path):
    out = tmp_path / "grid"
    _grid_to(out)
    (out / "sykit-grid.json").write_text("{not json")
    with pytest.raises(sy.ArgumentError, match=r"sykit-grid\.json' cannot be read.*overwrite=True"):
        _grid_to(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _grid_to(out, overwrite=True)
    assert (again.cells["status"] == "done").all()


@pytest.mark.parametrize(
    "values",
    [[1, "1"], [True, "True"], [0.5, "0.5"], {"1": "one", 1: "another one"}],
)
def test_axis_values_that_read_the_same_as_text_are_refused(values):
    with pytest.raises(sy.ArgumentError, match=r"axis 'x': values .* both read '.*' as text"):
        sy.grid({"mini": lambda x: st.single("mini")}, ["q"], host=_host(), axes={"x": values})


# -- sweep factories ------------------------------------------------------------------------------


def test_a_sweep_factory_returning_none_is_named_with_its_value():
    def make_strategy(share):
        if share < 0.5:
            return st.single("mini")

    with pytest.raises(sy.ArgumentTypeError, match=r"sweep: make_strategy\(0\.7\) returned None"):
        sy.sweep(make_strategy, [0.3, 0.7], ["q"], host=_host(), weak="mini", strong="big")


def test_a_sweep_factory_returning_a_plain_function_says_why_it_is_no_strategy():
    def route(request):
        return sy.route_to("mini", request)

    with pytest.raises(sy.ArgumentTypeError, match=r"make_strategy\(0\.3\) returned function.*"):
        sy.sweep(lambda v: route, [0.3], ["q"], host=_host(), weak="mini", strong="big")


def test_a_dataframe_reaches_the_workers_as_its_dataset():
    frame = pd.DataFrame({"prompt": ["a", "b", "c"], "topic": ["x", "y", "z"]})
    host = sy.SimHost({"m": sy.ModelProfile()})
    both = sy.compare({"one": sy.strategies.single("m")}, frame, host=host, workers=1)
    assert both.requests["request_id"].tolist() == [0, 1, 2]
    assert both.requests["topic"].tolist() == ["x", "y", "z"]
