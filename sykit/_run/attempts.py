"""An attempt's row: turning a host reply into an attempt row, and pricing it.

The candidate loop (:mod:`.candidates`) and a stream (:mod:`.stream`) call in here as each attempt
ends: served (:func:`succeed`, which makes the Response), failed (:func:`reply_error` says what a
reply means, :func:`log_failure` records it), cancelled (:func:`cancel_attempt`) or skipped while
its target cools down (:func:`log_skip`). Every attempt is priced here, in one place
(:func:`bill`), and its cost added to its request's running totals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sykit._base.errors import ModelError
from sykit._base.vocab import CancelCause
from sykit._hosts.base import Attempt, Reply
from sykit._run.attempt_log import AttemptLog
from sykit._run.records import CAUSE_CODE, DECISION, MODEL
from sykit._world.billing import Generation, unserved_tokens
from sykit._world.classify import classify
from sykit._world.models import (
    DecisionRequest,
    DecisionResponse,
    Request,
    Response,
    make_response,
)

if TYPE_CHECKING:
    from sykit._run.state import RequestState, RunState

__all__ = [
    "MESSAGE_LIMIT",
    "bill",
    "bill_unserved",
    "cancel_attempt",
    "log_failure",
    "log_skip",
    "reply_error",
    "succeed",
]

#: An error message is recorded up to this many characters.
MESSAGE_LIMIT = 300
_CANCELLED_CODE = CAUSE_CODE[CancelCause.CANCELLED]


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
        log.set_service_start(row, run.queues.release(attempt, now))
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
    log.fail(row, now, error.kind, (error.message or "")[:MESSAGE_LIMIT], error.http_status)
    error._sykit_row = row


def succeed(
    run: RunState,
    state: RequestState,
    row: int,
    reply: Reply,
    model: str,
    kind: int,
    now: float,
    call: int,
    start: float,
) -> Response | DecisionResponse:
    """Record ``row`` (of call ``call``, started at ``start``) as served by ``reply`` now, bill
    it, and make what the caller gets."""
    log = run.log
    usage = reply.usage
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
        model,
    )
    if run.cooling_until:
        run.cooling_until.pop(model, None)
    if kind == DECISION:
        return DecisionResponse(reply.answers or {}, model, usage, call)
    latency = now - start
    response = make_response(model, reply.text, usage, reply.ttft_s, latency, call)
    state.answers[call] = response
    return response


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
    model: str | None = None,
) -> None:
    """The one place an attempt is priced: tokens at the model's prices (USD per 1M), the
    prompt-cache reads and writes among the input at the cache's, 1-hour writes at its 1-hour
    price (see ``sy.profiles.PromptCache``). ``model``: the row's, when the caller knows it."""
    log = run.log
    cost = 0.0
    if input_tokens or output_tokens:
        cost = run.profiles[log.model_of(row) if model is None else model].cost_usd(
            input_tokens, output_tokens, cached, written, written_1h
        )
        if kind == MODEL:
            state.model_cost += cost
        else:
            state.routing_cost += cost
    log.bill(row, input_tokens, output_tokens, cost, cached, written)
