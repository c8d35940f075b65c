"""A run's state, the candidate loop behind every call, and the records it writes.

``Driver.call_model`` / ``call_decision`` / ``stream_model`` make routing-phase calls; the runner
makes the answer-phase call for ``route_to`` outcomes. All of them go through one candidate loop,
:func:`serve_steps`:

* per target, retryable failures (408/429/5xx/transport/timeout) are retried up to
  ``policy.max_retries`` with Retry-After or exponential backoff, each retry its own attempt;
* across candidates, an error falls back only for an allowed :class:`FallbackReason`, recorded on
  the failed attempt; any other error, and the last candidate's own error, is returned to the caller;
* a host that rephrases a call after a refusal of its phrasing (``Reply.resend``: a server without
  JSON-schema decisions) gets it sent again at once, once per target: its own attempt row with the
  same ``retry_index``, not a retry;
* a transient failure cools a target down for ``policy.cooldown_s``: while cooling it is skipped
  (a ``skipped`` attempt) if another candidate remains.

The ground truth is nowhere in this graph of objects, which an algorithm can walk from its driver:
the run reaches it through closures :meth:`RunState.open` makes (see :mod:`sykit._world.truth`). A
simulated host plans each attempt with the request's truth handed beside the attempt; the grades
of the answers stay out of the records while the run goes and are written in when the records are
handed over (a spilling run) or framed, as are the dataset's analysis columns.

The loop is a generator that yields what it waits for — a sleep, or on a real host the exchange of
one attempt — and the run's engine drives it (:meth:`Engine.drive`), as does the fixed-chain fast
path from timer callbacks: one implementation for all. Every attempt row is written, and priced
(:func:`bill`, the one place), here; the driver and streams only call in.

A call is work done *in the awaiting task*: when that task stops awaiting (cancelled by a race
helper, a timeout, a scope, or the runner after the algorithm returned), the host's work stops at
that instant and the attempt is recorded ``cancelled`` with its cause. Nothing is left to reply late.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sykit._base.errors import (
    ArgumentTypeError,
    ModelError,
    NoTargets,
    RecordLimit,
    SykitError,
    UnknownModel,
)
from sykit._base.vocab import CancelCause, ErrorKind, Kind, Phase, Status
from sykit._hosts.base import Attempt, Host, HostSession, LiveStream, Reply
from sykit._run.engines.base import OPEN, SEND, SLEEP, Engine
from sykit._run.records import (
    CAUSE_CODE,
    KIND_CODE,
    PER_REQUEST_LIMIT,
    PHASE_CODE,
    REASON_CODE,
    REQUEST_COLUMNS,
    STATUS_CODE,
    AttemptLog,
    Codes,
    RequestLog,
)
from sykit._run.spill import SpillingRequestLog
from sykit._world.billing import Generation, unserved_tokens
from sykit._world.capacity import Queues
from sykit._world.classify import classify, fallback_reason, is_retryable
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.models import (
    CANDIDATE_LIMIT,
    DecisionRequest,
    DecisionResponse,
    Request,
    Response,
    check_candidate_count,
    make_response,
)
from sykit._world.truth import TruthTable, TruthView

if TYPE_CHECKING:  # the sealing mixin is typed as the log it is mixed into
    _RequestLogBase = RequestLog
else:
    _RequestLogBase = object

__all__ = [
    "ANSWER",
    "DECISION",
    "MODEL",
    "RESERVED",
    "ROUTING",
    "RequestClosed",
    "RequestState",
    "RunState",
    "StreamHead",
    "bill_unserved",
    "cancel_attempt",
    "closed_error",
    "log_failure",
    "log_skip",
    "reply_error",
    "serve_steps",
    "succeed",
]

_MESSAGE_LIMIT = 300

ROUTING, ANSWER = PHASE_CODE[Phase.ROUTING], PHASE_CODE[Phase.ANSWER]
MODEL, DECISION = KIND_CODE[Kind.MODEL], KIND_CODE[Kind.DECISION]
_CANCELLED_CODE = CAUSE_CODE[CancelCause.CANCELLED]
_ERROR_CODE = STATUS_CODE[Status.ERROR]
_OK_CODE = STATUS_CODE[Status.OK]
#: Metadata and analysis-column keys that would clash with a column of ``result.requests``: they
#: get a ``meta_`` prefix.
RESERVED = frozenset((*REQUEST_COLUMNS, "seed"))


class RequestClosed(SykitError, RuntimeError):
    """A call was made through a driver whose request has already finished."""


class RunState:
    """Everything one run of one strategy shares: host session, policy, clock, records."""

    def __init__(
        self,
        *,
        host: Host,
        seed: int,
        strategy: str,
        strict: bool,
        engine: Engine,
    ) -> None:
        self.host = host
        self.policy: HostPolicy = host.policy
        self.profiles: Mapping[str, ModelProfile] = host.profiles
        self.seed = seed
        self.strategy = strategy
        self.strict = strict
        self.engine = engine
        self.clock: Callable[[], float] = engine.clock
        self.session: HostSession | None = None
        self.plans = False  # True when the session plans attempts (a simulated host)
        self.queues: Queues | None = None
        # Set by open(): closures over the run's ground truth (see its docstring).
        self.plan: Callable[[Attempt, int], Reply] | None = None
        self.truth_view: Callable[[RequestState], TruthView] | None = None
        self.note_truth: NoteTruth | None = None
        self.log = GradedAttemptLog(list(host.profiles))
        self.requests: RequestLog = SealedRequestLog(self.log.models)
        self.in_flight: dict[RequestState, None] = {}
        self.cooling_until: dict[str, float] = {}
        self.model_codes = dict(self.log.models.index)
        self.retry_limit = self.policy.max_retries

    def open(self, session: HostSession, table: TruthTable) -> None:
        """Start the run on ``session``, with its ground truth ``table``.

        The table is held by the closures made here, and by nothing an algorithm can walk to from
        its driver: ``plan`` (a simulated host's planning, handed the request's truth),
        ``truth_view`` (what :func:`sykit.peek_truth` calls: it marks the request, then reads), and
        the records' fill-in, which writes the answers' grades and the dataset's analysis columns
        into the records when they are handed over or framed, not while the run goes."""
        self.session = session
        # a simulated host's slots and queues, when a model declares a capacity (sykit._world.capacity)
        self.queues = getattr(session, "queues", None)
        if self.queues is not None:
            self.log.record_queues()
        session_plan = getattr(session, "plan", None)
        self.plans = callable(session_plan)
        if session_plan is not None and self.plans:
            planner: Callable[[Attempt, Any], Reply] = session_plan
            items = table.items

            def plan(attempt: Attempt, index: int) -> Reply:
                return planner(attempt, items[index][2])

            def plan_without_truth(attempt: Attempt, index: int) -> Reply:
                return planner(attempt, None)

            self.plan = plan if table.has_truth else plan_without_truth

        def truth_view(state: RequestState) -> TruthView:
            state.reads_truth = True  # first: whoever reads the truth is marked
            return table.view(state.index)

        self.truth_view = truth_view
        grades = self.plans and table.has_grades
        if grades:
            self.log.grade = _attempt_grader(table)
        if grades or table.has_columns:
            requests = self.requests
            if type(requests) is SpillingRequestLog:  # a spilling run's (Spill.attach): sealed too
                requests = SealedSpillingRequestLog(requests.log, requests.writer)
                self.requests = requests
            if not isinstance(requests, SealedRequestLog | SealedSpillingRequestLog):
                raise TypeError(f"unsealed request log {type(requests).__name__}")  # a bug
            self.note_truth, requests.fill = _request_sealer(table, grades)

    # -- checks -------------------------------------------------------------------------------
    def check_models(self, models: object, name: str) -> tuple[str, ...]:
        if type(models) is list or type(models) is tuple:  # the common case, without ABC checks
            names = tuple(models)
            codes = self.model_codes
            if len(names) == 1:
                if names[0] in codes:
                    return names
            elif names and len(names) <= CANDIDATE_LIMIT and all(m in codes for m in names):
                return names
        if isinstance(models, str):
            models = (models,)
        if not isinstance(models, Sequence):
            raise ArgumentTypeError(
                f"{name} must be a list of model names, got {type(models).__name__}"
            )
        names = tuple(models)
        if not names:
            raise NoTargets(f"{name} is empty: a call needs at least one model")
        check_candidate_count(len(names), name)
        for model in names:
            if model not in self.profiles:
                raise UnknownModel(model, list(self.profiles), where=name)
        return names

    # -- a call ------------------------------------------------------------------------------------
    def serve(
        self,
        state: RequestState,
        request: Request | DecisionRequest,
        candidates: tuple[str, ...],
        phase: int,
        kind: int,
        retries: int | None = None,
    ) -> Any:
        """An awaitable call over ``candidates`` (sent when first awaited or raced)."""
        steps = serve_steps(self, state, request, candidates, phase, kind, retries=retries)
        return self.engine.drive(steps, self.session)

    def drive(self, steps: Generator[Any, Any, Any]) -> Any:
        """An awaitable that runs ``steps`` (a generator of traps) on this run's engine."""
        return self.engine.drive(steps, self.session)

    def cooling(self, model: str, now: float) -> bool:
        until = self.cooling_until.get(model)
        return until is not None and now < until


