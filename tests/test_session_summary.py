"""Per-session results of agent runs: sessions grounded in per-task results, one row per session
(turns, completion, task success, cost, time, switches, cache), a per-strategy summary with
intervals over sessions, and the two session plots."""

from __future__ import annotations

import dataclasses

import matplotlib
import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st
from sykit._results.metrics import bootstrap_mean_ci
from sykit._viz import strategy_colors
from sykit._world.models import truth_of
from sykit.sessions import TaskOutcomes, swebench_pro, synthetic_sessions
from sykit.sessions._grounded import grounded_sessions
from sykit.sessions._plots import plot_session_cost_success, plot_session_timeline
from sykit.sessions._summary import CachePrices, session_frame, session_summary

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
            truth = truth_of(turn.request)
            assert truth is not None
            assert truth.columns["quadrant"] == quadrant[session.id]
            assert truth.columns["planned_turns"] == len(session.turns)
        assert session.id in session.turns[0].request.messages[1]["content"]


def test_a_router_never_sees_a_grounded_tasks_quadrant_or_planned_length():
    seen: list[dict] = []

    async def peeking(request, driver):
        seen.append(dict(request.metadata))
        return sy.route_to("strong", request)

    host = sy.SimHost({"strong": sy.ModelProfile(), "weak": sy.ModelProfile()})
    sessions = grounded_sessions(TABLE, seed=3, n=2)
    result = sy.run(peeking, sessions, host=host)
    assert seen and all("quadrant" not in m and "planned_turns" not in m for m in seen)
    assert all("task_id" in m for m in seen)
    # the frames still carry them, so the run is judged per task after the fact
    requests = result.requests
    assert {"task_id", "quadrant", "planned_turns"} <= set(requests.columns)
    outcomes = TaskOutcomes({"strong": "strong", "weak": "weak"})
    frame = session_frame(result, outcomes=outcomes)
    quadrant = dict(zip(TABLE["instance_id"], TABLE["quadrant"].astype(str), strict=True))
    assert frame["quadrant"].tolist() == [quadrant[t] for t in frame["task_id"]]
    # served by the strong model throughout: a task succeeds when the strong run resolved it
    expected = [float(quadrant[t] in ("SAFE", "RESCUE")) for t in frame["task_id"]]
    assert frame["success"].tolist() == expected


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
        truth = truth_of(session.turns[0].request)
        assert truth is not None
        assert truth.columns["quadrant"] == tasks.loc[session.id, "quadrant"]


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


# -- one row per session ---------------------------------------------------------------------

QUADRANTS = ("SAFE", "RESCUE", "LOSS", "HARD")
WEAK_IN, STRONG_IN = 1.0, 10.0  # USD per 1M tokens, input and output alike


def _host() -> sy.SimHost:
    """Every answer is one token, 0.5 s to it at 2 tokens/s: each turn takes exactly 1 s."""
    latency = sy.Latency(ttft=sy.dists.Constant(0.5), tokens_per_s=2.0)

    def profile(price: float) -> sy.ModelProfile:
        return sy.ModelProfile(latency=latency, output_tokens=1, price_in=price, price_out=price)

    return sy.SimHost({"weak": profile(WEAK_IN), "strong": profile(STRONG_IN)})


def _sessions(turns: int = 3, task_metadata: bool = True) -> list[sy.sessions.Session]:
    """One session per quadrant, turn k sending 100 (k + 1) tokens after a 2 s pause."""
    sessions = []
    for s, quadrant in enumerate(QUADRANTS):
        meta = {"task_id": f"task-{s}", "quadrant": quadrant, "planned_turns": turns}
        sessions.append(
            sy.sessions.Session(
                [
                    sy.sessions.Turn(
                        sy.Request(
                            f"s{s} t{k}",
                            input_tokens=100 * (k + 1),
                            metadata=meta if task_metadata else None,
                        ),
                        gap_s=2.0,
                    )
                    for k in range(turns)
                ],
                id=f"s{s}",
            )
        )
    return sessions


def _cost(model: str, input_tokens: int) -> float:
    price = STRONG_IN if model == "strong" else WEAK_IN
    return (input_tokens + 1) * price / 1e6


async def alternate(request, driver):
    """Weak on even turns, strong on odd ones; turn 1 of session s3 fails (its tool crashed)."""
    meta = request.metadata
    if meta["session_id"] == "s3" and meta["turn"] == 1:
        raise RuntimeError("tool crashed")
    return sy.route_to("strong" if meta["turn"] % 2 else "weak", request)


