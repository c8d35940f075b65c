"""sy.Capacity(sharing="exact"): processor sharing proper, re-timed at every arrival and departure.

Most cases use the model of tests/test_capacity.py that takes exactly 1 s alone (no time to first
token, 100 tokens at 100 tokens/s) with the default slowdown: ``n`` calls in service each run at
1/n, and every change of ``n`` re-times all of them.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pandas.testing as pdt
import pytest

import sykit as sy
from tests.helpers import numbered_requests as requests
from tests.helpers import run_both
from tests.test_capacity import ENGINE_HOST, hedged, judged_with_timeout, one_second, raced

EXACT = {"sharing": "exact"}


def at_m(result: sy.Result, *columns: str) -> list[list[float]]:
    rows = result.attempts[result.attempts["model"] == "m"]
    names = list(columns or ("start_s", "end_s", "queue_s"))
    return [[round(float(x), 6) for x in row] for row in rows[names].values]


def host_of(capacity: sy.Capacity, **policy) -> sy.SimHost:
    settings = {"max_retries": 0, "timeout_s": 600.0} | policy
    return sy.SimHost(
        {"m": one_second(capacity), "other": one_second()}, policy=sy.HostPolicy(**settings)
    )


single = sy.strategies.single("m")


# -- re-timing ------------------------------------------------------------------------------------


def test_every_arrival_slows_the_calls_in_service_and_every_departure_speeds_them_up():
    """0–0.5: r0 alone; 0.5–0.7: two at 1/2; then three at 1/3 until r0 ends (0.4 left × 3 =
    1.9); then two until r1 ends (0.5 left × 2 = 2.9); r2 runs its last 0.1 alone (3.0)."""
    result = run_both(
        single, requests(3), host=host_of(sy.Capacity(slots=16, **EXACT)), arrivals=[0, 0.5, 0.7]
    )
    assert at_m(result) == [[0.0, 1.9, 0.0], [0.5, 2.9, 0.0], [0.7, 3.0, 0.0]]


def test_at_start_sharing_keeps_each_rate_from_its_start_on_the_same_arrivals():
    """The default rule on the same three calls: r0 keeps its full rate (1.0), r1 starts beside
    it at 1/2 (2.5), r2 at 1/2 beside r1 (2.7): the rule exact sharing replaces."""
    result = run_both(
        single, requests(3), host=host_of(sy.Capacity(slots=16)), arrivals=[0, 0.5, 0.7]
    )
    assert at_m(result) == [[0.0, 1.0, 0.0], [0.5, 2.5, 0.0], [0.7, 3.7, 0.0]]


def test_a_departure_gives_its_rate_to_the_calls_left():
    """r0 has 2 s of work, r1 1 s, both from 0: at 1/2 each r1 ends at 2.0 with r0 half done;
    r0 then runs alone and ends at 3.0."""
    host = sy.SimHost(
        {"m": one_second(sy.Capacity(slots=4, **EXACT), output_tokens=200)},
        policy=sy.HostPolicy(max_retries=0, timeout_s=600),
    )
    items = [sy.Request("long", id=0), sy.Request("short", id=1, max_output_tokens=100)]
    result = run_both(single, items, host=host, arrivals=[0, 0])
    assert at_m(result, "end_s") == [[3.0], [2.0]]


def test_a_slowdown_of_k_keeps_full_rate_up_to_k_calls():
    """slowdown=2: two calls run at full rate, a third brings each to 2/3."""
    result = run_both(
        single,
        requests(3),
        host=host_of(sy.Capacity(slots=8, slowdown=2, **EXACT)),
        arrivals=[0, 0, 0.5],
    )
    # 0–0.5 full rate (0.5 left each); then three at 2/3: r0 and r1 need 0.75 s more, while r2
    # does 0.5 of its work; it runs the rest alone at full rate
    assert at_m(result, "end_s") == [[1.25], [1.25], [1.75]]


def test_a_call_alone_takes_what_it_takes_under_either_rule():
    """With nothing else in service the two rules agree to the row: time to first token,
    prefill, a stall, a spike, a malformed chunk and the prompt cache included. (A cut stream
    whose whole answer would outlast the client's deadline is the one difference: see the next
    test.)"""
    profile = sy.ModelProfile(
        latency=sy.Latency(
            ttft=sy.dists.LogNormal(0.4, p95=1.2), tokens_per_s=80, prefill_tokens_per_s=3000
        ),
        output_tokens=sy.dists.Exponential(120),
        faults=sy.Faults(malformed=0.2, unavailable=0.1, stall_p=0.3, stall_s=1.5, spike_p=0.3),
        cache=sy.profiles.PromptCache(read_price=0.1, min_tokens=100),
    )
    items = [
        sy.Request(f"q{i}", id=i, input_tokens=400 + 50 * i, metadata={"session_id": i % 3})
        for i in range(60)
    ]
    arrivals = [100.0 * i for i in range(60)]  # far apart: one call in service at a time
    frames = []
    for sharing in ("at_start", "exact"):
        capacity = sy.Capacity(slots=4, sharing=sharing)
        host = sy.SimHost({"m": profile.replace(capacity=capacity)})
        frames.append(run_both(single, items, host=host, arrivals=arrivals, seed=5))
    at_start, exact = frames
    assert (at_start.attempts["status"] == "error").sum() >= 5  # the faults were met
    assert at_start.attempts["cached_input_tokens"].sum() > 0
    for name in ("attempts", "requests"):
        a = getattr(at_start, name).drop(columns=["strategy"], errors="ignore")
        b = getattr(exact, name).drop(columns=["strategy"], errors="ignore")
        pdt.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, atol=1e-9)


def test_a_stream_that_breaks_before_the_deadline_ends_when_it_breaks():
    """300 tokens at 100 tokens/s, cut after 200 (at 2.0 s from the first token at 0), with a
    deadline of 2.5 s: exact sharing answers the 502 at the break (2.0 s). The default rule
    times the call out at the deadline, as the whole answer (3.0 s) would outlast it."""
    ends = []
    for sharing in ("at_start", "exact"):
        profile = one_second(
            sy.Capacity(slots=2, sharing=sharing),
            output_tokens=300,
            faults=sy.Faults(cut_stream=1.0, break_after_tokens=200),
        )
        host = sy.SimHost({"m": profile}, policy=sy.HostPolicy(max_retries=0, timeout_s=2.5))
        result = run_both(single, requests(1), host=host)
        row = result.attempts.iloc[0]
        ends.append((round(float(row["end_s"]), 6), row["error_kind"], int(row["output_tokens"])))
    assert ends == [(2.5, "timeout", 251), (1.99, "unavailable", 200)]


# -- the queue ------------------------------------------------------------------------------------


def test_the_queue_is_fifo_and_a_call_starts_when_a_slot_frees():
    result = run_both(
        single, requests(3), host=host_of(sy.Capacity(slots=1, **EXACT)), arrivals=[0, 0.1, 0.2]
    )
    assert at_m(result) == [[0.0, 1.0, 0.0], [0.1, 2.0, 0.9], [0.2, 3.0, 1.8]]


async def _second_gives_up_at_0_5(request, driver):
    if request.id == 1:
        await sy.timeout(0.4, driver.call_model(request, ["m"]))  # queued at 0.1, gone at 0.5
        return sy.route_to("other", request)
    return sy.answered("m", await driver.call_model(request, ["m"]))


def test_a_call_cancelled_while_queued_lets_the_calls_behind_it_move_up():
    """slots=1: r0 serves 0–1; r1 queues at 0.1 and gives up at 0.5; r2 queued at 0.2 behind
    it moves up and starts at 1.0 under exact sharing. Under the default rule r2 keeps the
    start it was given when it arrived, after r1's planned answer (2.0)."""
    exact = run_both(
        _second_gives_up_at_0_5,
        requests(3),
        host=host_of(sy.Capacity(slots=1, **EXACT)),
        arrivals=[0, 0.1, 0.2],
    )
    assert at_m(exact) == [[0.0, 1.0, 0.0], [0.1, 0.5, 0.4], [0.2, 2.0, 0.8]]
    at_start = run_both(
        _second_gives_up_at_0_5,
        requests(3),
        host=host_of(sy.Capacity(slots=1)),
        arrivals=[0, 0.1, 0.2],
    )
    assert at_m(at_start)[2] == [0.2, 3.0, 1.8]
    given_up = exact.attempts[exact.attempts["request_id"] == 1].iloc[0]
    assert given_up["status"] == "cancelled" and given_up["cost_usd"] == 0.0


