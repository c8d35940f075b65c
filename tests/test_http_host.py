"""HttpHost against the loopback fault server: the same candidate loop as SimHost over real
sockets, in real time. Latencies are milliseconds, so the whole file runs in a few seconds."""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import threading
import time

import pandas as pd
import pytest
from helpers import rows as all_rows

import sykit as sy
from sykit._hosts.http import HttpHost, HttpModel
from sykit.testing import FakeModel, FakeProvider

KEY = "sk-test-0123456789abcdefSECRET"
PRICES = sy.ModelProfile(price_in=1.0, price_out=2.0)
POLICY = sy.HostPolicy(max_retries=1, backoff_initial_s=0.01, cooldown_s=0, timeout_s=2.0)
FAKE_MODELS = {
    "fast": FakeModel(ttft_s=0.02, tokens_per_s=1000, output_tokens=16),
    "strong": FakeModel(ttft_s=0.05, tokens_per_s=1000, output_tokens=32),
    "slow": FakeModel(ttft_s=1.5, tokens_per_s=1000, output_tokens=16),
    "long": FakeModel(ttft_s=0.01, tokens_per_s=100, output_tokens=100),  # streams for 1 s
    "judge": FakeModel(ttft_s=0.01, verdict={"good_enough": False}),
    "lenient": FakeModel(ttft_s=0.01),
    "text-only": FakeModel(vision=False),
    "rate-limited": FakeModel(fault="fail-429-once", retry_after_s=0.2),
    "overloaded": FakeModel(fault="fail-503-once", retry_after_s=0.2, retry_after_statuses=(503,)),
    "overloaded-529": FakeModel(
        fault="fail-529-once", retry_after_s=0.2, retry_after_statuses=(529,)
    ),
}


@pytest.fixture(scope="module")
def fake():
    with FakeProvider(FAKE_MODELS, api_key=KEY) as provider:
        yield provider


@pytest.fixture(autouse=True)
def fresh(fake):
    fake.reset()
    yield
    fake.wait_idle()


def http_host(fake, *names, policy=POLICY, **kwargs) -> HttpHost:
    return HttpHost(
        fake.base_url,
        api_key=KEY,
        models=dict.fromkeys(names or FAKE_MODELS, PRICES),
        policy=policy,
        **kwargs,
    )


def rows(result: sy.Result, **where) -> list[dict]:
    """Attempt rows as dicts, with None (not NaN) where a value is missing."""
    return [
        {k: (None if not isinstance(v, str | bool) and pd.isna(v) else v) for k, v in row.items()}
        for row in all_rows(result, **where)
    ]


def one(result: sy.Result, **where) -> dict:
    found = rows(result, **where)
    assert len(found) == 1, found
    return found[0]


async def fast_only(request, driver):
    return sy.answered("fast", await driver.call_model(request, ["fast"]))


# -- answers ---------------------------------------------------------------------------------------


def test_a_non_streamed_call_records_real_usage_and_cost(fake):
    res = sy.run(fast_only, ["hello there"], host=http_host(fake, "fast"))
    row = one(res, model="fast")
    assert row["status"] == "ok"
    assert (row["input_tokens"], row["output_tokens"]) == (7, 16)  # the server's usage
    assert row["cost_usd"] == pytest.approx((7 * 1.0 + 16 * 2.0) / 1e6)
    assert row["ttft_s"] is None  # a complete body has no first token to time
    assert 0.02 + 16 / 1000 <= row["latency_s"] < 1.0
    request = res.requests.iloc[0]
    assert (request["status"], request["served_model"]) == ("ok", "fast")
    fake.wait_idle()
    (served,) = fake.requests
    assert served.body["messages"] == [{"role": "user", "content": "hello there"}]
    assert "stream" not in served.body


def test_the_run_clock_starts_once_the_http_client_is_ready(fake, monkeypatch):
    build = sy.HttpHost.open

    def slow_open(self, seed):
        session = build(self, seed)
        time.sleep(0.3)  # a client whose TLS set-up is slow
        return session

    monkeypatch.setattr(sy.HttpHost, "open", slow_open)
    res = sy.run(fast_only, ["hello there"], host=http_host(fake, "fast"), arrivals=[0.0])
    assert one(res, model="fast")["start_s"] < 0.1
    assert res.requests.iloc[0]["latency_s"] < 0.3


