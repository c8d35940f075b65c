"""Properties of the engine over random algorithms × random fault profiles × seeds.

An algorithm here is a random composition of nested ``sy.first`` / ``sy.first_ok`` /
``sy.timeout`` / ``sy.hedge`` over model calls, streams read in part or whole (closed or left
open), decision calls, sleeps, calls that answer without awaiting and raised errors (GeneratorExit
too), with calls started (``sy.start``) and left running; it ends by returning ``route_to`` or
``answered``, or by raising. Hosts get random faults (every random kind, ``ErrorFault``s, outages
from t=0, ``fail_first``, flapping), reject delays of 0, rate limits, prompt caches and policies;
workloads are single requests or multi-turn sessions. For each example:

* every request (or session turn) sent has exactly one row;
* a ``call_id`` is one call: its first attempt, then its retries and fallbacks in order, one phase,
  kind and race; ``retry_wait_s`` on every retried row; ``race_size`` counts a race's calls;
* every ``Response`` the algorithm got joins, by ``(request_id, call_id)``, the attempt that
  answered it;
* the same seed gives identical frames, run twice, on each engine;
* the kernel and the asyncio engine give identical frames, with continuous delays (no two things
  at one instant) and without them, on hosts with constant latencies too, where ties abound;
* every record is sound: one terminal status per attempt, cancelled attempts end at the instant
  they were cancelled (a race helper's or timeout's end, or the end of the request's routing) with
  a cause, rejected attempts cost nothing, a request costs the sum of its attempts, and its counts
  match its attempts.

``SYKIT_PROPERTY_EXAMPLES`` sets the number of examples of each test (default 100: a few hundred
in all, about a minute); ``python tests/properties_long.py --examples 10000`` runs them at length.
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import pandas.testing as pdt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sykit as sy
from sykit._world.faults import RANDOM_FAULTS

EXAMPLES = int(os.environ.get("SYKIT_PROPERTY_EXAMPLES", "100"))
MODELS = ("a", "b", "c")
STATUSES = {"ok", "error", "cancelled", "skipped"}


class Bug(ValueError):
    """What a random algorithm raises on purpose."""


# -- random algorithms -----------------------------------------------------------------------------

seconds = st.floats(min_value=0.01, max_value=4.0, allow_nan=False).map(lambda s: round(s, 6))
model_lists = st.lists(st.sampled_from(MODELS), min_size=1, max_size=3)

leaves = st.one_of(
    st.tuples(st.just("call"), model_lists),
    st.tuples(st.just("decision"), st.sampled_from(MODELS)),
    st.tuples(st.just("sleep"), seconds),
    st.tuples(st.just("raise")),
    # a stream read for this many tokens (0: to its end), then closed or left open
    st.tuples(st.just("stream"), model_lists, st.integers(0, 4), st.booleans()),
    # a coroutine that finishes without awaiting: the cached response (True) or a raise at once
    st.tuples(st.just("now"), st.booleans()),
)


def _composites(children: st.SearchStrategy) -> st.SearchStrategy:
    several = st.lists(children, min_size=1, max_size=3).map(tuple)
    return st.one_of(
        st.tuples(st.just("first"), several),
        st.tuples(st.just("first_ok"), several),
        st.tuples(st.just("timeout"), seconds, children),
        # a hedge's copies after 0 s start at the instant of the first: the engines' one rule for
        # simultaneous events decides their order
        st.tuples(st.just("hedge"), st.just(0.0) | seconds, st.integers(1, 3), children),
        st.tuples(st.just("spawn"), children),  # a task: awaited by whoever it is passed to
    )


nodes = st.recursive(leaves, _composites, max_leaves=6)
steps = st.lists(st.tuples(nodes, st.booleans()), min_size=1, max_size=3)  # (node, catch errors)
endings = st.one_of(
    st.tuples(st.just("route_to"), model_lists),
    st.tuples(st.just("answered"), model_lists),
    st.tuples(st.just("raise")),
    st.tuples(st.just("exit")),  # GeneratorExit: a BaseException, not an Exception
)

#: ``first_ok(call, spawn(first(call)))``: leftover tasks closed in set order once gave different
#: frames for the same seed.
SHRUNK_BUG = ((("first_ok", (("call", ["a"]), ("spawn", ("first", (("call", ["a"]),))))), False),)


@dataclass
class Context:
    """One request's run of a random algorithm: where helpers ended, for the checks."""

    request: sy.Request
    driver: sy.Driver
    delays: bool
    ends: list[float] = field(default_factory=list)
    #: The responses the driver gave the algorithm (model and decision calls, ended streams).
    kept: list[Any] = field(default_factory=list)
    #: How many calls the algorithm started (``call_model``, ``call_decision``, ``stream_model``).
    calls: int = 0
    #: The last response kept: what a "now" leaf returns without awaiting.
    cached: Any = None

    def keep(self, value: Any) -> Any:
        if isinstance(value, tuple) and len(value) == 2:  # sy.first / sy.first_ok
            self.keep(value[1])
        if isinstance(value, sy.Response | sy.DecisionResponse):
            self.kept.append(value)
            self.cached = value
        return value


