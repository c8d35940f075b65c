"""One price for the same work: the billing rule on both hosts."""

from __future__ import annotations

import pytest
from helpers import constant_profile, rows

import sykit as sy
from sykit._hosts.http import HttpHost, HttpModel
from sykit.testing import FakeModel, FakeProvider

REQUEST = sy.Request("q", id=0, input_tokens=1000)
# first token at 1.0 s, then 50 tokens/s: 100 tokens, done at 2.98 s
SLOW = constant_profile(1.0, 100, 50, price_in=10.0, price_out=30.0)


def price(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * 10.0 + output_tokens * 30.0) / 1e6


def host(bill: str = "generated", **policy) -> sy.SimHost:
    settings = {"max_retries": 0, "cooldown_s": 0, "bill_cancelled": bill, **policy}
    return sy.SimHost({"m": SLOW}, policy=sy.HostPolicy(**settings))


@pytest.mark.parametrize(
    ("bill", "expected"),
    [("generated", (1000, 26)), ("full", (1000, 100)), ("none", (0, 0))],
)
def test_a_client_timeout_costs_what_a_cancellation_at_that_instant_costs(bill, expected):
    async def plain(request, driver):
        return sy.route_to("m", request)

    async def cancels_at_1_5(request, driver):
        await sy.timeout(1.5, driver.call_model(request, ["m"]))
        return sy.route_to("m", request)

    timed_out = rows(sy.run(plain, [REQUEST], host=host(bill, timeout_s=1.5)))[0]
    cancelled = rows(sy.run(cancels_at_1_5, [REQUEST], host=host(bill)))[0]
    assert (timed_out["status"], timed_out["error_kind"], timed_out["end_s"]) == (
        "error",
        "timeout",
        1.5,
    )
    assert (cancelled["status"], cancelled["cancel_cause"], cancelled["end_s"]) == (
        "cancelled",
        "timeout",
        1.5,
    )
    for row in (timed_out, cancelled):
        assert (row["input_tokens"], row["output_tokens"]) == expected
        assert row["cost_usd"] == pytest.approx(price(*expected))


@pytest.mark.parametrize(
    ("bill", "expected"), [("generated", (1000, 66)), ("full", (1000, 100)), ("none", (0, 0))]
)
def test_a_broken_answer_is_billed_per_policy_for_what_it_generated(bill, expected):
    cut = SLOW.replace(faults=sy.Faults(cut_stream=1.0))
    res = sy.run(
        sy.strategies.single("m"),
        [REQUEST],
        host=sy.SimHost({"m": cut}, policy=sy.HostPolicy(max_retries=0, bill_cancelled=bill)),
    )
    row = rows(res)[0]
    assert row["status"] == "error" and "66 of 100" in row["error_message"]
    assert (row["input_tokens"], row["output_tokens"]) == expected
    assert res.requests["cost_usd"].iloc[0] == pytest.approx(price(*expected))
    assert res.requests["wasted_usd"].iloc[0] == pytest.approx(price(*expected))


@pytest.mark.parametrize(
    "faults",
    [
        sy.Faults(rate_limit=1.0),
        sy.Faults(unavailable=1.0),
        sy.Faults(policy=1.0),
        sy.Faults(invalid=1.0),
        sy.Faults(reset=1.0),
        sy.Faults(timeout=1.0),  # a hang the provider never started on
        sy.Faults(malformed=1.0),  # the first chunk is garbage: no usable token
    ],
)
@pytest.mark.parametrize("bill", ["generated", "full"])
def test_an_attempt_rejected_before_generating_costs_nothing(faults, bill):
    res = sy.run(
        sy.strategies.single("m"),
        [REQUEST],
        host=sy.SimHost(
            {"m": SLOW.replace(faults=faults)},
            policy=sy.HostPolicy(max_retries=0, timeout_s=5.0, bill_cancelled=bill),
        ),
    )
    row = rows(res)[0]
    assert row["status"] == "error"
    assert (row["input_tokens"], row["output_tokens"], row["cost_usd"]) == (0, 0, 0.0)


