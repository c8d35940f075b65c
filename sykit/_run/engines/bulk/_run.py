"""A run evaluated in bulk: route every request, plan every attempt column-wise, place the requests
in time, write the records as the event engines would.

It takes a run when each request's course depends on nothing but the request: a fixed chain, a
static router, or a router that owns its retry loop and declares the path its requests follow
(``litellm_like`` in a setting where no deployment can cool, see :mod:`._litellm_waves`), on a
simulated host with no state shared between requests (no rate-limit buckets,
scripted outages, fail-first counters or prompt caches, and no cooldown that a later request could
see), without sessions; :meth:`BulkRun.evaluate` says why not otherwise
(:class:`~sykit._run.engines.NeedsEvents`), and the run goes to the event engines. A spilling run's
request log writes its chunks a block of requests at a time.
"""

from __future__ import annotations

import heapq
import math
from functools import partial
from types import CoroutineType
from typing import Any

import numpy as np

from sykit._base.errors import ModelError
from sykit._base.vocab import Status
from sykit._hosts.sim import _SimSession
from sykit._run.candidates import serve_steps
from sykit._run.driver import Driver
from sykit._run.engines import NeedsEvents
from sykit._run.engines.base import SLEEP
from sykit._run.engines.bulk._litellm_waves import OwnsRetries, run_litellm_waves
from sykit._run.engines.bulk._waves import Columns, NotSimple, Timed, Waves, run_waves, selected
from sykit._run.engines.columnwise import BulkEngine
from sykit._run.engines.fastpath import fixed_chain
from sykit._run.lifecycle import StrategyRun, _outcome_error, failure_of, row_extra
from sykit._run.records import ANSWER, MODEL, ROUTING, STATUS_CODE
from sykit._run.state import RequestState
from sykit._run.static import Route, RouteMany, RoutingBatch
from sykit._world.billing import Generation, unserved_tokens
from sykit._world.models import Outcome, Request, route_to
from sykit._world.truth import TruthTable

__all__ = ["evaluate", "is_static", "refusal"]

_OK = STATUS_CODE[Status.OK]
_ERROR = STATUS_CODE[Status.ERROR]
#: Requests placed in time per block (see _place_and_record).
_BLOCK = 16384


def is_static(fn: Any) -> bool:
    """Whether ``fn`` is declared static: its outcome is a pure function of the request, made
    without waiting for anything (``sy.strategies.static``, and the library's static routers)."""
    return getattr(fn, "static", False) is True or fixed_chain(fn) is not None


def retry_router(fn: Any) -> tuple[OwnsRetries, tuple[str, ...]] | None:
    """The router behind ``fn`` and its path, when it owns its retry loop and its requests cannot
    change one another's course (see :class:`OwnsRetries`); None otherwise."""
    owner = getattr(fn, "__self__", None)
    if not isinstance(owner, OwnsRetries):
        return None
    path = owner.bulk_path()
    return None if path is None else (owner, path)


def refusal(runner: StrategyRun) -> str | None:
    """Why ``runner`` cannot be evaluated in bulk before it starts (None: it may be)."""
    if runner.sessions is not None:
        return "agent sessions' turns depend on one another"
    if not getattr(runner.run.host, "virtual", False):
        return "its host is not simulated"
    if not is_static(runner.fn) and retry_router(runner.fn) is None:
        if isinstance(getattr(runner.fn, "__self__", None), OwnsRetries):
            return (
                f"strategy {runner.run.strategy!r} is a router whose requests can change one "
                "another's course in this setting (a deployment that can cool, a pick that reads "
                "the load, streams, or a group falling back to several)"
            )
        return (
            f"strategy {runner.run.strategy!r} is neither a fixed chain nor declared static "
            "(sy.strategies.static)"
        )
    if not runner.run.policy.recover_errors and retry_router(runner.fn) is not None:
        # its calls' errors would end the request at the first failed attempt (the event
        # engines' way); the planned waves follow the router's retries and fallbacks
        return (
            f"strategy {runner.run.strategy!r} owns its retry loop, and the host policy has "
            "recover_errors=False (the first failed attempt fails the request)"
        )
    return None


def evaluate(runner: StrategyRun) -> None:
    """Evaluate ``runner``'s whole run column-wise; raises NeedsEvents (before recording anything,
    but for a request the plan sends the exact way that finds it needs events: the run is then
    built again on the event engines) if it cannot."""
    why = refusal(runner)
    if why is not None:
        raise NeedsEvents(why)
    _Bulk(runner, fixed_chain(runner.fn), retry_router(runner.fn)).evaluate()