def test_a_streamed_call_times_the_first_content_chunk(fake):
    res = sy.run(fast_only, ["hello there"], host=http_host(fake, "fast", stream=True))
    row = one(res, model="fast")
    assert row["status"] == "ok"
    assert (row["input_tokens"], row["output_tokens"]) == (7, 16)
    # the role chunk comes at once; the first content chunk after the 20 ms ttft
    assert 0.02 <= row["ttft_s"] < row["latency_s"]
    assert res.requests.iloc[0]["ttft_s"] >= row["ttft_s"]
    fake.wait_idle()
    assert fake.requests[0].body["stream_options"] == {"include_usage": True}


def test_a_request_can_ask_for_streaming_through_its_metadata(fake):
    request = sy.Request("hi", metadata={"stream": True})
    res = sy.run(fast_only, [request], host=http_host(fake, "fast"))
    assert one(res, model="fast")["ttft_s"] > 0
    fake.wait_idle()
    assert fake.requests[0].stream


def test_the_request_body_carries_images_tools_limits_and_the_upstream_id(fake):
    tool = {"name": "lookup", "description": "Look it up.", "parameters": {"type": "object"}}
    request = sy.Request(
        "What is this?", images=["https://example.com/cat.png"], tools=[tool], max_output_tokens=5
    )
    host = HttpHost(
        fake.base_url,
        api_key=KEY,
        models={"mine": HttpModel(model_id="fast", extra_body={"temperature": 0})},
        policy=POLICY,
    )

    async def algorithm(request, driver):
        return sy.answered("mine", await driver.call_model(request, ["mine"]))

    res = sy.run(algorithm, [request], host=host)
    assert one(res, model="mine")["output_tokens"] == 5
    fake.wait_idle()
    body = fake.requests[0].body
    assert body["model"] == "fast" and body["temperature"] == 0 and body["max_tokens"] == 5
    assert body["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://example.com/cat.png"},
    }
    assert body["tools"][0]["function"]["name"] == "lookup"


# -- faults through the shared candidate loop -----------------------------------------------------


def test_429_waits_the_retry_after_then_succeeds(fake):
    async def algorithm(request, driver):
        return sy.answered("rate-limited", await driver.call_model(request, ["rate-limited"]))

    res = sy.run(algorithm, ["q"], host=http_host(fake, "rate-limited"))
    first, second = rows(res, model="rate-limited")
    assert (first["status"], first["error_kind"], first["http_status"]) == (
        "error",
        "rate_limit",
        429,
    )
    assert first["retried"]
    assert second["status"] == "ok" and second["retry_index"] == 1
    assert second["start_s"] - first["end_s"] >= 0.2 * 0.95  # Retry-After: 0.2


@pytest.mark.parametrize(("model", "status"), [("overloaded", 503), ("overloaded-529", 529)])
def test_a_5xx_with_retry_after_waits_for_it_then_succeeds(fake, model, status):
    res = sy.run(sy.strategies.single(model), ["q"], host=http_host(fake, model))
    first, second = rows(res, model=model)
    assert (first["error_kind"], first["http_status"], first["retried"]) == (
        "unavailable",
        status,
        True,
    )
    assert second["status"] == "ok"
    # Retry-After: 0.2, where the policy's own backoff would wait 0.01 s
    assert second["start_s"] - first["end_s"] >= 0.2 * 0.95


def test_500_once_then_success_on_retry(fake):
    res = sy.run(
        sy.strategies.single("fail-500-once"), ["q"], host=http_host(fake, "fail-500-once")
    )
    statuses = [(r["status"], r["error_kind"], r["http_status"]) for r in rows(res)]
    assert statuses == [("error", "unavailable", 500), ("ok", None, 200)]
    assert res.requests.iloc[0]["n_retries"] == 1


def test_every_run_of_a_comparison_meets_the_same_faults(fake):
    strategies = {
        "single": sy.strategies.single("fail-500-once"),
        "chain": sy.strategies.fallback_chain(["fail-500-once", "fast"]),
    }
    host = http_host(fake, "fail-500-once", "fast")
    comparison = sy.compare(strategies, ["q"], host=host)
    for result in comparison.results:
        assert [r["http_status"] for r in rows(result)] == [500, 200]