def serve_steps(
    run: RunState,
    state: RequestState,
    request: Request | DecisionRequest,
    candidates: tuple[str, ...],
    phase: int,
    kind: int,
    stream: bool = False,
    retries: int | None = None,
) -> Generator[Any, Any, Any]:
    """Make one call over ``candidates``: the generator returns a Response/DecisionResponse or
    raises a ModelError, and yields ``(SLEEP, seconds)`` or ``(SEND, attempt)`` to wait.
    ``retries`` replaces the policy's ``max_retries`` for this call (None: the policy's).

    With ``stream``, an attempt whose answer produces tokens ends the loop at its first token:
    the generator returns a :class:`StreamHead` and the stream takes the attempt from there
    (failures before the first token are retried and fall back as for any call)."""
    policy = run.policy
    log = run.log
    clock = run.clock
    retry_limit = run.retry_limit if retries is None else retries
    call = state.next_call()
    plan = run.plan
    queues = run.queues
    race = run.engine.current_race()  # of the task that runs the call, known once it starts
    race_code = -1 if race is None else race
    index_in_run = state.index
    last = len(candidates) - 1
    error: ModelError | None = None
    for index, model in enumerate(candidates):
        model_code = run.model_codes[model]
        if index < last and policy.cooldown_s > 0 and run.cooling(model, clock()):
            log_skip(
                run,
                state,
                call,
                phase,
                kind,
                model_code,
                index,
                race_code,
                f"cooling down after a transient failure, until t={run.cooling_until[model]:g} s",
            )
            continue
        retry = 0
        resent = False
        while True:
            start = clock()
            row = log.begin(
                index_in_run, call, phase, kind, model_code, index, retry, race_code, start
            )
            state.n_attempts += 1
            tried = state.attempts_by_model
            n = tried.get(model, 0)
            tried[model] = n + 1
            attempt = Attempt(
                request,
                model,
                "model" if kind == MODEL else "decision",
                state.request_id,
                n,
                run.seed,
                start + policy.timeout_s,
                start,
            )
            try:
                if plan is not None:
                    reply = plan(attempt, index_in_run)
                    if queues is not None:
                        log.set_service_start(row, queues.service_start(attempt))
                    if (
                        stream
                        and reply.after_s > 0
                        and attempt.tokens_at(start + reply.after_s) > 0
                    ):
                        wait = attempt.first_token_at - start
                        if wait > 0:
                            yield (SLEEP, wait)
                        return StreamHead(row, attempt, reply, model, start + reply.after_s)
                    if reply.after_s > 0:
                        yield (SLEEP, reply.after_s)
                elif stream:
                    reply = yield (OPEN, attempt)
                    if not isinstance(reply, Reply):  # a live stream, at its first token
                        return StreamHead(row, attempt, reply, model, math.inf)
                else:
                    reply = yield (SEND, attempt)
            except asyncio.CancelledError:
                cause = run.engine.current_cause()
                cancel_attempt(run, state, row, kind, request, attempt, cause, attempt.seen_ttft_s)
                raise
            except BaseException as exc:
                now = clock()
                message = f"{type(exc).__name__}: {exc}"[:_MESSAGE_LIMIT]
                log.fail(row, now, ErrorKind.HOST_ERROR, message, None)
                raise
            error = reply_error(reply, model)
            now = clock()
            if error is None:
                return succeed(run, state, row, reply, model, kind, now)
            log_failure(log, row, now, error)
            if attempt.seen_ttft_s is not None:
                log.set_ttft(row, attempt.seen_ttft_s)
            # A timeout stops an answer in flight, as a cancellation would; a broken answer had
            # produced tokens. Any other error was a rejection: nothing generated, nothing billed.
            if error.kind == ErrorKind.TIMEOUT or attempt.tokens_at(now) > 0:
                bill_unserved(run, state, row, kind, request, attempt, now)
            if reply.resend and not resent:
                # Rephrased by the host: sent again at once, with the same retry_index.
                resent = True
                continue
            retryable = is_retryable(error)
            if retryable and policy.cooldown_s > 0:
                run.cooling_until[model] = now + policy.cooldown_s
            if retryable and retry < retry_limit:
                log.set_retried(row, True)
                state.n_retries += 1
                try:
                    yield (SLEEP, policy.backoff_s(retry, getattr(error, "retry_after_s", None)))
                except asyncio.CancelledError:
                    # Cancelled while waiting to retry: no retry followed. The failed attempt
                    # says so (its cancel_cause) instead of claiming a retry.
                    log.set_retried(row, False)
                    state.n_retries -= 1
                    cause = run.engine.current_cause()
                    code = _CANCELLED_CODE if cause is None else CAUSE_CODE[cause]
                    log.set_cause(row, code)
                    raise
                retry += 1
                continue
            break
        assert error is not None
        if index == last:
            raise error
        reason = fallback_reason(error)
        if not policy.allows_fallback(reason):
            raise error
        if reason is not None:
            log.set_fallback(row, REASON_CODE[reason])
            state.n_fallbacks += 1
    assert error is not None  # the last candidate is never skipped, so it ran and failed
    raise error


