"""The candidate loop shared by every host: retries, backoff, fallback reasons, cooldown, phases.

Profiles here answer in exactly 1.0 s and reject in exactly 0.125 s, so times are exact. Every test
runs on both engines (the ``engine`` fixture) and expects the same records.
"""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from helpers import rows

import sykit as sy

TEXT = sy.Request("Summarise this.", id="t")
IMAGE = sy.Request("What is in the picture?", id="img", images=["https://example.com/cat.png"])


def model(**kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(ttft=0.5, tokens_per_s=100),
        "output_tokens": 50,
        "reject_delay_s": 0.125,
        "price_in": 1.0,
        "price_out": 2.0,
    }
    settings.update(kwargs)
    return sy.ModelProfile(**settings)


def host(policy=None, **models) -> sy.SimHost:
    return sy.SimHost(models, policy=policy or sy.HostPolicy())


def answer_with(models, fallbacks=()):
    async def algorithm(request, driver):
        return sy.route_to(models, request, fallbacks=list(fallbacks))

    return algorithm


def summary_of(res, **where):
    return [
        (r["model"], r["retry_index"], r["status"], r["start_s"], r["end_s"])
        for r in rows(res, **where)
    ]


# -- retries within one target ------------------------------------------------------------------


def test_503_is_retried_with_doubling_backoff_then_falls_back(engine):
    h = host(weak=model(faults=sy.Faults(unavailable=1.0)), strong=model())
    res = sy.run(answer_with("weak", ["strong"]), [TEXT], host=h, engine=engine)
    assert summary_of(res) == [
        ("weak", 0, "error", 0.0, 0.125),
        ("weak", 1, "error", 0.375, 0.5),  # waited 0.25 s
        ("weak", 2, "error", 1.0, 1.125),  # waited 0.5 s
        ("strong", 0, "ok", 1.125, 2.125),
    ]
    weak = rows(res, model="weak")
    assert [r["retried"] for r in weak] == [True, True, False]
    assert [r["fallback_reason"] for r in weak][-1] == "unavailable"
    request = res.requests.iloc[0]
    assert (request["n_retries"], request["n_fallbacks"], request["served_model"]) == (
        2,
        1,
        "strong",
    )


def test_backoff_doubles_up_to_two_seconds(engine):
    policy = sy.HostPolicy(max_retries=5, cooldown_s=0)
    res = sy.run(
        answer_with("weak"),
        [TEXT],
        host=host(policy, weak=model(faults=sy.Faults(unavailable=1.0))),
        engine=engine,
    )
    starts = [r["start_s"] for r in rows(res)]
    waits = [b - (a + 0.125) for a, b in itertools.pairwise(starts)]
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert res.requests.iloc[0]["error_kind"] == "unavailable"


@pytest.mark.parametrize(("retry_after", "expected_wait"), [(3.0, 3.0), (100.0, 60.0)])
def test_retry_after_is_honoured_and_capped_at_60_seconds(retry_after, expected_wait, engine):
    limited = model(
        faults=sy.Faults(fail_first=1, fail_first_status=429, retry_after_s=retry_after)
    )
    res = sy.run(answer_with("m"), [TEXT], host=host(m=limited), engine=engine)
    first, second = rows(res)
    assert (first["error_kind"], first["http_status"]) == ("rate_limit", 429)
    assert second["start_s"] - first["end_s"] == expected_wait
    assert second["status"] == "ok"


def test_soak_markers_fail_twice_then_recover_on_the_third_attempt(engine):
    marker = model(faults=sy.Faults(fail_first=2, fail_first_status=500))
    res = sy.run(answer_with("m"), [TEXT], host=host(m=marker), engine=engine)
    assert [r["status"] for r in rows(res)] == ["error", "error", "ok"]
    assert res.requests.iloc[0]["status"] == "ok"


