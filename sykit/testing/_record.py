"""``ServedRequest``: the server's record of one request, for tests to assert on.

The server fills one in while it serves (status, tokens sent, how the exchange ended), so a test
can check what the provider saw after a run, not only what the client reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ServedRequest"]


@dataclass
class ServedRequest:
    """What the server saw of one request, filled in while it is served.

    ``disconnected`` is True when the client closed the connection before the response was complete
    (a cancelled call); ``completed`` when the whole response was written; ``closed_by_server``
    when a fault made the server drop the connection itself. ``queue_s`` is the seconds the
    request waited for a slot of a model with a capacity (None: it reached no queue).
    """

    index: int
    model: str | None
    fault: str | None
    stream: bool
    body: Any = field(repr=False)
    started_at: float
    status: int | None = None
    tokens_sent: int = 0
    completed: bool = False
    disconnected: bool = False
    closed_by_server: bool = False
    ended_at: float | None = None
    authorized: bool = True
    queue_s: float | None = None
