"""What the configuration's value objects share: checks of their fields, each naming the field in
its error, and ``.replace()``, a checked copy with some fields changed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.dists import check_number

__all__ = [
    "Replaceable",
    "check_flag",
    "http_status",
    "integer",
    "probability",
    "unavailable_status",
]


def probability(value: Any, name: str) -> float:
    return check_number(value, name, low=0.0, high=1.0)


def integer(value: Any, name: str, *, low: int = 0, high: int | None = None) -> int:
    """``value`` if it is an int in range: a float (even ``3.0``), a bool or a string is refused."""
    return check_int(value, name, low=low, high=high)


def check_flag(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r:.40}")


def http_status(value: Any, name: str, allowed: str, ok: Callable[[int], bool]) -> int:
    """An int HTTP status accepted by ``ok``; ``"503"`` or ``503.0`` is a type error, not a 503."""
    value = check_int(value, name, expected=f"an int HTTP status ({allowed})")
    if not ok(value):
        raise ArgumentError(f"{name} must be an int HTTP status ({allowed}), got {value}")
    return value


def unavailable_status(status: int) -> bool:
    return 500 <= status <= 599 or status in (403, 408)


class Replaceable:
    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (checked like the original)."""
        return replace(self, **changes)
