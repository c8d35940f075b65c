"""Streamed model calls on the simulated host: tokens in virtual time, early stops billed for what
was produced, errors after the first token ending the stream, and the streaming strategies."""

from __future__ import annotations

import pytest
from helpers import constant_profile, rows

import sykit as sy

# 0.5 s to the first token, 4 tokens at 8 tokens/s: tokens at 0.5, 0.625, 0.75, 0.875; done at 1.0
STEADY = constant_profile(0.5, 4, 8.0, price_in=0.0, price_out=1e6)
# 2.0 s to the first token, then the same pace: done at 2.5
LATE = constant_profile(2.0, 4, 8.0, price_in=0.0, price_out=1e6)


def host(**extra: sy.ModelProfile) -> sy.SimHost:
    return sy.SimHost({"steady": STEADY, "late": LATE, **extra}, policy=sy.HostPolicy(cooldown_s=0))


async def read_all(request, driver, model="steady", seen=None):
    async with driver.stream_model(request, [model]) as stream:
        async for chunk in stream:
            if seen is not None:
                seen.append((chunk.index, chunk.at_s, driver.now()))
    return sy.answered(stream.model, stream.response)


def test_tokens_arrive_at_the_first_token_then_at_the_decode_rate(engine):
    seen: list = []

    async def algorithm(request, driver):
        return await read_all(request, driver, seen=seen)

    res = sy.run(algorithm, ["q"], host=host(), engine=engine, strict=True)
    assert seen == [(0, 0.5, 0.5), (1, 0.625, 0.625), (2, 0.75, 0.75), (3, 0.875, 0.875)]
    (row,) = rows(res)
    assert (row["status"], row["start_s"], row["end_s"], row["ttft_s"]) == ("ok", 0.0, 1.0, 0.5)
    assert (row["output_tokens"], row["cost_usd"], row["served"]) == (4, 4.0, True)
    request = res.requests.iloc[0]
    assert (request["status"], request["end_s"], request["ttft_s"]) == ("ok", 1.0, 0.5)


def test_a_streamed_answer_is_recorded_as_the_same_call_would_be(engine):
    async def called(request, driver):
        return sy.answered("steady", await driver.call_model(request, ["steady"]))

    streamed = sy.run(read_all, ["a", "b"], host=host(), engine=engine).attempts
    whole = sy.run(called, ["a", "b"], host=host(), engine=engine).attempts
    assert streamed.drop(columns="strategy").equals(whole.drop(columns="strategy"))


def test_stopping_early_cancels_at_that_instant_and_bills_the_tokens_produced(engine):
    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["steady"])
        async for chunk in stream:
            if chunk.index == 1:
                await stream.aclose()
        assert stream.response is None and stream.tokens == 2
        return sy.answered("late", await driver.call_model(request, ["late"]))

    res = sy.run(algorithm, ["q"], host=host(), engine=engine, strict=True)
    first, second = rows(res)
    assert (first["status"], first["cancel_cause"], first["end_s"]) == (
        "cancelled",
        "cancelled",
        0.625,
    )
    assert (first["ttft_s"], first["output_tokens"], first["cost_usd"]) == (0.5, 2, 2.0)
    assert (second["start_s"], second["status"]) == (0.625, "ok")


def test_leaving_an_async_with_block_early_cancels_the_stream(engine):
    async def algorithm(request, driver):
        async with driver.stream_model(request, ["steady"]) as stream:
            async for _ in stream:
                break
        return sy.answered("late", await driver.call_model(request, ["late"]))

    res = sy.run(algorithm, ["q"], host=host(), engine=engine, strict=True)
    first = rows(res)[0]
    assert (first["status"], first["end_s"], first["output_tokens"]) == ("cancelled", 0.5, 1)


def test_a_stream_left_open_is_abandoned_when_the_request_ends_or_ends_as_planned(engine):
    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["steady"])
        await stream.__anext__()  # one token, then left open
        await driver.sleep(0.125 if request.id == 0 else 1.5)
        return sy.route_to("late", request)

    res = sy.run(algorithm, ["a", "b"], host=host(), engine=engine, strict=True)
    abandoned, finished = rows(res, model="steady")
    assert (abandoned["status"], abandoned["cancel_cause"], abandoned["end_s"]) == (
        "cancelled",
        "abandoned",
        0.625,
    )
    assert abandoned["output_tokens"] == 2
    # the second request read on after its answer had ended: it ended as planned, not served
    assert (finished["status"], finished["end_s"], finished["served"]) == ("ok", 1.0, False)


