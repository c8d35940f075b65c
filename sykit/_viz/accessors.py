"""``res.plot`` and ``cmp.plot``: every plot of a Result or a Comparison, one call away.

The accessors pass a run's frames to the plot functions and fix the strategy colours from the
comparison's strategy order, so a strategy looks the same in each of its plots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sykit._base.errors import ArgumentError
from sykit._viz.cost_quality import plot_cost_quality
from sykit._viz.latency_cdf import plot_latency_cdf
from sykit._viz.load import plot_load
from sykit._viz.outcomes import plot_outcomes
from sykit._viz.style import chosen_strategies, strategy_colors
from sykit._viz.timeline import plot_timeline

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from sykit._results.result import Comparison, Result


class ResultPlots:
    """``res.plot``: plots of one run."""

    def __init__(self, result: Result) -> None:
        self._result = result

    @property
    def colors(self) -> dict[str, str]:
        return strategy_colors([self._result.strategy])

    def timeline(self, request_id: Any = None, ax: Axes | None = None) -> Axes:
        """One request's attempts on the run clock (default: the request with the most attempts)."""
        r = self._result
        return plot_timeline(r.attempts, r.requests, request_id, strategy=r.strategy, ax=ax)

    def latency_cdf(
        self, ax: Axes | None = None, *, log: bool = True, survival: bool = False
    ) -> Axes:
        """The latency CDF over all requests (a failed one never arrives, so the curve levels off at
        the success rate, given in the legend), p50 and p99 marked; ``survival=True``: 1 − CDF
        on a log axis, for the tail."""
        return plot_latency_cdf(
            self._result.requests,
            strategies=[self._result.strategy],
            colors=self.colors,
            log=log,
            survival=survival,
            ax=ax,
        )

    def outcomes(self, ax: Any = None, *, wasted: bool = True) -> Figure | SubFigure:
        """Attempts per request by outcome, and wasted spend by cause; returns the Figure."""
        r = self._result
        return plot_outcomes(
            r.attempts,
            r.requests,
            strategies=[r.strategy],
            colors=self.colors,
            ax=ax,
            wasted=wasted,
        )

    def load(
        self, bin_s: float = 10.0, *, queue: bool = True, log: bool = False, ax: Any = None
    ) -> Figure | SubFigure:
        """Offered load per ``bin_s`` seconds above, latency p50/p99 of the requests arriving in
        each bin below (:func:`sykit.traffic.plot_load`); returns the Figure."""
        return plot_load(self._result, bin_s, queue=queue, log=log, ax=ax)


class ComparisonPlots:
    """``cmp.plot``: plots of a comparison, one colour per strategy throughout (``colors`` fixes
    them, e.g. from a larger line-up so a strategy keeps its colour when others are left out;
    ``summary``, the comparison's summary when the caller has it already, saves computing it)."""

    def __init__(
        self,
        comparison: Comparison,
        colors: Mapping[str, str] | None = None,
        summary: pd.DataFrame | None = None,
    ) -> None:
        self._comparison = comparison
        self._colors = dict(colors) if colors is not None else None
        self._summary = summary

    @property
    def colors(self) -> dict[str, str]:
        """Strategy → colour, as every plot of this comparison uses them."""
        if self._colors is not None:
            return dict(self._colors)
        return strategy_colors(self._comparison.strategies)

    def _subset(self, strategies: Sequence[str] | None) -> list[str]:
        """The strategies to draw: all, or the named ones (colours stay the comparison's)."""
        return chosen_strategies(list(self._comparison.strategies), strategies, "this comparison")

    def cost_quality(
        self,
        ax: Axes | None = None,
        *,
        strategies: Sequence[str] | None = None,
        log_cost: bool | None = None,
        direct_labels: bool = True,
    ) -> Axes:
        """Cost per request vs mean quality per strategy with 95 % CIs, and the Pareto frontier of
        the realizable ones (strategies that read the truth are drawn as bounds); each point is
        labelled with its name. ``strategies`` draws a subset in the comparison's colours."""
        summary = self._summary if self._summary is not None else self._comparison.summary()
        return plot_cost_quality(
            summary,
            strategies=self._subset(strategies),
            colors=self.colors,
            log_cost=log_cost,
            direct_labels=direct_labels,
            ax=ax,
        )

    def latency_cdf(
        self,
        ax: Axes | None = None,
        *,
        strategies: Sequence[str] | None = None,
        log: bool = True,
        survival: bool = False,
    ) -> Axes:
        """Latency CDFs over all requests of each strategy, seeds pooled (failed = never served),
        p50 and p99 marked; the legend gives each success rate. ``survival=True`` draws the
        tail instead: the share still waiting, 1 − CDF, on a log axis down to p99.9."""
        return plot_latency_cdf(
            self._comparison.requests,
            strategies=self._subset(strategies),
            colors=self.colors,
            log=log,
            survival=survival,
            ax=ax,
        )

    def outcomes(
        self, ax: Any = None, *, strategies: Sequence[str] | None = None, wasted: bool = True
    ) -> Figure | SubFigure:
        """Attempts per request by outcome and wasted spend, per strategy; returns the Figure."""
        c = self._comparison
        return plot_outcomes(
            c.attempts,
            c.requests,
            strategies=self._subset(strategies),
            colors=self.colors,
            ax=ax,
            wasted=wasted,
        )

    def load(
        self,
        bin_s: float = 10.0,
        *,
        strategies: Sequence[str] | None = None,
        queue: bool = True,
        log: bool = False,
        ax: Any = None,
    ) -> Figure | SubFigure:
        """Offered load per ``bin_s`` seconds above, each strategy's latency p50/p99 of the
        requests arriving in each bin below (:func:`sykit.traffic.plot_load`); returns the
        Figure."""
        return plot_load(
            self._comparison,
            bin_s,
            strategies=self._subset(strategies),
            colors=self.colors,
            queue=queue,
            log=log,
            ax=ax,
        )

    def timeline(
        self,
        strategy: str,
        request_id: Any = None,
        *,
        seed: int | None = None,
        ax: Axes | None = None,
    ) -> Axes:
        """One request's attempts under one strategy (and seed; default: the first run)."""
        c = self._comparison
        if strategy not in c.strategies:
            raise ArgumentError(f"strategy {strategy!r} is not in this comparison: {c.strategies}")
        runs = [r for r in c.results if r.strategy == strategy]
        if seed is not None:
            runs = [r for r in runs if r.seed == seed]
            if not runs:
                seeds = sorted({r.seed for r in c.results})
                raise ArgumentError(f"seed {seed!r} is not in this comparison: {seeds}")
        result = runs[0]
        return plot_timeline(result.attempts, result.requests, request_id, strategy=strategy, ax=ax)