def number(node: tuple[Any, ...], counter: itertools.count) -> tuple[Any, ...]:
    """A copy of ``node`` with a unique number appended to each of its nodes (its last item)."""
    kind = node[0]
    if kind in ("first", "first_ok"):
        return (kind, tuple(number(child, counter) for child in node[1]), next(counter))
    if kind in ("timeout", "hedge", "spawn"):
        return (*node[:-1], number(node[-1], counter), next(counter))
    return (*node, next(counter))


def build(
    plan: tuple[Any, ...], ending: tuple[Any, ...], delays: bool, contexts: dict[Any, Context]
):
    """The algorithm for ``plan`` (a tuple of (node, catch) steps) and ``ending``. With
    ``delays``, every leaf waits a delay of its own (by its number and the request) first."""
    counter = itertools.count(1)
    plan = tuple((number(node, counter), catch) for node, catch in plan)

    def delay(node: tuple[Any, ...], ctx: Context) -> float:
        return node[-1] * 2.0**-6 + (ctx.request.id + 1) * 2.0**-13

    async def leaf(node: tuple[Any, ...], ctx: Context) -> Any:
        kind = node[0]
        if kind == "now":  # never suspends, even with delays
            if node[1]:
                return ctx.cached
            raise Bug("a bug at once")
        if ctx.delays:
            await ctx.driver.sleep(delay(node, ctx))
        if kind == "call":
            ctx.calls += 1
            return ctx.keep(await ctx.driver.call_model(ctx.request, node[1]))
        if kind == "decision":
            question = sy.DecisionRequest({"easy": sy.Boolean()})
            ctx.calls += 1
            return ctx.keep(await ctx.driver.call_decision(question, node[1]))
        if kind == "sleep":
            await ctx.driver.sleep(node[1])
            return None
        if kind == "stream":
            ctx.calls += 1
            stream = ctx.driver.stream_model(ctx.request, node[1])
            read = 0
            async for _ in stream:
                read += 1
                if read == node[2]:
                    break
            if node[3]:
                await stream.aclose()
                ctx.ends.append(ctx.driver.now())  # the instant it was closed
            return ctx.keep(stream.response)
        raise Bug("a bug in the algorithm")

    def awaitable(node: tuple[Any, ...], ctx: Context) -> Any:
        if node[0] == "call" and not ctx.delays:
            ctx.calls += 1
            return ctx.driver.call_model(ctx.request, node[1])  # the call itself, not a wrapper
        if node[0] == "spawn":
            return sy.start(awaitable(node[1], ctx))[0]
        return evaluate(node, ctx)

    async def evaluate(node: tuple[Any, ...], ctx: Context) -> Any:
        kind = node[0]
        if kind in ("call", "decision", "sleep", "raise", "stream", "now"):
            return await leaf(node, ctx)
        if kind == "spawn":
            return ctx.keep(await awaitable(node, ctx))
        try:
            if kind == "first":
                return ctx.keep(await sy.first(*(awaitable(child, ctx) for child in node[1])))
            if kind == "first_ok":
                return ctx.keep(await sy.first_ok(*(awaitable(child, ctx) for child in node[1])))
            if kind == "timeout":
                return ctx.keep(await sy.timeout(node[1], awaitable(node[2], ctx)))
            make_call = lambda: awaitable(node[3], ctx)  # noqa: E731
            return ctx.keep(await sy.hedge(make_call, after=node[1], copies=node[2]))
        finally:
            ctx.ends.append(ctx.driver.now())  # the instant its losers were cancelled

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        ctx = Context(request, driver, delays)
        contexts[request.id] = ctx
        last: sy.Response | None = None
        for node, catch in plan:
            if node[0] == "spawn":
                awaitable(node, ctx)  # started and left running
                continue
            try:
                value = await evaluate(node, ctx)
            except (sy.ModelError, Bug):
                if not catch:
                    raise
                continue
            if isinstance(value, tuple):  # sy.first / sy.first_ok: (index, result)
                value = value[1]
            if isinstance(value, sy.Response):
                last = value
        if ending[0] == "raise":
            raise Bug("the algorithm gave up")
        if ending[0] == "exit":
            raise GeneratorExit
        if ending[0] == "answered" and last is not None:
            return sy.answered(last.model, last)
        models = ending[1]
        return sy.route_to(models[0], request, fallbacks=models[1:])

    return algorithm


