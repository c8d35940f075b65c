"""Synthetic coding-agent sessions grounded in real per-task results: one session per task.

:func:`synthetic_sessions` gives sessions shaped like a real agent's calls, and
:func:`~sykit.sessions.swebench_pro` says which tasks a strong and a weak run resolved. Judging a
router by the tasks it gets done needs both at once: every session must name its task and the
task's quadrant, so that :class:`~sykit.sessions.TaskOutcomes` can decide it after the run, and
its planned length, so that a session that ended early (a failed turn) is known as such.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.rng import uniforms
from sykit._world.models import GroundTruth, Request, truth_of
from sykit._world.sessions import Session, Turn
from sykit.sessions._swebench import swebench_pro, task_quadrants
from sykit.sessions._synthetic import AgentTrace, _session, fit_openhands

__all__ = ["TASK_KEYS", "grounded_sessions"]

#: The metadata keys :func:`grounded_sessions` puts on every turn; they become columns of the
#: requests frame, which is where :func:`~sykit.sessions.session_frame` reads them.
TASK_KEYS = ("task_id", "quadrant", "planned_turns")


def grounded_sessions(
    tasks: pd.DataFrame | None = None,
    *,
    seed: int = 0,
    n: int | None = None,
    trace: AgentTrace | None = None,
) -> list[Session]:
    """One synthetic coding-agent session per task of ``tasks`` (a pair table from
    :func:`~sykit.sessions.pair_tasks`, :func:`~sykit.sessions.openhands_index` or
    :func:`~sykit.sessions.swebench_pro`, its default), with the task's ``instance_id`` as the
    session id. Judge the run with ``TaskOutcomes.for_tasks(tasks)``: for a table of trials its
    quadrant label is not the outcome, the probabilities are.

    Tasks are taken in a shuffle keyed by ``seed`` and each task's id (the same tasks come first
    whatever the table's order); ``n`` keeps the first ``n``, so ``n=50`` is a prefix of
    ``n=51``. Session ``i`` of the shuffle has the turns of ``synthetic_sessions(n, seed=seed,
    trace=trace)[i]`` (sizes, pauses, tools), with the task's id in its task message. Every
    turn's metadata also holds ``task_id`` (the instance id), which a router may read as it
    could know which task it works on; ``quadrant`` and ``planned_turns`` (the session's length
    as planned) are ground truth, which a real router cannot know: they reach the requests
    frame as columns, so a run can be judged per task after the fact (see
    :func:`~sykit.sessions.session_frame`), but never the router's ``request.metadata``.
    """
    if tasks is None:
        tasks = swebench_pro()
    ids, quadrants = _check_tasks(tasks)
    seed = check_int(seed, "seed")
    if n is None:
        n = len(ids)
    else:
        n = check_int(
            n,
            "n",
            low=1,
            high=len(ids),
            expected=f"between 1 and the {len(ids)} tasks of the table",
        )
    if trace is None:
        trace = fit_openhands()
    elif not isinstance(trace, AgentTrace):
        raise ArgumentTypeError(f"trace must be an AgentTrace, got {type(trace).__name__}")
    order = sorted(range(len(ids)), key=lambda i: uniforms(seed, "grounded-task", ids[i])[0])
    sessions = []
    for index, row in enumerate(order[:n]):
        drawn = _session(trace, seed, index, ids[row])
        hidden = {"quadrant": quadrants[row], "planned_turns": len(drawn.turns)}
        turns = [_with_task(turn, ids[row], hidden) for turn in drawn.turns]
        sessions.append(Session(turns, id=ids[row]))
    return sessions


def _with_task(turn: Turn, task_id: str, hidden: dict[str, object]) -> Turn:
    """``turn`` with the task's id in its metadata and the task's truth (``hidden``) as ground
    truth columns, out of the router's sight (turns are immutable: a copy)."""
    request = turn.request
    truth = truth_of(request)
    if truth is None:
        truth = GroundTruth(columns=hidden)
    else:
        truth = replace(truth, columns={**truth.columns, **hidden})
    copy = Request(
        [dict(m) for m in request.messages],
        tools=[dict(t) for t in request.tools],
        input_tokens=request.input_tokens,
        max_output_tokens=request.max_output_tokens,
        metadata={**request.metadata, "task_id": task_id},
    )
    return Turn(copy.with_truth(truth), gap_s=turn.gap_s)


def _check_tasks(tasks: object) -> tuple[list[str], list[str]]:
    """The tasks' ids and quadrants, checked: a task table (:func:`task_quadrants`) with at least
    one row and unique, non-empty string ``instance_id`` values (they become session ids)."""
    pairs = task_quadrants(tasks)
    if not pairs:
        raise ArgumentError("tasks has no rows; give at least one task")
    seen: set[str] = set()
    for row, (task, _) in enumerate(pairs):
        if not isinstance(task, str) or not task:
            raise ArgumentTypeError(
                f"tasks row {row}: instance_id must be a non-empty str, got {task!r}"
            )
        if task in seen:
            raise ArgumentError(f"tasks has instance_id {task!r} more than once")
        seen.add(task)
    return [str(task) for task, _ in pairs], [quadrant for _, quadrant in pairs]
