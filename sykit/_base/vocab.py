"""The words of the records, each declared once: statuses, phases, kinds and cancellation causes.

Every module that writes or reads these values takes them from here, and the DataFrames use the
enums' values as their categories, so a typo cannot create a new category silently. Fallback
reasons live with the classifier (:class:`sykit.errors.FallbackReason`) and fault names with the
fault configuration (``RANDOM_FAULTS``).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["CancelCause", "ErrorKind", "Kind", "Phase", "RequestStatus", "Status"]


class Status(StrEnum):
    """How an attempt ended."""

    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"  # never sent: its target was cooling down


class RequestStatus(StrEnum):
    """How a request ended."""

    OK = "ok"
    FAILED = "failed"


class Phase(StrEnum):
    """Routing: calls the algorithm makes. Answer: the call the runner makes for ``route_to``."""

    ROUTING = "routing"
    ANSWER = "answer"


class Kind(StrEnum):
    """A model call or a decision (judge/classifier) call."""

    MODEL = "model"
    DECISION = "decision"


class CancelCause(StrEnum):
    """Why a call was cancelled (the ``cancel_cause`` column).

    ``LOST_RACE``: another call of its race won (``sy.first``, ``first_ok``, ``hedge``);
    ``TIMEOUT``: ``sy.timeout`` expired; ``ABANDONED``: still running when the algorithm returned;
    ``REQUEST_FAILED``: still running when the request failed; ``CANCELLED``: any other
    cancellation (the algorithm's own ``task.cancel()``, an anyio scope, ``asyncio.timeout``).
    """

    LOST_RACE = "lost_race"
    TIMEOUT = "timeout"
    ABANDONED = "abandoned"
    CANCELLED = "cancelled"
    REQUEST_FAILED = "request_failed"


class ErrorKind(StrEnum):
    """What went wrong (the ``error_kind`` column): a model error's kind (``ModelError.kind``, one
    per subclass in ``sykit._base.errors``), or why a request failed on the algorithm's side."""

    # a model call's error
    MODEL_ERROR = "model_error"
    CONTEXT_WINDOW = "context_window"
    CAPABILITY = "capability"
    POLICY = "policy"
    INVALID_REQUEST = "invalid_request"
    RATE_LIMIT = "rate_limit"
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"
    INVALID_RESPONSE = "invalid_response"
    HOST_ERROR = "host_error"  # the host itself raised (not a provider's answer)
    # a request's failure on the algorithm's side
    ALGORITHM_ERROR = "algorithm_error"
    INVALID_OUTCOME = "invalid_outcome"
    UNKNOWN_MODEL = "unknown_model"
    NO_TARGETS = "no_targets"
    DEADLOCK = "deadlock"
