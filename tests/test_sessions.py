"""Agent sessions: turns sent one after another (after the previous answer and a pause), on both
engines, with per-session state for algorithms."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st

ENGINES = ["kernel", "asyncio"]


def _host(fail_every: int = 0) -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.Constant(0.5), tokens_per_s=2.0)  # one token: 1 s exactly
    profile = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1e-6, price_out=1e-6)
    return sy.SimHost({"weak": profile, "strong": profile})


def _sessions(n: int = 4, turns: int = 3, gap=2.0) -> list[sy.sessions.Session]:
    return [
        sy.sessions.Session(
            [
                sy.sessions.Turn(sy.Request(f"s{s} t{k}", input_tokens=100 * (k + 1)), gap_s=gap)
                for k in range(turns)
            ],
            id=f"s{s}",
        )
        for s in range(n)
    ]


async def counting(request, driver):
    state = driver.session_state
    state["turns"] = state.get("turns", 0) + 1
    driver.evidence(turns_seen=state["turns"])
    return sy.route_to("weak", request)


@pytest.mark.parametrize("engine", ENGINES)
def test_turns_follow_answers_and_pauses_exactly(engine):
    result = sy.run(
        counting, _sessions(), host=_host(), concurrency=2, engine=engine, progress=False
    )
    assert result.engine == engine
    r = result.requests
    assert list(r["session_id"]) == ["s0"] * 3 + ["s1"] * 3 + ["s2"] * 3 + ["s3"] * 3
    assert list(r["turn"]) == [0, 1, 2] * 4
    # answer after 1 s, pause 2 s: turns at 0, 3, 6; the slot frees at 7 for the next sessions
    assert list(r["arrival_s"]) == [0, 3, 6, 0, 3, 6, 7, 10, 13, 7, 10, 13]
    assert list(r["start_s"]) == list(r["arrival_s"])
    assert list(r["evidence_turns_seen"]) == [1, 2, 3] * 4
    assert list(r["request_id"][:3]) == ["s0#0", "s0#1", "s0#2"]


def test_session_state_is_none_outside_sessions():
    seen = []

    async def probe(request, driver):
        seen.append(driver.session_state)
        return sy.route_to("weak", request)

    sy.run(probe, [sy.Request("a"), sy.Request("b")], host=_host(), progress=False)
    assert seen == [None, None]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_turn_ends_its_session(engine):
    async def fails_turn_1_of_s0(request, driver):
        if request.metadata["session_id"] == "s0" and request.metadata["turn"] == 1:
            raise RuntimeError("tool crashed")
        return sy.route_to("weak", request)

    result = sy.run(
        fails_turn_1_of_s0,
        _sessions(n=2),
        host=_host(),
        concurrency=1,
        engine=engine,
        progress=False,
    )
    r = result.requests
    assert list(zip(r["session_id"], r["turn"], r["status"], strict=True)) == [
        ("s0", 0, "ok"),
        ("s0", 1, "failed"),
        ("s1", 0, "ok"),
        ("s1", 1, "ok"),
        ("s1", 2, "ok"),
    ]
    # s0 failed at once at 3 s; s1 starts at that instant
    assert r.loc[r["session_id"] == "s1", "arrival_s"].tolist() == [3.0, 6.0, 9.0]


def test_gaps_from_a_distribution_are_the_same_for_every_strategy_and_vary_by_seed():
    sessions = _sessions(n=3, turns=4, gap=sy.dists.LogNormal(5.0, sigma=0.8))
    lineup = {"weak": st.single("weak"), "strong": st.single("strong")}
    cmp = sy.compare(lineup, sessions, host=_host(), seeds=[0, 1], progress=False)
    r = cmp.requests
    arrivals = {
        key: g["arrival_s"].tolist() for key, g in r.groupby(["strategy", "seed"], observed=True)
    }
    assert arrivals["weak", 0] == arrivals["strong", 0]
    assert arrivals["weak", 1] == arrivals["strong", 1]
    assert arrivals["weak", 0] != arrivals["weak", 1]
    again = sy.compare(lineup, sessions, host=_host(), seeds=[0, 1], progress=False)
    pd.testing.assert_frame_equal(again.requests, r)


def test_open_loop_arrivals_are_the_first_turns():
    result = sy.run(counting, _sessions(n=2), host=_host(), arrivals=[0.0, 0.5], progress=False)
    r = result.requests
    assert r.loc[r["turn"] == 0, "arrival_s"].tolist() == [0.0, 0.5]
    assert r.loc[r["session_id"] == "s1", "arrival_s"].tolist() == [0.5, 3.5, 6.5]
    with pytest.raises(sy.ArgumentError):
        sy.run(counting, _sessions(n=2), host=_host(), arrivals=[0.0] * 6, progress=False)


def test_a_fixed_chain_on_sessions_equals_the_general_path():
    chain = st.fallback_chain(["weak", "strong"])

    async def general(request, driver):
        return await chain(request, driver)

    a = sy.run(chain, _sessions(), host=_host(), progress=False, strategy="c")
    b = sy.run(general, _sessions(), host=_host(), progress=False, strategy="c")
    pd.testing.assert_frame_equal(a.requests, b.requests)
    pd.testing.assert_frame_equal(a.attempts, b.attempts)


def test_sub_agent_sessions_name_their_parent():
    child = sy.sessions.Session([sy.Request("look up the API")], id="s0/search", parent="s0")
    result = sy.run(counting, [*_sessions(n=1), child], host=_host(), progress=False)
    r = result.requests
    assert r.loc[r["session_id"] == "s0/search", "parent_session"].tolist() == ["s0"]
    assert r.loc[r["session_id"] == "s0", "parent_session"].isna().all()


def test_sessions_run_in_a_grid_on_workers():
    kwargs = {"host": _host(), "seeds": [0, 1], "progress": False}
    sessions = _sessions(n=3, gap=sy.dists.Exponential(3.0))
    here = sy.grid({"count": counting}, sessions, **kwargs)
    there = sy.grid({"count": counting}, sessions, workers=2, **kwargs)
    pd.testing.assert_frame_equal(here.requests, there.requests)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (
            lambda: sy.sessions.Session([], id="empty"),
            sy.ArgumentError,
            "session 'empty' has no turns",
        ),
        (
            lambda: sy.sessions.Session(["text"], id="x"),
            sy.ArgumentTypeError,
            "session 'x': turn 0",
        ),
        (
            lambda: sy.sessions.Session(sy.Request("a")),
            sy.ArgumentTypeError,
            "list of sy.sessions.Turn",
        ),
        (lambda: sy.sessions.Turn(sy.Request("a"), gap_s=-1), sy.ArgumentError, "≥ 0"),
        (lambda: sy.sessions.Turn(sy.Request("a"), gap_s=float("inf")), sy.ArgumentError, "finite"),
        (lambda: sy.sessions.Turn("a"), sy.ArgumentTypeError, "sy.Request"),
    ],
)
def test_bad_sessions_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bad_session_lists_are_refused():
    with pytest.raises(sy.ArgumentTypeError, match="mixes sessions"):
        sy.run(counting, [*_sessions(n=1), sy.Request("lone")], host=_host(), progress=False)
    with pytest.raises(sy.ArgumentError, match="session id 's0'"):
        sy.run(counting, [*_sessions(n=1), *_sessions(n=1)], host=_host(), progress=False)
    clash = sy.sessions.Session([sy.Request("a", metadata={"turn": 7})], id="m")
    with pytest.raises(sy.ArgumentError, match="metadata key 'turn'"):
        sy.run(counting, [clash], host=_host(), progress=False)


# -- session affinity -----------------------------------------------------------------------------
def _agent_session(sid: str, user_turns: tuple[int, ...] = ()) -> sy.sessions.Session:
    """Turns whose last message is a tool result, except ``user_turns`` (a new user message)."""
    turns = []
    for k in range(5):
        last = (
            {"role": "user", "content": f"new instruction {k}"}
            if k == 0 or k in user_turns
            else {"role": "tool", "tool_call_id": f"c{k}", "content": "ok"}
        )
        history = (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{k}",
                            "type": "function",
                            "function": {"name": "bash", "arguments": "{}"},
                        }
                    ],
                }
            ]
            if k
            else []
        )
        turns.append(sy.sessions.Turn(sy.Request([*history, last], input_tokens=100), gap_s=1.0))
    return sy.sessions.Session(turns, id=sid)


def _by_turn_model(result) -> list[tuple[str, int, str]]:
    r = result.requests
    return list(zip(r["session_id"], r["turn"], r["selected_model"].astype(str), strict=True))


def test_affinity_latches_the_first_choice_of_a_session():
    chooser = st.weighted_random(["weak", "strong"], seed=3)
    result = sy.run(
        st.affinity(chooser),
        [_agent_session(f"s{i}") for i in range(6)],
        host=_host(),
        progress=False,
    )
    r = result.requests
    per_session = r.groupby("session_id")["selected_model"].nunique()
    assert (per_session == 1).all()
    assert set(r["selected_model"].astype(str)) == {"weak", "strong"}  # sessions still differ
    assert list(r.loc[r["turn"] == 0, "evidence_affinity"]) == ["decided"] * 6
    assert set(r.loc[r["turn"] > 0, "evidence_affinity"]) == {"held"}


def test_affinity_on_user_turns_decides_again_and_holds_through_tool_results():
    picks = iter(["weak", "strong", "weak"])

    async def next_pick(request, driver):
        return sy.route_to(next(picks), request)

    result = sy.run(
        st.affinity(next_pick, trigger="user_turn"),
        [_agent_session("s", user_turns=(3,))],
        host=_host(),
        progress=False,
    )
    assert [m for _, _, m in _by_turn_model(result)] == ["weak", "weak", "weak", "strong", "strong"]


def test_affinity_latch_only_latches_those_models():
    picks = iter(["weak", "strong", "weak"])

    async def next_pick(request, driver):
        return sy.route_to(next(picks), request)

    result = sy.run(
        st.affinity(next_pick, latch_only=["strong"]),
        [_agent_session("s")],
        host=_host(),
        progress=False,
    )
    assert [m for _, _, m in _by_turn_model(result)] == [
        "weak",
        "strong",
        "strong",
        "strong",
        "strong",
    ]


def test_affinity_outside_sessions_is_the_inner_strategy():
    inner = st.weighted_random(["weak", "strong"], seed=1)
    requests = [sy.Request(f"q{i}") for i in range(20)]
    a = sy.run(st.affinity(inner), requests, host=_host(), progress=False, strategy="x")
    b = sy.run(inner, requests, host=_host(), progress=False, strategy="x")
    assert a.requests["selected_model"].tolist() == b.requests["selected_model"].tolist()
    with pytest.raises(sy.ArgumentError, match="trigger"):
        st.affinity(inner, trigger="always")


def test_a_turn_keeps_the_ground_truth_a_dataset_gave_its_request():
    data = sy.datasets.load("mmlu_pro").sample(3, seed=0)
    model = "gemini-1.5-flash-002"
    host = sy.SimHost(sy.profiles.from_catalog([model]))
    session = sy.sessions.Session(list(data), id="graded")
    result = sy.run(st.single(model), [session], host=host, progress=False)
    direct = sy.run(st.single(model), data, host=host, progress=False)
    assert result.requests["quality"].tolist() == direct.requests["quality"].tolist()
    assert result.requests["quality"].notna().all()


def test_affinity_restarts_a_stateful_inner_strategy_with_every_run():
    inner = st.hedge("weak", after="p95", warmup=2)
    wrapped = st.affinity(inner)
    latency = sy.Latency(ttft=sy.dists.LogNormal(0.5, sigma=1.0), tokens_per_s=1e6)
    host = sy.SimHost({"weak": sy.ModelProfile(latency=latency, output_tokens=1)})
    sessions = [_agent_session(f"s{i}") for i in range(20)]
    first = sy.run(wrapped, sessions, host=host, progress=False, strategy="a")
    second = sy.run(wrapped, sessions, host=host, progress=False, strategy="a")
    # without a restart, the second run would start with the first run's observed latencies
    import pandas as pd

    pd.testing.assert_frame_equal(first.attempts, second.attempts)
    assert wrapped.name.startswith("affinity(")


@pytest.mark.parametrize("engine", ENGINES)
def test_an_algorithm_that_fails_every_session_on_a_later_turn_warns(engine):
    """A session's turns after a failed one are not sent: failing every session's third turn
    leaves two successes per failure, a success rate of 2/3 that reads as a cheap router. The
    run says the algorithm is broken, counting sessions."""

    async def third_turn_crashes(request, driver):
        state = driver.session_state
        state["turns"] = state.get("turns", 0) + 1
        if state["turns"] == 3:
            raise ValueError("boom")
        return sy.route_to("weak", request)

    sessions = _sessions(n=4, turns=5)
    with pytest.warns(
        sy.AlgorithmWarning,
        match=r"4 of 4 agent sessions ended \(their later turns unsent\) with algorithm_error.*boom",
    ):
        result = sy.run(third_turn_crashes, sessions, host=_host(), engine=engine)
    assert len(result.requests) == 12 and (result.requests["status"] == "failed").sum() == 4


def test_sessions_that_mostly_end_well_do_not_warn():
    async def one_session_crashes(request, driver):
        if driver.request_id == "s0#1":
            raise ValueError("boom")
        return sy.route_to("weak", request)

    with warnings.catch_warnings():
        warnings.simplefilter("error", sy.AlgorithmWarning)
        result = sy.run(one_session_crashes, _sessions(n=4, turns=3), host=_host())
    assert (result.requests["status"] == "failed").sum() == 1