OUTCOMES = TaskOutcomes({"weak": "weak", "strong": "strong"})


def _run(algorithm=alternate, sessions=None, seed: int = 0) -> sy.Result:
    return sy.run(
        algorithm,
        _sessions() if sessions is None else sessions,
        host=_host(),
        seed=seed,
        strategy="alternate" if algorithm is alternate else None,
        progress=False,
    )


def test_session_rows_are_exact():
    frame = session_frame(_run())
    assert list(frame["session_id"]) == ["s0", "s1", "s2", "s3"]
    assert list(frame["strategy"]) == ["alternate"] * 4
    assert list(frame["seed"]) == [0] * 4
    assert list(frame["task_id"]) == ["task-0", "task-1", "task-2", "task-3"]
    assert list(frame["quadrant"]) == list(QUADRANTS)
    assert list(frame["planned_turns"]) == [3, 3, 3, 3]
    assert list(frame["turns"]) == [3, 3, 3, 2]
    assert list(frame["served_turns"]) == [3, 3, 3, 1]
    assert list(frame["completed"]) == [True, True, True, False]
    # turns at 0, 3 and 6 s (1 s answers, 2 s pauses): done at 7 s; s3's turn 1 failed at once
    assert list(frame["duration_s"]) == [7.0, 7.0, 7.0, 3.0]
    assert list(frame["switches"]) == [2, 2, 2, 0]
    full = _cost("weak", 100) + _cost("strong", 200) + _cost("weak", 300)
    assert frame["cost_usd"].tolist() == pytest.approx([full] * 3 + [_cost("weak", 100)])
    assert frame["share_weak"].tolist() == pytest.approx([2 / 3] * 3 + [1.0])
    assert frame["share_strong"].tolist() == pytest.approx([1 / 3] * 3 + [0.0])
    assert frame["input_tokens"].tolist() == [600, 600, 600, 100]
    assert frame["success"].isna().all()  # no outcomes given


def test_session_cost_is_the_sum_of_its_request_costs():
    result = _run()
    frame = session_frame(result).set_index("session_id")
    by_session = result.requests.groupby("session_id")["cost_usd"].sum()
    for session, cost in by_session.items():
        assert frame.loc[session, "cost_usd"] == pytest.approx(cost, rel=1e-12)


def test_success_of_a_single_model_reproduces_its_benchmark_run():
    frames = {
        model: session_frame(_run(st.single(model)), outcomes=OUTCOMES) for model in OUTCOMES.tiers
    }
    assert frames["strong"]["success"].tolist() == [1.0, 1.0, 0.0, 0.0]
    assert frames["weak"]["success"].tolist() == [1.0, 0.0, 1.0, 0.0]


def test_success_on_grounded_sessions_with_one_model_is_the_strong_column():
    tasks = swebench_pro()
    sessions = grounded_sessions(tasks, seed=0, n=30)
    result = sy.run(st.single("strong"), sessions, host=_host(), concurrency=30, progress=False)
    frame = session_frame(result, outcomes=OUTCOMES)
    resolved = tasks.set_index("instance_id")["strong_resolved"]
    assert frame["completed"].all()
    assert (frame["planned_turns"] == frame["turns"]).all()
    assert frame["success"].tolist() == [float(resolved[t]) for t in frame["task_id"]]


def test_success_of_a_mixed_session_follows_its_critical_turn():
    for seed in (0, 1, 2):
        frame = session_frame(_run(seed=seed), outcomes=OUTCOMES)
        for row in frame.itertuples():
            (critical,) = OUTCOMES.critical(row.task_id, 3, seed)
            strong = critical % 2 == 1  # odd turns went to the strong model
            expected = {
                "SAFE": True,
                "RESCUE": strong,
                "LOSS": not strong,
                "HARD": False,
            }[row.quadrant]
            if not row.completed:
                expected = False  # s3 ended early
            assert row.success == float(expected), (seed, row.session_id)


def test_sessions_without_task_metadata_infer_what_they_can():
    result = _run(sessions=_sessions(task_metadata=False))
    frame = session_frame(result)
    assert frame["task_id"].isna().all() and frame["quadrant"].isna().all()
    # every turn answered: the session ran as planned; s3 ended at a failure: length unknown
    assert frame["planned_turns"].tolist()[:3] == [3, 3, 3]
    assert pd.isna(frame["planned_turns"].iloc[3])
    assert frame["completed"].tolist() == [True, True, True, False]
    with pytest.raises(sy.ArgumentError, match="task_id and quadrant"):
        session_frame(result, outcomes=OUTCOMES)


