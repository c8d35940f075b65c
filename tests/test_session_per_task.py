"""Per-task results of any two models become the pair table and outcome model sessions are judged
by: columns found by name or alias, every kind of bad input a clear error, missing tasks and empty
cells counted, and SWE-bench Pro is the same function on its shipped table."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit._base.files import read_table
from sykit._world.models import truth_of
from sykit.sessions import (
    TaskOutcomes,
    grounded_sessions,
    pair_tasks,
    quadrant_counts,
    quadrant_of,
    swebench_pro,
)

QUADRANT_OF = {("t1", "SAFE"), ("t2", "RESCUE"), ("t3", "LOSS"), ("t4", "HARD")}


def _results(**columns: list) -> pd.DataFrame:
    """Four tasks, one per quadrant, for models big (strong) and small (weak), plus a third."""
    base = {
        "task": ["t1", "t1", "t2", "t2", "t3", "t3", "t4", "t4", "t1"],
        "model": ["big", "small"] * 4 + ["other"],
        "resolved": [True, True, True, False, False, True, False, False, True],
        "cost_usd": [0.9, 0.1, 1.2, 0.2, 0.8, 0.1, 1.5, 0.3, 5.0],
    }
    base.update(columns)
    return pd.DataFrame(base)


# --- the pair table -------------------------------------------------------------------------------


def test_a_frame_becomes_a_pair_table_with_one_row_per_common_task():
    tasks = pair_tasks(_results(), strong="big", weak="small")
    assert list(tasks.columns) == ["instance_id", "strong_resolved", "weak_resolved", "quadrant"]
    assert tasks["instance_id"].tolist() == ["t1", "t2", "t3", "t4"]
    assert set(zip(tasks["instance_id"], tasks["quadrant"].astype(str), strict=True)) == QUADRANT_OF
    assert tasks["strong_resolved"].dtype == bool and tasks["weak_resolved"].dtype == bool
    expected = [
        quadrant_of(s, w)
        for s, w in zip(tasks["strong_resolved"], tasks["weak_resolved"], strict=True)
    ]
    assert tasks["quadrant"].astype(str).tolist() == expected
    assert quadrant_counts(tasks) == {"SAFE": 1, "RESCUE": 1, "LOSS": 1, "HARD": 1}
    assert tasks.attrs["strong"] == "big" and tasks.attrs["weak"] == "small"
    assert tasks.attrs["strong_only_tasks"] == tasks.attrs["weak_only_tasks"] == 0


def test_the_row_order_of_the_results_does_not_matter():
    results = _results()
    shuffled = results.sample(frac=1.0, random_state=3).reset_index(drop=True)
    pd.testing.assert_frame_equal(
        pair_tasks(shuffled, "big", "small"), pair_tasks(results, "big", "small")
    )


def test_columns_are_found_by_alias_or_by_name():
    aliased = _results().rename(columns={"task": "instance_id", "model": "run"})
    named = _results().rename(columns={"task": "q", "model": "who", "resolved": "ok"})
    expected = pair_tasks(_results(), "big", "small")
    pd.testing.assert_frame_equal(pair_tasks(aliased, "big", "small"), expected)
    pd.testing.assert_frame_equal(
        pair_tasks(named, "big", "small", task="q", model="who", resolved="ok"), expected
    )


def test_a_csv_path_reads_like_its_frame(tmp_path):
    path = tmp_path / "results.csv"
    _results().to_csv(path, index=False)
    pd.testing.assert_frame_equal(
        pair_tasks(path, "big", "small", cost="cost_usd"),
        pair_tasks(_results(), "big", "small", cost="cost_usd"),
    )
    pd.testing.assert_frame_equal(
        pair_tasks(str(path), "big", "small"), pair_tasks(_results(), "big", "small")
    )


def test_resolved_may_be_zero_one_ints_or_floats():
    expected = pair_tasks(_results(), "big", "small")
    for cast in (int, float):
        flags = [cast(v) for v in _results()["resolved"]]
        pd.testing.assert_frame_equal(
            pair_tasks(_results(resolved=flags), "big", "small"), expected
        )


def test_integer_task_ids_sort_as_numbers_and_become_text():
    results = pd.DataFrame(
        {"task_id": [10, 2, 10, 2, 1, 1], "model": ["a", "a", "b", "b", "a", "b"],
         "resolved": [1, 0, 1, 1, 0, 0]}
    )  # fmt: skip
    tasks = pair_tasks(results, "a", "b")
    assert tasks["instance_id"].tolist() == ["1", "2", "10"]
    assert tasks["quadrant"].astype(str).tolist() == ["HARD", "LOSS", "SAFE"]


def test_costs_give_per_task_columns_and_the_ratio_over_tasks_both_costed():
    costs = [0.9, 0.1, 1.2, 0.2, 0.8, None, 1.5, 0.3, 5.0]  # small has no cost for t3
    tasks = pair_tasks(_results(cost_usd=costs), "big", "small", cost="cost_usd")
    assert tasks["strong_cost_usd"].tolist() == [0.9, 1.2, 0.8, 1.5]
    assert tasks["weak_cost_usd"].tolist()[:2] == [0.1, 0.2] and np.isnan(tasks["weak_cost_usd"][2])
    attrs = tasks.attrs
    assert (attrs["strong_cost_missing"], attrs["weak_cost_missing"]) == (0, 1)
    assert attrs["costed_tasks"] == 3
    assert attrs["strong_cost_per_task_usd"] == pytest.approx((0.9 + 1.2 + 1.5) / 3)
    assert attrs["weak_cost_per_task_usd"] == pytest.approx((0.1 + 0.2 + 0.3) / 3)
    assert attrs["cost_ratio"] == pytest.approx(3.6 / 0.6)
    with pytest.raises(sy.ArgumentError, match=r"cost 'free' is not a USD amount"):
        pair_tasks(_results(cost_usd=[0.9, "free", *costs[2:]]), "big", "small", cost="cost_usd")
    with pytest.raises(sy.ArgumentError, match=r"cost -1.0 is not a USD amount ≥ 0"):
        pair_tasks(_results(cost_usd=[-1.0, *costs[1:]]), "big", "small", cost="cost_usd")


# --- bad input ------------------------------------------------------------------------------------


def test_a_missing_column_lists_the_columns():
    with pytest.raises(sy.ArgumentError, match=r"no task column \(tried 'task' / 'task_id'") as err:
        pair_tasks(_results().rename(columns={"task": "item"}), "big", "small")
    assert "'item'" in str(err.value) and "task=" in str(err.value)
    with pytest.raises(sy.ArgumentError, match=r"resolved column 'ok' is not in results"):
        pair_tasks(_results(), "big", "small", resolved="ok")
    with pytest.raises(sy.ArgumentError, match=r"cost column 'usd' is not in results"):
        pair_tasks(_results(), "big", "small", cost="usd")
    with pytest.raises(sy.ArgumentTypeError, match=r"model must be a column name"):
        pair_tasks(_results(), "big", "small", model=3)


def test_duplicate_rows_without_trials_point_at_trial():
    results = pd.concat([_results(), _results().iloc[[2]]])
    with pytest.raises(sy.ArgumentError, match=r"model 'big' has task 't2' in 2 rows.*trial="):
        pair_tasks(results, "big", "small")


def test_resolved_that_is_not_a_flag_is_an_error_naming_the_row():
    for bad in (0.5, "yes", 2):
        flags = [True, True, bad, False, False, True, False, False, True]
        with pytest.raises(sy.ArgumentError, match=r"results row 2 \('big', task 't2'\)") as err:
            pair_tasks(_results(resolved=flags), "big", "small")
        assert repr(bad) in str(err.value) and "True/False or 1/0" in str(err.value)
    scores = [1.0, 1.0, 0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]  # a float column: shown as 0.5
    with pytest.raises(sy.ArgumentError, match=r"'resolved' is 0\.5; it must be True/False"):
        pair_tasks(_results(resolved=scores), "big", "small")


def test_an_unknown_model_lists_the_models():
    with pytest.raises(sy.ArgumentError, match=r"unknown model 'huge' for strong") as err:
        pair_tasks(_results(), "huge", "small")
    assert "'big', 'other', 'small'" in str(err.value)
    with pytest.raises(sy.ArgumentError, match=r"both 'big'"):
        pair_tasks(_results(), "big", "big")
    with pytest.raises(sy.ArgumentTypeError, match=r"weak must be a model name"):
        pair_tasks(_results(), "big", None)


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(sy.ArgumentTypeError, match=r"DataFrame or the path of a CSV"):
        pair_tasks([1, 2], "big", "small")
    with pytest.raises(sy.ArgumentError, match=r"no file at"):
        pair_tasks(tmp_path / "nope.csv", "big", "small")
    with pytest.raises(sy.ArgumentError, match=r"results has no rows"):
        pair_tasks(_results().iloc[:0], "big", "small")
    with pytest.raises(sy.ArgumentError, match=r"missing must be one of 'warn', 'drop', 'error'"):
        pair_tasks(_results(), "big", "small", missing="keep")
    with pytest.raises(sy.ArgumentError, match=r"empty must be one of"):
        pair_tasks(_results(), "big", "small", empty="zero")
    disjoint = _results(task=["a", "b", "c", "d", "e", "f", "g", "h", "i"])
    with pytest.raises(sy.ArgumentError, match=r"no task in common \(4 and 4 tasks\)"):
        pair_tasks(disjoint, "big", "small")


# --- missing tasks and empty cells ----------------------------------------------------------------


def _gappy() -> pd.DataFrame:
    """big has t5 and t6 that small lacks; small has t7 that big lacks."""
    extra = pd.DataFrame(
        {"task": ["t5", "t6", "t7"], "model": ["big", "big", "small"],
         "resolved": [True, False, True], "cost_usd": [1.0, 1.0, 0.1]}
    )  # fmt: skip
    return pd.concat([_results(), extra], ignore_index=True)


def test_tasks_missing_for_one_model_are_counted_and_warned_about():
    with pytest.warns(UserWarning, match=r"2 task\(s\) have a result for 'big' only and 1 for "):
        tasks = pair_tasks(_gappy(), "big", "small")
    assert tasks["instance_id"].tolist() == ["t1", "t2", "t3", "t4"]
    assert (tasks.attrs["strong_only_tasks"], tasks.attrs["weak_only_tasks"]) == (2, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dropped = pair_tasks(_gappy(), "big", "small", missing="drop")
    pd.testing.assert_frame_equal(dropped, tasks)
    with pytest.raises(sy.ArgumentError, match=r"keeps the 4 tasks both have; pass missing="):
        pair_tasks(_gappy(), "big", "small", missing="error")


def test_empty_resolved_is_an_error_a_failure_or_no_result_as_asked():
    flags = [True, True, None, False, False, True, False, False, True]  # big's t2 is empty
    results = _results(resolved=flags)
    with pytest.raises(sy.ArgumentError, match=r"row 2 \('big', task 't2'\): 'resolved' is empty"):
        pair_tasks(results, "big", "small")
    failed = pair_tasks(results, "big", "small", empty="unresolved")
    assert failed["quadrant"].astype(str).tolist() == ["SAFE", "HARD", "LOSS", "HARD"]
    assert (failed.attrs["strong_empty_resolved"], failed.attrs["weak_empty_resolved"]) == (1, 0)
    gone = pair_tasks(results, "big", "small", empty="missing", missing="drop")
    assert gone["instance_id"].tolist() == ["t1", "t3", "t4"]
    assert gone.attrs["weak_only_tasks"] == 1 and gone.attrs["strong_empty_resolved"] == 1


# --- the outcome model and sessions ---------------------------------------------------------------


def test_the_outcome_model_of_a_pair_names_its_models_and_reproduces_each():
    tasks = pair_tasks(_results(), "big", "small")
    outcomes = TaskOutcomes.for_tasks(tasks, critical_turns=2)
    assert dict(outcomes.tiers) == {"big": "strong", "small": "weak"}
    assert outcomes.critical_turns == 2 and outcomes.probabilities is None
    for row in tasks.itertuples(index=False):
        quadrant = str(row.quadrant)
        assert outcomes.success(row.instance_id, quadrant, ["big"] * 5, 5, 0) == row.strong_resolved
        assert outcomes.success(row.instance_id, quadrant, ["small"] * 5, 5, 0) == row.weak_resolved
    mapped = TaskOutcomes.for_tasks(tasks, {"a": "strong", "b": "weak"})
    assert dict(mapped.tiers) == {"a": "strong", "b": "weak"}


def test_the_outcome_model_needs_the_model_names_or_tiers():
    tasks = pair_tasks(_results(), "big", "small")
    tasks.attrs = {}
    with pytest.raises(sy.ArgumentError, match=r"pass tiers=\{model: 'strong' or 'weak'\}"):
        TaskOutcomes.for_tasks(tasks)
    with pytest.raises(sy.ArgumentTypeError, match=r"pair table with an instance_id column"):
        TaskOutcomes.for_tasks([1, 2])


def test_grounded_sessions_take_a_pair_table():
    tasks = pair_tasks(_results(), "big", "small")
    sessions = grounded_sessions(tasks, seed=0)
    assert sorted(s.id for s in sessions) == ["t1", "t2", "t3", "t4"]
    for session in sessions:
        meta = session.turns[0].request.metadata
        truth = truth_of(session.turns[0].request)
        assert truth is not None
        assert (session.id, truth.columns["quadrant"]) in QUADRANT_OF
        assert meta["task_id"] == session.id
        assert truth.columns["planned_turns"] == len(session.turns)


# --- SWE-bench Pro on top of it -------------------------------------------------------------------


def test_swebench_pro_is_pair_tasks_on_its_shipped_table():
    table = read_table("agentic/swebench_pro_per_instance.csv")
    strong, weak = "claude-opus-4-1-paper", "gptoss-paper"
    with pytest.warns(UserWarning, match=re.escape("the pair keeps the 661 tasks")):
        direct = pair_tasks(table, strong, weak, task="instance_id", model="run")
    pd.testing.assert_frame_equal(swebench_pro(strong, weak), direct)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its missing tasks are counted in attrs, not warned about
        pair = swebench_pro(strong, weak)
    assert pair.attrs["strong_only_tasks"] == direct.attrs["strong_only_tasks"] > 0
    assert set(pair.attrs) == {
        "strong", "weak", "strong_config", "weak_config", "strong_only_tasks", "weak_only_tasks",
    }  # fmt: skip
