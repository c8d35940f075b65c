"""How LiteLLM 1.110.2 reads an error (its exception mapping for OpenAI-compatible servers):
the status it sees, whether the message makes it a rate limit, a context-window or a
content-policy error, its reading of Retry-After, and which statuses it retries and cools a
deployment down for. :mod:`sykit.strategies._litellm`'s router decides with these.
"""

from __future__ import annotations

import math
import re

from sykit._base.errors import ModelError
from sykit._base.retry_after import RetryAfter
from sykit._base.vocab import ErrorKind

_LITELLM_LONGEST_RETRY_AFTER_S = 2**63  # a longer Retry-After header is read as this


#: What makes LiteLLM (its exception mapping for OpenAI-compatible servers) read an error's
#: message as a context-window error, lower case (``is_error_str_context_window_exceeded``).
_LITELLM_CONTEXT_PHRASES = (
    "exceed context limit",
    "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "string too long. expected a string with maximum length",
    "model's maximum context limit",
    "is longer than the model's context length",
    "input tokens exceed the configured limit",
    "`inputs` tokens + `max_new_tokens` must be",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    '"code": "context_length_exceeded"',
    "prompt is too long",
)


def _litellm_rate_limited(error: ModelError) -> bool:
    """LiteLLM's RateLimitError: a 429, or an error answer whose message speaks of a rate limit
    (its ``is_error_str_rate_limit``; checked before anything else)."""
    status = error.http_status
    if status == 429:
        return True
    if status is None or status < 400:
        return False
    lower = (error.message or "").lower()
    return bool(_RATE_LIMIT_WORDS.search(lower)) or "service tier capacity exceeded" in lower


_RATE_LIMIT_WORDS = re.compile(r"rate[\s_\-]*limit")


def _litellm_status(error: ModelError) -> int | None:
    """The HTTP status LiteLLM would see: its exception class's, read from the message as it
    does (a rate limit in words is its 429; a context-window or content-policy message its 400),
    else the server's; a timeout is its 408, a transport failure and a 2xx it cannot read
    (malformed, not a chat completion) its InternalServerError, 500."""
    if _litellm_rate_limited(error):
        return 429
    if _litellm_special(error) is not None:
        return 400
    if error.http_status is not None and not 200 <= error.http_status < 300:
        return error.http_status
    if error.kind == ErrorKind.TIMEOUT:
        return 408
    if error.kind in (ErrorKind.UNAVAILABLE, ErrorKind.INVALID_RESPONSE):
        return 500
    return None


def _litellm_special(error: ModelError) -> str | None:
    """``"context_window"`` or ``"policy"`` when LiteLLM would raise its ContextWindowExceededError
    or ContentPolicyViolationError for this error, else None. It reads the error's message only,
    not its code: "Your request was rejected as a result of our safety system." with code
    ``content_policy_violation`` is a plain 400 to it."""
    status = error.http_status
    if status is None or status < 400 or _litellm_rate_limited(error):
        return None  # not an error answer of the server's, or a rate limit first
    text = error.message or ""
    lower = text.lower()
    if "string_above_max_length" not in lower and not (
        "invalid 'user'" in lower and "string too long" in lower
    ):
        if any(phrase in lower for phrase in _LITELLM_CONTEXT_PHRASES):
            return "context_window"
        if (
            ("current length is" in lower and "while limit is" in lower)
            or ("maximum input length is" in lower and "tokens" in lower)
            or ("input too long:" in lower and "input tokens, limit is" in lower)
        ):
            return "context_window"
    if (
        ("invalid_request_error" in text and "content_policy_violation" in text)
        or ("Invalid prompt" in text and "violating our usage policy" in text)
        or "request was rejected as a result of the safety system" in lower
    ):
        return "policy"
    return None


def _litellm_retry_after(error: ModelError) -> int | None:
    """LiteLLM's reading of an error's Retry-After (``_get_retry_after_from_exception_header``,
    for the retry's wait and the cooldown alike): the ``Retry-After`` header alone
    (``retry-after-ms`` is never read), through ``int()`` (so ``"0.5"`` and ``"1.0"`` are
    unreadable), else an HTTP-date's distance from its own clock truncated toward zero (a date
    4 s after the response's ``Date`` reads as 3 s a moment later); None where it reads -1 (no
    header, or one it cannot read)."""
    sent: RetryAfter | None = getattr(error, "retry_after", None)
    if sent is None:  # an error made without headers: its retry_after_s as Retry-After
        value = getattr(error, "retry_after_s", None)
        if value is None or not math.isfinite(value) or not float(value).is_integer():
            return None
        return int(value)
    if sent.header is None:
        return None
    try:
        return min(int(sent.header), _LITELLM_LONGEST_RETRY_AFTER_S)
    except ValueError:
        pass
    return None if sent.date_s is None else int(sent.date_s)


def _litellm_retried(status: int | None) -> bool:
    return status is not None and (status in (408, 429) or status >= 500)


def _litellm_cools(status: int | None) -> bool:
    return status is not None and (status in (401, 402, 404, 408, 429) or status >= 500)