def test_a_400_is_never_retried_and_never_falls_back_unless_eligible(engine):
    h = host(weak=model(faults=sy.Faults(invalid=1.0)), strong=model())
    res = sy.run(answer_with("weak", ["strong"]), [TEXT], host=h, engine=engine)
    assert summary_of(res) == [("weak", 0, "error", 0.0, 0.125)]
    request = res.requests.iloc[0]
    assert (request["status"], request["error_kind"]) == ("failed", "invalid_request")


# -- fallback across candidates ------------------------------------------------------------------


def test_capability_400_falls_back_and_the_next_candidate_gets_the_request_as_it_arrived(engine):
    h = host(text=model(), vision=model(vision=True))
    res = sy.run(answer_with("text", ["vision"]), [IMAGE], host=h, engine=engine)
    text, vision = rows(res)
    assert (text["error_kind"], text["fallback_reason"], text["retried"]) == (
        "capability",
        "capability",
        False,
    )
    assert vision["status"] == "ok" and vision["start_s"] == 0.125
    assert vision["input_tokens"] == IMAGE.input_tokens
    assert res.requests.iloc[0]["served_model"] == "vision"


def test_the_last_candidates_own_error_is_returned(engine):
    h = host(text1=model(), text2=model())
    res = sy.run(answer_with("text1", ["text2"]), [IMAGE], host=h, engine=engine)
    assert [r["model"] for r in rows(res)] == ["text1", "text2"]
    request = res.requests.iloc[0]
    assert request["error_kind"] == "capability"
    assert "'text2'" in request["error_message"]


def test_overflow_falls_back_to_a_bigger_window(engine):
    big = sy.Request("x", id="big", input_tokens=100_000, max_output_tokens=1_000)
    h = host(small=model(context_window=32_000), large=model(context_window=200_000))
    res = sy.run(answer_with("small", ["large"]), [big], host=h, engine=engine)
    small = rows(res, model="small")[0]
    assert (small["error_kind"], small["fallback_reason"]) == ("context_window", "context_window")
    assert res.requests.iloc[0]["served_model"] == "large"


def test_input_plus_max_output_over_the_window_is_an_overflow(engine):
    exactly = sy.Request("x", input_tokens=31_000, max_output_tokens=1_000)
    over = sy.Request("x", input_tokens=31_000, max_output_tokens=1_001)
    h = host(small=model(context_window=32_000))
    res = sy.run(answer_with("small"), [exactly, over], host=h, engine=engine)
    assert res.requests["status"].tolist() == ["ok", "failed"]


@pytest.mark.parametrize(
    ("allow", "served", "status"), [(False, None, "failed"), (True, "b", "ok")]
)
def test_policy_denial_falls_back_only_when_allowed(allow, served, status, engine):
    policy = sy.HostPolicy(allow_policy_fallback=allow)
    h = host(policy, a=model(faults=sy.Faults(policy=1.0)), b=model())
    res = sy.run(answer_with("a", ["b"]), [TEXT], host=h, engine=engine)
    request = res.requests.iloc[0]
    assert request["status"] == status
    assert (request["served_model"] if status == "ok" else None) == served
    reason = rows(res, model="a")[0]["fallback_reason"]
    assert (reason if allow else pd.isna(reason)) == ("policy" if allow else True)


def test_persistent_rate_limit_falls_back_with_reason_rate_limit(engine):
    h = host(a=model(faults=sy.Faults(rate_limit=1.0, retry_after_s=0.5)), b=model())
    res = sy.run(answer_with("a", ["b"]), [TEXT], host=h, engine=engine)
    a_rows = rows(res, model="a")
    assert len(a_rows) == 3 and a_rows[-1]["fallback_reason"] == "rate_limit"


