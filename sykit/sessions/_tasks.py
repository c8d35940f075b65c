"""Tasks: a root session and its sub-agents' sessions, folded into one unit of work.

A sub-agent (``sy.sessions.Session(..., parent=...)``) does part of its parent's task: its cost,
tokens and time are the task's, and its turns can decide whether the task succeeds. Summaries
therefore count tasks, not sessions; a run without sub-agents has one task per session, and its task
rows equal its session rows. docs/session-summaries.md defines the columns and the success rule.

Every function here reads the per-turn and per-session frames :mod:`sykit.sessions._summary`
builds (one session per ``_group``, session rows in group order), so it imports nothing of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError
from sykit.sessions._outcome import TaskOutcomes

__all__ = ["fold_tasks", "task_models", "task_roots", "task_success"]

#: Session columns summed over a task's sessions; a task is unknown where one session is.
_SUMS = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "switch_cold_tokens",
    "switch_cost_usd",
)


def task_roots(sessions: pd.DataFrame) -> np.ndarray:
    """Per session row, the row of its task's root session (its parents followed up, within its
    strategy and seed)."""
    roots = np.arange(len(sessions))
    if "parent_session" not in sessions.columns:
        return roots
    parents = sessions["parent_session"].to_numpy(dtype=object)
    if not any(_named(p) for p in parents):
        return roots
    keys = list(zip(sessions["strategy"], sessions["seed"], strict=True))
    ids = sessions["session_id"].tolist()
    row_of = {(*key, sid): i for i, (key, sid) in enumerate(zip(keys, ids, strict=True))}
    for i in range(len(sessions)):
        at, seen = i, {i}
        while _named(parents[at]):
            parent = row_of.get((*keys[at], parents[at]))
            if parent is None:
                raise ArgumentError(
                    f"session {sessions['session_id'].iloc[at]!r} names parent "
                    f"{parents[at]!r}, which has no turn in this run (strategy "
                    f"{keys[at][0]!r}, seed {keys[at][1]!r}); a sub-agent's task is its parent's"
                )
            if parent in seen:
                raise ArgumentError(
                    f"session {sessions['session_id'].iloc[i]!r}: its parents form a cycle"
                )
            seen.add(parent)
            at = parent
        roots[i] = at
    return roots


def task_success(
    turns: pd.DataFrame,
    sessions: pd.DataFrame,
    roots: np.ndarray,
    outcomes: TaskOutcomes | None,
) -> np.ndarray:
    """1.0 or 0.0 per task, on its root session's row (NaN on sub-agents' rows, and where the
    task cannot be decided): ``outcomes.success`` over the models that served the task's
    answered turns in task order (:func:`task_models`), with the planned turns of all its
    sessions. A task one of whose sessions ended early (or whose length is unknown) fails."""
    success = np.full(len(sessions), np.nan)
    if outcomes is None:
        return success
    ok = turns[turns["ok"]]
    served: dict[int, list[tuple[int, str]]] = {}
    for group, turn, model in zip(ok["_group"], ok["turn"], ok["served_model"], strict=True):
        served.setdefault(int(group), []).append((int(turn), model))
    children = _spawn_order(sessions)
    for root, rows in _members(roots).items():
        task, quadrant = sessions["task_id"].iloc[root], sessions["quadrant"].iloc[root]
        if _missing(task) or _missing(quadrant):
            continue
        _check_same_task(sessions, root, rows)
        planned = pd.to_numeric(sessions["planned_turns"].iloc[rows], errors="coerce")
        answered = sessions["served_turns"].to_numpy()[rows]
        if planned.isna().any() or (answered < planned.to_numpy()).any():
            success[root] = 0.0  # a session ended early (or never learnt its length): fails
            continue
        models = task_models(root, served, children)
        if not models:
            success[root] = 0.0
            continue
        seed = int(sessions["seed"].iloc[root])
        success[root] = float(
            outcomes.success(task, str(quadrant), models, int(planned.sum()), seed)
        )
    return success


def task_models(
    row: int,
    served: dict[int, list[tuple[int, str]]],
    children: Callable[[int], Sequence[tuple[int, int]]],
) -> list[str]:
    """The models that served a task's answered turns, in the order its turns count: a
    session's background sub-agents first, then its own turns, each followed by the whole of
    every session it spawned (depth first, in the order the sessions were given).
    ``served[row]`` lists a session's answered (turn, model) in turn order; ``children(row)``
    its sub-agents' rows with the turn that spawned each (-1: started with the session)."""
    models: list[str] = []
    spawned: dict[int, list[int]] = {}
    for child, turn in children(row):
        if turn < 0:
            models += task_models(child, served, children)
        else:
            spawned.setdefault(turn, []).append(child)
    for turn, model in served.get(row, []):
        models.append(model)
        for child in spawned.get(turn, []):
            models += task_models(child, served, children)
    return models


