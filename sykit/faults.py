"""The former home of the fault presets and the failoverbench catalogue, kept so code written
against ``sy.faults`` still runs. New code: ``sy.Faults.realistic()``, ``sy.profiles.with_faults()``
and ``sy.failoverbench``."""

from __future__ import annotations

from typing import Any

from sykit._world.config import Faults
from sykit.failoverbench import Scenario, ScenarioOutcome, catalogue, run_catalogue
from sykit.profiles import with_faults

__all__ = ["Scenario", "ScenarioOutcome", "catalogue", "realistic", "run_catalogue", "with_faults"]


def realistic(**changes: Any) -> Faults:
    """``sy.Faults.realistic(**changes)``."""
    return Faults.realistic(**changes)