def reply_error(reply: Reply, model: str) -> ModelError | None:
    """The error a reply means: the host's own, or its non-2xx status classified; None if served."""
    error = reply.error
    status = reply.status
    if error is None and status is not None and not 200 <= status < 300:
        error = classify(status, reply.body, reply.headers, model=model)
    return error


def cancel_attempt(
    run: RunState,
    state: RequestState,
    row: int,
    kind: int,
    request: Request | DecisionRequest,
    attempt: Attempt,
    cause: CancelCause | None,
    ttft: float | None,
) -> None:
    """Record ``row`` as cancelled now with ``cause`` (and the first token's time, if one came),
    and bill it per the policy for what the provider had produced."""
    now = run.clock()
    log = run.log
    log.cancelled(row, now, _CANCELLED_CODE if cause is None else CAUSE_CODE[cause])
    if run.queues is not None:  # its slot, or its place in a queue, is free from now on
        run.queues.release(attempt, now)
    if ttft is not None:
        log.set_ttft(row, ttft)
    state.n_cancelled += 1
    bill_unserved(run, state, row, kind, request, attempt, now)


def log_skip(
    run: RunState,
    state: RequestState,
    call: int,
    phase: int,
    kind: int,
    model_code: int,
    candidate: int,
    race_code: int,
    message: str,
) -> int:
    """Record a ``skipped`` attempt at this instant (a target passed over without a call); return
    its row."""
    now = run.clock()
    row = run.log.begin(state.index, call, phase, kind, model_code, candidate, 0, race_code, now)
    run.log.skipped(row, now, message)
    return row


