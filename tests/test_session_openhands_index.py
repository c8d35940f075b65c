"""The OpenHands Index pairs any two of its 43 configurations: the quadrant counts and cost ratio
are recomputed from the raw table, and every empty or zero cell is counted, never dropped
unsaid."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit._base.files import data_dir
from sykit.sessions import (
    TaskOutcomes,
    openhands_index,
    openhands_index_configs,
    quadrant_counts,
)
from sykit.sessions._openhands_index import BENCHMARKS, _config

FOLDER = data_dir() / "agentic" / "openhands_index"
RAW = pd.read_csv(FOLDER / "openhands_index_per_instance.csv.gz")
SWE = RAW[RAW["benchmark"] == "swe-bench"]


def _raw(config: str) -> pd.DataFrame:
    return SWE[SWE["config"] == config].set_index("instance_id").sort_index()


def test_the_figure_in_the_sources_opus_45_against_qwen3_coder():
    tasks = openhands_index("claude-opus-4-5", "Qwen3-Coder-480B")
    assert len(tasks) == 500
    assert quadrant_counts(tasks) == {"SAFE": 297, "RESCUE": 86, "LOSS": 15, "HARD": 102}
    strong, weak = _raw("results/claude-opus-4-5"), _raw("results/Qwen3-Coder-480B")
    assert tasks["strong_resolved"].tolist() == strong["resolved"].astype(bool).tolist()
    assert tasks["strong_cost_usd"].tolist() == strong["cost_usd"].tolist()
    ratio = strong["cost_usd"].mean() / weak["cost_usd"].mean()
    assert tasks.attrs["cost_ratio"] == pytest.approx(ratio, rel=1e-12)
    assert round(tasks.attrs["cost_ratio"], 2) == 1.47
    assert tasks.attrs["strong_cost_per_task_usd"] == pytest.approx(1.7953082925)
    assert tasks.attrs["costed_tasks"] == 500
    assert (tasks.attrs["strong_agent"], tasks.attrs["strong_model"]) == (
        "OpenHands",
        "claude-opus-4-5",
    )
    assert tasks.attrs["benchmark"] == "swe-bench"


@pytest.mark.parametrize(
    ("strong", "weak", "counts", "ratio"),
    [
        ("claude-sonnet-4-5", "GLM-4.7", (342, 29, 25, 104), 2.24),
        ("GPT-5.5", "DeepSeek-V4-Pro", (345, 46, 21, 88), 38.18),
        ("Kimi-K2-Thinking", "Nemotron-3-Nano", (161, 185, 10, 144), 8.06),
        (
            "claude-opus-4-6",
            "alternative_agents/openhands_subagents/claude-opus-4-6",
            (364, 20, 20, 96),
            0.91,
        ),
    ],
)
def test_the_pairs_the_docs_quote(strong, weak, counts, ratio):
    tasks = openhands_index(strong, weak)
    assert tuple(quadrant_counts(tasks).values()) == counts
    assert round(tasks.attrs["cost_ratio"], 2) == ratio


def test_the_configurations_are_listed_with_model_agent_and_prices():
    configs = openhands_index_configs()
    assert len(configs) == 43 and configs["config"].is_monotonic_increasing
    assert set(configs["config"]) == set(RAW["config"])
    assert (configs["tasks"] == 500).all()
    opus = configs.set_index("config").loc["results/claude-opus-4-5"]
    assert (opus["agent"], opus["model"], opus["agent_version"]) == (
        "OpenHands",
        "claude-opus-4-5",
        "v1.8.3",
    )
    prices = [opus[c] for c in ("input_price", "output_price", "cache_read_price")]
    assert prices == [5.0, 25.0, 0.5] and opus["cache_write_price"] == 6.25
    assert opus["resolved"] == 383 and opus["resolve_rate"] == 0.766
    agents = set(configs["agent"])
    assert {"OpenHands", "Claude Code", "Codex", "Gemini CLI", "OpenHands Sub-agents"} == agents
    metadata = json.loads((FOLDER / "openhands_index_metadata.json").read_text())
    flash = configs.set_index("config").loc["results/Gemini-3-Flash"]
    assert metadata["results/Gemini-3-Flash"]["cache_read_price"] is None
    assert np.isnan(flash["cache_read_price"])  # no price given: NaN, not 0
    gaia = openhands_index_configs("gaia")
    assert len(gaia) == 43 and (gaia["tasks"] < 500).all()


def test_a_bare_model_name_is_the_openhands_run_of_it():
    bare = openhands_index("claude-opus-4-5", "Qwen3-Coder-480B")
    full = openhands_index("results/claude-opus-4-5", "results/Qwen3-Coder-480B")
    pd.testing.assert_frame_equal(bare, full)
    assert bare.attrs == full.attrs
    assert bare.attrs["strong"] == "results/claude-opus-4-5"


def test_an_empty_resolved_counts_as_unresolved_as_the_leaderboard_does():
    configs = openhands_index_configs().set_index("config")
    kimi = configs.loc["results/Kimi-K2-Thinking"]
    assert (kimi["resolved"], kimi["empty_resolved"], kimi["resolve_rate"]) == (346, 2, 0.692)
    tasks = openhands_index("Kimi-K2-Thinking", "Nemotron-3-Nano")
    assert tasks.attrs["strong_empty_resolved"] == 2 and tasks.attrs["weak_empty_resolved"] == 3
    assert int(tasks["strong_resolved"].sum()) == 346 and len(tasks) == 500
    with pytest.warns(
        UserWarning, match=r"3 task\(s\) have a result for 'results/Kimi-K2-Thinking' only and 2 "
    ):
        kept = openhands_index("Kimi-K2-Thinking", "Nemotron-3-Nano", empty="missing")
    assert len(kept) == 495  # 2 + 3 tasks without a result, none shared
    assert (kept.attrs["strong_only_tasks"], kept.attrs["weak_only_tasks"]) == (3, 2)
    with pytest.raises(sy.ArgumentError, match=r"empty must be 'unresolved' or 'missing'"):
        openhands_index("Kimi-K2-Thinking", "Nemotron-3-Nano", empty="error")


def test_empty_costs_are_nan_counted_and_left_out_of_the_means():
    tasks = openhands_index("claude-sonnet-4-5", "GLM-4.7")
    assert tasks.attrs["weak_cost_missing"] == 2 and tasks["weak_cost_usd"].isna().sum() == 2
    assert tasks.attrs["costed_tasks"] == 498
    both = tasks["weak_cost_usd"].notna()
    assert tasks.attrs["strong_cost_per_task_usd"] == pytest.approx(
        tasks.loc[both, "strong_cost_usd"].mean()
    )


def test_a_configuration_that_recorded_no_cost_has_none():
    tasks = openhands_index("alternative_agents/acp-codex/GPT-5.5", "GLM-5")
    assert tasks["strong_cost_usd"].isna().all() and tasks.attrs["strong_zero_cost"] == 500
    assert np.isnan(tasks.attrs["cost_ratio"])
    assert tasks.attrs["weak_zero_cost"] == 95  # a few zeros among real costs are kept
    assert (tasks["weak_cost_usd"] == 0).sum() == 95
    configs = openhands_index_configs().set_index("config")
    assert np.isnan(configs.loc["alternative_agents/acp-codex/GPT-5.5", "cost_per_task_usd"])
    assert configs.loc["results/GLM-5", "zero_cost"] == 95


def test_other_benchmarks_pair_their_common_tasks():
    every = openhands_index_configs("gaia").set_index("config")["tasks"]
    strong, weak = "results/claude-opus-4-5", "results/Nemotron-3-Nano"
    assert (every[strong], every[weak]) == (165, 100)
    with pytest.warns(UserWarning, match=r"65 task\(s\) have a result for 'results/claude-opus"):
        tasks = openhands_index(strong, weak, benchmark="gaia")
    assert len(tasks) == 100 and tasks.attrs["benchmark"] == "gaia"
    assert (tasks.attrs["strong_only_tasks"], tasks.attrs["weak_only_tasks"]) == (65, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = openhands_index(strong, weak, benchmark="gaia", missing="drop")
    pd.testing.assert_frame_equal(quiet, tasks)
    with pytest.raises(sy.ArgumentError, match=r"pass missing='warn' or 'drop'"):
        openhands_index(strong, weak, benchmark="gaia", missing="error")


def test_bad_names_are_clear_errors():
    with pytest.raises(
        sy.ArgumentError, match=r"unknown OpenHands Index configuration 'gpt-9'"
    ) as err:
        openhands_index("gpt-9", "GLM-5")
    assert "'results/claude-opus-4-5'" in str(err.value)
    with pytest.raises(sy.ArgumentError, match=r"unknown benchmark 'mmlu'"):
        openhands_index("claude-opus-4-5", "GLM-5", benchmark="mmlu")
    with pytest.raises(sy.ArgumentTypeError, match=r"weak must be a configuration name"):
        openhands_index("claude-opus-4-5", 4)
    # every configuration ran every benchmark; one that had not is named with those that did
    others = RAW[(RAW["benchmark"] == "gaia") & (RAW["config"] != "results/claude-opus-4-5")]
    with pytest.raises(
        sy.ArgumentError, match=r"'results/claude-opus-4-5' \(strong\) has no results on 'gaia'"
    ):
        _config("claude-opus-4-5", "strong", others, "gaia")
    assert set(BENCHMARKS) == set(RAW["benchmark"])


def test_a_pair_gives_the_outcome_model_of_its_two_configurations():
    tasks = openhands_index("claude-opus-4-5", "Qwen3-Coder-480B")
    outcomes = TaskOutcomes.for_tasks(tasks)
    assert dict(outcomes.tiers) == {
        "results/claude-opus-4-5": "strong",
        "results/Qwen3-Coder-480B": "weak",
    }
    row = tasks[tasks["quadrant"] == "RESCUE"].iloc[0]
    served = ["results/claude-opus-4-5"] * 3
    assert outcomes.success(row["instance_id"], "RESCUE", served, 3, seed=0)
