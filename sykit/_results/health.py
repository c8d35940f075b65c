"""Telling a broken algorithm from a bad router: runs where most requests failed on the algorithm's
side warn (or raise under ``strict=True``), and reprs list the top errors.

A misspelt model, a plain ``def`` algorithm, a forgotten ``await`` or a judge missing from the host
fails every request the same way. Without a word, such a run reads like a very bad router
(``success_rate`` 0, mean quality NaN), so :func:`check_algorithms` says so when a run ends.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from sykit._base.errors import SykitError
from sykit._base.vocab import ErrorKind, RequestStatus

__all__ = [
    "ALGORITHM_ERROR_KINDS",
    "AlgorithmError",
    "AlgorithmWarning",
    "ErrorCount",
    "await_hint",
    "broken_message",
    "check_algorithms",
    "top_errors",
]

#: ``error_kind`` values that come from the algorithm, not from a model or judge.
ALGORITHM_ERROR_KINDS = frozenset(
    (
        ErrorKind.ALGORITHM_ERROR,
        ErrorKind.INVALID_OUTCOME,
        ErrorKind.UNKNOWN_MODEL,
        ErrorKind.NO_TARGETS,
        ErrorKind.DEADLOCK,
    )
)

#: Above this share of a strategy's requests failing with one algorithm-side kind, the run warns.
BROKEN_SHARE = 0.5

_COROUTINE = re.compile(r"'(coroutine|Call)' object|\b(got|returned) (coroutine|Call)\b")
_AWAIT_HINT = "did you forget `await`? e.g. `response = await driver.call_model(...)`"


class AlgorithmWarning(UserWarning):
    """Most requests of a strategy failed the same way on the algorithm's side (``algorithm_error``,
    ``invalid_outcome``, ``unknown_model``, ``no_targets`` or ``deadlock``), or most of its agent
    sessions ended so (their later turns unsent): the results measure a bug, not a routing
    policy. ``strict=True`` raises :class:`AlgorithmError` instead."""


class AlgorithmError(SykitError, RuntimeError):
    """Under ``strict=True``: most requests of a strategy failed the same way on the algorithm's
    side (see :class:`AlgorithmWarning`)."""


@dataclass(frozen=True)
class ErrorCount:
    """One ``error_kind`` among a run's failed requests: how many, and the first message."""

    kind: str
    count: int
    message: str


def await_hint(message: str) -> str:
    """A hint when ``message`` shows a coroutine where a result was expected (a call that was not
    awaited), unless the message already carries one."""
    if "forget `await`" in message or not _COROUTINE.search(message):
        return ""
    return f" ({_AWAIT_HINT})"


def top_errors(requests: pd.DataFrame, n: int | None = 3) -> list[ErrorCount]:
    """The failed requests' error kinds, most frequent first (ties: first seen first)."""
    if not len(requests) or "status" not in requests:
        return []
    failed = (requests["status"] == RequestStatus.FAILED).to_numpy()
    if not failed.any():
        return []
    # the two columns of the failed rows, not every column of them
    kinds = requests["error_kind"][failed].astype(object).fillna("unknown").astype(str)
    messages = requests["error_message"][failed].astype(object).fillna("").astype(str)
    counts: dict[str, list] = {}
    for kind, message in zip(kinds, messages, strict=True):
        entry = counts.setdefault(kind, [0, message])
        entry[0] += 1
    ranked = sorted(counts.items(), key=lambda item: -item[1][0])  # stable: first seen first
    return [ErrorCount(kind, count, message) for kind, (count, message) in ranked[:n]]


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def broken_message(strategy: str, requests: pd.DataFrame) -> str | None:
    """The warning for ``strategy`` if more than half its requests failed with one algorithm-side
    error kind, or more than half its agent sessions ended with one, else None."""
    found = _broken(strategy, requests, "requests failed with")
    if found is None and "session_id" in requests.columns and "turn" in requests.columns:
        # A session's turns after a failed one are not sent: an algorithm that fails on every
        # session's third turn leaves two successes per failure, and reads as a cheap router.
        ends = _session_ends(requests)
        if len(ends):
            found = _broken(strategy, ends, "agent sessions ended (their later turns unsent) with")
    return found


def _broken(strategy: str, requests: pd.DataFrame, what: str) -> str | None:
    total = len(requests)
    for error in top_errors(requests, None):
        if error.kind in ALGORITHM_ERROR_KINDS:
            if error.count <= BROKEN_SHARE * total:
                return None
            first = shorten(error.message, 400)
            return (
                f"strategy {strategy!r}: {error.count} of {total} {what} {error.kind} — the "
                f"algorithm is broken, not the models; the first: {first}{await_hint(first)}"
            )
    return None


def _session_ends(requests: pd.DataFrame) -> pd.DataFrame:
    """The last turn each agent session sent (rows without a session left out)."""
    turns = requests[requests["session_id"].notna()]
    if not len(turns):
        return turns
    order = turns.sort_values("turn", kind="stable")
    return order.drop_duplicates("session_id", keep="last").sort_index()


def check_algorithms(
    runs: Iterable[tuple[str, pd.DataFrame]], *, strict: bool, stacklevel: int = 2
) -> None:
    """Warn (``strict``: raise :class:`AlgorithmError`) for each strategy whose requests, over all
    its runs, mostly failed with the same algorithm-side error."""
    frames: dict[str, list[pd.DataFrame]] = {}
    for strategy, requests in runs:
        frames.setdefault(strategy, []).append(requests)
    for strategy, parts in frames.items():
        requests = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        message = broken_message(strategy, requests)
        if message is None:
            continue
        if strict:
            raise AlgorithmError(message)
        warnings.warn(
            message + " (strict=True raises instead)", AlgorithmWarning, stacklevel=stacklevel + 1
        )
