"""Tasks in summaries: a session and its sub-agents count once, with their cost, tokens and time
rolled up, and the task's success decided over the turns of all its sessions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st
from sykit.sessions import TaskOutcomes, session_frame, session_summary, task_frame


def _host() -> sy.SimHost:
    """``weak`` answers 1 token in 1 s; ``strong`` 3 tokens in 2 s; 1 USD per 1M tokens each."""
    latency = sy.Latency(ttft=sy.dists.Constant(0.5), tokens_per_s=2.0)
    return sy.SimHost(
        {
            "weak": sy.ModelProfile(latency=latency, output_tokens=1, price_in=1.0, price_out=1.0),
            "strong": sy.ModelProfile(
                latency=latency, output_tokens=3, price_in=1.0, price_out=1.0
            ),
        }
    )


TASK = {"task_id": "t1", "quadrant": "RESCUE", "planned_turns": 3}


def _session(sid, turns, metadata=None, **kwargs) -> sy.sessions.Session:
    return sy.sessions.Session(
        [
            sy.sessions.Turn(sy.Request(f"{sid} {k}", input_tokens=100, metadata=metadata or {}))
            for k in range(turns)
        ],
        id=sid,
        **kwargs,
    )


def _family(task=None) -> list[sy.sessions.Session]:
    """``p`` (3 turns) spawns ``a`` (2 turns) and ``b`` (1 turn) at its turn 0; ``q`` is alone."""
    return [
        _session("p", 3, task),
        _session("a", 2, parent="p", parent_turn=0),
        _session("b", 1, parent="p", parent_turn=0),
        _session(
            "q", 2, {"task_id": "t2", "quadrant": "SAFE", "planned_turns": 2} if task else None
        ),
    ]


def _parent_on(parent_model, child_model):
    async def route(request, driver):
        child = request.metadata.get("parent_session") is not None
        return sy.route_to(child_model if child else parent_model, request)

    route.__name__ = f"{parent_model}+{child_model}"
    return route


def _run(parent_model="weak", child_model="weak", *, task=None, seed=0) -> sy.Result:
    return sy.run(
        _parent_on(parent_model, child_model),
        _family(task),
        host=_host(),
        progress=False,
        seed=seed,
    )


def _cost(input_tokens, output_tokens):
    return (input_tokens + output_tokens) / 1e6


def test_a_task_rolls_up_its_sessions_cost_tokens_and_span():
    result = _run("weak", "strong")
    sessions = session_frame(result)
    assert sessions["session_id"].tolist() == ["p", "a", "b", "q"]
    assert sessions["task_session"].tolist() == ["p", "p", "p", "q"]
    assert sessions["parent_turn"].tolist()[1:3] == [0, 0]
    tasks = task_frame(result).set_index("session_id")
    assert tasks.index.tolist() == ["p", "q"]
    p = tasks.loc["p"]
    assert (p["sub_agents"], p["turns"], p["served_turns"]) == (2, 6, 6)
    # a's last answer (3 tokens) and b's (3) are in p#1's and p#2's prompts
    assert p["input_tokens"] == 100 * 6 + 2 * 6
    assert p["output_tokens"] == 1 * 3 + 3 * 3
    assert p["cost_usd"] == pytest.approx(_cost(612, 12))
    assert p["cost_usd"] == pytest.approx(
        sessions.loc[sessions["task_session"] == "p", "cost_usd"].sum()
    )
    # p#0 0–1, a 1–3 and 3–5, b 1–3, p#1 5–6, p#2 6–7: from the first turn to the last end
    assert p["duration_s"] == 7.0
    assert bool(p["completed"])
    assert p["share_weak"] == 0.5 and p["share_strong"] == 0.5
    assert tasks.loc["q", "sub_agents"] == 0


def test_the_summary_counts_tasks_not_sessions():
    result = _run()
    summary = session_summary(result).iloc[0]
    tasks = task_frame(result)
    assert summary["sessions"] == 2
    assert summary["cost_per_session_usd"] == pytest.approx(tasks["cost_usd"].mean())
    assert summary["mean_turns"] == 4.0  # (6 + 2) / 2, not 8 / 4
    assert summary["time_to_finish_p50_s"] == pytest.approx(np.median(tasks["duration_s"]))


def test_without_sub_agents_a_task_is_its_session():
    result = _run()
    alone = sy.run(
        _parent_on("weak", "weak"),
        [s for s in _family() if s.parent is None],
        host=_host(),
        progress=False,
        strategy=result.strategy,
    )
    sessions = session_frame(alone)
    tasks = task_frame(alone)
    assert (tasks["sub_agents"] == 0).all()
    common = [c for c in tasks.columns if c in sessions.columns]
    pd.testing.assert_frame_equal(tasks[common], sessions[common])
    assert (sessions["task_session"] == sessions["session_id"]).all()


def test_a_childs_turns_can_decide_the_task():
    """RESCUE with one critical turn of six: the parent on the weak tier, the children on the
    strong one; the task succeeds exactly when the critical turn is a child's. Task order: p#0,
    then a#0, a#1, b#0 (spawned by p#0), then p#1, p#2."""
    outcomes = TaskOutcomes({"weak": "weak", "strong": "strong"})
    seen = set()
    for seed in range(8):
        result = _run("weak", "strong", task=TASK, seed=seed)
        frame = session_frame(result, outcomes=outcomes).set_index("session_id")
        (critical,) = outcomes.critical("t1", 6, seed)
        assert frame.loc["p", "success"] == float(critical in (1, 2, 3))
        assert np.isnan(frame.loc["a", "success"]) and np.isnan(frame.loc["b", "success"])
        assert (
            task_frame(result, outcomes=outcomes).set_index("session_id").loc["p", "planned_turns"]
            == 6
        )
        seen.add(critical in (1, 2, 3))
    assert seen == {True, False}


