"""The ``attempts`` and ``requests`` DataFrames, built once from raw columns.

The logs (:mod:`.attempt_log`, :mod:`.request_log`) hand their rows over as raw columns of codes; a
spilling run reads the same columns back from Parquet (:mod:`sykit._run.spill`). Both become frames
here, with narrow dtypes: the requests frame at the end of a run, the attempts frame when first
used (:class:`AttemptColumns`). Rows are ordered by request, then by when each attempt started, and
call and race ids are numbered in that order, so the frames do not depend on how simultaneous
events were interleaved.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.vocab import CancelCause, Kind, Phase, RequestStatus, Status
from sykit._results.result import FrameColumns
from sykit._run.records import (
    ATTEMPT_COLUMNS,
    REQUEST_COLUMNS,
    RESERVED,
    SERVICE_FIELD,
    decoded,
    row_name,
)
from sykit._world.classify import FallbackReason

if TYPE_CHECKING:
    from sykit.datasets._items import RowValues

__all__ = [
    "AttemptColumns",
    "appearing",
    "attempt_frame",
    "categorical",
    "request_columns",
]


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


@dataclass(slots=True)
class AttemptColumns:
    """A run's attempts as raw columns (:meth:`~sykit._run.attempt_log.AttemptLog.raw`), made
    into the ``attempts`` frame when it is first used (:func:`attempt_frame` takes the same
    fields): a run whose attempts nobody reads (a threshold sweep's, a cross-fit's folds) never
    builds that frame. Held in memory, the columns take about what the frame would."""

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


def attempt_frame(
    raw: Mapping[str, np.ndarray],
    models: Sequence[str],
    kinds: Sequence[str],
    messages: Sequence[str],
    strategy: str,
    ids: Sequence[Any] | np.ndarray,
    keep: np.ndarray | None = None,
) -> pd.DataFrame:
    """The ``attempts`` DataFrame from raw columns (see
    :meth:`~sykit._run.attempt_log.AttemptLog.hand_over`) in the order the attempts started, and
    the code tables of models, error kinds and messages; with ``keep`` (a boolean per request
    index), only the attempts of those requests."""
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
        "strategy": categorical(np.zeros(n, np.int8), [strategy]),
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
    service = raw.get(SERVICE_FIELD)
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
    values = _id_values(ids)
    if isinstance(values, pd.CategoricalDtype):
        return pd.Categorical.from_codes(
            index.astype(_code_dtype(len(values.categories))), dtype=values
        )
    return values[index]


#: The latest run's ids and what :func:`_ids` makes of them: the runs of one comparison share
#: one list of ids, so its integers, or its categories (validated by pandas each time a dtype
#: is made), are made once for all their frames.
_LAST_IDS: list[tuple[Any, np.ndarray | pd.CategoricalDtype]] = []


def _id_values(ids: Sequence[Any] | np.ndarray) -> np.ndarray | pd.CategoricalDtype:
    """``ids`` as an integer array (int32 where they fit) or a categorical dtype of their text."""
    for held, values in _LAST_IDS:
        if held is ids:
            return values
    if isinstance(ids, np.ndarray) and ids.dtype.kind == "i":
        made: np.ndarray | pd.CategoricalDtype = _narrow(ids.astype(np.int64))
    elif all(type(v) is int for v in ids):
        made = _narrow(np.asarray(ids, dtype=np.int64))
    else:
        made = pd.CategoricalDtype([str(v) for v in ids])
    _LAST_IDS[:] = [(ids, made)]  # the list itself is held: no other list can take its identity
    return made


def _narrow(values: np.ndarray) -> np.ndarray:
    if len(values) and values.min() >= -(2**31) and values.max() < 2**31:
        return values.astype(np.int32)
    return values


def request_columns(
    raw: Mapping[str, np.ndarray],
    extras: Mapping[int, Mapping[str, Any]],
    models: Sequence[str],
    kinds: Sequence[str],
    messages: Sequence[str],
    strategy: str,
    ids: Sequence[Any] | np.ndarray,
    rows: RowValues | None = None,
) -> FrameColumns:
    """The ``requests`` DataFrame as its columns: :data:`REQUEST_COLUMNS` in request order,
    then the request's metadata, the dataset's other columns and the algorithm's evidence
    (``evidence_<key>``), from raw columns in the order requests finished (see
    :meth:`~sykit._run.request_log.RequestLog.raw`), the extra values by row position and the
    code tables. With ``rows``, the dataset's metadata and analysis columns come from there by
    position (the extra values then hold no value of theirs)."""
    index = raw["index"]
    order = np.argsort(index, kind="stable")
    n = len(order)

    def take(name: str) -> np.ndarray:
        return raw[name][order]

    start = take("start")
    end = take("end")
    arrival = take("arrival")
    columns: dict[str, Any] = {
        "strategy": categorical(np.zeros(n, np.int8), [strategy]),
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
    by_position: list[Mapping[str, Any]] = []
    if extras:
        position = np.empty(n, dtype=np.int64)
        position[order] = np.arange(n)
        at = position.tolist()
        by_position = [_NO_EXTRA] * n
        for row, extra in extras.items():
            by_position[at[row]] = extra
    # in the order of the requests, not the order they finished in: the same on every engine
    keys = dict.fromkeys(chain.from_iterable(by_position))
    if rows is not None:  # every row holds these first, as each request's values would
        _dataset_columns(columns, rows, index[order])
    # the columns in the order their keys first appear; a row without one holds None
    for key in keys:
        if key not in columns or key in RESERVED:
            columns[key] = _column([extra.get(key) for extra in by_position])
    names = dict.fromkeys([*REQUEST_COLUMNS, *columns])
    return FrameColumns({name: columns[name] for name in names}, n)


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})


def _dataset_columns(columns: dict[str, Any], rows: RowValues, index: np.ndarray) -> None:
    """Add the dataset's metadata and analysis columns of the requests at ``index`` (sorted) to
    ``columns``, named, ordered and typed as each request's values would have made them (a name
    of the records' own ``meta_``-prefixed: see :func:`~sykit._run.records.row_name`, which
    gives no two of them, and no evidence column, the same name). The columns of every request,
    in order, are made once per dataset."""
    if not len(index):
        return  # no row: no row's values to make columns of
    # every request of the dataset, once each (index is sorted): the columns made once serve
    every = len(index) == rows.count and index[0] == 0 and index[-1] == rows.count - 1
    for name in (*rows.metadata, *rows.analysis):
        if every:
            made = rows.made.get(name)
            if made is None:
                made = _column(rows.values(name))
                if rows.keep:
                    rows.made[name] = made
        else:
            values = rows.values(name)
            made = _column([values[i] for i in index.tolist()])
        columns[row_name(name)] = made


def _column(values: list[Any]) -> Any:
    """A column of metadata or evidence values with the dtype pandas infers (objects kept), and
    one dtype for flags some rows lack: pandas' nullable ``boolean``, not objects mixing True and
    False with None (which no dtype-aware code, and no CSV reader, takes for flags)."""
    series = pd.Series(values, dtype=object).infer_objects()
    if series.dtype == object and _flags(values):
        return series.astype("boolean")
    return series


def _flags(values: list[Any]) -> bool:
    """Whether ``values`` are booleans, some missing (None or NaN), at least one present."""
    present = False
    for value in values:
        if isinstance(value, bool | np.bool_):
            present = True
        elif not (value is None or (isinstance(value, float) and value != value)):
            return False
    return present