def test_a_call_cancelled_while_the_provider_rejects_it_costs_nothing():
    images = sy.Request("look", id=0, images=["https://example.com/a.png"], input_tokens=1000)

    async def gives_up_early(request, driver):
        await sy.timeout(0.01, driver.call_model(request, ["m"]))  # the 400 comes at 0.125 s
        return sy.route_to("m", request)

    row = rows(sy.run(gives_up_early, [images], host=host("full")))[0]
    assert (row["status"], row["cost_usd"], row["input_tokens"]) == ("cancelled", 0.0, 0)


def test_a_request_costs_the_sum_of_its_attempts():
    flaky = SLOW.replace(faults=sy.Faults(cut_stream=0.5, rate_limit=0.3))
    res = sy.run(
        sy.strategies.race(["m", "n"]),
        [sy.Request(f"q{i}", id=i, input_tokens=500) for i in range(40)],
        host=sy.SimHost({"m": flaky, "n": SLOW}, policy=sy.HostPolicy(max_retries=1)),
    )
    per_request = res.attempts.groupby("request_id")["cost_usd"].sum()
    assert res.requests.set_index("request_id")["cost_usd"].to_dict() == pytest.approx(
        per_request.to_dict()
    )
    assert (res.attempts["cost_usd"] > 0).any()


# -- the same rule over HTTP -------------------------------------------------------------------


KEY = "sk-test-billing"
FAKE_MODELS = {
    "long": FakeModel(ttft_s=0.01, tokens_per_s=100, output_tokens=100),  # streams for 1 s
    "slow": FakeModel(ttft_s=0.01, tokens_per_s=1000, output_tokens=16),
}


@pytest.fixture(scope="module")
def fake():
    with FakeProvider(FAKE_MODELS, api_key=KEY) as provider:
        yield provider


@pytest.fixture(autouse=True)
def fresh(request):
    if "fake" not in request.fixturenames:
        yield
        return
    fake = request.getfixturevalue("fake")
    fake.reset()
    yield
    fake.wait_idle()


def http_host(fake, bill: str, **policy) -> HttpHost:
    return HttpHost(
        fake.base_url,
        api_key=KEY,
        models={
            name: HttpModel(profile=sy.ModelProfile(price_in=10.0, price_out=30.0), stream=True)
            for name in ("cut-stream", "long", "slow")
        },
        policy=sy.HostPolicy(max_retries=0, cooldown_s=0, bill_cancelled=bill, **policy),
    )


@pytest.mark.parametrize("bill", ["generated", "full", "none"])
def test_over_http_a_broken_stream_is_billed_per_policy(fake, bill):
    res = sy.run(sy.strategies.single("cut-stream"), ["q"], host=http_host(fake, bill))
    row = rows(res)[0]
    assert row["error_kind"] == "invalid_response" and "after" in row["error_message"]
    received = int(row["error_message"].split("after ")[1].split(" tokens")[0])
    assert received > 0
    # A real host cannot know the whole planned answer: "full" bills what arrived.
    input_tokens = sy.Request("q").input_tokens
    expected = (0, 0) if bill == "none" else (input_tokens, received)
    assert (row["input_tokens"], row["output_tokens"]) == expected
    assert row["cost_usd"] == pytest.approx(price(*expected))


@pytest.mark.parametrize("bill", ["generated", "none"])
def test_over_http_a_timeout_and_a_cancellation_follow_the_same_rule(fake, bill):
    async def cancels(request, driver):
        await sy.timeout(0.3, driver.call_model(request, ["long"]))
        return sy.answered("slow", await driver.call_model(request, ["slow"]))

    res = sy.run(cancels, ["q"], host=http_host(fake, bill, timeout_s=5.0))
    assert res.requests["status"].tolist() == ["ok"]
    cancelled = rows(res, model="long")[0]
    timed_out = rows(
        sy.run(sy.strategies.single("long"), ["q"], host=http_host(fake, bill, timeout_s=0.3)),
        model="long",
    )[0]
    assert cancelled["status"] == "cancelled" and timed_out["error_kind"] == "timeout"
    for row in (cancelled, timed_out):
        if bill == "none":
            assert (row["input_tokens"], row["output_tokens"], row["cost_usd"]) == (0, 0, 0.0)
        else:
            assert row["input_tokens"] > 0 and 10 < row["output_tokens"] < 100
            assert row["cost_usd"] == pytest.approx(
                price(row["input_tokens"], row["output_tokens"])
            )
