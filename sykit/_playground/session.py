"""A playground's runs without the widgets: the same requests, host and seed, re-run as knobs change."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from sykit._grid.compare import compare
from sykit._hosts.sim import SimHost
from sykit._playground.knobs import KNOBS, Knobs, apply_knobs
from sykit._playground.lineup import StrategySpec, _factory_knobs, _is_algorithm, build_lineup
from sykit._results.result import Comparison, Result

__all__ = ["CHANGE_COLUMNS", "HOST_KNOBS", "Session", "difference"]

#: The knobs that change the host (and so every strategy's run), besides ``concurrency``.
HOST_KNOBS = ("fault_scale", "rate_limit", "unavailable", "timeout", "latency_scale")
#: The summary columns whose change from the previous run the playground shows.
CHANGE_COLUMNS = (
    "success_rate",
    "mean_quality",
    "cost_per_request_usd",
    "latency_p50_s",
    "latency_p99_s",
    "attempts_per_request",
    "wasted_share",
)


def difference(summary: pd.DataFrame, previous: pd.DataFrame | None) -> pd.DataFrame | None:
    """``summary − previous`` for the :data:`CHANGE_COLUMNS` of the strategies in both, one row
    per strategy of ``summary`` (NaN where a strategy was not in the previous run)."""
    if previous is None:
        return None
    columns = [c for c in CHANGE_COLUMNS if c in summary.columns and c in previous.columns]
    now = summary.set_index("strategy")[columns]
    before = previous.set_index("strategy")[columns].reindex(now.index)
    return (now - before).reset_index()


class Session:
    """Runs the selected strategies of a line-up with given knobs. After each successful run:
    ``comparison``, ``summary``, ``change`` (the summary's difference from the previous run, None
    after the first), ``host`` (the host the knobs made) and ``runs`` (how many).

    A strategy's run is reused while none of the knobs it depends on changed (the host's, the
    concurrency, and a factory's own parameters): moving the hedge delay re-runs only the
    strategies built from it. Runs are independent (common random numbers), so a reused run is
    the one a full re-run would give."""

    #: How many strategy runs are kept for reuse.
    KEEP = 64

    def __init__(
        self, requests: list[Any], host: SimHost, lineup: dict[str, StrategySpec], seed: int
    ) -> None:
        self.requests = requests
        self.base_host = host
        self.lineup = lineup
        self.seed = seed
        self.host = host
        self.comparison: Comparison | None = None
        self.summary: pd.DataFrame | None = None
        self.change: pd.DataFrame | None = None
        self.runs = 0
        self.reused = 0
        self._kept: OrderedDict[Hashable, Result] = OrderedDict()
        self._hosts: dict[Hashable, SimHost] = {}

    def _key(self, name: str, knobs: Knobs) -> Hashable:
        values = asdict(knobs)
        spec = self.lineup[name]
        taken: tuple[str, ...] = ()
        if not _is_algorithm(spec):
            taken = _factory_knobs(name, spec) or KNOBS
        depends = {*HOST_KNOBS, "judge_error_rate", "concurrency", *taken}
        return (name, tuple((k, values[k]) for k in KNOBS if k in depends))

    def _host(self, knobs: Knobs) -> SimHost:
        key = tuple(getattr(knobs, k) for k in (*HOST_KNOBS, "judge_error_rate"))
        if key not in self._hosts:
            self._hosts = {key: apply_knobs(self.base_host, knobs)}
        return self._hosts[key]

    def run(self, knobs: Knobs, selected: Sequence[str]) -> Comparison:
        """Run ``selected`` with ``knobs``; on an error nothing changes and the error is raised."""
        host = self._host(knobs)
        keys = {name: self._key(name, knobs) for name in selected}
        missing = [name for name in selected if keys[name] not in self._kept]
        fresh: dict[str, Result] = {}
        if missing:
            lineup = build_lineup(self.lineup, knobs, missing)
            ran = compare(
                lineup,
                self.requests,
                host=host,
                seeds=[self.seed],
                concurrency=knobs.concurrency,
                progress=False,
            )
            fresh = {result.strategy: result for result in ran.results}
        results = [fresh.get(name) or self._kept[keys[name]] for name in selected]
        comparison = Comparison(results)
        summary = comparison.summary()
        for name, result in zip(selected, results, strict=True):
            self._kept[keys[name]] = result
            self._kept.move_to_end(keys[name])
        while len(self._kept) > max(self.KEEP, len(selected)):
            self._kept.popitem(last=False)
        self.change = difference(summary, self.summary)
        self.host, self.comparison, self.summary = host, comparison, summary
        self.reused += len(selected) - len(missing)
        self.runs += 1
        return comparison
