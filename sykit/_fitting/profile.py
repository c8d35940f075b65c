"""Profiles from measurements: fit a ``ModelProfile`` per model from real runs, and check the fit.

A simulation is only as good as its profiles. ``fit`` turns what an ``HttpHost`` run recorded (or a
table of measured latencies) into the latency distributions and failure rates a ``SimHost``
needs; ``compare_quantiles`` puts the measured and the simulated quantiles side by side::

    measured = sy.run(algo, requests, host=http_host)
    profiles = fit(measured.attempts, base=http_host.profiles)       # prices kept from base
    simulated = sy.run(algo, requests, host=sy.SimHost(profiles))
    compare_quantiles(measured, simulated)                           # p50 / p95 per model

Accepted columns (a DataFrame, a CSV path, or anything with an ``.attempts`` frame):

* ``model`` (required);
* ``ttft_s``: time to the first token, in seconds (streamed calls; NaN otherwise);
* ``tokens_per_s``, or ``latency_s`` with ``output_tokens`` (then tokens/s is
  ``output_tokens / (latency_s - ttft_s)``, the simulated host's own rule);
* optional ``input_tokens``: where prompts vary in length and the time to first token grows
  with them, the fit estimates ``Latency.prefill_tokens_per_s`` and fits ``ttft`` to what is left;
* optional ``status`` (only ``"ok"`` rows give latencies; ``"error"`` rows give failure rates by
  ``error_kind``; cancelled and skipped rows are ignored), ``kind`` (decision calls are left out of
  the latency fit when model calls exist) and ``http_status``.

Without ``ttft_s`` (non-streamed calls) the whole latency is fitted as time to first token and
tokens/s is made very large: the simulated latency matches, but answer length no longer changes it.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import ErrorKind, Kind, Status
from sykit._world.config import Latency, ModelProfile
from sykit._world.dists import Constant, Distribution, Empirical, LogNormal

__all__ = ["compare_quantiles", "fit"]

_INSTANT_TOKENS_PER_S = 1e6
_MIN_TTFT_S = 1e-4  # a time to first token left after the prompt is read: never zero
_MIN_PREFILL_SAMPLES = 20
#: error_kind → the Faults field whose random rate it measures (structural 400s are not random).
_FAULT_FIELDS = {
    "rate_limit": "rate_limit",
    "unavailable": "unavailable",
    "timeout": "timeout",
    "policy": "policy",
    "invalid_request": "invalid",
    "invalid_response": "malformed",
}

#: The base's other random failure rates: what they cause is measured under the kinds above (a
#: reset or a cut stream as unavailable, a non-chat body as invalid_response, an ErrorFault under
#: its status's kind), so a fit clears them rather than count those failures twice.
_MEASURED_ELSEWHERE = {"reset": 0.0, "cut_stream": 0.0, "non_chat": 0.0, "errors": ()}

Shape = Literal["lognormal", "empirical"]


def _frame(data: Any, name: str) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, str | os.PathLike):
        return pd.read_csv(data)
    attempts = getattr(data, "attempts", None)
    if isinstance(attempts, pd.DataFrame):
        return attempts
    raise ArgumentTypeError(
        f"{name} must be a DataFrame, a CSV path, or a sy.Result / sy.Comparison; "
        f"got {type(data).__name__}"
    )


def _base_profiles(base: Any) -> tuple[Mapping[str, ModelProfile], ModelProfile]:
    if base is None:
        return {}, ModelProfile()
    if isinstance(base, ModelProfile):
        return {}, base
    profiles = getattr(base, "profiles", base)
    if not isinstance(profiles, Mapping):
        raise ArgumentTypeError(
            "base must be a sy.ModelProfile, a dict of model → sy.ModelProfile, or a host; "
            f"got {type(base).__name__}"
        )
    for name, profile in profiles.items():
        if not isinstance(profile, ModelProfile):
            raise ArgumentTypeError(
                f"base[{name!r}] must be a sy.ModelProfile, got {type(profile).__name__}"
            )
    return profiles, ModelProfile()


def _check_shape(value: object, name: str) -> Shape:
    if value not in ("lognormal", "empirical"):
        raise ArgumentError(f"{name} must be 'lognormal' or 'empirical', got {value!r}")
    return value


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _distribution(samples: np.ndarray, shape: Shape, *, tail: str = "upper") -> Distribution | None:
    """Samples → a distribution whose median and 95th percentile (``tail="upper"``) or 5th
    percentile (``tail="lower"``) match theirs; a constant when they do not vary."""
    values = samples[np.isfinite(samples) & (samples >= 0)]
    if values.size == 0:
        return None
    low, high = float(values.min()), float(values.max())
    if high - low <= 1e-12 * max(1.0, abs(high)):
        return Constant(high)
    if shape == "empirical" or low <= 0:
        return Empirical(values.tolist())
    return LogNormal.through(values, tail=tail)


def fit(
    data: pd.DataFrame | str | os.PathLike[str] | Any,
    *,
    base: Mapping[str, ModelProfile] | ModelProfile | Any = None,
    ttft: Shape = "lognormal",
    tokens_per_s: Shape = "lognormal",
    output_tokens: Shape = "lognormal",
    faults: bool = True,
    min_samples: int = 5,
) -> dict[str, ModelProfile]:
    """Fit a :class:`ModelProfile` per model from an attempt log or a table of measured latencies.

    ``base`` supplies everything not measured (prices, context window, capabilities, quality,
    Retry-After): a profile for every model, a dict by model, or a host (its ``profiles``).
    Latencies: ``ttft`` and ``output_tokens`` are fitted by their median and 95th percentile,
    ``tokens_per_s`` by its median and 5th percentile (the slow tail is what lengthens answers),
    as ``"lognormal"`` or as the ``"empirical"`` samples themselves. A model with fewer than
    ``min_samples`` successful rows keeps its base latency (with a warning). ``faults=True``
    replaces the base's random failure rates with the measured share of attempts that failed by
    ``error_kind`` (rate_limit, unavailable, timeout, policy, invalid_request, and
    invalid_response as ``malformed``), and the reject delay with the measured latency of HTTP
    error answers. The base's other random faults (``reset``, ``cut_stream``, ``non_chat``,
    ``errors``) are cleared: what they cause is counted under those kinds already.

    Returns the fitted profiles of the models present in ``data``, by name.
    """
    frame = _frame(data, "data")
    if "model" not in frame:
        raise ArgumentError(
            f"data needs a 'model' column; it has {list(frame.columns)} "
            "(see sykit._fitting.profile for the accepted columns)"
        )
    has_timing = any(c in frame for c in ("ttft_s", "latency_s", "tokens_per_s"))
    if not has_timing:
        raise ArgumentError(
            "data needs measured timings: a 'ttft_s' column, 'tokens_per_s', or 'latency_s' with "
            f"'output_tokens'; it has {list(frame.columns)}"
        )
    ttft = _check_shape(ttft, "ttft")
    tokens_per_s = _check_shape(tokens_per_s, "tokens_per_s")
    output_tokens = _check_shape(output_tokens, "output_tokens")
    min_samples = check_int(min_samples, "min_samples", low=1, type_error=ArgumentError)
    by_model, default = _base_profiles(base)
    fitted: dict[str, ModelProfile] = {}
    models = pd.unique(frame["model"].dropna().astype(str))
    for model in models:
        rows = frame[frame["model"].astype(str) == model]
        profile = by_model.get(model, default)
        fitted[model] = _fit_one(
            model, rows, profile, ttft, tokens_per_s, output_tokens, faults, min_samples
        )
    return fitted


def _fit_one(
    model: str,
    rows: pd.DataFrame,
    profile: ModelProfile,
    ttft_shape: Shape,
    tps_shape: Shape,
    out_shape: Shape,
    with_faults: bool,
    min_samples: int,
) -> ModelProfile:
    status = rows["status"].astype(str) if "status" in rows else pd.Series("ok", index=rows.index)
    ok = rows[(status == Status.OK).to_numpy()]
    if "kind" in ok and (ok["kind"].astype(str) == Kind.MODEL).any():
        ok = ok[(ok["kind"].astype(str) == Kind.MODEL).to_numpy()]
    changes: dict[str, Any] = {}
    latency = _fit_latency(ok, profile, ttft_shape, tps_shape)
    if len(ok) < min_samples or latency is None:
        warnings.warn(
            f"fit: {model!r} has {len(ok)} successful rows with timings (min_samples="
            f"{min_samples}); its latency is kept from the base profile",
            UserWarning,
            stacklevel=3,
        )
    else:
        changes["latency"] = latency
        out = _distribution(_column(ok, "output_tokens"), out_shape)
        if out is not None and "output_tokens" in ok and out.quantile(0.5) > 0:
            changes["output_tokens"] = out
    if with_faults and "status" in rows:
        changes.update(_fit_faults(rows, status, profile))
    return profile.replace(**changes) if changes else profile


def _fit_latency(
    ok: pd.DataFrame, profile: ModelProfile, ttft_shape: Shape, tps_shape: Shape
) -> Latency | None:
    ttft = _column(ok, "ttft_s")
    latency = _column(ok, "latency_s")
    out = _column(ok, "output_tokens")
    if np.isfinite(ttft).any():
        prefill = _prefill(ttft, _column(ok, "input_tokens")) if "input_tokens" in ok else None
        if prefill is not None:  # the time to first token less the time to read the prompt
            reading = _column(ok, "input_tokens") / prefill
            ttft = np.maximum(ttft - reading, _MIN_TTFT_S)
        ttft_dist = _distribution(ttft, ttft_shape)
        if "tokens_per_s" in ok:
            tps = _column(ok, "tokens_per_s")
        else:
            streamed = latency - ttft
            usable = np.isfinite(streamed) & (streamed > 0) & (out > 0)
            tps = np.where(usable, out / np.where(usable, streamed, 1.0), np.nan)
        tps_dist = _distribution(tps[tps > 0] if tps.size else tps, tps_shape, tail="lower")
        if ttft_dist is None:
            return None
        return Latency(
            ttft=ttft_dist,
            tokens_per_s=tps_dist if tps_dist is not None else profile.latency.tokens_per_s,
            prefill_tokens_per_s=prefill,
        )
    whole = _distribution(latency, ttft_shape)
    if whole is None:
        return None
    return Latency(ttft=whole, tokens_per_s=_INSTANT_TOKENS_PER_S)


def _prefill(ttft: np.ndarray, input_tokens: np.ndarray) -> float | None:
    """Prompt tokens read a second: the inverse slope of a least-squares line of the time to first
    token over the prompt's length, when prompts vary (the longest at least twice the shortest,
    20 or more measurements) and the slope stands clear of its noise (4 standard errors)."""
    usable = np.isfinite(ttft) & np.isfinite(input_tokens) & (input_tokens >= 0)
    x, y = input_tokens[usable].astype(float), ttft[usable]
    if len(x) < _MIN_PREFILL_SAMPLES or x.max() < 2 * max(x.min(), 1.0):
        return None
    slope, intercept = np.polyfit(x, y, 1)
    spread = float(((x - x.mean()) ** 2).sum())
    noise = float(((y - (slope * x + intercept)) ** 2).sum()) / (len(x) - 2)
    if not slope > 0 or spread <= 0 or slope < 4 * math.sqrt(noise / spread):
        return None
    return float(1.0 / slope)


def _fit_faults(rows: pd.DataFrame, status: pd.Series, profile: ModelProfile) -> dict[str, Any]:
    answered = rows[status.isin(("ok", "error")).to_numpy()]
    if answered.empty:
        return {}
    errors = answered[(answered["status"].astype(str) == Status.ERROR).to_numpy()]
    kinds = errors["error_kind"].astype(str) if "error_kind" in errors else pd.Series(dtype=str)
    n = len(answered)
    rates = {field: float((kinds == kind).sum()) / n for kind, field in _FAULT_FIELDS.items()}
    changes: dict[str, Any] = {}
    fault_changes: dict[str, Any] = dict(rates)
    if "http_status" in errors:
        statuses = pd.to_numeric(
            errors.loc[(kinds == ErrorKind.UNAVAILABLE).to_numpy(), "http_status"], errors="coerce"
        )
        statuses = statuses.dropna().astype(int)
        eligible = statuses[(statuses >= 500) | statuses.isin((403, 408))]
        if not eligible.empty:
            fault_changes["unavailable_status"] = int(eligible.mode().iloc[0])
        answered_errors = errors[
            pd.to_numeric(errors["http_status"], errors="coerce").notna().to_numpy()
        ]
        delay = _distribution(_column(answered_errors, "latency_s"), "lognormal")
        if delay is not None:
            changes["reject_delay_s"] = delay
    changes["faults"] = profile.faults.replace(**fault_changes, **_MEASURED_ELSEWHERE)
    return changes


# -- checking a fit ------------------------------------------------------------------------------


def _successes(data: Any, name: str, table: str) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, str | os.PathLike):
        frame = pd.read_csv(data)
    else:
        frame = getattr(data, table, None)
        if not isinstance(frame, pd.DataFrame):
            raise ArgumentTypeError(
                f"{name} must be a DataFrame, a CSV path, or a sy.Result / sy.Comparison; "
                f"got {type(data).__name__}"
            )
    if "status" in frame:
        frame = frame[frame["status"].astype(str) == Status.OK]
    if "kind" in frame:
        frame = frame[frame["kind"].astype(str) == Kind.MODEL]
    return frame


def compare_quantiles(
    measured: Any,
    simulated: Any,
    *,
    column: str = "latency_s",
    quantiles: Sequence[float] | Iterable[float] = (0.5, 0.95),
    by: str | None = "model",
    table: Literal["attempts", "requests"] = "attempts",
) -> pd.DataFrame:
    """Measured and simulated quantiles of ``column`` side by side, over successful model calls.

    One row per group (``by``, a column such as ``"model"``; None for everything at once) and
    quantile, with ``measured``, ``simulated`` and ``rel_error`` (simulated / measured − 1). Pass
    many quantiles (``np.linspace(0.01, 0.99, 99)``) to draw the two CDFs. ``measured`` and
    ``simulated`` are results, attempt frames or CSV paths; ``table="requests"`` compares the
    request tables instead (e.g. end-to-end ``latency_s``).
    """
    if table not in ("attempts", "requests"):
        raise ArgumentError(f"table must be 'attempts' or 'requests', got {table!r}")
    qs = [float(q) for q in quantiles]
    if not qs or any(not 0.0 <= q <= 1.0 for q in qs):
        raise ArgumentError(f"quantiles must be numbers between 0 and 1, got {qs!r}")
    frames = {
        "measured": _successes(measured, "measured", table),
        "simulated": _successes(simulated, "simulated", table),
    }
    for side, frame in frames.items():
        if column not in frame:
            raise ArgumentError(f"{side} has no column {column!r}; it has {list(frame.columns)}")
        if by is not None and by not in frame:
            raise ArgumentError(f"{side} has no column {by!r} to group by (pass by=None)")
    groups: list[Any] = [None]
    if by is not None:
        groups = list(pd.unique(frames["measured"][by].dropna().astype(str)))
    rows = []
    for group in groups:
        values = {}
        for side, frame in frames.items():
            part = frame if group is None else frame[frame[by].astype(str) == group]
            series = pd.to_numeric(part[column], errors="coerce").dropna()
            values[side] = series.to_numpy(dtype=float)
        for q in qs:
            m = float(np.quantile(values["measured"], q)) if values["measured"].size else math.nan
            s = float(np.quantile(values["simulated"], q)) if values["simulated"].size else math.nan
            row = {} if by is None else {by: group}
            row.update(
                quantile=q,
                measured=m,
                simulated=s,
                rel_error=s / m - 1.0 if m else math.nan,
                n_measured=values["measured"].size,
                n_simulated=values["simulated"].size,
            )
            rows.append(row)
    return pd.DataFrame(rows)
