"""Grouped, seeded train/test splits and k folds over a dataset's rows.

A router fitted on one side and judged on the other is only honest if no related row crosses over:
MT-Bench's second turn repeats its first turn's question, so a split that separates them leaks the
answer key. Rows are therefore assigned by *group*, never one by one, and the assignment is a pure
function of the seed, so a split can be rebuilt from its arguments alone.
"""

from __future__ import annotations

import contextlib
import enum
import math
import numbers
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit.datasets._random import seeded_rng

__all__ = [
    "DATASET_GROUP",
    "DatasetGroup",
    "GroupBy",
    "fold_labels",
    "group_codes",
    "is_missing",
    "naming_missing_columns",
    "split_mask",
    "strata_codes",
]

#: How to group rows: a column name, a function of the row (a dict of column → value) returning a
#: key, or None (every row alone).
GroupBy = str | Callable[[dict[str, Any]], Hashable] | None


class DatasetGroup(enum.Enum):
    """The default of ``group=``: the dataset's own :attr:`Dataset.group_column`."""

    COLUMN = "group_column"

    def __repr__(self) -> str:
        return "<the dataset's group_column>"


DATASET_GROUP = DatasetGroup.COLUMN


def is_missing(key: object) -> bool:
    """Whether a group key (or a value ``Dataset.filter`` is given) stands for a missing cell:
    None, NaN (NumPy's too), ``pd.NA`` or ``pd.NaT`` (the empty cell of a datetime column)."""
    return (
        key is None
        or key is pd.NA
        or key is pd.NaT
        or (isinstance(key, float | np.floating) and math.isnan(key))
    )


def _codes(keys: list[Any], where: str, what: str) -> np.ndarray:
    """Integer codes for ``keys`` in order of first appearance; a missing key is a group alone
    (nothing says what it belongs with)."""
    seen: dict[Any, int] = {}
    codes = np.empty(len(keys), dtype=np.int64)
    for i, key in enumerate(keys):
        if is_missing(key):
            codes[i] = -1
            continue
        try:
            codes[i] = seen.setdefault(key, len(seen))
        except TypeError:
            raise ArgumentTypeError(
                f"{where}: {what} must be hashable (text, numbers, tuples), got "
                f"{type(key).__name__} {key!r:.60}"
            ) from None
    alone = codes == -1
    codes[alone] = len(seen) + np.arange(int(alone.sum()))
    return codes


def _column(frame: pd.DataFrame, column: str, where: str, role: str) -> pd.Series:
    if column not in frame.columns:
        raise ArgumentError(
            f"{where}: {role} column {column!r} is not in the dataset; columns are: "
            f"{', '.join(map(str, frame.columns))}"
        )
    return frame[column]


def _keys(
    group: Callable[[dict[str, Any]], Hashable],
    rows: list[dict[Any, Any]],
    frame: pd.DataFrame,
    where: str,
) -> list[Any]:
    """Each row's key from ``group``; a row key it reads that the dataset lacks is named."""
    with naming_missing_columns(frame.columns, f"{where}: the group function"):
        return [group(row) for row in rows]


@contextlib.contextmanager
def naming_missing_columns(columns: pd.Index, what: str) -> Iterator[None]:
    """A ``KeyError`` for a key that is not one of ``columns``, raised by a user's function of
    the table or its rows, as an error listing the columns (a model's grades are
    ``quality:<model>``, whatever the user's table called them); the function's own other
    ``KeyError`` s pass as they are."""
    try:
        yield
    except KeyError as e:
        missing = e.args[0] if e.args else None
        if not isinstance(missing, Hashable) or missing in columns:
            raise
        raise ArgumentError(
            f"{what} raised KeyError {missing!r}, which is not a column of the dataset; its "
            f"columns are: {', '.join(map(str, columns))} (a model's grades are "
            "quality:<model>, its answer lengths output_tokens:<model>)"
        ) from e


def group_codes(frame: pd.DataFrame, group: GroupBy, where: str) -> np.ndarray:
    """A group code per row (0..groups-1): rows with one code always land on the same side."""
    if group is None:
        return np.arange(len(frame), dtype=np.int64)
    if isinstance(group, str):
        keys = _column(frame, group, where, "group").tolist()
        return _codes(keys, where, f"group column {group!r}'s values")
    if callable(group):
        rows = frame.reset_index(drop=True).to_dict("records")
        return _codes(_keys(group, rows, frame, where), where, "the keys group= returns")
    raise ArgumentTypeError(
        f"{where}: group must be a column name, a function of the row or None, got "
        f"{type(group).__name__}"
    )


def strata_codes(frame: pd.DataFrame, stratify: str | None, where: str) -> np.ndarray | None:
    """A stratum code per row (missing values form one stratum of their own), or None."""
    if stratify is None:
        return None
    if not isinstance(stratify, str):
        raise ArgumentTypeError(
            f"{where}: stratify must be a column name or None, got {type(stratify).__name__}"
        )
    values = _column(frame, stratify, where, "stratify")
    try:
        codes, _ = pd.factorize(values, use_na_sentinel=False)
    except TypeError:
        raise ArgumentTypeError(
            f"{where}: stratify column {stratify!r} must hold hashable values"
        ) from None
    return np.asarray(codes, dtype=np.int64)