@pytest.mark.parametrize(
    ("first", "kind", "reason"),
    [
        ("vision-400", "capability", "capability"),
        ("overflow-400", "context_window", "context_window"),
    ],
)
def test_capability_and_overflow_400_fall_back(fake, first, kind, reason):
    res = sy.run(
        sy.strategies.fallback_chain([first, "fast"]), ["q"], host=http_host(fake, first, "fast")
    )
    failed, served = rows(res)
    assert (failed["error_kind"], failed["fallback_reason"], failed["retried"]) == (
        kind,
        reason,
        False,
    )
    assert served["status"] == "ok" and res.requests.iloc[0]["served_model"] == "fast"


def test_a_text_only_model_rejects_images_and_the_chain_moves_on(fake):
    request = sy.Request("What is this?", images=["https://example.com/cat.png"])
    host = http_host(fake, "text-only", "fast")
    res = sy.run(sy.strategies.fallback_chain(["text-only", "fast"]), [request], host=host)
    assert [r["error_kind"] for r in rows(res)] == ["capability", None]


def test_policy_400_is_terminal_unless_policy_fallback_is_allowed(fake):
    chain = sy.strategies.fallback_chain(["policy-400", "fast"])
    res = sy.run(chain, ["q"], host=http_host(fake, "policy-400", "fast"))
    assert [r["model"] for r in rows(res)] == ["policy-400"]
    assert res.requests.iloc[0]["error_kind"] == "policy"
    allowed = POLICY.replace(allow_policy_fallback=True)
    res = sy.run(chain, ["q"], host=http_host(fake, "policy-400", "fast", policy=allowed))
    assert [(r["model"], r["status"]) for r in rows(res)] == [
        ("policy-400", "error"),
        ("fast", "ok"),
    ]


FAULT_CASES = [
    # model, stream, error kind of the first attempt, words in its message
    ("reset", False, "unavailable", "connection reset"),
    ("no-response", True, "unavailable", "without a response"),
    ("hang", False, "timeout", "no answer within 0.3 s"),
    ("slow-first-token", True, "timeout", "no answer within 0.3 s"),
    ("cut-stream", False, "unavailable", "before the body was complete"),
    ("cut-stream", True, "invalid_response", "after 8 tokens"),
    ("malformed-chunk", True, "invalid_response", "malformed stream chunk"),
    ("malformed-json", False, "invalid_response", "not valid JSON"),
    ("malformed-json", True, "invalid_response", "not valid JSON"),
    ("not-chat", False, "invalid_response", "not a chat completion"),
    ("no-done", True, None, None),
    ("empty-stream", True, "unavailable", "(after data: [DONE]) (before the first token)"),
    ("no-content", True, "unavailable", "no content and no finish_reason"),
    ("done-then-cut", True, "invalid_response", "after data: [DONE]"),
]


@pytest.mark.parametrize(("model", "stream", "kind", "words"), FAULT_CASES)
def test_each_fault_becomes_the_right_error_kind_and_the_run_goes_on(
    fake, model, stream, kind, words
):
    policy = POLICY.replace(max_retries=0, timeout_s=0.3)
    host = http_host(fake, model, "fast", policy=policy, stream=stream)
    res = sy.run(sy.strategies.fallback_chain([model, "fast"]), ["a", "b"], host=host)
    first = rows(res, model=model, request_id=0)[0]
    assert first["error_kind"] == kind
    if words is not None:
        assert words in first["error_message"]
        retryable = kind in ("unavailable", "timeout")
        # transport failures fall back; a broken answer (invalid_response) does not
        assert (res.requests["status"] == "ok").all() == (kind == "unavailable")
        assert first["fallback_reason"] == ("unavailable" if kind == "unavailable" else None)
        assert retryable or first["http_status"] == 200
    else:
        assert (res.requests["served_model"] == model).all()
    assert len(res.requests) == 2


def test_a_stream_cut_after_its_first_token_is_billed_for_what_arrived(fake):
    host = http_host(fake, "cut-stream", policy=POLICY.replace(max_retries=0), stream=True)
    res = sy.run(sy.strategies.single("cut-stream"), ["q"], host=host)
    row = one(res, model="cut-stream")
    assert row["output_tokens"] == 8
    assert row["cost_usd"] == pytest.approx((row["input_tokens"] * 1.0 + 8 * 2.0) / 1e6)
    assert res.requests.iloc[0]["status"] == "failed"


