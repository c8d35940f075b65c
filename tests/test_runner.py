"""sy.run / sy.arun / sy.compare: scheduling, determinism, failing algorithms, bad arguments.

Scheduling and determinism tests run on both engines (the ``engine`` fixture)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pandas as pd
import pandas.testing as pdt
import pytest
from helpers import rows

import sykit as sy
from sykit._results.health import AlgorithmWarning

REQUESTS = [sy.Request(f"question {i}") for i in range(6)]


async def fast_only(request, driver):
    return sy.answered("fast", await driver.call_model(request, ["fast"]))


def lognormal_host(profiles):
    jittery = sy.ModelProfile(
        latency=sy.Latency(
            ttft=sy.dists.LogNormal(0.8, sigma=0.6), tokens_per_s=sy.dists.Uniform(40, 80)
        ),
        output_tokens=10,
        price_in=1,
        price_out=2,
    )
    return sy.SimHost({**profiles, "jittery": jittery})


async def jittery_race(request, driver):
    _, result = await sy.first(
        driver.call_model(request, ["jittery"]), driver.call_model(request, ["fast"])
    )
    if isinstance(result, Exception):
        raise result
    return sy.answered(result.model, result)


def test_closed_loop_keeps_concurrency_requests_in_flight(host, engine):
    res = sy.run(fast_only, REQUESTS, host=host, concurrency=2, engine=engine)
    starts = res.requests["start_s"].tolist()
    ends = res.requests["end_s"].tolist()
    assert starts == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert ends == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    assert res.requests["request_id"].tolist() == list(range(6))
    # In a closed loop a request arrives when it starts: nothing queues.
    assert res.requests["arrival_s"].tolist() == starts
    assert res.requests["queue_s"].tolist() == [0.0] * 6
    assert res.engine == engine


def test_explicit_arrival_times_and_queueing(host, engine):
    res = sy.run(
        fast_only, REQUESTS[:3], host=host, arrivals=[0.0, 0.25, 0.5], concurrency=1, engine=engine
    )
    frame = res.requests
    assert frame["arrival_s"].tolist() == [0.0, 0.25, 0.5]
    assert frame["start_s"].tolist() == [0.0, 1.0, 2.0]
    assert frame["queue_s"].tolist() == [0.0, 0.75, 1.5]
    assert frame["latency_s"].tolist() == [1.0, 1.0, 1.0]


def test_poisson_arrivals_are_keyed_by_seed_and_shared_by_strategies(host, engine):
    cmp = sy.compare(
        {"a": fast_only, "b": fast_only},
        REQUESTS,
        host=host,
        arrivals=sy.traffic.Poisson(2.0),
        engine=engine,
    )
    a, b = cmp["a"].requests, cmp["b"].requests
    assert a["arrival_s"].tolist() == b["arrival_s"].tolist()
    assert a["arrival_s"].is_monotonic_increasing and a["arrival_s"].iloc[0] > 0
    other = sy.run(
        fast_only, REQUESTS, host=host, arrivals=sy.traffic.Poisson(2.0), seed=1, engine=engine
    )
    assert other.requests["arrival_s"].tolist() != a["arrival_s"].tolist()


def test_same_seed_same_frames_other_seed_other_latencies(profiles, engine):
    host = lognormal_host(profiles)
    many = [sy.Request(f"q{i}") for i in range(200)]
    one = sy.run(jittery_race, many, host=host, seed=7, engine=engine)
    two = sy.run(jittery_race, many, host=host, seed=7, engine=engine)
    pdt.assert_frame_equal(one.attempts, two.attempts)
    pdt.assert_frame_equal(one.requests, two.requests)
    other = sy.run(jittery_race, many, host=host, seed=8, engine=engine)
    assert not one.attempts["end_s"].equals(other.attempts["end_s"])


def test_strategies_in_a_comparison_meet_the_same_draws(profiles, engine):
    host = lognormal_host(profiles)

    async def jittery_alone(request, driver):
        return sy.answered("jittery", await driver.call_model(request, ["jittery"]))

    many = [sy.Request(f"q{i}") for i in range(50)]
    cmp = sy.compare(
        {"race": jittery_race, "alone": jittery_alone},
        many,
        host=host,
        concurrency=50,
        engine=engine,
    )
    alone = cmp["alone"].attempts.set_index("request_id")["latency_s"]
    race = cmp["race"].attempts
    race_jittery = race[(race["model"] == "jittery") & (race["status"] == "ok")].set_index(
        "request_id"
    )["latency_s"]
    assert len(race_jittery) > 0
    # Wherever jittery won the race, it took exactly as long as when it ran alone.
    assert (alone.loc[race_jittery.index] == race_jittery).all()


def test_algorithm_exception_fails_only_its_request(host, engine):
    async def flaky(request, driver):
        if request.id == 2:
            raise ValueError("no idea what to do with this one")
        return await fast_only(request, driver)

    res = sy.run(flaky, REQUESTS, host=host, engine=engine)
    frame = res.requests.set_index("request_id")
    assert frame.loc[2, "status"] == "failed"
    assert frame.loc[2, "error_kind"] == "algorithm_error"
    assert frame.loc[2, "error_message"] == "ValueError: no idea what to do with this one"
    assert (frame.drop(index=2)["status"] == "ok").all()


def test_strict_reraises_the_algorithm_exception(host):
    async def broken(request, driver):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom") as caught:
        sy.run(broken, REQUESTS, host=host, strict=True)
    assert any("while routing request" in note for note in caught.value.__notes__)


@pytest.mark.parametrize(
    ("returned", "kind", "phrase"),
    [
        (None, "invalid_outcome", "returned NoneType"),
        ("fast", "invalid_outcome", "must return sy.route_to"),
        (sy.route_to("gpt-9", sy.Request("x")), "unknown_model", "'gpt-9'"),
    ],
)
def test_invalid_outcomes_fail_the_request_with_a_readable_message(host, returned, kind, phrase):
    async def algorithm(request, driver):
        return returned

    with pytest.warns(AlgorithmWarning, match=f"2 of 2 requests failed with {kind}"):
        res = sy.run(algorithm, REQUESTS[:2], host=host)
    assert set(res.requests["error_kind"]) == {kind}
    assert phrase in res.requests["error_message"].iloc[0]
    if kind == "unknown_model":
        assert "'fast', 'strong', 'judge', 'slow_judge'" in res.requests["error_message"].iloc[0]


def test_a_sync_function_is_refused_before_the_run(host):
    def not_async(request, driver):
        return sy.route_to("fast", request)

    with pytest.raises(sy.ArgumentTypeError, match="async def not_async"):
        sy.run(not_async, REQUESTS[:1], host=host)


def test_calls_with_no_models_or_unknown_models(host):
    async def empty(request, driver):
        await driver.call_model(request, [])

    async def unknown(request, driver):
        await driver.call_model(request, ["gpt-9"])

    with pytest.warns(AlgorithmWarning, match="no_targets"):
        assert sy.run(empty, REQUESTS[:1], host=host).requests["error_kind"].iloc[0] == "no_targets"
    with pytest.warns(AlgorithmWarning, match="unknown_model"):
        res = sy.run(unknown, REQUESTS[:1], host=host)
    assert res.requests["error_kind"].iloc[0] == "unknown_model"
    assert "the host has: 'fast'" in res.requests["error_message"].iloc[0]
    with pytest.raises(sy.NoTargets):
        sy.run(empty, REQUESTS[:1], host=host, strict=True)


def test_deadlocked_algorithm_fails_its_request_and_the_run_goes_on(host):
    async def waits_forever(request, driver):
        if request.id == 1:
            await asyncio.Event().wait()
        return await fast_only(request, driver)

    res = sy.run(waits_forever, REQUESTS[:3], host=host)
    frame = res.requests.set_index("request_id")
    assert frame.loc[1, "error_kind"] == "deadlock"
    assert "in waits_forever" in frame.loc[1, "error_message"]
    assert frame.loc[1, "end_s"] == 1.0  # failed when every other request had finished
    assert frame.loc[[0, 2], "status"].tolist() == ["ok", "ok"]
    with pytest.raises(sy.SimDeadlock):
        sy.run(waits_forever, REQUESTS[:3], host=host, strict=True)


def test_network_io_in_a_simulated_algorithm_is_a_clear_failure(host):
    async def calls_out(request, driver):
        await asyncio.open_connection("127.0.0.1", 9)

    with pytest.warns(AlgorithmWarning, match="RealIOError"):
        res = sy.run(calls_out, REQUESTS[:1], host=host)
    assert "RealIOError" in res.requests["error_message"].iloc[0]


def test_a_class_with_route_and_state_across_requests(host):
    class RoundRobin:
        name = "round_robin"

        def __init__(self):
            self.turn = 0

        async def route(self, request, driver):
            self.turn += 1
            return sy.route_to("fast" if self.turn % 2 else "strong", request)

    res = sy.run(RoundRobin(), REQUESTS[:4], host=host, concurrency=1)
    assert res.strategy == "round_robin"
    assert res.requests["served_model"].tolist() == ["fast", "strong", "fast", "strong"]


def test_metadata_and_evidence_become_request_columns(host):
    async def algorithm(request, driver):
        driver.evidence(score=0.25, source="rule")
        return sy.route_to("fast", request)

    reqs = [sy.Request("x", metadata={"category": "math", "status": "shadowed"})]
    frame = sy.run(algorithm, reqs, host=host).requests
    assert frame["category"].tolist() == ["math"]
    assert frame["meta_status"].tolist() == ["shadowed"]
    assert frame[["evidence_score", "evidence_source"]].iloc[0].tolist() == [0.25, "rule"]


@pytest.mark.parametrize("engine", ["bulk", "kernel"])
def test_no_two_metadata_or_evidence_keys_share_a_column(host, engine):
    """A key named as the records' own column is prefixed; so is one that starts like a prefixed
    name or an evidence column: every value keeps a column of its own, whichever request has it."""

    def route(request):
        return "fast"

    static = sy.strategies.static(route, name="static")
    reqs = [
        sy.Request("x", metadata={"seed": 3, "meta_seed": 4, "evidence_k": 5}),
        sy.Request("y", metadata={"meta_meta_seed": 6, 7: "a key that is no string"}),
    ]
    frame = sy.run(static, reqs, host=host, engine=engine, progress=False).requests
    assert frame["meta_seed"].tolist()[0] == 3
    assert frame["meta_meta_seed"].tolist()[0] == 4
    assert frame["meta_evidence_k"].tolist()[0] == 5
    assert frame["meta_meta_meta_seed"].tolist()[1] == 6
    assert "evidence_k" not in frame.columns
    assert frame[7].tolist()[1] == "a key that is no string"


def test_prompts_can_be_plain_strings_and_ids_are_kept(host):
    res = sy.run(fast_only, ["a", sy.Request("b", id="mine")], host=host)
    assert res.requests["request_id"].tolist() == ["0", "mine"]


def test_run_from_inside_a_running_loop_gives_the_same_frames(profiles, engine):
    host = lognormal_host(profiles)
    many = [sy.Request(f"q{i}") for i in range(50)]
    plain = sy.run(jittery_race, many, host=host, engine=engine)

    async def notebook_cell():
        return sy.run(jittery_race, many, host=host, engine=engine)

    inside = asyncio.run(notebook_cell())
    pdt.assert_frame_equal(plain.attempts, inside.attempts)

    async def top_level_await():
        return await sy.arun(jittery_race, many, host=host, engine=engine)

    awaited = asyncio.run(top_level_await())
    pdt.assert_frame_equal(plain.attempts, awaited.attempts)


def test_acompare_is_compare_for_async_code(profiles):
    host = lognormal_host(profiles)
    many = [sy.Request(f"q{i}") for i in range(40)]
    lineup = {"race": jittery_race, "fast": fast_only}
    plain = sy.compare(lineup, many, host=host, seeds=[0, 1])

    async def top_level_await():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        beat = asyncio.ensure_future(ticker())
        try:
            return await sy.acompare(lineup, many, host=host, seeds=[0, 1]), ticks
        finally:
            beat.cancel()

    awaited, ticks = asyncio.run(top_level_await())
    assert isinstance(awaited, sy.Comparison) and ticks > 0  # the caller's loop kept running
    pdt.assert_frame_equal(plain.attempts, awaited.attempts)
    pdt.assert_frame_equal(plain.requests, awaited.requests)
    with pytest.raises(ValueError, match="seeds must be distinct"):
        asyncio.run(sy.acompare(lineup, many, host=host, seeds=[1, 1]))


def test_run_after_nest_asyncio_apply_gives_the_same_frames():
    script = textwrap.dedent(
        """
        import asyncio, nest_asyncio
        import sykit as sy
        ttft = sy.dists.LogNormal(0.8, sigma=0.6)
        host = sy.SimHost({"m": sy.ModelProfile(latency=sy.Latency(ttft=ttft))})
        reqs = [sy.Request(f"q{i}") for i in range(100)]
        async def algo(request, driver):
            _, r = await sy.first(driver.call_model(request, ["m"]), driver.call_model(request, ["m"]))
            return sy.answered("m", r)
        before = sy.run(algo, reqs, host=host, progress=False).attempts
        nest_asyncio.apply()
        after = sy.run(algo, reqs, host=host, progress=False).attempts
        async def cell():
            return sy.run(algo, reqs, host=host, progress=False).attempts
        in_cell = asyncio.get_event_loop().run_until_complete(cell())
        print(before.equals(after), before.equals(in_cell), len(before))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True True 200"