def test_a_stream_cancelled_by_its_task_records_the_cause(engine):
    async def algorithm(request, driver):
        async def read():
            return await read_all(request, driver)

        await sy.timeout(0.7, read())  # two tokens come (0.5, 0.625), then the timeout
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(), engine=engine, strict=True)
    first = rows(res)[0]
    assert (first["status"], first["cancel_cause"], first["end_s"]) == ("cancelled", "timeout", 0.7)
    assert (first["output_tokens"], first["cost_usd"], first["ttft_s"]) == (2, 2.0, 0.5)


def test_failures_before_the_first_token_are_retried_and_fall_back_like_a_call(engine):
    flaky = STEADY.replace(faults=sy.Faults(fail_first=1, fail_first_status=503))
    policy = sy.HostPolicy(cooldown_s=0, routing_fallback=True, max_retries=1)
    sim = sy.SimHost({"flaky": flaky, "steady": STEADY}, policy=policy)

    async def algorithm(request, driver):
        return await read_all(request, driver, model="flaky")

    res = sy.run(algorithm, ["q"], host=sim, engine=engine, strict=True)
    assert [(r["status"], r["http_status"], r["retried"]) for r in rows(res)] == [
        ("error", 503, True),
        ("ok", 200, False),
    ]
    assert res.requests.iloc[0]["status"] == "ok"


def test_an_error_after_the_first_token_ends_the_stream_and_is_not_retried(engine):
    cut = constant_profile(
        0.5, 6, 8.0, price_in=0.0, price_out=1e6, faults=sy.Faults(cut_stream=1.0)
    )
    seen: list = []

    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["cut"])
        with pytest.raises(sy.UnavailableError, match="ended early after 4 of 6 tokens"):
            async for chunk in stream:
                seen.append(chunk.at_s)
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(cut=cut), engine=engine, strict=True)
    assert seen == [0.5, 0.625, 0.75, 0.875]
    first = rows(res, model="cut")
    assert len(first) == 1  # no retry: the caller had seen part of an answer
    assert (first[0]["status"], first[0]["end_s"], first[0]["output_tokens"]) == (
        "error",
        0.875,
        4,
    )
    assert first[0]["ttft_s"] == 0.5 and first[0]["cost_usd"] == 4.0


def test_a_deadline_during_a_stream_is_a_timeout_after_the_tokens_that_came(engine):
    sim = sy.SimHost({"steady": STEADY}, policy=sy.HostPolicy(timeout_s=0.7, max_retries=0))
    seen: list = []

    async def algorithm(request, driver):
        with pytest.raises(sy.ModelTimeout):
            async for chunk in driver.stream_model(request, ["steady"]):
                seen.append(chunk.at_s)
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=sim, engine=engine)
    assert seen == [0.5, 0.625]
    first = rows(res)[0]
    assert (first["error_kind"], first["end_s"], first["output_tokens"]) == ("timeout", 0.7, 2)


def test_stream_race_serves_the_first_token_and_cancels_the_rest_at_that_instant(engine):
    res = sy.run(sy.strategies.stream_race(["late", "steady"]), ["q"], host=host(), engine=engine)
    late, steady = rows(res, model="late")[0], rows(res, model="steady")[0]
    assert (late["status"], late["cancel_cause"], late["end_s"], late["cost_usd"]) == (
        "cancelled",
        "lost_race",
        0.5,
        0.0,
    )
    assert (steady["status"], steady["served"], steady["race_id"]) == ("ok", True, late["race_id"])
    assert res.requests.iloc[0][["served_model", "end_s"]].tolist() == ["steady", 1.0]


