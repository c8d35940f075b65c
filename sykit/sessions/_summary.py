"""Per-session results of agent runs: one row per session, and a summary per strategy.

A router for coding agents is judged by sessions, not requests: did the task get done, what did
the whole session cost, how long did it take, how often did the model change mid-session and what
that cost in prompt caching. The requests frame has one row per turn; :func:`session_frame` folds
the turns of each (strategy, seed, session) into one row, :func:`task_frame` folds a session and
its sub-agents' sessions into one row per task, and :func:`session_summary` averages the task
rows per strategy the way sykit's summaries average requests (docs/statistics.md): each
session's mean over seeds first, then means over sessions with 95% percentile bootstrap intervals
that resample tasks (the sessions of one task together: :mod:`sykit.sessions._clustered`).
docs/session-summaries.md defines every column.

Cache figures read the attempt columns ``cached_input_tokens`` (prompt tokens read from the
model's cache) and ``cache_write_tokens`` (prompt tokens written to it); a run whose attempts
lack them has NaN cache figures, not zeros: "not recorded" is not "no cache hits".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import check_real, plain
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.vocab import RequestStatus
from sykit._results.result import Comparison, Result
from sykit._world.config import ModelProfile
from sykit.sessions._clustered import clustered_mean_cis, task_clusters
from sykit.sessions._grounded import TASK_KEYS
from sykit.sessions._outcome import TaskOutcomes
from sykit.sessions._tasks import fold_tasks, task_roots, task_success

__all__ = ["CACHE_COLUMNS", "CachePrices", "session_frame", "session_summary", "task_frame"]

#: Attempt columns the cache figures read; without them those figures are NaN.
CACHE_COLUMNS = ("cached_input_tokens", "cache_write_tokens")

_KEYS = ["strategy", "seed", "session_id"]


@dataclass(frozen=True)
class CachePrices:
    """One model's prompt prices in USD per 1M tokens (``ModelProfile``'s unit): ``input`` for
    uncached prompt tokens, ``cache_read`` for tokens read from the cache and ``cache_write`` for
    tokens written to it (None: writing costs the input price, as on providers that cache
    without a write premium). The cost of switching models needs them: the frames record tokens,
    and a cost split into prompt and answer only through the prices."""

    input: float
    cache_read: float
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name == "cache_write":
                continue
            check_real(
                value, f"CachePrices.{name}", low=0, expected="≥ 0 and finite (USD per 1M tokens)"
            )


def session_frame(
    result_or_comparison: Result | Comparison,
    *,
    outcomes: TaskOutcomes | None = None,
    prices: Mapping[str, CachePrices] | None = None,
) -> pd.DataFrame:
    """One row per (strategy, seed, session): its task, planned and sent turns, whether it
    completed and (with ``outcomes``) whether its task succeeded, its cost and duration, model
    switches and each model's share of its turns, and cache figures (NaN when the attempts do not
    record cache tokens; the cost of switching also needs ``prices``, per served model).

    Task columns come from the requests frame's ``task_id``, ``quadrant`` and ``planned_turns``
    columns: the turns' metadata, or their ground truth columns
    (``sy.datasets.GroundTruth(columns=...)`` via ``Request.with_truth``, out of the router's
    sight), as :func:`~sykit.sessions.grounded_sessions` sets them. ``success`` is decided by
    ``outcomes.success`` from the models that served each turn, with the run's seed; it is NaN
    without ``outcomes`` or for a session without task metadata. A sub-agent's session is a row of
    its own; ``task_session`` names its task's root session, whose row carries the task's success
    (decided over the turns of all its sessions: :func:`task_frame`).
    """
    return _session_rows(result_or_comparison, outcomes, prices)[1]


def task_frame(
    result_or_comparison: Result | Comparison,
    *,
    outcomes: TaskOutcomes | None = None,
    prices: Mapping[str, CachePrices] | None = None,
) -> pd.DataFrame:
    """One row per (strategy, seed, task): a root session with every sub-agent session under it
    (``sy.sessions.Session(..., parent=...)``) rolled into one, so a task's cost, tokens and time
    are counted once, wherever its work ran. ``session_id`` is the root's, ``sub_agents`` counts the
    other sessions; turns, cost, tokens, switches and switch costs are sums; ``duration_s`` is
    the task's span, from the root's first turn to the last turn's end; ``completed`` needs every
    session completed; ``success`` is the task's (see docs/session-summaries.md for the rule).
    A run without sub-agents has one task per session, equal to its :func:`session_frame` rows.
    """
    turns, sessions = _session_rows(result_or_comparison, outcomes, prices)
    models = [c for c in sessions.columns if c.startswith("share_")]
    return fold_tasks(sessions, turns, task_roots(sessions), models)


def _session_rows(
    result_or_comparison: Result | Comparison,
    outcomes: TaskOutcomes | None,
    prices: Mapping[str, CachePrices] | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The turns and the per-session rows of a run."""
    requests, attempts = _frames(result_or_comparison)
    if outcomes is not None and not isinstance(outcomes, TaskOutcomes):
        raise ArgumentTypeError(
            f"outcomes must be a sy.sessions.TaskOutcomes or None, got {type(outcomes).__name__}"
        )
    prices = _check_prices(prices)
    turns = _turns(requests, attempts)
    if outcomes is not None and not {"task_id", "quadrant"} <= set(turns.columns):
        raise ArgumentError(
            "outcomes were given, but no turn carries task_id and quadrant metadata, so no task "
            "can be decided: run sessions from sy.sessions.grounded_sessions(), or give every turn "
            "both keys (task_id in its metadata, quadrant as a hidden ground truth column: "
            "request.with_truth(sy.datasets.GroundTruth(columns={'quadrant': ...})))"
        )
    return turns, _fold(turns, outcomes, prices)


