"""The algorithm type, declared once: ``async def algorithm(request, driver) -> Outcome``.

Only ``typing`` at run time (the classes are named as forward references), so any module can import
it without importing the engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from ._driver import Driver
    from ._models import Outcome, Request

__all__ = ["Algorithm", "AlgorithmLike"]

#: A routing algorithm: ``async def algorithm(request, driver) -> Outcome``.
Algorithm: TypeAlias = Callable[["Request", "Driver"], Awaitable["Outcome"]]

#: What ``run`` / ``compare`` accept: an :data:`Algorithm`, or an object with ``route`` (and
#: ``name``), checked by ``sykit._inputs.as_algorithm``.
AlgorithmLike: TypeAlias = Algorithm | Any
