"""Sub-agents: a parent turn spawns sessions, the parent's next turn waits for them and carries
their answers; a task's sessions share one slot; bad family trees are refused. Both event engines
give the same frames, at exact virtual times."""

from __future__ import annotations

import pandas as pd
import pytest

import sykit as sy

ENGINES = ["kernel", "asyncio"]


def _host() -> sy.SimHost:
    """``weak`` answers 1 token in 1 s exactly; ``slow`` answers 3 tokens in 2 s exactly."""
    weak = sy.ModelProfile(
        latency=sy.Latency(ttft=sy.dists.Constant(0.5), tokens_per_s=2.0),
        output_tokens=1,
        price_in=1.0,
        price_out=1.0,
    )
    slow = sy.ModelProfile(
        latency=sy.Latency(ttft=sy.dists.Constant(0.5), tokens_per_s=2.0),
        output_tokens=3,
        price_in=1.0,
        price_out=1.0,
    )
    return sy.SimHost({"weak": weak, "slow": slow})


async def by_session(request, driver):
    """Session ``b`` (and its descendants named ``b…``) on ``slow``, every other on ``weak``."""
    slow = str(request.metadata["session_id"]).startswith("b")
    return sy.route_to("slow" if slow else "weak", request)


def _session(sid, turns, gap=0.0, tokens=100, **kwargs) -> sy.sessions.Session:
    return sy.sessions.Session(
        [
            sy.sessions.Turn(sy.Request(f"{sid} {k}", input_tokens=tokens), gap_s=gap)
            for k in range(turns)
        ],
        id=sid,
        **kwargs,
    )


def _family(parent_gap=1.0) -> list[sy.sessions.Session]:
    """``p`` (3 turns) spawns ``a`` (2 turns of 1 s, 0.25 s apart) and ``b`` (1 turn of 2 s) at
    its turn 0."""
    return [
        _session("p", 3, gap=parent_gap),
        _session("a", 2, gap=0.25, parent="p", parent_turn=0),
        _session("b", 1, parent="p", parent_turn=0),
    ]


def _run(sessions, engine="kernel", **kwargs) -> sy.Result:
    kwargs.setdefault("progress", False)
    return sy.run(by_session, sessions, host=_host(), engine=engine, **kwargs)