def test_a_cut_stream_is_resent_only_when_the_policy_allows_it(fake):
    terminal = POLICY.replace(max_retries=1)
    host = http_host(fake, "cut-stream-once", "fast", policy=terminal, stream=True)
    chain = sy.strategies.fallback_chain(["cut-stream-once", "fast"])
    kept = sy.run(chain, ["q"], host=host)
    assert [(r["model"], r["error_kind"], r["retried"]) for r in rows(kept)] == [
        ("cut-stream-once", "invalid_response", False)
    ]
    host = http_host(
        fake,
        "cut-stream-once",
        "fast",
        policy=terminal.replace(resend_cut_streams=True),
        stream=True,
    )
    fake.reset()
    resent = sy.run(chain, ["q"], host=host)
    first, second = rows(resent)
    assert (first["error_kind"], first["retried"], first["output_tokens"]) == (
        "unavailable",
        True,
        8,
    )
    assert "after 8 tokens" in first["error_message"] and first["cost_usd"] > 0
    assert (second["model"], second["status"]) == ("cut-stream-once", "ok")
    fake.reset()
    no_retry = terminal.replace(max_retries=0, resend_cut_streams=True)
    moved = sy.run(
        chain, ["q"], host=http_host(fake, "cut-stream-once", "fast", policy=no_retry, stream=True)
    )
    assert [(r["model"], r["fallback_reason"]) for r in rows(moved)] == [
        ("cut-stream-once", "unavailable"),
        ("fast", None),
    ]


def test_a_stream_past_its_deadline_is_a_timeout_billed_for_what_arrived(fake):
    policy = POLICY.replace(max_retries=0, timeout_s=0.3)
    res = sy.run(
        sy.strategies.single("long"),
        ["q"],
        host=http_host(fake, "long", policy=policy, stream=True),
    )
    row = one(res, model="long")
    assert (row["status"], row["error_kind"]) == ("error", "timeout")
    assert 10 < row["output_tokens"] < 100  # 100 tokens/s for 0.3 s after a 10 ms ttft
    assert f"(after {row['output_tokens']} tokens)" in row["error_message"]
    assert row["cost_usd"] == pytest.approx((row["input_tokens"] + 2 * row["output_tokens"]) / 1e6)


def test_connection_refused_and_dns_failure_are_unavailable_with_readable_messages(fake):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    host = HttpHost(
        f"http://127.0.0.1:{closed_port}/v1",
        api_key=KEY,
        models={
            "refused": None,
            "nowhere": HttpModel(base_url="http://nonexistent.invalid/v1"),
            "fast": HttpModel(base_url=fake.base_url, api_key=KEY),
        },
        policy=POLICY.replace(max_retries=0),
    )
    chain = sy.strategies.fallback_chain(["nowhere", "refused", "fast"])
    res = sy.run(chain, ["q"], host=host)
    nowhere, refused, fast = rows(res)
    assert nowhere["error_kind"] == refused["error_kind"] == "unavailable"
    assert "DNS lookup failed for 'nonexistent.invalid'" in nowhere["error_message"]
    assert f"connection refused by 127.0.0.1:{closed_port}" in refused["error_message"]
    assert fast["status"] == "ok"


# -- decisions -------------------------------------------------------------------------------------


QUESTIONS = {
    "good_enough": sy.Boolean("Is the answer right?"),
    "topic": sy.Choice(["math", "code"]),
    "difficulty": sy.Score(["easy", "medium", "hard"]),
}


@pytest.mark.parametrize("decision_format", ["json_schema", "tool"])
def test_decisions_ask_for_a_strict_schema_and_parse_the_verdict(fake, decision_format):
    async def algorithm(request, driver):
        verdict = await driver.call_decision(
            sy.DecisionRequest(QUESTIONS, context={"q": request.prompt}), "judge"
        )
        driver.evidence(good=verdict.yes("good_enough"), topic=verdict.choice("topic"))
        driver.evidence(difficulty=verdict.score("difficulty"))
        return sy.route_to("fast", request)

    host = http_host(fake, "judge", "fast", decision_format=decision_format)
    res = sy.run(algorithm, ["q"], host=host)
    request = res.requests.iloc[0]
    assert (request["evidence_good"], request["evidence_topic"]) == (False, "math")
    assert request["evidence_difficulty"] == 2.0
    decision = one(res, kind="decision")
    assert decision["status"] == "ok" and decision["output_tokens"] > 0
    fake.wait_idle()
    body = fake.requests[0].body
    if decision_format == "json_schema":
        assert body["response_format"]["json_schema"]["strict"] is True
        schema = body["response_format"]["json_schema"]["schema"]
    else:
        assert body["tool_choice"]["function"]["name"] == "answer"
        schema = body["tools"][0]["function"]["parameters"]
    assert schema["required"] == list(QUESTIONS)
    assert schema["properties"]["topic"] == {"type": "string", "enum": ["math", "code"]}


