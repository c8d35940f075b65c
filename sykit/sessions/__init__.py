"""Agent-session workloads and outcomes: synthetic coding-agent sessions fitted to real agent
logs, your own logs replayed, and whether a task succeeded given which models served its turns.

    sessions = sy.sessions.synthetic_sessions(200, seed=0)        # OpenHands-shaped sessions
    mine = sy.sessions.load_transcripts("logs/")                   # your agent's JSONL logs
    tasks = sy.sessions.swebench_pro()                             # SWE-bench Pro, strong vs weak
    outcomes = sy.sessions.TaskOutcomes({"strong": "strong", "weak": "weak"})

``sy.Session`` and ``sy.Turn`` (how sessions run: docs/sessions.md) are at the top level; this
module holds what builds and judges them (docs/session-workloads.md, docs/session-outcomes.md).
"""

from ._outcome import (
    QUADRANTS,
    TIERS,
    TaskOutcomes,
    expected_success,
    expected_success_rate,
    quadrant_of,
)
from ._swebench import quadrant_counts, swebench_pro, swebench_pro_runs
from ._synthetic import AgentTrace, fit_openhands, synthetic_sessions
from ._transcripts import load_transcripts

__all__ = [
    "QUADRANTS",
    "TIERS",
    "AgentTrace",
    "TaskOutcomes",
    "expected_success",
    "expected_success_rate",
    "fit_openhands",
    "load_transcripts",
    "quadrant_counts",
    "quadrant_of",
    "swebench_pro",
    "swebench_pro_runs",
    "synthetic_sessions",
]

for _obj in (
    AgentTrace,
    TaskOutcomes,
    expected_success,
    expected_success_rate,
    fit_openhands,
    load_transcripts,
    quadrant_counts,
    quadrant_of,
    swebench_pro,
    swebench_pro_runs,
    synthetic_sessions,
):
    _obj.__module__ = __name__
del _obj
