"""Per-session results of agent runs: sessions grounded in per-task results, one row per session
(turns, completion, task success, cost, time, switches, cache), a per-strategy summary with
intervals over sessions, and the two session plots."""

from __future__ import annotations

import pandas as pd
import pytest

import sykit as sy
from sykit.sessions import swebench_pro, synthetic_sessions
from sykit.sessions._grounded import grounded_sessions

TABLE = pd.DataFrame(
    {
        "instance_id": ["task-a", "task-b", "task-c", "task-d"],
        "quadrant": pd.Categorical(["SAFE", "RESCUE", "LOSS", "HARD"]),
    }
)


# -- grounded sessions -----------------------------------------------------------------------


def test_grounded_sessions_name_their_task_quadrant_and_length():
    sessions = grounded_sessions(TABLE, seed=3)
    assert sorted(s.id for s in sessions) == sorted(TABLE["instance_id"])
    quadrant = dict(zip(TABLE["instance_id"], TABLE["quadrant"].astype(str), strict=True))
    for session in sessions:
        for turn in session.turns:
            meta = turn.request.metadata
            assert meta["task_id"] == session.id
            assert meta["quadrant"] == quadrant[session.id]
            assert meta["planned_turns"] == len(session.turns)
        assert session.id in session.turns[0].request.messages[1]["content"]


def test_grounded_sessions_have_the_synthetic_shapes_and_a_seeded_prefix_order():
    sessions = grounded_sessions(TABLE, seed=3)
    shapes = synthetic_sessions(len(TABLE), seed=3)
    for mine, plain in zip(sessions, shapes, strict=True):
        assert [t.request.input_tokens for t in mine.turns] == [
            t.request.input_tokens for t in plain.turns
        ]
        assert [t.gap_s for t in mine.turns] == [t.gap_s for t in plain.turns]
        assert [t.request.metadata["tool_kind"] for t in mine.turns] == [
            t.request.metadata["tool_kind"] for t in plain.turns
        ]
    assert [s.id for s in grounded_sessions(TABLE, seed=3, n=2)] == [s.id for s in sessions[:2]]
    reordered = TABLE.iloc[::-1].reset_index(drop=True)
    assert [s.id for s in grounded_sessions(reordered, seed=3)] == [s.id for s in sessions]
    assert [s.id for s in grounded_sessions(TABLE, seed=4)] != [s.id for s in sessions]


def test_grounded_sessions_default_to_the_swebench_pro_pair():
    sessions = grounded_sessions(n=3)
    tasks = swebench_pro().set_index("instance_id")
    assert len(sessions) == 3
    for session in sessions:
        meta = session.turns[0].request.metadata
        assert meta["quadrant"] == tasks.loc[session.id, "quadrant"]


@pytest.mark.parametrize(
    ("tasks", "kwargs", "error", "match"),
    [
        ("not a frame", {}, sy.ArgumentTypeError, "DataFrame"),
        (TABLE.drop(columns="quadrant"), {}, sy.ArgumentError, "quadrant"),
        (TABLE.iloc[:0], {}, sy.ArgumentError, "no rows"),
        (TABLE.assign(quadrant=["SAFE", "EASY", "LOSS", "HARD"]), {}, sy.ArgumentError, "EASY"),
        (TABLE.assign(instance_id=["a", "a", "b", "c"]), {}, sy.ArgumentError, "more than once"),
        (TABLE.assign(instance_id=[1, 2, 3, 4]), {}, sy.ArgumentTypeError, "instance_id"),
        (TABLE, {"n": 5}, sy.ArgumentError, "4 tasks"),
        (TABLE, {"n": 0}, sy.ArgumentError, "between 1"),
        (TABLE, {"seed": 1.5}, sy.ArgumentTypeError, "seed"),
        (TABLE, {"trace": "openhands"}, sy.ArgumentTypeError, "AgentTrace"),
    ],
)
def test_grounded_sessions_refuse_bad_input(tasks, kwargs, error, match):
    with pytest.raises(error, match=match):
        grounded_sessions(tasks, **kwargs)