def _times(result) -> dict[str, list[tuple[float, float]]]:
    r = result.requests
    return {
        sid: list(zip(g["start_s"], g["end_s"], strict=True))
        for sid, g in r.groupby("session_id", sort=False)
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_the_next_parent_turn_starts_when_the_later_child_ends(engine):
    result = _run(_family(), engine)
    assert _times(result) == {
        # p#1 waits for b (ends at 3) and a (ends at 3.25); its own pause ended at 2
        "p": [(0.0, 1.0), (3.25, 4.25), (5.25, 6.25)],
        "a": [(1.0, 2.0), (2.25, 3.25)],
        "b": [(1.0, 3.0)],
    }
    r = result.requests
    assert list(r["arrival_s"]) == list(r["start_s"])
    assert r["parent_session"].fillna("").tolist() == ["", "", "", "p", "p", "p"]
    assert r["parent_turn"].fillna(-1).tolist() == [-1, -1, -1, 0, 0, 0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pause_longer_than_the_children_decides_when_the_next_turn_starts(engine):
    result = _run(_family(parent_gap=4.0), engine)
    assert _times(result)["p"] == [(0.0, 1.0), (5.0, 6.0), (10.0, 11.0)]


def test_the_parent_turns_after_the_spawn_carry_the_childrens_answers():
    result = _run(_family())
    a = result.attempts.set_index("request_id")
    # a's last answer is 1 token (weak), b's 3 (slow): 4 more prompt tokens from p#1 on
    assert [a.loc[f"p#{k}", "input_tokens"] for k in range(3)] == [100, 104, 104]
    assert [a.loc[f"a#{k}", "input_tokens"] for k in range(2)] == [100, 100]
    assert a.loc["b#0", "input_tokens"] == 100


def test_both_engines_give_the_same_frames_for_families():
    sessions = [*_family(), *[_session(f"q{i}", 2, gap=0.5) for i in range(3)]]
    frames = [_run(sessions, engine, concurrency=2) for engine in ENGINES]
    pd.testing.assert_frame_equal(frames[0].requests, frames[1].requests)
    pd.testing.assert_frame_equal(frames[0].attempts, frames[1].attempts)


def test_both_engines_agree_on_synthetic_families_with_jittered_latencies():
    drawn = sy.sessions.synthetic_sessions(8, seed=3)
    sessions = []
    for i, session in enumerate(drawn):
        if i % 2 and len(drawn[i - 1].turns) > 2:
            sessions.append(
                sy.sessions.Session(
                    session.turns[:4], id=session.id, parent=drawn[i - 1].id, parent_turn=1
                )
            )
        else:
            sessions.append(session)
    jitter = sy.Latency(
        ttft=sy.dists.LogNormal(0.8, sigma=0.5), tokens_per_s=sy.dists.Uniform(40, 90)
    )
    host = sy.SimHost(
        {"weak": sy.ModelProfile(latency=jitter, output_tokens=sy.dists.LogNormal(90))}
    )

    async def weak(request, driver):
        return sy.route_to("weak", request)

    kwargs = {"host": host, "progress": False, "concurrency": 3, "seed": 5}
    kernel = sy.run(weak, sessions, engine="kernel", **kwargs)
    aio = sy.run(weak, sessions, engine="asyncio", **kwargs)
    pd.testing.assert_frame_equal(kernel.requests, aio.requests)
    pd.testing.assert_frame_equal(kernel.attempts, aio.attempts)
    assert kernel.requests["parent_session"].notna().sum() > 0


@pytest.mark.parametrize("engine", ENGINES)
def test_children_take_no_slot_and_the_next_task_starts_when_the_last_session_ends(engine):
    result = _run([*_family(), _session("q", 1)], engine, concurrency=1)
    # p's task ends at 6.25 (p#2); only then does q take the slot
    assert _times(result)["q"] == [(6.25, 7.25)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_background_sub_agent_starts_with_its_parent_and_holds_the_tasks_slot(engine):
    sessions = [
        _session("p", 2),
        _session("b", 3, parent="p"),  # slow: 2 s a turn, ends at 6 after p ended at 2
        _session("q", 1),
    ]
    result = _run(sessions, engine, concurrency=1)
    times = _times(result)
    assert times["p"] == [(0.0, 1.0), (1.0, 2.0)]  # p waits for nothing
    assert times["b"] == [(0.0, 2.0), (2.0, 4.0), (4.0, 6.0)]
    assert times["q"] == [(6.0, 7.0)]
    assert result.attempts.set_index("request_id").loc["p#1", "input_tokens"] == 100


@pytest.mark.parametrize("engine", ENGINES)
def test_grandchildren_hold_up_their_parent_which_holds_up_its_own(engine):
    sessions = [
        _session("p", 2),
        _session("c", 2, parent="p", parent_turn=0),
        _session("b", 1, parent="c", parent_turn=0),  # slow: 2 s, 3 tokens
    ]
    result = _run(sessions, engine)
    assert _times(result) == {
        "p": [(0.0, 1.0), (5.0, 6.0)],
        "c": [(1.0, 2.0), (4.0, 5.0)],
        "b": [(2.0, 4.0)],
    }
    a = result.attempts.set_index("request_id")
    assert (a.loc["c#1", "input_tokens"], a.loc["p#1", "input_tokens"]) == (103, 101)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_child_carries_nothing_and_its_parent_goes_on(engine):
    async def b_fails(request, driver):
        if request.metadata["session_id"] == "b":
            raise RuntimeError("sub-agent crashed")
        return await by_session(request, driver)

    result = sy.run(b_fails, _family(), host=_host(), engine=engine, progress=False)
    r = result.requests.set_index("request_id")
    assert r.loc["b#0", "status"] == "failed"
    assert r.loc["b#0", "end_s"] == 1.0
    assert r.loc["p#1", "start_s"] == 3.25  # still waits for a
    a = result.attempts.set_index("request_id")
    assert a.loc["p#1", "input_tokens"] == 101  # a's answer only


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_spawning_turn_spawns_nothing(engine):
    async def p_fails(request, driver):
        if request.metadata["session_id"] == "p":
            raise RuntimeError("parent crashed")
        return sy.route_to("weak", request)

    with pytest.warns(sy.AlgorithmWarning, match="parent crashed"):
        result = sy.run(p_fails, _family(), host=_host(), engine=engine, progress=False)
    assert result.requests["request_id"].tolist() == ["p#0"]


def test_open_loop_arrivals_are_one_per_task():
    sessions = [*_family(), _session("q", 1)]
    result = _run(sessions, arrivals=[0.0, 0.5])
    times = _times(result)
    assert times["q"] == [(0.5, 1.5)]
    assert times["p"][1] == (3.25, 4.25)
    with pytest.raises(sy.ArgumentError):
        _run(sessions, arrivals=[0.0, 0.5, 1.0, 1.5])


def test_a_strict_error_inside_a_child_stops_the_run_with_it():
    async def b_breaks(request, driver):
        if request.metadata["session_id"] == "b":
            raise KeyError("bug in the router")
        return sy.route_to("weak", request)

    with pytest.raises(KeyError, match="bug in the router"):
        sy.run(b_breaks, _family(), host=_host(), progress=False, strict=True)


def test_families_run_in_a_grid_on_workers():
    kwargs = {"host": _host(), "seeds": [0, 1], "progress": False}
    here = sy.grid({"s": by_session}, _family(), **kwargs)
    there = sy.grid({"s": by_session}, _family(), workers=2, **kwargs)
    pd.testing.assert_frame_equal(here.requests, there.requests)


def test_the_sub_agent_router_routes_spawned_children():
    from sykit.sessions._agent.subagent import subagent_router

    router = subagent_router(sy.strategies.single("weak"), target="slow")
    result = sy.run(router, _family(), host=_host(), progress=False)
    r = result.requests.set_index("request_id")
    assert r["served_model"].tolist() == ["weak"] * 3 + ["slow"] * 3
    # b and a on the slow model: a's two turns end at 3 and 5.25, p#1 waits for the later
    assert r.loc["p#1", "start_s"] == 5.25


# -- refused ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sessions", "match"),
    [
        (
            [_session("p", 2), _session("c", 1, parent="nobody", parent_turn=0)],
            "session 'c' names parent 'nobody', which is not a session of this run",
        ),
        (
            [_session("c", 1, parent="p", parent_turn=0)],
            "session 'c' names parent 'p'",
        ),
        (
            [_session("a", 2, parent="b", parent_turn=0), _session("b", 2, parent="a")],
            r"sessions 'a' → 'b' → 'a' form a cycle of parents",
        ),
        (
            [_session("a", 2, parent="a", parent_turn=0)],
            r"sessions 'a' → 'a' form a cycle",
        ),
        (
            [_session("p", 2), _session("p", 3), _session("c", 1, parent="p", parent_turn=0)],
            "session id 'p' is given to sessions 0 and 1; session ids must be unique; "
            "sub-agent 'c' names it as its parent",
        ),
        (
            [_session("p", 2), _session("c", 1, parent="p", parent_turn=1)],
            "session 'c': parent_turn=1 is its last turn of parent 'p'",
        ),
        (
            [_session("p", 2), _session("c", 1, parent="p", parent_turn=5)],
            "session 'c': parent_turn=5 is past its 2 turns of parent 'p'",
        ),
    ],
)
def test_bad_families_are_refused_naming_the_session(sessions, match):
    with pytest.raises(sy.ArgumentError, match=match):
        _run(sessions)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"parent_turn": 0}, sy.ArgumentError, "session 'c': parent_turn=0 needs parent="),
        ({"parent": "p", "parent_turn": -1}, sy.ArgumentError, "turns count from 0"),
        ({"parent": "p", "parent_turn": 1.0}, sy.ArgumentTypeError, "must be an int"),
        ({"parent": "p", "parent_turn": True}, sy.ArgumentTypeError, "must be an int"),
    ],
)
def test_bad_parent_turns_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        _session("c", 1, **kwargs)


def test_a_turn_may_not_name_parent_turn_in_its_metadata():
    clash = sy.sessions.Session([sy.Request("a", metadata={"parent_turn": 3})], id="c", parent="p")
    with pytest.raises(sy.ArgumentError, match="session 'c' turn 0: metadata key 'parent_turn'"):
        _run([_session("p", 2), clash])
    root = sy.sessions.Session([sy.Request("a", metadata={"parent_session": "x"})], id="r")
    with pytest.raises(sy.ArgumentError, match="metadata key 'parent_session'"):
        _run([root])
    spawned = sy.sessions.Session(
        [sy.Request("a", metadata={"parent_turn": 3})], id="c", parent="p", parent_turn=0
    )
    with pytest.raises(sy.ArgumentError, match="metadata key 'parent_turn'"):
        _run([_session("p", 2), spawned])