async def _first_gives_up_at_0_5(request, driver):
    if request.id == 0:
        await sy.timeout(0.5, driver.call_model(request, ["m"]))
        return sy.route_to("other", request)
    return sy.answered("m", await driver.call_model(request, ["m"]))


def test_a_call_cancelled_in_service_speeds_up_the_others_at_once():
    """r0 and r1 share from 0 (1/2 each); r0 is cancelled at 0.5 with 0.25 of r1 done: r1 runs
    its last 0.75 alone and ends at 1.25. It is billed the tokens generated by then."""
    result = run_both(
        _first_gives_up_at_0_5,
        requests(2),
        host=host_of(sy.Capacity(slots=4, **EXACT), bill_cancelled="generated"),
        arrivals=[0, 0],
    )
    assert at_m(result, "end_s") == [[0.5], [1.25]]
    cancelled = result.attempts.iloc[0]
    assert cancelled["status"] == "cancelled"
    # 0.25 s of work at 100 tokens/s: the first token at 0, then 25 more
    assert cancelled["output_tokens"] == 26


def test_a_call_arriving_at_the_instant_of_a_cancellation_finds_the_slot_still_taken():
    """queue_limit=0: r1 arrives at the very instant r0 is cancelled (0.5) and is rejected on
    both engines alike; r2 (0.6) finds the slot free."""
    result = run_both(
        _first_gives_up_at_0_5,
        requests(3),
        host=host_of(sy.Capacity(slots=1, queue_limit=0, **EXACT)),
        arrivals=[0, 0.5, 0.6],
    )
    rows = result.attempts[result.attempts["model"] == "m"]
    assert rows["http_status"].tolist()[1] == 503
    assert rows["status"].tolist() == ["cancelled", "error", "ok"]
    assert at_m(result, "start_s", "end_s")[2] == [0.6, 1.6]