def test_progress_bar_is_silent_when_asked_and_shown_when_forced(host, capsys):
    sy.run(fast_only, REQUESTS, host=host, progress=False)
    assert capsys.readouterr().err == ""
    sy.run(fast_only, REQUESTS, host=host, progress=True)
    assert "fast_only" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kwargs", "error", "phrase"),
    [
        ({"concurrency": -1}, ValueError, "concurrency"),
        ({"concurrency": 2.5}, TypeError, "concurrency"),
        ({"seed": "0"}, TypeError, "seed"),
        ({"arrivals": 3}, TypeError, "arrivals"),
        ({"arrivals": [0.0, 1.0]}, ValueError, "arrivals"),
        ({"host": object()}, TypeError, "host"),
        ({"progress": "yes"}, TypeError, "progress"),
    ],
)
def test_bad_run_arguments_name_themselves(host, kwargs, error, phrase):
    arguments = {"host": host, **kwargs}
    with pytest.raises(error, match=phrase):
        sy.run(fast_only, REQUESTS, **arguments)


def test_bad_algorithms_and_requests_are_rejected_up_front(host):
    with pytest.raises(TypeError, match="algorithm"):
        sy.run(42, REQUESTS, host=host)
    with pytest.raises(TypeError, match="two arguments"):
        sy.run(lambda request: None, REQUESTS, host=host)
    with pytest.raises(TypeError, match="wrap a single request"):
        sy.run(fast_only, sy.Request("x"), host=host)
    with pytest.raises(TypeError, match=r"requests\[1\]"):
        sy.run(fast_only, ["ok", 5], host=host)
    with pytest.raises(ValueError, match="twice"):
        sy.run(fast_only, [sy.Request("a", id=1), sy.Request("b", id=1)], host=host)
    with pytest.raises(ValueError, match="empty"):
        sy.run(fast_only, [], host=host)


