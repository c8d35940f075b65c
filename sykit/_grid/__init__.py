"""Grids of runs: strategies × parameters × host variants × traffic × seeds, on any executor."""

from sykit._grid.plan import grid
from sykit._grid.result import Grid

__all__ = ["Grid", "grid"]
