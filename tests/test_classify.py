"""One classifier for every host: statuses and bodies → error kinds → fallback reasons.

The table follows Switchyard's fallback_reason tests: positives, near-miss negatives that must stay
terminal, non-400 statuses, and the policy flag (applied by the candidate loop, not the classifier).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

import sykit as sy


def openai_error(message, code=None):
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    }


CASES = [
    # -- context overflow: structured code, phrases in error.message, phrases in a raw body ------
    (
        "code context_length_exceeded",
        400,
        openai_error("Too long.", "context_length_exceeded"),
        "context_window",
        "context_window",
    ),
    (
        "openai phrase",
        400,
        openai_error("This model's maximum context length is 8192 tokens."),
        "context_window",
        "context_window",
    ),
    (
        "anthropic phrase",
        400,
        openai_error("prompt is too long: 210000 tokens > 200000 maximum"),
        "context_window",
        "context_window",
    ),
    (
        "responses phrase",
        400,
        openai_error("Input exceeds the maximum allowed input length."),
        "context_window",
        "context_window",
    ),
    (
        "upper case",
        400,
        openai_error("PLEASE REDUCE THE LENGTH OF THE INPUT"),
        "context_window",
        "context_window",
    ),
    (
        "raw text body",
        400,
        "upstream says: context length exceeded",
        "context_window",
        "context_window",
    ),
    (
        "json string body",
        400,
        json.dumps(openai_error("maximum context length is 4096")),
        "context_window",
        "context_window",
    ),
    ("413 is not overflow", 413, openai_error("maximum context length"), "invalid_request", None),
    ("422 is not overflow", 422, openai_error("context length exceeded"), "invalid_request", None),
    # -- capability: the four phrases --------------------------------------------------------------
    (
        "no image input",
        400,
        openai_error("gpt-3.5 does not support image input."),
        "capability",
        "capability",
    ),
    (
        "not multimodal",
        400,
        openai_error("llama-3-8b is not a multimodal model"),
        "capability",
        "capability",
    ),
    (
        "image not supported",
        400,
        openai_error("Image input is not supported for this model"),
        "capability",
        "capability",
    ),
    (
        "image_url certain models",
        400,
        openai_error("image_url is only supported by certain models."),
        "capability",
        "capability",
    ),
    (
        "capability raw body",
        400,
        "Error: model does not support image input",
        "capability",
        "capability",
    ),
    # -- near misses stay terminal invalid_request -----------------------------------------------
    (
        "malformed image",
        400,
        openai_error("Invalid image: could not decode base64 data."),
        "invalid_request",
        None,
    ),
    (
        "image too large",
        400,
        openai_error("Image exceeds the 20 MB size limit."),
        "invalid_request",
        None,
    ),
    (
        "image generation",
        400,
        openai_error("This model does not support image generation."),
        "invalid_request",
        None,
    ),
    (
        "wrong json field",
        400,
        openai_error("Unrecognized request argument supplied: image_urls"),
        "invalid_request",
        None,
    ),
    (
        "tool schema",
        400,
        openai_error(
            "Invalid schema for function 'lookup': 'foo' is not valid under any of the given schemas"
        ),
        "invalid_request",
        None,
    ),
    ("plain 400", 400, openai_error("Invalid value for 'temperature'."), "invalid_request", None),
    # -- policy: reported as a reason; the loop applies allow_policy_fallback ---------------------
    (
        "policy code",
        400,
        openai_error("Rejected by the safety system.", "content_policy_violation"),
        "policy",
        "policy",
    ),
    # -- other statuses ---------------------------------------------------------------------------
    (
        "429",
        429,
        openai_error("Rate limit reached", "rate_limit_exceeded"),
        "rate_limit",
        "rate_limit",
    ),
    ("403", 403, "forbidden", "unavailable", "unavailable"),
    ("408", 408, "request timeout", "unavailable", "unavailable"),
    ("500", 500, openai_error("server error"), "unavailable", "unavailable"),
    ("503", 503, "Service Unavailable", "unavailable", "unavailable"),
    ("599", 599, None, "unavailable", "unavailable"),
    ("401", 401, openai_error("bad key"), "invalid_request", None),
    ("404", 404, openai_error("no such model"), "invalid_request", None),
    ("409", 409, None, "invalid_request", None),
    ("499", 499, None, "invalid_request", None),
    ("600", 600, None, "upstream_http", None),
]


@pytest.mark.parametrize(
    ("case", "status", "body", "kind", "reason"), CASES, ids=[c[0] for c in CASES]
)
def test_classification_table(case, status, body, kind, reason):
    error = sy.errors.classify(status, body)
    assert error is not None
    assert error.kind == kind
    assert error.http_status == status
    found = sy.errors.fallback_reason(error)
    assert (found.value if found else None) == reason


def test_success_is_not_an_error():
    assert sy.errors.classify(200, {"choices": []}) is None
    assert sy.errors.classify(204) is None


def test_retry_after_in_seconds_milliseconds_and_http_dates():
    assert sy.errors.classify(429, None, {"Retry-After": "7"}).retry_after_s == 7.0
    assert sy.errors.classify(429, None, {"retry-after-ms": "1500"}).retry_after_s == 1.5
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    date = "Thu, 01 Jan 2026 12:00:30 GMT"
    assert sy.errors.classify(429, None, {"retry-after": date}, now=now).retry_after_s == 30.0
    assert sy.errors.classify(429, None, {"retry-after": "soon"}).retry_after_s is None
    assert sy.errors.classify(429, None, None).retry_after_s is None


@pytest.mark.parametrize("status", [403, 408, 500, 502, 503, 504, 529])
def test_every_unavailable_status_carries_its_retry_after(status):
    assert sy.errors.classify(status, None, {"Retry-After": "1"}).retry_after_s == 1.0
    assert sy.errors.classify(status, None, {"retry-after-ms": "250"}).retry_after_s == 0.25
    assert sy.errors.classify(status, None, None).retry_after_s is None


def test_a_retry_waits_the_retry_after_of_a_503_capped_like_a_429s():
    policy = sy.HostPolicy(backoff_initial_s=0.25)
    overloaded = sy.errors.classify(503, None, {"Retry-After": "1"})
    assert policy.backoff_s(0, overloaded.retry_after_s) == 1.0
    assert (
        policy.backoff_s(0, sy.errors.classify(503, None, {"Retry-After": "600"}).retry_after_s)
        == 60
    )
    assert policy.backoff_s(1, sy.errors.classify(503).retry_after_s) == 0.5


def test_timeouts_and_transport_failures():
    timeout = sy.ModelTimeout("no answer", model="m")
    assert sy.errors.fallback_reason(timeout) is None  # retried, but not a fallback reason
    transport = sy.UnavailableError("connection reset", model="m")
    assert sy.errors.fallback_reason(transport) is sy.errors.FallbackReason.UNAVAILABLE
    assert sy.errors.fallback_reason(ValueError("not a model error")) is None


def test_the_model_and_message_are_kept():
    error = sy.errors.classify(
        400, openai_error("x does not support image input"), model="text-only"
    )
    assert isinstance(error, sy.CapabilityError)
    assert error.model == "text-only" and "image input" in error.message
    assert "capability from 'text-only' (HTTP 400)" in str(error)


def test_a_huge_error_body_is_kept_cut_but_classified_whole():
    """A proxy's 2 MB HTML page is not carried by the error an algorithm catches, and a phrase
    deep in a long raw body still classifies it."""
    page = "<html>" + "x" * 2_000_000 + "</html>"
    error = sy.errors.classify(502, page)
    assert error.kind == "unavailable"
    assert len(error.message) < 4100 and error.message.startswith("<html>xxx")
    assert error.message.endswith("[1,996,013 more characters]")
    deep = sy.errors.classify(400, "y" * 10_000 + " does not support image input")
    assert deep.kind == "capability" and len(deep.message) < 4100
    short = "model is overloaded"
    assert sy.errors.classify(503, short).message == short


def test_bad_status_type_is_a_type_error():
    with pytest.raises(TypeError, match="status"):
        sy.errors.classify("400", None)
