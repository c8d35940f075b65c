"""Exact records: one row per request sent, one call per ``call_id``, on both engines.

Each test is a case once found wrong, with exact expectations, through the public API only.
"""

from __future__ import annotations

import asyncio
import contextlib
import math

import pandas.testing as pdt
import pytest

import sykit as sy

ENGINES = ["kernel", "asyncio"]

pytestmark = pytest.mark.filterwarnings("ignore::sykit.AlgorithmWarning")

P = {
    "latency": sy.Latency(ttft=0.5, tokens_per_s=100.0),
    "output_tokens": 10,
    "price_in": 1.0,
    "price_out": 1.0,
}


def text_and_vision(policy: sy.HostPolicy, **faults: sy.Faults) -> sy.SimHost:
    """``text`` refuses images at the instant it is called; ``img`` answers in 0.6 s."""
    return sy.SimHost(
        {
            "text": sy.ModelProfile(
                vision=False, reject_delay_s=0.0, faults=faults.get("text", sy.Faults()), **P
            ),
            "img": sy.ModelProfile(vision=True, **P),
        },
        policy=policy,
    )


def with_images(n: int) -> list[sy.Request]:
    return [sy.Request("look", id=i, images=["https://example.com/a.png"]) for i in range(n)]


# -- one request row per request sent -----------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("helper", ["first", "first_ok", "first_of_one", "hedge"])
def test_a_call_that_fails_at_once_under_recover_errors_false_fails_only_its_request(
    engine, helper
):
    host = text_and_vision(sy.HostPolicy(recover_errors=False))

    async def algorithm(request, driver):
        if helper == "first":
            await sy.first(
                driver.call_model(request, ["text"]), driver.call_model(request, ["img"])
            )
        elif helper == "first_ok":
            await sy.first_ok(
                driver.call_model(request, ["text"]), driver.call_model(request, ["img"])
            )
        elif helper == "first_of_one":
            await sy.first(driver.call_model(request, ["text"]))
        else:
            await sy.hedge(lambda: driver.call_model(request, ["text"]), after=1.0, copies=3)
        return sy.route_to("img", request)

    result = sy.run(algorithm, with_images(3), host=host, engine=engine, seed=0)
    assert result.requests["request_id"].tolist() == [0, 1, 2]
    assert result.requests["status"].tolist() == ["failed"] * 3
    assert result.requests["error_kind"].tolist() == ["capability"] * 3
    assert result.requests["end_s"].tolist() == [0.0] * 3
    text = result.attempts[result.attempts["model"] == "text"]
    # one attempt at the text model per request: a hedge starts no copy after the request failed
    assert text.groupby("request_id")["status"].agg(list).tolist() == [["error"]] * 3
    others = result.attempts[result.attempts["model"] == "img"]
    assert set(others["status"].astype(str)) <= {"cancelled"}
    assert set(others["cancel_cause"].astype(str)) <= {"request_failed"}


@pytest.mark.parametrize("engine", ENGINES)
def test_an_outage_from_t0_under_recover_errors_false_keeps_every_row(engine):
    host = text_and_vision(
        sy.HostPolicy(recover_errors=False, max_retries=0),
        text=sy.Faults(outages=[(0.0, 10.0)]),
    )

    async def algorithm(request, driver):
        await sy.first_ok(driver.call_model(request, ["text"]))
        return sy.route_to("img", request)

    requests = [sy.Request("plain", id=i) for i in range(4)]
    result = sy.run(algorithm, requests, host=host, engine=engine, concurrency=2)
    assert len(result.requests) == 4
    assert result.requests["status"].tolist() == ["failed"] * 4
    assert result.requests["error_kind"].tolist() == ["unavailable"] * 4