def test_a_session_that_served_nothing_fails_its_task():
    async def fails_first_turn(request, driver):
        if request.metadata["session_id"] == "s0":
            raise RuntimeError("no model available")
        return sy.route_to("strong", request)

    frame = session_frame(_run(fails_first_turn), outcomes=OUTCOMES)
    first = frame.iloc[0]
    assert (first["turns"], first["served_turns"], first["success"]) == (1, 0, 0.0)
    assert np.isnan(first["share_strong"])
    assert frame["success"].tolist()[1:] == [1.0, 0.0, 0.0]


# -- cache figures ---------------------------------------------------------------------------

CACHED = {0: 0, 1: 0, 2: 150}  # tokens read from the cache, per turn
WRITTEN = {0: 100, 1: 200, 2: 150}  # tokens written to it, per turn


def _with_cache(result: sy.Result) -> sy.Result:
    """The run with cache columns on its attempts, as a caching host would record them."""
    attempts = result.attempts.copy()
    turn = attempts["request_id"].astype(str).str.split("#").str[1].astype(int)
    attempts["cached_input_tokens"] = turn.map(CACHED).astype("int32")
    attempts["cache_write_tokens"] = turn.map(WRITTEN).astype("int32")
    return dataclasses.replace(result, attempts=attempts)


def _without_cache(result: sy.Result) -> sy.Result:
    """The run's frames without cache columns (records from before hosts kept them)."""
    attempts = result.attempts.drop(columns=["cached_input_tokens", "cache_write_tokens"])
    return dataclasses.replace(result, attempts=attempts)


PRICES = {
    "weak": CachePrices(input=WEAK_IN, cache_read=0.1 * WEAK_IN),
    "strong": CachePrices(input=STRONG_IN, cache_read=0.1 * STRONG_IN, cache_write=12.5),
}


def test_cache_figures_are_nan_without_the_columns():
    frame = session_frame(_without_cache(_run()), prices=PRICES)
    for column in (
        "cached_input_tokens",
        "cache_write_tokens",
        "cache_hit_rate",
        "switch_cold_tokens",
        "switch_cost_usd",
    ):
        assert frame[column].isna().all(), column
    summary = session_summary(_without_cache(_run()), prices=PRICES)
    assert np.isnan(summary.loc[0, "cache_hit_rate"])
    assert np.isnan(summary.loc[0, "switch_cost_per_session_usd"])


def test_cache_figures_are_exact_with_the_columns():
    frame = session_frame(_with_cache(_run()), prices=PRICES)
    done = frame.iloc[:3]  # the three sessions that served all their turns
    assert done["cached_input_tokens"].tolist() == [150] * 3
    assert done["cache_write_tokens"].tolist() == [450] * 3
    assert done["cache_hit_rate"].tolist() == [150 / 600] * 3
    # turn 1 (strong after weak) read none of turn 0's 100 tokens; turn 2 (weak after strong)
    # read 150 of turn 1's 200: 100 + 50 cold prefix tokens
    assert done["switch_cold_tokens"].tolist() == [150] * 3
    # cold tokens cost the input price instead of the cache read's, and the strong model's
    # write premium (12.5 - 10) on the 100 cold tokens it wrote again
    cost = (100 * (STRONG_IN - 1.0) + 100 * (12.5 - STRONG_IN) + 50 * (WEAK_IN - 0.1)) / 1e6
    assert done["switch_cost_usd"].tolist() == pytest.approx([cost] * 3)
    s3 = frame.iloc[3]  # one answered turn: no switch
    assert (s3["input_tokens"], s3["cached_input_tokens"], s3["switch_cold_tokens"]) == (
        100,
        0,
        0,
    )
    assert s3["switch_cost_usd"] == 0.0
    summary = session_summary(_with_cache(_run()), prices=PRICES)
    assert summary.loc[0, "cache_hit_rate"] == (3 * 150) / (3 * 600 + 100)
    assert summary.loc[0, "switch_cold_tokens_per_session"] == 3 * 150 / 4
    assert summary.loc[0, "switch_cost_per_session_usd"] == pytest.approx(3 * cost / 4)