def test_hedge_first_token_opens_a_copy_only_when_the_first_token_is_late(engine):
    hedged = sy.strategies.hedge_first_token("late", after=0.25, backup="steady")
    res = sy.run(hedged, ["q"], host=host(), engine=engine)
    late, steady = rows(res, model="late")[0], rows(res, model="steady")[0]
    assert steady["start_s"] == 0.25
    assert (late["status"], late["cancel_cause"], late["end_s"]) == ("cancelled", "lost_race", 0.75)
    assert res.requests.iloc[0][["served_model", "ttft_s", "end_s"]].tolist() == [
        "steady",
        0.75,
        1.25,
    ]
    quick = sy.run(
        sy.strategies.hedge_first_token("steady", after=1.0), ["q"], host=host(), engine=engine
    )
    assert len(quick.attempts) == 1  # the first token came before the hedge delay


def test_stream_model_checks_its_arguments_and_its_request():
    leaked = []

    async def algorithm(request, driver):
        with pytest.raises(sy.UnknownModel):
            driver.stream_model(request, ["nope"])
        with pytest.raises(sy.ArgumentTypeError):
            driver.stream_model("not a request", ["steady"])
        leaked.append(driver.stream_model(request, ["steady"]))
        assert repr(leaked[0]) == "<sykit.ModelStream not sent>"
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(), strict=True)
    assert len(res.attempts) == 1  # a stream never iterated sends nothing

    async def late_use(request, driver):
        with pytest.raises(sy.RequestClosed):
            await leaked[0].__anext__()
        return sy.route_to("steady", request)

    sy.run(late_use, ["q"], host=host(), strict=True)


def test_the_same_seed_gives_the_same_streamed_frames_with_random_latencies(engine):
    noisy = sy.ModelProfile(
        latency=sy.Latency(
            ttft=sy.dists.LogNormal(0.5, sigma=0.8), tokens_per_s=sy.dists.LogNormal(40, sigma=0.3)
        ),
        output_tokens=sy.dists.LogNormal(30, sigma=0.5),
        faults=sy.Faults(unavailable=0.1, cut_stream=0.1),
    )
    sim = sy.SimHost({"a": noisy, "b": noisy}, policy=sy.HostPolicy(routing_fallback=True))
    requests = [sy.Request("q", id=i) for i in range(40)]
    strategies = {
        "race": sy.strategies.stream_race(["a", "b"]),
        "hedge": sy.strategies.hedge_first_token("a", after=0.6, backup="b"),
    }
    one = sy.compare(strategies, requests, host=sim, seeds=[3], engine=engine)
    two = sy.compare(strategies, requests, host=sim, seeds=[3], engine=engine)
    assert one.attempts.equals(two.attempts) and one.requests.equals(two.requests)
    attempts = one.attempts
    ended = attempts[attempts["status"] != "skipped"]
    assert (ended["end_s"] >= ended["start_s"]).all()
    per_request = attempts.groupby(["strategy", "request_id"], observed=True)["cost_usd"].sum()
    totals = one.requests.set_index(["strategy", "request_id"])["cost_usd"]
    assert (per_request - totals.loc[per_request.index]).abs().max() < 1e-12


def test_a_stall_pauses_the_stream_half_way_and_delays_the_whole_answer(engine):
    stalling = constant_profile(
        0.5, 4, 8.0, price_in=0.0, price_out=1e6, faults=sy.Faults(stall_p=1.0, stall_s=2.0)
    )
    seen: list = []

    async def algorithm(request, driver):
        return await read_all(request, driver, model="stalling", seen=seen)

    res = sy.run(algorithm, ["q"], host=host(stalling=stalling), engine=engine, strict=True)
    assert [at for _, at, _ in seen] == [0.5, 0.625, 2.75, 2.875]
    (row,) = rows(res)
    assert (row["status"], row["end_s"], row["output_tokens"]) == ("ok", 3.0, 4)

    async def called(request, driver):
        return sy.answered("stalling", await driver.call_model(request, ["stalling"]))

    whole = sy.run(called, ["q"], host=host(stalling=stalling), engine=engine)
    assert rows(whole)[0]["end_s"] == 3.0