def log_failure(log: AttemptLog, row: int, now: float, error: ModelError) -> None:
    """Record ``row`` as ended by ``error`` at ``now``; the error remembers its row, so that an
    algorithm that moves on from it can say so (:meth:`Driver.record_fallback`)."""
    log.fail(row, now, error.kind, (error.message or "")[:_MESSAGE_LIMIT], error.http_status)
    error._sykit_row = row


class StreamHead:
    """A streamed attempt at its first token: its row, and its planned reply (with when it ends)
    or, on a real host, its live stream (``end_s`` infinite: not known in advance)."""

    __slots__ = ("attempt", "end_s", "model", "reply", "row")

    def __init__(
        self, row: int, attempt: Attempt, reply: Reply | LiveStream, model: str, end_s: float
    ) -> None:
        self.row = row
        self.attempt = attempt
        self.reply = reply
        self.model = model
        self.end_s = end_s


def succeed(
    run: RunState,
    state: RequestState,
    row: int,
    reply: Reply,
    model: str,
    kind: int,
    now: float,
) -> Response | DecisionResponse:
    log = run.log
    usage = reply.usage
    call = log.call_of(row)
    state.ok_rows[call] = row
    # the grade is read from the truth when the records are: the algorithm never sees one
    log.ok(row, now, reply.ttft_s, reply.status or 200)
    bill(
        run,
        state,
        row,
        kind,
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.cache_write_1h_tokens,
    )
    if run.cooling_until:
        run.cooling_until.pop(model, None)
    if kind == DECISION:
        return DecisionResponse(reply.answers or {}, model, usage, call)
    latency = now - log.start_of(row)
    return make_response(model, reply.text, usage, reply.ttft_s, latency, call)


