"""Agent-session workloads and outcomes: synthetic coding-agent sessions fitted to real agent
logs, your own logs replayed, and whether a task succeeded given which models served its turns.

    sessions = sy.sessions.synthetic_sessions(200, seed=0)        # OpenHands-shaped sessions
    mine = sy.sessions.load_transcripts("logs/")                   # your agent's JSONL logs
    runs = sy.sessions.load_transcripts("trajs/", format="mini-swe-agent")  # text-action agents
    tasks = sy.sessions.swebench_pro()                             # SWE-bench Pro, strong vs weak
    tasks = sy.sessions.openhands_index("claude-opus-4-5", "Qwen3-Coder-480B")  # with costs
    tasks = sy.sessions.pair_tasks(my_results, "big", "small")     # your own per-task results
    grounded = sy.sessions.grounded_sessions(tasks, n=200)          # a session per task
    outcomes = sy.sessions.TaskOutcomes({"strong": "strong", "weak": "weak"})
    sy.sessions.session_summary(comparison, outcomes=outcomes)     # success, cost, cache per strategy

A :class:`Session` is an agent's requests in order, each a :class:`Turn` sent some think time
after the previous answer (how sessions run: docs/sessions.md); the rest of this module builds,
judges and summarises them (docs/session-workloads.md, docs/session-outcomes.md,
docs/session-summaries.md, docs/stage-router.md).

    turns = [sy.Request("plan"), sy.sessions.Turn(sy.Request("edit"), gap_s=5.0)]
    res = sy.run(algo, [sy.sessions.Session(turns, id="task-1")], host=host)

May import: :mod:`sykit._base`, :mod:`sykit._results`, :mod:`sykit._world`, :mod:`sykit._viz`,
:mod:`sykit._run`.
"""

from typing import TYPE_CHECKING, Any

from sykit._world.sessions import Session, Turn
from sykit.sessions._agent.calibration import StageCalibration, calibrate_stage_router
from sykit.sessions._grounded import grounded_sessions
from sykit.sessions._openhands_index import openhands_index, openhands_index_configs
from sykit.sessions._outcome import (
    QUADRANTS,
    TIERS,
    TaskOutcomes,
    expected_success,
    expected_success_rate,
    quadrant_of,
    quadrant_probabilities,
)
from sykit.sessions._per_task import pair_tasks
from sykit.sessions._summary import CachePrices, session_frame, session_summary, task_frame
from sykit.sessions._swebench import quadrant_counts, swebench_pro, swebench_pro_runs
from sykit.sessions._synthetic import AgentTrace, fit_openhands, synthetic_sessions
from sykit.sessions._transcripts import load_transcripts
from sykit.sessions._trials import taubench_airline

if TYPE_CHECKING:
    from sykit.sessions._plots import plot_session_cost_success, plot_session_timeline

#: The plots load matplotlib's side of sykit when first used, not with ``import sykit``.
_PLOTS = frozenset({"plot_session_cost_success", "plot_session_timeline"})


def __getattr__(name: str) -> Any:
    if name in _PLOTS:
        from sykit.sessions import _plots

        plot = getattr(_plots, name)
        plot.__module__ = __name__
        globals()[name] = plot
        return plot
    raise AttributeError(f"module 'sykit.sessions' has no attribute {name!r}")


__all__ = [
    "QUADRANTS",
    "TIERS",
    "AgentTrace",
    "CachePrices",
    "Session",
    "StageCalibration",
    "TaskOutcomes",
    "Turn",
    "calibrate_stage_router",
    "expected_success",
    "expected_success_rate",
    "fit_openhands",
    "grounded_sessions",
    "load_transcripts",
    "openhands_index",
    "openhands_index_configs",
    "pair_tasks",
    "plot_session_cost_success",
    "plot_session_timeline",
    "quadrant_counts",
    "quadrant_of",
    "quadrant_probabilities",
    "session_frame",
    "session_summary",
    "swebench_pro",
    "swebench_pro_runs",
    "synthetic_sessions",
    "task_frame",
    "taubench_airline",
]

for _obj in (
    AgentTrace,
    CachePrices,
    Session,
    StageCalibration,
    TaskOutcomes,
    Turn,
    calibrate_stage_router,
    grounded_sessions,
    session_frame,
    session_summary,
    expected_success,
    expected_success_rate,
    fit_openhands,
    load_transcripts,
    openhands_index,
    openhands_index_configs,
    pair_tasks,
    quadrant_counts,
    quadrant_of,
    quadrant_probabilities,
    swebench_pro,
    swebench_pro_runs,
    synthetic_sessions,
    task_frame,
    taubench_airline,
):
    _obj.__module__ = __name__
del _obj