def test_compare_rejects_duplicate_names_and_bad_seeds(host):
    with pytest.raises(ValueError, match="unique"):
        sy.compare([fast_only, fast_only], REQUESTS, host=host)
    with pytest.raises(TypeError, match="seeds"):
        sy.compare({"a": fast_only}, REQUESTS, host=host, seeds=3)


def test_compare_summary_has_one_row_per_strategy_over_all_seeds(host):
    async def strong_only(request, driver):
        return sy.route_to("strong", request)

    cmp = sy.compare({"fast": fast_only, "strong": strong_only}, REQUESTS, host=host, seeds=[0, 1])
    summary = cmp.summary()
    assert summary["strategy"].tolist() == ["fast", "strong"]
    assert summary["requests"].tolist() == [6, 6]  # distinct requests, each replayed per seed
    assert summary["seeds"].tolist() == [2, 2]
    assert summary.set_index("strategy").loc["strong", "latency_p50_s"] == 3.0
    assert sorted(cmp.requests["seed"].unique()) == [0, 1]
    assert isinstance(cmp.attempts["strategy"].dtype, pd.CategoricalDtype)


def test_summary_counts_costs_and_quality(host):
    res = sy.run(fast_only, REQUESTS, host=host)
    summary = res.summary().iloc[0]
    expected_cost = sum((r.input_tokens * 1.0 + 50 * 2.0) / 1e6 for r in REQUESTS)
    assert summary["cost_usd"] == pytest.approx(expected_cost)
    assert summary["success_rate"] == 1.0 and summary["attempts_per_request"] == 1.0
    # fast has quality 0.5 on synthetic requests: a keyed difficulty draw per request decides.
    assert set(rows(res, model="fast")[0].keys()) >= {"quality"}
    assert 0.0 <= summary["mean_quality"] <= 1.0
