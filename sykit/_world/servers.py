"""A run's simulated servers: one per model that declares a capacity, of the kind its
``sharing`` asks for (:mod:`.capacity` for ``"at_start"``, :mod:`.sharing` for ``"exact"``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sykit._world.capacity import Server
from sykit._world.sharing import SharedServer

__all__ = ["Queues"]

NAN = math.nan


class Queues:
    """The servers of a run's models that declare a capacity, and the service start of the last
    attempt planned (for the records' ``queue_s``)."""

    __slots__ = ("attempt", "servers", "start")

    def __init__(self, servers: dict[str, Any]) -> None:
        self.servers = servers
        self.attempt: Any = None
        self.start = NAN

    @classmethod
    def of(cls, profiles: Mapping[str, Any]) -> Queues | None:
        """The run's queues, or None when no model declares a capacity."""
        servers: dict[str, Any] = {}
        for name, profile in profiles.items():
            capacity = profile.capacity
            if capacity is None:
                continue
            exact = capacity.sharing == "exact"
            servers[name] = SharedServer(capacity) if exact else Server(capacity)
        return cls(servers) if servers else None

    def planned(self, attempt: Any, start: float) -> None:
        self.attempt = attempt
        self.start = start

    def service_start(self, attempt: Any) -> float:
        """When ``attempt``, just planned, starts (or would have started) service; NaN if it
        reached no server (a model without a capacity, a rejection, a fault before the queue)
        or if its start is not known yet (exact sharing: see :meth:`ring`)."""
        return self.start if attempt is self.attempt else NAN

    def ring(self, job: Any, now: float) -> tuple[Any, float]:
        """A call at a server with exact sharing whose alarm rang at ``now``: its reply (None:
        not ended yet, wait for the alarm again) and when it started service (inf: never)."""
        return self.servers[job.attempt.model].ring(job, now), job.start

    def stream(self, job: Any) -> None:
        """The call of ``job`` (exact sharing) is streamed: see :meth:`SharedServer.stream`."""
        self.servers[job.attempt.model].stream(job)

    def token_due(self, job: Any, token: int, now: float) -> float | None:
        """See :meth:`SharedServer.token_due`."""
        return self.servers[job.attempt.model].token_due(job, token, now)

    def release(self, attempt: Any, now: float) -> float:
        """``attempt`` was cancelled at ``now`` (see :meth:`Server.release`); returns its service
        start when only now known (NaN: nothing new to record)."""
        server = self.servers.get(attempt.model)
        return NAN if server is None else server.release(attempt, now)
