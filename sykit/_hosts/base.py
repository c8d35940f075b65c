"""The interface between the driver and a host: one attempt in, one raw reply out.

Like an httpx transport, a host session does one thing: perform a single attempt at a single model
and report what the provider answered (status, body, headers, tokens, timings). Retries, the
candidate loop, cooldowns, classification and records live in the driver, so every host shares
them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from sykit._base.alarm import Alarm
from sykit._base.errors import ModelError
from sykit._world.billing import Generation
from sykit._world.models import Answer, DecisionRequest, Request, Usage

if TYPE_CHECKING:  # _config builds error bodies with the wire module, which imports this one
    from sykit._world.config import HostPolicy, ModelProfile

__all__ = ["Attempt", "Host", "HostSession", "LiveStream", "Reply"]

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
_NO_USAGE = Usage()


class Attempt(Generation):
    """One try at one model. ``n`` counts earlier attempts at this model within this request
    (retries included); with ``seed`` and ``request_id`` it keys every random draw. The host
    reports what it accepted and produced on the attempt itself (:class:`Generation`: ``plan``,
    ``receive``), so an attempt that ends unserved can be billed, and never touches the records.
    It carries no ground truth: a stream holds its attempt where the algorithm could reach it, so
    a simulated host is handed the request's truth beside the attempt (:class:`HostSession`)."""

    __slots__ = (
        "deadline_s",
        "kind",
        "model",
        "n",
        "request",
        "request_id",
        "seed",
        "start_s",
    )

    def __init__(
        self,
        request: Request | DecisionRequest,
        model: str,
        kind: str,
        request_id: Any,
        n: int,
        seed: int,
        deadline_s: float,
        start_s: float,
    ) -> None:
        # Generation.__init__, inlined: one attempt per call (keep the two alike)
        self.accepted = False
        self.first_token_at = math.inf
        self.in_service_from = -math.inf
        self.tokens_per_s = 0.0
        self.planned = 0
        self.received = None
        self.seen_ttft_s = None
        self.stall_after = 0
        self.stall_s = 0.0
        self.request = request
        self.model = model
        self.kind = kind  # "model" | "decision"
        self.request_id = request_id
        self.n = n
        self.seed = seed
        self.deadline_s = deadline_s
        self.start_s = start_s


class Reply:
    """What the provider answered. ``status`` None means no HTTP answer: ``error`` says why
    (transport failure or timeout). A simulated host plans its reply when the attempt starts;
    ``after_s`` is then how long after the start the reply comes. ``resend`` asks the driver to send
    the same call again at once: the host has changed how it phrases the call after a refusal of
    the phrasing itself (a decision format), so the new attempt is not a retry (no backoff, not
    counted against ``max_retries``). ``alarm``, from a simulated server that shares its rate
    exactly: the reply is not known yet; the driver waits for the alarm, whose instant the
    server moves as its load changes, then takes the reply from the server."""

    __slots__ = (
        "after_s",
        "alarm",
        "answers",
        "body",
        "error",
        "headers",
        "resend",
        "status",
        "text",
        "ttft_s",
        "usage",
    )

    def __init__(
        self,
        status: int | None,
        body: Any = None,
        headers: Mapping[str, str] = _NO_HEADERS,
        error: ModelError | None = None,
        text: str = "",
        usage: Usage = _NO_USAGE,
        ttft_s: float | None = None,
        answers: Mapping[str, Answer] | None = None,
        after_s: float = 0.0,
        resend: bool = False,
        alarm: Alarm | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.headers = headers
        self.error = error
        self.text = text
        self.usage = usage
        self.ttft_s = ttft_s
        self.answers = answers
        self.after_s = after_s
        self.resend = resend
        self.alarm = alarm

    def __repr__(self) -> str:
        what = self.error if self.error is not None else self.status
        return f"Reply({what!r}, after_s={self.after_s!r})"


class HostSession(Protocol):
    """A host's state for one run (rate-limit buckets, counters, an HTTP client).

    A real host performs an attempt with ``async send(attempt) -> Reply``; a simulated one instead
    ``plan(attempt, truth) -> Reply`` it at once (the driver then waits ``Reply.after_s`` on the
    virtual clock), given the request's :class:`GroundTruth` (or None), which the run keeps out of
    the algorithm's reach. A session has one of the two, the driver looks which, so neither is
    required here."""

    async def aclose(self) -> None: ...


class LiveStream(Protocol):
    """A real host's streamed answer, open at its first token (``first``: that token's text):
    ``next()`` gives each further token's text and, at the end, the attempt's :class:`Reply`;
    ``aclose()`` stops it (closing the connection)."""

    first: str

    async def next(self) -> str | Reply: ...

    async def aclose(self) -> None: ...


class Host(Protocol):
    """Anything ``sy.run`` can run on: ``SimHost`` (virtual time) or ``HttpHost`` (real time)."""

    virtual: bool
    policy: HostPolicy

    @property
    def profiles(self) -> Mapping[str, ModelProfile]: ...

    def open(self, seed: int) -> HostSession: ...