def test_a_queued_call_gives_up_at_its_queue_timeout_unbilled():
    """slots=1: r0 holds the slot to its deadline (0.8); r1 and r2 give up waiting after 0.5 s;
    r3 (0.5) gets the slot at 0.8 and runs to its own deadline (1.3)."""
    result = run_both(
        single,
        requests(4),
        host=host_of(sy.Capacity(slots=1, queue_timeout_s=0.5, **EXACT), timeout_s=0.8),
        arrivals=[0, 0.1, 0.2, 0.5],
    )
    rows = result.attempts
    assert at_m(result) == [[0.0, 0.8, 0.0], [0.1, 0.6, 0.5], [0.2, 0.7, 0.5], [0.5, 1.3, 0.3]]
    messages = rows["error_message"].tolist()
    assert "deadline" in messages[0] and "deadline" in messages[3]
    assert "queue timeout" in messages[1] and "queue timeout" in messages[2]
    assert rows["cost_usd"].tolist()[1:3] == [0.0, 0.0]
    # the deadline stops an answer in flight: billed what it generated (0.8 s and 0.5 s of work)
    assert rows["output_tokens"].tolist() == [81, 0, 0, 51]


def test_the_client_deadline_ends_a_call_in_service_billed_for_what_it_generated():
    """Two 1 s calls at 1/2 each would end at 2.0; the deadline (1.5) stops both with 0.75 s of
    work done: the first token and 75 more."""
    result = run_both(
        single,
        requests(2),
        host=host_of(sy.Capacity(slots=4, **EXACT), timeout_s=1.5, bill_cancelled="generated"),
        arrivals=[0, 0],
    )
    assert at_m(result, "end_s", "output_tokens") == [[1.5, 76.0], [1.5, 76.0]]
    assert set(result.attempts["error_kind"]) == {"timeout"}