def test_switch_cost_needs_prices_for_every_served_model():
    frame = session_frame(_with_cache(_run()))
    assert frame["switch_cold_tokens"].notna().all()
    assert frame["switch_cost_usd"].isna().all()
    with pytest.raises(sy.ArgumentError, match="'strong'"):
        session_frame(_with_cache(_run()), prices={"weak": PRICES["weak"]})
    with pytest.raises(sy.ArgumentTypeError, match="CachePrices"):
        session_frame(_run(), prices={"weak": 1.0})
    with pytest.raises(sy.ArgumentError, match="cache_read"):
        CachePrices(input=1.0, cache_read=-1.0)


def test_a_comparison_of_runs_with_and_without_cache_columns_keeps_them_apart():
    cmp = sy.Comparison([_with_cache(_run()), _without_cache(_run(st.single("weak")))])
    frame = session_frame(cmp)
    recorded = frame["strategy"] == "alternate"
    assert frame.loc[recorded, "cache_hit_rate"].notna().all()
    assert frame.loc[~recorded, "cache_hit_rate"].isna().all()
    summary = session_summary(cmp).set_index("strategy")
    assert summary.loc["alternate", "cache_hit_rate"] == (3 * 150) / (3 * 600 + 100)
    assert np.isnan(summary.loc["single(weak)", "cache_hit_rate"])


def test_a_sub_agent_session_is_a_row_of_its_own_naming_its_parent():
    child = sy.sessions.Session(
        [sy.Request("look up the API", input_tokens=50)], id="s0/search", parent="s0"
    )
    frame = session_frame(_run(st.single("weak"), sessions=[*_sessions()[:1], child]))
    assert frame["session_id"].tolist() == ["s0", "s0/search"]
    assert frame["parent_session"].isna().tolist() == [True, False]
    assert frame["parent_session"].iloc[1] == "s0"
    assert frame["turns"].tolist() == [3, 1]


# -- the summary -----------------------------------------------------------------------------


def _strong_and_weak() -> sy.Comparison:
    return sy.compare(
        {"strong": st.single("strong"), "weak": st.single("weak")},
        _sessions(),
        host=_host(),
        seeds=[0, 1],
        progress=False,
    )


def test_summary_interval_and_cost_per_success_on_a_known_example():
    cmp = _strong_and_weak()
    summary = session_summary(cmp, outcomes=OUTCOMES).set_index("strategy")
    strong = summary.loc["strong"]
    assert (strong["sessions"], strong["seeds"]) == (4, 2)
    assert strong["success_rate"] == 0.5  # SAFE and RESCUE of four
    # the interval resamples the four sessions, not the eight (seed, session) rows
    low, high = bootstrap_mean_ci(np.array([1.0, 1.0, 0.0, 0.0]))
    assert (strong["success_ci_low"], strong["success_ci_high"]) == (low, high)
    assert (low, high) != bootstrap_mean_ci(np.array([1.0, 1.0, 0.0, 0.0] * 2))
    per_session = sum(_cost("strong", 100 * k) for k in (1, 2, 3))
    assert strong["cost_per_session_usd"] == pytest.approx(per_session)
    assert strong["cost_per_success_usd"] == pytest.approx(4 * per_session / 2)
    assert strong["completion_rate"] == 1.0
    assert strong["mean_turns"] == 3.0
    assert strong["switches_per_session"] == 0.0
    assert (strong["time_to_finish_p50_s"], strong["time_to_finish_p90_s"]) == (7.0, 7.0)
    assert (strong["share_strong"], strong["share_weak"]) == (1.0, 0.0)
    assert summary.loc["weak", "success_rate"] == 0.5  # SAFE and LOSS


def test_summary_averages_each_session_over_seeds_first():
    seeds = [0, 1, 2, 3]
    cmp = sy.compare([alternate], _sessions(), host=_host(), seeds=seeds, progress=False)
    frame = session_frame(cmp, outcomes=OUTCOMES)
    assert len(frame) == 4 * len(seeds)
    assert sorted(set(frame["seed"])) == seeds
    means = frame.groupby("session_id", sort=False)["success"].mean()
    assert means.nunique() > 1  # the critical turn moves with the seed
    summary = session_summary(cmp, outcomes=OUTCOMES)
    row = summary.iloc[0]
    assert row["success_rate"] == pytest.approx(means.mean())
    low, high = bootstrap_mean_ci(means.to_numpy())
    assert (row["success_ci_low"], row["success_ci_high"]) == (low, high)
    assert row["completion_rate"] == 0.75
    assert row["mean_turns"] == pytest.approx((3 + 3 + 3 + 2) / 4)
    # time to finish over the completed sessions only
    assert (row["time_to_finish_p50_s"], row["time_to_finish_p90_s"]) == (7.0, 7.0)