def test_timeouts_are_retried_but_do_not_fall_back(engine):
    policy = sy.HostPolicy(timeout_s=4.0, max_retries=1, cooldown_s=0)
    h = host(policy, a=model(faults=sy.Faults(timeout=1.0)), b=model())
    res = sy.run(answer_with("a", ["b"]), [TEXT], host=h, engine=engine)
    assert summary_of(res) == [("a", 0, "error", 0.0, 4.0), ("a", 1, "error", 4.25, 8.25)]
    assert res.requests.iloc[0]["error_kind"] == "timeout"


def test_fallback_reasons_can_be_narrowed(engine):
    policy = sy.HostPolicy(fallback_reasons={"context_window"})
    h = host(policy, text=model(), vision=model(vision=True))
    res = sy.run(answer_with("text", ["vision"]), [IMAGE], host=h, engine=engine)
    assert res.requests.iloc[0]["error_kind"] == "capability"


# -- failure cooldown ------------------------------------------------------------------------------


def test_a_transient_failure_cools_the_target_down_for_the_next_requests(engine):
    policy = sy.HostPolicy(max_retries=0, cooldown_s=10.0)
    flaky = model(faults=sy.Faults(fail_first=1, fail_first_status=503))
    h = host(policy, a=flaky, b=model())
    reqs = [sy.Request("x", id=i) for i in range(3)]
    res = sy.run(answer_with("a", ["b"]), reqs, host=h, arrivals=[0.0, 5.0, 20.0], engine=engine)
    by_request = {rid: summary_of(res, request_id=rid) for rid in range(3)}
    assert by_request[0] == [("a", 0, "error", 0.0, 0.125), ("b", 0, "ok", 0.125, 1.125)]
    assert by_request[1] == [("a", 0, "skipped", 5.0, 5.0), ("b", 0, "ok", 5.0, 6.0)]
    assert by_request[2] == [("a", 0, "ok", 20.0, 21.0)]  # cooled down at t=10.125
    skipped = rows(res, status="skipped")[0]
    assert skipped["error_kind"] == "cooldown"
    assert res.requests.set_index("request_id").loc[1, "n_attempts"] == 1


def test_a_400_never_starts_a_cooldown(engine):
    policy = sy.HostPolicy(cooldown_s=10.0)
    h = host(policy, text=model(), vision=model(vision=True))
    res = sy.run(
        answer_with("text", ["vision"]), [IMAGE, TEXT], host=h, arrivals=[0.0, 1.0], engine=engine
    )
    assert summary_of(res, request_id="t") == [("text", 0, "ok", 1.0, 2.0)]


def test_the_last_candidate_is_tried_even_while_cooling(engine):
    policy = sy.HostPolicy(max_retries=0, cooldown_s=10.0)
    h = host(policy, a=model(faults=sy.Faults(fail_first=1, fail_first_status=503)))
    reqs = [sy.Request("x", id=i) for i in range(2)]
    res = sy.run(answer_with("a"), reqs, host=h, arrivals=[0.0, 1.0], engine=engine)
    assert summary_of(res, request_id=1) == [("a", 0, "ok", 1.0, 2.0)]


# -- routing phase vs answer phase ----------------------------------------------------------------


def routing_call(models):
    async def algorithm(request, driver):
        try:
            response = await driver.call_model(request, models)
        except sy.ModelError as error:
            driver.evidence(caught=error.kind)
            return sy.route_to("vision", request)
        return sy.answered(response.model, response)

    return algorithm


def test_routing_calls_use_only_their_first_candidate_by_default(engine):
    h = host(text=model(), vision=model(vision=True))
    res = sy.run(routing_call(["text", "vision"]), [IMAGE], host=h, engine=engine)
    routing = rows(res, phase="routing")
    assert [r["model"] for r in routing] == ["text"]
    assert res.requests.iloc[0]["evidence_caught"] == "capability"


def test_routing_fallback_applies_the_loop_in_the_routing_phase(engine):
    policy = sy.HostPolicy(routing_fallback=True)
    h = host(policy, text=model(), vision=model(vision=True))
    res = sy.run(routing_call(["text", "vision"]), [IMAGE], host=h, engine=engine)
    assert [r["model"] for r in rows(res, phase="routing")] == ["text", "vision"]
    assert res.requests.iloc[0]["served_model"] == "vision"


