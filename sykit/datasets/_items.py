"""A dataset's requests as a run reads them: by position, built a block at a time, not kept.

A run asks for its requests by position (``items[i]`` is ``(request id, request, truth)``), mostly
in order: the closed loop admits them one after another, and records are graded and written as
requests finish, close behind. So the rows are turned into requests a block at a time and only
the last few blocks are held: a million-row dataset never becomes a million ``Request`` objects.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from sykit._base.request_ids import check_ids_as_text
from sykit._world.models import GroundTruth, Request

__all__ = ["DatasetItems", "RowValues"]

Item = tuple[Any, Request, "GroundTruth | None"]

#: Rows turned into requests at once, and blocks held: enough for any closed loop's window.
BLOCK = 2048
HELD = 4


@dataclass(eq=False)
class RowValues:
    """A dataset's metadata and analysis columns, read by column: each column's values as the
    requests' metadata and truths hold them, in the order of the rows. A run's records take
    these columns from here by position rather than copying each request's values into its row.
    """

    #: the columns copied into each request's metadata, then the analysis columns (hidden from
    #: the algorithm), in the order a request's row holds them
    metadata: tuple[str, ...]
    analysis: tuple[str, ...]
    #: a column's values, one per row (missing values as None)
    values: Callable[[str], list[Any]]
    #: the rows
    count: int
    #: whether its readers may keep what they make of a column (a table of evaluation size)
    keep: bool = True
    #: what the readers made of each column, kept while the dataset lives (see ``keep``)
    made: dict[str, Any] = field(default_factory=dict)


class DatasetItems(Sequence[Item]):
    """``(request id, request without its truth, truth)`` per position of a dataset's rows."""

    def __init__(
        self,
        ids: list[Any] | np.ndarray,
        build: Callable[[int, int], list[tuple[Request, GroundTruth | None]]],
        *,
        has_truth: bool,
        has_columns: bool,
        has_metadata: bool,
        grades: Callable[[], tuple[dict[str, int], np.ndarray]] | None = None,
        row_values: RowValues | None = None,
        memo: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(ids, np.ndarray):  # an integer array needs no check
            check_ids_as_text(ids)
        #: the ids in order: an integer array when they are all integers (a list of a
        #: million Python ints would hold more than the dataset itself)
        self.ids = ids
        self._build = build
        self._blocks: OrderedDict[int, list[Item]] = OrderedDict()
        # the block read last and its first position (a block may be shorter than BLOCK: the
        # last one; positions past its end fall through to the bounds check)
        self._last: list[Item] | None = None
        self._last_start = 0
        #: whether any request has a truth, and whether any has analysis columns (see TruthTable)
        self.has_truth = has_truth
        self.has_columns = has_columns
        #: whether any request has metadata (the run copies it into its rows)
        self.has_metadata = has_metadata
        self._grades = grades
        self._grade_table: tuple[dict[str, int], np.ndarray] | None = None
        self._held = HELD
        #: the metadata and analysis columns by column (None: the dataset has neither)
        self.row_values = row_values
        #: what runs over these requests made of them, kept for later runs (the dataset's own,
        #: for a dataset that keeps its requests)
        self.memo: dict[str, Any] = {} if memo is None else memo

    def hold(self, count: int) -> None:
        """Keep at least ``count`` consecutive requests built: a reader that goes over a span of
        that many requests more than once (the bulk engine routes, places and records a block
        of requests) then builds each of them once."""
        self._held = max(self._held, HELD, -(-count // BLOCK) + 1)

    def grades(self) -> tuple[dict[str, int], np.ndarray] | None:
        """The dataset's grades without building a request: each model's column, and a matrix
        (requests × models, NaN where a model has no grade) in the order of the requests; None
        when the items do not come with them."""
        if self._grade_table is None and self._grades is not None:
            self._grade_table = self._grades()
        return self._grade_table

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> list[Item]: ...
    def __getitem__(self, index: int | slice) -> Item | list[Item]:
        if type(index) is int and self._last is not None:
            # the common case: a position in the block read last (a run reads in order); past
            # the end of the last block, the list's IndexError is the sequence's
            offset = index - self._last_start
            if 0 <= offset < BLOCK:
                return self._last[offset]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self.ids)
        if not 0 <= index < len(self.ids):
            raise IndexError(index)
        number, offset = divmod(index, BLOCK)
        block = self._blocks.get(number)
        if block is None:
            block = self._block(number)
        else:
            self._blocks.move_to_end(number)
        self._last, self._last_start = block, number * BLOCK
        return block[offset]

    def __iter__(self) -> Iterator[Item]:
        for number in range(0, (len(self.ids) + BLOCK - 1) // BLOCK):
            yield from self._blocks.get(number) or self._block(number)

    def _block(self, number: int) -> list[Item]:
        start = number * BLOCK
        stop = min(start + BLOCK, len(self.ids))
        ids = self.ids
        own = ids[start:stop]
        own = own.tolist() if isinstance(own, np.ndarray) else own  # Python ints, as a list's
        block = [
            (own[k], request, truth) for k, (request, truth) in enumerate(self._build(start, stop))
        ]
        self._blocks[number] = block
        if len(self._blocks) > max(HELD, self._held):
            self._blocks.popitem(last=False)
        return block