def test_all_strong_rescues_and_a_weak_child_loses_when_every_turn_is_critical():
    outcomes = TaskOutcomes({"weak": "weak", "strong": "strong"}, critical_turns=6)
    strong = task_frame(_run("strong", "strong", task=TASK), outcomes=outcomes)
    mixed = task_frame(_run("strong", "weak", task=TASK), outcomes=outcomes)
    assert strong["success"].tolist() == [1.0, 1.0]
    assert mixed["success"].tolist() == [0.0, 1.0]


def test_a_failed_child_fails_its_task():
    async def b_fails(request, driver):
        if request.metadata["session_id"] == "b":
            raise RuntimeError("sub-agent crashed")
        return sy.route_to("strong", request)

    result = sy.run(b_fails, _family(TASK), host=_host(), progress=False)
    outcomes = TaskOutcomes({"weak": "weak", "strong": "strong"})
    tasks = task_frame(result, outcomes=outcomes).set_index("session_id")
    assert not tasks.loc["p", "completed"]
    assert tasks.loc["p", "success"] == 0.0
    assert pd.isna(tasks.loc["p", "planned_turns"])  # b's length is not known


def test_a_child_naming_another_task_is_refused():
    sessions = _family(TASK)
    sessions[1] = _session(
        "a", 2, {"task_id": "other", "quadrant": "SAFE"}, parent="p", parent_turn=0
    )
    result = sy.run(_parent_on("weak", "weak"), sessions, host=_host(), progress=False)
    outcomes = TaskOutcomes({"weak": "weak", "strong": "strong"})
    with pytest.raises(sy.ArgumentError, match="session 'a' names task_id 'other'"):
        session_frame(result, outcomes=outcomes)


def test_a_frame_whose_parent_rows_are_missing_is_refused():
    result = _run()
    cut = result.requests[result.requests["session_id"] != "p"]
    broken = sy.Result(
        strategy=result.strategy,
        seed=result.seed,
        attempts=result.attempts[result.attempts["request_id"].isin(cut["request_id"])],
        requests=cut,
        wall_s=0.0,
        engine=result.engine,
    )
    with pytest.raises(sy.ArgumentError, match="session 'a' names parent 'p', which has no turn"):
        task_frame(broken)


def test_paired_differences_pair_tasks():
    cmp = sy.compare(
        {"weak": st.single("weak"), "strong": st.single("strong")},
        _family(),
        host=_host(),
        seeds=[0, 1],
        progress=False,
    )
    summary = session_summary(cmp, baseline="weak").set_index("strategy")
    assert summary.loc["strong", "paired_sessions"] == 2
    tasks = task_frame(cmp)
    by = tasks.groupby(["strategy", "session_id"])["cost_usd"].mean()
    expected = (by["strong"] - by["weak"]).mean()
    assert summary.loc["strong", "d_cost_per_session_usd"] == pytest.approx(expected)
