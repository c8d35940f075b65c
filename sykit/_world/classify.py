"""One classifier for every host: an HTTP status and body become a :class:`ModelError` kind.

The simulated host produces real-looking statuses and bodies and goes through this same code, so a
rule (which 400 is an overflow, which is a capability rejection, which status is retried) is
written once and behaves identically in simulation and against real endpoints.

Rules (after Switchyard's client, ``fallback_reason`` and ``is_overflow_body``):

* 2xx: not an error.
* 400: ``error.code == "context_length_exceeded"`` or an overflow phrase → ``context_window``;
  ``error.code == "content_policy_violation"`` → ``policy``; a capability phrase → ``capability``;
  anything else → ``invalid_request`` (terminal). Phrases match case-insensitively in
  ``error.message``, or in the raw body when it is not JSON.
* 429 → ``rate_limit`` (``retry-after-ms``, else Retry-After in seconds or as an HTTP date measured
  against the response's ``Date``; see ``sykit._base.retry_after``).
* 403, 408, 5xx → ``unavailable``, with its Retry-After as for a 429 (a retry waits for it).
  Other 4xx (413 and 422 included) → ``invalid_request``.

The error keeps the first :data:`MESSAGE_KEPT` characters of the provider's text (phrases are
looked for in all of it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import (
    CapabilityError,
    ContextWindowError,
    InvalidRequestError,
    ModelError,
    ModelTimeout,
    PolicyError,
    RateLimitError,
    UnavailableError,
)
from sykit._base.retry_after import read_retry_after

__all__ = [
    "CAPABILITY_PHRASES",
    "OVERFLOW_PHRASES",
    "FallbackReason",
    "classify",
    "error_fields",
    "fallback_reason",
    "is_retryable",
]


class FallbackReason(StrEnum):
    """Why the candidate loop moved on to the next candidate."""

    CONTEXT_WINDOW = "context_window"
    CAPABILITY = "capability"
    UNAVAILABLE = "unavailable"
    RATE_LIMIT = "rate_limit"
    POLICY = "policy"


#: Overflow phrases of OpenAI (chat and responses) and Anthropic, lower case.
OVERFLOW_PHRASES: tuple[str, ...] = (
    "maximum context length",
    "context length exceeded",
    "context window",
    "context length is only",
    "please reduce the length of the input",
    "exceeds the maximum allowed input length",
    "exceeds the maximum allowed length",
    "is longer than the model's context length",
    "prompt is too long",
    "maximum number of tokens",
    "context length",
)

#: Phrases of a 400 that says the model cannot take this input at all, lower case.
CAPABILITY_PHRASES: tuple[str, ...] = (
    "does not support image input",
    "is not a multimodal model",
    "image input is not supported",
    "image_url is only supported by certain models",
)


def error_fields(body: Any) -> tuple[str | None, str | None, bool]:
    """(error.code, error.message, body_was_json) from a JSON body, a dict, or raw text."""
    parsed = body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return None, body, False
    if not isinstance(parsed, Mapping):
        return None, None if parsed is None else str(parsed), parsed is not None
    error = parsed.get("error", parsed)
    if isinstance(error, str):
        return None, error, True
    if not isinstance(error, Mapping):
        return None, None, True
    code = error.get("code")
    message = error.get("message")
    return (
        str(code) if code is not None else None,
        str(message) if message is not None else None,
        True,
    )


def _contains_any(text: str | None, phrases: tuple[str, ...]) -> bool:
    if not text:
        return False
    lowered = text.lower()
    return any(phrase in lowered for phrase in phrases)


#: The characters of an error's text an error keeps: a proxy's HTML error page can be megabytes,
#: which an algorithm that catches the error (or prints it) should not carry around.
MESSAGE_KEPT = 4000


def _shown(text: str) -> str:
    """``text``, cut to :data:`MESSAGE_KEPT` characters with a note of what was left out."""
    if len(text) <= MESSAGE_KEPT:
        return text
    return f"{text[:MESSAGE_KEPT]}… [{len(text) - MESSAGE_KEPT:,} more characters]"


def classify(
    status: int,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    *,
    model: str | None = None,
    now: datetime | None = None,
) -> ModelError | None:
    """Turn an HTTP answer into the error it means, or None for a 2xx.

    ``body`` may be a parsed JSON object, a JSON string or plain text. ``now`` is the clock when the
    answer came (default: the current time): an HTTP-date Retry-After is measured against the
    response's ``Date`` header, or against ``now`` when it has none.
    """
    status = check_int(status, "status", expected="an int HTTP status")
    if 200 <= status < 300:
        return None
    code, message, was_json = error_fields(body)
    full = message or (body if isinstance(body, str) else "") or f"HTTP {status}"
    text = _shown(full)  # (the phrases are looked for in all of it)
    if status == 400:
        raw = None if was_json else full
        if code == "context_length_exceeded" or _contains_any(message or raw, OVERFLOW_PHRASES):
            return ContextWindowError(text, model=model, http_status=status)
        if code == "content_policy_violation":
            return PolicyError(text, model=model, http_status=status)
        if _contains_any(message or raw, CAPABILITY_PHRASES):
            return CapabilityError(text, model=model, http_status=status)
        return InvalidRequestError(text, model=model, http_status=status)
    if status == 429:
        return RateLimitError(
            text, model=model, http_status=status, retry_after=read_retry_after(headers, now)
        )
    if status in (403, 408) or 500 <= status <= 599:
        return UnavailableError(
            text, model=model, http_status=status, retry_after=read_retry_after(headers, now)
        )
    if 400 <= status <= 499:
        return InvalidRequestError(text, model=model, http_status=status)
    return ModelError(text, model=model, http_status=status, kind="upstream_http")


_REASONS: dict[str, FallbackReason] = {
    "context_window": FallbackReason.CONTEXT_WINDOW,
    "capability": FallbackReason.CAPABILITY,
    "unavailable": FallbackReason.UNAVAILABLE,
    "rate_limit": FallbackReason.RATE_LIMIT,
    "policy": FallbackReason.POLICY,
}


def fallback_reason(error: BaseException) -> FallbackReason | None:
    """The reason this error lets the candidate loop try the next candidate, or None (terminal).

    ``policy`` is reported whatever ``allow_policy_fallback`` says; the loop applies the flag. A
    client-side timeout is retried but is not a fallback reason.
    """
    if not isinstance(error, ModelError):
        return None
    return _REASONS.get(error.kind)


def is_retryable(error: BaseException) -> bool:
    """Retried within one target: 408, 429, 5xx, transport failures and timeouts (not 403)."""
    if isinstance(error, RateLimitError | ModelTimeout):
        return True
    if isinstance(error, UnavailableError):
        status = error.http_status
        return status is None or status == 408 or 500 <= status <= 599
    return False
