"""How a simulated target fails: the pieces of fault configuration beside ``sy.Faults``.

``sy.Faults`` (at the top level) says how often a target fails and how; the pieces it and
``sy.ModelProfile`` take live here:

    sy.Faults(errors=[sy.faults.ErrorFault(401, 0.01), sy.faults.ErrorFault.capability(0.05)])
    sy.Faults(flapping=sy.faults.Flapping(up_s=90, down_s=30))      # down 30 s in every 2 min
    sy.ModelProfile(rate_limit=sy.faults.RateLimit(requests_per_min=600))  # a provider quota

A realistic mix of faults is ``sy.Faults.realistic()``; ``sy.profiles.with_faults()`` gives every
profile the same faults; ``sy.failoverbench`` runs a catalogue of fault scenarios against a
strategy. The presets' and the catalogue's former spellings here
(``sy.faults.realistic()``, ``with_faults``, ``catalogue``, ``run_catalogue``, ``Scenario``,
``ScenarioOutcome``) keep working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sykit._world.faults import ErrorFault, Faults, Flapping, RateLimit
from sykit.profiles import with_faults

if TYPE_CHECKING:
    from sykit.failoverbench import Scenario, ScenarioOutcome, catalogue, run_catalogue

#: The catalogue's names, from ``sy.failoverbench`` (its HTTP harness), loaded when first used.
_CATALOGUE = frozenset({"Scenario", "ScenarioOutcome", "catalogue", "run_catalogue"})

__all__ = [
    "ErrorFault",
    "Flapping",
    "RateLimit",
    "Scenario",
    "ScenarioOutcome",
    "catalogue",
    "realistic",
    "run_catalogue",
    "with_faults",
]


def __getattr__(name: str) -> Any:
    if name in _CATALOGUE:
        from sykit import failoverbench

        return getattr(failoverbench, name)
    raise AttributeError(f"module 'sykit.faults' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The catalogue's names too, though loaded when first used: tab completion offers them."""
    return sorted(set(globals()) | _CATALOGUE)


def realistic(**changes: Any) -> Faults:
    """``sy.Faults.realistic(**changes)``."""
    return Faults.realistic(**changes)


# Reprs, pickles and tracebacks say sykit.faults.ErrorFault.
for _obj in (ErrorFault, Flapping, RateLimit):
    _obj.__module__ = __name__
del _obj