def test_without_recover_errors_a_routing_error_fails_the_request(engine):
    policy = sy.HostPolicy(recover_errors=False)
    h = host(policy, text=model(), vision=model(vision=True))
    res = sy.run(routing_call(["text"]), [IMAGE], host=h, engine=engine)
    request = res.requests.iloc[0]
    assert (request["status"], request["error_kind"]) == ("failed", "capability")
    assert "evidence_caught" not in res.requests.columns  # the algorithm never saw the error


def test_without_recover_errors_other_running_calls_are_cancelled_as_request_failed(engine):
    policy = sy.HostPolicy(recover_errors=False)
    h = host(
        policy,
        text=model(),
        vision=model(vision=True, latency=sy.Latency(ttft=2.0, tokens_per_s=100)),
    )

    async def algorithm(request, driver):
        await sy.first_ok(
            driver.call_model(request, ["vision"]), driver.call_model(request, ["text"])
        )
        return sy.route_to("vision", request)

    res = sy.run(algorithm, [IMAGE], host=h, engine=engine)
    vision = rows(res, model="vision")[0]
    assert (vision["status"], vision["cancel_cause"], vision["end_s"]) == (
        "cancelled",
        "request_failed",
        0.125,
    )
    assert res.requests.iloc[0]["error_kind"] == "capability"


def test_decision_errors_always_go_back_to_the_algorithm(engine):
    policy = sy.HostPolicy(recover_errors=False, max_retries=0)
    h = host(policy, judge=model(faults=sy.Faults(unavailable=1.0)), a=model())

    async def algorithm(request, driver):
        try:
            await driver.call_decision(sy.DecisionRequest({"ok": sy.Boolean()}), "judge")
        except sy.UnavailableError:
            return sy.route_to("a", request)
        raise AssertionError("the decision should have failed")

    res = sy.run(algorithm, [TEXT], host=h, engine=engine)
    assert res.requests.iloc[0]["status"] == "ok"


# -- money ------------------------------------------------------------------------------------------


def test_failed_attempts_cost_nothing_and_waste_is_what_was_not_served(engine):
    h = host(
        weak=model(faults=sy.Faults(unavailable=1.0)), strong=model(price_in=10.0, price_out=30.0)
    )
    res = sy.run(answer_with("weak", ["strong"]), [TEXT], host=h, engine=engine)
    assert all(r["cost_usd"] == 0.0 for r in rows(res, model="weak"))
    strong = rows(res, model="strong")[0]
    request = res.requests.iloc[0]
    assert strong["cost_usd"] == pytest.approx((TEXT.input_tokens * 10.0 + 50 * 30.0) / 1e6)
    assert request["cost_usd"] == pytest.approx(strong["cost_usd"])
    assert request["wasted_usd"] == 0.0


def test_each_retried_row_says_how_long_the_loop_waited_before_the_retry(engine):
    flaky = sy.ModelProfile(
        latency=sy.Latency(ttft=0.5, tokens_per_s=100.0),
        output_tokens=10,
        faults=sy.Faults(fail_first=2, fail_first_status=429, retry_after_s=1.5),
        reject_delay_s=0.25,
    )
    host = sy.SimHost({"m": flaky}, policy=sy.HostPolicy(max_retries=2, cooldown_s=0))
    res = sy.run(sy.strategies.single("m"), ["q"], host=host, engine=engine)
    rows = res.attempts
    assert rows["retried"].tolist() == [True, True, False]
    assert rows["retry_wait_s"].tolist()[:2] == [1.5, 1.5]
    assert pd.isna(rows["retry_wait_s"].iloc[2])
    assert rows["http_status"].tolist() == [429, 429, 200]  # an answer's status too
