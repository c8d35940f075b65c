"""Retry-After in every spelling a provider sends, read once for every host.

``Retry-After`` (RFC 9110) is a number of seconds or an HTTP-date; OpenAI-style servers also send
``retry-after-ms``. sykit's own retries (``HostPolicy``) wait :attr:`RetryAfter.seconds`:
``retry-after-ms`` when it is a usable number, else ``Retry-After``'s seconds, else its date minus
the response's ``Date`` header (minus the clock when the response has no ``Date``): the precedence
of OpenAI's own client, and RFC 9110's reading of a date. A client that reads ``Retry-After`` alone
and measures a date against its own clock (LiteLLM) needs the header as sent and the date's
distance from the clock when the answer came, so both are kept beside the reading.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["RetryAfter", "read_retry_after"]


@dataclass(frozen=True, slots=True)
class RetryAfter:
    """What an error answer said about when to come back.

    ``seconds`` is what sykit's own retries wait (None: nothing usable was sent). ``header`` is the
    ``Retry-After`` header as sent (None when absent), ``ms`` the ``retry-after-ms`` header as sent,
    and ``date_s`` a ``Retry-After`` date's distance from the clock when the answer came, in
    seconds (negative for a date in the past; None when ``Retry-After`` is not a date)."""

    seconds: float | None = None
    header: str | None = None
    ms: str | None = None
    date_s: float | None = None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _number(text: str | None, scale: float = 1.0) -> float | None:
    """``text`` as a finite number ≥ 0 (times ``scale``), else None."""
    if text is None:
        return None
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _date(text: str | None) -> datetime | None:
    """An HTTP-date (any form ``email.utils`` reads; without a zone it is UTC), else None."""
    if not text:
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def read_retry_after(
    headers: Mapping[str, str] | None, now: datetime | None = None
) -> RetryAfter | None:
    """The Retry-After headers of a response, or None when it sent neither spelling.

    ``now`` is the clock when the answer came (default: the current time); it measures a date only
    when the response has no usable ``Date`` header, and always gives ``date_s``."""
    if not headers:
        return None
    raw = _header(headers, "retry-after")
    ms = _header(headers, "retry-after-ms")
    if raw is None and ms is None:
        return None
    seconds = _number(ms, 0.001)
    date_s = None
    if raw is not None and _number(raw) is None:
        when = _date(raw.strip())
        if when is not None:
            clock = now or datetime.now(UTC)
            date_s = (when - clock).total_seconds()
            sent = _date(_header(headers, "date"))
            since = date_s if sent is None else (when - sent).total_seconds()
            if seconds is None:
                seconds = max(0.0, since)
    if seconds is None:
        seconds = _number(raw)
    return RetryAfter(seconds=seconds, header=raw, ms=ms, date_s=date_s)