def test_summary_with_a_baseline_pairs_sessions():
    cmp = _strong_and_weak()
    summary = session_summary(cmp, outcomes=OUTCOMES, baseline="strong").set_index("strategy")
    weak = summary.loc["weak"]
    # per session weak − strong: SAFE 0, RESCUE −1, LOSS +1, HARD 0
    assert weak["d_success_rate"] == 0.0
    low, high = bootstrap_mean_ci(np.array([0.0, -1.0, 1.0, 0.0]))
    assert (weak["d_success_rate_ci_low"], weak["d_success_rate_ci_high"]) == (low, high)
    saving = sum(_cost("weak", 100 * k) - _cost("strong", 100 * k) for k in (1, 2, 3))
    assert weak["d_cost_per_session_usd"] == pytest.approx(saving)
    assert weak["paired_sessions"] == 4
    assert summary.loc["strong", "d_success_rate"] == 0.0
    with pytest.raises(sy.ArgumentError, match="baseline 'mid'"):
        session_summary(cmp, baseline="mid")


def test_cost_per_success_without_a_success_is_infinite_and_without_outcomes_nan():
    sessions = [s for s in _sessions() if s.id == "s3"]  # HARD: never succeeds
    summary = session_summary(_run(st.single("weak"), sessions=sessions), outcomes=OUTCOMES)
    assert summary.loc[0, "success_rate"] == 0.0
    assert summary.loc[0, "cost_per_success_usd"] == np.inf
    plain = session_summary(_run())
    assert np.isnan(plain.loc[0, "success_rate"]) and np.isnan(plain.loc[0, "success_ci_low"])
    assert np.isnan(plain.loc[0, "cost_per_success_usd"])


def test_bad_input_is_refused_with_what_to_do():
    plain = sy.run(st.single("weak"), [sy.Request("a"), sy.Request("b")], host=_host())
    with pytest.raises(sy.ArgumentError, match="no session rows"):
        session_frame(plain)
    with pytest.raises(sy.ArgumentError, match="no session rows"):
        session_summary(plain)
    with pytest.raises(sy.ArgumentTypeError, match=r"Result or sy\.Comparison"):
        session_frame(pd.DataFrame())
    with pytest.raises(sy.ArgumentTypeError, match="TaskOutcomes"):
        session_frame(_run(), outcomes={"weak": "weak"})
    mixed = [
        sy.sessions.Session(
            [
                sy.Request("a", metadata={"task_id": "t", "quadrant": "SAFE"}),
                sy.Request("b", metadata={"task_id": "t", "quadrant": "HARD"}),
            ],
            id="s",
        )
    ]
    with pytest.raises(sy.ArgumentError, match="disagree on quadrant"):
        session_frame(_run(st.single("weak"), sessions=mixed))
    half = [
        sy.sessions.Session(
            [sy.Request("a", metadata={"planned_turns": 2}), sy.Request("b")], id="s"
        )
    ]
    with pytest.raises(sy.ArgumentError, match=r"disagree on planned_turns \(\[2, None\]\)"):
        session_frame(_run(st.single("weak"), sessions=half))
    planned = {"planned_turns": 1}
    short = [sy.sessions.Session([sy.Request(x, metadata=planned) for x in "ab"], id="s")]
    with pytest.raises(sy.ArgumentError, match="sent 2 turns but its planned_turns is 1"):
        session_frame(_run(st.single("weak"), sessions=short))


# -- plots -----------------------------------------------------------------------------------


@pytest.fixture
def agg():
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _gids(ax, prefix: str) -> list[str]:
    """The gids starting with ``prefix`` of everything drawn on ``ax``."""
    artists = [*ax.patches, *ax.lines, *ax.collections, *ax.texts]
    return [a.get_gid() for a in artists if str(a.get_gid()).startswith(prefix)]


def _comparison() -> sy.Comparison:
    lineup = {"strong": st.single("strong"), "weak": st.single("weak"), "alternate": alternate}
    return sy.compare(lineup, _sessions(), host=_host(), seeds=[0, 1], progress=False)


