"""An algorithm's own fallbacks, recorded as the candidate loop records its own.

The candidate loop writes a fallback on the attempt it moves on from (its ``fallback_reason``)
and counts it in the request's ``n_fallbacks``. An algorithm that catches a call's error and then
calls another model makes the same switch; it is recorded the same way here, so that a summary's
``fallbacks_<reason>`` and ``routing_errors`` mean one thing whichever code switched:

* a model call whose error reaches its caller leaves, when the error has a fallback reason, an
  *open failure* of its model (:func:`note_failure`; the latest one per model);
* when a model call made after that failure starts an attempt at another model, and no other call
  of the request is at that model (running, or waiting to retry it), the failure becomes a
  fallback: its reason on the failed attempt, one more ``n_fallbacks`` (:func:`note_start`);
* a new call to the failed model itself closes its failure: the algorithm retried it (a retry in
  the summary, not a fallback);
* a call made before the failure (another call of a race) is never its fallback, and a failure
  the algorithm declared itself (``driver.record_fallback``) is not counted twice.

Only model calls take part: a failed judge followed by a model call is no switch of model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sykit._base.errors import ModelError
from sykit._base.vocab import Status
from sykit._run.records import REASON_CODE, RUNNING, STATUS_CODE
from sykit._world.classify import fallback_reason

if TYPE_CHECKING:
    from sykit._run.state import RequestState

__all__ = ["note_failure", "note_start"]

_ERROR = STATUS_CODE[Status.ERROR]


def note_failure(state: RequestState, model: int, row: int, error: ModelError) -> None:
    """A model call of ``state``'s request failed at ``model`` (its code) on attempt ``row`` with
    ``error``, which its caller gets: open, if the error has a fallback reason."""
    reason = fallback_reason(error)
    if reason is None:
        return
    failures = state.open_failures
    if failures is None:
        failures = state.open_failures = {}
    failures.pop(model, None)  # the latest failure last: open failures stay in order
    failures[model] = (row, REASON_CODE[reason], state.failures_noted)
    state.failures_noted += 1


def note_start(state: RequestState, model: int, call: int, seen: int | None) -> None:
    """Call ``call``, made when ``seen`` failures had been noted (None: made now), starts an
    attempt at ``model``: it closes the open failure of that model (a retry) and turns those of
    other models into fallbacks, unless another call of the request is at ``model``."""
    failures = state.open_failures
    if not failures:
        return
    limit = state.failures_noted if seen is None else seen
    own = failures.get(model)
    if own is not None and own[2] < limit:
        del failures[model]
    moved = [m for m, (_, _, number) in failures.items() if number < limit]
    if not moved or _another_call_at(state, model, call):
        return
    log = state.run.log
    for m in moved:
        row, reason, _ = failures.pop(m)
        if log.fallback_of(row) < 0:  # not declared already (driver.record_fallback)
            log.set_fallback(row, reason)
            state.n_fallbacks += 1


def _another_call_at(state: RequestState, model: int, call: int) -> bool:
    """Whether a model call of the request other than ``call`` is at ``model`` now: its latest
    attempt there is running, or failed and waits for its retry."""
    log = state.run.log
    for other, row in state.call_rows.items():
        if other == call or log.model_code_of(row) != model:
            continue
        status = log.status_of(row)
        if status == RUNNING or (status == _ERROR and log.retried_of(row)):
            return True
    return False
