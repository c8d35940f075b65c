"""The records of a run: column arrays appended per attempt and per request, frames built once.

No row object is kept: an attempt is an index into typed arrays (``array.array``: 8 bytes a float,
1–4 bytes a code or count), written when it starts and completed when it ends. Few-valued strings
(statuses, models, error kinds, messages) are stored as small integer codes and become pandas
categoricals. A request's totals (cost, attempts, cancellations, …) are accumulated on its state as
its attempts end, so the request row needs no scan. The DataFrames are built once, at the end of a
run, with narrow dtypes; rows are ordered by request, then by when each attempt started, and call
and race ids are numbered in that order, so the frames do not depend on how simultaneous events
were interleaved.

A spilling run (:mod:`sykit._spill`) hands the records over as raw columns while it goes: finished
requests, and the attempts before the first one of any unfinished request. Attempts keep their
run-wide index (``AttemptLog.base`` counts those handed over), and the frames are built from raw
columns by :func:`attempt_frame` and :func:`request_frame`, so records read back give the same
frames.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
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
    "appearing",
    "attempt_frame",
    "categorical",
    "request_frame",
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
    "retry_wait_s",
    "cancel_cause",
    "race_id",
    "race_size",
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
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
            value = str(value)  # a plain str, also for an enum's member (its value)
            code = self.index[value] = len(self.values)
            self.values.append(value)
        return code


def categorical(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    return pd.Categorical.from_codes(codes.astype(_code_dtype(len(categories))), list(categories))


def appearing(codes: np.ndarray, values: Sequence[str]) -> pd.Categorical:
    """The values ``codes`` use (−1: missing), with only those categories, in the order they
    first appear: a frame's categories then depend on its rows alone, not on the order in which
    an engine happened to record them."""
    present = codes >= 0
    used, first = np.unique(codes[present], return_index=True)
    used = used[np.argsort(first, kind="stable")]
    remap = np.full(len(values) + 1, -1, dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    return categorical(remap[codes], [values[c] for c in used.tolist()])


def _code_dtype(n: int) -> type:
    return np.int8 if n < 127 else np.int16 if n < 32_000 else np.int32


_NEW_F = array("d", (0.0, NAN, NAN, 0.0, NAN))
_NEW_I = array("i", (0, 0, 0, -1, -1, 0, 0, 0, 0))
_I = len(_NEW_I)  # int32 fields per attempt
_NEW_H = array("h", (0, 0, 0, 0, RUNNING, -1, 0, -1, 0, -1, 0))


class AttemptLog:
    """One entry per attempt (or cooldown skip): three typed arrays with a fixed stride.

    Floats (start, end, time to first token, cost, quality), 32-bit ints (request, call, model,
    race, message, input and output tokens) and 16-bit codes (candidate, retry, phase, kind,
    status, error kind, HTTP status, fallback reason, retried, cancel cause, served): three C-level
    ``extend`` calls record a new attempt, about 90 bytes of live memory in all.
    """

    __slots__ = ("base", "f", "h", "i", "kinds", "messages", "models", "open_from", "service")

    # float fields
    START, END, TTFT, COST, QUALITY = range(5)
    # int32 fields
    REQUEST, CALL, MODEL, RACE, MESSAGE, INPUT, OUTPUT, CACHED, WRITTEN = range(9)
    # int16 fields
    CANDIDATE, RETRY, PHASE, KIND, STATUS, ERROR_KIND, HTTP, FALLBACK, RETRIED, CAUSE, SERVED = (
        range(11)
    )
    #: The names of the fields of each array, in order (the raw columns :meth:`hand_over` gives).
    FLOAT_FIELDS = ("start_s", "end_s", "ttft_s", "cost_usd", "quality")
    #: The raw column of service starts, kept only when a model declares a capacity
    #: (:meth:`record_queues`): the attempts frame then has ``queue_s``.
    SERVICE_FIELD = "service_start_s"
    INT_FIELDS = (
        "request",
        "call",
        "model",
        "race",
        "message",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
    )
    CODE_FIELDS = (
        "candidate_index",
        "retry_index",
        "phase",
        "kind",
        "status",
        "error_kind",
        "http_status",
        "fallback_reason",
        "retried",
        "cancel_cause",
        "served",
    )

    def __init__(self, models: Sequence[str]) -> None:
        self.models = Codes(models)
        self.kinds = Codes()
        self.messages = Codes()
        self.f = array("d")
        self.i = array("i")
        self.h = array("h")
        # Attempts are numbered over the whole run; the first ``base`` have been handed over
        # (written out by a spilling run) and are no longer held here.
        self.base = 0
        # when each attempt at a model with a capacity started service, by run-wide index (None:
        # no model of the run declares one, and the frames have no queue_s)
        self.service: dict[int, float] | None = None
        # the first attempt (run-wide index) not yet ended at the last in_flight count: every
        # one before it had ended by then, so later counts, at later instants, skip them
        self.open_from = 0

    def record_queues(self) -> None:
        """Keep each attempt's service start (:meth:`set_service_start`): the frame gets
        ``queue_s``."""
        if self.service is None:
            self.service = {}

    def set_service_start(self, index: int, start: float) -> None:
        """When attempt ``index`` started, or would have started, service at its model (NaN: it
        reached no queue)."""
        if self.service is not None and start == start and index >= self.base:
            self.service[index] = start

    def __len__(self) -> int:
        """Attempts recorded in the run so far, handed over ones included."""
        return self.base + len(self.f) // 5

    def held(self) -> int:
        """Attempts still held in the arrays."""
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
        base = index * _I
        i[base] = request
        i[base + 1] = call
        i[base + 2] = model
        i[base + 3] = race
        base = index * 11
        h[base] = candidate
        h[base + 1] = retry
        h[base + 2] = phase
        h[base + 3] = kind
        return self.base + index

    def extend(self, floats: np.ndarray, ints: np.ndarray, codes: np.ndarray) -> int:
        """Append finished attempts given as the three arrays' rows ((m, 5) float64, (m, 9)
        int32, (m, 11) int16, fields in the order of :attr:`FLOAT_FIELDS`, :attr:`INT_FIELDS`
        and :attr:`CODE_FIELDS`); returns the run-wide index of the first."""
        first = len(self)
        self.f.frombytes(np.ascontiguousarray(floats, dtype=np.float64).tobytes())
        self.i.frombytes(np.ascontiguousarray(ints, dtype=np.int32).tobytes())
        self.h.frombytes(np.ascontiguousarray(codes, dtype=np.int16).tobytes())
        return first

    # -- how an attempt ends ------------------------------------------------------------------------
    # Every method takes the run-wide index ``begin`` returned. An index below ``base`` is an
    # attempt already handed over: only a task that outlived its request (one that ignored
    # cancellation on an asyncio loop) can still reach one, and its late change is not recorded.
    def ok(
        self,
        index: int,
        end: float,
        ttft: float | None,
        quality: float | None,
        http_status: int = 200,
    ) -> None:
        index -= self.base
        if index < 0:
            return
        f = self.f
        base = index * 5
        f[base + 1] = end
        if ttft is not None:
            f[base + 2] = ttft
        if quality is not None:
            f[base + 4] = quality
        h = self.h
        base = index * 11
        h[base + 4] = _OK
        h[base + 6] = http_status

    def fail(
        self, index: int, end: float, kind: str, message: str, http_status: int | None
    ) -> None:
        index -= self.base
        if index < 0:
            return
        self.f[index * 5 + 1] = end
        h = self.h
        base = index * 11
        h[base + 4] = _ERROR
        h[base + 5] = self.kinds.code(kind)
        self.i[index * _I + 4] = self.messages.code(message)
        if http_status is not None:
            h[base + 6] = http_status

    def cancelled(self, index: int, end: float, cause: int) -> None:
        index -= self.base
        if index < 0:
            return
        self.f[index * 5 + 1] = end
        h = self.h
        base = index * 11
        h[base + 4] = _CANCELLED
        h[base + 9] = cause

    def skipped(self, index: int, end: float, message: str) -> None:
        index -= self.base
        if index < 0:
            return
        self.f[index * 5 + 1] = end
        h = self.h
        base = index * 11
        h[base + 4] = _SKIPPED
        h[base + 5] = self.kinds.code("cooldown")
        self.i[index * _I + 4] = self.messages.code(message)

    def bill(
        self,
        index: int,
        input_tokens: int,
        output_tokens: int,
        cost: float,
        cached: int = 0,
        written: int = 0,
    ) -> None:
        index -= self.base
        if index < 0:
            return
        i = self.i
        base = index * _I
        i[base + 5] = input_tokens
        i[base + 6] = output_tokens
        if cached or written:
            i[base + 7] = cached
            i[base + 8] = written
        self.f[index * 5 + 3] = cost

    def set_ttft(self, index: int, ttft: float) -> None:
        """When the first token came (seconds from the start) to an attempt that ended unserved."""
        index -= self.base
        if index >= 0:
            self.f[index * 5 + 2] = ttft

    def set_h(self, index: int, field: int, value: int) -> None:
        index -= self.base
        if index >= 0:
            self.h[index * 11 + field] = value

    # A handed-over attempt reads as −1 (NaN for floats): it belongs to a finished request, so it
    # matches no request still running.
    def get_h(self, index: int, field: int) -> int:
        index -= self.base
        return self.h[index * 11 + field] if index >= 0 else -1

    def get_i(self, index: int, field: int) -> int:
        index -= self.base
        return self.i[index * _I + field] if index >= 0 else -1

    def get_f(self, index: int, field: int) -> float:
        index -= self.base
        return self.f[index * 5 + field] if index >= 0 else NAN

    def model_of(self, index: int) -> str:
        index -= self.base
        if index < 0:
            raise LookupError("this attempt's request has finished and its records were written")
        return self.models.values[self.i[index * _I + 2]]

    def fail_message(self, index: int, kind: str, message: str) -> None:
        """Rewrite the error kind and message of a failed attempt (a host's own failure)."""
        index -= self.base
        if index < 0:
            return
        self.h[index * 11 + 5] = self.kinds.code(kind)
        self.i[index * _I + 4] = self.messages.code(message)

    def in_flight(self, model: int, now: float) -> int:
        """Attempts at ``model`` (its code) with ``start < now <= end`` (an unended one's end is
        NaN). Attempts already handed over (a spilling run's) belong to finished requests: not
        counted. Counts are asked at instants that never go back (the run's clock)."""
        held = self.held()
        first = max(self.open_from - self.base, 0)
        if first >= held:
            return 0
        # views of the arrays, dropped before returning (the arrays cannot grow while viewed)
        floats = np.frombuffer(self.f, dtype=np.float64).reshape(held, 5)[first:]
        ints = np.frombuffer(self.i, dtype=np.int32).reshape(held, _I)[first:]
        still_open = ~(floats[:, self.END] < now)
        ended = int(still_open.argmax()) if still_open.any() else held - first
        self.open_from = self.base + first + ended
        still_open &= ints[:, self.MODEL] == model
        still_open &= floats[:, self.START] < now
        del floats, ints
        return int(np.count_nonzero(still_open))

    # -- handing attempts over (a spilling run) ---------------------------------------------------
    def held_requests(self) -> np.ndarray:
        """The request index of each attempt still held (a copy)."""
        return np.frombuffer(self.i[0::_I], dtype=np.int32)

    def hand_over(self, n: int) -> dict[str, np.ndarray]:
        """The first ``n`` attempts still held, as raw columns (:attr:`FLOAT_FIELDS`,
        :attr:`INT_FIELDS`, :attr:`CODE_FIELDS`: codes, not values), dropped from the arrays.
        Their run-wide indices stay valid for the attempts after them."""
        columns = _raw_columns(self.f, self.i, self.h, n)
        if self.service is not None:
            columns[self.SERVICE_FIELD] = self._service_column(n, forget=True)
        del self.f[: n * 5]
        del self.i[: n * _I]
        del self.h[: n * 11]
        self.base += n
        return columns

    def raw(self) -> dict[str, np.ndarray]:
        """Every attempt still held, as the raw columns of :meth:`hand_over` (views)."""
        columns = _raw_columns(self.f, self.i, self.h, self.held(), copy=False)
        if self.service is not None:
            columns[self.SERVICE_FIELD] = self._service_column(self.held(), forget=False)
        return columns

    def _service_column(self, n: int, forget: bool) -> np.ndarray:
        """The service starts of the first ``n`` attempts held (NaN where none), dropped from
        :attr:`service` with ``forget``."""
        service = self.service
        assert service is not None
        column = np.full(n, NAN)
        base = self.base
        for index, start in list(service.items()):
            if index < base + n:
                column[index - base] = start
                if forget:
                    del service[index]
        return column

    def drop(self) -> None:
        """Let go of the attempts held (once their frame is built): the memory a run holds
        at its end is then its frames, not its frames and its records."""
        self.base += self.held()
        self.f, self.i, self.h = array("d"), array("i"), array("h")
        if self.service is not None:
            self.service = {}

    # -- the frame ------------------------------------------------------------------------------
    def frame(
        self, strategy: str, ids: Sequence[Any], keep: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The ``attempts`` DataFrame (columns: :data:`ATTEMPT_COLUMNS`) of the attempts held;
        with ``keep`` (a boolean per request index), only the attempts of those requests."""
        return attempt_frame(
            self.raw(),
            self.models.values,
            self.kinds.values,
            self.messages.values,
            strategy,
            ids,
            keep,
        )


def _raw_columns(f: array, i: array, h: array, n: int, copy: bool = True) -> dict[str, np.ndarray]:
    """The first ``n`` rows of the three strided arrays as one array per field; with ``copy``
    the arrays own their memory (the ``array.array`` buffers are not exported, so they can
    still be resized)."""
    if copy:
        f, i, h = f[: n * 5], i[: n * _I], h[: n * 11]  # slicing an array.array copies it
    floats = np.frombuffer(f, dtype=np.float64, count=n * 5).reshape(n, 5)
    ints = np.frombuffer(i, dtype=np.int32, count=n * _I).reshape(n, _I)
    codes = np.frombuffer(h, dtype=np.int16, count=n * 11).reshape(n, 11)
    columns: dict[str, np.ndarray] = {}
    for matrix, names in (
        (floats, AttemptLog.FLOAT_FIELDS),
        (ints, AttemptLog.INT_FIELDS),
        (codes, AttemptLog.CODE_FIELDS),
    ):
        for k, name in enumerate(names):
            columns[name] = matrix[:, k]
    return columns


def attempt_frame(
    raw: Mapping[str, np.ndarray],
    models: Sequence[str],
    kinds: Sequence[str],
    messages: Sequence[str],
    strategy: str,
    ids: Sequence[Any] | np.ndarray,
    keep: np.ndarray | None = None,
) -> pd.DataFrame:
    """The ``attempts`` DataFrame from raw columns (see :meth:`AttemptLog.hand_over`) in the
    order the attempts started, and the code tables of models, error kinds and messages; with
    ``keep`` (a boolean per request index), only the attempts of those requests."""
    request = raw["request"]
    order = np.argsort(request, kind="stable")
    if keep is not None:
        order = order[keep[request[order]]]
    request = request[order]
    n = len(order)

    def take(name: str) -> np.ndarray:
        return raw[name][order]

    # a call's number within its request, in the order the request's calls started: the
    # first attempt and every retry and fallback of one call share it, however calls overlap
    call_id = take("call").astype(np.int32, copy=False)
    race_id, race_size = _races(_renumber(request, take("race")), call_id)
    start = take("start_s")
    end = take("end_s")
    http = take("http_status")
    retried = take("retried").astype(bool)
    columns: dict[str, Any] = {
        "strategy": pd.Categorical.from_codes(np.zeros(n, np.int8), [strategy]),
        "request_id": _ids(ids, request),
        "call_id": call_id,
        "phase": categorical(take("phase"), [p.value for p in Phase]),
        "kind": categorical(take("kind"), [k.value for k in Kind]),
        "model": categorical(take("model"), models),
        "candidate_index": take("candidate_index"),
        "retry_index": take("retry_index"),
        "start_s": start,
        "end_s": end,
        "latency_s": (end - start).astype(np.float32),
        "ttft_s": take("ttft_s").astype(np.float32),
        "status": categorical(take("status"), [s.value for s in Status]),
        "error_kind": appearing(take("error_kind"), kinds),
        "error_message": appearing(take("message"), messages),
        "http_status": pd.arrays.IntegerArray(http, http == 0),
        "fallback_reason": categorical(take("fallback_reason"), [r.value for r in FallbackReason]),
        "retried": retried,
        "retry_wait_s": _retry_waits(request, call_id, start, end, retried),
        "cancel_cause": categorical(take("cancel_cause"), [c.value for c in CancelCause]),
        "race_id": pd.arrays.IntegerArray(race_id, race_id < 0),
        "race_size": race_size,
        "input_tokens": take("input_tokens"),
        "cached_input_tokens": take("cached_input_tokens"),
        "cache_write_tokens": take("cache_write_tokens"),
        "output_tokens": take("output_tokens"),
        "cost_usd": take("cost_usd"),
        "quality": take("quality"),
        "served": take("served").astype(bool),
    }
    names = list(ATTEMPT_COLUMNS)
    service = raw.get(AttemptLog.SERVICE_FIELD)
    if service is not None:  # a model declares a capacity: how long each attempt queued
        served = np.minimum(np.maximum(service[order], start), end)
        columns["queue_s"] = (served - start).astype(np.float32)
        names.insert(names.index("ttft_s") + 1, "queue_s")
    # copy=False: the columns are new arrays already; consolidating them would hold each twice
    return pd.DataFrame(columns, columns=names, copy=False)


def _races(race_id: np.ndarray, call_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Race ids of real races only (two calls or more: not a lone call under ``sy.timeout`` or a
    hedge that never sent its copy), renumbered in order, and each row's race size (0: none)."""
    size = np.zeros(len(race_id), dtype=np.int16)
    present = race_id >= 0
    if not present.any():
        return race_id, size
    races, calls_of = race_id[present], call_id[present]
    order = np.lexsort((calls_of, races))
    races, calls_of = races[order], calls_of[order]
    first = np.ones(len(races), dtype=bool)  # the first row of each (race, call) pair
    first[1:] = (races[1:] != races[:-1]) | (calls_of[1:] != calls_of[:-1])
    calls = np.bincount(races[first], minlength=int(race_id.max()) + 1)
    size[present] = np.minimum(calls[race_id[present]], np.iinfo(np.int16).max)
    lone = present & (size < 2)
    if lone.any():
        race_id = race_id.copy()
        race_id[lone] = -1
        size[lone] = 0
        race_id = _renumber(np.zeros(len(race_id), dtype=np.int32), race_id)
    return race_id, size


def _retry_waits(
    request: np.ndarray,
    call_id: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    retried: np.ndarray,
) -> np.ndarray:
    """On each row followed by a retry: how long the candidate loop waited before it (NaN
    elsewhere). The retry is the call's next attempt: a call's attempts run one after another."""
    wait = np.full(len(call_id), np.nan, dtype=np.float32)
    rows = np.flatnonzero(retried)
    if not len(rows):
        return wait
    # each call's attempts together, in start order (rows are in start order within a request)
    order = np.lexsort((np.arange(len(call_id)), call_id, request))
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    after = position[rows] + 1
    valid = after < len(order)
    following = order[np.minimum(after, len(order) - 1)]
    valid &= (call_id[following] == call_id[rows]) & (request[following] == request[rows])
    wait[rows[valid]] = start[following[valid]] - end[rows[valid]]
    return wait


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


def _ids(ids: Sequence[Any] | np.ndarray, index: np.ndarray) -> Any:
    """The request ids of ``index``: integers when every id is an int (or ``ids`` is an integer
    array), else categorical text."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind == "i":
        values = ids.astype(np.int64)
        if len(values) and values.min() >= -(2**31) and values.max() < 2**31:
            values = values.astype(np.int32)
        return values[index]
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

    def extend(
        self, columns: Mapping[str, np.ndarray], extras: Mapping[int, dict[str, Any]]
    ) -> None:
        """Append rows given as one array per field of :attr:`FIELDS` (codes, not values), and
        their extra values by position among them."""
        first = len(self.index)
        for name, code in self.FIELDS:
            values = np.ascontiguousarray(columns[name], dtype=np.dtype(code))
            getattr(self, name).frombytes(values.tobytes())
        for position, extra in extras.items():
            if extra:
                self.extras[first + position] = extra

    #: The raw columns of :meth:`hand_over`, with their array type codes.
    FIELDS: tuple[tuple[str, str], ...] = (
        ("index", "i"),
        ("status", "b"),
        ("error_kind", "h"),
        ("message", "i"),
        ("selected", "i"),
        ("served", "i"),
        ("arrival", "d"),
        ("start", "d"),
        ("end", "d"),
        ("ttft", "d"),
        ("routing", "d"),
        ("n_attempts", "i"),
        ("n_cancelled", "i"),
        ("n_fallbacks", "i"),
        ("n_retries", "i"),
        ("cost", "d"),
        ("wasted", "d"),
        ("routing_usd", "d"),
        ("quality", "d"),
        ("reads_truth", "b"),
    )

    def raw(self) -> dict[str, np.ndarray]:
        """The rows held, as one array per field of :attr:`FIELDS` (codes, not values; views)."""
        return {name: _view(getattr(self, name), code) for name, code in self.FIELDS}

    def hand_over(self) -> tuple[dict[str, np.ndarray], dict[int, dict[str, Any]]]:
        """Every row held, as the raw columns of :meth:`raw` (copies) and the extra values by row
        position; the log is left empty (its code tables stay)."""
        columns = {name: _view(getattr(self, name)[:], code) for name, code in self.FIELDS}
        extras = self.extras
        for name, code in self.FIELDS:
            setattr(self, name, array(code))
        self.extras = {}
        return columns, extras

    def frame(self, strategy: str, ids: Sequence[Any]) -> pd.DataFrame:
        """The ``requests`` DataFrame of the rows held (see :func:`request_frame`)."""
        return request_frame(
            self.raw(),
            self.extras,
            self.models.values,
            self.kinds.values,
            self.messages.values,
            strategy,
            ids,
        )


def _view(values: array, code: str) -> np.ndarray:
    """``values`` as a NumPy array sharing its memory (an empty one when it holds nothing)."""
    dtype = np.dtype(code)
    return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype)


def request_frame(
    raw: Mapping[str, np.ndarray],
    extras: Mapping[int, Mapping[str, Any]],
    models: Sequence[str],
    kinds: Sequence[str],
    messages: Sequence[str],
    strategy: str,
    ids: Sequence[Any] | np.ndarray,
) -> pd.DataFrame:
    """The ``requests`` DataFrame: :data:`REQUEST_COLUMNS` in request order, then the request's
    metadata, the dataset's other columns and the algorithm's evidence (``evidence_<key>``),
    from raw columns in the order requests finished (see :meth:`RequestLog.raw`), the extra
    values by row position and the code tables."""
    index = raw["index"]
    order = np.argsort(index, kind="stable")
    n = len(order)

    def take(name: str) -> np.ndarray:
        return raw[name][order]

    start = take("start")
    end = take("end")
    arrival = take("arrival")
    columns: dict[str, Any] = {
        "strategy": pd.Categorical.from_codes(np.zeros(n, np.int8), [strategy]),
        "request_id": _ids(ids, index[order]),
        "status": categorical(take("status"), [s.value for s in RequestStatus]),
        "error_kind": appearing(take("error_kind"), kinds),
        "error_message": appearing(take("message"), messages),
        "selected_model": categorical(take("selected"), models),
        "served_model": categorical(take("served"), models),
        "arrival_s": arrival,
        "start_s": start,
        "end_s": end,
        "latency_s": end - start,
        "queue_s": start - arrival,
        "ttft_s": take("ttft"),
        "routing_s": take("routing"),
        "n_attempts": take("n_attempts"),
        "n_cancelled": take("n_cancelled"),
        "n_fallbacks": take("n_fallbacks"),
        "n_retries": take("n_retries"),
        "cost_usd": take("cost"),
        "wasted_usd": take("wasted"),
        "routing_usd": take("routing_usd"),
        "quality": take("quality"),
        "reads_truth": take("reads_truth").astype(bool),
    }
    frame = pd.DataFrame(columns, columns=list(REQUEST_COLUMNS), copy=False)
    if extras:
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        names: dict[str, None] = {}
        for extra in extras.values():
            names.update(dict.fromkeys(extra))
        for key in names:
            values: list[Any] = [None] * n
            for row, extra in extras.items():
                if key in extra:
                    values[position[row]] = extra[key]
            frame[key] = _column(values)
    return frame


def _column(values: list[Any]) -> Any:
    """A column of metadata or evidence values with the dtype pandas infers (objects kept)."""
    series = pd.Series(values, dtype=object)
    return series.infer_objects()