def test_cost_success_plot_draws_a_point_intervals_and_a_label_per_strategy(agg):
    from matplotlib.colors import to_hex

    cmp = _comparison()
    ax = plot_session_cost_success(cmp, outcomes=OUTCOMES)
    names = ["strong", "weak", "alternate"]
    assert _gids(ax, "point:") == [f"point:{n}" for n in names]
    assert sorted(_gids(ax, "label:")) == sorted(f"label:{n}" for n in names)
    assert sorted(t.get_text() for t in ax.texts) == sorted(names)
    colors = strategy_colors(names)
    for line in ax.lines:
        name = line.get_gid().split(":", 1)[1]
        assert to_hex(line.get_color()) == colors[name]
    summary = session_summary(cmp, outcomes=OUTCOMES)
    # a success interval for every strategy; a cost interval where cost varies between sessions
    assert sorted(_gids(ax, "ci:")) == sorted(f"ci:{n}" for n in names)
    widths = summary["cost_per_session_ci_high"] - summary["cost_per_session_ci_low"]
    assert len(_gids(ax, "cost_ci:")) == int(widths.notna().sum())
    point = {line.get_gid(): line.get_xydata()[0] for line in ax.lines}
    for row in summary.itertuples():
        assert tuple(point[f"point:{row.strategy}"]) == (
            row.cost_per_session_usd,
            row.success_rate,
        )
    again = plot_session_cost_success(summary)
    assert _gids(again, "point:") == _gids(ax, "point:")


def test_cost_success_plot_needs_success_rates(agg):
    with pytest.raises(sy.ArgumentError, match="outcomes="):
        plot_session_cost_success(_comparison())
    with pytest.raises(sy.ArgumentTypeError, match="session_summary"):
        plot_session_cost_success([1, 2])
    with pytest.raises(sy.ArgumentError, match="lacks"):
        plot_session_cost_success(pd.DataFrame({"strategy": ["a"]}))


def test_session_timeline_draws_turns_cache_switches(agg):
    ax = plot_session_timeline(_with_cache(_run()), "s0")
    assert _gids(ax, "turn:") == ["turn:0", "turn:1", "turn:2"]
    assert _gids(ax, "cached:") == ["cached:2"]  # only turn 2 read from the cache
    assert _gids(ax, "switch:") == ["switch:1", "switch:2"]
    assert not _gids(ax, "failed") and not _gids(ax, "not_sent")
    bars = {p.get_gid(): p for p in ax.patches}
    assert bars["cached:2"].get_height() == 150
    assert (bars["turn:2"].get_y(), bars["turn:2"].get_height()) == (150, 150)
    assert bars["turn:1"].get_height() == 200 and bars["turn:1"].get_hatch() == "///"
    assert bars["turn:0"].get_facecolor()[:3] != bars["turn:1"].get_facecolor()[:3]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "weak",
        "strong",
        "model switch",
        "prompt read from cache",
        "prompt not cached (cold)",
    ]
    assert "3 of 3 turns answered" in ax.get_title(loc="left")


def test_session_timeline_marks_the_failed_turn_and_the_turns_never_sent(agg):
    ax = plot_session_timeline(_without_cache(_run()), "s3")
    assert _gids(ax, "turn:") == ["turn:0"]
    assert _gids(ax, "failed:") == ["failed:1"]
    assert _gids(ax, "failed_marker:") == ["failed_marker:1"]
    assert _gids(ax, "not_sent") == ["not_sent"]
    assert ax.patches[0].get_hatch() is None  # no cache columns: no cold part to hatch
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["weak", "turn failed", "planned, not sent"]
    assert "1 of 3 turns answered" in ax.get_title(loc="left")
    assert "cache not recorded" in ax.get_title(loc="left")


def test_session_timeline_refuses_what_it_cannot_draw(agg):
    with pytest.raises(sy.ArgumentTypeError, match=r"cmp\.result"):
        plot_session_timeline(_comparison(), "s0")
    with pytest.raises(sy.ArgumentError, match="session 'nope' is not in this run"):
        plot_session_timeline(_run(), "nope")
    plain = sy.run(st.single("weak"), [sy.Request("a")], host=_host(), progress=False)
    with pytest.raises(sy.ArgumentError, match="no session rows"):
        plot_session_timeline(plain, "s0")


def test_prices_can_come_from_the_hosts_cache_profiles():
    from sykit.sessions._summary import _check_prices

    cache = sy.profiles.PromptCache(read_price=0.3, write_price=3.75)
    host = sy.SimHost(
        {
            "a": sy.ModelProfile(price_in=3.0, cache=cache),
            "b": sy.ModelProfile(price_in=1.0),
        }
    )
    expected = {"a": CachePrices(3.0, 0.3, 3.75), "b": CachePrices(1.0, 1.0)}
    assert _check_prices(host) == expected
    assert _check_prices(host.profiles) == expected