def _group_strata(
    groups: np.ndarray, strata: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, list[list[tuple[int, int]]]]:
    """Per group: its size, its main stratum (the one most of its rows are in; the first seen on a
    tie) and its rows per stratum as (stratum, rows) pairs."""
    count = int(groups.max()) + 1 if len(groups) else 0
    sizes = np.bincount(groups, minlength=count)
    if strata is None:
        return sizes, np.zeros(count, dtype=np.int64), [[(0, int(s))] for s in sizes]
    width = int(strata.max()) + 1
    pairs, rows = np.unique(groups * width + strata, return_counts=True)
    owner, stratum = pairs // width, pairs % width
    parts: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    main = np.zeros(count, dtype=np.int64)
    best = np.zeros(count, dtype=np.int64)
    for g, s, n in zip(owner.tolist(), stratum.tolist(), rows.tolist(), strict=True):
        parts[g].append((s, n))
        if n > best[g]:  # strata ascend within a group, so the first seen wins a tie
            best[g], main[g] = n, s
    return sizes, main, parts


def target_rows(test: object, n: int) -> float:
    """The number of rows the test side aims for: a fraction in (0, 1) of ``n``, or a count."""
    if isinstance(test, bool) or not isinstance(test, numbers.Real):
        raise ArgumentTypeError(
            f"split: test must be a fraction in (0, 1) or a count of requests, got "
            f"{type(test).__name__}"
        )
    if isinstance(test, numbers.Integral):
        count = int(test)
        if not 1 <= count <= n - 1:
            raise ArgumentError(
                f"split: test={count} requests must be between 1 and {n - 1} (the dataset has {n})"
            )
        return float(count)
    fraction = float(test)
    if not 0 < fraction < 1:
        raise ArgumentError(
            f"split: test must be a fraction strictly between 0 and 1 or a whole count, got {test!r}"
        )
    return fraction * n


def split_mask(
    groups: np.ndarray, strata: np.ndarray | None, test: object, seed: object
) -> np.ndarray:
    """Which rows go to the test side: whole groups, in a seeded order, each taken when it brings
    the test side (per stratum, with ``strata``) closer to its target."""
    rng = seeded_rng(seed)
    n = len(groups)
    if n < 2:
        raise ArgumentError(f"split needs at least 2 requests, the dataset has {n}")
    target = target_rows(test, n)
    sizes, main, _ = _group_strata(groups, strata)
    count = len(sizes)
    if count < 2:
        raise ArgumentError(
            "split: every request is in one group, so no split keeps groups whole; "
            "pass group=None to split row by row"
        )
    # per-stratum targets, summing to the total (largest remainders round, as sample() does)
    strata_rows = np.bincount(main, weights=sizes, minlength=int(main.max()) + 1)
    exact = target * strata_rows / n
    goals = np.floor(exact)
    short = round(target - float(goals.sum()))
    if short > 0:
        goals[np.argsort(-(exact - goals), kind="stable")[:short]] += 1
    order = rng.permutation(count)
    taken = np.zeros(count, dtype=bool)
    filled = np.zeros(len(goals))
    for g in order.tolist():
        s, size = int(main[g]), int(sizes[g])
        if 2 * filled[s] + size < 2 * goals[s]:  # taking it ends nearer the goal than leaving it
            taken[g] = True
            filled[s] += size
    if not taken.any():  # every group was bigger than the target: take the first smallest one
        taken[order[int(np.argmin(sizes[order]))]] = True
    elif taken.all():
        taken[order[int(np.argmin(sizes[order]))]] = False
    return taken[groups]


def fold_labels(
    groups: np.ndarray, strata: np.ndarray | None, k: object, seed: object
) -> np.ndarray:
    """The fold (0..k-1) of each row: groups, largest first after a seeded shuffle, each to the
    fold with the fewest rows of its main stratum (then the fewest rows, then the lowest index)."""
    count = int(groups.max()) + 1 if len(groups) else 0
    k = check_int(k, "k", expected="an integer ≥ 2")
    if not 2 <= k <= count:
        raise ArgumentError(
            f"folds: k must be between 2 and the number of groups ({count}), got {k}"
            + ("; group=None puts every request in its own group" if k > count > 0 else "")
        )
    rng = seeded_rng(seed)
    sizes, main, parts = _group_strata(groups, strata)
    shuffled = rng.permutation(count)
    order = shuffled[np.argsort(-sizes[shuffled], kind="stable")]
    width = 1 + max(s for part in parts for s, _ in part)
    per_stratum = [[0] * width for _ in range(k)]
    totals = [0] * k
    fold_of = np.empty(count, dtype=np.int64)
    for g in order.tolist():
        s = int(main[g])
        fold = min(range(k), key=lambda f: (per_stratum[f][s], totals[f], f))
        fold_of[g] = fold
        for stratum, rows in parts[g]:
            per_stratum[fold][stratum] += rows
        totals[fold] += int(sizes[g])
    return fold_of[groups]
