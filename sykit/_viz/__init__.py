"""Plots of runs and comparisons: what each attempt did, and what each strategy costs and earns.

Matplotlib loads only when a plot is drawn. Like seaborn, every plot draws on the Axes it is given
(or on a new figure) and returns it. Colours mean the same thing everywhere: status and cause
colours are fixed, and a strategy keeps its colour in every plot of a comparison because colours
follow the comparison's strategy order (:func:`strategy_colors`).

    res.plot.timeline()              # the request with the most attempts
    cmp.plot.cost_quality()          # scatter + Pareto frontier
    cmp.plot.latency_cdf()           # per strategy, log x, p50/p99 marked
    cmp.plot.outcomes()              # attempt outcomes and wasted spend per strategy

One module per job: ``style`` (fixed colours, strategy colours, axis and legend helpers),
``timeline``, ``latency_cdf``, ``cost_quality``, ``outcomes`` (attempt outcomes and wasted spend),
``load`` (offered load next to latency, per bin of arrival time) and ``accessors`` (``res.plot``,
``cmp.plot``). This file only re-exports their names, each module imported when first used.

May import: :mod:`sykit._base`, :mod:`sykit._results`, :mod:`sykit._world`.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sykit._viz.accessors import ComparisonPlots as ComparisonPlots
    from sykit._viz.accessors import ResultPlots as ResultPlots
    from sykit._viz.cost_quality import plot_cost_quality as plot_cost_quality
    from sykit._viz.cost_quality import plot_cost_quality_curve as plot_cost_quality_curve
    from sykit._viz.latency_cdf import plot_latency_cdf as plot_latency_cdf
    from sykit._viz.load import offered_load as offered_load
    from sykit._viz.load import plot_load as plot_load
    from sykit._viz.outcomes import outcome_categories as outcome_categories
    from sykit._viz.outcomes import plot_outcomes as plot_outcomes
    from sykit._viz.style import CAUSE_HATCHES as CAUSE_HATCHES
    from sykit._viz.style import CAUSE_LABELS as CAUSE_LABELS
    from sykit._viz.style import EDGE_COLOR as EDGE_COLOR
    from sykit._viz.style import FALLBACK_COLORS as FALLBACK_COLORS
    from sykit._viz.style import RACE_COLOR as RACE_COLOR
    from sykit._viz.style import RETRIED_COLOR as RETRIED_COLOR
    from sykit._viz.style import STATUS_COLORS as STATUS_COLORS
    from sykit._viz.style import UNUSED_COLOR as UNUSED_COLOR
    from sykit._viz.style import strategy_colors as strategy_colors
    from sykit._viz.timeline import plot_timeline as plot_timeline

#: Where each name lives: a module is imported when one of its names is first used, so that
#: ``sy.traffic`` (which needs ``load``) does not load every plot with ``import sykit``.
_HOMES = {
    "ComparisonPlots": "sykit._viz.accessors",
    "ResultPlots": "sykit._viz.accessors",
    "plot_cost_quality": "sykit._viz.cost_quality",
    "plot_cost_quality_curve": "sykit._viz.cost_quality",
    "plot_latency_cdf": "sykit._viz.latency_cdf",
    "offered_load": "sykit._viz.load",
    "plot_load": "sykit._viz.load",
    "outcome_categories": "sykit._viz.outcomes",
    "plot_outcomes": "sykit._viz.outcomes",
    "CAUSE_HATCHES": "sykit._viz.style",
    "CAUSE_LABELS": "sykit._viz.style",
    "EDGE_COLOR": "sykit._viz.style",
    "FALLBACK_COLORS": "sykit._viz.style",
    "RACE_COLOR": "sykit._viz.style",
    "RETRIED_COLOR": "sykit._viz.style",
    "STATUS_COLORS": "sykit._viz.style",
    "UNUSED_COLOR": "sykit._viz.style",
    "strategy_colors": "sykit._viz.style",
    "plot_timeline": "sykit._viz.timeline",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sykit._viz' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "CAUSE_HATCHES",
    "FALLBACK_COLORS",
    "STATUS_COLORS",
    "ComparisonPlots",
    "ResultPlots",
    "offered_load",
    "outcome_categories",
    "plot_cost_quality",
    "plot_cost_quality_curve",
    "plot_latency_cdf",
    "plot_load",
    "plot_outcomes",
    "plot_timeline",
    "strategy_colors",
]