@pytest.mark.parametrize("engine", ENGINES)
def test_an_algorithm_raising_generator_exit_fails_its_request_only(engine):
    host = text_and_vision(sy.HostPolicy())

    async def algorithm(request, driver):
        if request.id == 2:
            raise GeneratorExit
        return sy.route_to("img", request)

    requests = [sy.Request("plain", id=i) for i in range(5)]
    result = sy.run(algorithm, requests, host=host, engine=engine)
    assert result.requests["request_id"].tolist() == [0, 1, 2, 3, 4]
    assert result.requests["status"].tolist() == ["ok", "ok", "failed", "ok", "ok"]
    failed = result.requests.iloc[2]
    assert (failed["error_kind"], failed["error_message"]) == ("algorithm_error", "GeneratorExit")


# -- sleeping forever is refused alike ----------------------------------------------------------


@pytest.mark.parametrize("engine", ["auto", "asyncio"])
@pytest.mark.parametrize("how", ["asyncio.sleep", "driver.sleep"])
def test_sleeping_forever_is_refused_the_same_way(engine, how):
    host = text_and_vision(sy.HostPolicy())

    async def algorithm(request, driver):
        if how == "asyncio.sleep":
            await asyncio.sleep(math.inf)
        else:
            await driver.sleep(math.inf)
        return sy.route_to("img", request)

    result = sy.run(algorithm, [sy.Request("x", id=0)], host=host, engine=engine)
    row = result.requests.iloc[0]
    assert (row["status"], row["error_kind"]) == ("failed", "algorithm_error")
    assert row["error_message"] == "ArgumentError: cannot sleep forever (seconds=inf)"
    assert row["latency_s"] == 0.0  # no infinite latency


# -- a call_id is one call ---------------------------------------------------------------------


