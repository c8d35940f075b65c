"""Streamed model calls: an answer that arrives token by token, on any host.

``driver.stream_model(request, models)`` returns a :class:`ModelStream`. Iterating it sends the
call: the candidate loop runs as for ``call_model`` (retries, fallback, cooldown) until an
attempt produces its first token; from then on that attempt *is* the stream, and each
:class:`Chunk` arrives when the host produces it (in virtual time on a SimHost: the first token
after the time to first token, then one every ``1 / tokens_per_s`` s). When the stream ends,
``stream.response`` is the same Response ``call_model`` would have returned.

An error after the first token ends the stream: it is raised from the iteration and never
retried (the caller has seen part of an answer). Stopping early (``aclose()``, leaving an
``async with`` block, the awaiting task cancelled, the request ending) cancels the attempt at
that instant; it is billed per ``HostPolicy.bill_cancelled`` for the tokens produced so far.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from sykit._base.errors import ModelError
from sykit._base.vocab import CancelCause
from sykit._hosts.base import Reply
from sykit._run.attempts import (
    bill_unserved,
    cancel_attempt,
    log_failure,
    reply_error,
    succeed,
)
from sykit._run.candidates import StreamHead, serve_steps
from sykit._run.engines.base import ALARM, NEXT, SLEEP
from sykit._run.own_fallbacks import note_failure
from sykit._run.records import MODEL, ROUTING
from sykit._run.state import RequestState, closed_error
from sykit._world.models import Request, Response

__all__ = ["Chunk", "ModelStream"]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One token of a streamed answer: its position (0 for the first), its text (empty on a
    SimHost, whose answers are placeholders) and when it arrived on the host clock."""

    index: int
    text: str
    at_s: float