class _Bulk:
    """One run evaluated in bulk (see the module docstring)."""

    def __init__(
        self,
        runner: StrategyRun,
        chain: tuple[str, ...] | None,
        router: tuple[OwnsRetries, tuple[str, ...]] | None = None,
    ) -> None:
        self.runner = runner
        self.run = runner.run
        self.fn = runner.fn
        self.items = runner.items
        self.arrivals = runner.arrivals
        self.concurrency = runner.concurrency
        # a router that owns its retry loop: every request follows its path, one call an attempt
        self.router = router
        self.chain = chain if router is None else router[1]

    def evaluate(self) -> None:
        runner = self.runner
        run = self.run
        engine = run.engine
        assert isinstance(engine, BulkEngine)
        session = run.host.open(run.seed)
        if not isinstance(session, _SimSession):
            raise NeedsEvents("its host is not sykit's SimHost")
        run.open(session, TruthTable(self.items, run.profiles, run.seed))
        run.cooling_until = _Watched()
        engine.start_clock()
        routes, chains, outcomes, states = self._route_all(engine)
        self._check_profiles(chains)
        n = len(self.items)
        # a model twice in one chain: its attempts count on; such requests go the exact way
        repeated = np.asarray([len(set(chain)) < len(chain) for chain in chains])
        # a cooldown is read by a call with fallbacks; a router's own calls have none
        cooling_matters = (
            run.policy.cooldown_s > 0 and self.router is None and any(len(c) > 1 for c in chains)
        )
        clock = _Slots(self.arrivals, self.concurrency, n)
        # A block of requests at a time, start to records: what a run holds beyond its records
        # stays the size of a block, however many requests it has.
        items = self.items
        hold = getattr(items, "hold", None)  # a dataset's items: keep a block's requests built
        if callable(hold):
            hold(_BLOCK)
        # the host's candidate loop, or a router's own retry loop along its path
        plan = (
            run_waves if self.router is None else partial(run_litellm_waves, router=self.router[0])
        )
        for low in range(0, n, _BLOCK):
            high = min(n, low + _BLOCK)
            block_routes = routes[low:high]
            routed = None if outcomes is None else [o.request for o in outcomes[low:high]]
            columns = (
                _own_columns(items, low, high)
                if routed is None
                else Columns.of(items[low:high], high - low, routed)  # type: ignore[arg-type]  # a static router's: never None, see _route_all
            )
            todo = np.arange(high - low)
            if repeated.any():
                todo = todo[~repeated[block_routes]]
            try:
                waves = plan(
                    columns,
                    block_routes,
                    chains,
                    todo,
                    run.profiles,
                    run.model_codes,
                    run.policy,
                    run.seed,
                    session,
                )
            except NotSimple as why:
                raise NeedsEvents(str(why)) from None
            if repeated.any():
                waves.slow[~np.isin(np.arange(high - low), todo)] = True
            self._place_and_record(
                low, waves, columns, block_routes, chains, outcomes, states, cooling_matters, clock
            )
            runner.started = runner.finished = high
            if runner.progress is not None:
                runner.progress.update(high - low)
        engine.time = clock.last_end

    def _route_all(
        self, engine: BulkEngine
    ) -> tuple[np.ndarray, list[tuple[str, ...]], list[Outcome] | None, dict[int, RequestState]]:
        """Each request's chain (as an index into the distinct chains), the outcomes of a static
        router (None for a fixed chain) and the states of requests whose routing left evidence."""
        n = len(self.items)
        if self.chain is not None:
            return np.zeros(n, dtype=np.int64), [self.chain], None, {}
        route_many = getattr(self.fn, "route_many", None)
        route = getattr(self.fn, "route", None)
        if callable(route_many) or callable(route):
            engine.routing = True
            try:
                if callable(route_many):
                    return self._route_many(route_many)
                assert route is not None
                return self._route_by(route)
            finally:
                engine.routing = False
        run = self.run
        routes = np.empty(n, dtype=np.int64)
        chains: dict[tuple[str, ...], int] = {}
        outcomes: list[Outcome] = []
        states: dict[int, RequestState] = {}
        engine.routing = True
        try:
            for index, (request_id, request, _) in enumerate(self.items):
                state = RequestState(run, index, request, request_id, math.nan)
                outcome = _route_statically(self.fn, state)
                if _outcome_error(outcome, run) is not None or outcome.request is None:
                    raise NeedsEvents(
                        f"request {request_id!r} got an outcome that cannot be served (the event "
                        "engines record why)"
                    )
                routes[index] = chains.setdefault(outcome.models, len(chains))
                outcomes.append(outcome)
                if state.evidence or state.reads_truth:
                    states[index] = state
        finally:
            engine.routing = False
        return routes, list(chains), outcomes, states

    def _route_by(
        self, route: Route
    ) -> tuple[np.ndarray, list[tuple[str, ...]], None, dict[int, Any]]:
        """:meth:`_route_all` for a static router that carries its routing as a plain function
        (:func:`~sykit._run.static.routed_by`): called per request, without a driver or a
        coroutine; the requests are served as given (no outcome of theirs to keep)."""
        run = self.run
        routes: list[int] = []
        chains: dict[tuple[str, ...], int] = {}
        states: dict[int, Any] = {}
        seed = run.seed
        reader = _TruthReader(run.truth_view)
        truth = reader.truth
        for index, (request_id, request, _) in enumerate(self.items):
            if request.id is None:  # as its algorithm would see it: with the run's id
                request = request._with_id(request_id)
            reader.index = index
            reader.reads_truth = False
            try:
                chain, evidence = route(request, request_id, seed, truth)
            except (NeedsEvents, KeyboardInterrupt):
                raise
            except BaseException as error:
                raise _failed_routing(error, f"request {request_id!r}") from None
            at = chains.get(chain)
            if at is None:  # a chain first seen: checked as the algorithm's route_to checks it
                _check_chain(chain, request, f"request {request_id!r}")
                at = chains[chain] = len(chains)
            routes.append(at)
            if evidence or reader.reads_truth:
                states[index] = _Routed(evidence or None, reader.reads_truth)
        return np.asarray(routes, dtype=np.int64), list(chains), None, states

    def _route_many(
        self, route_many: RouteMany
    ) -> tuple[np.ndarray, list[tuple[str, ...]], None, dict[int, Any]]:
        """:meth:`_route_by` for a static router that routes every request at once
        (``algorithm.route_many``, given a :class:`~sykit._run.static.RoutingBatch`)."""
        run = self.run
        items = self.items
        ids = [item[0] for item in items]
        requests = [
            request if request.id is not None else request._with_id(request_id)
            for request_id, request, _ in items
        ]
        read = False
        truth_grades = run.truth_grades
        everyone = np.arange(len(ids))

        def quality(model: str) -> np.ndarray:
            nonlocal read
            if truth_grades is None:  # (a simulated host's runs always have it)
                raise NeedsEvents("the run has no truth to read at once")
            read = True  # first: whoever reads the truth is marked
            return truth_grades(everyone, model)

        try:
            chosen, evidence = route_many(RoutingBatch(ids, requests, run.seed, quality))
        except (NeedsEvents, KeyboardInterrupt):
            raise
        except BaseException as error:
            raise _failed_routing(error, "the requests") from None
        if len(chosen) != len(ids) or (evidence is not None and len(evidence) != len(ids)):
            raise NeedsEvents("the algorithm's routing of the requests at once lost requests")
        chains: dict[tuple[str, ...], int] = {}
        for chain in dict.fromkeys(chosen):  # each chain first seen: checked as route_to checks it
            _check_chain(chain, requests[0], "the requests")
            chains[chain] = len(chains)
        routes = np.fromiter(map(chains.__getitem__, chosen), dtype=np.int64, count=len(chosen))
        givens = evidence if evidence is not None else [None] * len(ids)
        states = {
            i: _Routed(given or None, read) for i, given in enumerate(givens) if given or read
        }
        return routes, list(chains), None, states

    def _check_profiles(self, chains: list[tuple[str, ...]]) -> None:
        for model in sorted({m for chain in chains for m in chain}):
            profile = self.run.profiles.get(model)
            if profile is None:
                raise NeedsEvents(f"it names model {model!r}, which the host does not have")
            if profile.faults.scripted:
                raise NeedsEvents(
                    f"model {model!r} has scripted faults (outages, flapping or fail-first), "
                    "which depend on time and on other requests"
                )
            if profile.rate_limit is not None:
                raise NeedsEvents(f"model {model!r} has a rate limit shared by all requests")
            faults = profile.faults
            if (faults.retry_after_as == "date" and faults.retry_after_s is not None) or any(
                e.retry_after_as == "date" and e.retry_after_s is not None for e in faults.errors
            ):
                raise NeedsEvents(
                    f"model {model!r} sends Retry-After as an HTTP-date, which a reader of its "
                    "own clock measures from when the answer comes"
                )
            if profile.cache is not None:
                raise NeedsEvents(f"model {model!r} has a prompt cache shared across requests")
            if profile.capacity is not None:
                raise NeedsEvents(f"model {model!r} has a capacity shared by all requests")

    # -- placing requests in time, and their records ------------------------------------------------
    def _place_and_record(
        self,
        low: int,
        waves: Waves,
        columns: Columns,
        routes: np.ndarray,
        chains: list[tuple[str, ...]],
        outcomes: list[Outcome] | None,
        states: dict[int, RequestState],
        cooling_matters: bool,
        clock: _Slots,
    ) -> None:
        """Place the block of requests from position ``low`` in time and record them (``waves``,
        ``columns`` and ``routes`` are the block's: position 0 is request ``low``)."""
        run = self.run
        n = len(columns.ids)
        requests = waves.request
        first_all = np.searchsorted(requests, np.arange(n + 1))  # request i's: [i, i + 1)
        m = len(requests)
        arrivals = clock.arrivals
        feed = clock.feed
        heap = clock.heap
        timed_at = waves.timed >= 0
        # As Python numbers (the loop's fast form) for one block, written back as arrays.
        first = first_all[:n].tolist()
        count = np.diff(first_all).tolist()
        after = waves.after.tolist()
        backoff = waves.backoff.tolist()
        slow = waves.slow.tolist()
        # the requests with an attempt that ends at its deadline, timed as they are placed
        timed: list[int] = []
        has_timed: list[bool] | None = None
        # the requests of one planned attempt, nothing after it and nothing timed: the hot path
        plain = np.diff(first_all) == 1
        plain[plain] = np.isnan(waves.backoff[first_all[:n][plain]])
        plain &= ~waves.slow
        if timed_at.any():
            timed = waves.timed.tolist()
            with_timed = np.bincount(requests[timed_at], minlength=n).astype(bool)
            plain &= ~with_timed
            has_timed = with_timed.tolist()
        durations = waves.after[np.minimum(first_all[:n], m - 1)].tolist() if m else [0.0] * n
        switched: list[int] = []  # requests the placing sent the exact way after all
        starts = [0.0] * m
        ends = [0.0] * m
        block_arrival = [0.0] * n
        block_start = [0.0] * n
        block_end = [0.0] * n
        replace = heapq.heapreplace
        for i, alone in enumerate(plain.tolist()):
            if feed is None:
                start = heap[0]  # type: ignore[index]  # (a closed loop has its slots)
                arrival = start
            else:
                arrival = arrivals[low + i]  # type: ignore[index]
                start = feed[low + i]
                if heap is not None:
                    free = heap[0]
                    if free > start:
                        start = free
            if alone:  # its attempt's sum, written back with the others' below
                end = start + durations[i]
            else:
                k = low + i
                exact = slow[i]
                placed = None
                if not exact and has_timed is not None and has_timed[i]:
                    placed = self._place_timed(
                        waves,
                        columns,
                        first[i],
                        count[i],
                        start,
                        starts,
                        ends,
                        after,
                        backoff,
                        timed,
                    )
                    if placed is None:  # a late answer on time at this start: the exact way
                        switched.append(i)
                        exact = True
                if exact:
                    end = self._exact(k, arrival, start, chains[routes[i]], outcomes, states)
                    if cooling_matters and run.cooling_until.started:  # type: ignore[attr-defined]
                        raise NeedsEvents(
                            "a transient failure started a cooldown (HostPolicy.cooldown_s > 0) "
                            "that later requests' fallback chains would see"
                        )
                elif placed is not None:
                    end = placed
                else:  # _place_timed's sums without its settling
                    t = start
                    begin = first[i]
                    for j in range(begin, begin + count[i]):
                        starts[j] = t
                        t = t + after[j]
                        ends[j] = t
                        wait = backoff[j]
                        if wait == wait:  # not NaN: a retry follows
                            t = t + wait
                    end = t
            block_arrival[i] = arrival
            block_start[i] = start
            block_end[i] = end
            if heap is not None:
                replace(heap, end)  # the slot frees up at the request's end
        a_start, a_end = np.asarray(starts), np.asarray(ends)
        arrival_s, start_s = np.asarray(block_arrival), np.asarray(block_start)
        end_s = np.asarray(block_end)
        lone = first_all[:n][plain]  # the plain requests' attempts: start, start + after
        a_start[lone] = start_s[plain]
        a_end[lone] = start_s[plain] + waves.after[lone]
        if switched:  # their records are the exact way's: drop the planned attempts
            waves.slow[switched] = True
            keep = ~waves.slow[requests]
            waves = selected(waves, keep)
            a_start, a_end = a_start[keep], a_end[keep]
        if n:
            clock.last_end = max(clock.last_end, float(end_s.max()))
        self._record_simple(
            low, waves, columns, routes, chains, states, a_start, a_end, arrival_s, start_s, end_s
        )

    def _place_timed(
        self,
        waves: Waves,
        columns: Columns,
        begin: int,
        count: int,
        t: float,
        starts: list[float],
        ends: list[float],
        after: list[float],
        backoff: list[float],
        timed: list[int],
    ) -> float | None:
        """Place the attempts ``begin`` to ``begin + count`` of a request that starts at ``t``
        and has an attempt whose end or bill depends on its start (:class:`~._waves.Timed`), as
        the event engines settle it: at a deadline, ``start + timeout_s``, the reply comes
        ``deadline - start`` after the start; a broken stream ends at its break; an answer under
        way is billed for what it produced by its end. Return the request's end, or None when a
        late answer ends on time at this start after all (the rounding of the sums): the request
        then goes the exact way."""
        policy = self.run.policy
        timeout_s = policy.timeout_s
        for j in range(begin, begin + count):
            starts[j] = t
            x = timed[j]
            if x < 0:
                t = t + after[j]
            else:
                timing = waves.timings[x]
                if timing.after == timing.after:  # a broken stream: ends at its break
                    now = t + timing.after
                else:
                    deadline = t + timeout_s
                    if timing.accepted and not t + timing.total > deadline:
                        return None
                    now = t + (deadline - t)
                if timing.accepted:
                    self._bill_timed(waves, columns, j, timing, t, now)
                t = now
            ends[j] = t
            wait = backoff[j]
            if wait == wait:  # not NaN: a retry follows
                t = t + wait
        return t

    def _bill_timed(
        self, waves: Waves, columns: Columns, j: int, timing: Timed, start: float, now: float
    ) -> None:
        """Bill attempt ``j``, an answer under way that ended unserved at ``now`` (its deadline,
        or its stream's break), for the tokens it produced by then, as the event engines bill
        it (:func:`unserved_tokens`; a broken stream only once it produced a token)."""
        run = self.run
        generation = Generation()
        generation.plan(start + timing.ttft, timing.tokens_per_s, timing.planned)
        if timing.stall_s:
            generation.stall_after = timing.stall_after
            generation.stall_s = timing.stall_s
        if timing.after == timing.after and generation.tokens_at(now) <= 0:
            return  # a broken stream with nothing produced: nothing billed
        request = int(waves.request[j])
        tokens_in, tokens_out = unserved_tokens(
            run.policy.bill_cancelled, generation, int(columns.input_tokens[request]), now
        )
        cost = 0.0
        if tokens_in or tokens_out:
            model = run.log.models.values[int(waves.model[j])]
            cost = run.profiles[model].cost_usd(tokens_in, tokens_out)
        if waves.billed_input is None:
            waves.billed_input = waves.input_tokens(columns)
        waves.billed_input[j] = tokens_in
        waves.output_tokens[j] = tokens_out
        waves.cost[j] = cost

    def _exact(
        self,
        index: int,
        arrival: float,
        start: float,
        chain: tuple[str, ...],
        outcomes: list[Outcome] | None,
        states: dict[int, RequestState],
    ) -> float:
        """One request the exact way: the candidate loop of the event engines, on this clock."""
        run = self.run
        engine = run.engine
        assert isinstance(engine, BulkEngine)
        if self.router is not None:
            return self._exact_routing(index, arrival, start)
        request_id, request, _ = self.items[index]
        state = states.get(index)
        if type(state) is not RequestState:  # none yet, or what a plain routing left
            routed = state
            state = RequestState(run, index, request, request_id, arrival)
            if routed is not None:
                state.evidence = routed.evidence
                state.reads_truth = routed.reads_truth
        state.arrival_s = arrival
        state.start_s = start
        state.closed = True
        engine.time = start
        outcome = (
            outcomes[index] if outcomes is not None else Outcome(models=chain, request=request)
        )
        call_request = outcome.request if outcome.request is not None else request
        steps = serve_steps(run, state, call_request, chain, ANSWER, MODEL)
        response = None
        failure = None
        try:
            response = _on_clock(engine, steps, request_id)
        except ModelError as error:
            failure = failure_of(error)
        self.runner._record(state, outcome, response, failure, start)
        return engine.time

    def _record_simple(
        self,
        low: int,
        waves: Waves,
        request_columns: Columns,
        routes: np.ndarray,
        chains: list[tuple[str, ...]],
        states: dict[int, RequestState],
        a_start: np.ndarray,
        a_end: np.ndarray,
        arrival_s: np.ndarray,
        start_s: np.ndarray,
        end_s: np.ndarray,
    ) -> None:
        """The attempt rows and request rows of the block's requests the waves planned, written
        at once (the block starts at request ``low``)."""
        run = self.run
        log = run.log
        n = len(request_columns.ids)
        m = len(waves.request)
        ok = waves.ok
        errors = waves.errors
        failure_codes = np.asarray(
            [log.failure_code(e.kind, (e.message or "")[:300]) for e in errors] + [-1],
            dtype=np.int32,
        )
        http_codes = np.asarray([e.http_status or 0 for e in errors] + [200], dtype=np.int16)
        error = waves.error  # -1 (answered) picks the last entry of each table
        # a router's own calls (one an attempt, made while routing) or the host's one call
        routing = self.router is not None
        retried = np.zeros(m, dtype=bool) if routing else ~np.isnan(waves.backoff)
        log.extend(
            {
                "start_s": a_start,
                "end_s": a_end,
                "ttft_s": waves.ttft,
                "cost_usd": waves.cost,
                "request": waves.request + low,
                "failure": failure_codes[error],
                "input_tokens": waves.input_tokens(request_columns),
                "output_tokens": waves.output_tokens,
                "call": waves.call if waves.call is not None else np.zeros(m, dtype=np.int16),
                "race": np.full(m, -1, dtype=np.int16),
                "model": waves.model,
                "http_status": http_codes[error],
                "candidate_index": waves.candidate,
                "retry_index": waves.retry,
                "status": np.where(ok, _OK, _ERROR),
                "fallback_reason": waves.fallback,
                "cancel_cause": np.full(m, -1, dtype=np.int8),
                "phase": np.full(m, ROUTING if routing else ANSWER, dtype=np.int8),
                "kind": np.full(m, MODEL, dtype=np.int8),
                "retried": retried,
                "served": ok,
            }
        )

        # the request rows, in request order
        planned = np.flatnonzero(~waves.slow)
        requests = waves.request
        attempts = np.bincount(requests, minlength=n)[planned]
        moved = waves.fallback >= 0 if waves.moved is None else waves.moved
        fallbacks = np.bincount(requests[moved], minlength=n)[planned]
        retries = np.bincount(requests[retried], minlength=n)[planned]
        served_row = np.full(n, -1, dtype=np.int64)
        served_row[requests[ok]] = np.flatnonzero(ok)
        served_row = served_row[planned]
        answered = served_row >= 0
        at = np.where(answered, served_row, 0)
        model_codes = np.asarray([run.model_codes[c[0]] for c in chains], dtype=np.int32)
        served_cost = np.where(answered, waves.cost[at], 0.0)
        # every attempt's cost, in the order they were billed (a timed-out answer's too)
        cost = np.bincount(requests, weights=waves.cost, minlength=n)[planned]
        final_error = waves.failed[planned]
        request_log = run.requests
        kinds = np.asarray(
            [request_log.kinds.code(failure_of(e)[0]) for e in errors] + [-1], dtype=np.int16
        )
        messages = np.asarray(
            [request_log.messages.code(failure_of(e)[1]) for e in errors] + [-1], dtype=np.int32
        )
        start = start_s[planned]
        ttft = np.where(answered, (a_start[at] + waves.ttft[at]) - start, np.nan)
        columns = {
            "index": planned + low,
            "status": np.where(answered, 0, 1),
            "error_kind": kinds[final_error],
            "message": messages[final_error],
            # a router's outcome names the model that answered it (none when it failed)
            "selected": np.where(answered, waves.model[at], -1)
            if routing
            else model_codes[routes[planned]],
            "served": np.where(answered, waves.model[at], -1),
            "arrival": arrival_s[planned],
            "start": start,
            "end": end_s[planned],
            "ttft": ttft,
            "routing": (end_s[planned] - start) if routing else start - start,
            "n_attempts": attempts,
            "n_cancelled": np.zeros(len(planned)),
            "n_fallbacks": fallbacks,
            "n_retries": retries,
            "cost": cost + 0.0,
            "wasted": cost - served_cost,
            "routing_usd": np.zeros(len(planned)),
            "quality": np.full(len(planned), np.nan),
            "reads_truth": np.zeros(len(planned)),
        }
        extras: dict[int, dict[str, Any]] = {}
        base = len(request_log)
        truth_rows = run.note_truth is not None
        names = list(run.log.models.values)
        served_models = columns["served"].tolist()
        metadata = run.row_values is None and getattr(self.items, "has_metadata", True)
        if not (truth_rows or states or metadata):
            request_log.extend(columns, extras)  # nothing to add to any row: no request to read
            return
        if not metadata and (not truth_rows or run.note_grades is not None):
            # no request's own values to copy: the grades and the evidence, at once
            self._note_at_once(planned + low, base, served_models, states, columns, extras)
            request_log.extend(columns, extras)
            return
        for position, index in enumerate((planned + low).tolist()):
            request = self.items[index][1]
            state = states.get(index)
            evidence = state.evidence if state is not None else None
            if state is not None and state.reads_truth:
                columns["reads_truth"][position] = 1
            if request.metadata or evidence or truth_rows:
                code = served_models[position]
                extra = row_extra(
                    run,
                    index,
                    request.metadata,
                    evidence,
                    names[code] if code >= 0 else None,
                    base + position,
                )
                if extra:
                    extras[position] = extra
        request_log.extend(columns, extras)

    def _note_at_once(
        self,
        indices: np.ndarray,
        base: int,
        served: list[int],
        states: dict[int, Any],
        columns: dict[str, np.ndarray],
        extras: dict[int, dict[str, Any]],
    ) -> None:
        """What the rows of ``indices`` (about to be added from position ``base`` of the request
        log) hold beyond their columns, when no request's own values go into its row: each
        served answer noted for its grade, each routing's evidence and its reading of the truth
        (as :func:`~sykit._run.lifecycle.row_extra` gives them row by row)."""
        run = self.run
        if run.note_grades is not None:
            codes = np.asarray(served, dtype=np.int64)
            answered = np.flatnonzero(codes >= 0)
            run.note_grades(
                answered + base, indices[answered], codes[answered], run.log.models.values
            )
        if states:
            keys = np.fromiter(states, dtype=np.int64, count=len(states))
            at = np.searchsorted(indices, keys)
            found = at < len(indices)
            found[found] = indices[at[found]] == keys[found]  # (others went the exact way)
            named: dict[tuple[str, ...], tuple[str, ...]] = {}  # keys → their column names
            for key, position in zip(keys[found].tolist(), at[found].tolist(), strict=True):
                state = states[key]
                if state.reads_truth:
                    columns["reads_truth"][position] = 1
                evidence = state.evidence
                if evidence:
                    given = tuple(evidence)
                    names = named.get(given)
                    if names is None:
                        names = named[given] = tuple(f"evidence_{k}" for k in given)
                    extras[position] = dict(zip(names, evidence.values(), strict=True))

    def _exact_routing(self, index: int, arrival: float, start: float) -> float:
        """One request of a router that owns its retry loop, the exact way: the request's whole
        course, as the event engines run it (its algorithm, its calls and its sleeps), alone on
        this clock. Anything else it awaits raises NeedsEvents."""
        run = self.run
        engine = run.engine
        assert isinstance(engine, BulkEngine)
        request_id, request, _ = self.items[index]
        state = RequestState(run, index, request, request_id, arrival)
        state.start_s = start
        engine.time = start
        engine.exact = True
        try:
            _on_clock(engine, self.runner._route(state), request_id)  # it records the request
        finally:
            engine.exact = False
        return engine.time