def flaky_and_steady() -> sy.SimHost:
    return sy.SimHost(
        {
            "a": sy.ModelProfile(faults=sy.Faults(fail_first=1, fail_first_status=503), **P),
            "b": sy.ModelProfile(**{**P, "latency": sy.Latency(ttft=1.0, tokens_per_s=100.0)}),
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_retry_in_a_race_keeps_its_calls_id(engine):
    async def race(request, driver):
        _, response = await sy.first(
            driver.call_model(request, ["a"]), driver.call_model(request, ["b"])
        )
        return sy.answered(response.model, response)

    result = sy.run(race, [sy.Request("x", id=0)], host=flaky_and_steady(), engine=engine)
    a = result.attempts
    columns = ["call_id", "model", "retry_index", "retried", "status", "race_size"]
    assert a[columns].values.tolist() == [
        [0, "a", 0, True, "error", 2],
        [1, "b", 0, False, "cancelled", 2],
        [0, "a", 1, False, "ok", 2],
    ]
    # the retry waited 0.25 s after the failure at 0.05 s (backoff), in its own call
    assert a["retry_wait_s"].iloc[0] == pytest.approx(0.25)
    assert a["race_id"].nunique() == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_response_call_id_joins_to_its_own_row(engine):
    kept: dict[int, tuple[int, int | None]] = {}

    async def algorithm(request, driver):
        await driver.call_model(request, ["b"])  # call 0
        _, response = await sy.first(
            driver.call_model(request, ["a"]), driver.call_model(request, ["b"])
        )  # calls 1 and 2
        verdict = await driver.call_decision(
            sy.DecisionRequest({"ok": sy.Boolean()}), "b"
        )  # call 3
        kept[request.id] = (response.call_id, verdict.call_id)
        return sy.answered(response.model, response)

    requests = [sy.Request("x", id=i) for i in range(3)]
    result = sy.run(algorithm, requests, host=flaky_and_steady(), engine=engine, concurrency=3)
    a = result.attempts
    for request_id, (call_id, decision_id) in kept.items():
        rows = a[(a["request_id"] == request_id) & (a["call_id"] == call_id)]
        assert rows["status"].astype(str).tolist()[-1] == "ok"
        assert rows["served"].tolist()[-1]
        assert decision_id == 3
        decision = a[(a["request_id"] == request_id) & (a["call_id"] == decision_id)]
        assert decision["kind"].astype(str).tolist() == ["decision"]
    served = a[a["served"]]
    assert served.groupby("request_id").size().tolist() == [1, 1, 1]


# -- hedge ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hedge_of_one_copy_that_answers_without_awaiting_wins_the_race(engine):
    host = flaky_and_steady()
    cached = sy.Response("b", "from a cache")

    async def algorithm(request, driver):
        async def from_cache():
            return cached

        response = await sy.hedge(from_cache, after=1.0, copies=1)
        index, raced = await sy.first_ok(
            sy.hedge(from_cache, after=1.0, copies=1), driver.call_model(request, ["b"])
        )
        assert (index, raced) == (0, cached)
        return sy.answered("b", response)

    result = sy.run(algorithm, [sy.Request("x", id=0)], host=host, engine=engine)
    # a Response no call of the request produced is not served (nothing in the records backs it)
    assert result.requests["status"].tolist() == ["failed"]
    assert result.requests["error_kind"].tolist() == ["invalid_outcome"]
    assert "did not come from a call of request 0" in result.requests["error_message"][0]
    assert result.attempts["status"].astype(str).tolist() == ["cancelled"]
    assert result.attempts["cancel_cause"].astype(str).tolist() == ["lost_race"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_hedge_whose_copy_raises_at_once_reports_the_algorithms_error(engine):
    host = flaky_and_steady()

    async def algorithm(request, driver):
        async def broken():
            raise KeyError("no such entry")

        await sy.hedge(broken, after=1.0, copies=1)
        return sy.route_to("b", request)

    result = sy.run(algorithm, [sy.Request("x", id=0)], host=host, engine=engine)
    row = result.requests.iloc[0]
    assert (row["status"], row["error_kind"]) == ("failed", "algorithm_error")
    assert row["error_message"] == "KeyError: 'no such entry'"


# -- engines agree ---------------------------------------------------------------------------------


def test_nested_races_on_one_model_give_identical_frames_on_both_engines():
    host = sy.SimHost(
        {
            "m": sy.ModelProfile(
                latency=sy.Latency(ttft=sy.dists.LogNormal(0.5, p95=2.0), tokens_per_s=80)
            )
        }
    )

    async def nested(request, driver):
        _, inner = await sy.first(
            sy.first(driver.call_model(request, ["m"]), driver.call_model(request, ["m"])),
            driver.call_model(request, ["m"]),
        )
        response = inner[1] if isinstance(inner, tuple) else inner
        return sy.answered("m", response)

    requests = [sy.Request(f"q{i}", id=i) for i in range(30)]
    kernel = sy.run(nested, requests, host=host, engine="kernel", seed=4)
    on_asyncio = sy.run(nested, requests, host=host, engine="asyncio", seed=4)
    pdt.assert_frame_equal(kernel.attempts, on_asyncio.attempts, check_exact=True)
    pdt.assert_frame_equal(kernel.requests, on_asyncio.requests, check_exact=True)


# -- never fewer rows than requests ----------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_that_lost_a_request_row_raises_instead_of_returning(engine, monkeypatch):
    from sykit._run import lifecycle as _lifecycle

    record = _lifecycle.StrategyRun._record

    def losing_one(self, state, *args):  # a stand-in for a bug that loses a row
        if state.request_id != 1:
            record(self, state, *args)

    monkeypatch.setattr(_lifecycle.StrategyRun, "_record", losing_one)
    host = text_and_vision(sy.HostPolicy())

    async def algorithm(request, driver):
        return sy.route_to("img", request)

    requests = [sy.Request("plain", id=i) for i in range(3)]
    with pytest.raises(sy.SykitError, match="3 requests were sent of 3 and 2 recorded"):
        sy.run(algorithm, requests, host=host, engine=engine)


def test_a_race_lost_at_the_instant_it_starts_cancels_nested_calls_alike_on_both_engines():
    """``first(decision, first(first(call)))`` with the decision failing at t=0: the nested call
    starts and is cancelled at 0 on both engines (a cancellation reaches a waiting task on its
    next turn, as asyncio delivers it)."""
    host = sy.SimHost(
        {
            "a": sy.ModelProfile(**P),
            "b": sy.ModelProfile(reject_delay_s=0.0, faults=sy.Faults(outages=[(0.0, 5.0)]), **P),
        },
        policy=sy.HostPolicy(recover_errors=False, max_retries=0),
    )
    question = sy.DecisionRequest({"x": sy.Boolean()})

    async def algorithm(request, driver):
        inner = sy.first(sy.first(driver.call_model(request, ["a"])))
        await sy.first(driver.call_decision(question, "b"), inner)
        return sy.route_to("a", request)

    results = [
        sy.run(algorithm, [sy.Request("q", id=0)], host=host, engine=engine) for engine in ENGINES
    ]
    for result in results:
        rows = [
            [
                r.model,
                r.status,
                r.start_s,
                r.end_s,
                r.cancel_cause if isinstance(r.cancel_cause, str) else None,
            ]
            for r in result.attempts.itertuples()
        ]
        assert rows == [
            ["b", "error", 0.0, 0.0, None],
            ["a", "cancelled", 0.0, 0.0, "lost_race"],
            ["a", "ok", 0.0, 0.6, None],
        ]
    pdt.assert_frame_equal(results[0].attempts, results[1].attempts, check_exact=True)
    pdt.assert_frame_equal(results[0].requests, results[1].requests, check_exact=True)


def test_waiting_for_a_call_that_already_failed_takes_asyncios_two_turns_on_both_engines():
    """``first(hedge(decision, copies=2), started decision)`` with every decision failing at t=0:
    the started call has already failed when ``first`` waits for it, yet the wait takes two turns
    (as ``asyncio.wait`` does), so the hedge's second copy starts first on both engines."""
    host = sy.SimHost(
        {"a": sy.ModelProfile(reject_delay_s=0.0, faults=sy.Faults(outages=[(0.0, 5.0)]), **P)},
        policy=sy.HostPolicy(recover_errors=False, max_retries=0),
    )
    question = sy.DecisionRequest({"x": sy.Boolean()})

    async def algorithm(request, driver):
        (started,) = sy.start(driver.call_decision(question, "a"))
        hedged = sy.hedge(lambda: driver.call_decision(question, "a"), after=1.0, copies=2)
        with contextlib.suppress(sy.ModelError):
            await sy.first(hedged, started)
        return sy.route_to("a", request)

    results = [
        sy.run(algorithm, [sy.Request("q", id=0)], host=host, engine=engine) for engine in ENGINES
    ]
    for result in results:
        rows = [
            [r.kind, r.call_id, r.status, r.start_s, r.end_s, r.race_size]
            for r in result.attempts.itertuples()
        ]
        assert rows == [
            ["decision", 0, "error", 0.0, 0.0, 0],
            ["decision", 1, "error", 0.0, 0.0, 2],
            ["decision", 2, "error", 0.0, 0.0, 2],
            ["model", 3, "error", 0.0, 0.0, 0],
        ]
    pdt.assert_frame_equal(results[0].attempts, results[1].attempts, check_exact=True)
    pdt.assert_frame_equal(results[0].requests, results[1].requests, check_exact=True)


def test_a_call_ending_at_the_instant_its_timeout_expires_is_cancelled_on_both_engines():
    """``timeout(0.5, started call)`` whose call would answer at exactly 0.5 s: the deadline was
    set first, so it fires first, and the call's task, woken at that instant but not yet run,
    gets the cancellation (asyncio order: every timer due fires before what it wakes runs)."""
    host = sy.SimHost(
        {"a": sy.ModelProfile(**{**P, "latency": sy.Latency(ttft=0.4, tokens_per_s=100.0)})}
    )

    async def algorithm(request, driver):
        (started,) = sy.start(driver.call_model(request, ["a"]))
        await sy.timeout(0.5, started)
        return sy.route_to("a", request)

    results = [
        sy.run(algorithm, [sy.Request("q", id=0)], host=host, engine=engine) for engine in ENGINES
    ]
    for result in results:
        first = result.attempts.iloc[0]
        assert (first.status, first.cancel_cause, first.end_s) == ("cancelled", "timeout", 0.5)
    pdt.assert_frame_equal(results[0].attempts, results[1].attempts, check_exact=True)
    pdt.assert_frame_equal(results[0].requests, results[1].requests, check_exact=True)
