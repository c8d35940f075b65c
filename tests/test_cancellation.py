"""Cancellation as in Switchyard's "cancel abandoned offloaded calls": the four recipes, abandoned
calls, and what each cancellation is recorded and billed as. Latencies are constant (conftest), so
every time below is exact: fast answers at 1.0 s, strong at 3.0 s, judge at 0.5 s.

Every test runs on both engines (the ``engine`` fixture). Recipes that await asyncio primitives
(``asyncio.ensure_future``, ``asyncio.wait``, anyio scopes) run through ``run_asyncio_only``: the
kernel refuses them under ``engine="kernel"`` and ``engine="auto"`` falls back to asyncio."""

from __future__ import annotations

import asyncio
import contextlib

import anyio
import pandas as pd
import pytest
from helpers import rows

import sykit as sy

REQUEST = sy.Request("What is 41 + 1?", id="q")
IMAGE_REQUEST = sy.Request(
    "What is in this picture?", id="img", images=["https://example.com/cat.png"]
)


def one(result: sy.Result, **where) -> dict:
    found = rows(result, **where)
    assert len(found) == 1, found
    return found[0]


# -- recipe 1: race two models (first completion wins) --------------------------------------------


async def race_two(request, driver):
    _, result = await sy.first(
        driver.call_model(request, ["fast"]), driver.call_model(request, ["strong"])
    )
    if isinstance(result, Exception):
        raise result
    return sy.answered(result.model, result)


def test_race_winner_served_and_loser_cancelled_at_winner_end(host, engine):
    res = sy.run(race_two, [REQUEST], host=host, engine=engine)
    fast, strong = one(res, model="fast"), one(res, model="strong")
    assert (fast["status"], fast["start_s"], fast["end_s"]) == ("ok", 0.0, 1.0)
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "lost_race",
        1.0,
    )
    assert fast["race_id"] == strong["race_id"] == 0
    request = res.requests.iloc[0]
    assert (request["status"], request["served_model"], request["latency_s"]) == ("ok", "fast", 1.0)
    assert request["n_cancelled"] == 1


def test_race_is_first_completion_so_an_error_can_win(profiles, engine):
    # fast cannot take images: it answers a capability 400 after its 0.05 s reject delay.
    host = sy.SimHost({**profiles, "strong": profiles["strong"].replace(vision=True)})
    res = sy.run(race_two, [IMAGE_REQUEST], host=host, engine=engine)
    fast, strong = one(res, model="fast"), one(res, model="strong")
    assert (fast["status"], fast["error_kind"], fast["end_s"]) == ("error", "capability", 0.05)
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "lost_race",
        0.05,
    )
    request = res.requests.iloc[0]
    assert (request["status"], request["error_kind"]) == ("failed", "capability")


def test_first_ok_lets_a_failure_lose(profiles, engine):
    async def first_success(request, driver):
        _, response = await sy.first_ok(
            driver.call_model(request, ["fast"]), driver.call_model(request, ["strong"])
        )
        return sy.answered(response.model, response)

    host = sy.SimHost({**profiles, "strong": profiles["strong"].replace(vision=True)})
    res = sy.run(first_success, [IMAGE_REQUEST], host=host, engine=engine)
    assert one(res, model="fast")["status"] == "error"
    assert one(res, model="strong")["status"] == "ok"
    assert res.requests.iloc[0]["served_model"] == "strong"


# -- recipe 2: a decision under a timeout ---------------------------------------------------------


def decision_with_deadline(seconds):
    async def algorithm(request, driver):
        question = sy.DecisionRequest({"easy": sy.Boolean("Is this easy?", oracle=True)})
        verdict = await sy.timeout(seconds, driver.call_decision(question, "judge"))
        if verdict is None:
            driver.evidence(source="timeout_fallback")
            return sy.route_to("strong", request)
        return sy.route_to("fast" if verdict.yes("easy") else "strong", request)

    return algorithm