def fold_tasks(
    sessions: pd.DataFrame, turns: pd.DataFrame, roots: np.ndarray, models: list[str]
) -> pd.DataFrame:
    """One row per task from its sessions' rows: sums of turns, cost and tokens, the span from
    the root's first turn to the last turn's end, the root's task keys and success, and how many
    sub-agents it ran."""
    first = turns.groupby("_group", sort=True)["arrival_s"].min().to_numpy(dtype=float)
    last = turns.groupby("_group", sort=True)["end_s"].max().to_numpy(dtype=float)
    task = pd.Series(roots, index=sessions.index)
    grouped = sessions.groupby(task, sort=True)
    heads = np.unique(roots)
    frame = sessions.iloc[heads][["strategy", "seed", "session_id"]].reset_index(drop=True)
    frame["sub_agents"] = (grouped.size().to_numpy() - 1).astype(np.int64)
    for column in ("task_id", "quadrant"):
        frame[column] = sessions[column].to_numpy(dtype=object)[heads]
    planned = pd.to_numeric(sessions["planned_turns"], errors="coerce")
    unknown = planned.isna().groupby(task).any().to_numpy()
    total = planned.groupby(task).sum().to_numpy(dtype=float)
    missing = np.array(None, dtype=object)
    frame["planned_turns"] = pd.array(np.where(unknown, missing, total), dtype="Int64")
    frame["turns"] = grouped["turns"].sum().to_numpy(dtype=np.int64)
    served = grouped["served_turns"].sum().to_numpy(dtype=np.int64)
    frame["served_turns"] = served
    frame["completed"] = grouped["completed"].all().to_numpy(dtype=bool)
    frame["success"] = sessions["success"].to_numpy(dtype=float)[heads]
    frame["cost_usd"] = grouped["cost_usd"].sum().to_numpy(dtype=float)
    end = pd.Series(last, index=sessions.index).groupby(task).max().to_numpy()
    frame["duration_s"] = end - first[heads]
    frame["switches"] = grouped["switches"].sum().to_numpy(dtype=np.int64)
    weights = sessions["served_turns"].to_numpy(dtype=float)
    for column in models:
        on_model = pd.Series(sessions[column].fillna(0.0).to_numpy() * weights, index=task.index)
        with np.errstate(divide="ignore", invalid="ignore"):
            frame[column] = np.where(
                served > 0, on_model.groupby(task).sum().to_numpy() / served, np.nan
            )
    for column in _SUMS:
        if column not in sessions.columns:
            continue
        values = sessions[column].astype(float)
        unknown = values.isna().groupby(task).any().to_numpy()
        frame[column] = np.where(unknown, np.nan, values.groupby(task).sum().to_numpy())
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["cache_hit_rate"] = np.where(
            frame["input_tokens"] > 0, frame["cached_input_tokens"] / frame["input_tokens"], np.nan
        )
    ordered = ["strategy", "seed", "session_id", "sub_agents", "task_id", "quadrant"]
    ordered += ["planned_turns", "turns", "served_turns", "completed", "success", "cost_usd"]
    ordered += ["duration_s", "switches", *models, *[c for c in _SUMS if c in frame.columns]]
    ordered.insert(ordered.index("switch_cold_tokens"), "cache_hit_rate")
    return frame[ordered]


# -- helpers --------------------------------------------------------------------------------------


def _members(roots: np.ndarray) -> dict[int, list[int]]:
    """Per root row, the rows of its task (the root first, then in row order)."""
    members: dict[int, list[int]] = {}
    for row, root in enumerate(roots):
        members.setdefault(int(root), []).append(row)
    return members


def _spawn_order(sessions: pd.DataFrame) -> Callable[[int], Sequence[tuple[int, int]]]:
    """A function giving, per session row, its sub-agents' rows and the turn that spawned each
    (-1: started with the session), in row order."""
    children: dict[int, list[tuple[int, int]]] = {}
    if "parent_session" in sessions.columns:
        keys = list(
            zip(sessions["strategy"], sessions["seed"], sessions["session_id"], strict=True)
        )
        row_of = {key: i for i, key in enumerate(keys)}
        parents = sessions["parent_session"].to_numpy(dtype=object)
        spawned_at = (
            sessions["parent_turn"].to_numpy(dtype=object)
            if "parent_turn" in sessions.columns
            else np.full(len(sessions), None, dtype=object)
        )
        for row, parent in enumerate(parents):
            if not _named(parent):
                continue
            at = row_of[(keys[row][0], keys[row][1], parent)]
            turn = -1 if _missing(spawned_at[row]) else int(spawned_at[row])
            children.setdefault(at, []).append((row, turn))
    return lambda row: children.get(row, [])


def _check_same_task(sessions: pd.DataFrame, root: int, rows: list[int]) -> None:
    """A sub-agent that names a task names its parent's."""
    for column in ("task_id", "quadrant"):
        want = sessions[column].iloc[root]
        for row in rows:
            value = sessions[column].iloc[row]
            if not _missing(value) and value != want:
                raise ArgumentError(
                    f"session {sessions['session_id'].iloc[row]!r} names {column} {value!r}, "
                    f"but its task's root session {sessions['session_id'].iloc[root]!r} names "
                    f"{want!r}; a sub-agent works on its parent's task"
                )


def _named(value: Any) -> bool:
    return not _missing(value)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA
