"""The request log of a run: one entry per finished request, as typed column arrays.

A request's row is added once it has finished, in the order requests finish, from the totals its
state accumulated as its attempts ended (no scan of the attempt log). A spilling run hands the rows
over as raw columns while it goes (:mod:`sykit._run.spill`); the ``requests`` frame is built from
the same columns (:func:`~sykit._run.frames.request_columns`).
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._results.result import FrameColumns
from sykit._run.frames import request_columns
from sykit._run.records import Codes, array_bytes

if TYPE_CHECKING:
    from sykit.datasets._items import RowValues

__all__ = ["RequestLog"]


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
            getattr(self, name).frombytes(array_bytes(values))
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

    def frame(
        self, strategy: str, ids: Sequence[Any], rows: RowValues | None = None
    ) -> pd.DataFrame:
        """The ``requests`` DataFrame of the rows held (see :func:`request_columns`)."""
        return self.frame_columns(strategy, ids, rows).load()

    def frame_columns(
        self, strategy: str, ids: Sequence[Any], rows: RowValues | None = None
    ) -> FrameColumns:
        """The ``requests`` DataFrame of the rows held, as its columns (made into the frame when
        first used; see :func:`request_columns`)."""
        return request_columns(
            self.raw(),
            self.extras,
            self.models.values,
            self.kinds.values,
            self.messages.values,
            strategy,
            ids,
            rows,
        )


def _view(values: array, code: str) -> np.ndarray:
    """``values`` as a NumPy array sharing its memory (an empty one when it holds nothing)."""
    dtype = np.dtype(code)
    return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype)