def test_decision_cancelled_at_the_deadline_and_fallback_taken(host, engine):
    res = sy.run(decision_with_deadline(0.25), [REQUEST], host=host, engine=engine)
    judge = one(res, model="judge")
    assert (judge["status"], judge["cancel_cause"], judge["end_s"]) == (
        "cancelled",
        "timeout",
        0.25,
    )
    answer = one(res, phase="answer")
    assert (answer["model"], answer["start_s"], answer["end_s"]) == ("strong", 0.25, 3.25)
    request = res.requests.iloc[0]
    assert request["routing_s"] == 0.25 and request["evidence_source"] == "timeout_fallback"
    # a lone call under sy.timeout is not a race
    assert pd.isna(judge["race_id"]) and judge["race_size"] == 0


def test_decision_in_time_is_used(host, engine):
    res = sy.run(decision_with_deadline(1.0), [REQUEST], host=host, engine=engine)
    assert one(res, model="judge")["status"] == "ok"
    answer = one(res, phase="answer")
    assert (answer["model"], answer["start_s"], answer["end_s"]) == ("fast", 0.5, 1.5)


# -- recipe 3: cancel the strong call when the fast answer passes a check -------------------------


def speculative(acceptable):
    async def algorithm(request, driver):
        fast = asyncio.ensure_future(driver.call_model(request, ["fast"]))
        strong = asyncio.ensure_future(driver.call_model(request, ["strong"]))
        done, _ = await asyncio.wait({fast, strong}, return_when=asyncio.FIRST_COMPLETED)
        if fast in done:
            answer = fast.result()
            if acceptable(answer):
                strong.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await strong
                return sy.answered("fast", answer)
            return sy.answered("strong", await strong)
        fast.cancel()
        return sy.answered("strong", strong.result())

    return algorithm