def _on_clock(engine: BulkEngine, course: Any, request_id: Any) -> Any:
    """Run ``course`` (a candidate loop's steps, or a request's whole course) to its end on the
    bulk engine's clock, each sleep it yields moving the clock on; return what it returns. Any
    other trap raises NeedsEvents."""
    try:
        trap = course.send(None)
        while True:
            if type(trap) is not tuple or trap[0] != SLEEP:
                course.close()
                raise NeedsEvents(
                    f"request {request_id!r} awaited something other than its calls and sleeps"
                )
            engine.time = engine.time + trap[1]
            trap = course.send(None)
    except StopIteration as stop:
        return stop.value


class _Slots:
    """The run's clock across blocks: the closed loop's free slots (a heap of the times they
    free up), the arrivals and when the feeder reaches them, and the latest end so far."""

    def __init__(self, arrivals: list[float] | None, limit: int | None, n: int) -> None:
        self.arrivals = arrivals
        self.feed = None if arrivals is None else _feed_times(arrivals)
        self.heap: list[float] | None = None
        if arrivals is None:
            self.heap = [0.0] * min(n, limit if limit is not None else n)
        elif limit is not None:
            self.heap = [-math.inf] * min(n, limit)
        self.last_end = 0.0


def _own_columns(items: Any, low: int, high: int) -> Columns:
    """The columns of ``items[low:high]`` served as given: kept in the items' memo (a plan's
    runs share their items, a dataset's runs its memo) when the run is one block, else made
    each time (a larger run keeps no more than a block in memory)."""
    memo = getattr(items, "memo", None)
    if memo is None or low != 0 or high != len(items):
        return Columns.of(items[low:high], high - low)
    columns = memo.get("bulk columns")
    if columns is None:
        columns = Columns.of(items[low:high], high - low)
        for values in (*vars(columns).values(), *columns.known_output.values()):
            if isinstance(values, np.ndarray):
                values.setflags(write=False)  # shared by the runs: read, never written
        memo["bulk columns"] = columns
    return columns


