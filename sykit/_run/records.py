"""What a run's records hold: the columns of its frames, the codes of their few-valued strings, and
the raw columns its logs hand over.

No row object is kept: an attempt is an index into typed arrays (:mod:`.attempt_log`), a finished
request a row of column arrays (:mod:`.request_log`), and the DataFrames are built once from raw
columns (:mod:`.frames`). Few-valued strings (statuses, models, error kinds, messages) are stored as
small integer codes (:class:`Codes`, and the enums' codes here) and become pandas categoricals.

A spilling run (:mod:`sykit._run.spill`) hands the records over as raw columns while it goes and
reads them back in the same layout: the attempt log packs an error's kind and message into one
code and four flags into one byte, which :func:`decoded` unpacks wherever raw columns are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sykit._base.vocab import CancelCause, Kind, Phase, Status
from sykit._world.classify import FallbackReason

__all__ = [
    "ANSWER",
    "ANSWER_BIT",
    "ATTEMPT_COLUMNS",
    "CAUSE_CODE",
    "DECISION",
    "DECISION_BIT",
    "FAILURE_COLUMN",
    "FLAGS_COLUMN",
    "KIND_CODE",
    "MODEL",
    "PAIRS_COLUMN",
    "PER_REQUEST_LIMIT",
    "PHASE_CODE",
    "REASON_CODE",
    "REQUEST_COLUMNS",
    "RESERVED",
    "RETRIED_BIT",
    "ROUTING",
    "RUNNING",
    "SERVED_BIT",
    "SERVICE_FIELD",
    "STATUS_CODE",
    "Codes",
    "array_bytes",
    "decoded",
    "row_name",
]

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

#: Metadata and analysis-column keys that would clash with a column of ``result.requests``: they
#: get a ``meta_`` prefix.
RESERVED = frozenset((*REQUEST_COLUMNS, "seed"))

#: Codes of the enum-valued columns: the enum's order (−1 means missing).
STATUS_CODE = {s: i for i, s in enumerate(Status)}
PHASE_CODE = {p: i for i, p in enumerate(Phase)}
KIND_CODE = {k: i for i, k in enumerate(Kind)}
CAUSE_CODE = {c: i for i, c in enumerate(CancelCause)}
REASON_CODE = {r: i for i, r in enumerate(FallbackReason)}
RUNNING = -1
ROUTING, ANSWER = PHASE_CODE[Phase.ROUTING], PHASE_CODE[Phase.ANSWER]
MODEL, DECISION = KIND_CODE[Kind.MODEL], KIND_CODE[Kind.DECISION]
#: How many calls (or races) a request can number, and models a run can name: the records
#: store them as 16-bit codes.
PER_REQUEST_LIMIT = 2**15 - 1


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


# -- the raw columns ------------------------------------------------------------------------------
#: The flags packed in an attempt's flags byte.
ANSWER_BIT, DECISION_BIT, RETRIED_BIT, SERVED_BIT = 1, 2, 4, 8
#: The packed raw columns of the attempt log: an error's (kind, message) code, the table of those
#: pairs, and the flags byte.
FAILURE_COLUMN, PAIRS_COLUMN, FLAGS_COLUMN = "failure", "failure_pairs", "flags"
#: The raw column of service starts, kept only when a model declares a capacity
#: (:meth:`~sykit._run.attempt_log.AttemptLog.record_queues`): the attempts frame then has
#: ``queue_s``.
SERVICE_FIELD = "service_start_s"


def decoded(raw: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Raw columns with the packed ones (an error's kind-and-message code, the flags byte)
    decoded into the fields of :attr:`~sykit._run.attempt_log.AttemptLog.RAW_FIELDS`; columns
    already decoded (read back from a spill folder) are kept as they are."""
    columns = dict(raw)
    if FAILURE_COLUMN in columns:
        pairs = columns.pop(PAIRS_COLUMN)
        failure = columns.pop(FAILURE_COLUMN)
        columns["error_kind"] = pairs[failure, 0]
        columns["message"] = pairs[failure, 1]
    if FLAGS_COLUMN in columns:
        flags = columns.pop(FLAGS_COLUMN)
        columns["phase"] = (flags & ANSWER_BIT).astype(np.int8)
        columns["kind"] = ((flags & DECISION_BIT) >> 1).astype(np.int8)
        columns["retried"] = ((flags & RETRIED_BIT) >> 2).astype(np.int8)
        columns["served"] = ((flags & SERVED_BIT) >> 3).astype(np.int8)
    return columns


def array_bytes(values: np.ndarray) -> memoryview | bytes:
    """A contiguous array's bytes without copying them (for ``array.frombytes``)."""
    return values.data.cast("B") if values.size else b""


#: Metadata names that start like a column name :func:`row_name` makes or an evidence column
#: (``evidence_<key>``): prefixed too, so that no two keys share a column.
_PREFIXED = ("meta_", "evidence_")


def row_name(key: str) -> str:
    """The requests frame's column for a request's metadata or analysis value ``key``: a name
    of the records' own (:data:`RESERVED`) is ``meta_``-prefixed, and so is a name that starts
    with ``meta_`` or ``evidence_``: ``seed`` → ``meta_seed``, ``meta_seed`` → ``meta_meta_seed``,
    ``evidence_x`` → ``meta_evidence_x``. Distinct keys never share a column (nor one of the
    records', nor an evidence column)."""
    if key in RESERVED or (isinstance(key, str) and key.startswith(_PREFIXED)):
        return f"meta_{key}"
    return key  # (a key that is not a string keeps its own: no prefixed name can be it)
