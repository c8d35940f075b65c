"""The driver an algorithm talks to, and the candidate loop behind every call.

``Driver.call_model`` / ``call_decision`` make routing-phase calls; the runner makes the answer-phase
call for ``route_to`` outcomes. All of them go through :meth:`RunState.serve`:

* per target, retryable failures (408/429/5xx/transport/timeout) are retried up to
  ``policy.max_retries`` with Retry-After or exponential backoff, each retry its own attempt row;
* across candidates, an error falls back only for an allowed :class:`FallbackReason`, recorded on
  the failed row; any other error, and the last candidate's own error, is returned to the caller;
* a transient failure cools a target down for ``policy.cooldown_s``: while cooling it is skipped
  (a ``skipped`` row) if another candidate remains.

A call is work done *in the awaiting task*: when that task stops awaiting (cancelled by a race
helper, a timeout, a scope, or the runner after the algorithm returned), the host's work stops at
that instant and the attempt is recorded ``cancelled`` with its cause. Nothing is left to reply late.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._billing import Generation, unserved_tokens
from ._classify import classify, fallback_reason, is_retryable
from ._config import HostPolicy, ModelProfile
from ._context import CURRENT_RACE, cancel_with_cause, cause_of_current
from ._errors import (
    ArgumentError,
    ArgumentTypeError,
    ModelError,
    NoTargets,
    SykitError,
    UnknownModel,
)
from ._hosts.base import Attempt, Host, HostSession, Reply
from ._models import DecisionRequest, DecisionResponse, GroundTruth, Request, Response
from ._records import AttemptRow, RequestRow

__all__ = ["Driver", "RequestClosed", "RequestState", "RunState"]

_MESSAGE_LIMIT = 300


class RequestClosed(SykitError, RuntimeError):
    """A call was made through a driver whose request has already finished."""


class RunState:
    """Everything one run of one strategy shares: host session, policy, clock, records."""

    def __init__(
        self, *, host: Host, seed: int, strategy: str, strict: bool, clock: Callable[[], float]
    ) -> None:
        self.host = host
        self.policy: HostPolicy = host.policy
        self.profiles: Mapping[str, ModelProfile] = host.profiles
        self.seed = seed
        self.strategy = strategy
        self.strict = strict
        self.clock = clock
        self.session: HostSession | None = None
        self.rows: list[AttemptRow] = []
        self.request_rows: list[RequestRow] = []
        self.in_flight: set[RequestState] = set()
        self.cooling_until: dict[str, float] = {}
        self._call_ids = itertools.count()

    # -- checks -------------------------------------------------------------------------------
    def check_models(self, models: object, name: str) -> tuple[str, ...]:
        if type(models) is list or type(models) is tuple:  # the common case, without ABC checks
            names = tuple(models)
            if names and all(m in self.profiles for m in names):
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
        for model in names:
            if model not in self.profiles:
                raise UnknownModel(model, list(self.profiles), where=name)
        return names

    # -- the candidate loop --------------------------------------------------------------------
    async def serve(
        self,
        state: RequestState,
        request: Request | DecisionRequest,
        candidates: tuple[str, ...],
        phase: str,
        kind: str,
    ) -> Any:
        """Make one call over ``candidates``; return a Response/DecisionResponse or raise a ModelError."""
        policy = self.policy
        call_id = next(self._call_ids)
        race_id = CURRENT_RACE.get()
        last = len(candidates) - 1
        error: ModelError | None = None
        for index, model in enumerate(candidates):
            if index < last and policy.cooldown_s > 0 and self._cooling(model):
                self._skip(state, call_id, phase, kind, model, index, race_id)
                continue
            retry = 0
            while True:
                row = AttemptRow(
                    state.request_id,
                    call_id,
                    phase,
                    kind,
                    model,
                    index,
                    retry,
                    race_id,
                    self.clock(),
                )
                self.rows.append(row)
                state.rows.append(row)
                generation = Generation()
                reply = await self._attempt(state, row, request, model, kind, generation)
                error = reply.error
                if error is None and reply.status is not None:
                    error = classify(reply.status, reply.body, reply.headers, model=model)
                if error is None:
                    return self._succeed(row, reply, model, kind, call_id)
                self._fail(row, error, request, generation)
                if is_retryable(error) and policy.cooldown_s > 0:
                    self.cooling_until[model] = self.clock() + policy.cooldown_s
                if is_retryable(error) and retry < policy.max_retries:
                    row.retried = True
                    await asyncio.sleep(
                        policy.backoff_s(retry, getattr(error, "retry_after_s", None))
                    )
                    retry += 1
                    continue
                break
            assert error is not None
            if index == last:
                raise error
            reason = fallback_reason(error)
            if not policy.allows_fallback(reason):
                raise error
            row.fallback_reason = reason.value if reason is not None else None
        assert error is not None  # the last candidate is never skipped, so it ran and failed
        raise error

    def _cooling(self, model: str) -> bool:
        until = self.cooling_until.get(model)
        return until is not None and self.clock() < until

    def _skip(
        self,
        state: RequestState,
        call_id: int,
        phase: str,
        kind: str,
        model: str,
        index: int,
        race_id: int | None,
    ) -> None:
        now = self.clock()
        row = AttemptRow(state.request_id, call_id, phase, kind, model, index, 0, race_id, now)
        row.end_s = now
        row.status = "skipped"
        row.error_kind = "cooldown"
        row.error_message = (
            f"cooling down after a transient failure, until t={self.cooling_until[model]:g} s"
        )
        self.rows.append(row)
        state.rows.append(row)

    async def _attempt(
        self,
        state: RequestState,
        row: AttemptRow,
        request: Request | DecisionRequest,
        model: str,
        kind: str,
        generation: Generation,
    ) -> Reply:
        attempt = Attempt(
            request,
            model,
            kind,
            state.request_id,
            state.next_attempt_number(model),
            self.seed,
            row.start_s + self.policy.timeout_s,
            state.truth,
            row.start_s,
            generation,
        )
        assert self.session is not None
        try:
            return await self.session.send(attempt)
        except asyncio.CancelledError:
            now = self.clock()
            row.end_s = now
            row.status = "cancelled"
            row.cancel_cause = cause_of_current() or "cancelled"
            self._bill_unserved(row, request, generation, now)
            raise
        except BaseException as exc:
            row.end_s = self.clock()
            row.status = "error"
            row.error_kind = "host_error"
            row.error_message = f"{type(exc).__name__}: {exc}"[:_MESSAGE_LIMIT]
            raise

    def _succeed(
        self, row: AttemptRow, reply: Reply, model: str, kind: str, call_id: int
    ) -> Response | DecisionResponse:
        now = self.clock()
        usage = reply.usage
        row.end_s = now
        row.status = "ok"
        if reply.ttft_s is not None:
            row.ttft_s = reply.ttft_s
        self._bill(row, usage.input_tokens, usage.output_tokens)
        self.cooling_until.pop(model, None)
        latency = now - row.start_s
        if kind == "decision":
            return DecisionResponse(reply.answers or {}, model, usage, call_id)
        if reply.quality is not None:
            row.quality = reply.quality  # for the records only: the algorithm gets no grade
        return Response(model, reply.text, usage, reply.ttft_s, latency, call_id)

    def _fail(
        self,
        row: AttemptRow,
        error: ModelError,
        request: Request | DecisionRequest,
        generation: Generation,
    ) -> None:
        now = self.clock()
        row.end_s = now
        row.status = "error"
        row.error_kind = error.kind
        row.error_message = (error.message or "")[:_MESSAGE_LIMIT]
        row.http_status = error.http_status
        # A timeout stops an answer in flight, as a cancellation would; a broken answer had
        # produced tokens. Any other error was a rejection: nothing was generated, nothing billed.
        if error.kind == "timeout" or generation.tokens_at(now) > 0:
            self._bill_unserved(row, request, generation, now)

    def _bill_unserved(
        self,
        row: AttemptRow,
        request: Request | DecisionRequest,
        generation: Generation,
        now: float,
    ) -> None:
        tokens_in, tokens_out = unserved_tokens(
            self.policy.bill_cancelled, generation, request.input_tokens, now
        )
        self._bill(row, tokens_in, tokens_out)

    def _bill(self, row: AttemptRow, input_tokens: int, output_tokens: int) -> None:
        """The one place an attempt is priced: tokens at the model's prices (USD per 1M)."""
        row.input_tokens = input_tokens
        row.output_tokens = output_tokens
        row.cost_usd = self.profiles[row.model].cost_usd(input_tokens, output_tokens)