class _Routed:
    """What routing one request by a plain function (:meth:`_Bulk._route_by`) leaves for its
    records: its evidence, and whether it read the truth."""

    __slots__ = ("evidence", "reads_truth")

    def __init__(self, evidence: dict[str, Any] | None, reads_truth: bool) -> None:
        self.evidence = evidence
        self.reads_truth = reads_truth


class _TruthReader:
    """The truth of the request being routed by a plain function: ``truth()`` gives its view and
    marks it as read (the run's ``truth_view`` marks a request's state so)."""

    __slots__ = ("_view", "index", "reads_truth")

    def __init__(self, view: Any) -> None:
        self._view = view
        self.index = 0
        self.reads_truth = False

    def truth(self) -> Any:
        return self._view(self)


class _Watched(dict[str, float]):
    """The run's cooldowns, remembering whether one ever started (a success ends it at once)."""

    started = False

    def __setitem__(self, model: str, until: float) -> None:
        self.started = True
        super().__setitem__(model, until)


def _feed_times(arrivals: list[float]) -> list[float]:
    """When the run's clock reaches each arrival: the feeder sleeps ``arrival - now`` from the
    previous arrival, as the event engines' feeder does (the sum may differ from the arrival in its
    last bit)."""
    now = 0.0
    out = []
    for arrival in arrivals:
        delay = arrival - now
        if delay > 0:
            now = now + delay
        out.append(now)
    return out


