"""Per-task results of any two models, paired into the task table that sessions are judged by.

A router between two agents wins or loses on the tasks one resolves and the other does not, so
the unit of data is a result per (task, model): resolved or not, optionally what it cost, and,
where a benchmark was run several times, one row per trial. :func:`pair_tasks` takes such a table
(a frame or a CSV path) from any source and gives the pair table that
:func:`~sykit.sessions.grounded_sessions` and :meth:`~sykit.sessions.TaskOutcomes.for_tasks`
take; :func:`~sykit.sessions.swebench_pro` and :func:`~sykit.sessions.openhands_index` are this
function on shipped tables.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import plain
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._results.metrics import _stacklevel_outside_package
from sykit.sessions._outcome import QUADRANTS

__all__ = ["EMPTY", "MISSING", "pair_tasks"]

#: What to do with a task that only one of the two models has a result for.
MISSING = ("warn", "drop", "error")

#: What an empty ``resolved`` cell means.
EMPTY = ("error", "unresolved", "missing")

#: The column names tried, in order, when a role's column is not named.
_ALIASES: dict[str, tuple[str, ...]] = {
    "task": ("task", "task_id", "instance_id"),
    "model": ("model", "run", "config"),
    "resolved": ("resolved",),
}


def pair_tasks(
    results: pd.DataFrame | str | os.PathLike[str],
    strong: str,
    weak: str,
    *,
    task: str | None = None,
    model: str | None = None,
    resolved: str | None = None,
    cost: str | None = None,
    trial: str | None = None,
    missing: str = "warn",
    empty: str = "error",
) -> pd.DataFrame:
    """The pair table of ``strong`` and ``weak`` from per-task results: one row per task both
    have a result for, sorted by task, with ``instance_id`` (the task id as a str: it becomes a
    session id), ``strong_resolved``, ``weak_resolved`` and ``quadrant`` (categorical over SAFE,
    RESCUE, LOSS, HARD).

        results = pd.DataFrame({"task": [...], "model": [...], "resolved": [...]})
        tasks = sy.sessions.pair_tasks(results, strong="big", weak="small")
        outcomes = sy.sessions.TaskOutcomes.for_tasks(tasks)
        sessions = sy.sessions.grounded_sessions(tasks)

    ``results`` has one row per (task, model): ``task``, ``model`` and ``resolved`` name its
    columns (unnamed, the first present of task / task_id / instance_id, model / run / config,
    and resolved). ``resolved`` holds bools or 0/1. An empty cell is an error
    (``empty="error"``), a failed attempt (``"unresolved"``) or no result at all
    (``"missing"``: the row is left out); ``attrs`` counts them either way.

    ``cost`` names a column of USD per attempt: the table gains ``strong_cost_usd`` and
    ``weak_cost_usd`` (NaN where the cell was empty), and ``attrs`` the mean cost per task of
    each model and their ``cost_ratio``, over the tasks both have a cost for.

    ``trial`` names a column numbering repeated attempts: then a (task, model) has one row per
    trial, ``strong_p`` and ``weak_p`` are the shares of trials resolved and ``strong_trials`` /
    ``weak_trials`` their counts; ``strong_resolved`` / ``weak_resolved`` say whether more than
    half the trials resolved it, so ``quadrant`` is a label, and :class:`TaskOutcomes` built with
    :meth:`~sykit.sessions.TaskOutcomes.for_tasks` draws each task's quadrant per seed from the
    two probabilities instead. Without ``trial``, a (task, model) twice is an error.

    A task only one model has a result for is left out of the pair: with a warning
    (``missing="warn"``), silently (``"drop"``) or refused with an error (``"error"``); ``attrs``
    says how many (``strong_only_tasks``, ``weak_only_tasks``).
    """
    frame = _read(results)
    if missing not in MISSING:
        raise ArgumentError(
            f"missing must be one of {', '.join(map(repr, MISSING))}, got {missing!r}"
        )
    if empty not in EMPTY:
        raise ArgumentError(f"empty must be one of {', '.join(map(repr, EMPTY))}, got {empty!r}")
    task = _column(frame, "task", task)
    model = _column(frame, "model", model)
    resolved = _column(frame, "resolved", resolved)
    if cost is not None:
        cost = _column(frame, "cost", cost)
    if trial is not None:
        trial = _column(frame, "trial", trial)
    models = _models(frame, model)
    for role, name in (("strong", strong), ("weak", weak)):
        if not isinstance(name, str):
            raise ArgumentTypeError(f"{role} must be a model name (str), got {type(name).__name__}")
        if name not in models:
            raise ArgumentError(
                f"unknown model {name!r} for {role}; column {model!r} has: "
                f"{', '.join(map(repr, models))}"
            )
    if strong == weak:
        raise ArgumentError(f"strong and weak are both {strong!r}; pair two different models")
    sides = {
        role: _side(frame, name, task, model, resolved, cost, trial, empty)
        for role, name in (("strong", strong), ("weak", weak))
    }
    s, w = sides["strong"], sides["weak"]
    common = s.index.intersection(w.index)
    only = {"strong": len(s) - len(common), "weak": len(w) - len(common)}
    if not len(common):
        raise ArgumentError(
            f"{strong!r} and {weak!r} have no task in common ({len(s)} and {len(w)} tasks); "
            "check the task ids agree"
        )
    if only["strong"] or only["weak"]:
        text = (
            f"{only['strong']} task(s) have a result for {strong!r} only and {only['weak']} for "
            f"{weak!r} only; the pair keeps the {len(common)} tasks both have"
        )
        if missing == "error":
            raise ArgumentError(f"{text}; pass missing='warn' or 'drop' to pair them anyway")
        if missing == "warn":
            warnings.warn(
                f"{text} (missing='drop' keeps them out silently)",
                UserWarning,
                stacklevel=_stacklevel_outside_package(),
            )
    common = _sorted(common)
    table = _pair(s.loc[common], w.loc[common], common, trial is not None, cost is not None)
    table.attrs.update(
        strong=strong,
        weak=weak,
        strong_only_tasks=only["strong"],
        weak_only_tasks=only["weak"],
        strong_empty_resolved=s.attrs["empty_resolved"],
        weak_empty_resolved=w.attrs["empty_resolved"],
    )
    if cost is not None:
        table.attrs.update(_cost_figures(table))
    return table


# -- reading and checking -------------------------------------------------------------------------


def _read(results: Any) -> pd.DataFrame:
    if isinstance(results, str | os.PathLike):
        path = os.fspath(results)
        if not os.path.isfile(path):
            raise ArgumentError(f"results: no file at {path!r}")
        problem = None
        try:
            results = pd.read_csv(path)
        except UnicodeDecodeError as exc:
            problem = f"not UTF-8 text ({exc.reason} at byte {exc.start}): is it a CSV file?"
        except pd.errors.EmptyDataError:
            problem = "the file is empty; give a CSV file with one row per (task, model)"
        except pd.errors.ParserError as exc:
            problem = f"not a readable CSV file ({' '.join(str(exc).split())})"
        if problem is not None:  # raised here, so no pandas error rides along as its context
            raise ArgumentError(f"results: {path!r}: {problem}")
        if results.empty:
            raise ArgumentError(f"results: {path!r} has no rows; give one row per (task, model)")
        return results
    if not isinstance(results, pd.DataFrame):
        raise ArgumentTypeError(
            f"results must be a DataFrame or the path of a CSV file, got {type(results).__name__}"
        )
    if results.empty:
        raise ArgumentError("results has no rows; give one row per (task, model)")
    return results


def _column(frame: pd.DataFrame, role: str, given: object) -> str:
    """The column playing ``role``: the one named, else the first of its aliases present."""
    columns = ", ".join(map(repr, frame.columns))
    if given is None:
        for alias in _ALIASES.get(role, ()):
            if alias in frame.columns:
                return alias
        tried = " / ".join(map(repr, _ALIASES.get(role, ())))
        raise ArgumentError(
            f"results has no {role} column (tried {tried}); name it with {role}=..., the "
            f"columns are: {columns}"
        )
    if not isinstance(given, str):
        raise ArgumentTypeError(f"{role} must be a column name (str), got {type(given).__name__}")
    if given not in frame.columns:
        raise ArgumentError(
            f"{role} column {given!r} is not in results; the columns are: {columns}"
        )
    return given


def _models(frame: pd.DataFrame, model: str) -> list[str]:
    values = frame[model]
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise ArgumentError(f"results row {row}: the {model!r} column is empty")
    return sorted({str(v) for v in values.tolist()})


def _side(
    frame: pd.DataFrame,
    name: str,
    task: str,
    model: str,
    resolved: str,
    cost: str | None,
    trial: str | None,
    empty: str,
) -> pd.DataFrame:
    """One model's results per task: ``resolved`` (share of trials resolved, 0/1 without
    trials), ``trials`` and ``cost`` (mean over trials, NaN when unknown), indexed by task."""
    rows = frame[frame[model].astype(str) == name]
    ids = rows[task]
    if ids.isna().any():
        at = int(ids.index[ids.isna().to_numpy()][0])
        raise ArgumentError(f"results row {at} ({name!r}): the task column {task!r} is empty")
    keys = [task] if trial is None else [task, trial]
    twice = rows[rows.duplicated(keys, keep=False)]
    if len(twice):
        first = twice.iloc[0]
        if trial is None:
            raise ArgumentError(
                f"model {name!r} has task {plain(first[task])!r} in {int((ids == first[task]).sum())} "
                "rows; give one row per (task, model), or name the column numbering repeated "
                "attempts with trial=..."
            )
        raise ArgumentError(
            f"model {name!r} has task {plain(first[task])!r} trial {plain(first[trial])!r} more "
            "than once"
        )
    done, unknown = _resolved(rows[resolved], resolved, name, task, ids)
    if unknown.any() and empty == "error":
        at = int(rows.index[unknown][0])
        raise ArgumentError(
            f"results row {at} ({name!r}, task {plain(ids.loc[at])!r}): {resolved!r} is empty in "
            f"{int(unknown.sum())} row(s) of {name!r}; pass empty='unresolved' (a failed "
            "attempt) or empty='missing' (no result) to say what it means"
        )
    keep = ~unknown if empty == "missing" else np.ones(len(rows), dtype=bool)
    values = pd.DataFrame(
        {
            "task": ids.to_numpy(dtype=object)[keep],
            "resolved": done[keep],
            "cost": _costs(rows, cost, name)[keep],
        }
    )
    grouped = values.groupby("task", sort=False)
    side = pd.DataFrame(
        {
            "resolved": grouped["resolved"].mean(),
            "trials": grouped.size(),
            "cost": grouped["cost"].mean(),
        }
    )
    side.attrs["empty_resolved"] = int(unknown.sum())
    return side


def _resolved(
    values: pd.Series, column: str, name: str, task: str, ids: pd.Series
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's result as 0.0/1.0 and whether its cell was empty (0.0 there); any other value
    is an error naming its row."""
    done = np.zeros(len(values))
    unknown = np.zeros(len(values), dtype=bool)
    for i, (at, value) in enumerate(values.items()):
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
            unknown[i] = True
        elif isinstance(value, bool | np.bool_) or (
            isinstance(value, int | float | np.integer | np.floating) and value in (0, 1)
        ):
            done[i] = float(value)
        else:
            raise ArgumentError(
                f"results row {at} ({name!r}, task {plain(ids.loc[at])!r}): {column!r} is "
                f"{plain(value)!r}; "
                "it must be True/False or 1/0 (a score? threshold it into resolved or not)"
            )
    return done, unknown