def session_summary(
    result_or_comparison: Result | Comparison,
    *,
    outcomes: TaskOutcomes | None = None,
    baseline: str | None = None,
    prices: Mapping[str, CachePrices] | None = None,
) -> pd.DataFrame:
    """One row per strategy over its tasks (:func:`task_frame`: a session with its sub-agents
    counts once, so a "session" here is a task): success rate with a 95% bootstrap interval over
    tasks (sessions sharing a ``task_id`` resampled together), completion rate, cost per
    session (with its interval) and per success, mean turns, switches, cache hit rate, the
    cost of switching, time to finish p50/p90, each model's share of the turns. Each session is
    first averaged over seeds, as sykit's summaries do with requests. With ``baseline``, the
    paired differences (strategy − baseline, same sessions and seeds) of success rate and cost
    per session, with 95% intervals over tasks."""
    frame = task_frame(result_or_comparison, outcomes=outcomes, prices=prices)
    names = list(dict.fromkeys(frame["strategy"]))
    if baseline is not None and baseline not in names:
        raise ArgumentError(f"baseline {baseline!r} is not one of the strategies {names}")
    models = [c for c in frame.columns if c.startswith("share_")]
    rows = [_summary_row(frame[frame["strategy"] == name], models) for name in names]
    table = pd.DataFrame(rows)
    if baseline is not None:
        paired = pd.DataFrame([_paired_row(frame, name, baseline) for name in names])
        table = table.merge(paired, on="strategy", how="left")
    return table


# -- the turns ------------------------------------------------------------------------------------