def test_an_unparseable_verdict_is_a_clear_decision_error(fake):
    seen = []

    async def algorithm(request, driver):
        try:
            await driver.call_decision(sy.DecisionRequest(QUESTIONS, context="x"), "bad-verdict")
        except sy.InvalidResponseError as error:
            seen.append(str(error))
        return sy.route_to("fast", request)

    res = sy.run(algorithm, ["q"], host=http_host(fake, "bad-verdict", "fast"))
    assert res.requests.iloc[0]["status"] == "ok"
    (message,) = seen
    assert "unparseable verdict: not JSON" in message
    assert "Sure! The answer looks fine" in message


def test_the_cascade_strategy_escalates_on_a_real_judges_no(fake):
    cascade = sy.strategies.cascade("fast", "strong", judge="judge")
    res = sy.run(cascade, ["q"], host=http_host(fake, "fast", "strong", "judge"))
    assert res.requests.iloc[0]["served_model"] == "strong"
    assert res.requests.iloc[0]["evidence_verdict"] == "escalate"


# -- cancellation ------------------------------------------------------------------------------------


def test_a_lost_race_closes_the_losers_connection_on_the_server(fake):
    res = sy.run(sy.strategies.race(["fast", "slow"]), ["q"], host=http_host(fake, "fast", "slow"))
    slow = one(res, model="slow")
    assert (slow["status"], slow["cancel_cause"]) == ("cancelled", "lost_race")
    assert slow["end_s"] < 1.0  # cancelled when fast won, not when slow would have answered
    fake.wait_idle()
    served = {r.model: r for r in fake.requests}
    assert served["slow"].disconnected and not served["slow"].completed
    assert served["fast"].completed and not served["fast"].disconnected


def test_an_empty_stream_is_retried_not_served(fake):
    # llama.cpp's answer to a stream it interrupts: a role-only chunk, [DONE], a broken body
    host = http_host(fake, "empty-stream-once", stream=True)
    res = sy.run(sy.strategies.single("empty-stream-once"), ["q"], host=host)
    first, second = rows(res, model="empty-stream-once")
    assert (first["status"], first["error_kind"], first["retried"]) == (
        "error",
        "unavailable",
        True,
    )
    assert "before the first token" in first["error_message"]
    assert (first["output_tokens"], first["cost_usd"], first["ttft_s"]) == (0, 0.0, None)
    assert second["status"] == "ok" and second["output_tokens"] > 0
    assert res.requests.iloc[0]["status"] == "ok"


def test_unserved_streams_keep_the_time_of_their_first_token(fake):
    race = sy.run(
        sy.strategies.race(["strong", "long"]),
        ["q"],
        host=http_host(fake, "strong", "long", stream=True),
    )
    cancelled = one(race, model="long")
    assert cancelled["status"] == "cancelled" and cancelled["output_tokens"] > 0
    assert 0.005 <= cancelled["ttft_s"] < cancelled["end_s"] - cancelled["start_s"]
    policy = POLICY.replace(max_retries=0, timeout_s=0.3)
    late = sy.run(
        sy.strategies.single("long"),
        ["q"],
        host=http_host(fake, "long", policy=policy, stream=True),
    )
    timed_out = one(late, model="long")
    assert timed_out["error_kind"] == "timeout" and timed_out["output_tokens"] > 0
    assert 0.005 <= timed_out["ttft_s"] < 0.3
    cut = sy.run(
        sy.strategies.single("cut-stream"),
        ["q"],
        host=http_host(fake, "cut-stream", policy=policy.replace(timeout_s=2.0), stream=True),
    )
    assert not math.isnan(one(cut, model="cut-stream")["ttft_s"] or math.nan)


