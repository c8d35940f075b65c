"""Simulated faults: structural 400s, random per-attempt faults, scripted outages, rate limits."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import rows

import sykit as sy


def model(**kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(ttft=0.5, tokens_per_s=100),
        "output_tokens": 50,
        "reject_delay_s": 0.125,
    }
    settings.update(kwargs)
    return sy.ModelProfile(**settings)


async def to_m(request, driver):
    return sy.route_to("m", request)


def many(n, **kwargs):
    return [sy.Request(f"q{i}", id=i, **kwargs) for i in range(n)]


def no_retries(**kwargs):
    return sy.HostPolicy(max_retries=0, cooldown_s=0, **kwargs)


# -- structural: never random -------------------------------------------------------------------


def test_images_to_a_text_model_get_one_of_the_four_capability_phrases():
    h = sy.SimHost({"m": model()})
    res = sy.run(to_m, many(60, images=["https://example.com/a.png"]), host=h)
    errors = res.attempts
    assert set(errors["error_kind"]) == {"capability"}
    phrases = {
        "does not support image input": 0,
        "is not a multimodal model": 0,
        "image input is not supported": 0,
        "image_url is only supported by certain models": 0,
    }
    for message in errors["error_message"].astype(str):
        for phrase in phrases:
            if phrase in message.lower():
                phrases[phrase] += 1
    assert all(count > 0 for count in phrases.values()), phrases
    # structural: the same request always gets the same answer, whatever the seed
    again = sy.run(to_m, many(60, images=["https://example.com/a.png"]), host=h, seed=5)
    assert set(again.attempts["error_kind"]) == {"capability"}


def test_tools_to_a_model_without_tools_are_a_terminal_400():
    h = sy.SimHost({"m": model(tools=False), "n": model()})

    async def algorithm(request, driver):
        return sy.route_to("m", request, fallbacks=["n"])

    res = sy.run(algorithm, [sy.Request("x", tools=[{"name": "lookup"}])], host=h)
    assert len(res.attempts) == 1
    assert res.requests.iloc[0]["error_kind"] == "invalid_request"


# -- random, per attempt -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "kind", "status"),
    [
        ("rate_limit", "rate_limit", 429),
        ("unavailable", "unavailable", 503),
        ("policy", "policy", 400),
        ("invalid", "invalid_request", 400),
        ("reset", "unavailable", None),
        ("cut_stream", "unavailable", 502),
        ("malformed", "invalid_response", 200),
    ],
)
def test_each_random_fault_produces_its_error(fault, kind, status):
    h = sy.SimHost({"m": model(faults=sy.Faults(**{fault: 1.0}))}, policy=no_retries())
    row = rows(sy.run(to_m, many(1), host=h))[0]
    assert row["error_kind"] == kind
    if status is None:
        assert pd.isna(row["http_status"])  # a transport failure has no HTTP status
    else:
        assert row["http_status"] == status


def test_rate_limit_fault_sends_retry_after():
    faults = sy.Faults(rate_limit=1.0, retry_after_s=2.5)
    res = sy.run(
        to_m,
        many(1),
        host=sy.SimHost({"m": model(faults=faults)}, policy=sy.HostPolicy(max_retries=1)),
    )
    first, second = rows(res)
    assert second["start_s"] - first["end_s"] == 2.5


def test_cut_stream_fails_after_two_thirds_of_the_tokens():
    h = sy.SimHost({"m": model(faults=sy.Faults(cut_stream=1.0))}, policy=no_retries())
    row = rows(sy.run(to_m, many(1), host=h))[0]
    # 0.5 s to the first token, then tokens 2..33 of 50 at 100 tokens/s: the 33rd at 0.82 s
    assert row["end_s"] == pytest.approx(0.82)
    assert "33 of 50" in row["error_message"]
    # a broken answer is billed, like a cancelled one, for what it generated
    assert (row["input_tokens"], row["output_tokens"]) == (sy.Request("q0").input_tokens, 33)


def test_a_timeout_fault_hangs_until_the_client_deadline():
    h = sy.SimHost({"m": model(faults=sy.Faults(timeout=1.0))}, policy=no_retries(timeout_s=7.0))
    row = rows(sy.run(to_m, many(1), host=h))[0]
    assert (row["error_kind"], row["end_s"]) == ("timeout", 7.0)


def test_a_slow_answer_past_the_deadline_is_a_timeout():
    slow = model(latency=sy.Latency(ttft=30.0, tokens_per_s=100))
    h = sy.SimHost({"m": slow}, policy=no_retries(timeout_s=10.0))
    row = rows(sy.run(to_m, many(1), host=h))[0]
    assert (row["error_kind"], row["end_s"]) == ("timeout", 10.0)


def test_random_fault_rates_match_their_probabilities():
    faults = sy.Faults(rate_limit=0.1, unavailable=0.2, invalid=0.05)
    h = sy.SimHost({"m": model(faults=faults)}, policy=no_retries())
    attempts = sy.run(to_m, many(3000), host=h, concurrency=200).attempts
    shares = attempts["error_kind"].value_counts(normalize=False) / len(attempts)
    assert shares["rate_limit"] == pytest.approx(0.1, abs=0.02)
    assert shares["unavailable"] == pytest.approx(0.2, abs=0.025)
    assert shares["invalid_request"] == pytest.approx(0.05, abs=0.015)


def test_latency_spikes_multiply_latency():
    faults = sy.Faults(spike_p=0.25, spike_factor=10.0)
    h = sy.SimHost({"m": model(faults=faults)})
    latency = sy.run(to_m, many(400), host=h, concurrency=400).attempts["latency_s"]
    assert set(latency.round(9)) == {1.0, 10.0}
    assert (latency == 10.0).mean() == pytest.approx(0.25, abs=0.06)


# -- scripted --------------------------------------------------------------------------------------


def test_outage_windows_answer_503_inside_and_nothing_outside():
    h = sy.SimHost({"m": model(faults=sy.Faults(outages=[(10.0, 20.0)]))}, policy=no_retries())
    res = sy.run(to_m, many(4), host=h, arrivals=[5.0, 10.0, 19.5, 20.0])
    assert res.requests["status"].tolist() == ["ok", "failed", "failed", "ok"]
    assert rows(res, status="error")[0]["http_status"] == 503


def test_flapping_alternates_up_and_down():
    flap = sy.faults.Flapping(up_s=10.0, down_s=5.0, until_s=30.0)
    h = sy.SimHost({"m": model(faults=sy.Faults(flapping=flap))}, policy=no_retries())
    times = [1.0, 11.0, 14.0, 16.0, 26.0, 31.0]
    res = sy.run(to_m, many(len(times)), host=h, arrivals=times)
    assert res.requests["status"].tolist() == ["ok", "failed", "failed", "ok", "failed", "ok"]


def test_requests_per_minute_limit_answers_429_with_a_truthful_retry_after():
    limited = model(rate_limit=sy.faults.RateLimit(requests_per_min=2))
    h = sy.SimHost({"m": limited}, policy=sy.HostPolicy(max_retries=1, cooldown_s=0))
    res = sy.run(to_m, many(3), host=h, concurrency=3)
    third = rows(res, request_id=2)
    assert [r["status"] for r in third] == ["error", "ok"]
    # the bucket (2 per minute, full at t=0) holds one request again 30 s after the 429 was
    # decided; the client gets it 0.125 s later and waits the full Retry-After from then
    assert third[0]["http_status"] == 429
    assert third[1]["start_s"] == 30.125


def test_tokens_per_minute_limit_counts_input_and_requested_output():
    limited = model(rate_limit=sy.faults.RateLimit(tokens_per_min=10_000))
    h = sy.SimHost({"m": limited}, policy=no_retries())
    reqs = [sy.Request("x", id=i, input_tokens=3_000, max_output_tokens=1_000) for i in range(4)]
    res = sy.run(to_m, reqs, host=h, concurrency=4)
    assert res.requests["status"].tolist() == ["ok", "ok", "failed", "failed"]
    assert set(res.requests["error_kind"].dropna()) == {"rate_limit"}


def test_load_matters_for_rate_limits():
    limited = model(rate_limit=sy.faults.RateLimit(requests_per_min=60))
    h = sy.SimHost({"m": limited}, policy=no_retries())
    slow = sy.run(to_m, many(30), host=h, arrivals=[i * 1.0 for i in range(30)])
    burst = sy.run(to_m, many(120), host=h, arrivals=[i * 0.1 for i in range(120)])
    assert (slow.requests["status"] == "ok").all()
    assert (burst.requests["status"] == "failed").sum() > 0


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "error", "name"),
    [
        (lambda: sy.ModelProfile(price_in=-1), ValueError, "price_in"),
        (lambda: sy.ModelProfile(price_out=float("nan")), ValueError, "price_out"),
        (lambda: sy.ModelProfile(context_window=0), ValueError, "context_window"),
        (lambda: sy.ModelProfile(vision="yes"), TypeError, "vision"),
        (lambda: sy.ModelProfile(quality=1.5), ValueError, "quality"),
        (lambda: sy.ModelProfile(latency=0.5), TypeError, "latency"),
        (lambda: sy.Faults(rate_limit=1.5), ValueError, "rate_limit"),
        (lambda: sy.Faults(unavailable=-0.1), ValueError, "unavailable"),
        (lambda: sy.Faults(rate_limit=0.6, unavailable=0.6), ValueError, "≤ 1"),
        (lambda: sy.Faults(outages=[(20, 10)]), ValueError, "ends"),
        (lambda: sy.Faults(outages=[5]), TypeError, "outages"),
        (lambda: sy.Faults(fail_first=-1), ValueError, "fail_first"),
        (lambda: sy.Faults(fail_first_status=404), ValueError, "fail_first_status"),
        (lambda: sy.Latency(ttft=-1), ValueError, "ttft"),
        (lambda: sy.Latency(tokens_per_s="fast"), TypeError, "tokens_per_s"),
        (lambda: sy.dists.LogNormal(1.0, p95=0.5), ValueError, "p95"),
        (lambda: sy.faults.RateLimit(), ValueError, "RateLimit"),
        (lambda: sy.Judge(accuracy=2), ValueError, "accuracy"),
        (lambda: sy.HostPolicy(max_retries=11), ValueError, "max_retries"),
        (lambda: sy.HostPolicy(bill_cancelled="half"), ValueError, "bill_cancelled"),
        (lambda: sy.HostPolicy(fallback_reasons={"teapot"}), ValueError, "fallback_reasons"),
        (lambda: sy.faults.Flapping(up_s=0, down_s=1), ValueError, "up_s"),
        (lambda: sy.SimHost({}), ValueError, "models"),
        (lambda: sy.SimHost({"m": "cheap"}), TypeError, "models"),
        (lambda: sy.SimHost({"m": sy.ModelProfile()}, judge={"x": sy.Judge()}), ValueError, "'x'"),
        (lambda: sy.SimHost({"m": sy.ModelProfile()}, policy="strict"), TypeError, "policy"),
    ],
)
def test_invalid_configuration_names_the_field(build, error, name):
    with pytest.raises(error, match=name):
        build()


def test_replace_checks_again():
    with pytest.raises(ValueError, match="price_in"):
        sy.ModelProfile().replace(price_in=-5)
