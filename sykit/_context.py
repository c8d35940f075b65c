"""Who is running: the request a task works for, the race it belongs to, why it was cancelled.

Cancel causes travel with the cancellation: whoever cancels a task on purpose (a race helper, a
timeout, the runner after the algorithm returned) records why in :data:`CAUSES` first, and the call
that catches the ``CancelledError`` reads it back for its attempt row. A cancellation with no
recorded cause (a user's ``task.cancel()``, an anyio scope) is recorded as ``"cancelled"``.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import weakref
from typing import Any

__all__ = [
    "CAUSES",
    "CURRENT_RACE",
    "CURRENT_REQUEST",
    "cancel_with_cause",
    "cause_of_current",
    "new_race_id",
]

#: The request state of the request a task works for (set in the request's root task).
CURRENT_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("sykit_request", default=None)
#: The race id of the innermost race helper a task runs under.
CURRENT_RACE: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "sykit_race", default=None
)

CAUSES: weakref.WeakKeyDictionary[asyncio.Task[Any], str] = weakref.WeakKeyDictionary()
_fallback_race_ids = itertools.count()


def cancel_with_cause(task: asyncio.Task[Any], cause: str | None) -> None:
    """Cancel ``task``, recording why (None: no particular reason, recorded as "cancelled").

    A task already being cancelled keeps the cause of whoever cancelled it first (e.g. the
    algorithm's own ``task.cancel()`` just before it returned stays ``cancelled``, not
    ``abandoned``); it is cancelled again in case it swallowed the first cancellation.
    """
    if task.done():
        return
    if cause is not None and not task.cancelling() and task not in CAUSES:
        CAUSES[task] = cause
    task.cancel()


def cause_of_current() -> str | None:
    """The cause recorded for the cancellation of the running task, if any."""
    task = asyncio.current_task()
    return None if task is None else CAUSES.get(task)


def new_race_id() -> int:
    """A race id unique within the current request (or process-wide outside a sykit run)."""
    state = CURRENT_REQUEST.get()
    if state is None:
        return next(_fallback_race_ids)
    return state.next_race_id()