def test_a_cancelled_stream_is_billed_for_the_tokens_received(fake):
    res = sy.run(
        sy.strategies.race(["strong", "long"]),
        ["q"],
        host=http_host(fake, "strong", "long", stream=True),
    )
    long = one(res, model="long")
    assert (long["status"], long["cancel_cause"]) == ("cancelled", "lost_race")
    fake.wait_idle()
    served = {r.model: r for r in fake.requests}
    assert served["long"].disconnected
    assert 0 < long["output_tokens"] <= served["long"].tokens_sent
    assert long["cost_usd"] == pytest.approx(
        (long["input_tokens"] + 2 * long["output_tokens"]) / 1e6
    )


def test_sy_timeout_and_abandoned_calls_close_their_requests(fake):
    async def algorithm(request, driver):
        verdict = await sy.timeout(0.1, driver.call_model(request, ["hang"]))
        assert verdict is None
        asyncio.get_running_loop().create_task(driver.call_model(request, ["slow"]))
        await asyncio.sleep(0.05)
        return sy.route_to("fast", request)

    res = sy.run(algorithm, ["q"], host=http_host(fake, "hang", "slow", "fast"))
    assert one(res, model="hang")["cancel_cause"] == "timeout"
    assert one(res, model="slow")["cancel_cause"] == "abandoned"
    fake.wait_idle()
    served = {r.model: r for r in fake.requests}
    assert served["hang"].disconnected and served["slow"].disconnected


# -- no leaks ----------------------------------------------------------------------------------------


