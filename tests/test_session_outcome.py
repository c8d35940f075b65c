"""Session outcomes grounded in SWE-bench Pro: the quadrant tables reproduce the shipped pair
counts, and the outcome model gives back each run's per-task results when it serves every turn
and interpolates as its closed form says when routing mixes the two."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

import sykit as sy
from sykit._base.files import data_dir, read_table
from sykit._base.rng import uniforms
from sykit.sessions._outcome import (
    QUADRANTS,
    TaskOutcomes,
    expected_success,
    expected_success_rate,
    quadrant_of,
)
from sykit.sessions._swebench import (
    DEFAULT_STRONG,
    DEFAULT_WEAK,
    quadrant_counts,
    swebench_pro,
    swebench_pro_runs,
)

AGENTIC = (
    "swebench_pro_per_instance.csv",
    "swebench_pro_pair_quadrants.csv",
    "openhands_sweverified_claude35_calls.csv",
    "openhands_sweverified_claude35_per_instance.csv",
    "litellm_cache_prices_all_chat.csv",
    "taubench_gpt4o_airline_trials.csv",
    "openhands_index/openhands_index_per_instance.csv.gz",
    "openhands_index/openhands_index_metadata.json",
)
PAIRS = read_table("agentic/swebench_pro_pair_quadrants.csv")
TIERS = {"strong-model": "strong", "weak-model": "weak"}


def _planned(task: str, seed: int, low: int = 1, spread: int = 40) -> int:
    """A keyed session length in [low, low + spread)."""
    return low + int(uniforms(seed, "test-planned", task)[0] * spread)


# --- the shipped data ---------------------------------------------------------------------------


def test_the_agentic_tables_ship_with_licences_and_provenance():
    folder = data_dir() / "agentic"
    provenance = (data_dir() / "PROVENANCE.md").read_text()
    for name in AGENTIC:
        assert (folder / name).is_file(), name
        assert f"## `agentic/{name}`" in provenance, name
    for licence in ("SWE-bench_Pro-os", "OpenHands", "litellm", "tau-bench"):
        assert (folder / f"LICENSE-{licence}-MIT.txt").read_text().count("MIT") >= 1
    index = (folder / "openhands_index" / "LICENSE").read_text()
    assert "MIT License - See repository for details." in index
    assert "Permission is hereby granted, free of charge" in index


# --- SWE-bench Pro pairs ------------------------------------------------------------------------


def test_runs_are_the_nine_in_the_table():
    runs = swebench_pro_runs()
    assert runs == sorted(runs) and len(runs) == 9
    assert {DEFAULT_STRONG, DEFAULT_WEAK} <= set(runs)


@pytest.mark.parametrize(
    "row", PAIRS.to_dict("records"), ids=lambda r: f"{r['strong']}|{r['weak']}"
)
def test_every_shipped_pair_reproduces_its_quadrant_counts(row):
    table = swebench_pro(row["strong"], row["weak"])
    assert len(table) == row["n_common"]
    assert quadrant_counts(table) == {
        "SAFE": row["SAFE_both"],
        "RESCUE": row["RESCUE_only_strong"],
        "LOSS": row["LOSS_only_weak"],
        "HARD": row["HARD_neither"],
    }


def test_the_default_pair_table_has_its_shape_and_a_stable_order():
    table = swebench_pro()
    assert list(table.columns) == ["instance_id", "strong_resolved", "weak_resolved", "quadrant"]
    assert len(table) == 729 and table["instance_id"].is_unique
    assert table["instance_id"].is_monotonic_increasing
    assert table["strong_resolved"].dtype == bool and table["weak_resolved"].dtype == bool
    assert list(table["quadrant"].cat.categories) == list(QUADRANTS)
    assert quadrant_counts(table) == {"SAFE": 162, "RESCUE": 157, "LOSS": 40, "HARD": 370}
    expected = [
        quadrant_of(s, w)
        for s, w in zip(table["strong_resolved"], table["weak_resolved"], strict=True)
    ]
    assert table["quadrant"].astype(str).tolist() == expected
    # the one Sonnet 4.5 task Kimi K2 has no result for is counted, not lost
    assert table.attrs["strong_only_tasks"] == 1 and table.attrs["weak_only_tasks"] == 0
    assert table.attrs["strong"] == DEFAULT_STRONG and table.attrs["weak"] == DEFAULT_WEAK
    pd.testing.assert_frame_equal(swebench_pro(), table)


def test_swapping_the_pair_swaps_rescue_and_loss():
    there = quadrant_counts(swebench_pro(DEFAULT_STRONG, DEFAULT_WEAK))
    back = quadrant_counts(swebench_pro(DEFAULT_WEAK, DEFAULT_STRONG))
    assert back == {**there, "RESCUE": there["LOSS"], "LOSS": there["RESCUE"]}


def test_bad_run_names_are_clear_errors():
    with pytest.raises(sy.ArgumentError, match=r"unknown SWE-bench Pro run 'gpt-6' for strong"):
        swebench_pro("gpt-6")
    with pytest.raises(sy.ArgumentError, match=re.escape(repr(DEFAULT_WEAK))) as err:
        swebench_pro(weak="nope")
    assert all(repr(run) in str(err.value) for run in swebench_pro_runs())
    with pytest.raises(sy.ArgumentError, match="both 'gpt-4o-paper'"):
        swebench_pro("gpt-4o-paper", "gpt-4o-paper")
    with pytest.raises(sy.ArgumentTypeError, match="weak must be a run name"):
        swebench_pro(weak=3)


def test_quadrant_counts_includes_zeros_and_rejects_unknown_quadrants():
    table = swebench_pro()
    assert quadrant_counts(table.iloc[:0]) == dict.fromkeys(QUADRANTS, 0)
    odd = pd.DataFrame({"quadrant": ["SAFE", "MAYBE"]})
    with pytest.raises(sy.ArgumentError, match="'MAYBE'"):
        quadrant_counts(odd)
    with pytest.raises(sy.ArgumentTypeError, match="'quadrant' column"):
        quadrant_counts(pd.DataFrame({"x": [1]}))


# --- the outcome model --------------------------------------------------------------------------


@pytest.mark.parametrize("critical_turns", [1, 3])
@pytest.mark.parametrize("seed", [0, 7])
def test_serving_every_turn_with_one_model_reproduces_that_run(seed, critical_turns):
    outcomes = TaskOutcomes(TIERS, critical_turns=critical_turns)
    table = swebench_pro()
    for task, s, w, quadrant in table.itertuples(index=False):
        n = _planned(task, seed)
        assert outcomes.success(task, quadrant, ["strong-model"] * n, n, seed) == s, task
        assert outcomes.success(task, quadrant, ["weak-model"] * n, n, seed) == w, task


def test_critical_turns_are_keyed_by_seed_and_task():
    outcomes = TaskOutcomes(TIERS, critical_turns=2)
    tasks = swebench_pro()["instance_id"].tolist()
    first = [outcomes.critical(t, 20, seed=0) for t in tasks]
    assert first == [outcomes.critical(t, 20, seed=0) for t in tasks]
    other = [outcomes.critical(t, 20, seed=1) for t in tasks]
    assert sum(a != b for a, b in zip(first, other, strict=True)) > len(tasks) // 2
    assert len(set(first)) > 100  # tasks do not share one set of critical turns
    assert all(len(c) == 2 and c == tuple(sorted(set(c))) for c in first)
    assert all(0 <= t < 20 for c in first for t in c)


def test_critical_turns_are_uniform_over_the_session():
    """Each of 5 turns is the critical one for about a fifth of tasks (within 4 standard errors)."""
    outcomes = TaskOutcomes(TIERS)
    picks = [outcomes.critical(f"task-{i}", 5, seed=3)[0] for i in range(5000)]
    se = math.sqrt(0.2 * 0.8 / len(picks))
    for turn in range(5):
        assert abs(picks.count(turn) / len(picks) - 0.2) < 4 * se


def test_a_session_shorter_than_k_has_every_turn_critical():
    outcomes = TaskOutcomes(TIERS, critical_turns=4)
    assert outcomes.critical("t", 3, seed=0) == (0, 1, 2)
    assert not outcomes.success("t", "RESCUE", ["strong-model", "weak-model", "strong-model"], 3, 0)
    assert outcomes.success("t", "RESCUE", ["strong-model"] * 3, 3, 0)
    assert expected_success("RESCUE", 0.5, critical_turns=4, planned_turns=3) == 0.125


@pytest.mark.parametrize("quadrant", ["RESCUE", "LOSS"])
def test_mixed_routing_hinges_on_the_critical_turns_only(quadrant):
    outcomes = TaskOutcomes(TIERS, critical_turns=2)
    wanted, other = ("strong-model", "weak-model")[:: 1 if quadrant == "RESCUE" else -1]
    for seed in range(5):
        critical = outcomes.critical("task", 12, seed)
        right_where_it_counts = [wanted if t in critical else other for t in range(12)]
        assert outcomes.success("task", quadrant, right_where_it_counts, 12, seed)
        one_miss = [wanted] * 12
        one_miss[critical[-1]] = other
        assert not outcomes.success("task", quadrant, one_miss, 12, seed)
    mixed = ["strong-model", "weak-model"] * 6
    assert outcomes.success("task", "SAFE", mixed, 12, 0)
    assert not outcomes.success("task", "HARD", ["strong-model"] * 12, 12, 0)


def test_a_session_that_ended_early_fails_whatever_its_quadrant():
    outcomes = TaskOutcomes(TIERS)
    for quadrant in QUADRANTS:
        for model in TIERS:
            assert not outcomes.success("t", quadrant, [model] * 4, 5, seed=0)


def test_several_models_can_share_a_tier_and_a_series_is_accepted():
    outcomes = TaskOutcomes({"opus": "strong", "sonnet": "strong", "haiku": "weak"})
    served = pd.Series(["opus", "sonnet", "opus", "sonnet"])
    assert outcomes.success("t", "RESCUE", served, 4, seed=0)
    assert not outcomes.success("t", "LOSS", served, 4, seed=0)


@pytest.mark.parametrize(("p", "k"), [(0.3, 1), (0.7, 2), (0.5, 3)])
def test_random_routing_matches_the_closed_form(p, k):
    """Each turn goes to the strong model with probability p (keyed draws); over 8 seeds × 729
    tasks the success rate, and the rate within RESCUE and LOSS, fall within 4 standard errors of
    the closed form (a task's success is Bernoulli(q), q its expected_success)."""
    outcomes = TaskOutcomes(TIERS, critical_turns=k)
    table = swebench_pro()
    got: dict[str, list[bool]] = {q: [] for q in QUADRANTS}
    for seed in range(8):
        for task, _, _, quadrant in table.itertuples(index=False):
            n = _planned(task, seed, low=k, spread=30)
            served = [
                "strong-model" if uniforms(seed, "test-route", task, t)[0] < p else "weak-model"
                for t in range(n)
            ]
            got[quadrant].append(outcomes.success(task, quadrant, served, n, seed))
    assert all(got["SAFE"]) and not any(got["HARD"])
    for quadrant in ("RESCUE", "LOSS"):
        q = expected_success(quadrant, p, critical_turns=k)
        runs = got[quadrant]
        assert abs(sum(runs) / len(runs) - q) < 4 * math.sqrt(q * (1 - q) / len(runs)), quadrant
    counts = quadrant_counts(table)
    rate = expected_success_rate(counts, p, critical_turns=k)
    total = sum(len(v) for v in got.values())
    variance = sum(
        len(got[quadrant])
        * expected_success(quadrant, p, critical_turns=k)
        * (1 - expected_success(quadrant, p, critical_turns=k))
        for quadrant in QUADRANTS
    )
    assert abs(sum(map(sum, got.values())) / total - rate) < 4 * math.sqrt(variance) / total


def test_the_closed_form_ends_at_the_two_runs():
    table = swebench_pro()
    counts = quadrant_counts(table)
    assert expected_success_rate(counts, 1.0) == pytest.approx(table["strong_resolved"].mean())
    assert expected_success_rate(counts, 0.0) == pytest.approx(table["weak_resolved"].mean())
    # k = 1 is the straight line between them
    assert expected_success_rate(counts, 0.25) == pytest.approx(
        0.25 * table["strong_resolved"].mean() + 0.75 * table["weak_resolved"].mean()
    )
    assert expected_success("RESCUE", 0.5, critical_turns=3) == 0.125
    assert expected_success("LOSS", 0.25, critical_turns=2) == 0.5625


def test_bad_input_is_a_clear_error():
    outcomes = TaskOutcomes(TIERS)
    with pytest.raises(sy.ArgumentError, match="'t': served_models is empty"):
        outcomes.success("t", "SAFE", [], 3, 0)
    with pytest.raises(sy.ArgumentError, match="turn 1: model 'gpt-9' is not in tiers"):
        outcomes.success("t", "SAFE", ["strong-model", "gpt-9"], 3, 0)
    with pytest.raises(sy.ArgumentError, match="model nan is not in tiers"):
        outcomes.success("t", "SAFE", ["strong-model", float("nan")], 3, 0)
    with pytest.raises(sy.ArgumentError, match="unknown quadrant 'EASY'"):
        outcomes.success("t", "EASY", ["strong-model"], 3, 0)
    with pytest.raises(sy.ArgumentError, match="3 turns were served but planned_turns is 2"):
        outcomes.success("t", "SAFE", ["strong-model"] * 3, 2, 0)
    with pytest.raises(sy.ArgumentError, match="planned_turns must be ≥ 1, got 0"):
        outcomes.critical("t", 0, 0)
    with pytest.raises(sy.ArgumentTypeError, match="served_models must be a list"):
        outcomes.success("t", "SAFE", "strong-model", 3, 0)
    with pytest.raises(sy.ArgumentTypeError, match="seed must be an int"):
        outcomes.success("t", "SAFE", ["strong-model"], 3, 0.5)
    with pytest.raises(sy.ArgumentError, match=r"tiers\['m'\] is 'medium'"):
        TaskOutcomes({"m": "medium"})
    with pytest.raises(sy.ArgumentError, match="tiers is empty"):
        TaskOutcomes({})
    with pytest.raises(sy.ArgumentError, match="critical_turns must be ≥ 1, got 0"):
        TaskOutcomes(TIERS, critical_turns=0)
    with pytest.raises(sy.ArgumentError, match=r"strong_share must be in \[0, 1\], got 1.5"):
        expected_success("RESCUE", 1.5)
    with pytest.raises(sy.ArgumentError, match="unknown quadrant 'EASY'"):
        expected_success("EASY", 0.5)
    with pytest.raises(sy.ArgumentError, match="counts has unknown quadrant 'EASY'"):
        expected_success_rate({"SAFE": 3, "EASY": 1}, 0.5)
    with pytest.raises(sy.ArgumentError, match="counts holds no task"):
        expected_success_rate(dict.fromkeys(QUADRANTS, 0), 0.5)


def test_the_session_outcomes_page_runs_as_written():
    page = data_dir().parent / "docs" / "session-outcomes.md"
    if not page.is_file():  # an installed wheel carries the data, not the docs
        pytest.skip("docs/ is not next to the data")
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/session-outcomes.md", "exec"), namespace)
    assert namespace["outcomes"].critical("task-1", planned_turns=20, seed=0) == (11,)
    rate = sum(namespace["success"]) / len(namespace["success"])
    assert round(rate, 3) == 0.358
    assert (
        round(namespace["expected_success_rate"](quadrant_counts(swebench_pro()), 0.5), 3) == 0.357
    )
