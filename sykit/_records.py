"""Attempt and request rows: declared once, collected cheaply, turned into compact DataFrames.

Rows are slotted objects filled in as an attempt progresses; the DataFrame is built once at the end
of a run, with categorical columns for the few-valued strings and narrow integer types, so an
attempt costs about 100 bytes in the final frame.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "ATTEMPT_COLUMNS",
    "REQUEST_COLUMNS",
    "AttemptRow",
    "RequestRow",
    "attempts_frame",
    "requests_frame",
]

NAN = math.nan

ATTEMPT_COLUMNS: tuple[str, ...] = (
    "strategy",
    "request_id",
    "call_id",
    "phase",
    "kind",
    "model",
    "candidate_index",
    "retry_index",
    "start_s",
    "end_s",
    "latency_s",
    "ttft_s",
    "status",
    "error_kind",
    "error_message",
    "http_status",
    "fallback_reason",
    "retried",
    "cancel_cause",
    "race_id",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "quality",
    "served",
)

REQUEST_COLUMNS: tuple[str, ...] = (
    "strategy",
    "request_id",
    "status",
    "error_kind",
    "error_message",
    "selected_model",
    "served_model",
    "arrival_s",
    "start_s",
    "end_s",
    "latency_s",
    "queue_s",
    "ttft_s",
    "routing_s",
    "n_attempts",
    "n_cancelled",
    "n_fallbacks",
    "n_retries",
    "cost_usd",
    "wasted_usd",
    "routing_usd",
    "quality",
    "reads_truth",
)

STATUSES = ("ok", "error", "cancelled", "skipped")
PHASES = ("routing", "answer")
KINDS = ("model", "decision")
CANCEL_CAUSES = ("lost_race", "timeout", "abandoned", "cancelled", "request_failed")
FALLBACK_REASONS = ("context_window", "capability", "unavailable", "rate_limit", "policy")


class AttemptRow:
    """One attempt at one model (or a cooldown skip), filled in while it runs."""

    __slots__ = (
        "call_id",
        "cancel_cause",
        "candidate_index",
        "cost_usd",
        "end_s",
        "error_kind",
        "error_message",
        "fallback_reason",
        "http_status",
        "input_tokens",
        "kind",
        "model",
        "output_tokens",
        "phase",
        "quality",
        "race_id",
        "request_id",
        "retried",
        "retry_index",
        "served",
        "start_s",
        "status",
        "ttft_s",
    )

    def __init__(
        self,
        request_id: Any,
        call_id: int,
        phase: str,
        kind: str,
        model: str,
        candidate_index: int,
        retry_index: int,
        race_id: int | None,
        start_s: float,
    ) -> None:
        self.request_id = request_id
        self.call_id = call_id
        self.phase = phase
        self.kind = kind
        self.model = model
        self.candidate_index = candidate_index
        self.retry_index = retry_index
        self.race_id = race_id
        self.start_s = start_s
        self.end_s = NAN
        self.ttft_s = NAN
        self.status = "running"
        self.error_kind: str | None = None
        self.error_message: str | None = None
        self.http_status: int | None = None
        self.fallback_reason: str | None = None
        self.retried = False
        self.cancel_cause: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.quality = NAN
        self.served = False  # set when this attempt's answer is the one the request served


class RequestRow:
    """One request's outcome, computed when it ends."""

    __slots__ = (*REQUEST_COLUMNS[1:], "extra")

    def __init__(self, **values: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, values.get(name))


def _categorical(values: Sequence[Any], known: Iterable[str] = ()) -> pd.Categorical:
    present = {v for v in values if v is not None}
    categories = list(known) + sorted(present.difference(known), key=str)
    return pd.Categorical(values, categories=categories)


def _ids(values: list[Any]) -> Any:
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=np.int64)
    return _categorical([str(v) for v in values])


def _nullable_int(values: list[int | None], dtype: str) -> pd.arrays.IntegerArray:
    return pd.array(values, dtype=dtype)


