"""A load-aware hedge: ``driver.in_flight(model)`` and ``sy.strategies.hedge(..., max_in_flight=)``.

The simulated model takes exactly 1 s alone (100 tokens at 100 tokens/s). With a capacity of two
slots and the default slowdown (processor sharing of one sequence's rate), a call that starts
service beside another runs at half rate; a third call queues for a slot.
"""

from __future__ import annotations

import pandas.testing as pdt
import pytest

import sykit as sy
from sykit.testing import FakeModel, FakeProvider
from tests.helpers import numbered_requests as requests
from tests.helpers import run_both


def one_second(capacity: sy.Capacity | None = None, **kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(ttft=0.0, tokens_per_s=100),
        "output_tokens": 100,
        "price_in": 1.0,
        "price_out": 2.0,
        "capacity": capacity,
    }
    settings.update(kwargs)
    return sy.ModelProfile(**settings)


def two_slots(**kwargs) -> sy.SimHost:
    return sy.SimHost({"m": one_second(sy.Capacity(slots=2)), **kwargs})


def timeline(result: sy.Result) -> list[tuple]:
    """(request, start, end, status) of every attempt, in start order."""
    frame = result.attempts.sort_values(["start_s", "request_id"], kind="stable")
    return [
        (int(r.request_id), round(r.start_s, 6), round(r.end_s, 6), str(r.status))
        for r in frame.itertuples()
    ]


def column(result: sy.Result, name: str) -> list:
    return result.requests[name].tolist()


# -- driver.in_flight -----------------------------------------------------------------------------


