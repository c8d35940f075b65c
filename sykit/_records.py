"""The records of a run: column arrays appended per attempt and per request, frames built once.

No row object is kept: an attempt is an index into typed arrays (``array.array``: 8 bytes a float,
1–4 bytes a code or count), written when it starts and completed when it ends. Few-valued strings
(statuses, models, error kinds, messages) are stored as small integer codes and become pandas
categoricals. A request's totals (cost, attempts, cancellations, …) are accumulated on its state as
its attempts end, so the request row needs no scan. The DataFrames are built once, at the end of a
run, with narrow dtypes; rows are ordered by request, then by when each attempt started, and call
and race ids are numbered in that order, so the frames do not depend on how simultaneous events
were interleaved.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._classify import FallbackReason
from ._vocab import CancelCause, Kind, Phase, RequestStatus, Status

__all__ = [
    "ATTEMPT_COLUMNS",
    "REQUEST_COLUMNS",
    "AttemptLog",
    "Codes",
    "RequestLog",
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

#: Codes of the enum-valued columns: the enum's order (−1 means missing).
STATUS_CODE = {s: i for i, s in enumerate(Status)}
PHASE_CODE = {p: i for i, p in enumerate(Phase)}
KIND_CODE = {k: i for i, k in enumerate(Kind)}
CAUSE_CODE = {c: i for i, c in enumerate(CancelCause)}
REASON_CODE = {r: i for i, r in enumerate(FallbackReason)}
RUNNING = -1


class Codes:
    """Strings stored as small integer codes, in order of first appearance."""

    __slots__ = ("index", "values")

    def __init__(self, values: Sequence[str] = ()) -> None:
        self.values: list[str] = list(values)
        self.index: dict[str, int] = {v: i for i, v in enumerate(self.values)}

    def code(self, value: str | None) -> int:
        if value is None:
            return -1
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.values)
            self.values.append(value)
        return code


def _categorical(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    return pd.Categorical.from_codes(codes.astype(_code_dtype(len(categories))), list(categories))


def _code_dtype(n: int) -> type:
    return np.int8 if n < 127 else np.int16 if n < 32_000 else np.int32


class AttemptLog:
    """One entry per attempt (or cooldown skip), as typed column arrays."""

    __slots__ = (
        "call",
        "cancel_cause",
        "candidate",
        "cost",
        "end",
        "error_kind",
        "fallback",
        "http_status",
        "input_tokens",
        "kind",
        "kinds",
        "message",
        "messages",
        "model",
        "models",
        "output_tokens",
        "phase",
        "quality",
        "race",
        "request",
        "retried",
        "retry",
        "served",
        "start",
        "status",
        "ttft",
    )

    def __init__(self, models: Sequence[str]) -> None:
        self.models = Codes(models)
        self.kinds = Codes()
        self.messages = Codes()
        self.request = array("i")
        self.call = array("i")
        self.phase = array("b")
        self.kind = array("b")
        self.model = array("i")
        self.candidate = array("h")
        self.retry = array("h")
        self.race = array("i")
        self.start = array("d")
        self.end = array("d")
        self.ttft = array("d")
        self.status = array("b")
        self.error_kind = array("h")
        self.message = array("i")
        self.http_status = array("h")
        self.fallback = array("b")
        self.retried = array("b")
        self.cancel_cause = array("b")
        self.input_tokens = array("i")
        self.output_tokens = array("i")
        self.cost = array("d")
        self.quality = array("d")
        self.served = array("b")

    def __len__(self) -> int:
        return len(self.request)

    def begin(
        self,
        request: int,
        call: int,
        phase: int,
        kind: int,
        model: int,
        candidate: int,
        retry: int,
        race: int,
        start: float,
    ) -> int:
        """A new attempt that starts at ``start``; returns its index."""
        index = len(self.request)
        self.request.append(request)
        self.call.append(call)
        self.phase.append(phase)
        self.kind.append(kind)
        self.model.append(model)
        self.candidate.append(candidate)
        self.retry.append(retry)
        self.race.append(race)
        self.start.append(start)
        self.end.append(NAN)
        self.ttft.append(NAN)
        self.status.append(RUNNING)
        self.error_kind.append(-1)
        self.message.append(-1)
        self.http_status.append(0)
        self.fallback.append(-1)
        self.retried.append(0)
        self.cancel_cause.append(-1)
        self.input_tokens.append(0)
        self.output_tokens.append(0)
        self.cost.append(0.0)
        self.quality.append(NAN)
        self.served.append(0)
        return index

    def fail(
        self, index: int, end: float, kind: str, message: str, http_status: int | None
    ) -> None:
        self.end[index] = end
        self.status[index] = 1  # Status.ERROR
        self.error_kind[index] = self.kinds.code(kind)
        self.message[index] = self.messages.code(message)
        if http_status is not None:
            self.http_status[index] = http_status

    def frame(self, strategy: str, ids: Sequence[Any]) -> pd.DataFrame:
        """The ``attempts`` DataFrame (columns: :data:`ATTEMPT_COLUMNS`)."""
        request = np.frombuffer(self.request, dtype=np.int32)
        order = np.argsort(request, kind="stable")
        request = request[order]
        n = len(order)

        def take(column: array, dtype: Any) -> np.ndarray:
            values = np.frombuffer(column, dtype=dtype) if len(column) else np.zeros(0, dtype)
            return values[order]

        call = take(self.call, np.int32)
        new_call = np.ones(n, dtype=bool)
        if n:
            new_call[1:] = (request[1:] != request[:-1]) | (call[1:] != call[:-1])
        call_id = (np.cumsum(new_call) - 1).astype(np.int32)
        race_local = take(self.race, np.int32)
        race_id = _renumber(request, race_local)
        start = take(self.start, np.float64)
        end = take(self.end, np.float64)
        status = take(self.status, np.int8)
        http = take(self.http_status, np.int16)
        retried = take(self.retried, np.int8).astype(bool)
        served = take(self.served, np.int8).astype(bool)
        columns: dict[str, Any] = {
            "strategy": pd.Categorical.from_codes(np.zeros(n, np.int8), [strategy]),
            "request_id": _ids(ids, request),
            "call_id": call_id,
            "phase": _categorical(take(self.phase, np.int8), [p.value for p in Phase]),
            "kind": _categorical(take(self.kind, np.int8), [k.value for k in Kind]),
            "model": _categorical(take(self.model, np.int32), self.models.values),
            "candidate_index": take(self.candidate, np.int16),
            "retry_index": take(self.retry, np.int16),
            "start_s": start,
            "end_s": end,
            "latency_s": (end - start).astype(np.float32),
            "ttft_s": take(self.ttft, np.float64).astype(np.float32),
            "status": _categorical(status, [s.value for s in Status]),
            "error_kind": _categorical(take(self.error_kind, np.int16), self.kinds.values),
            "error_message": _categorical(take(self.message, np.int32), self.messages.values),
            "http_status": pd.arrays.IntegerArray(http, http == 0),
            "fallback_reason": _categorical(
                take(self.fallback, np.int8), [r.value for r in FallbackReason]
            ),
            "retried": retried,
            "cancel_cause": _categorical(
                take(self.cancel_cause, np.int8), [c.value for c in CancelCause]
            ),
            "race_id": pd.arrays.IntegerArray(race_id, race_id < 0),
            "input_tokens": take(self.input_tokens, np.int32),
            "output_tokens": take(self.output_tokens, np.int32),
            "cost_usd": take(self.cost, np.float64),
            "quality": take(self.quality, np.float64),
            "served": served,
        }
        return pd.DataFrame(columns, columns=list(ATTEMPT_COLUMNS))


def _renumber(request: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Run-wide ids for per-request ones (−1 kept): numbered in frame order of first appearance."""
    out = np.full(len(local), -1, dtype=np.int32)
    present = local >= 0
    if not present.any():
        return out
    keys = request[present].astype(np.int64) * (1 << 31) + local[present]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int32)
    out[present] = rank[inverse]
    return out


