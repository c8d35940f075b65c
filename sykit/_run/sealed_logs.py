"""The run's logs, sealed while the run goes: the ground truth reaches the records only when they
are read.

A simulated host grades each answer from the request's truth, and a dataset may carry analysis
columns; neither is written while the run goes, where an algorithm could read them back from its
driver. The logs here hold closures over the truth that :meth:`~sykit._run.state.RunState.open`
sets: the attempt log grades the answers when its attempts are handed over or read as raw columns
(:class:`GradedAttemptLog`); the request log writes the served answer's grade and the analysis
columns into its rows when they are handed over or read (:class:`SealedRequestLog`,
:class:`SealedSpillingRequestLog`, filled by :func:`request_sealer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sykit._base.vocab import Status
from sykit._run.attempt_log import AttemptLog
from sykit._run.records import MODEL, STATUS_CODE, Codes, row_name
from sykit._run.request_log import RequestLog
from sykit._run.spill import SpillingRequestLog
from sykit._world.truth import TruthTable

if TYPE_CHECKING:  # the sealing mixin is typed as the log it is mixed into
    _RequestLogBase = RequestLog
else:
    _RequestLogBase = object

__all__ = [
    "GradedAttemptLog",
    "NoteGrades",
    "NoteTruth",
    "SealedRequestLog",
    "SealedSpillingRequestLog",
    "attempt_grader",
    "request_sealer",
]

_OK_CODE = STATUS_CODE[Status.OK]

#: ``note_truth(position, index, model, head, tail)``: the truth-dependent parts of the request row
#: about to be added at ``position`` of the request log (see :func:`request_sealer`).
NoteTruth = Callable[
    [int, int, str | None, dict[str, Any], dict[str, Any] | None], dict[str, Any] | None
]
#: ``note_grades(positions, indices, codes, names)``: the served answers to grade (of models
#: ``names[codes]``) of rows about to be added at ``positions`` of the request log, many at once
#: (see :func:`request_sealer`).
NoteGrades = Callable[[np.ndarray, np.ndarray, np.ndarray, Sequence[str]], None]


class GradedAttemptLog(AttemptLog):
    """The attempt log of a run: the answers' grades are not held while the run goes; ``grade``
    (a closure over the run's truth, set by :meth:`~sykit._run.state.RunState.open` on a
    simulated host) reads them when attempts are handed over (a spilling run, only attempts of
    finished requests) or read as raw columns (the frame, at the end)."""

    __slots__ = ("grade",)

    def __init__(self, models: Sequence[str]) -> None:
        super().__init__(models)
        self.grade: Callable[[AttemptLog, Mapping[str, np.ndarray]], np.ndarray] | None = None

    def grades(self, columns: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        if self.grade is None:
            return super().grades(columns, n)
        return self.grade(self, columns)


class _Sealed(_RequestLogBase):
    """What makes a request log sealed: the served answer's grade and the dataset's analysis
    columns of a request reach it when rows are handed over or read as raw columns (``fill``, a
    closure over the run's truth set by :meth:`~sykit._run.state.RunState.open`), not when the
    request ends."""

    __slots__ = ()
    fill: Callable[[RequestLog], None] | None

    def raw(self) -> dict[str, np.ndarray]:
        if self.fill is not None:
            self.fill(self)
        return super().raw()

    def hand_over(self) -> tuple[dict[str, np.ndarray], dict[int, dict[str, Any]]]:
        if self.fill is not None:
            self.fill(self)
        return super().hand_over()


class SealedRequestLog(_Sealed, RequestLog):
    """The request log of a run (see :class:`_Sealed`)."""

    __slots__ = ("fill",)

    def __init__(self, models: Codes) -> None:
        super().__init__(models)
        self.fill = None


class SealedSpillingRequestLog(_Sealed, SpillingRequestLog):
    """The request log of a spilling run, whose rows are handed over as it goes."""

    __slots__ = ("fill",)

    def __init__(self, log: AttemptLog, writer: Any) -> None:
        super().__init__(log, writer)
        self.fill = None


def attempt_grader(
    table: TruthTable,
) -> Callable[[AttemptLog, Mapping[str, np.ndarray]], np.ndarray]:
    """Grades the answered model attempts among raw columns of a log, from ``table`` (as the
    simulated host would have graded them: the dataset's grade, or the profile's keyed draw)."""

    def grade(log: AttemptLog, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        quality = np.full(len(columns["request"]), math.nan)
        answered = np.flatnonzero((columns["status"] == _OK_CODE) & (columns["kind"] == MODEL))
        quality[answered] = table.grades(
            columns["request"][answered], columns["model"][answered], log.models.values
        )
        return quality

    return grade


def request_sealer(
    table: TruthTable, grades: bool, columns: bool = True
) -> tuple[NoteTruth, Callable[[RequestLog], None], NoteGrades | None]:
    """``note`` and ``fill``, sharing the rows waiting for their truth-dependent parts.

    ``note(position, index, model, head, tail)`` comes just before a request's row is added at
    ``position`` of the log: ``model`` names the served answer to grade (None: no grade), ``head``
    the row's metadata values and ``tail`` its evidence. It returns the row's extra values when
    they hold nothing hidden (added with the row), else None: the analysis columns go between the
    metadata and the evidence when ``fill`` writes them. ``fill(log)`` writes what waits into the
    log's rows, before they are read or handed over. Without ``columns`` the analysis columns
    are left to the frame (a dataset's :class:`~sykit.datasets._items.RowValues`).

    ``note_grades(positions, indices, codes, names)`` notes the answers to grade of rows that hold
    nothing else hidden, many at once; None when rows carry analysis columns of their own (then
    each row is noted)."""
    waiting: list[tuple[int, int, str | None, Mapping[str, Any] | None, Any, Any]] = []
    batches: list[tuple[np.ndarray, np.ndarray, np.ndarray, Sequence[str]]] = []
    has_columns = columns and table.has_columns
    items = table.items

    def note(
        position: int,
        index: int,
        model: str | None,
        head: dict[str, Any],
        tail: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        columns = None
        if has_columns:
            truth = items[index][2]
            if truth is not None and truth.columns:
                columns = truth.columns
        if not grades:
            model = None
        if columns is None:
            if model is not None:
                waiting.append((position, index, model, None, None, None))
            if tail:
                head.update(tail)
            return head
        waiting.append((position, index, model, columns, head, tail))
        return None

    def note_grades(
        positions: np.ndarray, indices: np.ndarray, codes: np.ndarray, names: Sequence[str]
    ) -> None:
        if grades and len(positions):
            batches.append((positions, indices, codes, names))

    def fill(log: RequestLog) -> None:
        if batches:
            found = np.frombuffer(log.quality, dtype=np.float64)  # the log's own memory
            for positions, indices, codes, names in batches:
                values = table.grades(indices, codes, names)
                kept = ~np.isnan(values)  # a grade of None leaves the row as it was (NaN)
                found[positions[kept]] = values[kept]
            del found  # the log may grow again
            batches.clear()
        qualities = log.quality
        for position, index, model, columns, head, tail in waiting:
            if model is not None:
                quality = table.grade(index, model)
                if quality is not None:
                    qualities[position] = quality
            if columns is not None:
                extra = head
                for key, value in columns.items():
                    extra[row_name(key)] = value
                if tail:
                    extra.update(tail)
                log.extras[position] = extra
        waiting.clear()

    return note, fill, None if has_columns else note_grades