def test_an_inter_token_timeout_abandons_a_stalled_stream_billed_for_what_came(engine):
    stalling = constant_profile(
        0.5, 4, 8.0, price_in=0.0, price_out=1e6, faults=sy.Faults(stall_p=1.0, stall_s=30.0)
    )

    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["stalling"])
        while True:
            try:
                chunk = await sy.timeout(1.0, stream.__anext__(), default=None)
            except StopAsyncIteration:
                return sy.answered(stream.model, stream.response)
            if chunk is None:  # no token for a second: give up on this stream
                return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(stalling=stalling), engine=engine, strict=True)
    stalled, steady = rows(res, model="stalling")[0], rows(res, model="steady")[0]
    assert (stalled["status"], stalled["cancel_cause"], stalled["end_s"]) == (
        "cancelled",
        "timeout",
        1.625,
    )
    assert (stalled["output_tokens"], stalled["cost_usd"]) == (2, 2.0)
    assert (steady["start_s"], steady["served"]) == (1.625, True)


def test_the_first_token_comes_later_for_a_longer_prompt(engine):
    reader = sy.ModelProfile(
        latency=sy.Latency(ttft=0.25, tokens_per_s=8.0, prefill_tokens_per_s=4000.0),
        output_tokens=4,
    )
    seen: list = []

    async def algorithm(request, driver):
        async for chunk in driver.stream_model(request, ["reader"]):
            if chunk.index == 0:
                seen.append((request.id, chunk.at_s))
        return sy.route_to("reader", request)

    prompts = [
        sy.Request("short", id=0, input_tokens=1000),
        sy.Request("long", id=1, input_tokens=8000),
    ]
    res = sy.run(algorithm, prompts, host=host(reader=reader), engine=engine, concurrency=1)
    short, long = seen
    assert short == (0, 0.5)  # 0.25 + 1,000 / 4,000
    assert long[1] - rows(res, request_id=1)[0]["start_s"] == 2.25  # 0.25 + 8,000 / 4,000
    with pytest.raises(sy.ArgumentError, match="prefill_tokens_per_s"):
        sy.Latency(prefill_tokens_per_s=0)


@pytest.mark.parametrize(
    ("fault", "error", "words"),
    [
        ("cut_stream", sy.UnavailableError, "ended early after 3 of 6 tokens"),
        ("malformed", sy.InvalidResponseError, "malformed stream chunk.*after 3 tokens"),
    ],
)
def test_a_stream_breaks_after_the_tokens_the_fault_says(engine, fault, error, words):
    breaking = constant_profile(
        0.5,
        6,
        8.0,
        price_in=0.0,
        price_out=1e6,
        faults=sy.Faults(**{fault: 1.0}, break_after_tokens=3),
    )
    seen: list = []

    async def algorithm(request, driver):
        with pytest.raises(error, match=words):
            async for chunk in driver.stream_model(request, ["breaking"]):
                seen.append(chunk.at_s)
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(breaking=breaking), engine=engine, strict=True)
    assert seen == [0.5, 0.625, 0.75]
    (row,) = rows(res, model="breaking")
    assert (row["end_s"], row["output_tokens"], row["cost_usd"]) == (0.75, 3, 3.0)


def test_a_malformed_first_chunk_is_still_the_default(engine):
    garbled = constant_profile(0.5, 6, 8.0, faults=sy.Faults(malformed=1.0))

    async def algorithm(request, driver):
        with pytest.raises(sy.InvalidResponseError):
            async for _ in driver.stream_model(request, ["garbled"]):
                pytest.fail("no token comes before a malformed first chunk")
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(garbled=garbled), engine=engine, strict=True)
    (row,) = rows(res, model="garbled")
    assert (row["end_s"], row["output_tokens"], row["cost_usd"]) == (0.5, 0, 0.0)
    with pytest.raises(sy.ArgumentError, match="break_after_tokens"):
        sy.Faults(break_after_tokens=-1)


def test_a_stream_has_one_reader_at_a_time(engine):
    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["steady"])
        _, outcome = await sy.first(stream.__anext__(), stream.__anext__())
        assert isinstance(outcome, RuntimeError) and "already being read" in str(outcome)
        return sy.route_to("steady", request)

    res = sy.run(algorithm, ["q"], host=host(), engine=engine, strict=True)
    assert len(rows(res, phase="routing")) == 1  # one attempt, not two