class RequestState:
    """One request in flight: its rows, its tasks, its evidence, how it ended."""

    __slots__ = (
        "_attempts_by_model",
        "_race_ids",
        "abort_error",
        "arrival_s",
        "closed",
        "evidence",
        "reads_truth",
        "request",
        "request_id",
        "root",
        "root_cancelled",
        "rows",
        "run",
        "start_s",
        "tasks",
        "truth",
    )

    def __init__(
        self,
        run: RunState,
        request: Request,
        request_id: Any,
        truth: GroundTruth | None,
        arrival_s: float,
    ) -> None:
        self.run = run
        self.request = request
        self.request_id = request_id
        self.truth = truth
        self.arrival_s = arrival_s
        self.start_s = math.nan
        self.rows: list[AttemptRow] = []
        self.tasks: set[asyncio.Task[Any]] = set()
        self.evidence: dict[str, Any] = {}
        self.abort_error: BaseException | None = None
        self.root: asyncio.Task[Any] | None = None
        self.root_cancelled = False
        self.closed = False
        self.reads_truth = False  # set by sy.peek_truth: the strategy is not realizable
        self._attempts_by_model: dict[str, int] = {}
        self._race_ids = itertools.count()

    def next_race_id(self) -> int:
        return next(self._race_ids)

    def next_attempt_number(self, model: str) -> int:
        n = self._attempts_by_model.get(model, 0)
        self._attempts_by_model[model] = n + 1
        return n

    def abort(self, error: BaseException) -> None:
        """Fail the whole request with ``error``: stop the algorithm wherever it is waiting."""
        if self.abort_error is None:
            self.abort_error = error
        root = self.root
        if root is not None and asyncio.current_task() is not root and not root.done():
            self.root_cancelled = True
            cancel_with_cause(root, "request_failed")
        raise asyncio.CancelledError

    async def close_leftovers(self, cause: str) -> None:
        """Cancel every task the algorithm left running, with ``cause``, and wait until they stop."""
        pending = [t for t in self.tasks if not t.done()]
        for task in pending:
            cancel_with_cause(task, cause)
        while pending:
            await asyncio.wait(pending)
            pending = [t for t in pending if not t.done()]
        for task in self.tasks:
            if not task.cancelled():
                task.exception()  # a leftover's error is reported by its call row, not as a warning
        self.tasks.clear()