def _ids(ids: Sequence[Any], index: np.ndarray) -> Any:
    """The request ids of ``index``: integers when every id is an int, else categorical text."""
    if all(type(v) is int for v in ids):
        values = np.asarray(ids, dtype=np.int64)
        if len(values) and values.min() >= -(2**31) and values.max() < 2**31:
            values = values.astype(np.int32)
        return values[index]
    categories = [str(v) for v in ids]
    return pd.Categorical.from_codes(index.astype(_code_dtype(len(categories))), categories)


class RequestLog:
    """One entry per finished request, as typed column arrays (in the order requests finish)."""

    __slots__ = (
        "arrival",
        "cost",
        "end",
        "error_kind",
        "extras",
        "index",
        "kinds",
        "message",
        "messages",
        "models",
        "n_attempts",
        "n_cancelled",
        "n_fallbacks",
        "n_retries",
        "quality",
        "reads_truth",
        "routing",
        "routing_usd",
        "selected",
        "served",
        "start",
        "status",
        "ttft",
        "wasted",
    )

    def __init__(self, models: Codes) -> None:
        self.models = models
        self.kinds = Codes()
        self.messages = Codes()
        self.index = array("i")
        self.status = array("b")
        self.error_kind = array("h")
        self.message = array("i")
        self.selected = array("i")
        self.served = array("i")
        self.arrival = array("d")
        self.start = array("d")
        self.end = array("d")
        self.ttft = array("d")
        self.routing = array("d")
        self.n_attempts = array("i")
        self.n_cancelled = array("i")
        self.n_fallbacks = array("i")
        self.n_retries = array("i")
        self.cost = array("d")
        self.wasted = array("d")
        self.routing_usd = array("d")
        self.quality = array("d")
        self.reads_truth = array("b")
        self.extras: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.index)

    def add(
        self,
        index: int,
        failure: tuple[str, str] | None,
        selected: str | None,
        served: str | None,
        arrival: float,
        start: float,
        end: float,
        ttft: float,
        routing: float,
        counts: tuple[int, int, int, int],
        money: tuple[float, float, float],
        quality: float,
        reads_truth: bool,
        extra: dict[str, Any] | None,
    ) -> None:
        self.index.append(index)
        if failure is None:
            self.status.append(0)
            self.error_kind.append(-1)
            self.message.append(-1)
        else:
            self.status.append(1)
            self.error_kind.append(self.kinds.code(failure[0]))
            self.message.append(self.messages.code(failure[1]))
        self.selected.append(self.models.code(selected))
        self.served.append(self.models.code(served))
        self.arrival.append(arrival)
        self.start.append(start)
        self.end.append(end)
        self.ttft.append(ttft)
        self.routing.append(routing)
        self.n_attempts.append(counts[0])
        self.n_cancelled.append(counts[1])
        self.n_fallbacks.append(counts[2])
        self.n_retries.append(counts[3])
        self.cost.append(money[0])
        self.wasted.append(money[1])
        self.routing_usd.append(money[2])
        self.quality.append(quality)
        self.reads_truth.append(1 if reads_truth else 0)
        if extra:
            self.extras[len(self.index) - 1] = extra

    def frame(self, strategy: str, ids: Sequence[Any]) -> pd.DataFrame:
        """The ``requests`` DataFrame: :data:`REQUEST_COLUMNS` in request order, then the
        request's metadata, the dataset's other columns and the algorithm's evidence
        (``evidence_<key>``)."""
        index = np.frombuffer(self.index, dtype=np.int32) if len(self.index) else np.zeros(0, int)
        order = np.argsort(index, kind="stable")
        n = len(order)

        def take(column: array, dtype: Any) -> np.ndarray:
            values = np.frombuffer(column, dtype=dtype) if len(column) else np.zeros(0, dtype)
            return values[order]

        start = take(self.start, np.float64)
        end = take(self.end, np.float64)
        arrival = take(self.arrival, np.float64)
        messages = np.array([None, *self.messages.values], dtype=object)
        columns: dict[str, Any] = {
            "strategy": pd.Categorical.from_codes(np.zeros(n, np.int8), [strategy]),
            "request_id": _ids(ids, index[order]),
            "status": _categorical(take(self.status, np.int8), [s.value for s in RequestStatus]),
            "error_kind": _categorical(take(self.error_kind, np.int16), self.kinds.values),
            "error_message": messages[take(self.message, np.int32) + 1],
            "selected_model": _categorical(take(self.selected, np.int32), self.models.values),
            "served_model": _categorical(take(self.served, np.int32), self.models.values),
            "arrival_s": arrival,
            "start_s": start,
            "end_s": end,
            "latency_s": end - start,
            "queue_s": start - arrival,
            "ttft_s": take(self.ttft, np.float64),
            "routing_s": take(self.routing, np.float64),
            "n_attempts": take(self.n_attempts, np.int32),
            "n_cancelled": take(self.n_cancelled, np.int32),
            "n_fallbacks": take(self.n_fallbacks, np.int32),
            "n_retries": take(self.n_retries, np.int32),
            "cost_usd": take(self.cost, np.float64),
            "wasted_usd": take(self.wasted, np.float64),
            "routing_usd": take(self.routing_usd, np.float64),
            "quality": take(self.quality, np.float64),
            "reads_truth": take(self.reads_truth, np.int8).astype(bool),
        }
        frame = pd.DataFrame(columns, columns=list(REQUEST_COLUMNS))
        if self.extras:
            position = np.empty(n, dtype=np.int64)
            position[order] = np.arange(n)
            names: dict[str, None] = {}
            for extra in self.extras.values():
                names.update(dict.fromkeys(extra))
            for key in names:
                values: list[Any] = [None] * n
                for row, extra in self.extras.items():
                    if key in extra:
                        values[position[row]] = extra[key]
                frame[key] = _column(values)
        return frame


def _column(values: list[Any]) -> Any:
    """A column of metadata or evidence values with the dtype pandas infers (objects kept)."""
    series = pd.Series(values, dtype=object)
    return series.infer_objects()
