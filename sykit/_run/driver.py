"""The driver an algorithm talks to: calls, decisions, streams, the clock, evidence.

What a call does (candidates, retries, fallback, cooldown, records) is the candidate loop of
:mod:`sykit._run.candidates`; the driver checks an algorithm's arguments and hands the call to it.

The limits a request puts on its algorithm live here too: its virtual-time horizon
(:data:`REQUEST_HORIZON_S`), and how many of the cancellations sent to stop it the algorithm may
swallow (:data:`SWALLOWED_CANCELLATIONS`) before it is abandoned (:func:`guarded`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Coroutine, Generator, Sequence
from typing import Any

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError, ModelError, SykitError
from sykit._base.vocab import CancelCause, Status
from sykit._run.attempts import log_skip
from sykit._run.engines.deadlock import unreported_ignored_exits
from sykit._run.records import DECISION, MODEL, REASON_CODE, ROUTING, STATUS_CODE
from sykit._run.state import RequestClosed, RequestState, closed_error
from sykit._run.stream import ModelStream
from sykit._world.classify import fallback_reason
from sykit._world.models import DecisionRequest, DecisionResponse, Request, Response

__all__ = [
    "REQUEST_HORIZON_S",
    "SWALLOWED_CANCELLATIONS",
    "Driver",
    "RequestClosed",
    "RequestHorizon",
    "SwallowedCancellation",
    "guarded",
]

#: The most virtual time one request's algorithm may take: a ``driver.sleep`` that would end later
#: than this after the request started, or any other wait of the algorithm (an ``asyncio.sleep``,
#: a timeout) that it begins later than this, fails the request (``error_kind="algorithm_error"``,
#: a :class:`RequestHorizon` naming it) instead of letting virtual time run on forever (an
#: algorithm that polls in a loop that never ends). One week; change it with
#: ``sykit._run.driver.REQUEST_HORIZON_S = ...`` before the run.
REQUEST_HORIZON_S = 7 * 24 * 3600.0

#: The most waits one request's algorithm may begin: its ``driver.sleep`` calls (in any of its
#: tasks), and the times its algorithm's own task waits (on anything). A loop that polls in tiny
#: steps would take hours of wall time to reach the horizon in virtual time; past this many
#: waits the request fails (:class:`RequestHorizon`, naming it) within a second. 100,000:
#: no algorithm that ends comes near it; change it with
#: ``sykit._run.driver.WAITS_PER_REQUEST = ...`` before the run.
WAITS_PER_REQUEST = 100_000

#: How many of the cancellations sent to stop a request (at its horizon, on a deadlock, when it
#: failed) its algorithm may swallow, catching the ``CancelledError`` and waiting again, before
#: it is abandoned and the request fails with :class:`SwallowedCancellation`. A few, so that
#: cleanup code that awaits once after a cancellation still runs.
SWALLOWED_CANCELLATIONS = 3

_MESSAGE_LIMIT = 300
_ERROR_CODE = STATUS_CODE[Status.ERROR]


async def _failing_the_request(state: RequestState, call: Awaitable[Any]) -> Any:
    """With ``recover_errors=False``: a routing-phase failure ends the request."""
    try:
        return await call
    except ModelError as error:
        state.abort(error)
        raise  # not reached: abort raises


class RequestHorizon(SykitError, RuntimeError):
    """A request's algorithm would have waited past its virtual-time horizon
    (:data:`REQUEST_HORIZON_S`): the request fails."""


class SwallowedCancellation(SykitError, RuntimeError):
    """A request's algorithm swallowed the cancellations sent to stop it
    (:data:`SWALLOWED_CANCELLATIONS` of them): it is abandoned and the request fails."""


def _past_horizon(state: RequestState, seconds: float) -> RequestHorizon | None:
    """Why a sleep of ``seconds`` now would take ``state``'s request past its horizon (None: it
    would not)."""
    horizon = REQUEST_HORIZON_S
    elapsed = state.run.clock() - state.start_s
    if not elapsed + seconds > horizon:  # (a start not known yet, NaN: no horizon)
        return None
    return RequestHorizon(
        f"request {state.request_id!r} would sleep past its virtual-time horizon: "
        f"driver.sleep({seconds:g}) after {elapsed:g} s would end beyond {horizon:g} s "
        "(sykit._run.driver.REQUEST_HORIZON_S) from its start; does the algorithm poll "
        "driver.sleep in a loop that never ends?"
    )


def _too_many_waits(state: RequestState, what: str) -> RequestHorizon:
    """The error of a request whose algorithm began more than :data:`WAITS_PER_REQUEST`
    waits (``what`` names them)."""
    return RequestHorizon(
        f"request {state.request_id!r} began more than {WAITS_PER_REQUEST:,} {what} "
        "(sykit._run.driver.WAITS_PER_REQUEST) without finishing; does the algorithm poll in a "
        "loop that never ends?"
    )


def _waits_past_horizon(state: RequestState, elapsed: float) -> RequestHorizon:
    """The error of a request whose algorithm waits again ``elapsed`` seconds after its start,
    past its horizon."""
    return RequestHorizon(
        f"request {state.request_id!r} waited again {elapsed:g} s after its start, past its "
        f"virtual-time horizon of {REQUEST_HORIZON_S:g} s (sykit._run.driver.REQUEST_HORIZON_S); "
        "does the algorithm wait (asyncio.sleep, a timeout) in a loop that never ends?"
    )


def task_wait_begins(state: RequestState | None) -> None:
    """On the virtual asyncio loop, a task begins a wait on a timer of asyncio's (an
    ``asyncio.sleep``, an ``asyncio.timeout``; sykit's own timers are not seen): the limits of
    its request, as the guard applies them to the algorithm's own task (which this leaves to
    it), for the tasks the algorithm started. Past them, the request fails and each such wait
    is cancelled on the next turn. ``state``: the request of the task that waits (None: no
    request's)."""
    if state is None or state.closed:
        return
    task = state.run.engine.current_task()
    if task is None or task is state.root:
        return
    state.task_waits += 1
    elapsed = state.run.clock() - state.start_s
    if elapsed > REQUEST_HORIZON_S:
        error = _waits_past_horizon(state, elapsed)
    elif state.task_waits > WAITS_PER_REQUEST:
        error = _too_many_waits(state, "waits in the tasks it started")
    else:
        return
    if state.abort_error is None:
        with contextlib.suppress(asyncio.CancelledError):  # abort raises it: sent below
            state.abort(error)
    _stop_soon(state, task)


def _stop_soon(state: RequestState, task: Any) -> None:
    """Cancel ``task`` of the stopped request ``state`` on the next turn (cause
    ``request_failed``), as sykit cancels a waiting task from outside: the same turns on every
    engine, and a cancellation the request's algorithm can be seen to swallow."""
    state.run.engine.call_soon(_cancel_while_open, state, task)


def _cancel_while_open(state: RequestState, task: Any) -> None:
    if state.closed or task is None or task.done():
        return  # the algorithm has ended meanwhile: nothing of it is left to stop
    if task is state.root:
        state.root_cancelled = True
    state.run.engine.cancel(task, CancelCause.REQUEST_FAILED)


class Driver:
    """What an algorithm uses to act: model calls, decision calls, the clock, evidence.

    One driver serves one request. Calls are coroutines: nothing happens until they are awaited,
    and they stop when no longer awaited.
    """

    __slots__ = ("_refused", "_state")

    def __init__(self, state: RequestState) -> None:
        self._state = state
        self._refused = 0  # sleeps past the horizon after the request was stopped

    @property
    def models(self) -> tuple[str, ...]:
        """The names of the models the host serves."""
        return tuple(self._state.run.profiles)

    @property
    def session_state(self) -> dict[str, Any] | None:
        """A dict sykit keeps for this request's agent session (:class:`sy.sessions.Session`):
        what the algorithm stored there on the session's earlier turns is there on its later ones
        (a latched model, tool-signal counts). ``{}`` on a session's first turn; None for a
        request that is not part of a session."""
        return self._state.session_state

    @property
    def seed(self) -> int:
        """The run's seed (``sy.run(..., seed=...)``), for an algorithm's own keyed draws
        (``sykit._base.rng.uniforms(driver.seed, driver.request_id, ...)``)."""
        return self._state.run.seed

    @property
    def request_id(self) -> Any:
        """The id of the request this driver serves."""
        return self._state.request_id

    def call_model(
        self,
        request: Request,
        models: Sequence[str] | str,
        *,
        max_retries: int | None = None,
    ) -> Awaitable[Response]:
        """Call a model in the routing phase: ``await`` it for the Response, or a ModelError.

        Only the first of ``models`` is tried unless the host policy has ``routing_fallback=True``.
        ``max_retries`` (0–10) replaces the host policy's retries per target for this call only:
        ``max_retries=0`` makes exactly one attempt per target, for an algorithm that owns its own
        retry loop. With ``recover_errors=False`` a failure ends the request instead of raising
        here. Nothing is sent until the call is awaited (or raced); a bad argument is reported at
        once.
        """
        state = self._state
        run = state.run
        candidates = self._candidates(request, models, "call_model(models=...)")
        if max_retries is not None:
            _check_max_retries(max_retries)
        call = run.serve(state, request, candidates, ROUTING, MODEL, max_retries)
        if not run.policy.recover_errors:
            return _failing_the_request(state, call)
        return call

    def stream_model(
        self,
        request: Request,
        models: Sequence[str] | str,
        *,
        max_retries: int | None = None,
    ) -> ModelStream:
        """A model call whose answer is read token by token: ``async for chunk in stream``, then
        ``stream.response``. Candidates, retries and fallback as for :meth:`call_model`, up to the
        first token; after it, an error ends the stream and is raised from the iteration. Leaving
        an ``async with`` block or calling ``aclose()`` early cancels the attempt, billed for
        the tokens produced so far. Nothing is sent until the first chunk is awaited.
        ``max_retries`` as for :meth:`call_model`."""
        candidates = self._candidates(request, models, "stream_model(models=...)")
        _check_max_retries(max_retries)
        return ModelStream(self._state, request, candidates, max_retries)

    def _candidates(self, request: object, models: object, where: str) -> tuple[str, ...]:
        """The checked candidates of a routing-phase model call (only the first one unless the
        policy has ``routing_fallback``); ``where`` names the argument in errors."""
        state = self._state
        if state.closed:
            raise closed_error(state)
        if type(request) is not Request and not isinstance(request, Request):
            raise ArgumentTypeError(f"request must be a sy.Request, got {type(request).__name__}")
        run = state.run
        names = run.check_models(models, where)
        return names if run.policy.routing_fallback else names[:1]

    def call_decision(self, request: DecisionRequest, model: str) -> Awaitable[DecisionResponse]:
        """Ask ``model`` the questions of ``request``: ``await`` it for the answers, or a
        ModelError. Decision errors always come back here, whatever ``recover_errors`` says."""
        state = self._state
        if state.closed:
            raise closed_error(state)
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
        return run.serve(state, request, names, ROUTING, DECISION)

    def now(self) -> float:
        """Seconds on the host clock since the run started (virtual time on a SimHost)."""
        return self._state.run.clock()

    async def sleep(self, seconds: float) -> None:
        """Wait on the host clock (a finite number of seconds ≥ 0).

        A sleep that would end more than ``REQUEST_HORIZON_S`` (one week) of virtual time after
        the request started fails the request instead (:class:`RequestHorizon`): a polling loop
        with no exit stops there, or at its :data:`WAITS_PER_REQUEST`-th sleep (100,000) when it
        polls in steps so small that a week of them would take hours of wall time. An algorithm that swallows that cancellation and sleeps again
        is cancelled again from outside, a few times (:data:`SWALLOWED_CANCELLATIONS`), then
        left waiting: the request abandons it (see :func:`guarded`)."""
        if type(seconds) is not float or not 0 <= seconds < math.inf:
            if seconds == math.inf:  # as the engines refuse a sleep of their own
                raise ArgumentError("cannot sleep forever (seconds=inf)")
            seconds = check_real(
                seconds,
                "seconds",
                low=0.0,
                expected="a finite number ≥ 0",
                type_error=ArgumentError,
            )
        state = self._state
        past = _past_horizon(state, seconds)
        state.sleeps += 1
        if state.sleeps > WAITS_PER_REQUEST and past is None:
            past = _too_many_waits(state, "driver.sleep calls")
        if past is None:
            await state.run.engine.sleep(seconds)
        elif state.abort_error is None:
            state.abort(past)  # raises CancelledError
        else:
            await self._refuse_sleep()

    async def _refuse_sleep(self) -> None:
        """A sleep past the horizon of a request already stopped: the algorithm swallowed the
        cancellation. Raised again here it could loop without ever waiting; so the task waits,
        and is cancelled from outside (a cancellation the request counts), until that too has
        been swallowed :data:`SWALLOWED_CANCELLATIONS` times: then it only waits, and the
        request (or, for a task it started, the request's end) stops it."""
        state = self._state
        engine = state.run.engine
        self._refused += 1
        if self._refused <= SWALLOWED_CANCELLATIONS:
            _stop_soon(state, engine.current_task())
        await engine.event().wait()

    def in_flight(self, model: str) -> int:
        """How many of this run's calls to ``model`` are in flight: started before this instant
        and not ended before it (model and decision calls, every request's, this one's included).

        A count the router keeps of its own traffic, as LiteLLM's least-busy routing does, so it
        means the same on any host: a load-aware algorithm that reads it can be deployed. It is
        not the provider's queue, which a router cannot see: other clients' calls are not in it,
        and a call in flight may be waiting for a slot or being served. On a simulated model with
        a ``sy.Capacity`` that serves only this run, it is the calls at its server.

        Calls that start at this very instant are not counted yet and calls that end at it still
        are, so the count does not depend on the order in which simultaneous events run: the
        engines give the same answer."""
        state = self._state
        if state.closed:
            raise closed_error(state)
        if not isinstance(model, str):
            raise ArgumentTypeError(f"model must be one model name (str), got {model!r:.60}")
        run = state.run
        name = run.check_models(model, "in_flight(model=...)")[0]
        return run.log.in_flight(run.model_codes[name], run.clock())

    def evidence(self, **values: Any) -> None:
        """Attach evidence to this request's outcome; it appears as ``evidence_<key>`` columns."""
        self._state.add_evidence(values)

    # -- for an algorithm that runs its own candidate loop ------------------------------------------
    def record_fallback(self, error: BaseException) -> None:
        """Say that the algorithm moves on to another target after ``error`` (raised by one of
        this request's calls), as the host's candidate loop does: the attempt that failed gets
        the error's ``fallback_reason`` (when the error is of a listed kind: context window,
        capability, unavailable, rate limit, policy) and the request's ``n_fallbacks`` grows by
        one. Only the log changes; the algorithm makes the next call itself. An error that no
        call of this request raised (one the algorithm made itself, or another request's) is
        refused: the log would count a fallback from an attempt that never failed."""
        state = self._state
        if state.closed:
            raise closed_error(state)
        if not isinstance(error, BaseException):
            raise ArgumentTypeError(f"error must be an exception, got {type(error).__name__}")
        log = state.run.log
        row = getattr(error, "_sykit_row", None)
        if row is None or log.request_of(row) != state.index:
            raise ArgumentError(
                f"record_fallback: {type(error).__name__} {str(error)!r:.80} was not raised by a "
                f"call of request {state.request_id!r}; pass the error a call of this request "
                "raised (driver.call_model, call_decision or a stream), or a skip's "
                "(record_skip(..., error=...))"
            )
        reason = fallback_reason(error)
        if reason is not None and log.status_of(row) == _ERROR_CODE:
            log.set_fallback(row, REASON_CODE[reason])
        state.n_fallbacks += 1

    def record_skip(
        self, request: Request, model: str, message: str, *, error: ModelError | None = None
    ) -> None:
        """Say that the algorithm passed over ``model`` for ``request`` without calling it (a
        target its own cooldown holds back): a ``skipped`` attempt row, ``error_kind``
        ``"cooldown"`` with ``message``, at this instant, as the host's candidate loop writes for
        a cooling candidate. ``error``: the error the algorithm makes of the skip (e.g. LiteLLM's
        "no deployments available"), which :meth:`record_fallback` then accepts as this row's."""
        state = self._state
        if state.closed:
            raise closed_error(state)
        if not isinstance(request, Request):
            raise ArgumentTypeError(f"request must be a sy.Request, got {type(request).__name__}")
        if not isinstance(message, str):
            raise ArgumentTypeError(f"message must be a str, got {type(message).__name__}")
        if not isinstance(model, str):
            raise ArgumentTypeError(f"model must be one model name (str), got {model!r:.60}")
        if error is not None and not isinstance(error, ModelError):
            raise ArgumentTypeError(f"error must be a sy.ModelError, got {type(error).__name__}")
        run = state.run
        name = run.check_models(model, "record_skip(model=...)")[0]
        race = run.engine.current_race()
        row = log_skip(
            run,
            state,
            state.next_call(),
            ROUTING,
            MODEL,
            run.model_codes[name],
            0,
            -1 if race is None else race,
            message[:_MESSAGE_LIMIT],
        )
        if error is not None:
            error._sykit_row = row


def _check_max_retries(max_retries: object) -> None:
    if max_retries is None:
        return
    check_int(max_retries, "max_retries", low=0, high=10, expected="in [0, 10]")


# -- the algorithm, as its request awaits it -----------------------------------------------------


def guarded(algorithm: Coroutine[Any, Any, Any], state: RequestState) -> Awaitable[Any]:
    """``algorithm`` (the coroutine of ``state``'s algorithm) as its request awaits it: see
    :class:`_Guarded`."""
    return _Guarded(algorithm, state)


class _Guarded:
    """A request's algorithm, awaited step by step as ``await`` would, so that the request still
    ends when the algorithm does not:

    * once the request is past its horizon, each wait the algorithm begins is cancelled on the
      next turn; the first fails the request (:class:`RequestHorizon`), as ``driver.sleep``
      does for a sleep that would end past it;
    * a cancellation the algorithm gets while its request is stopped (at its horizon, on a
      deadlock, after a failure) and answers by waiting again is swallowed; at the
      :data:`SWALLOWED_CANCELLATIONS`-th the algorithm is closed and left, and the request fails
      with :class:`SwallowedCancellation`.

    Each step costs a method call, no turn: the engines see the algorithm's own waits."""

    __slots__ = ("_clock", "_coro", "_horizon_end", "_state", "_swallowed", "_waits_left")

    def __init__(self, algorithm: Coroutine[Any, Any, Any], state: RequestState) -> None:
        self._coro: Coroutine[Any, Any, Any] | None = algorithm
        self._state = state
        self._clock = state.run.clock
        self._horizon_end = state.start_s + REQUEST_HORIZON_S
        self._swallowed = 0
        self._waits_left = WAITS_PER_REQUEST

    # -- what ``await`` asks of an iterator ------------------------------------------------------
    def __await__(self) -> Generator[Any, Any, Any]:
        return self  # an iterator with send, throw and close: what ``await`` drives

    def __iter__(self) -> _Guarded:
        return self

    def __next__(self) -> Any:  # send(None), as ``await`` sends most often, without the call
        trap = self._coro.send(None)  # type: ignore[union-attr]  # (None only once abandoned)
        self._waits_left -= 1
        if self._clock() > self._horizon_end or self._waits_left < 0:
            self._stop_at_horizon()
        return trap

    def send(self, value: Any) -> Any:
        trap = self._coro.send(value)  # type: ignore[union-attr]
        self._waits_left -= 1
        if self._clock() > self._horizon_end or self._waits_left < 0:
            self._stop_at_horizon()
        return trap

    def throw(self, error: Any, value: Any = None, traceback: Any = None) -> Any:
        coro = self._coro
        assert coro is not None
        if value is None and traceback is None:
            trap = coro.throw(error)
        else:  # the old three-argument form, as a caller may still use it
            trap = coro.throw(error, value, traceback)
        del coro  # (an abandoned coroutine must be held by nothing but the guard)
        state = self._state
        if state.abort_error is not None and _is_cancellation(error):
            self._swallowed += 1
            if self._swallowed >= SWALLOWED_CANCELLATIONS:
                self._abandon()
        else:
            self._waits_left -= 1
            if state.abort_error is None and (
                self._clock() > self._horizon_end or self._waits_left < 0
            ):
                self._stop_at_horizon()  # a loop that only wakes by cancellations (timeouts)
        return trap

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()

    @property
    def cr_await(self) -> Coroutine[Any, Any, Any] | None:
        """What waits inside (the algorithm), as a coroutine's ``cr_await`` says: where a
        deadlock's report looks for the user's line."""
        return self._coro

    # -- the limits ---------------------------------------------------------------------------------
    def _stop_at_horizon(self) -> None:
        """The algorithm begins a wait past the horizon: the first time, the request fails
        (its other tasks are cancelled now); each time, the wait is cancelled on the next turn."""
        state = self._state
        if state.abort_error is None:
            elapsed = self._clock() - state.start_s
            error = (
                _too_many_waits(state, "waits")
                if self._waits_left < 0 and not elapsed > REQUEST_HORIZON_S
                else _waits_past_horizon(state, elapsed)
            )
            with contextlib.suppress(asyncio.CancelledError):  # abort raises it: sent below
                state.abort(error)
        _stop_soon(state, state.root)

    def _abandon(self) -> None:
        """The algorithm swallowed one cancellation too many: close it, and end its part of the
        request with a cancellation its request reads as :class:`SwallowedCancellation`."""
        state = self._state
        reason = state.abort_error
        state.abort_error = SwallowedCancellation(
            f"request {state.request_id!r} swallowed the cancellation sent to stop it "
            f"{SWALLOWED_CANCELLATIONS} times (sykit._run.driver.SWALLOWED_CANCELLATIONS) and "
            f"was abandoned; it was stopped for {type(reason).__name__}: {reason}. Let "
            "asyncio.CancelledError propagate: catch Exception, not BaseException"
        )
        held = [self._coro]
        self._coro = None
        _close_abandoned(held)
        raise asyncio.CancelledError


def _is_cancellation(error: Any) -> bool:
    if isinstance(error, type):
        return issubclass(error, asyncio.CancelledError)
    return isinstance(error, asyncio.CancelledError)


def _close_abandoned(held: list[Any]) -> None:
    """Close the abandoned coroutine in ``held`` (its only reference): ``GeneratorExit`` where it
    waits. One that swallows that too cannot be ended: it is dropped suspended, without Python's
    reports that it (or a coroutine it awaits) ignored ``GeneratorExit``, made as each is freed,
    here: the request's row says what happened."""
    with unreported_ignored_exits():
        coro = held.pop()
        with contextlib.suppress(RuntimeError):
            coro.close()
        del coro