def _route_statically(fn: Any, state: RequestState) -> Any:
    """Run a static algorithm on one request: it must return its outcome without waiting."""
    pending = fn(state.request, Driver(state))
    if type(pending) is not CoroutineType:
        raise NeedsEvents("the algorithm did not return a coroutine")
    try:
        pending.send(None)
    except StopIteration as stop:
        return stop.value
    except (NeedsEvents, KeyboardInterrupt):
        raise
    except BaseException as error:
        raise _failed_routing(error, f"request {state.request_id!r}") from None
    pending.close()
    raise NeedsEvents(f"the algorithm awaited something while routing request {state.request_id!r}")


def _check_chain(chain: tuple[str, ...], request: Request, what: str) -> None:
    """Check ``chain`` as the algorithm's ``route_to`` would have: a chain it would refuse
    fails only its own requests, which the event engines record."""
    try:
        route_to(chain[0], request, chain[1:])
    except Exception as error:
        raise NeedsEvents(
            f"the routing of {what} cannot be served ({type(error).__name__}: {error}; the "
            "event engines record it)"
        ) from None


def _failed_routing(error: BaseException, what: str) -> NeedsEvents:
    """Why a run goes to the event engines when its algorithm raised ``error`` while routing
    ``what`` statically: they record the failure as it happens there."""
    return NeedsEvents(
        f"the algorithm raised {type(error).__name__} while routing {what} (the event engines "
        "record it)"
    )
