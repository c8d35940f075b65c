"""Switchyard's calibration recipe for the stage router's ``confidence_threshold``.

Reference §C.5 "Calibration guidance" (Switchyard's docs/routing_algorithms/stage_router_routing.md,
"Calibrating the threshold from run data"): run the tasks on the capable model alone and on the
efficient model alone, sort the tasks both runs cover into quadrants, replay the stage router's
scorer over the sessions at candidate thresholds, and take the lowest threshold that rescues the
RESCUE tasks without over-escalating the LOSS ones. Here the runs are sykit runs of agent
sessions, a task's result comes from the per-task table (``sy.sessions.swebench_pro()``) through
``sy.sessions.TaskOutcomes``, and "rescues" and "over-escalates" are counted the way that model
counts a routed session's success, so the figures are the ones a run at that threshold would give.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sykit._base.checks import check_probability
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import RequestStatus
from sykit._results.result import Comparison, Result
from sykit._world.sessions import Session
from sykit.sessions._agent.stage import default_tier, pick_tier
from sykit.sessions._agent.tool_signals import DEFAULT_RECENT_WINDOW, ToolSemantics, tool_signals
from sykit.sessions._outcome import QUADRANTS, TaskOutcomes, quadrant_of
from sykit.sessions._swebench import task_quadrants

__all__ = ["DEFAULT_THRESHOLDS", "StageCalibration", "calibrate_stage_router"]

#: The candidate thresholds: 0, 0.05, …, 1.
DEFAULT_THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(21))


@dataclass(frozen=True, eq=False)
class StageCalibration:
    """The chosen ``threshold`` and what it was chosen from.

    ``quadrants`` counts the sessions both runs served by SAFE / RESCUE / LOSS / HARD (from the
    two runs' task results); ``rescued`` is how many RESCUE sessions the replay at ``threshold``
    gets done (every critical turn on the capable model), ``spoiled`` how many LOSS sessions it
    loses (a critical turn on the capable model). ``sweep`` has one row per candidate threshold:
    ``threshold, rescued, spoiled, net`` (rescued − spoiled) and ``capable_share`` (of the
    replayed turns). ``sessions`` were used; ``left_out`` were not (not served by both runs, or no
    row in the task table)."""

    threshold: float
    rescued: int
    spoiled: int
    quadrants: Mapping[str, int]
    sweep: pd.DataFrame
    sessions: int
    left_out: int


def calibrate_stage_router(
    sessions: Sequence[Session],
    capable_run: Result | Comparison,
    efficient_run: Result | Comparison,
    tasks: pd.DataFrame,
    *,
    thresholds: Iterable[float] = DEFAULT_THRESHOLDS,
    default: str | None = None,
    recent_turn_window: int = DEFAULT_RECENT_WINDOW,
    tool_semantics: Mapping[str, Iterable[str]] | None = None,
    task_key: str = "task_id",
    critical_turns: int = 1,
    seed: int | None = None,
) -> StageCalibration:
    """The lowest ``confidence_threshold`` that rescues RESCUE tasks without over-escalating LOSS
    tasks, from a run of ``sessions`` on the capable model alone and one on the efficient model
    alone (each a Result, or a Comparison holding one; the efficient run may cover a subset).

    A session's task is ``metadata[task_key]`` of its first turn, or else its id; ``tasks`` has
    one row per task with ``instance_id`` and ``quadrant`` (``sy.sessions.swebench_pro()``, whose
    strong run stands for the capable model). Each run's result for a session is
    ``TaskOutcomes.success`` over the models that served it (a session that ended early failed),
    and the two results give the session's quadrant. Then, per candidate threshold, the stage
    router's signals are replayed over every planned turn (an undecided turn takes the default
    tier, ``default`` as in :func:`stage_router`: no judge is replayed) and a session counts as
    rescued or spoiled as ``TaskOutcomes`` (``critical_turns``, ``seed``: the capable run's seed
    by default) decides it. The chosen threshold gets the most sessions done (rescued − spoiled);
    among equals, the one escalating the fewest turns (the same tasks for less); among those, the
    lowest."""
    capable_run = _one_result(capable_run, "capable_run")
    efficient_run = _one_result(efficient_run, "efficient_run")
    capable = _only_model(capable_run, "capable_run")
    efficient = _only_model(efficient_run, "efficient_run")
    if capable == efficient:
        raise ArgumentError(
            f"capable_run and efficient_run were both served by {capable!r}; give a run of each "
            "model alone"
        )
    default = default_tier(default, capable, efficient)
    candidates = _thresholds(thresholds)
    semantics = ToolSemantics.of(tool_semantics)
    quadrant_of_task = dict(task_quadrants(tasks))
    if not isinstance(task_key, str):
        raise ArgumentTypeError(f"task_key must be a metadata key (str), got {task_key!r}")
    outcomes = TaskOutcomes({capable: "strong", efficient: "weak"}, critical_turns=critical_turns)
    seed = capable_run.seed if seed is None else seed
    if not isinstance(sessions, Sequence) or not all(isinstance(s, Session) for s in sessions):
        raise ArgumentTypeError(
            "sessions must be a list of sy.sessions.Session (the ones both runs ran)"
        )
    ids = [
        position if session.id is None else session.id for position, session in enumerate(sessions)
    ]
    twice = next((sid for sid, n in Counter(ids).items() if n > 1), None)
    if twice is not None:
        raise ArgumentError(
            f"sessions holds session {twice!r} more than once, so its task would be counted "
            "twice; give each session once (the list the runs ran)"
        )
    served = {
        "capable": _served(capable_run, "capable_run"),
        "efficient": _served(efficient_run, "efficient_run"),
    }

    used: list[tuple[Any, str, list[Any]]] = []  # (task, quadrant, per-turn signal picks)
    counts = dict.fromkeys(QUADRANTS, 0)
    left_out = 0
    for position, session in enumerate(sessions):
        sid = position if session.id is None else session.id
        task = session.turns[0].request.metadata.get(task_key, sid)
        planned = len(session.turns)
        if task not in quadrant_of_task or any(sid not in s for s in served.values()):
            left_out += 1
            continue
        table_quadrant = quadrant_of_task[task]
        results = [  # a session whose first turn failed served nothing: it failed
            bool(served[arm][sid])
            and outcomes.success(task, table_quadrant, served[arm][sid], planned, seed)
            for arm in ("capable", "efficient")
        ]
        quadrant = quadrant_of(*results)
        counts[quadrant] += 1
        picks = [
            pick_tier(
                tool_signals(
                    turn.request.messages, window=recent_turn_window, tool_semantics=semantics
                ),
                0.0,
            )
            for turn in session.turns
        ]
        used.append((task, quadrant, picks))
    if not used:
        raise ArgumentError(
            f"no session is served by both runs and has a task in tasks (tasks are read from "
            f"metadata[{task_key!r}] or the session id; {left_out} sessions were left out)"
        )

    rows = []
    for threshold in candidates:
        rescued = spoiled = capable_turns = turns = 0
        for task, quadrant, picks in used:
            models = [_model_at(p, threshold, capable, efficient, default) for p in picks]
            capable_turns += models.count(capable)
            turns += len(models)
            if quadrant in ("RESCUE", "LOSS"):
                ok = outcomes.success(task, quadrant, models, len(models), seed)
                rescued += quadrant == "RESCUE" and ok
                spoiled += quadrant == "LOSS" and not ok
        rows.append(
            {
                "threshold": threshold,
                "rescued": rescued,
                "spoiled": spoiled,
                "net": rescued - spoiled,
                "capable_share": capable_turns / turns,
            }
        )
    sweep = pd.DataFrame(rows)
    # the most tasks done; among equals the least escalation (the same tasks for fewer capable
    # turns); among identical routings the lowest threshold
    best = sweep.sort_values(["net", "capable_share", "threshold"], ascending=[False, True, True])
    best = best.iloc[0]
    return StageCalibration(
        threshold=float(best["threshold"]),
        rescued=int(best["rescued"]),
        spoiled=int(best["spoiled"]),
        quadrants=counts,
        sweep=sweep,
        sessions=len(used),
        left_out=left_out,
    )


def _model_at(pick: Any, threshold: float, capable: str, efficient: str, default: str) -> str:
    """The model a turn goes to at ``threshold``, from its pick at threshold 0 (the rules before
    the scorer do not depend on the threshold; the scorer decides only at or above it)."""
    tier = pick.tier
    if pick.source == "dimensions" and pick.confidence < threshold:
        tier = None
    if tier is None:
        return default
    return capable if tier == "capable" else efficient


def _one_result(run: Any, what: str) -> Result:
    if isinstance(run, Result):
        return run
    if isinstance(run, Comparison):
        if len(run.results) != 1:
            raise ArgumentError(
                f"{what} is a Comparison of {len(run.results)} runs; pass the one run, e.g. "
                f"cmp[name] or cmp.result(name, seed=...) (strategies: {run.strategies})"
            )
        return run.results[0]
    raise ArgumentTypeError(
        f"{what} must be a sy.Result or sy.Comparison, got {type(run).__name__}"
    )


def _only_model(run: Result, what: str) -> str:
    requests = run.requests
    if "session_id" not in requests.columns:
        raise ArgumentError(f"{what} is not a run of agent sessions (no session_id column)")
    models = (
        requests.loc[requests["status"] == RequestStatus.OK, "served_model"].astype(str).unique()
    )
    if len(models) != 1:
        raise ArgumentError(
            f"{what} served {sorted(models)}; calibration needs a run where one model served every "
            "turn (e.g. sy.strategies.single(model))"
        )
    return str(models[0])


def _served(run: Result, what: str) -> dict[Any, list[str]]:
    """Per session id: the models that served its turns, in turn order (a session whose first
    turn failed served nothing and counts as ended early)."""
    if "turn" not in run.requests.columns:
        raise ArgumentError(
            f"{what} has a session_id but no turn column: run the sessions as a list of "
            "sy.sessions.Session, so that each turn is numbered"
        )
    requests = run.requests.sort_values(["session_id", "turn"], kind="stable")
    served: dict[Any, list[str]] = {}
    for sid, frame in requests.groupby("session_id", sort=False, observed=True):
        served[sid] = (
            frame.loc[frame["status"] == RequestStatus.OK, "served_model"].astype(str).tolist()
        )
    return served


def _thresholds(given: Iterable[float]) -> list[float]:
    if isinstance(given, str) or not isinstance(given, Iterable):
        raise ArgumentTypeError("thresholds must be a list of numbers in [0, 1]")
    values = []
    for value in given:
        values.append(
            check_probability(
                value, "thresholds", expected="numbers in [0, 1]", type_error=ArgumentError
            )
        )
    if not values:
        raise ArgumentError("thresholds is empty; give at least one candidate")
    return sorted(set(values))