# -- engines and refusals -------------------------------------------------------------------------


def _exact(host: sy.SimHost) -> sy.SimHost:
    profiles = {
        name: profile
        if profile.capacity is None
        else profile.replace(capacity=profile.capacity.replace(sharing="exact"))
        for name, profile in host.profiles.items()
    }
    return sy.SimHost(profiles, policy=host.policy)


async def streamed_race(request, driver):
    """A stream raced against a call, for the engine comparison."""

    async def read():
        stream = driver.stream_model(request, ["shared", "batched"])
        async for _ in stream:
            pass
        return stream.response

    _, result = await sy.first(read(), driver.call_model(request, ["batched"]))
    if isinstance(result, BaseException) or result is None:
        return sy.route_to("free", request)
    return sy.answered(result.model, result)


@pytest.mark.parametrize("algorithm", [hedged, raced, judged_with_timeout, streamed_race])
@pytest.mark.parametrize("seed", [0, 1])
def test_both_engines_give_the_same_frames_under_exact_sharing(algorithm, seed):
    items = [sy.Request(f"q{i}", id=i, input_tokens=200 + 40 * i) for i in range(40)]
    result = run_both(
        algorithm, items, host=_exact(ENGINE_HOST), arrivals=sy.traffic.Poisson(6.0), seed=seed
    )
    attempts = result.attempts
    assert (attempts["queue_s"] > 0).any()
    assert attempts.loc[attempts["model"] == "free", "queue_s"].isna().all()


def _streamed(times: dict, pause_s: float = 0.0):
    """An algorithm that streams request 0 (noting each chunk's index and time, and sleeping
    ``pause_s`` after the first) and calls the model for the others."""

    async def algorithm(request, driver):
        if request.id != 0:
            return sy.answered("m", await driver.call_model(request, ["m"]))
        stream = driver.stream_model(request, ["m"])
        async for chunk in stream:
            times[chunk.index] = round(chunk.at_s, 9)
            if chunk.index == 0 and pause_s:
                await driver.sleep(pause_s)
        return sy.answered("m", stream.response)

    return algorithm


def test_a_stream_comes_faster_or_slower_as_the_load_changes():
    """r0 streams 100 tokens at 100 tokens/s from 0; r1 joins at 0.5 (1 s of work): from then
    on r0's tokens come every 0.02 s. r0 has 0.5 s of work left at 0.5 and ends at 1.5."""
    times: dict = {}
    result = run_both(
        _streamed(times),
        requests(2),
        host=host_of(sy.Capacity(slots=4, **EXACT)),
        arrivals=[0, 0.5],
    )
    assert times[0] == 0.0 and times[10] == 0.1 and times[50] == 0.5
    assert times[60] == 0.7 and times[99] == 1.48
    assert at_m(result, "end_s", "ttft_s", "output_tokens") == [
        [1.5, 0.0, 100.0],
        [2.0, 0.0, 100.0],
    ]


def test_a_stream_alone_reads_as_under_the_default_rule():
    """One streamed call at a time: the chunks' times and the rows are the same under both
    rules, with a time to first token, a prefill and a stall."""
    seen = []
    for sharing in ("at_start", "exact"):
        profile = one_second(
            sy.Capacity(slots=2, sharing=sharing),
            latency=sy.Latency(ttft=0.3, tokens_per_s=100, prefill_tokens_per_s=1000),
            faults=sy.Faults(stall_p=1.0, stall_s=0.4),
        )
        host = sy.SimHost({"m": profile}, policy=sy.HostPolicy(max_retries=0, timeout_s=60))
        times: dict = {}
        items = [sy.Request("q", id=0, input_tokens=200)]
        result = run_both(_streamed(times), items, host=host)
        seen.append((times, result.attempts.drop(columns=["strategy"])))
    (a_times, a_rows), (b_times, b_rows) = seen
    assert a_times == b_times and len(a_times) == 100
    assert a_times[0] == 0.5 and a_times[49] == 0.99 and a_times[50] == 1.4  # the stall: 0.4 s
    pdt.assert_frame_equal(a_rows, b_rows, check_exact=False, rtol=1e-9, atol=1e-9)


