"""Many runs: ``compare`` and ``acompare`` (:mod:`.compare`), sweeps of one parametric strategy
(:mod:`.sweep`) and grids of runs, strategies × parameters × host variants × traffic × seeds, on
any executor.

May import: :mod:`sykit._base`, :mod:`sykit._results`, :mod:`sykit._world`, :mod:`sykit._hosts`,
:mod:`sykit._viz`, :mod:`sykit._run`, :mod:`sykit.strategies`.
"""

from sykit._grid.plan import grid
from sykit._grid.result import Grid

__all__ = ["Grid", "grid"]