def _costs(rows: pd.DataFrame, cost: str | None, name: str) -> np.ndarray:
    if cost is None:
        return np.full(len(rows), np.nan)
    values = pd.to_numeric(rows[cost], errors="coerce")
    bad = values.isna() & rows[cost].notna()
    bad |= (values < 0) | np.isinf(values)
    if bad.any():
        at = int(rows.index[bad.to_numpy()][0])
        raise ArgumentError(
            f"results row {at} ({name!r}): cost {plain(rows.loc[at, cost])!r} is not a USD "
            "amount ≥ 0"
        )
    return values.to_numpy(dtype=float)


def _sorted(ids: pd.Index) -> pd.Index:
    """Tasks in their natural order (numbers as numbers), falling back to their text."""
    try:
        return ids.sort_values()
    except TypeError:
        return pd.Index(sorted(ids, key=str), dtype=object)


# -- the pair table -------------------------------------------------------------------------------


def _pair(
    s: pd.DataFrame, w: pd.DataFrame, common: pd.Index, trials: bool, costs: bool
) -> pd.DataFrame:
    ids = [str(t) for t in common]
    if len(set(ids)) < len(ids):
        dup = next(t for t in ids if ids.count(t) > 1)
        raise ArgumentError(f"task ids {dup!r} collide once written as text; make them distinct")
    sp = s["resolved"].to_numpy(dtype=float)
    wp = w["resolved"].to_numpy(dtype=float)
    strong = sp > 0.5  # without trials these are 0 or 1: resolved or not
    weak = wp > 0.5
    quadrant = np.select(
        [strong & weak, strong & ~weak, ~strong & weak], QUADRANTS[:3], default=QUADRANTS[3]
    )
    table = pd.DataFrame(
        {
            "instance_id": np.array(ids, dtype=object),
            "strong_resolved": strong,
            "weak_resolved": weak,
            "quadrant": pd.Categorical(quadrant, categories=QUADRANTS),
        }
    )
    if trials:
        table["strong_p"] = sp
        table["weak_p"] = wp
        table["strong_trials"] = s["trials"].to_numpy(dtype=np.int64)
        table["weak_trials"] = w["trials"].to_numpy(dtype=np.int64)
    if costs:
        table["strong_cost_usd"] = s["cost"].to_numpy(dtype=float)
        table["weak_cost_usd"] = w["cost"].to_numpy(dtype=float)
    return table


def _cost_figures(table: pd.DataFrame) -> dict[str, Any]:
    """Mean cost per task of each model over the tasks both have a cost for, and their ratio."""
    s = table["strong_cost_usd"]
    w = table["weak_cost_usd"]
    both = s.notna() & w.notna()
    strong_mean = float(s[both].mean()) if both.any() else math.nan
    weak_mean = float(w[both].mean()) if both.any() else math.nan
    ratio = strong_mean / weak_mean if weak_mean > 0 else math.nan
    return {
        "strong_cost_missing": int(s.isna().sum()),
        "weak_cost_missing": int(w.isna().sum()),
        "costed_tasks": int(both.sum()),
        "strong_cost_per_task_usd": strong_mean,
        "weak_cost_per_task_usd": weak_mean,
        "cost_ratio": ratio,
    }
