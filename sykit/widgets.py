"""A playground of knobs: change fault rates, latency, concurrency, hedge delay, judge error or the
strategies compared, and the comparison re-runs (instantly, in virtual time) and redraws.

    pg = sy.widgets.playground(requests, host)     # in Jupyter: controls, summary table, a plot
    pg.controls["concurrency"].value = 8           # re-runs; pg.summary is the new table

Strategies that depend on a knob are passed as *factories* that take knob values by name, so they
are rebuilt on every change::

    sy.widgets.playground(requests, host, {
        "small only": sy.strategies.single("small"),                          # an algorithm
        "hedge large": lambda hedge_after_s: sy.strategies.hedge("large", after=hedge_after_s),
    })

The knob logic (:class:`Knobs`, :func:`apply_knobs`, :func:`build_lineup`) is plain Python; only
:func:`playground` needs ipywidgets, and imports it when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sykit._playground.figures import PLOTS
from sykit._playground.knobs import KNOBS, Knobs, apply_knobs
from sykit._playground.lineup import build_lineup, default_strategies, hedge_delay
from sykit._playground.scaling import scale_distribution
from sykit._playground.ui import playground

if TYPE_CHECKING:
    from sykit._playground.ui import Playground

__all__ = [
    "KNOBS",
    "PLOTS",
    "Knobs",
    "Playground",
    "apply_knobs",
    "build_lineup",
    "default_strategies",
    "hedge_delay",
    "playground",
    "scale_distribution",
]

_OWN = ("Knobs", "apply_knobs", "build_lineup", "default_strategies", "hedge_delay", "playground")
for _name in (*_OWN, "scale_distribution"):
    globals()[_name].__module__ = __name__
del _name


def __getattr__(name: str) -> Any:
    # ``Playground`` subclasses ipywidgets.VBox: built on first use so ``import sykit`` stays light.
    if name == "Playground":
        from sykit._playground.ui import playground_class

        return playground_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
