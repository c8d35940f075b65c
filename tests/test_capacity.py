"""sy.Capacity: a simulated model's slots, slowdown and queue, in exact virtual time.

Most cases use one model that takes exactly 1 s alone (no time to first token, 100 tokens at
100 tokens/s) with the default slowdown, processor sharing of one sequence's rate: a sequence
that starts with ``n`` sequences in service (itself included) runs at 1/n and takes n seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas.testing as pdt
import pytest
from helpers import load_script

import sykit as sy
from tests.helpers import numbered_requests as requests
from tests.helpers import run_both


def one_second(capacity: sy.Capacity | None = None, **kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(ttft=0.0, tokens_per_s=100),
        "output_tokens": 100,
        "reject_delay_s": 0.05,
        "price_in": 1.0,
        "price_out": 2.0,
        "capacity": capacity,
    }
    settings.update(kwargs)
    return sy.ModelProfile(**settings)


def column(result: sy.Result, name: str, table: str = "attempts") -> list:
    frame = result.attempts if table == "attempts" else result.requests
    return [round(float(x), 6) for x in frame[name]]


# -- the declaration ------------------------------------------------------------------------------


def test_the_default_slowdown_is_processor_sharing_and_a_number_shares_k_sequences_rate():
    assert sy.Capacity(slots=4).factors() == (1.0, 0.5, 1 / 3, 0.25)
    assert sy.Capacity(slots=6, slowdown=4).factors() == (1.0, 1.0, 1.0, 1.0, 0.8, 4 / 6)


def test_a_curve_of_points_is_interpolated_and_held_flat_beyond_its_ends():
    curve = sy.Capacity(slots=10, slowdown={2: 0.9, 6: 0.5})  # a dict, or a list of pairs
    assert curve.slowdown == ((2, 0.9), (6, 0.5))
    assert curve.factor(1) == 0.9
    assert curve.factor(4) == pytest.approx(0.7)
    assert curve.factor(10) == 0.5
    assert sy.Capacity(slots=2, slowdown=[(8, 0.5), (1, 1.0)]).slowdown == ((1, 1.0), (8, 0.5))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"slots": 0}, sy.ArgumentError, "slots must be an int ≥ 1"),
        ({"slots": 2.0}, sy.ArgumentTypeError, "slots must be an int"),
        ({"slots": 2, "slowdown": 0.5}, sy.ArgumentError, "slowdown must be a number ≥ 1"),
        ({"slots": 2, "slowdown": "fast"}, sy.ArgumentTypeError, "slowdown must be a number"),
        ({"slots": 2, "slowdown": []}, sy.ArgumentError, "got no points"),
        ({"slots": 2, "slowdown": [(1, 1.0, 2)]}, sy.ArgumentTypeError, r"slowdown\[0\]"),
        ({"slots": 2, "slowdown": [(0, 1.0)]}, sy.ArgumentError, r"slowdown\[0\] n"),
        ({"slots": 2, "slowdown": [(1, 0.0)]}, sy.ArgumentError, r"slowdown\[0\] factor"),
        ({"slots": 2, "slowdown": [(2, 1.0), (2, 0.5)]}, sy.ArgumentError, "two factors"),
        ({"slots": 2, "queue_limit": -1}, sy.ArgumentError, "queue_limit"),
        ({"slots": 2, "queue_timeout_s": 0}, sy.ArgumentError, "queue_timeout_s"),
        ({"slots": 2, "reject_status": 500}, sy.ArgumentError, "503 .* or 429"),
    ],
)
def test_a_bad_capacity_is_refused_naming_the_field(kwargs, error, match):
    with pytest.raises(error, match=match):
        sy.Capacity(**kwargs)


def test_a_profile_takes_only_a_capacity():
    with pytest.raises(sy.ArgumentTypeError, match=r"capacity must be a sy.Capacity"):
        sy.ModelProfile(capacity=8)
    profile = sy.ModelProfile().replace(capacity=sy.Capacity(slots=3))
    assert profile.capacity == sy.Capacity(slots=3)


# -- the records ----------------------------------------------------------------------------------


def test_queue_s_appears_only_when_a_model_declares_a_capacity():
    plain = sy.run(sy.strategies.single("m"), requests(2), host=sy.SimHost({"m": one_second()}))
    assert "queue_s" not in plain.attempts
    mixed = sy.SimHost({"m": one_second(), "c": one_second(sy.Capacity(slots=1))})
    result = run_both(sy.strategies.fallback_chain(["c"]), requests(2), host=mixed)
    columns = list(result.attempts.columns)
    assert columns[columns.index("ttft_s") + 1] == "queue_s"
    assert column(result, "queue_s") == [0.0, 1.0]  # the second waited for the only slot
    # an attempt at a model without a capacity has no queue: NaN
    other = run_both(sy.strategies.single("m"), requests(1), host=mixed)
    assert math.isnan(other.attempts["queue_s"].iloc[0])


def test_without_a_capacity_the_records_are_those_of_a_model_served_alone():
    """Every call of a burst takes its 1 s: a model without a capacity is never busy."""
    result = run_both(
        sy.strategies.single("m"), requests(4), host=sy.SimHost({"m": one_second()}), concurrency=4
    )
    assert column(result, "latency_s") == [1.0] * 4


# -- load ------------------------------------------------------------------------------------------


def test_p50_latency_rises_with_offered_load():
    """Two slots shared by processor sharing; five requests, arriving 2 s, 0.5 s and 0 s apart.

    2 s apart, each finds the model idle: 1 s each. 0.5 s apart: r1 starts beside r0 (2 s), r2
    beside r1 (r0 has left; 2 s), r3 finds both slots busy until r1 leaves at 2.5 (queued 1 s,
    then 2 s beside r2), r4 waits for r2 at 3 (queued 1 s, 2 s). All at once: r0 alone 1 s, r1
    beside it 2 s, and r2, r3, r4 each wait for the next slot to free (at 1, 2 and 3 s), then
    run 2 s beside another.
    """
    host = sy.SimHost({"m": one_second(sy.Capacity(slots=2))})
    latencies, queues, p50 = {}, {}, {}
    for gap in (2.0, 0.5, 0.0):
        arrivals = [gap * i for i in range(5)]
        result = run_both(sy.strategies.single("m"), requests(5), host=host, arrivals=arrivals)
        latencies[gap] = column(result, "latency_s")
        queues[gap] = column(result, "queue_s")
        p50[gap] = result.requests["latency_s"].median()
    assert latencies == {
        2.0: [1.0, 1.0, 1.0, 1.0, 1.0],
        0.5: [1.0, 2.0, 2.0, 3.0, 3.0],
        0.0: [1.0, 2.0, 3.0, 4.0, 5.0],
    }
    assert queues == {
        2.0: [0.0] * 5,
        0.5: [0.0, 0.0, 0.0, 1.0, 1.0],
        0.0: [0.0, 0.0, 1.0, 2.0, 3.0],
    }
    assert p50[2.0] < p50[0.5] < p50[0.0]
    assert (p50[2.0], p50[0.5], p50[0.0]) == (1.0, 2.0, 3.0)


def test_the_rate_factor_slows_prefill_and_decode_and_the_queue_comes_first():
    """A measured curve: 0.5 of the rate with two in service. Prefill 500 tokens at 1000/s
    (0.5 s alone), then 100 tokens at 100/s (1 s alone)."""
    capacity = sy.Capacity(slots=2, slowdown=[(1, 1.0), (2, 0.5)])
    latency = sy.Latency(ttft=0.0, tokens_per_s=100, prefill_tokens_per_s=1000)
    profile = one_second(capacity, latency=latency)
    host = sy.SimHost({"m": profile})
    items = [sy.Request(f"q{i}", id=i, input_tokens=500) for i in range(3)]
    result = run_both(sy.strategies.single("m"), items, host=host, arrivals=[0.0, 0.0, 0.0])
    # r0 alone: 0.5 + 1; r1 beside it at half rate: 1 + 2; r2 waits for r0 (1.5 s), then beside r1
    assert column(result, "ttft_s") == [0.5, 1.0, 2.5]
    assert column(result, "latency_s") == [1.5, 3.0, 4.5]
    assert column(result, "queue_s") == [0.0, 0.0, 1.5]


def test_decision_calls_take_slots_too():
    host = sy.SimHost({"m": one_second(sy.Capacity(slots=1))}, judge=sy.Judge(output_tokens=100))

    async def judged(request, driver):
        await driver.call_decision(sy.DecisionRequest({"ok": sy.Boolean()}), "m")
        return sy.route_to("m", request)

    result = run_both(judged, requests(1), host=host)
    # the answer-phase call starts when the decision has left the slot: no wait
    assert column(result, "start_s") == [0.0, 1.0]
    assert column(result, "queue_s") == [0.0, 0.0]
    both = run_both(judged, requests(2), host=host, arrivals=[0.0, 0.5])
    # r1's decision waits for r0's until 1.0; r0's answer then queues behind it until 2.0, and
    # r1's answer (sent at 2.0) behind that until 3.0
    assert column(both, "start_s") == [0.0, 1.0, 0.5, 2.0]
    assert column(both, "queue_s") == [0.0, 1.0, 0.5, 1.0]
    assert column(both, "end_s") == [1.0, 3.0, 2.0, 4.0]


# -- the queue ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "kind"), [(503, "unavailable"), (429, "rate_limit")])
def test_a_call_beyond_the_queue_limit_is_rejected(status, kind):
    capacity = sy.Capacity(slots=1, queue_limit=1, reject_status=status)
    host = sy.SimHost({"m": one_second(capacity)}, policy=sy.HostPolicy(max_retries=0))
    result = run_both(sy.strategies.single("m"), requests(3), host=host, arrivals=[0.0] * 3)
    attempts = result.attempts
    assert attempts["status"].astype(str).tolist() == ["ok", "ok", "error"]
    assert attempts["error_kind"].astype(str).tolist()[2] == kind
    assert int(attempts["http_status"].iloc[2]) == status
    assert "overloaded" in attempts["error_message"].iloc[2]
    assert column(result, "end_s") == [1.0, 2.0, 0.05]  # rejected after the reject delay
    assert column(result, "cost_usd")[2] == 0.0  # nothing generated, nothing billed
    assert math.isnan(attempts["queue_s"].iloc[2])  # it never entered the queue
    # no queue at all: the second is turned away too
    none = sy.SimHost(
        {"m": one_second(sy.Capacity(slots=1, queue_limit=0))},
        policy=sy.HostPolicy(max_retries=0),
    )
    alone = run_both(sy.strategies.single("m"), requests(2), host=none, arrivals=[0.0, 0.0])
    assert alone.attempts["status"].astype(str).tolist() == ["ok", "error"]


def test_a_rejected_call_retries_after_its_backoff_and_then_gets_a_slot():
    capacity = sy.Capacity(slots=1, queue_limit=0)
    policy = sy.HostPolicy(max_retries=1, backoff_initial_s=1.0)
    host = sy.SimHost({"m": one_second(capacity)}, policy=policy)
    result = run_both(sy.strategies.single("m"), requests(2), host=host, arrivals=[0.0, 0.0])
    # r1: rejected at 0.05, retried 1 s later when r0 has left (at 1.0)
    assert column(result, "start_s") == [0.0, 0.0, 1.05]
    assert column(result, "end_s") == [1.0, 0.05, 2.05]


def test_a_call_queued_longer_than_the_queue_timeout_fails_as_a_timeout():
    capacity = sy.Capacity(slots=1, queue_timeout_s=1.5)
    host = sy.SimHost({"m": one_second(capacity)}, policy=sy.HostPolicy(max_retries=0))
    result = run_both(sy.strategies.single("m"), requests(3), host=host, arrivals=[0.0] * 3)
    attempts = result.attempts
    # r1 waits 1 s (within the limit); r2 would wait 2 s: it gives up after 1.5 s
    assert attempts["status"].astype(str).tolist() == ["ok", "ok", "error"]
    assert attempts["error_kind"].astype(str).tolist()[2] == "timeout"
    assert "queue timeout" in attempts["error_message"].iloc[2]
    assert column(result, "end_s") == [1.0, 2.0, 1.5]
    assert column(result, "queue_s") == [0.0, 1.0, 1.5]
    assert column(result, "output_tokens") == [100, 100, 0]
    assert column(result, "cost_usd")[2] == 0.0
    # it never held the slot: a call arriving at 1.6 starts when r1 leaves, at 2.0
    later = run_both(
        sy.strategies.single("m"), requests(4), host=host, arrivals=[0.0, 0.0, 0.0, 1.6]
    )
    assert column(later, "start_s")[3] == 1.6 and column(later, "queue_s")[3] == 0.4


def test_a_call_still_queued_at_the_clients_deadline_times_out_there():
    host = sy.SimHost(
        {"m": one_second(sy.Capacity(slots=1))},
        policy=sy.HostPolicy(max_retries=0, timeout_s=1.25),
    )
    result = run_both(sy.strategies.single("m"), requests(3), host=host, arrivals=[0.0] * 3)
    # r1 starts at 1.0 but cannot end by 1.25: stopped at its deadline, billed what it made (its
    # first token at 1.0, then 25 more); r2 would start when r1 stops, at its own deadline: it
    # times out there, never served
    assert column(result, "end_s") == [1.0, 1.25, 1.25]
    assert column(result, "queue_s") == [0.0, 1.0, 1.25]
    assert column(result, "output_tokens") == [100, 26, 0]
    assert "the deadline" in result.attempts["error_message"].iloc[2]


# -- cancellations --------------------------------------------------------------------------------


def test_a_cancelled_call_frees_its_slot_for_calls_arriving_after_it():
    """Request 0 gives up on "m" after 0.25 s (sy.timeout) and is answered elsewhere."""
    host = sy.SimHost({"m": one_second(sy.Capacity(slots=1)), "other": one_second()})

    async def impatient_first(request, driver):
        if request.id == 0:
            await sy.timeout(0.25, driver.call_model(request, ["m"]))
            return sy.route_to("other", request)
        return sy.answered("m", await driver.call_model(request, ["m"]))

    def at_m(result: sy.Result) -> list[list[float]]:
        rows = result.attempts[result.attempts["model"] == "m"]
        return [
            [round(float(x), 6) for x in r] for r in rows[["start_s", "end_s", "queue_s"]].values
        ]

    after = run_both(impatient_first, requests(2), host=host, arrivals=[0.0, 0.5])
    assert at_m(after) == [[0.0, 0.25, 0.0], [0.5, 1.5, 0.0]]
    # at the very instant of the cancellation the slot is still taken, on both engines alike:
    # the call arriving then waits for the end the cancelled call was given (1.0)
    same = run_both(impatient_first, requests(2), host=host, arrivals=[0.0, 0.25])
    assert at_m(same) == [[0.0, 0.25, 0.0], [0.25, 2.0, 0.75]]


def test_a_call_cancelled_while_queued_leaves_the_queue():
    host = sy.SimHost({"m": one_second(sy.Capacity(slots=1))})

    async def impatient_second(request, driver):
        if request.id == 1:
            await sy.timeout(0.5, driver.call_model(request, ["m"]))  # queued until 1.0: gives up
            await driver.sleep(0.1)
        return sy.answered("m", await driver.call_model(request, ["m"]))

    result = run_both(impatient_second, requests(3), host=host, arrivals=[0.0, 0.0, 0.75])
    frame = result.attempts.set_index(["request_id", "call_id"])

    def row(request: int, call: int) -> list[float]:
        values = frame.loc[(request, call), ["start_s", "end_s", "queue_s"]]
        return [round(float(x), 6) for x in values]

    # r1 left the queue at 0.5 and queues again at 0.6 behind nobody: it starts when r0 leaves
    # (1.0); r2 (0.75) queues behind r1's second call (until 2.0), not behind r1's first place
    assert frame.loc[(1, 0), "status"] == "cancelled"
    assert row(1, 0) == [0.0, 0.5, 0.5]
    assert row(1, 1) == [0.6, 2.0, 0.4]
    assert row(2, 0) == [0.75, 3.0, 1.25]
    # given up while queued: the server never worked on it, so nothing is billed
    given_up = frame.loc[(1, 0)]
    assert (given_up["input_tokens"], given_up["cost_usd"]) == (0, 0.0)
    assert frame.loc[(1, 1), "cost_usd"] > 0


# -- what a hedge costs ---------------------------------------------------------------------------


def test_near_saturation_a_hedge_raises_p50_latency():
    """Processor sharing over two slots; requests at 0, 0.6 and 1.2 s; a hedge after 0.5 s.

    Alone, r0 takes 1 s, r1 (beside r0) and r2 (beside r1) 2 s each: p50 = 2 s. Hedged, r0's copy
    (0.5 s, beside r0: to end at 2.5) holds the second slot when r1 arrives: r1 queues until r0
    leaves at 1.0 (its copy is cancelled then), runs beside its own copy, and ends at 3.0; r2 then
    finds both slots held by r1's calls and waits until 3.0: 3.8 s. p50 = 2.4 s.
    """
    host = sy.SimHost({"m": one_second(sy.Capacity(slots=2))})
    arrivals = [0.0, 0.6, 1.2]
    alone = run_both(sy.strategies.single("m"), requests(3), host=host, arrivals=arrivals)
    hedged = run_both(
        sy.strategies.hedge("m", after=0.5), requests(3), host=host, arrivals=arrivals
    )
    assert column(alone, "latency_s", "requests") == [1.0, 2.0, 2.0]
    assert column(hedged, "latency_s", "requests") == [1.0, 2.4, 3.8]
    assert column(hedged, "queue_s") == [0.0, 0.0, 0.4, 0.0, 1.8, 1.4]
    assert hedged.attempts["cancel_cause"].astype(str).tolist()[1::2] == ["lost_race"] * 3
    assert hedged.requests["latency_s"].median() > alone.requests["latency_s"].median()


def test_under_poisson_load_near_saturation_a_hedge_raises_p50_but_not_when_idle():
    """An M/D/1 processor-sharing server (1 s of work a request, one sequence's rate shared):
    at utilisation 0.7 the hedge's copies add work the server lacks the capacity for and every
    request waits longer; at 0.05 the server is idle and nothing changes for the median."""
    host = sy.SimHost(
        {"m": one_second(sy.Capacity(slots=16))},
        policy=sy.HostPolicy(max_retries=0, timeout_s=600),
    )
    items = requests(300)
    p50 = {}
    for rho in (0.05, 0.7):
        for name, strategy in (
            ("single", sy.strategies.single("m")),
            ("hedge", sy.strategies.hedge("m", after=1.5)),
        ):
            result = sy.run(strategy, items, host=host, arrivals=sy.traffic.Poisson(rho), seed=3)
            assert (result.requests["status"] == "ok").all()
            p50[rho, name] = result.requests["latency_s"].median()
    assert p50[0.05, "single"] == p50[0.05, "hedge"] == 1.0
    assert p50[0.7, "single"] > 1.0  # requests overlap and share the rate
    assert p50[0.7, "hedge"] >= 1.5 * p50[0.7, "single"]


def test_at_low_load_a_hedge_cuts_p99_latency():
    """One request in ten is slowed tenfold (10 s), on a processor-sharing server that is idle
    between requests (20 s apart). A copy sent after 2 s runs beside the slow original at half
    rate (2 s) and answers at 4 s: the tail falls from 10 s to 4 s; the others never hedge."""
    profile = one_second(sy.Capacity(slots=4), faults=sy.Faults(spike_p=0.1, spike_factor=10))
    host = sy.SimHost({"m": profile})
    arrivals = [20.0 * i for i in range(30)]
    alone = run_both(sy.strategies.single("m"), requests(30), host=host, arrivals=arrivals)
    hedged = run_both(
        sy.strategies.hedge("m", after=2.0), requests(30), host=host, arrivals=arrivals
    )
    slow = column(alone, "latency_s", "requests")
    assert sorted(set(slow)) == [1.0, 10.0] and slow.count(10.0) >= 2
    expected = [4.0 if latency == 10.0 else 1.0 for latency in slow]
    assert column(hedged, "latency_s", "requests") == expected
    assert alone.requests["latency_s"].quantile(0.99) == 10.0
    assert hedged.requests["latency_s"].quantile(0.99) == 4.0


# -- engines ----------------------------------------------------------------------------------------


def jittery(capacity: sy.Capacity, **kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(
            ttft=sy.dists.LogNormal(0.4, sigma=0.5),
            tokens_per_s=sy.dists.Uniform(40, 120),
            prefill_tokens_per_s=4_000,
        ),
        "output_tokens": sy.dists.LogNormal(80, p95=300),
        "reject_delay_s": sy.dists.Uniform(0.02, 0.2),
        "price_in": 1.0,
        "price_out": 3.0,
        "capacity": capacity,
    }
    settings.update(kwargs)
    return sy.ModelProfile(**settings)


ENGINE_HOST = sy.SimHost(
    {
        "shared": jittery(sy.Capacity(slots=3, queue_limit=4, queue_timeout_s=2.5)),
        "batched": jittery(
            sy.Capacity(
                slots=4, slowdown=[(1, 1.0), (2, 0.8), (4, 0.4)], queue_limit=1, reject_status=429
            ),
            faults=sy.Faults(cut_stream=0.05, timeout=0.03, unavailable=0.05, spike_p=0.1),
        ),
        "free": jittery(None),
    },
    policy=sy.HostPolicy(timeout_s=8.0, max_retries=1),
)


async def hedged(request, driver):
    try:
        response = await sy.hedge(
            lambda: driver.call_model(request, ["shared", "batched"]), after=0.6, copies=3
        )
    except sy.ModelError:
        return sy.route_to("free", request)
    return sy.answered(response.model, response)


async def raced(request, driver):
    _, result = await sy.first(
        driver.call_model(request, ["batched"]), driver.call_model(request, ["shared"])
    )
    if isinstance(result, BaseException):
        return sy.route_to("free", request)
    return sy.answered(result.model, result)


async def judged_with_timeout(request, driver):
    question = sy.DecisionRequest({"easy": sy.Boolean(oracle=request.id % 2 == 0)})
    verdict = await sy.timeout(0.7, driver.call_decision(question, "shared"))
    model = "batched" if verdict is not None and verdict.yes("easy") else "shared"
    return sy.route_to(model, request, fallbacks=["free"])


@pytest.mark.parametrize(
    "algorithm",
    [
        hedged,
        raced,
        judged_with_timeout,
        sy.strategies.stream_race(["shared", "batched"]),
        sy.strategies.fallback_chain(["shared", "batched", "free"]),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_both_engines_give_the_same_frames_with_capacities(algorithm, seed):
    items = [sy.Request(f"q{i}", id=i, input_tokens=200 + 40 * i) for i in range(40)]
    result = run_both(
        algorithm, items, host=ENGINE_HOST, arrivals=sy.traffic.Poisson(6.0), seed=seed
    )
    attempts = result.attempts
    assert (attempts["queue_s"] > 0).any()  # the load was felt
    at_free = attempts["model"] == "free"
    assert attempts.loc[at_free, "queue_s"].isna().all()


def test_the_engine_comparison_meets_rejections_queue_timeouts_and_cancellations():
    """The frames compared above are not trivially equal: they hold every way a queue ends."""
    items = [sy.Request(f"q{i}", id=i, input_tokens=200 + 40 * i) for i in range(40)]
    seen = [
        run_both(
            algorithm, items, host=ENGINE_HOST, arrivals=sy.traffic.Poisson(6.0), seed=seed
        ).attempts
        for algorithm in (hedged, raced)
        for seed in (0, 1)
    ]
    messages = " ".join(str(m) for frame in seen for m in frame["error_message"].dropna())
    assert "overloaded" in messages and "queue timeout" in messages
    statuses = {s for frame in seen for s in frame["http_status"].dropna().astype(int)}
    assert {429, 503} <= statuses
    assert any((frame["status"] == "cancelled").any() for frame in seen)


def test_auto_runs_a_host_with_a_capacity_on_the_kernel_and_bulk_refuses_it():
    host = sy.SimHost({"m": one_second(sy.Capacity(slots=1))})
    auto = sy.run(sy.strategies.single("m"), requests(3), host=host, concurrency=3)
    assert auto.engine == "kernel"
    assert column(auto, "latency_s") == [1.0, 2.0, 3.0]  # the calls shared one slot
    with pytest.raises(sy.ArgumentError, match="capacity"):
        sy.run(sy.strategies.single("m"), requests(3), host=host, engine="bulk")


def test_a_spilling_run_reads_back_queue_s(tmp_path, monkeypatch):
    from sykit._run import spill as _spill

    monkeypatch.setattr(_spill, "CHUNK_ROWS", 4)
    items = [sy.Request(f"q{i}", id=i, input_tokens=200) for i in range(30)]
    kwargs = {"host": ENGINE_HOST, "arrivals": sy.traffic.Poisson(6.0), "seed": 2}
    plain = sy.run(hedged, items, **kwargs)
    spilled = sy.run(hedged, items, spill=tmp_path / "s", **kwargs)
    pdt.assert_frame_equal(plain.attempts, spilled.attempts)
    pdt.assert_frame_equal(plain.requests, spilled.requests)
    assert (spilled.attempts["queue_s"] > 0).any()


def test_the_capacity_page_runs_as_written_and_quotes_what_it_gives(capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "capacity.md").read_text()
    namespace: dict = {}
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        exec(compile(block, "docs/capacity.md", "exec"), namespace)
    printed = dict(line.split()[:2] for line in capsys.readouterr().out.splitlines())
    assert float(printed["single"]) == 3.0 and "p50 is 3 s" in text
    assert round(float(printed["hedge"])) == 94 and "p50 is 94 s" in text
    assert namespace["curve"].factor(16) == 29.0 / 62.0


def _processor_sharing_benchmark():
    from pathlib import Path

    return load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "processor_sharing.py")


def test_the_exact_processor_sharing_reference_re_times_every_call():
    """Two calls of 1 s of work: together from 0 both end at 2; the second arriving at 0.5
    slows the first, which ends at 1.5, and then runs alone to 2.0."""
    exact_ps = _processor_sharing_benchmark().exact_ps
    assert exact_ps(np.array([0.0, 0.0]), np.array([1.0, 1.0])).tolist() == [2.0, 2.0]
    assert exact_ps(np.array([0.0, 0.5]), np.array([1.0, 1.0])).tolist() == [1.5, 1.5]
    assert exact_ps(np.array([0.5, 0.0]), np.array([1.0, 1.0])).tolist() == [1.5, 1.5]
    assert exact_ps(np.array([0.0, 5.0]), np.array([1.0, 1.0])).tolist() == [1.0, 1.0]


@pytest.mark.slow
def test_the_rate_at_service_start_stays_within_the_documented_error_of_processor_sharing():
    """docs/capacity.md gives the approximation's error by utilisation: the mean within about
    2 %, the p99 low by up to about a sixth at high load. The exact reference meets the
    M/M/1-PS mean, 1 / (1 − ρ)."""
    bench = _processor_sharing_benchmark()
    for rho in (0.5, 0.8):
        at_start, _ = bench.measure(rho, 8000, seed=1)
        mine_mean, exact_mean, mine_p99, exact_p99, _ = at_start
        assert exact_mean == pytest.approx(1 / (1 - rho), rel=0.1)
        assert mine_mean == pytest.approx(exact_mean, rel=0.04)
        assert -0.2 <= mine_p99 / exact_p99 - 1 <= 0.08
