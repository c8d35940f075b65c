"""The interface between the driver and a host: one attempt in, one raw reply out.

Like an httpx transport, a host session does one thing: perform a single attempt at a single model
and report what the provider answered (status, body, headers, tokens, timings). Retries, the
candidate loop, cooldowns, classification and records live in the driver, so every host shares
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._billing import Generation
from .._config import HostPolicy, ModelProfile
from .._errors import ModelError
from .._models import Answer, DecisionRequest, GroundTruth, Request, Usage

__all__ = ["Attempt", "Host", "HostSession", "Reply"]


@dataclass(slots=True)
class Attempt:
    """One try at one model. ``n`` counts earlier attempts at this model within this request
    (retries included); with ``seed`` and ``request_id`` it keys every random draw. The host
    reports what it accepted and produced in ``generation`` (for billing an attempt that ends
    unserved) and never touches the records."""

    request: Request | DecisionRequest
    model: str
    kind: str  # "model" | "decision"
    request_id: Any
    n: int
    seed: int
    deadline_s: float
    truth: GroundTruth | None
    start_s: float
    generation: Generation


@dataclass(slots=True)
class Reply:
    """What the provider answered. ``status`` None means no HTTP answer: ``error`` says why
    (transport failure or timeout). A simulated host plans its reply when the attempt starts;
    ``after_s`` is then how long after the start the reply comes."""

    status: int | None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    error: ModelError | None = None
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    ttft_s: float | None = None
    quality: float | None = None
    answers: Mapping[str, Answer] | None = None
    after_s: float = 0.0


class HostSession(Protocol):
    """A host's state for one run (rate-limit buckets, counters, an HTTP client).

    A real host performs an attempt with ``async send(attempt)``; a simulated one may instead
    ``plan(attempt)`` it at once (the driver then waits ``Reply.after_s`` on the virtual clock)."""

    async def send(self, attempt: Attempt) -> Reply: ...

    async def aclose(self) -> None: ...


class Host(Protocol):
    """Anything ``sy.run`` can run on: ``SimHost`` (virtual time) or ``HttpHost`` (real time)."""

    virtual: bool
    policy: HostPolicy
    profiles: Mapping[str, ModelProfile]

    def open(self, seed: int) -> HostSession: ...
