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
_OK, _ERROR, _CANCELLED, _SKIPPED = (
    STATUS_CODE[Status.OK],
    STATUS_CODE[Status.ERROR],
    STATUS_CODE[Status.CANCELLED],
    STATUS_CODE[Status.SKIPPED],
)


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


_NEW_F = array("d", (0.0, NAN, NAN, 0.0, NAN))
_NEW_I = array("i", (0, 0, 0, -1, -1, 0, 0))
_NEW_H = array("h", (0, 0, 0, 0, RUNNING, -1, 0, -1, 0, -1, 0))


class AttemptLog:
    """One entry per attempt (or cooldown skip): three typed arrays with a fixed stride.

    Floats (start, end, time to first token, cost, quality), 32-bit ints (request, call, model,
    race, message, input and output tokens) and 16-bit codes (candidate, retry, phase, kind,
    status, error kind, HTTP status, fallback reason, retried, cancel cause, served): three C-level
    ``extend`` calls record a new attempt, about 90 bytes of live memory in all.
    """

    __slots__ = ("f", "h", "i", "kinds", "messages", "models")

    # float fields
    START, END, TTFT, COST, QUALITY = range(5)
    # int32 fields
    REQUEST, CALL, MODEL, RACE, MESSAGE, INPUT, OUTPUT = range(7)
    # int16 fields
    CANDIDATE, RETRY, PHASE, KIND, STATUS, ERROR_KIND, HTTP, FALLBACK, RETRIED, CAUSE, SERVED = (
        range(11)
    )

    def __init__(self, models: Sequence[str]) -> None:
        self.models = Codes(models)
        self.kinds = Codes()
        self.messages = Codes()
        self.f = array("d")
        self.i = array("i")
        self.h = array("h")

    def __len__(self) -> int:
        return len(self.f) // 5

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
        f, i, h = self.f, self.i, self.h
        index = len(f) // 5
        f.extend(_NEW_F)  # copying a template is cheaper than building a tuple of defaults
        i.extend(_NEW_I)
        h.extend(_NEW_H)
        f[index * 5] = start
        base = index * 7
        i[base] = request
        i[base + 1] = call
        i[base + 2] = model
        i[base + 3] = race
        base = index * 11
        h[base] = candidate
        h[base + 1] = retry
        h[base + 2] = phase
        h[base + 3] = kind
        return index

    # -- how an attempt ends ------------------------------------------------------------------------
    def ok(self, index: int, end: float, ttft: float | None, quality: float | None) -> None:
        f = self.f
        base = index * 5
        f[base + 1] = end
        if ttft is not None:
            f[base + 2] = ttft
        if quality is not None:
            f[base + 4] = quality
        self.h[index * 11 + 4] = _OK

    def fail(
        self, index: int, end: float, kind: str, message: str, http_status: int | None
    ) -> None:
        self.f[index * 5 + 1] = end
        h = self.h
        base = index * 11
        h[base + 4] = _ERROR
        h[base + 5] = self.kinds.code(kind)
        self.i[index * 7 + 4] = self.messages.code(message)
        if http_status is not None:
            h[base + 6] = http_status

    def cancelled(self, index: int, end: float, cause: int) -> None:
        self.f[index * 5 + 1] = end
        h = self.h
        base = index * 11
        h[base + 4] = _CANCELLED
        h[base + 9] = cause

    def skipped(self, index: int, end: float, message: str) -> None:
        self.f[index * 5 + 1] = end
        h = self.h
        base = index * 11
        h[base + 4] = _SKIPPED
        h[base + 5] = self.kinds.code("cooldown")
        self.i[index * 7 + 4] = self.messages.code(message)

    def bill(self, index: int, input_tokens: int, output_tokens: int, cost: float) -> None:
        i = self.i
        base = index * 7
        i[base + 5] = input_tokens
        i[base + 6] = output_tokens
        self.f[index * 5 + 3] = cost

    def set_h(self, index: int, field: int, value: int) -> None:
        self.h[index * 11 + field] = value

    def get_h(self, index: int, field: int) -> int:
        return self.h[index * 11 + field]

    def get_i(self, index: int, field: int) -> int:
        return self.i[index * 7 + field]

    def get_f(self, index: int, field: int) -> float:
        return self.f[index * 5 + field]

    def model_of(self, index: int) -> str:
        return self.models.values[self.i[index * 7 + 2]]

    def fail_message(self, index: int, kind: str, message: str) -> None:
        """Rewrite the error kind and message of a failed attempt (a host's own failure)."""
        self.h[index * 11 + 5] = self.kinds.code(kind)
        self.i[index * 7 + 4] = self.messages.code(message)

    # -- the frame ------------------------------------------------------------------------------
    def frame(
        self, strategy: str, ids: Sequence[Any], keep: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The ``attempts`` DataFrame (columns: :data:`ATTEMPT_COLUMNS`); with ``keep`` (a boolean
        per request index), only the attempts of those requests."""
        n_all = len(self)
        floats = np.frombuffer(self.f, dtype=np.float64).reshape(n_all, 5)
        ints = np.frombuffer(self.i, dtype=np.int32).reshape(n_all, 7)
        codes = np.frombuffer(self.h, dtype=np.int16).reshape(n_all, 11)
        request = ints[:, 0]
        order = np.argsort(request, kind="stable")
        if keep is not None:
            order = order[keep[request[order]]]
        floats, ints, codes = floats[order], ints[order], codes[order]
        request = ints[:, 0]
        n = len(order)
        call = ints[:, 1]
        new_call = np.ones(n, dtype=bool)
        if n:
            new_call[1:] = (request[1:] != request[:-1]) | (call[1:] != call[:-1])
        call_id = (np.cumsum(new_call) - 1).astype(np.int32)
        race_id = _renumber(request, ints[:, 3])
        start = floats[:, 0].copy()
        end = floats[:, 1].copy()
        http = codes[:, 6].copy()
        columns: dict[str, Any] = {
            "strategy": pd.Categorical.from_codes(np.zeros(n, np.int8), [strategy]),
            "request_id": _ids(ids, request),
            "call_id": call_id,
            "phase": _categorical(codes[:, 2], [p.value for p in Phase]),
            "kind": _categorical(codes[:, 3], [k.value for k in Kind]),
            "model": _categorical(ints[:, 2], self.models.values),
            "candidate_index": codes[:, 0].copy(),
            "retry_index": codes[:, 1].copy(),
            "start_s": start,
            "end_s": end,
            "latency_s": (end - start).astype(np.float32),
            "ttft_s": floats[:, 2].astype(np.float32),
            "status": _categorical(codes[:, 4], [s.value for s in Status]),
            "error_kind": _categorical(codes[:, 5], self.kinds.values),
            "error_message": _categorical(ints[:, 4], self.messages.values),
            "http_status": pd.arrays.IntegerArray(http, http == 0),
            "fallback_reason": _categorical(codes[:, 7], [r.value for r in FallbackReason]),
            "retried": codes[:, 8].astype(bool),
            "cancel_cause": _categorical(codes[:, 9], [c.value for c in CancelCause]),
            "race_id": pd.arrays.IntegerArray(race_id, race_id < 0),
            "input_tokens": ints[:, 5].copy(),
            "output_tokens": ints[:, 6].copy(),
            "cost_usd": floats[:, 3].copy(),
            "quality": floats[:, 4].copy(),
            "served": codes[:, 10].astype(bool),
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