def attempts_frame(strategy: str, rows: list[AttemptRow]) -> pd.DataFrame:
    """The ``attempts`` DataFrame of one run (columns: :data:`ATTEMPT_COLUMNS`)."""
    n = len(rows)
    start = np.fromiter((r.start_s for r in rows), dtype=np.float64, count=n)
    end = np.fromiter((r.end_s for r in rows), dtype=np.float64, count=n)
    columns: dict[str, Any] = {
        "strategy": pd.Categorical([strategy] * n, categories=[strategy]),
        "request_id": _ids([r.request_id for r in rows]),
        "call_id": np.fromiter((r.call_id for r in rows), dtype=np.int32, count=n),
        "phase": pd.Categorical([r.phase for r in rows], categories=PHASES),
        "kind": pd.Categorical([r.kind for r in rows], categories=KINDS),
        "model": _categorical([r.model for r in rows]),
        "candidate_index": np.fromiter((r.candidate_index for r in rows), dtype=np.int8, count=n),
        "retry_index": np.fromiter((r.retry_index for r in rows), dtype=np.int8, count=n),
        "start_s": start,
        "end_s": end,
        "latency_s": end - start,
        "ttft_s": np.fromiter((r.ttft_s for r in rows), dtype=np.float64, count=n),
        "status": pd.Categorical([r.status for r in rows], categories=STATUSES),
        "error_kind": _categorical([r.error_kind for r in rows]),
        "error_message": _categorical([r.error_message for r in rows]),
        "http_status": _nullable_int([r.http_status for r in rows], "Int16"),
        "fallback_reason": pd.Categorical(
            [r.fallback_reason for r in rows], categories=FALLBACK_REASONS
        ),
        "retried": np.fromiter((r.retried for r in rows), dtype=np.bool_, count=n),
        "cancel_cause": pd.Categorical([r.cancel_cause for r in rows], categories=CANCEL_CAUSES),
        "race_id": _nullable_int([r.race_id for r in rows], "Int32"),
        "input_tokens": np.fromiter((r.input_tokens for r in rows), dtype=np.int32, count=n),
        "output_tokens": np.fromiter((r.output_tokens for r in rows), dtype=np.int32, count=n),
        "cost_usd": np.fromiter((r.cost_usd for r in rows), dtype=np.float64, count=n),
        "quality": np.fromiter((r.quality for r in rows), dtype=np.float64, count=n),
        "served": np.fromiter((r.served for r in rows), dtype=np.bool_, count=n),
    }
    return pd.DataFrame(columns, columns=list(ATTEMPT_COLUMNS))


def requests_frame(strategy: str, rows: list[RequestRow]) -> pd.DataFrame:
    """The ``requests`` DataFrame of one run: :data:`REQUEST_COLUMNS` plus the dataset's metadata
    and the algorithms' evidence (``evidence_<key>``)."""
    n = len(rows)

    def floats(name: str) -> np.ndarray:
        return np.array([getattr(r, name) for r in rows], dtype=np.float64)

    def ints(name: str) -> np.ndarray:
        return np.array([getattr(r, name) for r in rows], dtype=np.int32)

    columns: dict[str, Any] = {
        "strategy": pd.Categorical([strategy] * n, categories=[strategy]),
        "request_id": _ids([r.request_id for r in rows]),
        "status": pd.Categorical([r.status for r in rows], categories=("ok", "failed")),
        "error_kind": _categorical([r.error_kind for r in rows]),
        "error_message": [r.error_message for r in rows],
        "selected_model": _categorical([r.selected_model for r in rows]),
        "served_model": _categorical([r.served_model for r in rows]),
    }
    for name in ("arrival_s", "start_s", "end_s", "latency_s", "queue_s", "ttft_s", "routing_s"):
        columns[name] = floats(name)
    for name in ("n_attempts", "n_cancelled", "n_fallbacks", "n_retries"):
        columns[name] = ints(name)
    for name in ("cost_usd", "wasted_usd", "routing_usd", "quality"):
        columns[name] = floats(name)
    columns["reads_truth"] = np.array([bool(r.reads_truth) for r in rows], dtype=np.bool_)
    frame = pd.DataFrame(columns, columns=list(REQUEST_COLUMNS))
    extra_names: dict[str, None] = {}
    for row in rows:
        for key in row.extra:
            extra_names.setdefault(key, None)
    for key in extra_names:
        frame[key] = [row.extra.get(key) for row in rows]
        if frame[key].dtype == object:
            frame[key] = frame[key].infer_objects()
    return frame
