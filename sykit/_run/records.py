"""The records of a run: column arrays appended per attempt and per request, frames built once.

No row object is kept: an attempt is an index into typed arrays (``array.array``: 8 bytes a float,
1–4 bytes a code or count, 63 bytes an attempt), written when it starts and completed when it ends. Few-valued strings
(statuses, models, error kinds, messages) are stored as small integer codes and become pandas
categoricals. A request's totals (cost, attempts, cancellations, …) are accumulated on its state as
its attempts end, so the request row needs no scan. The DataFrames are built once, with narrow
dtypes: the requests frame at the end of a run, the attempts frame when first used
(:class:`AttemptColumns`); rows are ordered by request, then by when each attempt started, and call
and race ids are numbered in that order, so the frames do not depend on how simultaneous events
were interleaved.

A spilling run (:mod:`sykit._run.spill`) hands the records over as raw columns while it goes: finished
requests, and the attempts before the first one of any unfinished request. Attempts keep their
run-wide index (``AttemptLog.base`` counts those handed over), and the frames are built from raw
columns by :func:`attempt_frame` and :func:`request_frame`, so records read back give the same
frames.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import RecordLimit
from sykit._base.vocab import CancelCause, Kind, Phase, RequestStatus, Status
from sykit._world.classify import FallbackReason

__all__ = [
    "ATTEMPT_COLUMNS",
    "PER_REQUEST_LIMIT",
    "REQUEST_COLUMNS",
    "AttemptColumns",
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
    codes = codes.astype(_code_dtype(len(categories)))
    if (
        len(categories) <= _SHARED_DTYPE_LIMIT
    ):  # statuses, phases, models: one dtype, validated once
        return pd.Categorical.from_codes(codes, dtype=_shared_dtype(tuple(categories)))
    return pd.Categorical.from_codes(codes, list(categories))


#: Category lists up to this long share one CategoricalDtype per list (pandas validates a new
#: one's categories each time, a fixed cost per column that the frames pay many times over).
_SHARED_DTYPE_LIMIT = 64


@functools.lru_cache(maxsize=512)
def _shared_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(list(categories))


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


# An attempt's fields, by width. Floats: start, end, time to first token, cost. 32-bit ints:
# request, failure (a code for the (error kind, message) pair), input and output tokens. 16-bit:
# call and race (numbered within the request), model, HTTP status, candidate index. 8-bit: retry
# index, status, fallback reason, cancel cause and four flags (phase, kind, retried, served).
_F, _I, _H, _B = 4, 4, 5, 5  # the strides
_NEW_F = array("d", (0.0, NAN, NAN, 0.0))
_NEW_I = array("i", (0, -1, 0, 0))
_NEW_H = array("h", (0, -1, 0, 0, 0))
_NEW_B = array("b", (0, RUNNING, -1, -1, 0))
_ANSWER_BIT, _DECISION_BIT, _RETRIED_BIT, _SERVED_BIT = 1, 2, 4, 8
#: How many calls (or races) a request can number, and models a run can name: the records
#: store them as 16-bit codes.
PER_REQUEST_LIMIT = 2**15 - 1


class AttemptLog:
    """One entry per attempt (or cooldown skip): four typed arrays with a fixed stride each.

    63 bytes of live memory per attempt, four C-level ``extend`` calls to record one. Only what
    cannot be derived is stored: the frame computes ``latency_s``, ``race_size``,
    ``retry_wait_s`` and the strategy; an answer's grade is read from the run's truth when the
    records are read (:meth:`raw`); the prompt-cache token counts take memory only once an
    attempt has some. An error's kind and message are one code (a run has few distinct pairs).
    """

    __slots__ = (
        "b",
        "base",
        "cache",
        "f",
        "failures",
        "h",
        "i",
        "kinds",
        "messages",
        "models",
        "open_from",
        "service",
    )

    # float64 fields
    START, END, TTFT, COST = range(_F)
    # int32 fields
    REQUEST, FAILURE, INPUT, OUTPUT = range(_I)
    # int16 fields
    CALL, RACE, MODEL, HTTP, CANDIDATE = range(_H)
    # int8 fields
    RETRY, STATUS, FALLBACK, CAUSE, FLAGS = range(_B)

    #: The raw columns of :meth:`raw` and :meth:`hand_over`, with their array type codes (codes,
    #: not values, for the few-valued ones).
    RAW_FIELDS: tuple[tuple[str, str], ...] = (
        ("start_s", "d"),
        ("end_s", "d"),
        ("ttft_s", "d"),
        ("cost_usd", "d"),
        ("quality", "d"),
        ("request", "i"),
        ("error_kind", "i"),
        ("message", "i"),
        ("input_tokens", "i"),
        ("output_tokens", "i"),
        ("cached_input_tokens", "i"),
        ("cache_write_tokens", "i"),
        ("call", "h"),
        ("race", "h"),
        ("model", "h"),
        ("http_status", "h"),
        ("candidate_index", "h"),
        ("retry_index", "b"),
        ("status", "b"),
        ("fallback_reason", "b"),
        ("cancel_cause", "b"),
        ("phase", "b"),
        ("kind", "b"),
        ("retried", "b"),
        ("served", "b"),
    )
    #: The raw column of service starts, kept only when a model declares a capacity
    #: (:meth:`record_queues`): the attempts frame then has ``queue_s``.
    SERVICE_FIELD = "service_start_s"

    def __init__(self, models: Sequence[str]) -> None:
        if len(models) > PER_REQUEST_LIMIT:
            raise RecordLimit(
                f"a run can name at most {PER_REQUEST_LIMIT:,} models; got {len(models):,}"
            )
        self.models = Codes(models)
        self.kinds = Codes()
        self.messages = Codes()
        # the (kind code, message code) of each failure code, and the code of each pair
        self.failures: dict[tuple[int, int], int] = {}
        self.f = array("d")
        self.i = array("i")
        self.h = array("h")
        self.b = array("b")
        # cached and written input tokens, two per attempt, up to the last attempt that had any
        # (None until one has): a run without prompt caching holds nothing for them
        self.cache: array | None = None
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
        return self.base + len(self.f) // _F

    def held(self) -> int:
        """Attempts still held in the arrays."""
        return len(self.f) // _F

    def bytes_per_attempt(self) -> int:
        """The live memory one attempt takes in the arrays (prompt-cache counts aside)."""
        return sum(
            a.itemsize * n for a, n in ((self.f, _F), (self.i, _I), (self.h, _H), (self.b, _B))
        )

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
        f, h, b = self.f, self.h, self.b
        index = len(f) // _F
        f.extend(_NEW_F)  # copying a template is cheaper than building a tuple of defaults
        self.i.extend(_NEW_I)
        h.extend(_NEW_H)
        b.extend(_NEW_B)
        f[index * _F] = start
        self.i[index * _I] = request
        base = index * _H
        h[base] = call
        h[base + 1] = race
        h[base + 2] = model
        h[base + 4] = candidate
        base = index * _B
        b[base] = retry
        b[base + 4] = phase | kind << 1  # Phase.ANSWER is 1, Kind.DECISION is 1
        return self.base + index

    def failure_code(self, kind: str, message: str) -> int:
        """The code of an error's (kind, message) pair."""
        key = (self.kinds.code(kind), self.messages.code(message))
        code = self.failures.get(key)
        if code is None:
            code = self.failures[key] = len(self.failures)
        return code

    def extend(self, columns: Mapping[str, np.ndarray]) -> int:
        """Append finished attempts given as raw columns (:attr:`RAW_FIELDS`, but ``failure``,
        a :meth:`failure_code`, in place of ``error_kind`` and ``message``; ``quality`` and the
        prompt-cache counts may be left out); returns the run-wide index of the first."""
        first = len(self)
        m = len(columns["request"])
        for target, dtype, width, names in (
            (self.f, np.float64, _F, ("start_s", "end_s", "ttft_s", "cost_usd")),
            (self.i, np.int32, _I, ("request", "failure", "input_tokens", "output_tokens")),
            (self.h, np.int16, _H, ("call", "race", "model", "http_status", "candidate_index")),
            (self.b, np.int8, _B, ("retry_index", "status", "fallback_reason", "cancel_cause")),
        ):
            rows = np.empty((m, width), dtype=dtype)
            for k, name in enumerate(names):
                rows[:, k] = columns[name]
            if target is self.b:
                rows[:, self.FLAGS] = (
                    columns["phase"].astype(np.int8)
                    | columns["kind"].astype(np.int8) << 1
                    | columns["retried"].astype(np.int8) << 2
                    | columns["served"].astype(np.int8) << 3
                )
            target.frombytes(rows.tobytes())
        cached = columns.get("cached_input_tokens")
        written = columns.get("cache_write_tokens")
        if cached is not None and written is not None and (cached.any() or written.any()):
            pairs = np.stack([cached, written], axis=1).astype(np.int32)
            self._cache_upto(first - self.base)
            assert self.cache is not None
            self.cache.frombytes(pairs.tobytes())
        return first

    # -- how an attempt ends ------------------------------------------------------------------------
    # Every method takes the run-wide index ``begin`` returned. An index below ``base`` is an
    # attempt already handed over: only a task that outlived its request (one that ignored
    # cancellation on an asyncio loop) can still reach one, and its late change is not recorded.
    def ok(self, index: int, end: float, ttft: float | None, http_status: int = 200) -> None:
        index -= self.base
        if index < 0:
            return
        f = self.f
        base = index * _F
        f[base + 1] = end
        if ttft is not None:
            f[base + 2] = ttft
        self.b[index * _B + 1] = _OK
        self.h[index * _H + 3] = http_status

    def fail(
        self, index: int, end: float, kind: str, message: str, http_status: int | None
    ) -> None:
        index -= self.base
        if index < 0:
            return
        self.f[index * _F + 1] = end
        self.b[index * _B + 1] = _ERROR
        self.i[index * _I + 1] = self.failure_code(kind, message)
        if http_status is not None:
            self.h[index * _H + 3] = http_status

    def cancelled(self, index: int, end: float, cause: int) -> None:
        index -= self.base
        if index < 0:
            return
        self.f[index * _F + 1] = end
        b = self.b
        base = index * _B
        b[base + 1] = _CANCELLED
        b[base + 3] = cause

    def skipped(self, index: int, end: float, message: str) -> None:
        index -= self.base
        if index < 0:
            return
        self.f[index * _F + 1] = end
        self.b[index * _B + 1] = _SKIPPED
        self.i[index * _I + 1] = self.failure_code("cooldown", message)

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
        i[base + 2] = input_tokens
        i[base + 3] = output_tokens
        if cached or written:
            self._cache_upto(index + 1)
            cache = self.cache
            assert cache is not None
            cache[index * 2] = cached
            cache[index * 2 + 1] = written
        self.f[index * _F + 3] = cost

    def _cache_upto(self, n: int) -> None:
        """Make room for the prompt-cache counts of the first ``n`` attempts held (zeros)."""
        if self.cache is None:
            self.cache = array("i")
        missing = 2 * n - len(self.cache)
        if missing > 0:
            self.cache.frombytes(bytes(4 * missing))

    def set_ttft(self, index: int, ttft: float) -> None:
        """When the first token came (seconds from the start) to an attempt that ended unserved."""
        index -= self.base
        if index >= 0:
            self.f[index * _F + 2] = ttft

    def set_fallback(self, index: int, reason: int) -> None:
        """The fallback reason (its code) that moved the candidate loop on from this attempt."""
        index -= self.base
        if index >= 0:
            self.b[index * _B + 2] = reason

    def set_cause(self, index: int, cause: int) -> None:
        """Why the attempt, or the wait after it, was cancelled (its code)."""
        index -= self.base
        if index >= 0:
            self.b[index * _B + 3] = cause

    def set_retried(self, index: int, retried: bool) -> None:
        self._set_flag(index, _RETRIED_BIT, retried)

    def set_served(self, index: int) -> None:
        """This attempt's answer is the one its request served."""
        self._set_flag(index, _SERVED_BIT, True)

    def _set_flag(self, index: int, bit: int, on: bool) -> None:
        index -= self.base
        if index >= 0:
            position = index * _B + 4
            flags = self.b[position]
            self.b[position] = flags | bit if on else flags & ~bit

    # A handed-over attempt reads as matching nothing (−1, NaN): it belongs to a finished request,
    # so it matches no request still running.
    def request_of(self, index: int) -> int:
        index -= self.base
        return self.i[index * _I] if index >= 0 else -1

    def call_of(self, index: int) -> int:
        index -= self.base
        return self.h[index * _H] if index >= 0 else -1

    def status_of(self, index: int) -> int:
        """The attempt's status code (``RUNNING`` until it ends)."""
        index -= self.base
        return self.b[index * _B + 1] if index >= 0 else -1

    def kind_of(self, index: int) -> int:
        """The attempt's kind code (model or decision call)."""
        index -= self.base
        return (self.b[index * _B + 4] & _DECISION_BIT) >> 1 if index >= 0 else -1

    def start_of(self, index: int) -> float:
        index -= self.base
        return self.f[index * _F] if index >= 0 else NAN

    def ttft_of(self, index: int) -> float:
        index -= self.base
        return self.f[index * _F + 2] if index >= 0 else NAN

    def cost_of(self, index: int) -> float:
        index -= self.base
        return self.f[index * _F + 3] if index >= 0 else NAN

    def model_of(self, index: int) -> str:
        index -= self.base
        if index < 0:
            raise LookupError("this attempt's request has finished and its records were written")
        return self.models.values[self.h[index * _H + 2]]

    def fail_message(self, index: int, kind: str, message: str) -> None:
        """Rewrite the error kind and message of a failed attempt (a host's own failure)."""
        index -= self.base
        if index >= 0:
            self.i[index * _I + 1] = self.failure_code(kind, message)

    def in_flight(self, model: int, now: float) -> int:
        """Attempts at ``model`` (its code) with ``start < now <= end`` (an unended one's end is
        NaN). Attempts already handed over (a spilling run's) belong to finished requests: not
        counted. Counts are asked at instants that never go back (the run's clock)."""
        held = self.held()
        first = max(self.open_from - self.base, 0)
        if first >= held:
            return 0
        # views of the arrays, dropped before returning (the arrays cannot grow while viewed)
        floats = np.frombuffer(self.f, dtype=np.float64).reshape(held, _F)[first:]
        shorts = np.frombuffer(self.h, dtype=np.int16).reshape(held, _H)[first:]
        still_open = ~(floats[:, self.END] < now)
        ended = int(still_open.argmax()) if still_open.any() else held - first
        self.open_from = self.base + first + ended
        still_open &= shorts[:, self.MODEL] == model
        still_open &= floats[:, self.START] < now
        del floats, shorts
        return int(np.count_nonzero(still_open))

    # -- handing attempts over (a spilling run) ---------------------------------------------------
    def held_requests(self) -> np.ndarray:
        """The request index of each attempt still held (a copy)."""
        return np.frombuffer(self.i[0::_I], dtype=np.int32)

    def hand_over(self, n: int) -> dict[str, np.ndarray]:
        """The first ``n`` attempts still held, as raw columns (:attr:`RAW_FIELDS`), dropped from
        the arrays. Their run-wide indices stay valid for the attempts after them."""
        columns = self._raw(n, copy=True)
        if self.service is not None:
            columns[self.SERVICE_FIELD] = self._service_column(n, forget=True)
        del self.f[: n * _F]
        del self.i[: n * _I]
        del self.h[: n * _H]
        del self.b[: n * _B]
        if self.cache is not None:
            del self.cache[: n * 2]
        self.base += n
        return columns

    def raw(self) -> dict[str, np.ndarray]:
        """Every attempt still held, as the raw columns of :meth:`hand_over` (some are views)."""
        columns = self._raw(self.held(), copy=False)
        if self.service is not None:
            columns[self.SERVICE_FIELD] = self._service_column(self.held(), forget=False)
        return columns

    def _raw(self, n: int, copy: bool) -> dict[str, np.ndarray]:
        """The first ``n`` attempts held as one array per raw field; with ``copy`` the arrays own
        their memory (the ``array.array`` buffers are not exported, so they can still be
        resized)."""
        f, i, h, b = self.f, self.i, self.h, self.b
        if copy:  # slicing an array.array copies it
            f, i, h, b = f[: n * _F], i[: n * _I], h[: n * _H], b[: n * _B]
        floats = np.frombuffer(f, dtype=np.float64, count=n * _F).reshape(n, _F)
        ints = np.frombuffer(i, dtype=np.int32, count=n * _I).reshape(n, _I)
        shorts = np.frombuffer(h, dtype=np.int16, count=n * _H).reshape(n, _H)
        bytes_ = np.frombuffer(b, dtype=np.int8, count=n * _B).reshape(n, _B)
        pairs = np.asarray(list(self.failures), dtype=np.int32).reshape(-1, 2)
        pairs = np.vstack([pairs, [-1, -1]])  # code −1 (no failure) picks the last row
        columns: dict[str, np.ndarray] = {
            "start_s": floats[:, self.START],
            "end_s": floats[:, self.END],
            "ttft_s": floats[:, self.TTFT],
            "cost_usd": floats[:, self.COST],
            "request": ints[:, self.REQUEST],
            # decoded into error_kind and message, and the flags into phase, kind, retried and
            # served, by decoded(): where the frame is built, or now for a hand-over
            _FAILURE: ints[:, self.FAILURE],
            _PAIRS: pairs,
            _FLAGS: bytes_[:, self.FLAGS],
            "input_tokens": ints[:, self.INPUT],
            "output_tokens": ints[:, self.OUTPUT],
            "call": shorts[:, self.CALL],
            "race": shorts[:, self.RACE],
            "model": shorts[:, self.MODEL],
            "http_status": shorts[:, self.HTTP],
            "candidate_index": shorts[:, self.CANDIDATE],
            "retry_index": bytes_[:, self.RETRY],
            "status": bytes_[:, self.STATUS],
            "fallback_reason": bytes_[:, self.FALLBACK],
            "cancel_cause": bytes_[:, self.CAUSE],
        }
        if self.cache is not None or copy:
            cache = np.zeros((n, 2), dtype=np.int32)
            if self.cache is not None:
                held = np.frombuffer(self.cache, dtype=np.int32)[: 2 * n].reshape(-1, 2)
                cache[: len(held)] = held
                del held
            columns["cached_input_tokens"] = cache[:, 0]
            columns["cache_write_tokens"] = cache[:, 1]
        else:  # no attempt has any: zeros that take no memory until the frame is built
            zeros = np.broadcast_to(np.int32(0), (n,))
            columns["cached_input_tokens"] = columns["cache_write_tokens"] = zeros
        kinds = (columns[_FLAGS] & _DECISION_BIT) >> 1
        graded = {"request": columns["request"], "model": columns["model"], "kind": kinds}
        columns["quality"] = self.grades({**graded, "status": columns["status"]}, n)
        if not copy:
            return columns
        columns["quality"] = np.ascontiguousarray(columns["quality"])  # written out as it is
        return decoded(columns)

    def grades(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """The grade of each of ``n`` attempts' answers given as raw columns (request, model,
        status, kind; NaN: none). The records of a run with no truth grade nothing (NaNs that
        take no memory until the frame is built); a simulated run's log grades from its truth."""
        return np.broadcast_to(np.float64(NAN), (n,))

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
        self.f, self.i, self.h, self.b = array("d"), array("i"), array("h"), array("b")
        self.cache = None
        if self.service is not None:
            self.service = {}

    # -- the frame ------------------------------------------------------------------------------
    def frame(
        self, strategy: str, ids: Sequence[Any], keep: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The ``attempts`` DataFrame (columns: :data:`ATTEMPT_COLUMNS`) of the attempts held;
        with ``keep`` (a boolean per request index), only the attempts of those requests."""
        return self.columns(strategy, ids, keep).load()

    def columns(
        self, strategy: str, ids: Sequence[Any], keep: np.ndarray | None = None
    ) -> AttemptColumns:
        """The attempts held, as raw columns that become the ``attempts`` frame when first used
        (see :meth:`frame`). The log may then :meth:`drop` them: the columns keep what they
        view."""
        return AttemptColumns(
            self.raw(),
            list(self.models.values),
            list(self.kinds.values),
            list(self.messages.values),
            strategy,
            ids,
            keep,
        )


@dataclass(slots=True)
class AttemptColumns:
    """A run's attempts as raw columns (:meth:`AttemptLog.raw`), made into the ``attempts`` frame
    when it is first used (:func:`attempt_frame` takes the same fields): a run whose attempts
    nobody reads (a threshold sweep's, a cross-fit's folds) never builds that frame. Held in
    memory, the columns take about what the frame would."""

    raw: Mapping[str, np.ndarray]
    models: Sequence[str]
    kinds: Sequence[str]
    messages: Sequence[str]
    strategy: str
    ids: Sequence[Any] | np.ndarray
    keep: np.ndarray | None = None

    @property
    def rows(self) -> int:
        """The rows of the frame it makes."""
        request = self.raw["request"]
        return len(request) if self.keep is None else int(np.count_nonzero(self.keep[request]))

    def load(self) -> pd.DataFrame:
        raw, models, kinds, messages = self.raw, self.models, self.kinds, self.messages
        return attempt_frame(raw, models, kinds, messages, self.strategy, self.ids, self.keep)


_FAILURE, _PAIRS, _FLAGS = "failure", "failure_pairs", "flags"


def decoded(raw: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Raw columns with the packed ones (an error's kind-and-message code, the flags byte)
    decoded into the fields of :attr:`AttemptLog.RAW_FIELDS`; columns already decoded (read
    back from a spill folder) are kept as they are."""
    columns = dict(raw)
    if _FAILURE in columns:
        pairs = columns.pop(_PAIRS)
        failure = columns.pop(_FAILURE)
        columns["error_kind"] = pairs[failure, 0]
        columns["message"] = pairs[failure, 1]
    if _FLAGS in columns:
        flags = columns.pop(_FLAGS)
        columns["phase"] = (flags & _ANSWER_BIT).astype(np.int8)
        columns["kind"] = ((flags & _DECISION_BIT) >> 1).astype(np.int8)
        columns["retried"] = ((flags & _RETRIED_BIT) >> 2).astype(np.int8)
        columns["served"] = ((flags & _SERVED_BIT) >> 3).astype(np.int8)
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
    raw = decoded(raw)
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
        "retry_index": take("retry_index").astype(np.int16),
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
        at = position.tolist()
        by_position: list[Mapping[str, Any]] = [_NO_EXTRA] * n
        for row, extra in extras.items():
            by_position[at[row]] = extra
        # the columns in the order their keys first appear; a row without one holds None
        for key in dict.fromkeys(chain.from_iterable(extras.values())):
            frame[key] = _column([extra.get(key) for extra in by_position])
    return frame


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def _column(values: list[Any]) -> Any:
    """A column of metadata or evidence values with the dtype pandas infers (objects kept)."""
    series = pd.Series(values, dtype=object)
    return series.infer_objects()