def test_a_stream_read_late_gets_each_chunk_at_the_time_it_came():
    """The reader sleeps 0.5 s before reading on: the chunks it then reads came while it slept,
    at the rates of that time (r1 joined at 0.3)."""
    times: dict = {}
    run_both(
        _streamed(times, pause_s=0.5),
        requests(2),
        host=host_of(sy.Capacity(slots=4, **EXACT)),
        arrivals=[0, 0.3],
    )
    assert times[1] == 0.01 and times[30] == 0.3 and times[40] == 0.5 and times[45] == 0.6


def test_a_stream_closed_early_frees_its_rate_and_is_billed_what_it_came_to():
    """r0 reads 20 tokens (two calls share from 0: one every 0.02 s) and closes at 0.38; r1 then
    runs alone: 0.19 s of its work done, it ends at 0.38 + 0.81."""

    async def reads_20(request, driver):
        if request.id != 0:
            return sy.answered("m", await driver.call_model(request, ["m"]))
        stream = driver.stream_model(request, ["m"])
        async for chunk in stream:
            if chunk.index == 19:
                break
        await stream.aclose()
        return sy.route_to("other", request)

    result = run_both(
        reads_20,
        requests(2),
        host=host_of(sy.Capacity(slots=4, **EXACT), bill_cancelled="generated"),
        arrivals=[0, 0],
    )
    rows = at_m(result, "end_s", "output_tokens")
    assert rows == [[0.38, 20.0], [1.19, 100.0]]


def test_sharing_must_be_one_of_the_two_rules():
    assert sy.Capacity(slots=2).sharing == "at_start"
    with pytest.raises(sy.ArgumentError, match="sharing must be one of 'at_start', 'exact'"):
        sy.Capacity(slots=2, sharing="fair")


# -- against processor-sharing theory and an independent reference -------------------------------


