"""Recorded traffic as a workload: when requests arrived, and how long each prompt and answer was.

Real traffic is burstier than a Poisson process (the shipped Azure coding trace's inter-arrival
times have a coefficient of variation of 13.2, Poisson's is 1.0), and a router's queueing, rate
limits and tail latency depend on those bursts. A :class:`Trace` keeps a recording's arrival times
and each request's (input, output) token pair together, so a run can replay the bursts as they
happened, faster or slower, on a trace's own requests or on a dataset's prompts.

    trace = sy.datasets.azure_trace("code").window(0, 60)       # the first minute
    res = sy.run(algo, trace.requests(models=host.profiles), arrivals=trace, host=host)
    res = sy.run(algo, ds.head(100), arrivals=trace.scaled(rate=2.0), host=host)
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterable, Mapping, Sized
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

import numpy as np
import pandas as pd

from sykit._base.checks import check_int, check_real, plain
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.files import read_table
from sykit._world.models import TOKEN_LIMIT, GroundTruth, Request
from sykit.datasets._random import seeded_rng

__all__ = ["AZURE_SERVICES", "MAX_BINS", "Trace", "azure_trace"]

#: The most bins :meth:`Trace.counts` makes (80 MB of counts): a finer bin is a mistake, not a
#: question the counts can answer.
MAX_BINS = 10_000_000

#: The Azure LLM inference trace's services: name → shipped file.
AZURE_SERVICES: Mapping[str, str] = MappingProxyType(
    {
        "code": "traces/AzureLLMInferenceTrace_code_2023.csv",
        "conv": "traces/AzureLLMInferenceTrace_conv_2023.csv",
    }
)


def _read_only(values: Any, dtype: type) -> np.ndarray:
    array: np.ndarray = np.array(values, dtype=dtype)  # a copy: the caller's array stays theirs
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Trace:
    """Arrival times and each request's recorded (input, output) token counts, in arrival order.

        trace = sy.datasets.azure_trace("code")                     # one hour of a coding service
        trace = sy.traffic.Trace.from_frame(df, time="ts", input_tokens="prompt",
                                            output_tokens="completion")
        trace = sy.traffic.Trace(times=[0.0, 0.1, 0.1, 2.5], input_tokens=[900, 40, 40, 3_000],
                                 output_tokens=[120, 8, 9, 400])

    ``times`` are seconds ≥ 0, non-decreasing (equal times are requests that arrived together);
    ``rows`` numbers the requests in the source (kept through :meth:`window` and
    :meth:`scaled`, so a request keeps its id); ``start`` is the wall-clock time of second 0 when
    the source had timestamps. Immutable: every method returns a new trace.

    Two ways to run it, both open loop (no concurrency limit unless ``concurrency=`` is given):

    - its own requests: ``sy.run(algo, trace.requests(models=host.profiles), arrivals=trace,
      host=host)``, each arriving at its recorded time with its recorded token pair;
    - a dataset's prompts at the trace's times: ``sy.run(algo, ds, arrivals=trace, host=host)``;
      request ``i`` arrives at ``trace.times[i]`` (see :meth:`arrivals_for`); the dataset's own
      token counts and ground truth apply, the trace's token counts are not used.
    """

    times: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    name: str = "trace"
    rows: np.ndarray | None = field(default=None, repr=False)
    start: pd.Timestamp | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ArgumentTypeError(f"Trace: name must be a non-empty string, got {self.name!r}")
        times = _float_array(self.times, "times")
        n = len(times)
        if n == 0:
            raise ArgumentError("Trace: times is empty; a trace needs at least one arrival")
        if (times < 0).any():
            first = int(np.flatnonzero(times < 0)[0])
            raise ArgumentError(
                f"Trace: times must be ≥ 0 seconds, got times[{first}] = {times[first]:g}; "
                "shift them so the first arrival is at 0 (times - times.min())"
            )
        _check_sorted(times, "times", "sort them (each request's token counts with them)")
        inputs = _token_array(self.input_tokens, "input_tokens", n)
        outputs = _token_array(self.output_tokens, "output_tokens", n)
        rows = np.arange(n) if self.rows is None else _int_array(self.rows, "rows", n)
        if len(np.unique(rows)) != n:  # a row names a request: its id in a run
            raise ArgumentError("Trace: rows must be distinct, one per request")
        if self.start is not None and not isinstance(self.start, pd.Timestamp):
            raise ArgumentTypeError(
                f"Trace: start must be a pandas Timestamp or None, got {type(self.start).__name__}"
            )
        setattr_ = object.__setattr__
        setattr_(self, "times", _read_only(times, float))
        setattr_(self, "input_tokens", _read_only(inputs, np.int64))
        setattr_(self, "output_tokens", _read_only(outputs, np.int64))
        setattr_(self, "rows", _read_only(rows, np.int64))

    # -- building one --------------------------------------------------------------------------
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        time: str,
        input_tokens: str,
        output_tokens: str,
        name: str = "frame",
        sort: bool = False,
    ) -> Trace:
        """A trace from any table with one row per request: an arrival time and token counts.

            sy.traffic.Trace.from_frame(df, time="TIMESTAMP", input_tokens="ContextTokens",
                                output_tokens="GeneratedTokens")

        ``time`` holds timestamps (datetimes, or text pandas parses as dates), durations
        (timedeltas), or seconds (numbers). Timestamps and durations become seconds since the
        earliest one, so the first request arrives at 0 (``start`` keeps its wall-clock time);
        seconds are kept as recorded and must be ≥ 0. Rows must be in time order: an earlier
        time after a later one is refused unless ``sort=True``, which sorts the rows by time
        (stable: rows with equal times keep their order, and each row keeps its token counts).
        Token counts are whole numbers ≥ 0; an empty cell is refused.
        """
        if not isinstance(frame, pd.DataFrame):
            raise ArgumentTypeError(
                f"Trace.from_frame needs a pandas DataFrame, got {type(frame).__name__}"
            )
        if not isinstance(sort, bool):
            raise ArgumentTypeError(f"sort must be True or False, got {sort!r}")
        columns = ", ".join(map(str, frame.columns)) or "none"
        for role, column in (
            ("time", time),
            ("input_tokens", input_tokens),
            ("output_tokens", output_tokens),
        ):
            if not isinstance(column, str):
                raise ArgumentTypeError(
                    f"Trace.from_frame: {role} must be a column name (str), got "
                    f"{type(column).__name__}"
                )
            if column not in frame.columns:
                raise ArgumentError(
                    f"Trace.from_frame: {role} column {column!r} is not in the frame; columns "
                    f"are: {columns}"
                )
        if frame.empty:
            raise ArgumentError("Trace.from_frame: the frame has no rows")
        seconds, start = _seconds(frame[time], time)
        inputs = _column_counts(frame[input_tokens], "input_tokens")
        outputs = _column_counts(frame[output_tokens], "output_tokens")
        rows = np.arange(len(frame))
        if sort:
            order = np.argsort(seconds, kind="stable")
            seconds, inputs, outputs, rows = (a[order] for a in (seconds, inputs, outputs, rows))
        else:
            _check_sorted(seconds, f"time column {time!r}", "pass sort=True to sort the rows")
        return cls(seconds, inputs, outputs, name=name, rows=rows, start=start)

    # -- what it is ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.times)

    def __repr__(self) -> str:
        return (
            f"<Trace {self.name!r}: {len(self):,} requests over {self.span_s:,.1f} s "
            f"({self.mean_rate_per_s:.3g}/s)>"
        )

    @property
    def span_s(self) -> float:
        """Seconds from the first arrival to the last."""
        return float(self.times[-1] - self.times[0])

    @property
    def mean_rate_per_s(self) -> float:
        """Requests per second: the reciprocal of the mean gap between arrivals (NaN for a trace
        whose arrivals all share one time)."""
        span = self.span_s
        return (len(self) - 1) / span if span > 0 else math.nan

    @property
    def frame(self) -> pd.DataFrame:
        """One row per request: ``row`` (its position in the source), ``time_s``,
        ``input_tokens``, ``output_tokens``. A copy: edit it freely."""
        return pd.DataFrame(
            {
                "row": self._rows.copy(),
                "time_s": self.times.copy(),
                "input_tokens": self.input_tokens.copy(),
                "output_tokens": self.output_tokens.copy(),
            }
        )

    def interarrival_cv(self) -> float:
        """The coefficient of variation (standard deviation / mean, population) of the gaps
        between arrivals: 1 for Poisson arrivals, far more for bursty traffic."""
        gaps = np.diff(self.times)
        if len(gaps) == 0 or gaps.mean() == 0:
            return math.nan
        return float(gaps.std() / gaps.mean())

    def counts(self, bin_s: float = 1.0) -> pd.Series:
        """Arrivals per bin of ``bin_s`` seconds, bins ``[k·bin_s, (k+1)·bin_s)`` from second 0
        to the last arrival's bin, empty bins included; indexed by each bin's start."""
        bin_s = check_real(bin_s, "bin_s", low=0, low_open=True)
        last = float(self.times[-1])
        if last / bin_s >= MAX_BINS:
            raise ArgumentError(
                f"counts: bin_s={bin_s:g} would make more than {MAX_BINS:,} bins from second 0 "
                f"to the last arrival at {last:,.6g} s; use bin_s ≥ {last / (MAX_BINS - 1):.3g}"
            )
        index = np.floor(self.times / bin_s).astype(np.int64)
        counted = np.bincount(index)
        return pd.Series(
            counted,
            index=pd.Index(np.arange(len(counted)) * bin_s, name="bin_start_s"),
            name="arrivals",
        )

    def summary(self) -> pd.Series:
        """The figures that describe the workload: requests, span, mean rate, inter-arrival CV,
        the busiest second (from second 0), token percentiles and the input–output
        correlation (Pearson)."""
        inputs = self.input_tokens.astype(float)
        outputs = self.output_tokens.astype(float)
        varied = len(self) > 1 and inputs.std() > 0 and outputs.std() > 0
        return pd.Series(
            {
                "requests": len(self),
                "span_s": self.span_s,
                "mean_rate_per_s": self.mean_rate_per_s,
                "interarrival_cv": self.interarrival_cv(),
                "busiest_second": _busiest(self.times, 1.0),
                "input_tokens_p50": float(np.quantile(inputs, 0.5)),
                "input_tokens_p99": float(np.quantile(inputs, 0.99)),
                "output_tokens_p50": float(np.quantile(outputs, 0.5)),
                "output_tokens_p99": float(np.quantile(outputs, 0.99)),
                "input_output_corr": (
                    float(np.corrcoef(inputs, outputs)[0, 1]) if varied else math.nan
                ),
            },
            name=self.name,
            dtype=object,
        )

    # -- new traces from this one --------------------------------------------------------------
    @property
    def _rows(self) -> np.ndarray:
        return cast(np.ndarray, self.rows)  # never None after __post_init__

    def _select(
        self, keep: np.ndarray | slice, times: np.ndarray, start: pd.Timestamp | None
    ) -> Trace:
        return Trace(
            times,
            self.input_tokens[keep],
            self.output_tokens[keep],
            name=self.name,
            rows=self._rows[keep],
            start=start,
        )

    def scaled(self, *, rate: float | None = None, rate_per_s: float | None = None) -> Trace:
        """The same arrivals sped up or slowed down: every time divided by the same factor, so
        the bursts keep their shape. ``rate=2.0`` doubles the rate (halves every time and
        gap); ``rate_per_s=10.0`` picks the factor that makes :attr:`mean_rate_per_s` 10.
        Each request keeps its token pair. ``start`` is dropped: the times no longer follow the
        clock."""
        if (rate is None) == (rate_per_s is None):
            raise ArgumentError(
                "scaled takes one of rate= (a factor: 2.0 doubles the rate) or rate_per_s= "
                "(the mean requests per second wanted)"
            )
        if rate is not None:
            factor = check_real(rate, "rate", low=0, low_open=True)
        else:
            wanted = check_real(rate_per_s, "rate_per_s", low=0, low_open=True)
            current = self.mean_rate_per_s
            if math.isnan(current):
                raise ArgumentError(
                    "scaled(rate_per_s=...) needs arrivals at two different times at least; "
                    "this trace's all share one time"
                )
            factor = wanted / current
        with np.errstate(over="ignore"):
            times = self.times / factor
        if not np.isfinite(times[-1]):
            raise ArgumentError(
                f"scaled: dividing the times by {factor:g} puts the last arrival "
                f"({self.times[-1]:g} s) past the largest float; ask for a higher rate"
            )
        return Trace(
            times,
            self.input_tokens,
            self.output_tokens,
            name=self.name,
            rows=self.rows,
        )

    def window(self, start_s: float, duration_s: float) -> Trace:
        """The arrivals in ``[start_s, start_s + duration_s)``, their times shifted so that
        ``start_s`` becomes second 0 (a run on a window does not idle through what came before)."""
        start_s = check_real(start_s, "start_s", low=0)
        duration_s = check_real(duration_s, "duration_s", low=0, low_open=True)
        end = start_s + duration_s
        keep = (self.times >= start_s) & (self.times < end)
        if not keep.any():
            raise ArgumentError(
                f"window: no arrivals in [{start_s:g}, {end:g}) s; the trace's arrivals run from "
                f"{self.times[0]:g} to {self.times[-1]:g} s"
            )
        start = None if self.start is None else self.start + pd.Timedelta(seconds=start_s)
        return self._select(keep, self.times[keep] - start_s, start)

    def head(self, n: int) -> Trace:
        """The first ``n`` arrivals, times unchanged."""
        n = check_int(n, "n", low=1, expected="an int ≥ 1", type_error=ArgumentError)
        return self._select(slice(0, n), self.times[:n], self.start)

    # -- as a workload -------------------------------------------------------------------------
    def arrivals_for(self, requests: int | Sized) -> list[float]:
        """The arrival times of ``requests`` (a count, or anything with a length: a dataset, a
        list): the first that many of the trace's times, in seconds. ``sy.run(...,
        arrivals=trace)`` calls this with the number of requests."""
        if isinstance(requests, numbers.Integral) and not isinstance(requests, bool):
            n = check_int(requests, "requests", low=0, expected="a count ≥ 0")
        elif isinstance(requests, Sized) and not isinstance(requests, str | bytes):
            n = len(requests)
        else:
            raise ArgumentTypeError(
                f"arrivals_for takes a number of requests or the requests, got "
                f"{type(requests).__name__}"
            )
        if n > len(self):
            raise ArgumentError(
                f"the trace {self.name!r} has {len(self):,} arrivals for {n:,} requests; run "
                f"{len(self):,} requests at most (dataset.head({len(self)})) or take a longer "
                "window of the trace"
            )
        return self.times[:n].tolist()

    def requests(
        self, *, models: Iterable[str], n: int | None = None, seed: int = 0
    ) -> list[Request]:
        """Requests with the trace's token counts and synthetic prompts (the trace has no text).

            trace.requests(models=host.profiles)          # one per arrival, its own pair
            trace.requests(models=host.profiles, n=500, seed=1)   # 500 pairs drawn at random

        Each request's ``input_tokens`` is the recorded input length, and for every model in
        ``models`` (model names, or a dict such as ``host.profiles`` whose keys are) the
        simulated answer has the recorded output length (hidden ground truth, which the
        algorithm cannot see; other models draw it from their profile; ``models=()`` leaves
        every length to the profiles). With ``n=None`` there is one request per arrival, in
        order, each with its own recorded pair: run them with ``arrivals=trace``. With ``n``
        each of ``n`` requests takes one recorded (input, output) pair drawn with replacement,
        keyed by ``seed``: the pairs, never the two lengths drawn apart, so the joint
        distribution holds; for closed-loop or Poisson runs with the trace's sizes.

        ``result.requests`` gets two hidden columns: ``trace_row`` (the pair's row in the
        source) and ``trace_output_tokens`` (its recorded output length).
        """
        names = _model_names(models)
        if n is None:
            picked = np.arange(len(self))
            ids = [f"{self.name}/{row}" for row in self._rows.tolist()]
        else:
            n = check_int(n, "n", low=1, expected="an int ≥ 1", type_error=ArgumentError)
            seed = check_int(seed, "seed")
            picked = seeded_rng(seed).integers(len(self), size=n)
            ids = [f"{self.name}/draw/{seed}/{k}" for k in range(n)]
        built = []
        for k, position in enumerate(picked.tolist()):
            row = int(self._rows[position])
            out = int(self.output_tokens[position])
            truth = GroundTruth(
                output_tokens=MappingProxyType(dict.fromkeys(names, out)),
                columns=MappingProxyType({"trace_row": row, "trace_output_tokens": out}),
            )
            request = Request(
                f"{self.name} request {row}",
                id=ids[k],
                input_tokens=int(self.input_tokens[position]),
            )
            built.append(request.with_truth(truth))
        return built


def _busiest(times: np.ndarray, bin_s: float) -> int:
    """The most arrivals in one bin, counted over the bins that have any (so a trace spread over
    years costs no more than one over a minute)."""
    return int(np.unique(np.floor(times / bin_s), return_counts=True)[1].max())


def _model_names(models: object) -> tuple[str, ...]:
    if isinstance(models, str) or not isinstance(models, Iterable):
        raise ArgumentTypeError(
            "models must be a list of model names (or a dict such as host.profiles), got "
            f"{type(models).__name__} {models!r:.40}"
        )
    names = tuple(models)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ArgumentTypeError(f"models: model names must be non-empty strings, got {name!r}")
    return names


def _float_array(values: object, what: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"Trace: {what} must be numbers (seconds)") from None
    if array.ndim != 1:
        raise ArgumentError(f"Trace: {what} must be one-dimensional, got shape {array.shape}")
    if not np.isfinite(array).all():
        first = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ArgumentError(f"Trace: {what}[{first}] must be a finite number, got {array[first]}")
    return array


def _int_array(values: object, what: str, n: int) -> np.ndarray:
    array = _float_array(values, what)
    if len(array) != n:
        raise ArgumentError(f"Trace: {what} has {len(array)} values for {n} arrival times")
    if (array % 1 != 0).any():
        first = int(np.flatnonzero(array % 1 != 0)[0])
        raise ArgumentError(f"Trace: {what}[{first}] must be a whole number, got {array[first]:g}")
    return array.astype(np.int64)


def _token_array(values: object, what: str, n: int) -> np.ndarray:
    array = _int_array(values, what, n)
    bad = (array < 0) | (array > TOKEN_LIMIT)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ArgumentError(
            f"Trace: {what}[{first}] must be from 0 to 2**31 - 1, got {array[first]}"
        )
    return array


def _check_sorted(times: np.ndarray, what: str, fix: str) -> None:
    back = np.flatnonzero(np.diff(times) < 0)
    if len(back):
        i = int(back[0])
        raise ArgumentError(
            f"{what} must be in time order: row {i + 1} ({times[i + 1]:g} s) comes after row "
            f"{i} ({times[i]:g} s); {fix}"
        )


def _seconds(series: pd.Series, column: str) -> tuple[np.ndarray, pd.Timestamp | None]:
    """The column as seconds, and the wall-clock time of second 0 when it held timestamps."""
    if series.isna().any():
        first = int(np.flatnonzero(series.isna().to_numpy())[0])
        raise ArgumentError(
            f"Trace.from_frame: time column {column!r} is empty at row {first}; every request "
            "needs its arrival time"
        )
    kind = series.dtype.kind
    if kind not in "iufmMb":  # text: seconds written as text, or timestamps
        numeric = pd.to_numeric(series, errors="coerce")
        if numeric.notna().all():
            series, kind = numeric, numeric.dtype.kind
        elif numeric.notna().any():  # mostly seconds: name the cell that is not
            first = int(np.flatnonzero(numeric.isna().to_numpy())[0])
            raise ArgumentError(
                f"Trace.from_frame: time column {column!r} must hold timestamps or seconds "
                f"(numbers); row {first} has {plain(series.iloc[first])!r}, which is neither"
            )
    if kind in "iuf":
        seconds = series.to_numpy(dtype=float)
        if (seconds < 0).any():
            first = int(np.flatnonzero(seconds < 0)[0])
            raise ArgumentError(
                f"Trace.from_frame: time column {column!r} holds seconds, which must be ≥ 0; "
                f"row {first} has {seconds[first]:g}. Shift them so the first arrival is at 0 "
                f"(frame[{column!r}] - frame[{column!r}].min())"
            )
        return seconds, None
    if kind == "m":  # durations
        seconds = series.dt.total_seconds().to_numpy(dtype=float)
        return seconds - seconds.min(), None
    stamps = series if kind == "M" else _parse_timestamps(series, column)
    origin = stamps.min()
    return (stamps - origin).dt.total_seconds().to_numpy(dtype=float), pd.Timestamp(origin)


def _parse_timestamps(series: pd.Series, column: str) -> pd.Series:
    values = series.tolist()
    if not all(isinstance(v, str) for v in values):
        wrong = next(v for v in values if not isinstance(v, str))
        raise ArgumentError(
            f"Trace.from_frame: time column {column!r} must hold timestamps or seconds "
            f"(numbers), got {wrong!r}"
        )
    try:
        return pd.Series(pd.to_datetime(values, format="ISO8601"))
    except (ValueError, TypeError):
        pass
    parsed = pd.Series(pd.to_datetime(values, format="mixed", errors="coerce"))
    if parsed.isna().any():
        first = int(np.flatnonzero(parsed.isna().to_numpy())[0])
        raise ArgumentError(
            f"Trace.from_frame: time column {column!r} must hold timestamps or seconds "
            f"(numbers); row {first} has {plain(values[first])!r}, which is neither"
        )
    return parsed


def _column_counts(series: pd.Series, role: str) -> np.ndarray:
    numeric = pd.to_numeric(series, errors="coerce")
    bad = numeric.isna() | (numeric < 0) | (numeric % 1 != 0)
    if series.dtype == bool or bad.any():
        first = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
        raise ArgumentError(
            f"Trace.from_frame: {role} column {series.name!r} must hold whole numbers ≥ 0 in "
            f"every row; row {first} has {plain(series.iloc[first])!r}"
        )
    return numeric.to_numpy(dtype=np.int64)


@functools.cache
def _azure(service: str) -> Trace:
    frame = read_table(AZURE_SERVICES[service])
    return Trace.from_frame(
        frame,
        time="TIMESTAMP",
        input_tokens="ContextTokens",
        output_tokens="GeneratedTokens",
        name=f"azure-{service}",
    )


def azure_trace(service: str) -> Trace:
    """One hour (2023-11-16) of a production LLM service on Azure: ``"code"`` (a coding
    assistant, 8,819 requests, 2.6/s with bursts of 67 in one second) or ``"conv"`` (a
    conversation service, 19,366 requests, 5.5/s).

        trace = sy.datasets.azure_trace("code")
        trace.summary()            # rate, inter-arrival CV (13.2 for code), busiest second, tokens

    Times are seconds since the service's first request (``trace.start`` is its timestamp);
    input tokens are the recorded context lengths, output tokens the generated lengths. No
    prompt text was published. The service's name may be in any case. From
    Azure/AzurePublicDataset, CC BY 4.0 (Patel et al., "Splitwise", ISCA 2024);
    datasets/PROVENANCE.md has the details.
    """
    if not isinstance(service, str):
        raise ArgumentTypeError(f"service must be 'code' or 'conv', got {type(service).__name__}")
    key = service.strip().lower()  # typed by hand: case and surrounding spaces do not matter
    if key not in AZURE_SERVICES:
        raise ArgumentError(
            f"azure_trace: unknown service {service!r}; the trace has "
            f"{', '.join(map(repr, AZURE_SERVICES))}"
        )
    return _azure(key)