def test_the_key_never_leaks(fake, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "sk-wrong-but-still-secret-42"
    host = HttpHost(fake.base_url, api_key=wrong, models=["fast"], policy=POLICY)
    messages = []

    async def algorithm(request, driver):
        try:
            await driver.call_model(request, ["fast"])
        except sy.ModelError as error:
            messages.extend([str(error), repr(error)])
        return sy.route_to("fast", request)

    res = sy.run(algorithm, ["q"], host=host)
    assert one(res, phase="routing")["http_status"] == 401
    assert "Incorrect API key provided: ***" in one(res, phase="routing")["error_message"]
    good = sy.run(fast_only, ["q"], host=http_host(fake, "fast"))
    texts = [
        repr(host),
        repr(http_host(fake)),
        repr(vars(host)),
        repr(HttpModel(api_key=wrong)),
        caplog.text,
        *messages,
        res.attempts.to_csv(),
        res.requests.to_csv(),
        good.attempts.to_csv(),
    ]
    assert messages and caplog.text
    for text in texts:
        assert wrong not in text and KEY not in text


def test_the_hosts_key_is_not_sent_to_a_model_served_elsewhere(fake):
    host = HttpHost(
        "http://127.0.0.1:9/v1",
        api_key=KEY,
        models={"fast": HttpModel(base_url=fake.base_url)},
        policy=POLICY,
    )
    res = sy.run(fast_only, ["q"], host=host)
    assert one(res, model="fast")["http_status"] == 401
    fake.wait_idle()
    assert fake.requests[0].authorized is False


def test_the_key_can_come_from_an_environment_variable(fake, monkeypatch):
    monkeypatch.setenv("SYKIT_TEST_KEY", KEY + "\n")  # as `export KEY=$(cat file)` leaves it
    host = HttpHost(fake.base_url, api_key_env="SYKIT_TEST_KEY", models=["fast"], policy=POLICY)
    assert sy.run(fast_only, ["q"], host=host).requests.iloc[0]["status"] == "ok"
    monkeypatch.delenv("SYKIT_TEST_KEY")
    keyless = HttpHost(fake.base_url, api_key_env="SYKIT_TEST_KEY", models=["fast"], policy=POLICY)
    res = sy.run(fast_only, ["q"], host=keyless)
    assert one(res, model="fast")["http_status"] == 401


def test_no_tasks_threads_or_connections_are_left_after_a_run(fake):
    threads = set(threading.enumerate())
    host = http_host(fake, "fast", "slow", "long")

    async def main():
        before = asyncio.all_tasks()
        await sy.arun(sy.strategies.race(["fast", "slow", "long"]), ["a", "b", "c"], host=host)
        assert asyncio.all_tasks() == before
        # sy.run from inside a running loop runs in a worker thread and works the same
        res = sy.run(sy.strategies.race(["fast", "slow"]), ["d"], host=host)
        assert res.requests.iloc[0]["served_model"] == "fast"

    asyncio.run(main())
    fake.wait_idle(connections=True)
    assert fake.open_connections == 0
    assert set(threading.enumerate()) == threads


# -- one algorithm, two hosts --------------------------------------------------------------------------


def test_the_same_algorithm_object_runs_on_sim_and_http_hosts(fake):
    algorithm = sy.strategies.cascade("fast", "strong", judge="judge")
    profiles = {
        # the simulated judge sees fast's answers are wrong (quality 0), as the fake judge says
        "fast": PRICES.replace(
            latency=sy.Latency(ttft=0.02, tokens_per_s=1000), output_tokens=16, quality=0.0
        ),
        "strong": PRICES.replace(
            latency=sy.Latency(ttft=0.05, tokens_per_s=1000), output_tokens=32
        ),
        "judge": PRICES.replace(latency=sy.Latency(ttft=0.01, tokens_per_s=1000)),
    }
    sim = sy.run(algorithm, ["a", "b"], host=sy.SimHost(profiles, judge=sy.Judge(accuracy=1.0)))
    real = sy.run(algorithm, ["a", "b"], host=http_host(fake, *profiles))
    assert list(sim.attempts.columns) == list(real.attempts.columns)
    assert list(sim.requests.columns) == list(real.requests.columns)
    assert (real.requests["status"] == "ok").all() and (sim.requests["status"] == "ok").all()
    for frame in (sim.attempts, real.attempts):
        per_request = frame.sort_values(["request_id", "start_s"]).groupby("request_id")["model"]
        assert per_request.apply(list).tolist() == [["fast", "judge", "strong"]] * 2
    assert (real.attempts["cost_usd"] > 0).all()


# -- construction ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "phrase"),
    [
        (("ftp://x",), {"models": ["m"]}, ValueError, "base_url must be an http"),
        ((42,), {"models": ["m"]}, TypeError, "base_url must be a URL string"),
        (("http://u:p@x/v1",), {"models": ["m"]}, ValueError, "must not contain credentials"),
        ((), {"models": ["m"]}, ValueError, r"models\['m'\] has no base_url"),
        (("http://x/v1",), {"models": {}}, ValueError, "at least one model"),
        (("http://x/v1",), {"models": "m"}, TypeError, "not a str"),
        (("http://x/v1",), {"models": {"m": 3}}, TypeError, r"models\['m'\] must be"),
        (("http://x/v1",), {"models": ["m"], "policy": 1}, TypeError, "policy must be"),
        (
            ("http://x/v1",),
            {"models": ["m"], "decision_format": "xml"},
            ValueError,
            "decision_format",
        ),
        (("http://x/v1",), {"models": ["m"], "timeout_s": 0}, ValueError, "timeout_s must be > 0"),
        (("http://x/v1",), {"models": ["m"], "max_connections": 0}, ValueError, "max_connections"),
        (("http://x/v1",), {"models": ["m"], "api_key": "sk-a\nb"}, ValueError, "api_key contains"),
        (("http://x/v1",), {"models": ["m"], "api_key": 42}, TypeError, "api_key must be"),
    ],
)
def test_bad_arguments_name_themselves(args, kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        HttpHost(*args, **kwargs)


def test_host_basics():
    host = HttpHost(
        "http://127.0.0.1:9/v1/",
        models={"a": PRICES, "b": None},
        api_key=KEY,
        timeout_s=7,
        stream=True,
    )
    assert host.virtual is False and host.models == ("a", "b")
    assert host.policy.timeout_s == 7 and host.profiles["b"] == sy.ModelProfile()
    assert host.base_url == "http://127.0.0.1:9/v1"
    copy = host.replace(policy=POLICY)
    assert copy.policy is POLICY and copy.stream and copy.scrub(f"key={KEY}") == "key=***"


# -- streams read token by token (driver.stream_model) ----------------------------------------------


def test_a_stream_over_http_yields_each_token_as_it_arrives(fake):
    seen: list = []

    async def algorithm(request, driver):
        async with driver.stream_model(request, ["fast"]) as stream:
            async for chunk in stream:
                seen.append(chunk)
        return sy.answered(stream.model, stream.response)

    res = sy.run(algorithm, ["q"], host=http_host(fake, "fast"))
    row = one(res, model="fast")
    assert [c.index for c in seen] == list(range(16)) and row["output_tokens"] == 16
    assert all(c.text for c in seen)
    assert [c.at_s for c in seen] == sorted(c.at_s for c in seen)
    assert row["status"] == "ok" and 0.02 <= row["ttft_s"] < row["end_s"] - row["start_s"]
    assert seen[0].at_s == pytest.approx(row["start_s"] + row["ttft_s"], abs=0.01)
    served = res.requests.iloc[0]
    assert (served["status"], served["served_model"]) == ("ok", "fast")


def test_closing_a_stream_over_http_closes_its_connection_and_bills_what_came(fake):
    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["long"])
        async for chunk in stream:
            if chunk.index == 4:
                await stream.aclose()
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    res = sy.run(algorithm, ["q"], host=http_host(fake, "long", "fast"))
    row = one(res, model="long")
    assert (row["status"], row["cancel_cause"], row["output_tokens"]) == (
        "cancelled",
        "cancelled",
        5,
    )
    assert row["cost_usd"] == pytest.approx((row["input_tokens"] + 2 * 5) / 1e6)
    fake.wait_idle()
    served = {r.model: r for r in fake.requests}
    assert served["long"].disconnected and served["long"].tokens_sent < 100


