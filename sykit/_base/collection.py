"""The garbage collector paused while a run builds or plans many objects that hold no cycles.

Python's cyclic collector runs after every 700 new container objects and, now and then, walks
every live object: building a run's 100,000 requests or records with it on spends most of the
time in collections that find nothing (a run's objects make no reference cycles of their own).
The runner collects the young generations now and then itself (see :mod:`sykit._run.plan`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collection_paused"]


@contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (as it was when the block ends)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
