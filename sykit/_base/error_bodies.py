"""What a provider's error body says when nothing more is known: the OpenAI error shape per status.

The simulated host's faults, the loopback test server and the HTTP host's wire codec all word their
errors from here, so that a fault configured without text reads like a real provider's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ERROR_DEFAULTS", "error_object"]

#: What an error status says when an ``ErrorFault`` gives no text: (message, type, code), in
#: OpenAI's error shape. ``{model}`` is replaced by the model's name.
ERROR_DEFAULTS: Mapping[int, tuple[str, str, str | None]] = {
    400: (
        "Invalid value for 'temperature': expected a number ≤ 2.",
        "invalid_request_error",
        "invalid_value",
    ),
    401: (
        "Incorrect API key provided. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    402: (
        "Insufficient credits: this request needs more credits than the account has left. Add "
        "credits to continue.",
        "insufficient_quota",
        "insufficient_quota",
    ),
    403: (
        "You are not allowed to sample from this model.",
        "invalid_request_error",
        "model_not_allowed",
    ),
    404: (
        "The model `{model}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
    408: ("Request timed out.", "timeout_error", "request_timeout"),
    413: (
        "Request too large: the request body exceeds the maximum size this endpoint accepts.",
        "invalid_request_error",
        "request_too_large",
    ),
    422: (
        "Unprocessable entity: 'messages' must be a non-empty list of role and content objects.",
        "invalid_request_error",
        "unprocessable_entity",
    ),
    429: ("Rate limit reached for requests.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error processing your request.", "server_error", None),
    502: ("Bad gateway: the upstream server sent an invalid response.", "server_error", None),
    503: ("The server is overloaded or not ready yet.", "server_error", None),
    504: ("Gateway timeout: the upstream server did not answer in time.", "server_error", None),
    529: ("Overloaded.", "overloaded_error", None),
}

#: A 400's default message by its code, where the code says what the 400 is about.
_CODE_MESSAGES: Mapping[str, str] = {
    "content_policy_violation": "Your request was rejected as a result of our safety system.",
    "context_length_exceeded": (
        "This model's maximum context length is 128000 tokens. However, your messages resulted "
        "in 131072 tokens. Please reduce the length of the messages."
    ),
}


def _other_status(status: int) -> tuple[str, str, str | None]:
    if status >= 500:
        return "The server had an error processing your request.", "server_error", None
    return f"The request was rejected (HTTP {status}).", "invalid_request_error", None


def error_object(
    status: int,
    model: str,
    *,
    message: str | None = None,
    type_: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """The ``error`` object of an OpenAI error body for ``status`` (``message``, ``type``,
    ``param``, ``code``), each field left None filled with the status's default (a 400's message by
    its code), ``{model}`` in the message replaced by ``model``."""
    default_message, default_type, default_code = ERROR_DEFAULTS.get(status, _other_status(status))
    code = code if code is not None else default_code
    if message is None and status == 400:
        message = _CODE_MESSAGES.get(code or "", default_message)
    elif message is None:
        message = default_message
    return {
        "message": message.replace("{model}", model),
        "type": type_ if type_ is not None else default_type,
        "param": None,
        "code": code,
    }
