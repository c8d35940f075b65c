"""A run's state: what one run of one strategy shares (:class:`RunState`) and what one request in
flight holds (:class:`RequestState`), with the run's bookkeeping of both.

The run's state holds the host session and its policy, the clock, the records and which targets
are cooling down; it checks the models a call names and hands each call to the candidate loop
(:mod:`.candidates`) on the run's engine. A request's state holds its position, its tasks, its
evidence and the running totals its request row is written from (no scan of the attempt log), and
numbers its calls and races.

The ground truth is nowhere in this graph of objects, which an algorithm can walk from its driver:
the run reaches it through closures :meth:`RunState.open` makes (see :mod:`sykit._world.truth`). A
simulated host plans each attempt with the request's truth handed beside the attempt; the grades
of the answers stay out of the records while the run goes and are written in when the records are
handed over (a spilling run) or framed, as are the dataset's analysis columns
(:mod:`.sealed_logs`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sykit._base.errors import (
    ArgumentTypeError,
    NoTargets,
    RecordLimit,
    SykitError,
    UnknownModel,
)
from sykit._base.vocab import CancelCause
from sykit._hosts.base import Attempt, Host, HostSession, Reply
from sykit._run.candidates import serve_steps
from sykit._run.engines.base import Engine
from sykit._run.records import PER_REQUEST_LIMIT
from sykit._run.request_log import RequestLog
from sykit._run.sealed_logs import (
    GradedAttemptLog,
    NoteGrades,
    NoteTruth,
    SealedRequestLog,
    SealedSpillingRequestLog,
    attempt_grader,
    request_sealer,
)
from sykit._run.spill import SpillingRequestLog
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.models import (
    CANDIDATE_LIMIT,
    DecisionRequest,
    Request,
    check_candidate_count,
)
from sykit._world.servers import Queues
from sykit._world.truth import TruthTable, TruthView

if TYPE_CHECKING:
    from sykit.datasets._items import RowValues

__all__ = ["RequestClosed", "RequestState", "RunState", "closed_error"]


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
        #: ``truth_grades(indices, model)``: the grades of many requests' answers from ``model``
        #: at once (NaN: none), for routing many requests at once (the caller marks them)
        self.truth_grades: Callable[[np.ndarray, str], np.ndarray] | None = None
        self.note_truth: NoteTruth | None = None
        #: the grades of many rows noted at once, when rows hold nothing else hidden
        self.note_grades: NoteGrades | None = None
        #: a dataset's metadata and analysis columns, which the request frame takes by column
        #: (None: each request's values go into its row; see Plan._runner)
        self.row_values: RowValues | None = None
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
        ``truth_view`` (what :func:`sykit.strategies.peek_truth` calls: it marks the request, then
        reads), and the records' fill-in, which writes the answers' grades and the dataset's
        analysis columns into the records when they are handed over or framed, not while the run
        goes."""
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

        def truth_grades(indices: np.ndarray, model: str) -> np.ndarray:
            return table.grades(indices, np.zeros(len(indices), dtype=np.int64), [model])

        self.truth_grades = truth_grades
        grades = self.plans and table.has_grades
        if grades:
            self.log.grade = attempt_grader(table)
        columns = table.has_columns and self.row_values is None
        if grades or columns:
            requests = self.requests
            if type(requests) is SpillingRequestLog:  # a spilling run's (Spill.attach): sealed too
                requests = SealedSpillingRequestLog(requests.log, requests.writer)
                self.requests = requests
            if not isinstance(requests, SealedRequestLog | SealedSpillingRequestLog):
                raise TypeError(f"unsealed request log {type(requests).__name__}")  # a bug
            self.note_truth, requests.fill, self.note_grades = request_sealer(
                table, grades, columns
            )

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
        """An awaitable call over ``candidates`` (sent when first awaited or raced), made now:
        failures noted later are not ones it moves on from (see :mod:`.own_fallbacks`)."""
        steps = serve_steps(
            self,
            state,
            request,
            candidates,
            phase,
            kind,
            retries=retries,
            seen=state.failures_noted,
        )
        return self.engine.drive(steps, self.session)

    def drive(self, steps: Generator[Any, Any, Any]) -> Any:
        """An awaitable that runs ``steps`` (a generator of traps) on this run's engine."""
        return self.engine.drive(steps, self.session)

    def cooling(self, model: str, now: float) -> bool:
        until = self.cooling_until.get(model)
        return until is not None and now < until


class RequestState:
    """One request in flight: its position, its tasks, its evidence, its running totals."""

    __slots__ = (
        "_calls",
        "_races",
        "abort_error",
        "answers",
        "arrival_s",
        "attempts_by_model",
        "call_rows",
        "closed",
        "evidence",
        "failures_noted",
        "index",
        "model_cost",
        "n_attempts",
        "n_cancelled",
        "n_fallbacks",
        "n_retries",
        "ok_rows",
        "open_failures",
        "reads_truth",
        "request",
        "request_id",
        "root",
        "root_cancelled",
        "routing_cost",
        "run",
        "session_state",
        "sleeps",
        "start_s",
        "streams",
        "succeeded",
        "task_waits",
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
        # the request as its algorithm sees it: one given without an id carries the run's
        self.request = request if request.id is not None else request._with_id(request_id)
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
        self.reads_truth = False  # set by sy.strategies.peek_truth: not a realizable strategy
        self.succeeded = False  # set when the request is recorded: it served an answer
        self.session_state: dict[str, Any] | None = None  # its session's, for driver.session_state
        self.attempts_by_model: dict[str, int] = {}  # attempts so far, per model (keys draws)
        self.ok_rows: dict[int, int] = {}  # the log row of each call that succeeded, by call id
        # the Response of each model call that succeeded, by call id: what sy.answered may serve
        self.answers: dict[int, Any] = {}
        # the latest attempt of each model call, by call id, and the failed model calls a switch
        # to another model would be a fallback from (see .own_fallbacks)
        self.call_rows: dict[int, int] = {}
        self.open_failures: dict[int, tuple[int, int, int]] | None = None
        self.failures_noted = 0
        # waits so far (see driver.WAITS_PER_REQUEST): driver.sleep calls, and the asyncio
        # timers of the tasks the algorithm started (on the asyncio engine)
        self.sleeps = self.task_waits = 0
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
