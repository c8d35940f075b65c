"""What a grid returns: one table of cells, and the frames of all of them with each axis as a column."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError
from sykit._grid.axes import Axis
from sykit._grid.store import read_cell
from sykit._results.metrics import (
    ATTEMPT_COUNTS,
    by_names,
    check_percentiles,
    summarize,
    summary_columns,
    summary_row,
    warn_ungraded,
    with_intervals,
)
from sykit._results.result import Comparison, Result, concat_frames
from sykit._results.summary_frame import summary_frame

__all__ = ["CELL_STATUSES", "Grid"]

#: A cell's ``status`` in :attr:`Grid.cells`.
CELL_STATUSES = ("done", "failed", "lost", "missing")

#: The requests columns a summary reads (with an output folder, only these are loaded).
_SUMMARY_READS = (
    "request_id",
    "status",
    "quality",
    "cost_usd",
    "wasted_usd",
    "routing_usd",
    "reads_truth",
    "arrival_s",
    "end_s",
    "latency_s",
    "ttft_s",
)


class CellFrames:
    """Where each finished cell's frames are: held in memory, or in the output folder."""

    def __init__(self, out: Path | None) -> None:
        self.out = out
        self.held: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}
        self.records: dict[int, dict[str, Any]] = {}
        self.counts: dict[int, dict[str, int]] = {}  # what a summary needs from the attempts

    def frame(self, index: int, kind: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
        if index in self.held:
            frame = self.held[index][0 if kind == "requests" else 1]
            return frame if columns is None else frame[list(columns)]
        assert self.out is not None
        return read_cell(self.out, self.records[index], kind, columns)


def axis_column(values: Sequence[Any], axis: Axis) -> pd.Series | pd.Categorical | np.ndarray:
    """An axis's column: categorical for text labels (in the axis's order), numbers as numbers,
    empty where a strategy does not use the axis."""
    kind = axis.kind
    if kind == "str":
        return pd.Categorical(values, categories=list(axis.labels))
    if kind == "bool":
        return pd.array(values, dtype="boolean")
    if kind == "int":
        return pd.array(values, dtype="Int64")
    if kind == "float":
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    return np.array(values, dtype=object)


@dataclass(frozen=True, repr=False)
class Grid:
    """The runs of a grid: ``cells`` (one row per strategy × axis values × seed, with its status)
    and the records of every finished cell, each axis a column (``requests``, ``attempts``).

    A cell is ``done``, ``failed`` (its error in ``error``, the others ran), ``lost`` (a worker
    died with it) or ``missing`` (Ctrl-C came first). With an output folder (``out``) the frames
    stay on disk: ``summary()`` reads only the requests columns it needs, and ``requests`` /
    ``attempts`` load every cell when used.
    """

    axes: tuple[str, ...]
    strategies: tuple[str, ...]
    cells: pd.DataFrame
    out: Path | None
    _frames: CellFrames
    _axes: Mapping[str, Axis]
    executor: str = "serial"

    # -- frames -----------------------------------------------------------------------------------
    def _done(self) -> pd.DataFrame:
        return self.cells[self.cells["status"] == "done"]

    def _labelled(self, kind: str, done: pd.DataFrame, columns: Sequence[str] | None = None):
        frames = [self._frames.frame(int(i), kind, columns) for i in done["cell"]]
        lengths = [len(f) for f in frames]
        if columns is None:
            combined = concat_frames(frames, list(self.strategies))
        else:
            combined = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        position = 1 if "strategy" in combined else 0
        for name in self.axes:
            repeated = np.repeat(done[name].astype(object).to_numpy(), lengths)
            values = [None if _missing(v) else v for v in repeated]
            combined.insert(position, name, axis_column(values, self._axes[name]))
            position += 1
        combined.insert(position, "seed", np.repeat(done["seed"].to_numpy(), lengths))
        return combined

    @property
    def requests(self) -> pd.DataFrame:
        """Every finished cell's requests: ``strategy``, one column per axis, ``seed``, then the
        columns of ``Result.requests``."""
        return self._labelled("requests", self._done())

    @property
    def attempts(self) -> pd.DataFrame:
        """Every finished cell's attempts, labelled like :attr:`requests`."""
        return self._labelled("attempts", self._done())

    @property
    def failures(self) -> pd.DataFrame:
        """The cells that did not finish: failed (with their error), lost or missing."""
        return self.cells[self.cells["status"] != "done"]

    # -- summaries --------------------------------------------------------------------------------
    def summary(
        self,
        *,
        percentiles: Sequence[float | str] | None = None,
        by: str | Sequence[str] | None = None,
        columns: str | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """One row per strategy and combination of axis values, over its seeds (as
        ``Comparison.summary``: quality means and intervals over requests, each request's mean
        over seeds; every column in the frame, those a reader compares first displayed,
        ``columns="all"`` or ``columns=[...]`` as there). Without ``by`` it reads only a few
        requests columns of each cell and the attempt counts each cell recorded, never the
        attempt rows; ``by`` (requests columns such as a dataset's ``benchmark``) splits the rows
        further and loads both frames."""
        return summary_frame(self._summary(percentiles, by), columns)

    def _summary(
        self, percentiles: Sequence[float | str] | None, by: str | Sequence[str] | None
    ) -> pd.DataFrame:
        """:meth:`summary`'s whole table."""
        if by is not None:
            extra = by_names(by)
            return summarize(self.requests, self.attempts, percentiles, by=[*self.axes, *extra])
        quantiles = check_percentiles(percentiles)
        columns = ["strategy", *self.axes, *summary_columns(quantiles)[1:]]
        done = self._done()
        rows, any_graded = [], False
        keys = ["strategy", *self.axes]
        for values, group in done.groupby(keys, observed=True, sort=False, dropna=False):
            requests = self._labelled("requests", group, _SUMMARY_READS)
            counts = {
                c: sum(self._frames.counts[int(i)][c] for i in group["cell"])
                for c in ATTEMPT_COUNTS
            }
            row, units = summary_row(str(values[0]), requests, counts, quantiles)
            row.update(zip(self.axes, values[1:], strict=True))
            rows.append((row, units))
            any_graded = any_graded or bool(
                ((requests["status"] == "ok") & requests["quality"].notna()).any()
            )
        table = pd.DataFrame(with_intervals(rows), columns=columns)
        for name in self.axes:
            values = [None if _missing(v) else v for v in table[name]]
            table[name] = axis_column(values, self._axes[name])
        table["strategy"] = pd.Categorical(table["strategy"], categories=list(self.strategies))
        warn_ungraded(table, any_graded)
        return table

    # -- single cells and comparisons ---------------------------------------------------------------
    def _select(self, strategy: str | None, seed: int | None, axes: Mapping[str, Any]):
        unknown = [name for name in axes if name not in self.axes]
        if unknown:
            raise ArgumentError(f"{unknown} are not axes of this grid; its axes: {list(self.axes)}")
        chosen = self._done()
        if strategy is not None:
            if strategy not in self.strategies:
                raise KeyError(f"no strategy {strategy!r}; this grid has {list(self.strategies)}")
            chosen = chosen[chosen["strategy"] == strategy]
        if seed is not None:
            chosen = chosen[chosen["seed"] == seed]
        for name, value in axes.items():
            label = _axis_label(self._axes[name], value)
            column = chosen[name]
            chosen = chosen[(column == label) | column.isna()]
        return chosen

    def result(self, strategy: str, *, seed: int | None = None, **axes: Any) -> Result:
        """The Result of one finished cell: ``grid.result("router", threshold=0.5, seed=0)``.
        Axes the strategy does not use, and the seed of a one-seed grid, may be left out."""
        chosen = self._select(strategy, seed, axes)
        if len(chosen) != 1:
            shown = ", ".join(f"{k}={v!r}" for k, v in {**axes, "seed": seed}.items())
            raise KeyError(
                f"{len(chosen)} finished cells of {strategy!r} match {shown}: give every axis it "
                f"uses and the seed (cells: grid.cells)"
            )
        row = chosen.iloc[0]
        return self._result(row)

    def _result(self, row: pd.Series) -> Result:
        index = int(row["cell"])
        return Result(
            strategy=str(row["strategy"]),
            seed=int(row["seed"]),
            attempts=self._frames.frame(index, "attempts"),
            requests=self._frames.frame(index, "requests"),
            wall_s=float(row["wall_s"]),
            engine=str(row["engine"]),
        )

    def comparison(self, **axes: Any) -> Comparison:
        """The strategies at these axis values, every seed, as a :class:`Comparison` (its
        summaries, paired differences and plots). Every axis a strategy uses must be fixed:
        ``grid.comparison(threshold=0.5, faults="high")``."""
        chosen = self._select(None, None, axes)
        for _, group in chosen.groupby(["strategy", "seed"], observed=True, sort=False):
            if len(group) > 1:
                free = [n for n in self.axes if group[n].nunique() > 1]
                raise ArgumentError(
                    f"strategy {group['strategy'].iloc[0]!r} has several cells here: fix {free} too"
                )
        if chosen.empty:
            raise KeyError(f"no finished cells match {axes}")
        return Comparison([self._result(row) for _, row in chosen.iterrows()])

    @property
    def plot(self) -> Any:
        """Plots of this grid (``grid.plot.lines(x="threshold", col="faults")``)."""
        from sykit._viz.facets import GridPlots

        return GridPlots(self)

    # -- display ----------------------------------------------------------------------------------
    def _counts(self) -> dict[str, int]:
        counts = self.cells["status"].value_counts()
        return {status: int(counts.get(status, 0)) for status in CELL_STATUSES}

    def __repr__(self) -> str:
        counts = self._counts()
        shown = " ".join(f"{k}={v}" for k, v in counts.items() if v or k == "done")
        axes = {n: len(self._axes[n].labels) for n in self.axes}
        where = f" out={str(self.out)!r}" if self.out is not None else ""
        return (
            f"<sykit.Grid strategies={list(self.strategies)} axes={axes} "
            f"cells={len(self.cells)} {shown}{where}>"
        )

    def _repr_html_(self) -> str:
        counts = self._counts()
        parts = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        head = f"<p><b>sykit.Grid</b>: {len(self.cells)} cells ({html.escape(parts)})</p>"
        table = self.summary().to_html(index=False, float_format=lambda x: f"{x:.4g}")
        return head + table


def _axis_label(axis: Axis, value: Any) -> Any:
    """The label of ``axis`` that ``value`` names, or an error listing its values: a value the
    axis lacks would match no cell of the strategies that use the axis, and leave them out of a
    comparison without a word."""
    if hasattr(value, "item") and not isinstance(value, bool | int | float | str):
        value = value.item()  # numpy scalars
    for label in axis.labels:
        if _same_label(value, label):
            return label
    raise ArgumentError(
        f"{axis.name}={value!r} is not a value of the axis {axis.name!r}; its values: "
        f"{list(axis.labels)}"
    )


def _same_label(value: Any, label: Any) -> bool:
    """``value == label``, without taking ``True`` for ``1`` or ``"1"`` for ``1``."""
    if isinstance(value, bool) != isinstance(label, bool):
        return False
    if isinstance(value, str) != isinstance(label, str):
        return False
    try:
        return bool(value == label)
    except (TypeError, ValueError):
        return False


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA
