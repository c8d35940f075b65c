"""Matrix products at the cost of a matrix's non-zero entries: TF-IDF rows fill ~1 % of their
columns, so the learners' fits multiply by them as lists of entries (or by BLAS when that is
cheaper), and cut mini-batches of rows without touching the zeros. Private numerics of
:mod:`sykit.learn._optim` and :mod:`sykit.learn._learners`.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class _Sparse:
    """A matrix as its non-zero entries, grouped by row and by column, so that ``x @ w`` and
    ``x.T @ r`` cost O(non-zeros), not O(rows × columns): TF-IDF rows fill ~1 % of their columns.
    ``rows`` must be ascending (row-major order, as ``np.nonzero`` gives)."""

    def __init__(
        self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]
    ) -> None:
        self.shape = shape
        self.row_cols, self.row_values = cols, values
        self.row_starts, self.row_ids = _runs(rows)
        order = np.argsort(cols, kind="stable")
        self.col_rows, self.col_values = rows[order], values[order]
        self.col_starts, self.col_ids = _runs(cols[order])

    @classmethod
    def of(cls, x: np.ndarray, dtype: type[np.floating[Any]]) -> _Sparse:
        rows, cols = np.nonzero(x)
        return cls(rows, cols, x[rows, cols].astype(dtype), (x.shape[0], x.shape[1]))

    def dot(self, w: np.ndarray) -> np.ndarray:
        out = np.zeros((self.shape[0], w.shape[1]), dtype=self.row_values.dtype)
        if len(self.row_ids):
            terms = w[self.row_cols] * self.row_values[:, None]
            out[self.row_ids] = np.add.reduceat(terms, self.row_starts, axis=0)
        return out

    def tdot(self, r: np.ndarray) -> np.ndarray:
        out = np.zeros((self.shape[1], r.shape[1]), dtype=self.col_values.dtype)
        if len(self.col_ids):
            terms = r[self.col_rows] * self.col_values[:, None]
            out[self.col_ids] = np.add.reduceat(terms, self.col_starts, axis=0)
        return out


class _Dense:
    """``x @ w`` and ``x.T @ r`` by BLAS, in float64 unless that copy would pass 64 MB."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x.astype(np.float64) if x.size <= 8_000_000 else x

    def dot(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(self.x @ w.astype(self.x.dtype), dtype=np.float64)

    def tdot(self, r: np.ndarray) -> np.ndarray:
        return np.asarray(self.x.T @ r.astype(self.x.dtype), dtype=np.float64)


def _products(x: np.ndarray, m: int) -> _Sparse | _Dense:
    """The cheaper way to multiply by ``x`` for ``m`` models: sparse products gather one entry
    per non-zero and model, BLAS streams the whole matrix (and wins once ``m`` is large)."""
    density = np.count_nonzero(x) / max(x.size, 1)
    return _Sparse.of(x, np.float64) if density * m <= 0.1 else _Dense(x)


class _RowIndex:
    """The non-zero entries of a matrix by row (CSR), to cut out a mini-batch of rows as a
    :class:`_Sparse` without touching the zeros."""

    def __init__(self, x: np.ndarray) -> None:
        rows, cols = np.nonzero(x)
        self.d = x.shape[1]
        self.cols = cols
        self.values = x[rows, cols]
        self.starts = np.searchsorted(rows, np.arange(x.shape[0] + 1))

    def take(self, picked: np.ndarray) -> _Sparse:
        first = self.starts[picked]
        lengths = self.starts[picked + 1] - first
        ends = np.cumsum(lengths)
        entries = np.repeat(first - (ends - lengths), lengths) + np.arange(
            int(ends[-1]) if len(ends) else 0
        )
        rows = np.repeat(np.arange(len(picked)), lengths)
        return _Sparse(rows, self.cols[entries], self.values[entries], (len(picked), self.d))


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal values of a grouped array starts, and the value of each run."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=keys.dtype)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return starts, keys[starts]