def test_strong_cancelled_when_fast_passes_the_check(host, run_asyncio_only):
    res = run_asyncio_only(speculative(lambda r: True), [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "cancelled",
        1.0,
    )
    assert res.requests.iloc[0]["served_model"] == "fast"


def test_strong_keeps_running_when_fast_fails_the_check(host, run_asyncio_only):
    res = run_asyncio_only(speculative(lambda r: False), [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["end_s"]) == ("ok", 3.0)
    request = res.requests.iloc[0]
    assert (request["served_model"], request["latency_s"]) == ("strong", 3.0)
    # the fast answer was paid for and not served: it is waste
    fast = one(res, model="fast")
    assert request["wasted_usd"] == pytest.approx(fast["cost_usd"])


# -- recipe 4: a decision racing a speculative strong call ----------------------------------------


def judge_vs_strong(judge_model, choose_fast):
    async def algorithm(request, driver):
        question = sy.DecisionRequest({"fast_is_enough": sy.Boolean(oracle=choose_fast)})
        decision = asyncio.ensure_future(driver.call_decision(question, judge_model))
        strong = asyncio.ensure_future(driver.call_model(request, ["strong"]))
        done, _ = await asyncio.wait({decision, strong}, return_when=asyncio.FIRST_COMPLETED)
        if decision in done:
            if decision.result().yes("fast_is_enough"):
                strong.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await strong
                return sy.answered("fast", await driver.call_model(request, ["fast"]))
            return sy.answered("strong", await strong)
        decision.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await decision
        return sy.answered("strong", strong.result())

    return algorithm


def test_judge_picks_fast_so_strong_is_cancelled_and_fast_called(host, run_asyncio_only):
    res = run_asyncio_only(judge_vs_strong("judge", True), [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["end_s"]) == ("cancelled", 0.5)
    fast = one(res, model="fast")
    assert (fast["start_s"], fast["end_s"], fast["status"]) == (0.5, 1.5, "ok")
    assert res.requests.iloc[0]["served_model"] == "fast"


def test_judge_picks_strong_so_strong_continues(host, run_asyncio_only):
    res = run_asyncio_only(judge_vs_strong("judge", False), [REQUEST], host=host)
    assert one(res, model="strong")["end_s"] == 3.0
    assert rows(res, model="fast") == []
    assert res.requests.iloc[0]["served_model"] == "strong"


def test_strong_finishes_first_so_the_judge_is_cancelled(host, run_asyncio_only):
    res = run_asyncio_only(judge_vs_strong("slow_judge", True), [REQUEST], host=host)
    judge = one(res, model="slow_judge")
    assert (judge["status"], judge["end_s"], judge["kind"]) == ("cancelled", 3.0, "decision")
    assert one(res, model="strong")["status"] == "ok"


# -- abandoning calls -----------------------------------------------------------------------------


def test_abandon_one_call_then_another_succeeds(host, run_asyncio_only):
    async def algorithm(request, driver):
        pending = asyncio.ensure_future(driver.call_model(request, ["strong"]))
        await driver.sleep(0.5)
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pending
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    res = run_asyncio_only(algorithm, [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "cancelled",
        0.5,
    )
    fast = one(res, model="fast")
    assert (fast["start_s"], fast["end_s"]) == (0.5, 1.5)
    assert res.requests.iloc[0]["status"] == "ok"


def test_anyio_scope_cancels_a_call(host, run_asyncio_only):
    async def algorithm(request, driver):
        with anyio.move_on_after(0.75):
            await driver.call_model(request, ["strong"])
        return sy.route_to("fast", request)

    res = run_asyncio_only(algorithm, [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "cancelled",
        0.75,
    )


def test_returning_while_calls_run_cancels_them_as_abandoned(host, run_asyncio_only):
    async def algorithm(request, driver):
        # Started and deliberately left running: the runner must cancel it when we return.
        asyncio.ensure_future(driver.call_model(request, ["strong"]))  # noqa: RUF006
        fast = await driver.call_model(request, ["fast"])
        return sy.answered("fast", fast)

    res = run_asyncio_only(algorithm, [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "abandoned",
        1.0,
    )


def test_failing_while_calls_run_cancels_them_as_request_failed(host, run_asyncio_only):
    async def algorithm(request, driver):
        asyncio.ensure_future(driver.call_model(request, ["strong"]))  # noqa: RUF006
        await driver.sleep(0.4)
        raise RuntimeError("my bug")

    with pytest.warns(sy.AlgorithmWarning, match="my bug"):
        res = run_asyncio_only(algorithm, [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["cancel_cause"], strong["end_s"]) == ("request_failed", 0.4)
    request = res.requests.iloc[0]
    assert (request["error_kind"], request["error_message"]) == (
        "algorithm_error",
        "RuntimeError: my bug",
    )


def test_a_task_outliving_its_request_cannot_call_again(host, engine):
    leaked = {}

    async def algorithm(request, driver):
        leaked["driver"] = driver
        return sy.route_to("fast", request)

    sy.run(algorithm, [REQUEST], host=host, engine=engine)

    async def late():
        return await leaked["driver"].call_model(REQUEST, ["fast"])

    with pytest.raises(sy.RequestClosed, match="has finished"):
        asyncio.run(late())


def test_hedge_starts_a_copy_after_the_delay_and_cancels_the_slower(host, engine):
    async def hedged(request, driver):
        response = await sy.hedge(lambda: driver.call_model(request, ["strong"]), after=2.0)
        return sy.answered(response.model, response)

    res = sy.run(hedged, [REQUEST], host=host, engine=engine)
    strong = rows(res, model="strong")
    # Same constant latency: the primary (0→3.0) beats the copy started at 2.0 (2.0→5.0).
    assert [(r["start_s"], r["end_s"], r["status"]) for r in strong] == [
        (0.0, 3.0, "ok"),
        (2.0, 3.0, "cancelled"),
    ]
    assert strong[1]["cancel_cause"] == "lost_race" and strong[0]["race_id"] == strong[1]["race_id"]
    assert [r["race_size"] for r in strong] == [2, 2]


def test_hedge_not_needed_when_the_primary_is_fast(host, engine):
    async def hedged(request, driver):
        response = await sy.hedge(lambda: driver.call_model(request, ["fast"]), after=2.0)
        return sy.answered(response.model, response)

    res = sy.run(hedged, [REQUEST], host=host, engine=engine)
    assert len(res.attempts) == 1
    row = res.attempts.iloc[0]
    assert pd.isna(row["race_id"]) and row["race_size"] == 0  # no copy sent: no race


def test_race_ids_are_unique_in_the_run_and_count_their_calls(host, engine):
    async def twice(request, driver):
        await sy.first(driver.call_model(request, ["fast"]), driver.call_model(request, ["strong"]))
        await sy.timeout(5.0, driver.call_model(request, ["fast"]))
        three = [driver.call_model(request, ["fast"]) for _ in range(3)]
        _, response = await sy.first(*three)
        return sy.answered("fast", response)

    res = sy.run(twice, [REQUEST, sy.Request("again", id=1)], host=host, engine=engine)
    races = res.attempts.dropna(subset=["race_id"])
    sizes = races.groupby("race_id")["call_id"].nunique()
    assert sizes.tolist() == [2, 3, 2, 3]  # four races, numbered across both requests
    assert (races["race_size"] == races["race_id"].map(sizes)).all()
    assert res.attempts["race_id"].isna().sum() == 2  # the calls under sy.timeout


# -- what cancelled calls cost ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bill", "output_tokens"),
    [
        # strong: first token at 1.0 s, then 50 tokens/s; cancelled at 1.0 s (fast wins) → 1 token
        ("generated", 1),
        ("none", 0),
        ("full", 100),
    ],
)
def test_cancelled_calls_are_billed_per_policy(profiles, bill, output_tokens, engine):
    host = sy.SimHost(profiles, policy=sy.HostPolicy(bill_cancelled=bill))
    res = sy.run(race_two, [REQUEST], host=host, engine=engine)
    strong = one(res, model="strong")
    input_tokens = 0 if bill == "none" else REQUEST.input_tokens
    assert (strong["input_tokens"], strong["output_tokens"]) == (input_tokens, output_tokens)
    expected = (input_tokens * 10.0 + output_tokens * 30.0) / 1e6
    assert strong["cost_usd"] == pytest.approx(expected)
    fast = one(res, model="fast")
    assert fast["cost_usd"] == pytest.approx((REQUEST.input_tokens * 1.0 + 50 * 2.0) / 1e6)
    request = res.requests.iloc[0]
    assert request["cost_usd"] == pytest.approx(fast["cost_usd"] + strong["cost_usd"])
    assert request["wasted_usd"] == pytest.approx(strong["cost_usd"])


def test_generated_tokens_grow_with_the_cancel_instant(profiles, engine):
    def cancel_at(seconds):
        async def algorithm(request, driver):
            await sy.timeout(seconds, driver.call_model(request, ["strong"]))
            return sy.route_to("fast", request)

        return algorithm

    host = sy.SimHost(profiles)
    # strong: first token at 1.0 s, 50 tokens/s after it
    produced = {
        s: one(sy.run(cancel_at(s), [REQUEST], host=host, engine=engine), model="strong")[
            "output_tokens"
        ]
        for s in (0.5, 1.0, 1.5, 2.98)
    }
    assert produced == {0.5: 0, 1.0: 1, 1.5: 26, 2.98: 100}


def test_cancelling_a_call_just_before_returning_keeps_the_cause_cancelled(host, run_asyncio_only):
    async def algorithm(request, driver):
        fast = asyncio.ensure_future(driver.call_model(request, ["fast"]))
        strong = asyncio.ensure_future(driver.call_model(request, ["strong"]))
        answer = await fast
        strong.cancel()  # not awaited: the runner finishes the cancellation after we return
        return sy.answered("fast", answer)

    res = run_asyncio_only(algorithm, [REQUEST], host=host)
    strong = one(res, model="strong")
    assert (strong["status"], strong["cancel_cause"], strong["end_s"]) == (
        "cancelled",
        "cancelled",
        1.0,
    )