# -- random hosts ------------------------------------------------------------------------------------


error_chances = st.sampled_from([0.05, 0.2, 0.5])  # two at most: ≤ 1 in all
error_faults = st.one_of(
    st.builds(
        sy.faults.ErrorFault,
        st.sampled_from([400, 401, 404, 408, 413, 422, 429, 500, 503, 529]),
        error_chances,
    ),
    st.builds(sy.faults.ErrorFault.capability, error_chances),
    st.builds(sy.faults.ErrorFault.policy, error_chances),
    st.builds(sy.faults.ErrorFault.context_window, error_chances),
    st.builds(lambda p: sy.faults.ErrorFault(503, p, retry_after_s=0.3), error_chances),
)


@st.composite
def fault_profiles(draw: st.DrawFn) -> sy.Faults:
    weights = draw(st.lists(st.floats(0.0, 1.0), min_size=len(RANDOM_FAULTS) + 1, max_size=9))
    total = sum(weights) or 1.0
    share = draw(st.sampled_from([0.0, 0.1, 0.3, 0.7, 1.0]))  # of attempts that fail at random
    errors = draw(st.lists(error_faults, max_size=2))
    share *= 1.0 - sum(e.p for e in errors)  # the errors' and the random faults' p sum to ≤ 1
    probabilities = {
        name: share * w / total for name, w in zip(RANDOM_FAULTS, weights, strict=False)
    }
    starts = st.just(0.0) | seconds  # an outage from the very start of the run, or later
    outages = draw(
        st.lists(st.tuples(starts, seconds).map(lambda w: (w[0], w[0] + w[1])), max_size=2)
    )
    flapping = draw(
        st.none()
        | st.builds(
            lambda u, d: sy.faults.Flapping(up_s=u, down_s=d, until_s=20.0), seconds, seconds
        )
    )
    return sy.Faults(
        **probabilities,
        retry_after_s=draw(st.none() | seconds),
        spike_p=draw(st.sampled_from([0.0, 0.2])),
        outages=outages,
        fail_first=draw(st.integers(0, 3)),
        fail_first_status=draw(st.sampled_from([429, 500, 503, "timeout", "reset"])),
        flapping=flapping,
        errors=errors,
    )