def bill_unserved(
    run: RunState,
    state: RequestState,
    row: int,
    kind: int,
    request: Request | DecisionRequest,
    generation: Generation,
    now: float,
) -> None:
    tokens_in, tokens_out = unserved_tokens(
        run.policy.bill_cancelled, generation, request.input_tokens, now
    )
    bill(run, state, row, kind, tokens_in, tokens_out)


def bill(
    run: RunState,
    state: RequestState,
    row: int,
    kind: int,
    input_tokens: int,
    output_tokens: int,
    cached: int = 0,
    written: int = 0,
    written_1h: int = 0,
) -> None:
    """The one place an attempt is priced: tokens at the model's prices (USD per 1M), the
    prompt-cache reads and writes among the input at the cache's, 1-hour writes at its 1-hour
    price (see ``sy.PromptCache``)."""
    log = run.log
    cost = 0.0
    if input_tokens or output_tokens:
        cost = run.profiles[log.model_of(row)].cost_usd(
            input_tokens, output_tokens, cached, written, written_1h
        )
        if kind == MODEL:
            state.model_cost += cost
        else:
            state.routing_cost += cost
    log.bill(row, input_tokens, output_tokens, cost, cached, written)


class RequestState:
    """One request in flight: its position, its tasks, its evidence, its running totals."""

    __slots__ = (
        "_calls",
        "_races",
        "abort_error",
        "arrival_s",
        "attempts_by_model",
        "closed",
        "evidence",
        "index",
        "model_cost",
        "n_attempts",
        "n_cancelled",
        "n_fallbacks",
        "n_retries",
        "ok_rows",
        "reads_truth",
        "request",
        "request_id",
        "root",
        "root_cancelled",
        "routing_cost",
        "run",
        "session_state",
        "start_s",
        "streams",
        "succeeded",
        "tasks",
    )

    def __init__(
        self,
        run: RunState,
        index: int,
        request: Request,
        request_id: Any,
        arrival_s: float,
    ) -> None:
        self.run = run
        self.index = index  # the request's position in the run: its truth's key (never here)
        self.request = request
        self.request_id = request_id
        self.arrival_s = arrival_s
        self.start_s = math.nan
        self.tasks: list[Any] = []
        self.streams: list[Any] = []  # the ModelStreams it opened (closed when it ends)
        self.evidence: dict[str, Any] | None = None
        self.abort_error: BaseException | None = None
        self.root: Any = None
        self.root_cancelled = False
        self.closed = False
        self.reads_truth = False  # set by sy.peek_truth: the strategy is not realizable
        self.succeeded = False  # set when the request is recorded: it served an answer
        self.session_state: dict[str, Any] | None = None  # its session's, for driver.session_state
        self.attempts_by_model: dict[str, int] = {}  # attempts so far, per model (keys draws)
        self.ok_rows: dict[int, int] = {}  # the log row of each call that succeeded, by call id
        self._calls = 0
        self._races = 0
        self.n_attempts = self.n_cancelled = self.n_fallbacks = self.n_retries = 0
        self.model_cost = self.routing_cost = 0.0

    def next_race_id(self) -> int:
        race = self._races
        if race >= PER_REQUEST_LIMIT:
            raise self._past_limit("races")
        self._races = race + 1
        return race

    def next_call(self) -> int:
        call = self._calls
        if call >= PER_REQUEST_LIMIT:
            raise self._past_limit("calls")
        self._calls = call + 1
        return call

    def _past_limit(self, what: str) -> RecordLimit:
        return RecordLimit(
            f"request {self.request_id!r} made more than {PER_REQUEST_LIMIT:,} {what}: the "
            f"records number a request's {what} with 16-bit codes; split the work over requests "
            "(a session's turns, say)"
        )

    def abort(self, error: BaseException) -> None:
        """Fail the whole request with ``error``: stop the algorithm wherever it is waiting, and
        every task it started, now (so no race among them can first see this task's end as a
        result and record its losers as ``lost_race``)."""
        if self.abort_error is None:
            self.abort_error = error
        root = self.root
        engine = self.run.engine
        current = engine.current_task()
        engine.cancel_all([t for t in self.tasks if t is not current], CancelCause.REQUEST_FAILED)
        if root is not None and current is not root and not root.done():
            self.root_cancelled = True
            engine.cancel(root, CancelCause.REQUEST_FAILED)
        raise asyncio.CancelledError

    def add_evidence(self, values: Mapping[str, Any]) -> None:
        if self.evidence is None:
            self.evidence = {}
        self.evidence.update(values)