def reference_ps(arrivals: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Exact processor sharing of one unit of rate, stepped event by event on each call's
    remaining work (a different method from sykit's segments and the benchmark's virtual-work
    clock): between events every call in service loses elapsed / n of its work."""
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    response = np.empty(len(arrivals))
    left: dict[int, float] = {}
    now = 0.0
    pending = [(float(arrivals[i]), i) for i in order]
    heapq.heapify(pending)
    while pending or left:
        n = len(left)
        finish = now + min(left.values()) * n if left else math.inf
        arrival = pending[0][0] if pending else math.inf
        step = min(finish, arrival)
        if n:
            for j in left:
                left[j] -= (step - now) / n
        now = step
        for j in [j for j, w in left.items() if w <= 1e-12]:
            del left[j]
            response[j] = now - arrivals[j]
        while pending and pending[0][0] <= now:
            _, i = heapq.heappop(pending)
            left[i] = float(work[i])
    return response


def mm1_ps(rho: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Response times of sykit (exact sharing) and of the reference on the same arrivals and
    work: an M/M/1-PS server at utilisation ``rho`` (1 s of work on average)."""
    profile = sy.ModelProfile(
        latency=sy.Latency(ttft=0.0, tokens_per_s=100),
        output_tokens=sy.dists.Exponential(100),
        capacity=sy.Capacity(slots=100_000, **EXACT),
    )
    host = sy.SimHost({"m": profile}, policy=sy.HostPolicy(max_retries=0, timeout_s=1e9))
    items = [sy.Request(f"q{i}", id=i, input_tokens=1) for i in range(n)]
    result = sy.run(
        single, items, host=host, arrivals=sy.traffic.Poisson(rho), seed=seed, progress=False
    )
    requests_frame = result.requests.sort_values("request_id")
    attempts = result.attempts.sort_values("request_id")
    arrivals = requests_frame["arrival_s"].to_numpy(float)
    work = attempts["output_tokens"].to_numpy(float) / 100.0
    return requests_frame["latency_s"].to_numpy(float), reference_ps(arrivals, work)


def test_the_reference_re_times_every_call():
    assert reference_ps(np.array([0.0, 0.5, 0.7]), np.ones(3)).round(9).tolist() == [
        1.9,
        2.4,
        2.3,
    ]


@pytest.mark.parametrize("rho", [0.5, 0.8, 0.9])
def test_exact_sharing_meets_the_reference_call_by_call_and_its_p99(rho):
    mine, reference = mm1_ps(rho, 3000, seed=2)
    np.testing.assert_allclose(mine, reference, rtol=1e-6, atol=1e-6)
    warm = slice(300, None)
    p99 = np.quantile(mine[warm], 0.99) / np.quantile(reference[warm], 0.99)
    assert abs(p99 - 1) < 0.05


@pytest.mark.slow
@pytest.mark.parametrize(("rho", "tolerance"), [(0.5, 0.05), (0.8, 0.1), (0.9, 0.15)])
def test_exact_sharing_meets_the_mm1_ps_mean(rho, tolerance):
    """M/M/1-PS: the mean response is 1 / (1 − ρ) whatever the work's distribution; three seeds
    of 8,000 requests, the first tenth of each left out (the server starts empty)."""
    means = [mm1_ps(rho, 8000, seed)[0][800:].mean() for seed in range(3)]
    assert np.mean(means) == pytest.approx(1 / (1 - rho), rel=tolerance)


def test_a_spilling_run_under_exact_sharing_reads_back_the_same_frames(tmp_path, monkeypatch):
    """queue_s of a call is known only when its alarm rings: a spilling run, which hands
    attempts over in chunks of 4, still writes each one's."""
    from sykit._run import spill as _spill

    monkeypatch.setattr(_spill, "CHUNK_ROWS", 4)
    items = [sy.Request(f"q{i}", id=i, input_tokens=200) for i in range(30)]
    kwargs = {"host": _exact(ENGINE_HOST), "arrivals": sy.traffic.Poisson(6.0), "seed": 2}
    plain = sy.run(hedged, items, progress=False, **kwargs)
    spilled = sy.run(hedged, items, spill=tmp_path / "s", progress=False, **kwargs)
    pdt.assert_frame_equal(plain.attempts, spilled.attempts)
    pdt.assert_frame_equal(plain.requests, spilled.requests)
    assert (spilled.attempts["queue_s"] > 0).any()


def test_a_call_arriving_as_another_ends_is_decided_alike_whichever_runs_first():
    """slots=1, queue_limit=1: a call ends at 1.0 with another queued, and a third arrives at
    1.0. Whether the server hears of the arrival before or after the end's alarm rings, the
    queued call takes the slot and the newcomer is admitted to the queue (not rejected)."""
    from sykit._world.sharing import DECODE, Job, SharedServer

    class Attempt:  # what the server sets on an attempt
        in_service_from = -math.inf
        received = None

    def job(at: float) -> Job:
        return Job(Attempt(), at, 100.0, 100.0, [(DECODE, 1.0)], 0.01, 100, 0, lambda _: "reply")

    decisions = []
    for arrival_first in (True, False):
        server = SharedServer(sy.Capacity(slots=1, queue_limit=1, sharing="exact"))
        first, second = job(0.0), job(0.5)
        assert server.must_wait(0.0) is False
        server.admit(first, 0.0)
        assert server.must_wait(0.5) is True
        server.admit(second, 0.5)
        assert first.when == 1.0
        if not arrival_first:
            assert server.ring(first, 1.0) == "reply"
        decisions.append(server.must_wait(1.0))
        assert second.start == 1.0
    assert decisions == [True, True]
