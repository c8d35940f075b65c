"""Reference routing strategies, each a plain algorithm a user could have written in a cell.

Every factory returns an algorithm (an ``async def (request, driver) -> Outcome`` or an object with
``route`` and ``name``) that can go straight into ``sy.run`` / ``sy.compare``, and reads as an
example of the technique it names.

    sy.strategies.single("large")
    sy.strategies.weighted_random({"small": 0.7, "large": 0.3}, seed=0)
    sy.strategies.fallback_chain(["small", "large"])
    sy.strategies.cascade("small", "large", judge="judge")                  # FrugalGPT-style
    sy.strategies.threshold_router("small", "large", score=..., threshold=0.4)  # RouteLLM-style
    score = sy.strategies.simulated_score("small", "large")  # RouteLLM's MF router (simulation only)
    sy.strategies.calibrate(score, requests, 0.3)            # threshold sending 30 % to "large"
    sy.strategies.race(["small", "large"])                 # first completion wins
    sy.strategies.first_success(["small", "large"])        # first success wins
    sy.strategies.hedge("large", after=2.0)                # Tail-at-Scale hedged request
    sy.strategies.hedge("large", after="p95")              # hedge at the observed 95th percentile
    sy.strategies.hedge("large", after=2.0, max_in_flight=8)   # hedge only while the model is not busy
    sy.strategies.stream_race(["small", "large"])          # streamed: first token wins
    sy.strategies.hedge_first_token("large", after=1.0)    # streamed: hedge on time to first token
    sy.strategies.speculative("small", "large", judge="judge")   # judge races a speculative strong call
    sy.strategies.capability_aware(["small", "large"], vision={"large"})
    sy.strategies.litellm_like(["small", "medium", "large"])     # LiteLLM 1.110.2's Router rules
    sy.strategies.oracle(["small", "large"])               # the upper bound (simulation only)
    sy.strategies.cheapest_good_enough(["small", "large"]) # a perfect "good enough?" router (simulation only)

Two tools for writing your own: ``sy.strategies.static(lambda r: "large" if r.images else "small")``
declares a router whose choice is a pure function of the request (the bulk engine evaluates it
without an event loop), and ``sy.strategies.peek_truth(driver)``, inside an algorithm, reads the
request's ground truth on a SimHost (such a strategy is a bound, marked not realizable).

A strategy object with state across requests (``hedge(after="p95")``, ``litellm_like``) also has
``start_run()``, which the runner calls before every run so that runs stay independent.

May import: :mod:`sykit._base`, :mod:`sykit._world`, :mod:`sykit._run`, :mod:`sykit.sessions`.
"""

from __future__ import annotations

import bisect
import inspect
import math
import numbers
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from sykit._base.callables import binds
from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError, ModelError
from sykit._base.rng import first_uniform
from sykit._base.types import Algorithm
from sykit._base.vocab import CancelCause
from sykit._run.driver import Driver
from sykit._run.race import first, first_ok, start, wait_first
from sykit._run.race import hedge as _hedge
from sykit._run.race import timeout as _timeout
from sykit._run.static import RoutingBatch, routed_by, static
from sykit._run.strategy_kit import AFFINITY_TRIGGERS as AFFINITY_TRIGGERS
from sykit._run.strategy_kit import affinity, checked_models, named_algorithm
from sykit._run.stream import ModelStream
from sykit._world.models import (
    Boolean,
    DecisionRequest,
    Outcome,
    Request,
    answered,
    ask_good_enough,
    route_to,
)
from sykit._world.truth import graded, peek_truth
from sykit.sessions._agent.advisor import (
    advisor_gate,  # routers for agent sessions, after the seed system's
)
from sykit.sessions._agent.classifier import custom_classifier, task_classifier
from sykit.sessions._agent.stage import stage_router
from sykit.sessions._agent.subagent import subagent_router
from sykit.strategies._calibration import Threshold, calibrate
from sykit.strategies._litellm import LITELLM_VERSION as LITELLM_VERSION
from sykit.strategies._litellm_settings import litellm_like
from sykit.strategies._names import one_model, quality_threshold, seconds
from sykit.strategies._router_score import (
    SimulatedScore,
    score_of,
    score_value,
    score_values,
    simulated_score,
)