def closed_error(state: RequestState) -> RequestClosed:
    return RequestClosed(
        f"request {state.request_id!r} has finished; its driver can no longer make calls "
        "(did a task outlive the algorithm?)"
    )


# -- the records, sealed while the run goes -------------------------------------------------------

#: ``note_truth(position, index, model, head, tail)``: the truth-dependent parts of the request row
#: about to be added at ``position`` of the request log (see :func:`_request_sealer`).
NoteTruth = Callable[
    [int, int, str | None, dict[str, Any], dict[str, Any] | None], dict[str, Any] | None
]


class GradedAttemptLog(AttemptLog):
    """The attempt log of a run: the answers' grades are not held while the run goes; ``grade``
    (a closure over the run's truth, set by :meth:`RunState.open` on a simulated host) reads them
    when attempts are handed over (a spilling run, only attempts of finished requests) or read as
    raw columns (the frame, at the end)."""

    __slots__ = ("grade",)

    def __init__(self, models: Sequence[str]) -> None:
        super().__init__(models)
        self.grade: Callable[[AttemptLog, Mapping[str, np.ndarray]], np.ndarray] | None = None

    def grades(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        if self.grade is None:
            return super().grades(columns, n)
        return self.grade(self, columns)


class _Sealed(_RequestLogBase):
    """What makes a request log sealed: the served answer's grade and the dataset's analysis
    columns of a request reach it when rows are handed over or read as raw columns (``fill``, a
    closure over the run's truth set by :meth:`RunState.open`), not when the request ends."""

    __slots__ = ()
    fill: Callable[[RequestLog], None] | None

    def raw(self) -> dict[str, np.ndarray]:
        if self.fill is not None:
            self.fill(self)
        return super().raw()

    def hand_over(self) -> tuple[dict[str, np.ndarray], dict[int, dict[str, Any]]]:
        if self.fill is not None:
            self.fill(self)
        return super().hand_over()


class SealedRequestLog(_Sealed, RequestLog):
    """The request log of a run (see :class:`_Sealed`)."""

    __slots__ = ("fill",)

    def __init__(self, models: Codes) -> None:
        super().__init__(models)
        self.fill = None


class SealedSpillingRequestLog(_Sealed, SpillingRequestLog):
    """The request log of a spilling run, whose rows are handed over as it goes."""

    __slots__ = ("fill",)

    def __init__(self, log: AttemptLog, writer: Any) -> None:
        super().__init__(log, writer)
        self.fill = None


def _attempt_grader(
    table: TruthTable,
) -> Callable[[AttemptLog, Mapping[str, np.ndarray]], np.ndarray]:
    """Grades the answered model attempts among raw columns of a log, from ``table`` (as the
    simulated host would have graded them: the dataset's grade, or the profile's keyed draw)."""

    def grade(log: AttemptLog, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        quality = np.full(len(columns["request"]), math.nan)
        answered = np.flatnonzero((columns["status"] == _OK_CODE) & (columns["kind"] == MODEL))
        requests = columns["request"][answered].tolist()
        models = columns["model"][answered].tolist()
        names = log.models.values
        for row, index, code in zip(answered.tolist(), requests, models, strict=True):
            value = table.grade(index, names[code])
            if value is not None:
                quality[row] = value
        return quality

    return grade


def _request_sealer(
    table: TruthTable, grades: bool
) -> tuple[NoteTruth, Callable[[RequestLog], None]]:
    """``note`` and ``fill``, sharing the rows waiting for their truth-dependent parts.

    ``note(position, index, model, head, tail)`` comes just before a request's row is added at
    ``position`` of the log: ``model`` names the served answer to grade (None: no grade), ``head``
    the row's metadata values and ``tail`` its evidence. It returns the row's extra values when
    they hold nothing hidden (added with the row), else None: the analysis columns go between the
    metadata and the evidence when ``fill`` writes them. ``fill(log)`` writes what waits into the
    log's rows, before they are read or handed over."""
    waiting: list[tuple[int, int, str | None, Mapping[str, Any] | None, Any, Any]] = []
    has_columns = table.has_columns
    items = table.items

    def note(
        position: int,
        index: int,
        model: str | None,
        head: dict[str, Any],
        tail: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        columns = None
        if has_columns:
            truth = items[index][2]
            if truth is not None and truth.columns:
                columns = truth.columns
        if not grades:
            model = None
        if columns is None:
            if model is not None:
                waiting.append((position, index, model, None, None, None))
            if tail:
                head.update(tail)
            return head
        waiting.append((position, index, model, columns, head, tail))
        return None

    def fill(log: RequestLog) -> None:
        qualities = log.quality
        for position, index, model, columns, head, tail in waiting:
            if model is not None:
                quality = table.grade(index, model)
                if quality is not None:
                    qualities[position] = quality
            if columns is not None:
                extra = head
                for key, value in columns.items():
                    extra[key if key not in RESERVED else f"meta_{key}"] = value
                if tail:
                    extra.update(tail)
                log.extras[position] = extra
        waiting.clear()

    return note, fill
