"""Grids of runs: strategies × parameters × host variants × traffic × seeds, on any executor."""

from .plan import grid
from .result import Grid

__all__ = ["Grid", "grid"]