async def count_on_arrival(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    driver.evidence(in_flight=driver.in_flight("m"), other=driver.in_flight("other"))
    return sy.route_to("m", request)


def test_in_flight_counts_the_runs_calls_started_before_now_and_not_ended_before_it():
    """Calls of 1 s arriving at 0, 0.5, 1, 1 and 2.5 s. At 1 s the call that ends then still
    counts and the call that starts then (the other arrival at 1 s) does not yet: the same on
    both engines, whichever of two simultaneous events runs first. A model without a capacity
    has calls in flight too: the count is the router's, not the server's."""
    host = sy.SimHost({"m": one_second(), "other": one_second()})
    result = run_both(count_on_arrival, requests(5), host=host, arrivals=[0, 0.5, 1, 1, 2.5])
    assert column(result, "evidence_in_flight") == [0, 1, 2, 2, 0]
    assert column(result, "evidence_other") == [0] * 5
    assert not result.requests["reads_truth"].any()  # a count a deployed router can keep


async def own_and_decision_calls(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    question = sy.DecisionRequest({"easy": sy.Boolean("Is it easy?")})
    judge, answer = sy.start(
        driver.call_decision(question, "judge"), driver.call_model(request, ["m"])
    )
    await driver.sleep(0.25)
    driver.evidence(m=driver.in_flight("m"), judge=driver.in_flight("judge"))
    await judge
    driver.evidence(judge_after=driver.in_flight("judge"))
    return sy.answered("m", await answer)


def test_in_flight_counts_this_requests_own_calls_and_decision_calls():
    """The decision (0.5 s to its first token, 5 tokens at 100/s) answers at 0.55 s."""
    judge = sy.ModelProfile(latency=sy.Latency(ttft=0.5, tokens_per_s=100))
    host = sy.SimHost({"m": one_second(), "judge": judge})
    result = run_both(own_and_decision_calls, requests(1), host=host)
    assert column(result, "evidence_m") == [1]
    assert column(result, "evidence_judge") == [1]
    assert column(result, "evidence_judge_after") == [1]  # it ends at this very instant: counted
    assert column(result, "latency_s") == [1.0]


async def bad_model(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    driver.in_flight(["m"])  # type: ignore[arg-type]  # the wrong type, on purpose
    return sy.route_to("m", request)


async def unknown_model(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
    driver.in_flight("nope")
    return sy.route_to("m", request)


@pytest.mark.parametrize(
    ("algorithm", "error", "match"),
    [
        (bad_model, sy.ArgumentTypeError, "model must be one model name"),
        (unknown_model, sy.UnknownModel, "nope"),
    ],
)
def test_in_flight_refuses_anything_but_one_known_model(algorithm, error, match):
    host = sy.SimHost({"m": one_second()})
    with pytest.raises(error, match=match):
        sy.run(algorithm, requests(1), host=host, progress=False, strict=True)


def test_in_flight_counts_calls_to_a_real_endpoint_too():
    """On an HttpHost the count is the same bookkeeping: this request's call, still answering."""

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        (call,) = sy.start(driver.call_model(request, ["slow"]))
        await driver.sleep(0.05)
        driver.evidence(during=driver.in_flight("slow"))
        response = await call
        driver.evidence(after=driver.in_flight("slow"))
        return sy.answered("slow", response)

    with FakeProvider({"slow": FakeModel(ttft_s=0.3, output_tokens=4)}, api_key="k") as fake:
        host = sy.HttpHost(fake.base_url, api_key="k", models=["slow"])
        result = sy.run(algorithm, requests(1), host=host, progress=False)
    assert column(result, "status") == ["ok"]
    assert column(result, "evidence_during") == [1]
    assert column(result, "evidence_after") == [0]


# -- the hedge held back while the model is busy --------------------------------------------------


def test_a_lone_request_sends_its_copy_when_the_model_has_room():
    """One call in flight at 0.5 s: a copy makes two, within max_in_flight=2, so it is sent; it
    shares the rate with the original, which answers at 1 s (its rate was set when it started)."""
    result = run_both(
        sy.strategies.hedge("m", after=0.5, max_in_flight=2), requests(1), host=two_slots()
    )
    assert timeline(result) == [(0, 0.0, 1.0, "ok"), (0, 0.5, 1.0, "cancelled")]
    assert column(result, "evidence_hedges_held_back") == [0]


def test_a_burst_holds_the_copies_back_until_the_queue_is_short():
    """Three requests at 0 s on two slots: r0 runs alone at full rate (1 s), r1 beside it at half
    rate (until 2 s), r2 queues for r0's slot and runs at half rate from 1 s to 3 s.

    With max_in_flight=3 every copy due at 0.5 s would make four calls: none is sent. At 1 s, r1
    and r2 still see three (r0 ends at that instant and still counts): held back again. At 1.5 s
    two are in flight: both copies go, and each queues behind the calls holding the two slots,
    so neither is served before its original answers. The answers come as without a hedge."""
    single = run_both(sy.strategies.single("m"), requests(3), host=two_slots(), arrivals=[0] * 3)
    gated = run_both(
        sy.strategies.hedge("m", after=0.5, max_in_flight=3),
        requests(3),
        host=two_slots(),
        arrivals=[0] * 3,
    )
    assert column(single, "latency_s") == column(gated, "latency_s") == [1.0, 2.0, 3.0]
    assert timeline(gated) == [
        (0, 0.0, 1.0, "ok"),
        (1, 0.0, 2.0, "ok"),
        (2, 0.0, 3.0, "ok"),
        (1, 1.5, 2.0, "cancelled"),
        (2, 1.5, 3.0, "cancelled"),
    ]
    assert column(gated, "evidence_hedges_held_back") == [1, 2, 2]
    # the frame's order: r0's call, r1's call and copy, r2's call and copy
    assert gated.attempts["queue_s"].round(6).tolist() == [0.0, 0.0, 0.5, 1.0, 1.5]


def test_with_room_for_the_copies_the_burst_sends_them_all_at_once():
    """The same burst with max_in_flight=4: each request sees three calls in flight at 0.5 s, so
    each sends its copy then, as the hedge without a limit does: the frames are the same."""
    gated = run_both(
        sy.strategies.hedge("m", after=0.5, max_in_flight=4),
        requests(3),
        host=two_slots(),
        arrivals=[0] * 3,
    )
    plain = run_both(
        sy.strategies.hedge("m", after=0.5), requests(3), host=two_slots(), arrivals=[0] * 3
    )
    assert [row[1] for row in timeline(gated)] == [0.0, 0.0, 0.0, 0.5, 0.5, 0.5]
    assert column(gated, "evidence_hedges_held_back") == [0, 0, 0]
    columns = [c for c in plain.attempts.columns if c != "strategy"]
    pdt.assert_frame_equal(gated.attempts[columns], plain.attempts[columns])
    assert "evidence_hedges_held_back" not in plain.requests


def test_a_copy_held_back_goes_out_once_the_other_requests_leave():
    """Two slots, requests at 0, 0.6 and 1.2 s, a copy after 0.5 s while at most two calls are
    in flight. r0 and r1 send theirs (one and then two in flight with the copy); r2's is due at
    1.7, 2.2 and 2.7 s with r1's two calls and its own in flight, and goes at 3.2 s, after r1
    has answered at 3 s."""
    result = run_both(
        sy.strategies.hedge("m", after=0.5, max_in_flight=2),
        requests(3),
        host=two_slots(),
        arrivals=[0.0, 0.6, 1.2],
    )
    copies = [row for row in timeline(result) if row[3] == "cancelled"]
    assert copies == [
        (0, 0.5, 1.0, "cancelled"),
        (1, 1.1, 3.0, "cancelled"),
        (2, 3.2, 5.0, "cancelled"),
    ]
    assert column(result, "evidence_hedges_held_back") == [0, 0, 3]


def test_a_quantile_hedge_takes_the_limit_too():
    """hedge(after="p95", max_in_flight=3) before its warm-up: the copy is due after
    initial_after (0.5 s), and the burst holds it back as a fixed delay would."""
    strategy = sy.strategies.hedge("m", after="p95", initial_after=0.5, max_in_flight=3)
    assert strategy.name == "hedge(m,p95,≤3 in flight)"
    result = run_both(strategy, requests(3), host=two_slots(), arrivals=[0] * 3)
    assert column(result, "evidence_hedges_held_back") == [1, 2, 2]
    assert column(result, "evidence_hedge_after_s") == [0.5] * 3


def test_a_copy_that_replaces_a_failed_call_is_sent_whatever_the_load():
    """The first call fails at once (a 500): the next copy replaces it rather than adding load,
    so it goes at once even though only_if would refuse every hedge."""
    host = sy.SimHost(
        {"m": one_second(faults=sy.Faults(fail_first=1, fail_first_status=500), reject_delay_s=0)},
        policy=sy.HostPolicy(max_retries=0),
    )
    asked = []

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        def never() -> bool:
            asked.append(driver.now())
            return False

        call = lambda: driver.call_model(request, ["m"])  # noqa: E731
        return sy.answered("m", await sy.hedge(call, after=0.5, only_if=never))

    result = run_both(algorithm, requests(1), host=host)
    assert [row[1:] for row in timeline(result)] == [(0.0, 0.0, "error"), (0.0, 1.0, "ok")]
    assert asked == []


def test_the_hedge_names_its_limit_and_refuses_a_limit_below_two():
    assert sy.strategies.hedge("m", after=1.5, max_in_flight=8).__name__ == (
        "hedge(m,1.5s,≤8 in flight)"
    )
    with pytest.raises(sy.ArgumentError, match="max_in_flight must be an int ≥ 2"):
        sy.strategies.hedge("m", after=1.5, max_in_flight=1)
    with pytest.raises(sy.ArgumentTypeError, match="max_in_flight"):
        sy.strategies.hedge("m", after=1.5, max_in_flight=2.5)  # type: ignore[arg-type]  # on purpose


def test_sy_hedge_refuses_an_only_if_that_is_not_a_function():
    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        call = lambda: driver.call_model(request, ["m"])  # noqa: E731
        return sy.answered("m", await sy.hedge(call, after=0.5, only_if=True))  # type: ignore[arg-type]  # on purpose

    with pytest.raises(sy.ArgumentTypeError, match="only_if must be a function"):
        sy.run(algorithm, requests(1), host=two_slots(), progress=False, strict=True)


def test_under_load_the_limited_hedge_keeps_the_latency_of_no_hedge_and_the_plain_one_does_not():
    """The M/D/1 processor-sharing server of docs/capacity.md at utilisation 0.7: the plain hedge
    after 1.5 s floods it; the same hedge sending a copy only to a request that has the model to
    itself (max_in_flight=2) sends a tenth as many copies and leaves p50 and p99 as they are."""
    host = sy.SimHost(
        {"m": one_second(sy.Capacity(slots=16))},
        policy=sy.HostPolicy(max_retries=0, timeout_s=600),
    )
    items = requests(300)
    strategies = {
        "single": sy.strategies.single("m"),
        "hedge": sy.strategies.hedge("m", after=1.5),
        "limited": sy.strategies.hedge("m", after=1.5, max_in_flight=2),
    }
    cmp = sy.compare(
        strategies, items, host=host, arrivals=sy.traffic.Poisson(0.7), seeds=[3], progress=False
    )
    latency = cmp.requests.groupby("strategy", observed=True)["latency_s"]
    p50, p99 = latency.median(), latency.quantile(0.99)
    copies = cmp.attempts.groupby("strategy", observed=True).size() - len(items)
    assert p50["hedge"] > 10 * p50["single"]
    assert (p50["limited"], p99["limited"]) == (p50["single"], p99["single"]) == (3.0, 7.0)
    assert 0 < copies["limited"] < copies["hedge"] / 10