@st.composite
def profiles(draw: st.DrawFn, continuous: bool) -> sy.ModelProfile:
    if continuous:
        latency = sy.Latency(
            ttft=sy.dists.LogNormal(draw(st.sampled_from([0.2, 0.6, 1.5])), sigma=0.5),
            tokens_per_s=sy.dists.Uniform(30.0, 150.0),
        )
        # 0: a structural 400 (an image to a model without vision) at the instant the call starts
        reject: Any = draw(st.sampled_from([0.0, sy.dists.Uniform(0.01, 0.3)]))
        output: Any = sy.dists.LogNormal(60, p95=300)
    else:
        latency = sy.Latency(ttft=draw(st.sampled_from([0.25, 0.5, 1.0])), tokens_per_s=100.0)
        reject = draw(st.sampled_from([0.0, 0.125]))
        output = draw(st.sampled_from([1, 50, 100]))
    limit = draw(
        st.builds(
            _rate_limit, st.sampled_from([None, 6.0, 30.0]), st.sampled_from([None, 500.0, 5_000.0])
        )
    )
    return sy.ModelProfile(
        latency=latency,
        output_tokens=output,
        reject_delay_s=reject,
        price_in=1.0,
        price_out=draw(st.sampled_from([0.0, 2.0, 10.0])),
        faults=draw(fault_profiles()),
        rate_limit=limit,
        vision=draw(st.booleans()),
        cache=draw(st.none() | prompt_caches),
        capacity=draw(st.none() | capacities),
    )


prompt_caches = st.builds(
    sy.profiles.PromptCache,
    read_price=st.sampled_from([0.0, 0.1]),
    write_price=st.sampled_from([None, 1.25]),
    ttl_s=st.sampled_from([1.0, 300.0]),
    min_tokens=st.sampled_from([0, 1024]),
)


#: A model's shared capacity: few slots, so calls queue (FIFO) and hedge copies wait their turn.
capacities = st.builds(
    sy.Capacity,
    slots=st.integers(1, 2),
    slowdown=st.sampled_from([1.0, 2.0]),
    queue_limit=st.none() | st.integers(0, 2),
    queue_timeout_s=st.none() | st.sampled_from([0.5, 3.0]),
    sharing=st.sampled_from(["at_start", "exact"]),
)


def _rate_limit(requests_per_min, tokens_per_min):
    if requests_per_min is None and tokens_per_min is None:
        return None
    return sy.faults.RateLimit(requests_per_min=requests_per_min, tokens_per_min=tokens_per_min)


@st.composite
def hosts(draw: st.DrawFn, continuous: bool) -> sy.SimHost:
    policy = sy.HostPolicy(
        max_retries=draw(st.integers(0, 2)),
        cooldown_s=draw(st.sampled_from([0.0, 0.75, 5.0])),
        timeout_s=draw(st.sampled_from([2.0, 30.0])),
        routing_fallback=draw(st.booleans()),
        recover_errors=draw(st.booleans()),
        bill_cancelled=draw(st.sampled_from(["generated", "none", "full"])),
        allow_policy_fallback=draw(st.booleans()),
    )
    models = {name: draw(profiles(continuous)) for name in MODELS}
    return sy.SimHost(models, policy=policy, judge=sy.Judge(accuracy=0.8))


IMAGE = "https://example.com/x.png"


@st.composite
def sessions(draw: st.DrawFn) -> list[sy.sessions.Session]:
    """Multi-turn sessions whose turns carry a growing history (what a prompt cache reads)."""
    counter = itertools.count()
    out = []
    for s in range(draw(st.integers(1, 3))):
        history: list[dict[str, str]] = []
        turns = []
        for t in range(draw(st.integers(1, 4))):
            history = [*history, {"role": "user", "content": f"step {t} of task {s}"}]
            images = [IMAGE] if draw(st.booleans()) else []
            request = sy.Request(
                list(history), id=next(counter), images=images, input_tokens=1500 * (t + 1)
            )
            turns.append(
                sy.sessions.Turn(request, gap_s=draw(st.sampled_from([0.0, 0.5]) | seconds))
            )
            history.append({"role": "assistant", "content": f"answer {t}"})
        out.append(sy.sessions.Session(turns, id=f"s{s}"))
    return out


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        requests: list[Any] = draw(sessions())
    else:
        requests = [
            sy.Request(f"q{i}", id=i, images=[IMAGE] if draw(st.booleans()) else [])
            for i in range(draw(st.integers(1, 4)))
        ]
    n = len(requests)
    loop = draw(st.sampled_from(["closed", "arrivals", "poisson"]))
    kwargs: dict[str, Any] = {"seed": draw(st.integers(0, 2**16))}
    if loop == "closed":
        kwargs["concurrency"] = draw(st.integers(1, 3))
    elif loop == "arrivals":
        gaps = draw(st.lists(seconds, min_size=n, max_size=n))
        kwargs["arrivals"] = [sum(gaps[: i + 1]) for i in range(n)]
    else:
        kwargs["arrivals"] = sy.traffic.Poisson(draw(st.sampled_from([0.5, 4.0])))
        kwargs["concurrency"] = draw(st.none() | st.integers(1, 2))
    return {"requests": requests, **kwargs}