def test_streaming_strategies_over_http_cancel_the_slower_stream(fake):
    for strategy in (
        sy.strategies.stream_race(["slow", "fast"]),
        sy.strategies.hedge_first_token("slow", after=0.1, backup="fast"),
    ):
        fake.reset()
        res = sy.run(strategy, ["q"], host=http_host(fake, "slow", "fast"))
        slow, fast = one(res, model="slow"), one(res, model="fast")
        assert (slow["status"], slow["cancel_cause"], slow["output_tokens"]) == (
            "cancelled",
            "lost_race",
            0,
        )
        assert (fast["status"], fast["served"]) == ("ok", True)
        fake.wait_idle()
        assert {r.model: r.disconnected for r in fake.requests}["slow"]


def test_a_stream_over_http_cut_after_its_first_token_raises_and_is_not_retried(fake):
    seen: list = []

    async def algorithm(request, driver):
        with pytest.raises(sy.InvalidResponseError, match="after 8 tokens"):
            async for chunk in driver.stream_model(request, ["cut-stream"]):
                seen.append(chunk.index)
        return sy.answered("fast", await driver.call_model(request, ["fast"]))

    res = sy.run(algorithm, ["q"], host=http_host(fake, "cut-stream", "fast"))
    assert seen == list(range(8))
    (row,) = rows(res, model="cut-stream")
    assert (row["error_kind"], row["output_tokens"], row["retried"]) == (
        "invalid_response",
        8,
        False,
    )
    assert not math.isnan(row["ttft_s"])


def test_an_empty_stream_is_retried_before_stream_model_yields_anything(fake):
    async def algorithm(request, driver):
        async with driver.stream_model(request, ["empty-stream-once"]) as stream:
            texts = [chunk.text async for chunk in stream]
        assert "".join(texts) == stream.response.text
        return sy.answered(stream.model, stream.response)

    res = sy.run(algorithm, ["q"], host=http_host(fake, "empty-stream-once"))
    assert [(r["status"], r["error_kind"]) for r in rows(res)] == [
        ("error", "unavailable"),
        ("ok", None),
    ]


def test_many_concurrent_streamed_calls_all_get_their_answers(fake):
    async def both(request, driver):
        _fast, strong = await asyncio.gather(
            driver.call_model(request, ["fast"]), driver.call_model(request, ["strong"])
        )
        return sy.answered("strong", strong)

    host = http_host(fake, "fast", "strong", policy=POLICY.replace(max_retries=0), stream=True)
    for _ in range(3):
        fake.reset()
        res = sy.run(both, [f"q{i}" for i in range(100)], host=host, concurrency=32)
        assert (res.attempts["status"] == "ok").all(), res.attempts["error_message"].dropna()
        fake.wait_idle()


def test_a_stream_left_open_over_http_is_abandoned_and_its_connection_closed(fake):
    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["long"])
        await stream.__anext__()
        await stream.__anext__()  # two tokens, then the stream is left open
        return sy.route_to("fast", request)

    res = sy.run(algorithm, ["q"], host=http_host(fake, "long", "fast"))
    row = one(res, model="long")
    assert (row["status"], row["cancel_cause"]) == ("cancelled", "abandoned")
    assert 2 <= row["output_tokens"] < 100 and not math.isnan(row["ttft_s"])
    fake.wait_idle()
    served = {r.model: r for r in fake.requests}
    assert served["long"].disconnected and not served["long"].completed
