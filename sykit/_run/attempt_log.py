"""The attempt log of a run: one entry per attempt, appended when it starts and completed when it
ends, in four typed arrays.

No row object is kept: an attempt is an index into typed arrays (``array.array``: 8 bytes a float,
1–4 bytes a code or count, 63 bytes an attempt). Only what cannot be derived is stored (the frame,
:mod:`.frames`, computes the rest), and a request's totals are accumulated on its state as its
attempts end, so the request row needs no scan. A spilling run hands the attempts over as raw
columns (:mod:`.records` says their layout) while it goes: attempts keep their run-wide index
(``AttemptLog.base`` counts those handed over), so a running request still reaches its own.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import RecordLimit
from sykit._base.vocab import Status
from sykit._run.frames import AttemptColumns
from sykit._run.records import (
    DECISION_BIT,
    FAILURE_COLUMN,
    FLAGS_COLUMN,
    PAIRS_COLUMN,
    PER_REQUEST_LIMIT,
    RETRIED_BIT,
    RUNNING,
    SERVED_BIT,
    SERVICE_FIELD,
    STATUS_CODE,
    Codes,
    array_bytes,
    decoded,
)

__all__ = ["AttemptLog"]

NAN = math.nan

_OK, _ERROR, _CANCELLED, _SKIPPED = (
    STATUS_CODE[Status.OK],
    STATUS_CODE[Status.ERROR],
    STATUS_CODE[Status.CANCELLED],
    STATUS_CODE[Status.SKIPPED],
)

# An attempt's fields, by width. Floats: start, end, time to first token, cost. 32-bit ints:
# request, failure (a code for the (error kind, message) pair), input and output tokens. 16-bit:
# call and race (numbered within the request), model, HTTP status, candidate index. 8-bit: retry
# index, status, fallback reason, cancel cause and four flags (phase, kind, retried, served).
_F, _I, _H, _B = 4, 4, 5, 5  # the strides
_NEW_F = array("d", (0.0, NAN, NAN, 0.0))
_NEW_I = array("i", (0, -1, 0, 0))
_NEW_H = array("h", (0, -1, 0, 0, 0))
_NEW_B = array("b", (0, RUNNING, -1, -1, 0))


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
    #: not values, for the few-valued ones); with :meth:`record_queues`, also the service starts
    #: (:data:`~sykit._run.records.SERVICE_FIELD`).
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
            target.frombytes(array_bytes(rows))
        cached = columns.get("cached_input_tokens")
        written = columns.get("cache_write_tokens")
        if cached is not None and written is not None and (cached.any() or written.any()):
            pairs = np.stack([cached, written], axis=1).astype(np.int32)
            self._cache_upto(first - self.base)
            assert self.cache is not None
            self.cache.frombytes(array_bytes(pairs))
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
        self._set_flag(index, RETRIED_BIT, retried)

    def set_served(self, index: int) -> None:
        """This attempt's answer is the one its request served."""
        self._set_flag(index, SERVED_BIT, True)

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
        return (self.b[index * _B + 4] & DECISION_BIT) >> 1 if index >= 0 else -1

    def model_code_of(self, index: int) -> int:
        """The code of the attempt's model."""
        index -= self.base
        return self.h[index * _H + 2] if index >= 0 else -1

    def fallback_of(self, index: int) -> int:
        """The attempt's fallback reason code (−1: none)."""
        index -= self.base
        return self.b[index * _B + 2] if index >= 0 else -1

    def retried_of(self, index: int) -> bool:
        """Whether a retry follows the attempt (its call waits for it, or has made it)."""
        index -= self.base
        return bool(self.b[index * _B + 4] & RETRIED_BIT) if index >= 0 else False

    def start_of(self, index: int) -> float:
        index -= self.base
        return self.f[index * _F] if index >= 0 else NAN

    def ttft_of(self, index: int) -> float:
        index -= self.base
        return self.f[index * _F + 2] if index >= 0 else NAN

    def cost_of(self, index: int) -> float:
        index -= self.base
        return self.f[index * _F + 3] if index >= 0 else NAN

    def served_of(self, index: int) -> tuple[float, float, float, str, int]:
        """What a request's row reads of the attempt that served it, in one call: its start,
        time to first token, cost, model and kind code."""
        index -= self.base
        if index < 0:
            raise LookupError("this attempt's request has finished and its records were written")
        f = self.f
        base = index * _F
        return (
            f[base],
            f[base + 2],
            f[base + 3],
            self.models.values[self.h[index * _H + 2]],
            (self.b[index * _B + 4] & DECISION_BIT) >> 1,
        )

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
            columns[SERVICE_FIELD] = self._service_column(n, forget=True)
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
            columns[SERVICE_FIELD] = self._service_column(self.held(), forget=False)
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
            FAILURE_COLUMN: ints[:, self.FAILURE],
            PAIRS_COLUMN: pairs,
            FLAGS_COLUMN: bytes_[:, self.FLAGS],
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
        kinds = (columns[FLAGS_COLUMN] & DECISION_BIT) >> 1
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