# -- the checks ------------------------------------------------------------------------------------


def run(plan, ending, delays, host, workload, engine) -> tuple[sy.Result, dict[Any, Context]]:
    contexts: dict[Any, Context] = {}
    algorithm = build(plan, ending, delays, contexts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        result = sy.run(algorithm, host=host, engine=engine, **workload)
    assert result.engine == engine
    return result, contexts


def same_frames(one: sy.Result, two: sy.Result) -> None:
    pdt.assert_frame_equal(one.attempts, two.attempts, check_exact=True)
    pdt.assert_frame_equal(one.requests, two.requests, check_exact=True)


def check_request_rows(requests, contexts: dict[Any, Context], workload: dict[str, Any]) -> None:
    """One row per request sent, never fewer: every request of a plain workload; the turns of a
    session up to its first failed one (a failed turn ends its session)."""
    ids = requests["request_id"].tolist()
    assert len(ids) == len(set(ids)), ids
    sent = workload["requests"]
    if sent and isinstance(sent[0], sy.sessions.Session):
        expected = []
        for session in sent:
            rows = requests[requests["session_id"] == session.id].sort_values("turn")
            turns = rows["turn"].tolist()
            assert turns == list(range(len(turns))), (session.id, turns)
            assert 1 <= len(turns) <= len(session.turns), (session.id, turns)
            statuses = rows["status"].astype(str).tolist()
            assert all(s == "ok" for s in statuses[:-1]), (session.id, statuses)
            # the session ended early only because its last turn sent failed
            assert len(turns) == len(session.turns) or statuses[-1] == "failed", (
                session.id, statuses, len(session.turns))  # fmt: skip
            expected += [turn.request.id for turn in session.turns[: len(turns)]]
            assert rows["request_id"].tolist() == expected[-len(turns) :]
        assert sorted(ids) == sorted(expected)
    else:
        assert ids == [r.id for r in sent]
    # the algorithm ran on exactly the requests that have a row
    assert set(contexts) == set(ids), (sorted(contexts), ids)


def check_calls(attempts, contexts: dict[Any, Context]) -> None:
    """A call_id is exactly one call: one ``call_model`` / ``call_decision`` / ``stream_model``
    (or the answer phase after ``route_to``): its first attempt, its retries, its fallbacks."""
    for (request_id, call_id), call in attempts.groupby(
        ["request_id", "call_id"], sort=False, observed=True
    ):
        where = (request_id, call_id, call.drop(columns=["strategy", "error_message"]).to_dict("records"))  # fmt: skip
        assert call["phase"].nunique() == 1 and call["kind"].nunique() == 1, where
        # a call is in one race or none, and every row says so alike
        races = call["race_id"]
        assert races.isna().all() or (races.notna().all() and races.nunique() == 1), where
        assert call["race_size"].nunique() == 1, where
        rows = list(call.itertuples())
        assert (rows[0].candidate_index, rows[0].retry_index) == (0, 0), where
        for a, b in itertools.pairwise(rows):
            # only a call's last attempt can answer or be cancelled
            assert a.status in ("error", "skipped"), where
            # a call's attempts run one after another
            assert b.start_s >= a.end_s, where
            if a.retried:  # followed by a retry: the same candidate, the next retry
                assert (b.candidate_index, b.retry_index, b.model) == (
                    a.candidate_index, a.retry_index + 1, a.model), where  # fmt: skip
                assert not math.isnan(a.retry_wait_s), where
                assert a.retry_wait_s == pytest.approx(b.start_s - a.end_s, rel=1e-5, abs=1e-5)
            else:  # else the next candidate, from its first try
                assert (b.candidate_index, b.retry_index) == (a.candidate_index + 1, 0), where
                assert math.isnan(a.retry_wait_s), where
        assert not rows[-1].retried and math.isnan(rows[-1].retry_wait_s), where
    for request_id, mine in attempts.groupby("request_id", sort=False, observed=True):
        answer = mine.loc[mine["phase"] == "answer", "call_id"].nunique()
        assert answer <= 1, mine  # route_to is one call
        routing = mine.loc[mine["phase"] == "routing", "call_id"].nunique()
        ctx = contexts.get(request_id)
        started = 0 if ctx is None else ctx.calls
        # never more calls in the frame than the algorithm started
        assert routing <= started, (request_id, routing, started, mine.to_dict("records"))
    # race_size: how many distinct calls raced; 0 outside a race; a race is two calls or more
    raced = attempts[attempts["race_id"].notna()]
    for _, race in raced.groupby("race_id", sort=False):
        n = race["call_id"].nunique()
        assert n >= 2 and (race["race_size"] == n).all(), race
        assert race["request_id"].nunique() == 1, race
    assert (attempts.loc[attempts["race_id"].isna(), "race_size"] == 0).all()


def check_responses(attempts, contexts: dict[Any, Context]) -> None:
    """``Response.call_id`` is the call_id of the attempt that answered, in the same request."""
    for request_id, ctx in contexts.items():
        mine = attempts[attempts["request_id"] == request_id]
        for response in ctx.kept:
            answered = mine[(mine["call_id"] == response.call_id) & (mine["status"] == "ok")]
            assert len(answered) == 1, (
                request_id,
                response,
                response.call_id,
                mine.to_dict("records"),
            )
            row = answered.iloc[0]
            assert row["model"] == response.model, (row, response)
            assert row["output_tokens"] == response.usage.output_tokens, (row, response)
            assert row["input_tokens"] == response.usage.input_tokens, (row, response)


def check_records(
    result: sy.Result, contexts: dict[Any, Context], workload: dict[str, Any]
) -> None:
    attempts, requests = result.attempts, result.requests
    ends = {request_id: ctx.ends for request_id, ctx in contexts.items()}
    check_request_rows(requests, contexts, workload)
    ids = requests["request_id"].tolist()
    assert set(requests["status"].astype(str)) <= {"ok", "failed"}
    # one terminal status per attempt
    assert attempts["status"].notna().all()
    assert set(attempts["status"].astype(str)) <= STATUSES
    assert (attempts["end_s"] >= attempts["start_s"]).all()
    routing_end = dict(
        zip(requests["request_id"], requests["start_s"] + requests["routing_s"], strict=True)
    )
    for row in attempts.itertuples():
        if row.status == "cancelled":
            # at the instant a helper gave it up (a race lost, a timeout) or the routing ended
            assert isinstance(row.cancel_cause, str), row
            at_helper_end = row.end_s in ends.get(row.request_id, ())
            at_routing_end = math.isclose(row.end_s, routing_end[row.request_id], abs_tol=1e-9)
            assert at_helper_end or at_routing_end, (row, ends.get(row.request_id))
        elif row.status == "skipped":
            assert row.end_s == row.start_s and row.cost_usd == 0.0
        elif row.status == "error" and row.output_tokens == 0 and row.error_kind != "timeout":
            # rejected before generating anything: nothing billed
            assert (row.input_tokens, row.cost_usd) == (0, 0.0), row
    for request in requests.itertuples():
        mine = attempts[attempts["request_id"] == request.request_id]
        assert request.cost_usd == pytest.approx(mine["cost_usd"].sum(), rel=1e-9, abs=1e-15)
        assert request.n_attempts == int((mine["status"] != "skipped").sum())
        assert request.n_cancelled == int((mine["status"] == "cancelled").sum())
        assert request.n_retries == int(mine["retried"].sum())
        # an answered request serves exactly one successful attempt; a failed one serves none
        served = mine[mine["served"]]
        assert len(served) == (request.status == "ok")
        assert set(served["status"].astype(str)) <= {"ok"}
    assert (requests["queue_s"] >= 0).all() and (requests["latency_s"] >= 0).all()
    assert set(attempts["request_id"]) <= set(ids)
    check_calls(attempts, contexts)
    check_responses(attempts, contexts)


PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY_SETTINGS
@given(
    plan=steps,
    ending=endings,
    host=hosts(continuous=True),
    workload=workloads(),
)
def test_both_engines_agree_and_the_records_are_sound(plan, ending, host, workload):
    kernel, ends = run(plan, ending, True, host, workload, "kernel")
    check_records(kernel, ends, workload)
    on_asyncio, ends = run(plan, ending, True, host, workload, "asyncio")
    check_records(on_asyncio, ends, workload)
    same_frames(kernel, on_asyncio)
    same_frames(kernel, run(plan, ending, True, host, workload, "kernel")[0])
    gc.collect(1)  # a leaked coroutine warns here (an error), in the example that leaked it


@PROPERTY_SETTINGS
@given(
    plan=st.one_of(st.just(SHRUNK_BUG), steps),
    ending=endings,
    host=st.one_of(hosts(continuous=False), hosts(continuous=True)),
    workload=workloads(),
    engine=st.sampled_from(["kernel", "asyncio"]),
)
def test_the_same_seed_gives_the_same_frames_even_with_ties(plan, ending, host, workload, engine):
    first, ends = run(plan, ending, False, host, workload, engine)
    check_records(first, ends, workload)
    same_frames(first, run(plan, ending, False, host, workload, engine)[0])
    gc.collect(1)  # a leaked coroutine warns here (an error), in the example that leaked it


@PROPERTY_SETTINGS
@given(
    plan=steps,
    ending=endings,
    host=st.one_of(hosts(continuous=False), hosts(continuous=True)),
    workload=workloads(),
)
def test_both_engines_agree_even_with_ties(plan, ending, host, workload):
    """Without the leaves' own delays, on hosts with constant latencies too, many things happen
    at one instant: both engines still order them alike (tasks start as asyncio starts them)."""
    kernel, ends = run(plan, ending, False, host, workload, "kernel")
    check_records(kernel, ends, workload)
    on_asyncio, _ = run(plan, ending, False, host, workload, "asyncio")
    same_frames(kernel, on_asyncio)
    gc.collect(1)  # a leaked coroutine warns here (an error), in the example that leaked it


@pytest.mark.parametrize("engine", ["kernel", "asyncio"])
def test_the_shape_hypothesis_once_shrank_a_bug_to(engine):
    """``first_ok(call, spawn(first(call)))`` with the call failing: the spawned race is left
    running when the algorithm fails, and the same seed must give the same frames."""
    host = sy.SimHost(
        {
            m: sy.ModelProfile(faults=sy.Faults(unavailable=0.5), reject_delay_s=0.125)
            for m in MODELS
        },
        policy=sy.HostPolicy(max_retries=0),
    )
    workload = {"requests": [sy.Request(f"q{i}", id=i) for i in range(20)], "concurrency": 4}
    first, ends = run(SHRUNK_BUG, ("route_to", ["b"]), False, host, workload, engine)
    check_records(first, ends, workload)
    assert (first.attempts["status"] == "cancelled").any()
    same_frames(first, run(SHRUNK_BUG, ("route_to", ["b"]), False, host, workload, engine)[0])


def test_a_cancelled_await_of_a_started_call_cancels_it_with_the_same_cause_on_both_engines():
    """A started call (``sy.start``) passed to a race helper is awaited through a wrapper; when
    the wrapper loses, the call is cancelled with it and with its cause, on both engines alike."""
    host = sy.SimHost({m: sy.ModelProfile(latency=sy.Latency(ttft=float(i + 1), tokens_per_s=100),
                                          output_tokens=10) for i, m in enumerate(MODELS)})  # fmt: skip
    plan = ((("first", (("call", ["a"]), ("spawn", ("call", ["c"])))), False),)
    workload = {"requests": [sy.Request("q", id=0)]}
    results = [run(plan, ("route_to", ["a"]), False, host, workload, e)[0] for e in ("kernel", "asyncio")]  # fmt: skip
    for result in results:
        c = result.attempts.query("model == 'c'")
        assert c[["status", "cancel_cause", "end_s"]].values.tolist() == [
            ["cancelled", "lost_race", 1.1]
        ]
    same_frames(*results)
