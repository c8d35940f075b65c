"""The candidate loop behind every call: retries, fallbacks, cooldowns.

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
  (a ``skipped`` attempt) if another candidate remains;
* a model call's error that reaches the algorithm is noted, and a later call of the algorithm to
  another model records the switch as the loop records its own fallbacks (:mod:`.own_fallbacks`).

The loop is a generator that yields what it waits for — a sleep, or on a real host the exchange of
one attempt — and the run's engine drives it (:meth:`Engine.drive`), as does the fixed-chain fast
path from timer callbacks: one implementation for all. Each attempt's row is written, and priced,
by :mod:`.attempts`; the driver and streams only call in.

A call is work done *in the awaiting task*: when that task stops awaiting (cancelled by a race
helper, a timeout, a scope, or the runner after the algorithm returned), the host's work stops at
that instant and the attempt is recorded ``cancelled`` with its cause. Nothing is left to reply late.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from sykit._base.errors import ModelError
from sykit._base.vocab import CancelCause, ErrorKind
from sykit._hosts.base import Attempt, LiveStream, Reply
from sykit._run.attempts import (
    MESSAGE_LIMIT,
    bill_unserved,
    cancel_attempt,
    log_failure,
    log_skip,
    reply_error,
    succeed,
)
from sykit._run.engines.base import ALARM, OPEN, SEND, SLEEP
from sykit._run.own_fallbacks import note_failure, note_start
from sykit._run.records import CAUSE_CODE, MODEL, REASON_CODE
from sykit._world.classify import fallback_reason, is_retryable
from sykit._world.models import DecisionRequest, Request

if TYPE_CHECKING:
    from sykit._run.state import RequestState, RunState

__all__ = ["StreamHead", "serve_steps"]

_CANCELLED_CODE = CAUSE_CODE[CancelCause.CANCELLED]


def serve_steps(
    run: RunState,
    state: RequestState,
    request: Request | DecisionRequest,
    candidates: tuple[str, ...],
    phase: int,
    kind: int,
    stream: bool = False,
    retries: int | None = None,
    seen: int | None = None,
) -> Generator[Any, Any, Any]:
    """Make one call over ``candidates``: the generator returns a Response/DecisionResponse or
    raises a ModelError, and yields ``(SLEEP, seconds)`` or ``(SEND, attempt)`` to wait.
    ``retries`` replaces the policy's ``max_retries`` for this call (None: the policy's).
    ``seen``: how many failed calls the request had noted when this call was made (None: when it
    starts), which a model call may be the algorithm's own fallback from (:mod:`.own_fallbacks`).

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
            if kind == MODEL and state.open_failures:
                note_start(state, model_code, call, seen)  # the algorithm's own fallback?
            row = log.begin(
                index_in_run, call, phase, kind, model_code, index, retry, race_code, start
            )
            if kind == MODEL:
                state.call_rows[call] = row
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
                    if queues is not None and reply.alarm is not None:
                        # exact sharing: its end (or its first token) moves with its server's
                        # load until it comes
                        job = reply.alarm
                        if stream:  # until its first token, or its end without one
                            queues.stream(job)
                            while (due := queues.token_due(job, 0, clock())) is not None:
                                if due <= clock():
                                    attempt.first_token_at = due
                                    return StreamHead(row, attempt, None, model, math.inf, job)
                                yield (ALARM, job)
                            reply, served = queues.ring(job, clock())
                        else:
                            while True:
                                yield (ALARM, job)
                                reply, served = queues.ring(job, clock())
                                if reply is not None:
                                    break
                        log.set_service_start(row, served)
                    elif (
                        stream
                        and reply.after_s > 0
                        and attempt.tokens_at(start + reply.after_s) > 0
                    ):
                        wait = attempt.first_token_at - start
                        if wait > 0:
                            yield (SLEEP, wait)
                        return StreamHead(row, attempt, reply, model, start + reply.after_s)
                    elif reply.after_s > 0:
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
                message = f"{type(exc).__name__}: {exc}"[:MESSAGE_LIMIT]
                log.fail(row, now, ErrorKind.HOST_ERROR, message, None)
                raise
            error = reply.error
            status = reply.status
            if error is None and status is not None and not 200 <= status < 300:
                error = reply_error(reply, model)
            now = clock()
            if error is None:
                return succeed(run, state, row, reply, model, kind, now, call, start)
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
        reason = fallback_reason(error) if index < last else None
        if not policy.allows_fallback(reason):
            if kind == MODEL:  # the caller gets the error: it may move on itself
                note_failure(state, model_code, row, error)
            raise error
        if reason is not None:
            log.set_fallback(row, REASON_CODE[reason])
            state.n_fallbacks += 1
    assert error is not None  # the last candidate is never skipped, so it ran and failed
    raise error


class StreamHead:
    """A streamed attempt at its first token: its row, and its planned reply (with when it ends)
    or, on a real host, its live stream (``end_s`` infinite: not known in advance), or at a
    simulated server that shares its rate exactly, its ``job`` (the reply None until it ends)."""

    __slots__ = ("attempt", "end_s", "job", "model", "reply", "row")

    def __init__(
        self,
        row: int,
        attempt: Attempt,
        reply: Reply | LiveStream | None,
        model: str,
        end_s: float,
        job: Any = None,
    ) -> None:
        self.row = row
        self.attempt = attempt
        self.reply = reply
        self.model = model
        self.end_s = end_s
        self.job = job