def _frames(given: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The requests and attempts frames, each with a ``seed`` column."""
    if isinstance(given, Comparison):
        return given.requests, given.attempts
    if isinstance(given, Result):
        return given.requests.assign(seed=given.seed), given.attempts.assign(seed=given.seed)
    raise ArgumentTypeError(
        f"expected a sy.Result or sy.Comparison of a run on sessions, got {type(given).__name__}"
    )


def _check_prices(prices: Any) -> dict[str, CachePrices] | None:
    """``prices`` as CachePrices per model: given so, or taken from a host's (or a mapping of)
    ``ModelProfile``s (a model without a ``sy.profiles.PromptCache`` reads at its input price: no
    saving to lose by switching to it; a cache writes at its own tier's price, the 1-hour one
    for ``PromptCache(tier="1h")``)."""
    if prices is None:
        return None
    profiles = getattr(prices, "profiles", None)
    if isinstance(profiles, Mapping):
        prices = profiles
    if not isinstance(prices, Mapping):
        raise ArgumentTypeError(
            "prices must map model names to sy.sessions.CachePrices (or be a host or its "
            f"profiles), got {type(prices).__name__}"
        )
    checked: dict[str, CachePrices] = {}
    for model, price in prices.items():
        if isinstance(price, ModelProfile):
            cache = price.cache  # without one, a read costs what an uncached token does
            checked[str(model)] = (
                CachePrices(price.price_in, price.price_in)
                if cache is None
                else CachePrices(
                    price.price_in, cache.read_price, cache.write_price_for(cache.tier)
                )
            )
            continue
        if not isinstance(price, CachePrices):
            raise ArgumentTypeError(
                f"prices[{model!r}] must be a CachePrices, got {type(price).__name__}"
            )
        checked[str(model)] = price
    return checked


def _turns(requests: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """One row per sent turn, in session and turn order, with its served attempt's tokens."""
    if "session_id" not in requests.columns or requests["session_id"].isna().all():
        raise ArgumentError(
            "this run has no session rows (its requests have no session_id): session figures "
            "need a run on a list of sy.sessions.Session, e.g. sy.sessions.grounded_sessions()"
        )
    rows = requests[requests["session_id"].notna()]
    turns = pd.DataFrame(
        {
            "strategy": rows["strategy"].astype(str).to_numpy(dtype=object),
            "seed": rows["seed"].to_numpy(),
            "session_id": rows["session_id"].to_numpy(dtype=object),
            "turn": _turn_numbers(rows),
            "request_id": rows["request_id"].astype(object).to_numpy(dtype=object),
            "ok": (rows["status"] == RequestStatus.OK).to_numpy(dtype=bool),
            "served_model": rows["served_model"].astype(object).to_numpy(dtype=object),
            "arrival_s": rows["arrival_s"].to_numpy(dtype=float),
            "end_s": rows["end_s"].to_numpy(dtype=float),
            "cost_usd": rows["cost_usd"].to_numpy(dtype=float),
        }
    )
    for column in ("parent_session", "parent_turn", *TASK_KEYS):
        if column in rows.columns:
            turns[column] = rows[column].astype(object).to_numpy(dtype=object)
    turns = turns.merge(_served_tokens(attempts), on=["strategy", "seed", "request_id"], how="left")
    # strategies, then seeds, then sessions in order of first appearance; turns in order
    order = {
        "_strategy": _appearance(turns["strategy"]),
        "seed": turns["seed"],
        "_session": _appearance(turns["session_id"]),
        "turn": turns["turn"],
    }
    turns = turns.iloc[np.lexsort([order[k].to_numpy() for k in reversed(list(order))])]
    turns = turns.reset_index(drop=True)
    turns["_group"] = turns.groupby(_KEYS, sort=False).ngroup()
    return turns


def _turn_numbers(rows: pd.DataFrame) -> np.ndarray:
    """The ``turn`` of each session row, checked: requests that carry a ``session_id`` in their
    metadata (rather than running as a sy.sessions.Session) must number their turns too, once
    each, or turns would be ordered, paired for switches and counted wrongly."""
    fix = (
        "run a list of sy.sessions.Session, or give each request's metadata a 'turn' "
        "(0, 1, 2, … within its session) besides its 'session_id'"
    )
    if "turn" not in rows.columns:
        raise ArgumentError(f"the requests carry a session_id but no turn: {fix}")
    values = pd.to_numeric(rows["turn"], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(values) & (values >= 0) & (values == np.floor(values)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ArgumentError(
            f"request {plain(rows['request_id'].iloc[i])!r} (session "
            f"{plain(rows['session_id'].iloc[i])!r}) has turn {plain(rows['turn'].iloc[i])!r}, "
            f"not a whole number ≥ 0: {fix}"
        )
    numbers = values.astype(np.int64)
    keys = pd.DataFrame(
        {
            "strategy": rows["strategy"].astype(str).to_numpy(dtype=object),
            "seed": rows["seed"].to_numpy(),
            "session_id": rows["session_id"].to_numpy(dtype=object),
            "turn": numbers,
        }
    )
    twice = keys.duplicated()
    if twice.any():
        i = int(np.flatnonzero(twice.to_numpy())[0])
        raise ArgumentError(
            f"session {plain(keys['session_id'].iloc[i])!r} has turn {numbers[i]} more than "
            f"once (strategy {keys['strategy'].iloc[i]!r}, seed {plain(keys['seed'].iloc[i])!r}): "
            f"{fix}"
        )
    return numbers


def _appearance(values: pd.Series) -> pd.Series:
    """Each value's rank in order of first appearance."""
    ranks = {value: rank for rank, value in enumerate(dict.fromkeys(values))}
    return values.map(ranks)


def _served_tokens(attempts: pd.DataFrame) -> pd.DataFrame:
    """Per request, the prompt tokens of the attempt that served it: all of them, those read
    from the cache and those written to it (NaN when the attempts do not record cache tokens)."""
    served = attempts[attempts["served"].astype(bool)]
    tokens = pd.DataFrame(
        {
            "strategy": served["strategy"].astype(str).to_numpy(dtype=object),
            "seed": served["seed"].to_numpy(),
            "request_id": served["request_id"].astype(object).to_numpy(dtype=object),
            "input_tokens": served["input_tokens"].to_numpy(dtype=float),
            "output_tokens": served["output_tokens"].to_numpy(dtype=float),
        }
    )
    for column in CACHE_COLUMNS:
        values = served[column] if column in served.columns else math.nan
        tokens[column] = pd.Series(values, index=served.index, dtype=float).to_numpy()
    twice = tokens[tokens.duplicated(["strategy", "seed", "request_id"], keep=False)]
    if len(twice):
        row = twice.iloc[0]
        raise ArgumentError(
            f"strategy {row['strategy']!r} seed {row['seed']!r}: request {row['request_id']!r} "
            "has more than one served attempt; the attempts frame is not one run's"
        )
    return tokens


# -- one row per session --------------------------------------------------------------------------


def _fold(
    turns: pd.DataFrame, outcomes: TaskOutcomes | None, prices: dict[str, CachePrices] | None
) -> pd.DataFrame:
    group = turns["_group"]
    same = group.eq(group.shift(1))
    ok = turns["ok"]
    model = turns["served_model"]
    switch = ok & ok.shift(1, fill_value=False) & same & model.ne(model.shift(1))
    # the previous turn's prompt, which the previous model's cache would hold
    prefix = np.minimum(turns["input_tokens"].shift(1), turns["input_tokens"])
    cold = (prefix - turns["cached_input_tokens"]).clip(lower=0).where(switch, 0.0)
    cost = _switch_cost(turns, cold, prices).where(switch, 0.0)
    turns = turns.assign(
        _switch=switch,
        _cold=cold.fillna(0.0),
        _cold_missing=cold.isna(),
        _switch_cost=cost.fillna(0.0),
        _switch_cost_missing=cost.isna(),
        _served_input=turns["input_tokens"].where(ok, 0.0).fillna(0.0),
        _served_input_missing=ok & turns["input_tokens"].isna(),
        _served_output=turns["output_tokens"].where(ok, 0.0).fillna(0.0),
        _served_output_missing=ok & turns["output_tokens"].isna(),
    )
    for column in CACHE_COLUMNS:
        turns[f"_served_{column}"] = turns[column].where(ok, 0.0).fillna(0.0)
        turns[f"_served_{column}_missing"] = ok & turns[column].isna()
    grouped = turns.groupby("_group", sort=True)
    first = grouped.first()
    frame = pd.DataFrame({key: first[key].to_numpy() for key in _KEYS})
    if "parent_session" in turns.columns:
        frame["parent_session"] = first["parent_session"].to_numpy()
        if "parent_turn" in turns.columns:
            spawned = pd.to_numeric(first["parent_turn"], errors="coerce")
            frame["parent_turn"] = spawned.astype("Int64").to_numpy()
    roots = task_roots(frame)
    frame["task_session"] = frame["session_id"].to_numpy(dtype=object)[roots]
    _check_task_columns(turns)
    frame["task_id"] = _first_or_nan(turns, first, "task_id")
    frame["quadrant"] = _first_or_nan(turns, first, "quadrant")
    sent = grouped.size().to_numpy()
    served = grouped["ok"].sum().to_numpy()
    planned = _planned(turns, first, sent, served)
    frame["planned_turns"] = planned
    frame["turns"] = sent
    frame["served_turns"] = served
    frame["completed"] = (planned.to_numpy(dtype=float, na_value=np.nan) == sent) & (served == sent)
    frame["success"] = task_success(turns, frame, roots, outcomes)
    frame["cost_usd"] = grouped["cost_usd"].sum().to_numpy()
    frame["duration_s"] = (grouped["end_s"].max() - grouped["arrival_s"].min()).to_numpy()
    frame["switches"] = grouped["_switch"].sum().to_numpy(dtype=np.int64)
    for name, share in _shares(turns, served).items():
        frame[f"share_{name}"] = share
    frame["input_tokens"] = _sum_known(grouped, "_served_input")
    frame["output_tokens"] = _sum_known(grouped, "_served_output")
    for column in CACHE_COLUMNS:
        frame[column] = _sum_known(grouped, f"_served_{column}")
    cached = frame["cached_input_tokens"].to_numpy(dtype=float)
    known = np.isfinite(cached)
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["cache_hit_rate"] = np.where(
            frame["input_tokens"] > 0, cached / frame["input_tokens"], np.nan
        )
    # switching figures need the cache columns even where a session never switched: without
    # them nothing says what a switch would have cost
    frame["switch_cold_tokens"] = np.where(known, _sum_known(grouped, "_cold"), np.nan)
    writes = np.isfinite(frame["cache_write_tokens"].to_numpy(dtype=float))
    priced = prices is not None
    frame["switch_cost_usd"] = np.where(
        known & writes & priced, _sum_known(grouped, "_switch_cost"), np.nan
    )
    return frame


def _check_task_columns(turns: pd.DataFrame) -> None:
    """One task per session: every turn of a session names the same task, quadrant and length."""
    for column in TASK_KEYS:
        if column not in turns.columns:
            continue
        values = [_shown(v) for v in turns[column].tolist()]
        keys = pd.Series([repr(v) for v in values], index=turns.index)
        counts = keys.groupby(turns["_group"]).nunique()
        if (counts > 1).any():
            at = (turns["_group"] == counts[counts > 1].index[0]).to_numpy()
            session = turns.loc[at, "session_id"].iloc[0]
            seen = list(dict.fromkeys(v for v, here in zip(values, at, strict=True) if here))
            raise ArgumentError(
                f"session {session!r}: its turns disagree on {column} ({seen}); a session is "
                "one task, and every turn should name it"
            )


def _shown(value: Any) -> Any:
    """A metadata value as it was given: None when missing, an int stored as float as the int."""
    if _missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _first_or_nan(turns: pd.DataFrame, first: pd.DataFrame, column: str) -> np.ndarray:
    if column not in turns.columns:
        return np.full(len(first), np.nan, dtype=object)
    return first[column].to_numpy(dtype=object)


def _planned(turns: pd.DataFrame, first: pd.DataFrame, sent: np.ndarray, served: Any) -> pd.Series:
    """Planned turns: the metadata's ``planned_turns``; without it, the turns sent when every one
    was answered (a session stops early only at a failed turn), else unknown."""
    if "planned_turns" in turns.columns:
        given = pd.to_numeric(first["planned_turns"], errors="coerce").to_numpy(dtype=float)
    else:
        given = np.full(len(sent), np.nan)
    inferred = np.where(np.isnan(given) & (served == sent), sent, given)
    short = np.isfinite(inferred) & (inferred < sent)
    if short.any():
        at = int(np.flatnonzero(short)[0])
        raise ArgumentError(
            f"session {first['session_id'].iloc[at]!r} sent {sent[at]} turns but its "
            f"planned_turns is {int(inferred[at])}"
        )
    missing = np.array(None, dtype=object)
    return pd.Series(pd.array(np.where(np.isnan(inferred), missing, inferred), dtype="Int64"))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _switch_cost(
    turns: pd.DataFrame, cold: pd.Series, prices: dict[str, CachePrices] | None
) -> pd.Series:
    """Per turn, the USD the cold prefix cost beyond a cache read (and its write premium)."""
    if prices is None:
        return pd.Series(np.nan, index=turns.index)
    served = turns.loc[turns["ok"], "served_model"].dropna().astype(str).unique()
    unknown = [m for m in served if m not in prices]
    if unknown:
        raise ArgumentError(
            f"prices has no entry for served model {unknown[0]!r}; it names "
            f"{', '.join(map(repr, prices)) or 'none'}"
        )
    models = turns["served_model"].astype(object)
    read_saving = models.map(lambda m: _price(prices, m, "read"))
    write_premium = models.map(lambda m: _price(prices, m, "write"))
    rewritten = np.minimum(cold, turns["cache_write_tokens"])
    return (cold * read_saving + rewritten * write_premium) / 1e6


def _price(prices: dict[str, CachePrices], model: Any, which: str) -> float:
    price = prices.get(str(model)) if isinstance(model, str) else None
    if price is None:
        return math.nan
    if which == "read":
        return price.input - price.cache_read
    return 0.0 if price.cache_write is None else price.cache_write - price.input


def _shares(turns: pd.DataFrame, served: np.ndarray) -> dict[str, np.ndarray]:
    """Per served model, its share of each session's answered turns (NaN: none answered)."""
    ok = turns[turns["ok"] & turns["served_model"].notna()]
    counts = pd.crosstab(ok["_group"], ok["served_model"].astype(str))
    counts = counts.reindex(range(len(served)), fill_value=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            str(name): np.where(served > 0, counts[name].to_numpy() / served, np.nan)
            for name in counts.columns
        }


def _sum_known(grouped: Any, column: str) -> np.ndarray:
    """Per session, the sum of ``column``; NaN when a value it adds up is unknown (flagged in
    ``<column>_missing``)."""
    unknown = grouped[f"{column}_missing"].any().to_numpy(dtype=bool)
    total = grouped[column].sum().to_numpy(dtype=float)
    return np.where(unknown, np.nan, total)


# -- per strategy ---------------------------------------------------------------------------------

_MEANS = (
    "success",
    "completed",
    "cost_usd",
    "turns",
    "switches",
    "switch_cold_tokens",
    "switch_cost_usd",
)


def _by_session(frame: pd.DataFrame) -> pd.DataFrame:
    """Each session's mean over its seeds (unknown values skipped): the units intervals resample."""
    values = frame[list(_MEANS)].astype(float)
    return values.groupby(frame["session_id"].to_numpy(), sort=False).mean()


def _summary_row(frame: pd.DataFrame, models: list[str]) -> dict[str, Any]:
    sessions = _by_session(frame)
    success = sessions["success"].dropna()
    cost = sessions["cost_usd"]
    (success_low, success_high), (cost_low, cost_high) = clustered_mean_cis(
        [success, cost], task_clusters(frame)
    )
    wins = float(success.sum())
    spent = float(cost[success.index].sum())
    if not len(success):
        per_success = math.nan
    elif wins > 0:
        per_success = spent / wins
    else:
        per_success = math.inf if spent > 0 else math.nan
    finished = frame.loc[frame["completed"], "duration_s"].to_numpy(dtype=float)
    input_tokens = frame["input_tokens"].to_numpy(dtype=float)
    cached = frame["cached_input_tokens"].to_numpy(dtype=float)
    total_input = input_tokens.sum()
    row: dict[str, Any] = {
        "strategy": frame["strategy"].iloc[0],
        "sessions": len(sessions),
        "seeds": int(frame["seed"].nunique()),
        "success_rate": float(success.mean()) if len(success) else math.nan,
        "success_ci_low": success_low,
        "success_ci_high": success_high,
        "completion_rate": float(sessions["completed"].mean()),
        "cost_per_session_usd": float(cost.mean()),
        "cost_per_session_ci_low": cost_low,
        "cost_per_session_ci_high": cost_high,
        "cost_per_success_usd": per_success,
        "mean_turns": float(sessions["turns"].mean()),
        "switches_per_session": float(sessions["switches"].mean()),
        "cache_hit_rate": float(cached.sum() / total_input)
        if total_input > 0 and not np.isnan(cached).any()
        else math.nan,
        "switch_cold_tokens_per_session": _mean(sessions["switch_cold_tokens"]),
        "switch_cost_per_session_usd": _mean(sessions["switch_cost_usd"]),
        "time_to_finish_p50_s": _percentile(finished, 0.5),
        "time_to_finish_p90_s": _percentile(finished, 0.9),
    }
    served = frame["served_turns"].to_numpy(dtype=float)
    for column in models:
        on_model = (frame[column].fillna(0.0).to_numpy(dtype=float) * served).sum()
        row[column] = float(on_model / served.sum()) if served.sum() > 0 else math.nan
    return row


def _mean(values: pd.Series) -> float:
    known = values.dropna()
    return float(known.mean()) if len(known) else math.nan


def _percentile(values: np.ndarray, q: float) -> float:
    values = values[np.isfinite(values)]
    return float(np.quantile(values, q)) if len(values) else math.nan


def _paired_row(frame: pd.DataFrame, name: str, baseline: str) -> dict[str, Any]:
    """Strategy − baseline on the same (seed, session), each session averaged over its seeds."""
    keys = ["seed", "session_id"]
    columns = ["success", "cost_usd"]
    mine = frame.loc[frame["strategy"] == name, keys + columns]
    base = frame.loc[frame["strategy"] == baseline, keys + columns]
    joined = mine.merge(base, on=keys, suffixes=("", "_base"))
    diffs = pd.DataFrame({c: joined[c] - joined[f"{c}_base"] for c in columns})
    by_session = diffs.groupby(joined["session_id"].to_numpy(), sort=False).mean()
    row: dict[str, Any] = {"strategy": name}
    for column, label in (("success", "success_rate"), ("cost_usd", "cost_per_session_usd")):
        known = by_session[column].dropna()
        values = known.to_numpy(dtype=float)
        ((low, high),) = clustered_mean_cis([known], task_clusters(frame))
        row[f"d_{label}"] = float(values.mean()) if len(values) else math.nan
        row[f"d_{label}_ci_low"] = low
        row[f"d_{label}_ci_high"] = high
    row["paired_sessions"] = len(by_session)
    return row