class ModelStream:
    """A model call whose answer is read token by token (see :meth:`sykit.Driver.stream_model`).

        async with driver.stream_model(request, ["fast"]) as stream:
            async for chunk in stream:
                ...                      # chunk.index, chunk.at_s
        return sy.answered(stream.model, stream.response)

    Nothing is sent until the first ``__anext__``. ``response`` is None until the stream has
    ended with a served answer; ``model`` names the model that streams once the first token came.
    """

    __slots__ = (
        "_candidates",
        "_ended",
        "_head",
        "_reading",
        "_request",
        "_response",
        "_retries",
        "_seen",
        "_sent",
        "_state",
    )

    def __init__(
        self,
        state: RequestState,
        request: Request,
        candidates: tuple[str, ...],
        retries: int | None = None,
    ) -> None:
        self._state = state
        self._request = request
        self._candidates = candidates
        self._retries = retries  # the policy's max_retries replaced for this call (None: kept)
        self._seen = state.failures_noted  # made now: see sykit._run.own_fallbacks
        self._head: StreamHead | None = None
        self._sent = 0
        self._response: Response | None = None
        self._ended = False
        self._reading = False  # an __anext__ is waiting: a stream has one reader at a time

    @property
    def response(self) -> Response | None:
        """The served answer once the stream has ended, else None."""
        return self._response

    @property
    def model(self) -> str | None:
        """The model whose answer is streaming, once its first token came."""
        if self._head is not None:  # else the model that answered whole (a server not streaming)
            return self._head.model
        return None if self._response is None else self._response.model

    @property
    def tokens(self) -> int:
        """Tokens received so far."""
        return self._sent

    def __aiter__(self) -> ModelStream:
        return self

    def __anext__(self) -> Any:
        return self._state.run.drive(self._next())

    async def __aenter__(self) -> ModelStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._aclose(CancelCause.CANCELLED)

    async def aclose(self) -> None:
        """Stop reading: an attempt still streaming is cancelled now, billed for what it produced."""
        await self._aclose(CancelCause.CANCELLED)

    def __repr__(self) -> str:
        state = "ended" if self._ended else "open"
        if self._head is None and not self._ended:
            return "<sykit.ModelStream not sent>"
        return f"<sykit.ModelStream {self.model} {self._sent} tokens, {state}>"

    # -- the steps of one __anext__ -------------------------------------------------------------
    def _next(self) -> Generator[Any, Any, Chunk]:
        if self._reading:
            raise RuntimeError(
                "this stream is already being read (an earlier __anext__ has not returned): "
                "read a stream from one task at a time"
            )
        self._reading = True
        try:
            return (yield from self._step())
        finally:
            self._reading = False

    def _step(self) -> Generator[Any, Any, Chunk]:
        state = self._state
        if self._ended:
            raise StopAsyncIteration
        if self._head is None:
            if state.closed:
                raise closed_error(state)
            try:
                head = yield from serve_steps(
                    state.run,
                    state,
                    self._request,
                    self._candidates,
                    ROUTING,
                    MODEL,
                    stream=True,
                    retries=self._retries,
                    seen=self._seen,
                )
            except ModelError as error:
                self._ended = True  # failed before its first token
                if not state.run.policy.recover_errors:
                    state.abort(error)  # as a routing-phase call_model would
                raise
            except BaseException:
                self._ended = True  # cancelled before its first token
                raise
            if not isinstance(head, StreamHead):  # answered whole (a server that did not stream)
                self._ended = True
                self._response = head
                if not head.text and not head.usage.output_tokens:
                    raise StopAsyncIteration  # an empty answer: no token at all
                self._sent = 1
                return Chunk(0, head.text, state.run.clock())
            self._head = head
            state.streams.append(self)
            if head.reply is None or isinstance(head.reply, Reply):  # simulated
                return self._chunk(head.attempt.first_token_at)
            return self._chunk(state.run.clock(), head.reply.first)  # a real host's live stream
        head = self._head
        attempt = head.attempt
        clock = state.run.clock
        try:
            if head.job is not None:  # exact sharing: each token when the server's load lets it
                queues = state.run.queues
                assert queues is not None
                while (due := queues.token_due(head.job, self._sent, clock())) is not None:
                    if due <= clock():
                        return self._chunk(due)
                    yield (ALARM, head.job)
                self._ended_exactly(head)
            elif not isinstance(head.reply, Reply):
                item = yield (NEXT, head.reply)
                if not isinstance(item, Reply):
                    return self._chunk(clock(), item)
                head.reply = item
                head.end_s = clock()
            elif self._sent < attempt.tokens_at(head.end_s):
                due = attempt.token_at(self._sent)
                wait = due - clock()
                if wait > 0:
                    yield (SLEEP, wait)
                return self._chunk(due)
            else:
                wait = head.end_s - clock()
                if wait > 0:
                    yield (SLEEP, wait)
        except asyncio.CancelledError:
            self._stop(state.run.engine.current_cause() or CancelCause.CANCELLED)
            raise
        self._finish()
        raise StopAsyncIteration

    def _ended_exactly(self, head: StreamHead) -> None:
        """The job of an attempt at a server that shares its rate exactly has ended: its reply,
        now, and when it started service."""
        run = self._state.run
        assert run.queues is not None
        head.reply, served = run.queues.ring(head.job, run.clock())
        head.end_s = run.clock()
        run.log.set_service_start(head.row, served)

    def _chunk(self, at: float, text: str = "") -> Chunk:
        index = self._sent
        self._sent = index + 1
        return Chunk(index, text, at)

    def _finish(self, raising: bool = True) -> None:
        """The reply's end: served, or the error that ended the stream (raised if ``raising``)."""
        head = self._head
        assert head is not None
        state = self._state
        run = state.run
        reply = head.reply
        now = head.end_s
        self._ended = True
        self._forget()
        assert isinstance(reply, Reply)  # a live stream's reply has replaced it at its end
        error = reply_error(reply, head.model)
        log = run.log
        if error is None:
            call, start = log.call_of(head.row), log.start_of(head.row)
            response = succeed(run, state, head.row, reply, head.model, MODEL, now, call, start)
            assert isinstance(response, Response)
            self._response = response
            return
        log_failure(log, head.row, now, error)
        log.set_ttft(head.row, _ttft(head, log))
        bill_unserved(run, state, head.row, MODEL, self._request, head.attempt, now)
        if raising:
            note_failure(state, run.model_codes[head.model], head.row, error)
            raise error

    def _stop(self, cause: CancelCause | None) -> None:
        """Cancel the attempt that is streaming, if any, at this instant with ``cause``."""
        if self._ended:
            return
        self._ended = True
        head = self._head
        if head is None:
            return  # never sent
        state = self._state
        run = state.run
        now = run.clock()
        if head.job is not None and run.queues is not None and head.job.end_at <= now:
            self._ended_exactly(head)
        if now >= head.end_s:  # the answer had ended, unread: it ended as it would have
            self._finish(raising=False)
            return
        self._forget()
        ttft = _ttft(head, run.log)
        cancel_attempt(run, state, head.row, MODEL, self._request, head.attempt, cause, ttft)

    async def _aclose(self, cause: CancelCause | None) -> None:
        """:meth:`_stop`, and on a real host the connection closed."""
        self._stop(cause)
        live = None if self._head is None else self._head.reply
        if live is not None and not isinstance(live, Reply):
            await live.aclose()

    def _forget(self) -> None:
        streams = self._state.streams
        if self in streams:
            streams.remove(self)


def _ttft(head: StreamHead, log: Any) -> float:
    """When the streamed attempt's first token came, in seconds from its start."""
    seen = head.attempt.seen_ttft_s
    if seen is not None:
        return seen
    return head.attempt.first_token_at - log.start_of(head.row)
