"""Repeated trials of one agent on the same tasks, the data a per-task success probability needs.

A single run says whether a task was resolved once; agent runs are noisy, so part of what looks
like a difference between two models is a difference between two draws. Benchmarks that ran each
task several times measure the noise: the share of a task's trials resolved is its success
probability. The shipped example (``datasets/agentic/taubench_gpt4o_airline_trials.csv``, see
``datasets/PROVENANCE.md``) is tau-bench's airline domain with GPT-4o: 50 customer-service tasks,
4 trials each.
"""

from __future__ import annotations

import pandas as pd

from sykit._base.files import read_table

__all__ = ["TAUBENCH_MODEL", "taubench_airline"]

_TABLE = "agentic/taubench_gpt4o_airline_trials.csv"

#: The model of the shipped tau-bench trials.
TAUBENCH_MODEL = "gpt-4o"


def taubench_airline() -> pd.DataFrame:
    """tau-bench airline with GPT-4o, one row per (task, trial): ``task_id`` (0–49), ``trial``
    (0–3), ``model`` (``"gpt-4o"``), ``resolved`` (the trial's reward was 1) and the trial's
    sizes (``reward``, message and tool-call counts, ``total_chars``, ``tool_names``), ready for
    :func:`~sykit.sessions.pair_tasks` with ``trial="trial"``. A copy: change it freely.

    It is one model's trials: pair it with another model's trials of the same tasks (rows with
    their own ``model`` name), or with a copy of itself to check that routing between two
    equally good models changes nothing (docs/session-outcomes.md)."""
    table = read_table(_TABLE).copy()
    if set(table["reward"].unique()) - {0.0, 1.0}:
        raise ValueError(f"{_TABLE}: a reward is neither 0 nor 1")
    table.insert(2, "model", TAUBENCH_MODEL)
    table.insert(3, "resolved", table["reward"] == 1.0)
    return table
