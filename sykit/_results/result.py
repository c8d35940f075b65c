"""What a run returns: the attempt log, the request table, and summaries of both."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError
from sykit._base.vocab import RequestStatus
from sykit._results.health import ErrorCount, shorten, top_errors
from sykit._results.metrics import paired_differences, pareto_frontier, summarize
from sykit._results.spilled import recover
from sykit._results.summary_frame import summary_frame

__all__ = [
    "Comparison",
    "Concatenated",
    "FrameColumns",
    "Lazy",
    "Result",
    "concat_columns",
    "concat_frames",
    "request_errors",
]


class Lazy(Protocol):
    """A frame built when first used: raw columns kept in memory (a run's attempts, see
    :class:`sykit._run.frames.AttemptColumns`), or a :class:`Deferred` one."""

    @property
    def rows(self) -> int: ...

    def load(self) -> pd.DataFrame: ...


class Deferred(Lazy, Protocol):
    """A frame kept on disk until first used (a spilling run's, see :mod:`sykit._run.spill`)."""

    def errors(self) -> pd.DataFrame: ...


class _Frame:
    """A Result field holding a DataFrame, or a :class:`Lazy` one that is built (or read) on
    first access and kept."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = "_" + name

    def __get__(self, obj: Any, objtype: type | None = None) -> pd.DataFrame:
        if obj is None:  # no class-level default: the dataclass field stays required
            raise AttributeError(self.name)
        value = obj.__dict__[self.slot]
        if not isinstance(value, pd.DataFrame) and hasattr(value, "load"):
            value = value.load()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: pd.DataFrame | Lazy) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True, repr=False)
class Result:
    """One strategy run over a set of requests.

    ``attempts`` has one row per attempt at a model or judge (retries, fallbacks, cooldown skips and
    cancellations included); ``requests`` one row per request. Times are seconds on the host clock
    from the start of the run (virtual seconds on a SimHost); ``wall_s`` is real time taken.
    ``engine`` says what ran it: ``"kernel"`` (sykit's own scheduler), ``"asyncio"`` (an asyncio
    loop: virtual time for algorithms that await asyncio/anyio primitives, real time on an
    HttpHost). ``interrupted`` is True when Ctrl-C stopped the run: the frames then hold only the
    requests that had finished. After a run with ``spill=folder`` the frames stay in that folder
    until first used (``result.attempts``, ``result.requests``, ``summary()``), then are kept.
    """

    strategy: str
    seed: int
    if TYPE_CHECKING:  # required fields: _Frame gives no class-level default (see __get__)
        attempts: pd.DataFrame
        requests: pd.DataFrame
    else:
        attempts: pd.DataFrame = _Frame()
        requests: pd.DataFrame = _Frame()
    wall_s: float = field(compare=False)
    engine: str = field(default="kernel", compare=False)
    interrupted: bool = field(default=False, compare=False)

    @classmethod
    def from_spill(cls, folder: str | os.PathLike[str]) -> Result:
        """The run whose records are in the spill folder ``folder`` (``spill=`` of ``run``, or
        one ``<strategy>-seed<seed>`` subfolder of ``compare``'s), read from its Parquet chunks.

        For a run that was killed (SIGKILL, a crash) before it ended, this is how to recover what
        it completed: ``requests`` holds the rows of the requests in its whole chunks,
        ``attempts`` the attempts of those requests that were written (those of the requests that
        finished last may be missing some that were still in memory), ``interrupted`` is True and
        ``wall_s`` is NaN; a ``UserWarning`` says so, and names any chunk file that was cut short
        (unreadable or half-written), whose rows are lost."""
        return recover(cls, folder)

    def summary(
        self,
        *,
        percentiles: Sequence[float | str] | None = None,
        by: str | Sequence[str] | None = None,
        columns: str | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """A one-row DataFrame: success, quality, cost, latency percentiles, waste, fallbacks.

        It holds every column and displays the ones a reader compares first (success_rate,
        mean_quality, cost_per_1k_requests_usd, latency_p50_s, latency_p99_s,
        attempts_per_request, retries, fallbacks, wasted_share), naming the rest below:
        ``columns="all"`` gives the plain frame with every column, ``columns=[...]`` the columns
        named. ``percentiles`` (e.g. ``[0.5, 0.99, 0.999]`` or ``["p90"]``) chooses
        the latency and TTFT percentile columns (default: latency p50/p95/p99 and TTFT p50).
        ``by`` names columns of ``requests`` (a dataset column, ``has_image``, …) to summarise
        per value, one row each. docs/statistics.md defines every column."""
        return summary_frame(summarize(self.requests, self.attempts, percentiles, by), columns)

    @property
    def plot(self) -> Any:
        """Plots of this run (``res.plot.timeline(request_id)``, …); matplotlib loads on first use."""
        from sykit._viz import ResultPlots

        return ResultPlots(self)

    def __repr__(self) -> str:
        requests = request_errors(self)
        n = len(requests)
        ok = int((requests["status"] == RequestStatus.OK).sum()) if n else 0
        head = (
            f"<sykit.Result strategy={self.strategy!r} seed={self.seed} requests={n} ok={ok} "
            f"attempts={_rows(self, 'attempts')}"
        )
        errors = top_errors(requests)
        if not errors:
            return head + ">"
        lines = [
            f"  failed {e.count}× {e.kind}: {shorten(e.message, _REPR_MESSAGE)}" for e in errors
        ]
        return head + "\n" + "\n".join(lines) + ">"

    def _repr_html_(self) -> str:
        head = (
            f"<p><b>sykit.Result</b> strategy <code>{html.escape(self.strategy)}</code>, "
            f"seed {self.seed}</p>"
        )
        table = self.summary().to_html(index=False, float_format=lambda x: f"{x:.4g}")
        return head + table + _errors_html(top_errors(self.requests))


def request_errors(result: Result) -> pd.DataFrame:
    """The result's requests, or at least their ``status``, ``error_kind`` and ``error_message``
    (all a check of the run needs) when the frame has not been read from its spill folder yet."""
    value: pd.DataFrame | Deferred = result.__dict__["_requests"]
    return value if isinstance(value, pd.DataFrame) else value.errors()


def _rows(result: Result, name: str) -> int:
    value: pd.DataFrame | Lazy = result.__dict__["_" + name]
    return len(value) if isinstance(value, pd.DataFrame) else value.rows


@dataclass(frozen=True, repr=False)
class Comparison:
    """Several strategies run on the same requests and the same random draws (one Result per
    strategy and seed)."""

    results: Sequence[Result]

    @property
    def strategies(self) -> list[str]:
        return list(dict.fromkeys(r.strategy for r in self.results))

    @cached_property
    def attempts(self) -> pd.DataFrame:
        """Every run's attempts, with a ``seed`` column (built once, then kept)."""
        return concat_frames(
            [r.attempts.assign(seed=r.seed) for r in self.results], self.strategies
        )

    @cached_property
    def requests(self) -> pd.DataFrame:
        """Every run's requests, with a ``seed`` column (built once, then kept)."""
        parts: list[tuple[Mapping[str, Any], int]] = []
        for result in self.results:
            held = result.__dict__["_requests"]  # a frame read from a spill folder is kept by
            columns, rows = frame_parts(  # its result, as result.requests keeps it
                held if isinstance(held, FrameColumns) else result.requests
            )
            columns["seed"] = np.full(rows, result.seed, dtype=np.int64)
            parts.append((columns, rows))
        return concat_columns(parts, self.strategies)

    def summary(
        self,
        baseline: str | None = None,
        *,
        percentiles: Sequence[float | str] | None = None,
        by: str | Sequence[str] | None = None,
        columns: str | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """One row per strategy, over all seeds: ``requests`` distinct requests replayed with
        ``seeds`` seeds; quality means and 95% intervals over requests (each request's mean over
        seeds; failed = 0, ungraded left out and counted in ``n_ungraded``). With ``baseline``,
        also the paired differences (strategy − baseline, same requests and seeds) of quality,
        cost and latency with 95% CIs. ``percentiles`` chooses the latency and TTFT percentile
        columns (e.g. ``[0.5, 0.99, 0.999]``); ``by`` summarises per value of requests columns
        (``"seed"``, a dataset column such as ``"benchmark"``), one row each. Every column is in
        the frame; it displays those a reader compares first (as :meth:`Result.summary`, with
        ``d_quality`` and ``d_cost_usd`` against a baseline): ``columns="all"`` gives the plain
        frame with every column, ``columns=[...]`` the columns named. docs/statistics.md defines every column."""
        if baseline is not None and by is not None:
            raise ArgumentError("summary(baseline=...) compares whole strategies: leave out by")
        table = summarize(self.requests, self.attempts, percentiles, by)
        if baseline is not None:
            paired = self.paired(baseline).drop(columns=["baseline", "seeds"])
            table = table.merge(paired, on="strategy", how="left")
        return summary_frame(table, columns)

    def paired(
        self, baseline: str, metrics: Sequence[str] = ("quality", "cost_usd", "latency_s")
    ) -> pd.DataFrame:
        """Paired differences against ``baseline``: per strategy the mean over requests of
        (strategy − baseline), each request averaged over seeds, with a 95% bootstrap interval
        that resamples requests; ``n_requests_<metric>`` requests had a pair, over ``seeds``
        seeds."""
        return paired_differences(self.requests, baseline, metrics)

    def pareto(self) -> pd.DataFrame:
        """The summary rows on the cost–quality Pareto frontier (cheaper and better than the rest);
        bounds that read the ground truth (``realizable`` False) are never on it."""
        return pareto_frontier(self.summary())

    @property
    def plot(self) -> Any:
        """Plots of this comparison (``cmp.plot.cost_quality()``, …); matplotlib loads on first use."""
        from sykit._viz import ComparisonPlots

        return ComparisonPlots(self)

    def __getitem__(self, key: str | tuple[str, int]) -> Result:
        """The Result of one strategy: ``cmp["name"]`` when the comparison ran one seed,
        ``cmp["name", seed]`` (or :meth:`result`) when it ran several."""
        if isinstance(key, tuple) and len(key) == 2:
            return self.result(key[0], seed=key[1])
        return self.result(key)

    def result(self, strategy: str, seed: int | None = None) -> Result:
        """The Result of ``strategy`` with ``seed``; ``seed`` may be left out when the comparison
        ran a single seed (with several, which one is meant must be said)."""
        found = [r for r in self.results if r.strategy == strategy]
        if not found:
            raise KeyError(f"no strategy {strategy!r}; this comparison has {self.strategies}")
        seeds = [r.seed for r in found]
        if seed is None:
            if len(found) > 1:
                raise KeyError(
                    f"strategy {strategy!r} ran with {len(found)} seeds {seeds}: say which, "
                    f"e.g. cmp[{strategy!r}, {seeds[0]}] or cmp.result({strategy!r}, seed=...)"
                )
            return found[0]
        for result in found:
            if result.seed == seed:
                return result
        raise KeyError(f"strategy {strategy!r} did not run with seed {seed!r}; its seeds: {seeds}")

    def __repr__(self) -> str:
        seeds = sorted({r.seed for r in self.results})
        head = f"<sykit.Comparison strategies={self.strategies} seeds={seeds}"
        lines = [f"  {line}" for line in self._failure_lines()]
        return head + "".join("\n" + line for line in lines) + ">"

    def _failure_lines(self) -> list[str]:
        """One line per strategy with failed requests: how many, and the commonest error."""
        lines = []
        for strategy in self.strategies:
            requests = pd.concat(
                [request_errors(r) for r in self.results if r.strategy == strategy],
                ignore_index=True,
            )
            errors = top_errors(requests, 1)
            if errors:
                failed = int((requests["status"] == RequestStatus.FAILED).sum())
                top = errors[0]
                lines.append(
                    f"{strategy}: {failed} of {len(requests)} failed, most {top.kind} "
                    f"({top.count}): {shorten(top.message, _REPR_MESSAGE_BRIEF)}"
                )
        return lines

    def _repr_html_(self) -> str:
        table = self.summary().to_html(index=False, float_format=lambda x: f"{x:.4g}")
        lines = self._failure_lines()
        if not lines:
            return table
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        return table + f"<p>Failed requests:</p><ul>{items}</ul>"


_REPR_MESSAGE = 120
_REPR_MESSAGE_BRIEF = 80


def _errors_html(errors: list[ErrorCount]) -> str:
    if not errors:
        return ""
    rows = "".join(
        f"<tr><td><code>{html.escape(e.kind)}</code></td><td>{e.count}</td>"
        f"<td>{html.escape(shorten(e.message, 200))}</td></tr>"
        for e in errors
    )
    return (
        "<p>Top errors:</p><table><thead><tr><th>error_kind</th><th>requests</th>"
        f"<th>first message</th></tr></thead><tbody>{rows}</tbody></table>"
    )


class Concatenated:
    """One frame (``"attempts"`` or ``"requests"``) of several results one under the other (see
    :func:`concat_frames`), built when first used: pooled runs whose attempts nobody reads never
    build them."""

    __slots__ = ("parts", "rows", "strategies")

    def __init__(self, results: Sequence[Result], name: str, strategies: list[str]) -> None:
        # the frames alone (built or not), not the results: their other frames are let go
        self.parts: list[pd.DataFrame | Lazy] = [r.__dict__["_" + name] for r in results]
        self.strategies = strategies
        self.rows = sum(_rows(r, name) for r in results)

    def load(self) -> pd.DataFrame:
        return concat_columns([frame_parts(p) for p in self.parts], self.strategies)


def frame_parts(held: pd.DataFrame | Lazy) -> tuple[dict[str, Any], int]:
    """A frame's columns and rows, for :func:`concat_columns`: those of one kept as its columns
    (:class:`FrameColumns`) without making it, else the frame's (a lazy one made now)."""
    if isinstance(held, FrameColumns):
        return dict(held.columns), held.rows
    frame = held if isinstance(held, pd.DataFrame) else held.load()
    return dict(frame.items()), len(frame)


def concat_frames(frames: list[pd.DataFrame], strategies: list[str]) -> pd.DataFrame:
    """The frames one under the other, with the union of their columns (a column a frame lacks,
    such as another strategy's evidence, is missing in its rows), categorical columns kept
    categorical: the union of their categories in order of first appearance (``strategy`` in
    the order of ``strategies``). Column by column, on the arrays: a grid's thousands of small
    frames would spend seconds in pandas' per-frame bookkeeping."""
    if not frames:
        return pd.DataFrame()
    return concat_columns([(dict(frame.items()), len(frame)) for frame in frames], strategies)


def concat_columns(
    parts: list[tuple[Mapping[str, Any], int]], strategies: list[str]
) -> pd.DataFrame:
    """:func:`concat_frames` of frames given as their columns (name → array, categorical or
    Series) and rows: a comparison's runs, whose frames need not be made one by one."""
    if not parts:
        return pd.DataFrame()
    names = list(dict.fromkeys(name for columns, _ in parts for name in columns))
    merged: dict[str, Any] = {}
    for name in names:
        column = [columns.get(name, rows) for columns, rows in parts]  # rows: all missing
        present = [part for part in column if not isinstance(part, int)]
        dtypes = {part.dtype for part in present}
        if all(isinstance(dtype, pd.CategoricalDtype) for dtype in dtypes):
            merged[name] = _merge_categorical(column, strategies if name == "strategy" else None)
        elif (
            len(present) == len(column)
            and len(dtypes) == 1
            and isinstance(next(iter(dtypes)), np.dtype)
        ):
            merged[name] = np.concatenate([np.asarray(part) for part in present])
        elif all(dtype == np.dtype(bool) or isinstance(dtype, pd.BooleanDtype) for dtype in dtypes):
            merged[name] = _merge_flags([_series(part) for part in column])
        else:
            # missing rows as a reindex would make them (float for ints, object for bools)
            first = _series(present[0]).iloc[:0]
            filled = [
                first.reindex(range(part)) if isinstance(part, int) else _series(part)
                for part in column
            ]
            merged[name] = pd.concat(filled, ignore_index=True)
    return pd.DataFrame(merged, copy=False)  # each column is its own new array: not copied again


def _categorical(part: Any) -> pd.Categorical:
    """A categorical column part as a Categorical (a Series' own array: no copy)."""
    return part if isinstance(part, pd.Categorical) else part.array


def _series(part: Any) -> Any:
    """A column part as a Series (a count of missing rows stays as it is)."""
    return part if isinstance(part, pd.Series | int) else pd.Series(part)


@dataclass(eq=False)
class FrameColumns:
    """A frame held as its columns (name → array, categorical or Series of ``rows`` values, in
    order), made into the DataFrame when first used: a comparison concatenates its runs'
    columns (:meth:`Comparison.requests`) without making each run's frame first."""

    columns: dict[str, Any]
    rows: int

    def load(self) -> pd.DataFrame:
        return pd.DataFrame(self.columns, copy=False)

    def errors(self) -> pd.DataFrame:
        """The status and error columns alone, with the session columns where there are some
        (all a check of the run needs)."""
        names = ["status", "error_kind", "error_message"]
        if "session_id" in self.columns and "turn" in self.columns:
            names += ["session_id", "turn"]
        return pd.DataFrame({name: self.columns[name] for name in names}, copy=False)


def _merge_flags(parts: list[pd.Series | int]) -> pd.arrays.BooleanArray:
    """One nullable ``boolean`` column of flag ``parts`` (a number: that many missing rows), not
    objects mixing True and False with NaN where a frame lacked the column."""
    pieces = [
        part.to_numpy(dtype=object, na_value=None)
        if isinstance(part, pd.Series)
        else np.full(part, None, dtype=object)
        for part in parts
    ]
    return pd.array(np.concatenate(pieces), dtype="boolean")


def _merge_categorical(parts: list[Any], order: list[str] | None) -> pd.Categorical:
    """One categorical of ``parts`` (categorical Series or arrays; a number: that many missing
    rows), recoding each part's codes into the union of categories (one vectorised lookup per
    part, not a re-categorisation of its values)."""
    arrays = [part if isinstance(part, int) else _categorical(part) for part in parts]
    present = [part for part in arrays if not isinstance(part, int)]
    if order is None and present and all(p.dtype is present[0].dtype for p in present[1:]):
        # one dtype for every part (the runs of a comparison share their ids' dtype): its codes
        codes = [
            np.full(part, -1, dtype=present[0].codes.dtype) if isinstance(part, int) else part.codes
            for part in arrays
        ]
        return pd.Categorical.from_codes(np.concatenate(codes), dtype=present[0].dtype)
    union: dict[Any, None] = dict.fromkeys(order or ())
    if order is None:
        for part in present:
            union.update(dict.fromkeys(part.categories.tolist()))
    categories = pd.Index(list(union))
    codes = []
    for part in arrays:
        if isinstance(part, int):
            codes.append(np.full(part, -1, dtype=np.int64))
            continue
        lookup = np.append(categories.get_indexer(part.categories), -1)
        codes.append(lookup[part.codes])  # code -1 (missing) picks the appended -1
    return pd.Categorical.from_codes(np.concatenate(codes), categories=categories)