__all__ = [
    "SimulatedScore",
    "Threshold",
    "advisor_gate",
    "affinity",
    "calibrate",
    "capability_aware",
    "cascade",
    "cheapest_good_enough",
    "custom_classifier",
    "fallback_chain",
    "first_success",
    "hedge",
    "hedge_first_token",
    "litellm_like",
    "oracle",
    "peek_truth",
    "race",
    "simulated_score",
    "single",
    "speculative",
    "stage_router",
    "static",
    "stream_race",
    "subagent_router",
    "task_classifier",
    "threshold_router",
    "weighted_random",
]

_inv_cdf = NormalDist().inv_cdf


def _good(quality: float | None, threshold: float) -> bool | None:
    return quality >= threshold if graded(quality) else None


# -- one model, random, ordered --------------------------------------------------------------------


def single(model: str) -> Algorithm:
    """Send everything to ``model``."""
    model = one_model(model, "single()", "; to try several in order, use fallback_chain()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        return route_to(model, request)

    algorithm.__dict__["fixed_chain"] = (model,)  # the runner's fast path
    return named_algorithm(f"single({model})", algorithm)


def weighted_random(
    weights: Mapping[str, float] | Sequence[str], *, seed: int | None = None
) -> Algorithm:
    """Pick a model at random with the given relative weights (equal for a list); the others follow
    as fallbacks in the order given.

    The draw is keyed by the run's seed (``sy.run(..., seed=)``; each of ``sy.compare``'s
    ``seeds``) and the request id, so another seed routes the requests afresh, the same seed
    routes them the same way, and raising one weight only moves requests toward it. ``seed=``
    fixes the draws whatever the run's seed: a request then goes to the same model in every run.
    """
    if seed is not None:
        seed = check_int(
            seed, "weighted_random(seed=)", expected="an int or None", type_error=ArgumentError
        )
    if isinstance(weights, Mapping):
        checked_models(list(weights), "weighted_random()")
        items = [
            (m, check_real(w, f"weighted_random() weight of {m!r}", expected="a number ≥ 0"))
            for m, w in weights.items()
        ]
    else:
        items = [(m, 1.0) for m in checked_models(weights, "weighted_random()")]
    if (
        not items
        or any(not math.isfinite(w) or w < 0 for _, w in items)
        or sum(w for _, w in items) <= 0
    ):
        raise ArgumentError(f"weights must be finite, ≥ 0 and not all 0, got {weights!r}")
    total = sum(w for _, w in items)
    if math.isinf(total):  # huge weights: relative to the largest, so that the sum is finite
        top = max(w for _, w in items)
        items = [(m, w / top) for m, w in items]
        total = sum(w for _, w in items)
    names = [m for m, _ in items]
    edges = []
    running = 0.0
    for _, w in items:
        running += w / total
        edges.append(running)

    # each model's chain: it first, then the others in the order given
    chains = [(m, *(other for other in names if other != m)) for m in names]
    # the model a draw below each edge goes to: float edges can land on a zero weight, which
    # moves on to the next model with weight
    landing = []
    for drawn in range(len(items)):
        index = drawn
        while items[index][1] == 0:
            index = (index + 1) % len(items)
        landing.append(index)
    edge_array = np.asarray(edges, dtype=np.float64)

    def route(
        request: Request, request_id: Any, run_seed: int, truth: Any
    ) -> tuple[tuple[str, ...], None]:
        u = first_uniform(run_seed if seed is None else seed, request_id, "weighted_random")
        index = min(bisect.bisect_right(edges, u), len(edges) - 1)  # the first edge above u
        return chains[landing[index]], None

    def route_many(batch: RoutingBatch) -> tuple[list[tuple[str, ...]], None]:
        key = batch.seed if seed is None else seed
        u = np.fromiter(
            (first_uniform(key, rid, "weighted_random") for rid in batch.ids),
            dtype=np.float64,
            count=len(batch.ids),
        )
        index = np.minimum(np.searchsorted(edge_array, u, side="right"), len(edges) - 1)
        return [chains[landing[i]] for i in index.tolist()], None

    label = ",".join(f"{m}:{w / total:.2g}" for m, w in items)
    algorithm = routed_by(route)  # a pure function of the request: static
    algorithm.__dict__["route_many"] = route_many
    return named_algorithm(f"random({label})", algorithm)


def fallback_chain(models: Sequence[str]) -> Algorithm:
    """Route to ``models[0]``; the host's candidate loop falls back through the rest in order."""
    names = checked_models(models, "fallback_chain()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        return route_to(names[0], request, fallbacks=names[1:])

    algorithm.__dict__["fixed_chain"] = tuple(names)  # the runner's fast path
    return named_algorithm("fallback(" + ">".join(names) + ")", algorithm)


# -- judges and scores -------------------------------------------------------------------------------


def cascade(
    weak: str,
    strong: str,
    *,
    judge: str,
    threshold: float = 0.5,
    judge_timeout_s: float | None = None,
) -> Algorithm:
    """Answer with ``weak``; ask ``judge`` whether that answer is good enough; if not (or the judge
    fails or times out), route to ``strong`` with ``weak`` as fallback (FrugalGPT-style). How often
    a simulated judge errs is the host's ``sy.Judge(accuracy=...)``."""
    checked_models([weak, strong, judge], "cascade()")
    threshold = quality_threshold(threshold)
    if judge_timeout_s is not None:
        judge_timeout_s = seconds(judge_timeout_s, "judge_timeout_s")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        try:
            draft = await driver.call_model(request, [weak])
        except ModelError:
            return route_to(strong, request)
        question = ask_good_enough(request, draft, threshold=threshold)
        try:
            call = driver.call_decision(question, judge)
            verdict = await (call if judge_timeout_s is None else _timeout(judge_timeout_s, call))
        except ModelError:
            verdict = None
        if verdict is not None and verdict.yes("good_enough"):
            driver.evidence(verdict="accept")
            return answered(weak, draft)
        driver.evidence(verdict="escalate" if verdict is not None else "judge_unavailable")
        return route_to(strong, request, fallbacks=[weak])

    return named_algorithm(f"cascade({weak}>{strong})", algorithm)


def threshold_router(weak: str, strong: str, *, score: Any, threshold: float) -> Algorithm:
    """Route to ``strong`` when ``score`` is at least ``threshold``, else to ``weak`` (RouteLLM-style;
    the other model is the fallback). ``score`` is a function of the request (sync or async) or a
    :func:`simulated_score` (a stand-in for a trained router, at a published router's quality by
    default); pick ``threshold`` for a target share of strong calls with :func:`calibrate`, which
    also fits a simulated score to the traffic.

    A :class:`Threshold` from :func:`calibrate` also breaks ties: a request scoring exactly the
    threshold goes strong only when its seeded hash (keyed on ``driver.request_id``) is below the
    threshold's cut, so the calibrated share is hit exactly; ``evidence_tie_break`` says which
    way each tied request went. A plain number routes every tie to strong."""
    checked_models([weak, strong], "threshold_router()")
    _check_score(score)
    ties = threshold if isinstance(threshold, Threshold) and threshold.cut is not None else None
    threshold = check_real(threshold, "threshold", allow_inf=True, expected="a number, not NaN")

    to_strong, to_weak = (strong, weak), (weak, strong)

    def decide(value: float, request_id: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
        if value != value:  # NaN: no side of the threshold (it would go weak unseen)
            raise ArgumentError(
                f"the score is NaN for request {request_id!r}: a score must be a number the "
                "threshold can be compared with"
            )
        if ties is not None and value == threshold:
            goes_strong = ties.goes_strong(value, request_id)
            evidence = {
                "score": value,
                "threshold": threshold,
                "tie_break": "strong" if goes_strong else "weak",
            }
        else:
            goes_strong = value >= threshold
            evidence = {"score": value, "threshold": threshold}
        return (to_strong if goes_strong else to_weak), evidence

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        chain, evidence = decide(await score_of(score, request, driver), driver.request_id)
        driver.evidence(**evidence)
        return route_to(chain[0], request, fallbacks=chain[1:])

    algorithm.__dict__["static"] = True  # the score is a function of the request alone
    if isinstance(score, SimulatedScore) or not _is_async(score):
        # its routing as a plain function, for a run that routes every request at once (a
        # score that gives an awaitable after all sends the run to the event engines)

        def route(
            request: Request, request_id: Any, seed: int, truth: Any
        ) -> tuple[tuple[str, ...], dict[str, Any]]:
            return decide(score_value(score, request, request_id, truth), request_id)

        algorithm.__dict__["route"] = route

        def route_many(
            batch: RoutingBatch,
        ) -> tuple[list[tuple[str, ...]], list[dict[str, Any] | None]]:
            values = score_values(score, batch).tolist()
            chosen: list[tuple[str, ...]] = []
            evidence: list[dict[str, Any] | None] = []
            for value, request_id in zip(values, batch.ids, strict=True):
                chain, given = decide(value, request_id)
                chosen.append(chain)
                evidence.append(given)
            return chosen, evidence

        algorithm.__dict__["route_many"] = route_many
    return named_algorithm(f"threshold({weak}|{strong}@{threshold:.3g})", algorithm)


def _check_score(score: Any) -> None:
    """Refuse a score that is neither a simulated score nor callable with the request alone (a
    class, ``simulated_score`` itself, a function of two arguments), which would fail on every
    request of a run."""
    if isinstance(score, SimulatedScore):
        return
    if callable(score) and not isinstance(score, type) and binds(score, 1):
        return
    kind = "the class" if isinstance(score, type) else "the function"
    got = f"{kind} {getattr(score, '__name__', type(score).__name__)}" if callable(score) else ""
    raise ArgumentTypeError(
        "score must be a function of the request (score(request) -> number) or "
        "sy.strategies.simulated_score(weak, strong)"
        + (f"; got {got}, which cannot be called with the request alone" if got else "")
    )


def _is_async(fn: Any) -> bool:
    """Whether calling ``fn`` makes an awaitable (an ``async def``, or an object whose
    ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # the method, not whether it is callable
    )


def speculative(weak: str, strong: str, *, judge: str, threshold: float = 0.5) -> Algorithm:
    """Start the strong call and ask the judge whether the weak model is enough, both at once
    (Switchyard's "decision racing a speculative strong call"): if the judge says yes first, cancel
    the strong call and route to weak (strong as its fallback); if it says no, keep the strong
    call; if strong finishes first, cancel the judge."""
    checked_models([weak, strong, judge], "speculative()")
    threshold = quality_threshold(threshold)
    question = DecisionRequest(
        {
            "weak_is_enough": Boolean(
                f"Will {weak} answer this request well enough?",
                oracle=lambda view: _good(view.quality(weak), threshold),
            )
        }
    )

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        decision, strong_call = start(
            driver.call_decision(question, judge), driver.call_model(request, [strong])
        )
        await wait_first(decision, strong_call)
        if strong_call.done():  # the strong answer (or its failure) came first: the judge is moot
            await decision.cancel()
            if strong_call.exception() is None:
                driver.evidence(source="strong_first")
                return answered(strong, strong_call.result())
            driver.evidence(source="strong_failed")
            return route_to(weak, request)
        try:
            weak_is_enough = decision.result().yes("weak_is_enough")
        except ModelError:
            weak_is_enough = False
        if weak_is_enough:
            await strong_call.cancel()
            driver.evidence(source="judge_weak")
            return route_to(weak, request, fallbacks=[strong])
        driver.evidence(source="judge_strong")
        return answered(strong, await strong_call)

    return named_algorithm(f"speculative({weak}|{strong})", algorithm)


# -- racing -----------------------------------------------------------------------------------------


def race(models: Sequence[str]) -> Algorithm:
    """Call every model at once; serve the first to *complete*, cancel the rest (an error can win)."""
    names = checked_models(models, "race()", at_least=2)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        index, result = await first(*(driver.call_model(request, [m]) for m in names))
        if isinstance(result, BaseException):
            raise result
        return answered(names[index], result)

    return named_algorithm("race(" + ",".join(names) + ")", algorithm)


def first_success(models: Sequence[str]) -> Algorithm:
    """Call every model at once; serve the first *success*, cancel the rest."""
    names = checked_models(models, "first_success()", at_least=2)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        index, response = await first_ok(*(driver.call_model(request, [m]) for m in names))
        return answered(names[index], response)

    return named_algorithm("first_ok(" + ",".join(names) + ")", algorithm)


class _QuantileHedge:
    """Hedge after the observed ``q`` quantile of the model's own latency (Dean & Barroso)."""

    def __init__(
        self,
        model: str,
        q: float,
        copies: int,
        warmup: int,
        initial_after: float,
        max_in_flight: int | None = None,
    ) -> None:
        self.model = model
        self.q = q
        self.copies = copies
        self.warmup = max(warmup, 1)  # with no answer seen yet there is no quantile to take
        self.initial_after = initial_after
        self.max_in_flight = max_in_flight
        self.name = f"hedge({model},p{q * 100:g}{_limit_label(max_in_flight)})"
        self.start_run()

    def start_run(self) -> None:
        self.latencies: list[float] = []  # in order, kept sorted as they arrive

    def delay(self) -> float:
        ordered = self.latencies
        if len(ordered) < self.warmup:
            return self.initial_after
        return ordered[min(len(ordered) - 1, int(self.q * len(ordered)))]

    async def route(self, request: Request, driver: Driver) -> Outcome:
        after = self.delay()
        driver.evidence(hedge_after_s=after)
        response = await _hedged_call(
            request, driver, self.model, after, self.copies, self.max_in_flight
        )
        if response.latency_s is not None:
            bisect.insort(self.latencies, response.latency_s)
        return answered(self.model, response)


def hedge(
    model: str,
    *,
    after: float | str,
    copies: int = 2,
    warmup: int = 20,
    initial_after: float = 1.0,
    max_in_flight: int | None = None,
) -> Any:
    """Call ``model``; if it has not answered after ``after`` seconds, send another copy; serve
    whichever succeeds first and cancel the other (Dean & Barroso's hedged request).

    ``after`` may be a quantile such as ``"p95"``: the delay is then the 95th percentile of the
    latencies this strategy has observed so far in the run (``initial_after`` until ``warmup``
    answers have been seen). It observes the answers it serves, and hedging removes slow answers
    from those, so the delay settles somewhat below the model's true 95th percentile and slightly
    more than 5% of requests are hedged; for an exact share, measure the model alone and pass that
    delay in seconds.

    ``max_in_flight`` makes the hedge load-aware: a copy is sent only if it leaves at most that
    many of the run's calls to ``model`` in flight (``driver.in_flight``, this request's own
    included), so ``max_in_flight=2`` hedges only a request that has the model to itself. A copy
    held back is due again ``after`` seconds later; ``evidence_hedges_held_back`` counts them.
    On a model that slows down under load (``sy.Capacity``) a copy takes a slot and a share of
    the rate from the calls beside it; docs/capacity.md measures where that costs more than it
    saves.
    The count is the router's own, so the strategy can be deployed as it is.
    """
    model = one_model(model, "hedge()")
    copies = _copies(copies)
    if max_in_flight is not None:
        max_in_flight = check_int(
            max_in_flight,
            "max_in_flight",
            low=2,
            expected="an int ≥ 2 (the first call and its copy), or None",
        )
    if isinstance(after, str):
        text = after.strip().lower()
        if not (text.startswith("p") and text[1:].replace(".", "", 1).isdigit()):
            raise ArgumentError(f"after must be seconds or a quantile like 'p95', got {after!r}")
        q = float(text[1:]) / 100
        if not 0 < q < 1:
            raise ArgumentError(f"after quantile must be between p0 and p100, got {after!r}")
        warmup = check_int(warmup, "warmup", low=0)
        initial_after = seconds(initial_after, "initial_after")
        return _QuantileHedge(model, q, copies, warmup, initial_after, max_in_flight)
    if after is None or isinstance(after, bool) or not isinstance(after, numbers.Real):
        raise ArgumentTypeError(
            f"after must be seconds or a quantile like 'p95', got {type(after).__name__} "
            f"{after!r:.40}"
        )
    after = seconds(after, "after")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        response = await _hedged_call(request, driver, model, after, copies, max_in_flight)
        return answered(model, response)

    return named_algorithm(f"hedge({model},{after:g}s{_limit_label(max_in_flight)})", algorithm)


def _copies(copies: Any) -> int:
    """How many calls a hedge may have in all, checked once rather than on every request."""
    return check_int(copies, "copies", low=1, expected="an int ≥ 1 (1: never hedge)")


def _limit_label(max_in_flight: int | None) -> str:
    return "" if max_in_flight is None else f",≤{max_in_flight} in flight"


async def _hedged_call(
    request: Request,
    driver: Driver,
    model: str,
    after: float,
    copies: int,
    max_in_flight: int | None,
) -> Any:
    """``model``'s answer under a hedge; with ``max_in_flight``, each copy waits for room."""

    def call() -> Awaitable[Any]:
        return driver.call_model(request, [model])

    if max_in_flight is None:
        return await _hedge(call, after=after, copies=copies)
    held_back = 0

    def room() -> bool:
        nonlocal held_back
        if driver.in_flight(model) < max_in_flight:
            return True
        held_back += 1
        return False

    try:
        return await _hedge(call, after=after, copies=copies, only_if=room)
    finally:
        driver.evidence(hedges_held_back=held_back)


# -- streamed answers: the first token decides --------------------------------------------------


async def _first_token(stream: ModelStream) -> ModelStream:
    """Wait for the stream's first token (its errors before it are raised); the stream is then
    ready to be read on."""
    await stream.__anext__()
    return stream


async def _read_to_the_end(winner: ModelStream, opened: list[ModelStream]) -> Outcome:
    for stream in opened:
        if stream is not winner:
            await stream._aclose(CancelCause.LOST_RACE)  # its first token came at the same instant
    async for _ in winner:
        pass
    assert winner.model is not None and winner.response is not None
    return answered(winner.model, winner.response)


def stream_race(models: Sequence[str]) -> Algorithm:
    """Stream from every model at once; the first to produce a token wins and is read to the
    end, the others are cancelled at that instant (``lost_race``). A model that fails before its
    first token does not win; if all do, the last error is raised."""
    names = checked_models(models, "stream_race()", at_least=2)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        opened = [driver.stream_model(request, [m]) for m in names]
        _, winner = await first_ok(*(_first_token(s) for s in opened))
        return await _read_to_the_end(winner, opened)

    return named_algorithm("stream_race(" + ",".join(names) + ")", algorithm)


def hedge_first_token(
    model: str, *, after: float, backup: str | None = None, copies: int = 2
) -> Algorithm:
    """Stream from ``model``; if no token has come after ``after`` seconds, open another stream
    (to ``backup``, default the same model), up to ``copies`` in all. The first stream to produce
    a token is read to the end; the others are cancelled at that instant (``lost_race``). It
    trims the time-to-first-token tail for the price of the tokens the losers produced."""
    model = one_model(model, "hedge_first_token()")
    spare = model if backup is None else one_model(backup, "hedge_first_token(backup=...)")
    after = seconds(after, "after")
    copies = _copies(copies)
    label = f"hedge_first_token({model},{after:g}s" + (f",{spare})" if spare != model else ")")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        opened: list[ModelStream] = []

        def another() -> Awaitable[ModelStream]:
            stream = driver.stream_model(request, [model if not opened else spare])
            opened.append(stream)
            return _first_token(stream)

        winner = await _hedge(another, after=after, copies=copies)
        return await _read_to_the_end(winner, opened)

    return named_algorithm(label, algorithm)


# -- capabilities, a gateway baseline, the oracle --------------------------------------------------


def capability_aware(
    models: Sequence[str],
    *,
    vision: Collection[str],
    context_windows: Mapping[str, int] | None = None,
) -> Algorithm:
    """Send requests with images only to models in ``vision`` and, with ``context_windows``, only to
    models whose window holds input plus requested output; in ``models`` order, the rest as
    fallbacks. If nothing qualifies, try them all and let the host say why."""
    names = checked_models(models, "capability_aware()")
    vision_set = _vision_models(vision)
    windows = _context_windows(context_windows)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        needed = request.input_tokens + (request.max_output_tokens or 0)
        fit = [
            m
            for m in names
            if (not request.images or m in vision_set) and needed <= windows.get(m, math.inf)
        ]
        order = fit or names
        return route_to(order[0], request, fallbacks=order[1:])

    algorithm.__dict__["static"] = True
    return named_algorithm("capability_aware(" + ",".join(names) + ")", algorithm)


def _vision_models(vision: Any) -> set[str]:
    """The names in ``vision``: one name counts as one model, not as its letters."""
    if isinstance(vision, str):
        return {vision}
    names = list(vision) if isinstance(vision, Iterable) else None
    if names is None or not all(isinstance(m, str) for m in names):
        raise ArgumentTypeError(
            f"vision must be a collection of model names (an empty set for none), got {vision!r:.80}"
        )
    return set(names)


def _context_windows(windows: Any) -> dict[str, float]:
    """model -> tokens, each a number ≥ 0 (inf: no limit): a NaN or a string would fail, or
    never fit, on every request of a run."""
    if windows is None:
        return {}
    if not isinstance(windows, Mapping):
        raise ArgumentTypeError(
            f"context_windows must be a dict of model name -> tokens, got {windows!r:.80}"
        )
    return {
        model: check_real(
            tokens,
            f"context_windows[{model!r}]",
            low=0,
            allow_inf=True,
            expected="a number of tokens ≥ 0",
        )
        for model, tokens in windows.items()
    }


def _serve_in_order(ranked: list[str], request: Request, driver: Driver) -> Any:
    async def serve() -> Outcome:
        # It knows the answers, not the outages: on a failure it tries its next choice itself
        # (routing-phase calls are never skipped by a cooldown, unlike answer-phase fallbacks).
        last_error: ModelError | None = None
        for model in ranked:
            try:
                return answered(model, await driver.call_model(request, [model]))
            except ModelError as error:
                last_error = error
        assert last_error is not None
        raise last_error

    return serve()


def oracle(models: Sequence[str]) -> Algorithm:
    """The upper bound: per request, the model whose answer the dataset grades best (the cheapest
    among equals; ungraded answers last); if that call fails, the next in the same order.

    No strategy choosing among ``models`` can earn a higher grade on a request it serves, so on the
    same requests and faults the oracle's mean quality bounds every router's. It reads the ground
    truth (:func:`peek_truth`), so it runs only on a SimHost and is marked not realizable.
    """
    names = checked_models(models, "oracle()")

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        view = peek_truth(driver)
        qualities = {m: view.quality(m) for m in names}

        def rank(model: str) -> tuple[int, float, float]:
            quality = qualities[model]
            cost = view.expected_cost_usd(model, request.input_tokens, request.max_output_tokens)
            if graded(quality):
                return (0, -quality, cost)
            return (1, 0.0, cost)

        return await _serve_in_order(sorted(names, key=rank), request, driver)

    return named_algorithm("oracle(" + ",".join(names) + ")", algorithm)


def cheapest_good_enough(models: Sequence[str], *, threshold: float = 0.5) -> Algorithm:
    """Per request, the cheapest model whose answer the dataset grades at least ``threshold``; if
    none is, the best graded one (cheapest among equals); on a failure, the next in that order.

    What a perfect "is the cheap answer good enough?" router would do: cheaper than :func:`oracle`
    but not an upper bound on quality. It reads the ground truth, so it runs only on a SimHost and is
    marked not realizable.
    """
    names = checked_models(models, "cheapest_good_enough()")
    threshold = quality_threshold(threshold)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        view = peek_truth(driver)
        qualities = {m: view.quality(m) for m in names}

        def cost(model: str) -> float:
            return view.expected_cost_usd(model, request.input_tokens, request.max_output_tokens)

        good = sorted((m for m in names if _good(qualities[m], threshold)), key=cost)
        rest = sorted(
            (m for m in names if m not in good),
            key=lambda m: (
                0 if graded(qualities[m]) else 1,
                -(q if graded(q := qualities[m]) else 0.0),
                cost(m),
            ),
        )
        return await _serve_in_order(good + rest, request, driver)

    return named_algorithm(f"cheapest_good_enough({','.join(names)}@{threshold:g})", algorithm)
