"""The error tree's roots and model errors, defined on the ground floor so every package can raise
them. The whole tree, with the few classes defined higher up (``RequestClosed``, ``AlgorithmError``
and the two warnings), is drawn in :mod:`sykit.errors`, its public home.

Cancellation is never an error: a cancelled call raises ``asyncio.CancelledError`` (a
``BaseException``), which ``except Exception`` does not swallow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sykit._base.retry_after import RetryAfter

__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "CapabilityError",
    "ContextWindowError",
    "InvalidRequestError",
    "InvalidResponseError",
    "ModelError",
    "ModelTimeout",
    "NoTargets",
    "PolicyError",
    "RateLimitError",
    "RealIOError",
    "RecordLimit",
    "SimDeadlock",
    "SykitError",
    "UnavailableError",
    "UnknownModel",
]


class SykitError(Exception):
    """Root of every error sykit raises on purpose."""


class ModelError(SykitError):
    """A model or decision call failed.

    ``kind`` names the failure class (it becomes the ``error_kind`` column), ``model`` the target that
    failed, ``http_status`` the status the provider answered (``None`` for transport failures and
    timeouts) and ``message`` the provider's own words.
    """

    kind: str = "model_error"
    #: The attempt row this error ended (set by the recorder; None for an error made elsewhere).
    _sykit_row: int | None = None

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        http_status: int | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.model = model
        self.http_status = http_status
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        where = f" from {self.model!r}" if self.model else ""
        status = f" (HTTP {self.http_status})" if self.http_status is not None else ""
        return f"{self.kind}{where}{status}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, model={self.model!r}, "
            f"http_status={self.http_status!r})"
        )


class ContextWindowError(ModelError):
    """The input plus the requested output does not fit the model's context window."""

    kind = "context_window"


class CapabilityError(ModelError):
    """The model cannot take this kind of input at all (e.g. images sent to a text-only model)."""

    kind = "capability"


class PolicyError(ModelError):
    """The provider refused the content (``content_policy_violation``)."""

    kind = "policy"


class InvalidRequestError(ModelError):
    """A 4xx the provider will answer the same way every time: never retried, never a fallback."""

    kind = "invalid_request"


class RateLimitError(ModelError):
    """HTTP 429. ``retry_after_s`` holds the provider's Retry-After, when it sent one, as sykit's
    retries read it; ``retry_after`` (a ``RetryAfter``) the headers as sent, for a router that reads
    them its own way."""

    kind = "rate_limit"

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        http_status: int | None = 429,
        retry_after_s: float | None = None,
        kind: str | None = None,
        retry_after: RetryAfter | None = None,
    ) -> None:
        super().__init__(message, model=model, http_status=http_status, kind=kind)
        if retry_after_s is None and retry_after is not None:
            retry_after_s = retry_after.seconds
        self.retry_after_s = retry_after_s
        self.retry_after = retry_after


class UnavailableError(ModelError):
    """403, 408, 5xx or a transport failure: the target is not answering right now.
    ``retry_after_s`` holds the provider's Retry-After (a 503 or 529 often sends one), and
    ``retry_after`` the headers as sent, as for :class:`RateLimitError`."""

    kind = "unavailable"

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        http_status: int | None = None,
        retry_after_s: float | None = None,
        kind: str | None = None,
        retry_after: RetryAfter | None = None,
    ) -> None:
        super().__init__(message, model=model, http_status=http_status, kind=kind)
        if retry_after_s is None and retry_after is not None:
            retry_after_s = retry_after.seconds
        self.retry_after_s = retry_after_s
        self.retry_after = retry_after


class ModelTimeout(ModelError):
    """No answer arrived before the per-call deadline."""

    kind = "timeout"


class InvalidResponseError(ModelError):
    """The provider answered 2xx with a body that is not a usable completion or verdict."""

    kind = "invalid_response"


class ArgumentError(SykitError, ValueError):
    """An argument or configuration value sykit cannot use (out of range, infinite, unknown name).

    The message names the argument; ``except ValueError`` catches it too."""


class ArgumentTypeError(SykitError, TypeError):
    """An argument or configuration value of the wrong type; ``except TypeError`` catches it too."""


class NoTargets(SykitError, ValueError):
    """``call_model`` was given an empty list of models."""


class UnknownModel(SykitError, ValueError):
    """A model name that the host does not know; the message lists the names it does know."""

    def __init__(
        self, model: object, known: list[str] | tuple[str, ...], *, where: str = ""
    ) -> None:
        self.model = model
        self.known = tuple(known)
        place = f" in {where}" if where else ""
        super().__init__(
            f"unknown model {model!r}{place}; the host has: {', '.join(map(repr, self.known))}"
        )


class SimDeadlock(SykitError, RuntimeError):
    """Every task of a simulation is waiting and no timer is pending, so virtual time cannot move."""


class RealIOError(SykitError, RuntimeError):
    """Real network I/O was attempted on the virtual-time loop, where it cannot work."""


class RecordLimit(SykitError, RuntimeError):
    """A run went past what its records can number: more than 32,767 calls or races in one
    request, or models in one run (the records store them as 16-bit codes)."""