class Driver:
    """What an algorithm uses to act: model calls, decision calls, the clock, evidence.

    One driver serves one request. Calls are coroutines: nothing happens until they are awaited,
    and they stop when no longer awaited.
    """

    __slots__ = ("_state",)

    def __init__(self, state: RequestState) -> None:
        self._state = state

    @property
    def models(self) -> tuple[str, ...]:
        """The names of the models the host serves."""
        return tuple(self._state.run.profiles)

    @property
    def request_id(self) -> Any:
        """The id of the request this driver serves."""
        return self._state.request_id

    def _check_open(self) -> RequestState:
        state = self._state
        if state.closed:
            raise RequestClosed(
                f"request {state.request_id!r} has finished; its driver can no longer make calls "
                "(did a task outlive the algorithm?)"
            )
        return state

    async def call_model(self, request: Request, models: Sequence[str] | str) -> Response:
        """Call a model in the routing phase; return its Response or raise a ModelError.

        Only the first of ``models`` is tried unless the host policy has ``routing_fallback=True``.
        With ``recover_errors=False`` a failure ends the request instead of raising here.
        """
        state = self._check_open()
        if not isinstance(request, Request):
            raise ArgumentTypeError(f"request must be a sy.Request, got {type(request).__name__}")
        run = state.run
        names = run.check_models(models, "call_model(models=...)")
        candidates = names if run.policy.routing_fallback else names[:1]
        try:
            return await run.serve(state, request, candidates, "routing", "model")  # type: ignore[no-any-return]
        except ModelError as error:
            if run.policy.recover_errors:
                raise
            state.abort(error)
            raise  # not reached: abort raises

    async def call_decision(self, request: DecisionRequest, model: str) -> DecisionResponse:
        """Ask ``model`` the questions of ``request``; return its answers or raise a ModelError.

        Decision errors always come back here, whatever ``recover_errors`` says.
        """
        state = self._check_open()
        if not isinstance(request, DecisionRequest):
            raise ArgumentTypeError(
                f"request must be a sy.DecisionRequest, got {type(request).__name__}"
            )
        if not isinstance(model, str):
            raise ArgumentTypeError(
                f"model must be one model name (str), got {type(model).__name__}"
            )
        run = state.run
        names = run.check_models(model, "call_decision(model=...)")
        return await run.serve(state, request, names, "routing", "decision")  # type: ignore[no-any-return]

    def now(self) -> float:
        """Seconds on the host clock since the run started (virtual time on a SimHost)."""
        return self._state.run.clock()

    async def sleep(self, seconds: float) -> None:
        """Wait on the host clock."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds >= 0:
            raise ArgumentError(f"seconds must be a number ≥ 0, got {seconds!r}")
        await asyncio.sleep(seconds)

    def evidence(self, **values: Any) -> None:
        """Attach evidence to this request's outcome; it appears as ``evidence_<key>`` columns."""
        self._state.evidence.update(values)
