"""The OpenHands Index: 43 agent × model configurations on the same tasks, each with its cost.

One harness (OpenHands, plus a few other agents) running many models on the same benchmarks is
what pairing needs: any two configurations give the tasks only one of them resolves and what each
spent per task. The shipped table (``datasets/agentic/openhands_index/``, see
``datasets/PROVENANCE.md``) holds one row per configuration, benchmark and task, with
``resolved`` and ``cost_usd``; the metadata file gives each configuration's agent, model and
prices. :func:`openhands_index` pairs two configurations through
:func:`~sykit.sessions.pair_tasks`; :func:`openhands_index_configs` lists them.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.files import data_dir
from sykit.sessions._per_task import EMPTY, MISSING, _cost_figures, pair_tasks

__all__ = ["BENCHMARKS", "openhands_index", "openhands_index_configs"]

_FOLDER = "agentic/openhands_index"
_TABLE = f"{_FOLDER}/openhands_index_per_instance.csv.gz"
_METADATA = f"{_FOLDER}/openhands_index_metadata.json"

#: The benchmarks of the index: SWE-bench Verified (500 tasks), SWT-bench, GAIA,
#: SWE-bench Multimodal and Commit0.
BENCHMARKS = ("swe-bench", "swt-bench", "gaia", "swe-bench-multimodal", "commit0")

#: Where a bare model name points: the OpenHands agent's own run of it.
_DEFAULT_AGENT = "results/"

_PRICES = ("input_price", "output_price", "cache_read_price", "cache_write_price")


@functools.cache
def _results() -> pd.DataFrame:
    """The per-task table, read once; callers must not modify it."""
    table = pd.read_csv(data_dir() / _TABLE)
    missing = [
        c
        for c in ("config", "benchmark", "instance_id", "resolved", "cost_usd")
        if c not in table.columns
    ]
    if missing:
        raise ValueError(f"{_TABLE} lacks column {missing[0]!r}")
    return table


@functools.cache
def _metadata() -> dict[str, dict[str, Any]]:
    with open(data_dir() / _METADATA, encoding="utf-8") as handle:
        metadata: dict[str, dict[str, Any]] = json.load(handle)
    return metadata


def openhands_index_configs(benchmark: str = "swe-bench") -> pd.DataFrame:
    """One row per configuration of the index (43), sorted by name: ``config`` (the name
    :func:`openhands_index` takes), ``agent``, ``agent_version``, ``model``, ``release_date``,
    the model's prices in USD per 1M tokens (``input_price``, ``output_price``,
    ``cache_read_price``, ``cache_write_price``; NaN where the index gives none), and on
    ``benchmark``: ``tasks`` with a row (0 where the configuration did not run it),
    ``resolved``, ``resolve_rate`` (an empty result counted as unresolved, as the index's
    leaderboard does), ``cost_per_task_usd`` (mean over the tasks with a cost; NaN where every
    cost is 0, as the Codex configurations report: not recorded), the ``empty_resolved`` and
    ``empty_cost`` cells and the ``zero_cost`` ones."""
    benchmark = _check_benchmark(benchmark)
    table = _results()
    metadata = _metadata()
    rows = []
    for config in sorted(table["config"].unique()):
        meta = metadata.get(config, {})
        mine = table[(table["config"] == config) & (table["benchmark"] == benchmark)]
        known = mine["resolved"].dropna()
        resolved = int(known.astype(bool).sum())
        row: dict[str, Any] = {
            "config": config,
            "agent": meta.get("agent_name"),
            "agent_version": meta.get("agent_version"),
            "model": meta.get("model"),
            "release_date": meta.get("release_date"),
        }
        for price in _PRICES:
            value = meta.get(price)
            row[price] = float("nan") if value is None else float(value)
        row.update(
            tasks=len(mine),
            resolved=resolved,
            resolve_rate=resolved / len(mine) if len(mine) else float("nan"),
            cost_per_task_usd=float("nan")
            if _unrecorded(mine["cost_usd"])
            else float(mine["cost_usd"].mean()),
            empty_resolved=int(mine["resolved"].isna().sum()),
            empty_cost=int(mine["cost_usd"].isna().sum()),
            zero_cost=int((mine["cost_usd"] == 0).sum()),
        )
        rows.append(row)
    return pd.DataFrame(rows)


def openhands_index(
    strong: str,
    weak: str,
    *,
    benchmark: str = "swe-bench",
    empty: str = "unresolved",
    missing: str = "warn",
) -> pd.DataFrame:
    """The pair table of two configurations of the OpenHands Index on ``benchmark``, as
    :func:`~sykit.sessions.pair_tasks` gives it: ``instance_id``, ``strong_resolved``,
    ``weak_resolved``, ``quadrant``, ``strong_cost_usd`` and ``weak_cost_usd`` (NaN where the
    index has no cost), one row per task both ran.

        tasks = sy.sessions.openhands_index("claude-opus-4-5", "Qwen3-Coder-480B")
        sy.sessions.quadrant_counts(tasks)   # {'SAFE': 297, 'RESCUE': 86, 'LOSS': 15, 'HARD': 102}
        tasks.attrs["cost_ratio"]            # strong cost per task / weak cost per task

    ``strong`` and ``weak`` are names from :func:`openhands_index_configs`; a bare model name
    means the OpenHands agent's run of it (``"claude-opus-4-5"`` is
    ``"results/claude-opus-4-5"``). An empty ``resolved`` cell counts as unresolved by default,
    as the index's leaderboard counts it (``empty="missing"`` leaves those tasks out of the
    pair instead); ``attrs`` counts them (``strong_empty_resolved``, ``weak_empty_resolved``)
    and the empty costs (``strong_cost_missing``, ``weak_cost_missing``), next to each side's
    agent and model, the mean cost per task over the tasks both have a cost for and
    ``cost_ratio``. A side whose every cost is 0 (the Codex configurations) recorded none: its
    costs are NaN and the ratio too; a few zeros among real costs are counted
    (``strong_zero_cost``, ``weak_zero_cost``) and kept."""
    benchmark = _check_benchmark(benchmark)
    if empty not in EMPTY[1:]:
        raise ArgumentError(
            f"empty must be 'unresolved' or 'missing' (the index has {int(_results()['resolved'].isna().sum())} "
            f"empty resolved cells), got {empty!r}"
        )
    if missing not in MISSING:
        raise ArgumentError(
            f"missing must be one of {', '.join(map(repr, MISSING))}, got {missing!r}"
        )
    table = _results()
    rows = table[table["benchmark"] == benchmark]
    names = {
        role: _config(name, role, rows, benchmark)
        for role, name in (("strong", strong), ("weak", weak))
    }
    pair = pair_tasks(
        rows,
        names["strong"],
        names["weak"],
        task="instance_id",
        model="config",
        resolved="resolved",
        cost="cost_usd",
        empty=empty,
        missing=missing,
    )
    metadata = _metadata()
    pair.attrs["benchmark"] = benchmark
    for role, config in names.items():
        meta = metadata.get(config, {})
        pair.attrs[f"{role}_agent"] = meta.get("agent_name")
        pair.attrs[f"{role}_model"] = meta.get("model")
        column = f"{role}_cost_usd"
        pair.attrs[f"{role}_zero_cost"] = int((pair[column] == 0).sum())
        if _unrecorded(pair[column]):  # every cost 0: the agent recorded none
            pair[column] = float("nan")
    pair.attrs.update(_cost_figures(pair))
    return pair


def _unrecorded(costs: pd.Series) -> bool:
    """Whether a run's costs say nothing: none known, or every known one exactly 0."""
    known = costs.dropna()
    return not len(known) or bool((known == 0).all())


def _check_benchmark(benchmark: object) -> str:
    if not isinstance(benchmark, str):
        raise ArgumentTypeError(f"benchmark must be a str, got {type(benchmark).__name__}")
    if benchmark not in BENCHMARKS:
        raise ArgumentError(
            f"unknown benchmark {benchmark!r}; the index has {', '.join(map(repr, BENCHMARKS))}"
        )
    return benchmark


def _config(name: object, role: str, rows: pd.DataFrame, benchmark: str) -> str:
    """The full configuration name for ``name``: itself, or the OpenHands run of a bare model."""
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"{role} must be a configuration name (str), got {type(name).__name__}"
        )
    every = set(_results()["config"])
    config = name if name in every else _DEFAULT_AGENT + name
    if config not in every:
        raise ArgumentError(
            f"unknown OpenHands Index configuration {name!r} for {role}; the index has: "
            f"{', '.join(map(repr, sorted(every)))}"
        )
    here = set(rows["config"])
    if config not in here:
        raise ArgumentError(
            f"{config!r} ({role}) has no results on {benchmark!r}; the configurations that "
            f"do: {', '.join(map(repr, sorted(here)))}"
        )
    return config
