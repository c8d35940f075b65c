"""The algorithm type, declared once: ``async def algorithm(request, driver) -> Outcome``.

Only ``typing`` at run time (the classes are named as forward references), so any module can import
it without importing the engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

if TYPE_CHECKING:
    from sykit._run.driver import Driver
    from sykit._world.models import Outcome, Request

__all__ = ["Algorithm", "AlgorithmLike"]

#: A routing algorithm: ``async def algorithm(request, driver) -> Outcome``.
Algorithm: TypeAlias = Callable[["Request", "Driver"], Awaitable["Outcome"]]

#: What ``run`` / ``compare`` accept: an :data:`Algorithm`, or an object with ``route`` (and
#: ``name``), checked by ``sykit._run.inputs.as_algorithm``.
AlgorithmLike: TypeAlias = Algorithm | Any


_In = TypeVar("_In", contravariant=True)
_Out = TypeVar("_Out", covariant=True)

if TYPE_CHECKING:

    class Converted(Generic[_In, _Out]):
        """A frozen dataclass field that ``__post_init__`` converts, given (to ``__init__`` and
        ``replace``) as ``_In`` and read back as ``_Out``. For type checkers only: such a field is
        declared twice, ``if TYPE_CHECKING:`` as ``Converted[...] = converted(default)``, else as
        the plain field it is at run time (whose annotation the signature and the docs show)."""

        @overload
        def __get__(self, obj: None, owner: type[Any]) -> Converted[_In, _Out]: ...
        @overload
        def __get__(self, obj: object, owner: type[Any]) -> _Out: ...
        def __get__(self, obj: object, owner: type[Any]) -> Converted[_In, _Out] | _Out: ...
        def __set__(self, obj: object, value: _In) -> None: ...

    def converted(default: object) -> Any:
        """The default of a :class:`Converted` field, as written at run time."""
