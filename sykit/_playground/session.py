"""A playground's runs without the widgets: the same requests, host and seed, re-run as knobs change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._hosts.sim import SimHost
from .._results import Comparison
from .._runner import compare
from .knobs import Knobs, apply_knobs
from .lineup import StrategySpec, build_lineup

__all__ = ["Session"]


class Session:
    """Runs the selected strategies of a line-up with given knobs. After each successful run:
    ``comparison``, ``summary``, ``host`` (the host the knobs made) and ``runs`` (how many)."""

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
        self.runs = 0

    def run(self, knobs: Knobs, selected: Sequence[str]) -> Comparison:
        """Run ``selected`` with ``knobs``; on an error nothing changes and the error is raised."""
        host = apply_knobs(self.base_host, knobs)
        lineup = build_lineup(self.lineup, knobs, selected)
        comparison = compare(
            lineup,
            self.requests,
            host=host,
            seeds=[self.seed],
            concurrency=knobs.concurrency,
            progress=False,
        )
        summary = comparison.summary()
        self.host, self.comparison, self.summary = host, comparison, summary
        self.runs += 1
        return comparison
