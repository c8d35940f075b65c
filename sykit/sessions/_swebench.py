"""SWE-bench Pro per-task results of real agent runs, paired into quadrants for routing.

Which tasks a strong model resolves that a weak one does not (and the reverse) is what a router
between them can win or lose; benchmark averages hide it. The shipped table
(``datasets/agentic/swebench_pro_per_instance.csv``, see ``datasets/PROVENANCE.md``) holds one
resolved/unresolved result per run and task for nine runs; :func:`swebench_pro` pairs two of them
on the tasks both attempted, with :func:`~sykit.sessions.pair_tasks` as for any per-task table.
"""

from __future__ import annotations

import functools

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.files import read_table
from sykit.sessions._outcome import QUADRANTS
from sykit.sessions._per_task import pair_tasks

__all__ = [
    "DEFAULT_STRONG",
    "DEFAULT_WEAK",
    "quadrant_counts",
    "swebench_pro",
    "swebench_pro_runs",
]

_TABLE = "agentic/swebench_pro_per_instance.csv"

#: The default pair: Claude Sonnet 4.5 and Kimi K2 Instruct, both from the leaderboard setup
#: (SWE-agent 1.1.0, 250 turns, no cost limit), on the same 729 tasks.
DEFAULT_STRONG = "claude-45sonnet-10132025"
DEFAULT_WEAK = "kimi-k2-instruct-10132025"


@functools.cache
def _results() -> pd.DataFrame:
    """The per-task table, checked once: one 0/1 result per run and task (a damaged file is a
    ValueError naming the row, not a silently wrong pairing)."""
    table = read_table(_TABLE)
    missing = [c for c in ("run", "config", "instance_id", "resolved") if c not in table.columns]
    if missing:
        raise ValueError(f"{_TABLE} lacks column {missing[0]!r}")
    bad = table[~table["resolved"].isin([0, 1])]
    if len(bad):
        row = bad.iloc[0]
        raise ValueError(
            f"{_TABLE}: run {row['run']!r} task {row['instance_id']!r} has resolved = "
            f"{row['resolved']!r}; expected 0 or 1"
        )
    twice = table[table.duplicated(["run", "instance_id"], keep=False)]
    if len(twice):
        row = twice.iloc[0]
        raise ValueError(
            f"{_TABLE}: run {row['run']!r} has task {row['instance_id']!r} more than once"
        )
    return table


def swebench_pro_runs() -> list[str]:
    """The run names :func:`swebench_pro` accepts, sorted."""
    return sorted(_results()["run"].unique().tolist())


def swebench_pro(strong: str = DEFAULT_STRONG, weak: str = DEFAULT_WEAK) -> pd.DataFrame:
    """One row per task that both runs attempted, sorted by ``instance_id``: ``strong_resolved``,
    ``weak_resolved`` (bool) and ``quadrant`` (categorical over SAFE, RESCUE, LOSS, HARD).

    A task only one run attempted has no pair and is not a row; ``attrs`` says how many there
    were (``strong_only_tasks``, ``weak_only_tasks``) next to the two run names and configs."""
    runs = swebench_pro_runs()
    for role, run in (("strong", strong), ("weak", weak)):
        if not isinstance(run, str):
            raise ArgumentTypeError(f"{role} must be a run name (str), got {type(run).__name__}")
        if run not in runs:
            raise ArgumentError(
                f"unknown SWE-bench Pro run {run!r} for {role}; the table has: "
                f"{', '.join(map(repr, runs))}"
            )
    if strong == weak:
        raise ArgumentError(f"strong and weak are both {strong!r}; pair two different runs")
    table = _results()
    pair = pair_tasks(
        table, strong, weak, task="instance_id", model="run", resolved="resolved", missing="drop"
    )
    configs = table.drop_duplicates("run").set_index("run")["config"]
    # the attrs this table has always had, no more: a pair of single runs has no empty cells
    pair.attrs = {
        "strong": strong,
        "weak": weak,
        "strong_config": str(configs[strong]),
        "weak_config": str(configs[weak]),
        "strong_only_tasks": pair.attrs["strong_only_tasks"],
        "weak_only_tasks": pair.attrs["weak_only_tasks"],
    }
    return pair


def quadrant_counts(table: pd.DataFrame) -> dict[str, int]:
    """Tasks per quadrant, all four in SAFE, RESCUE, LOSS, HARD order (zeros included)."""
    if not isinstance(table, pd.DataFrame) or "quadrant" not in table.columns:
        raise ArgumentTypeError(
            "quadrant_counts takes a frame with a 'quadrant' column, such as swebench_pro()"
        )
    values = table["quadrant"].astype(object)
    unknown = values[~values.isin(QUADRANTS)]
    if len(unknown):
        raise ArgumentError(
            f"quadrant {unknown.iloc[0]!r} (row {unknown.index[0]!r}) is not one of "
            f"{', '.join(QUADRANTS)}"
        )
    counts = values.value_counts()
    return {q: int(counts.get(q, 0)) for q in QUADRANTS}


def task_quadrants(tasks: object) -> list[tuple[object, str]]:
    """``(instance_id, quadrant)`` per row of a task table, checked: a frame with the columns
    ``instance_id`` and ``quadrant`` (as :func:`swebench_pro` returns), every quadrant known."""
    if not isinstance(tasks, pd.DataFrame):
        raise ArgumentTypeError(
            f"tasks must be a DataFrame such as sy.sessions.swebench_pro(), got "
            f"{type(tasks).__name__}"
        )
    missing = [c for c in ("instance_id", "quadrant") if c not in tasks.columns]
    if missing:
        raise ArgumentError(
            f"tasks lacks column {missing[0]!r}; it needs instance_id and quadrant, as "
            "sy.sessions.swebench_pro() returns"
        )
    ids = tasks["instance_id"].tolist()
    quadrants = tasks["quadrant"].astype(object).tolist()
    for row, (task, quadrant) in enumerate(zip(ids, quadrants, strict=True)):
        if quadrant not in QUADRANTS:
            raise ArgumentError(
                f"tasks row {row} ({task!r}): quadrant {quadrant!r} is not one of "
                f"{', '.join(QUADRANTS)}"
            )
    return [(task, str(quadrant)) for task, quadrant in zip(ids, quadrants, strict=True)]
