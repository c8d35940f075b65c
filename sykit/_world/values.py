"""What the configuration's value objects share: checks of their fields, each naming the field in
its error, and ``.replace()``, a checked copy with some fields changed."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError, SykitError
from sykit._world.dists import check_number

__all__ = [
    "Replaceable",
    "check_flag",
    "http_status",
    "integer",
    "probability",
    "spelled",
    "unavailable_status",
]

_T = TypeVar("_T")


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


def spelled(cls: type[_T]) -> type[_T]:
    """``cls`` (a dataclass or class) whose constructor refuses a misspelt keyword with an
    :class:`ArgumentTypeError` (a ``TypeError``, as before) naming the closest fields:
    ``ModelProfile(price_input=0.1)`` → "did you mean price_in?". Apply it above ``@dataclass``.
    Nothing is checked until the constructor itself fails; a valid call costs the wrapper's call
    (about 0.5 µs: not for ``Request``, built by the hundred thousand), and a warning with a fixed
    ``stacklevel`` raised inside would point at the wrapper."""
    init = cls.__init__
    names = [p for p in inspect.signature(init).parameters if p != "self"]

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError as error:
            if isinstance(error, SykitError):
                raise
            unknown = [k for k in kwargs if k not in names]
            if not unknown:
                raise
            message = _unknown_keywords(cls.__name__, unknown, names)
        else:
            return
        raise ArgumentTypeError(message)

    cls.__init__ = __init__  # type: ignore[method-assign]
    return cls


def _unknown_keywords(owner: str, unknown: list[str], names: list[str]) -> str:
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
        if not close:  # a prefix or a part of a field: price → price_in, price_out
            close = [n for n in names if key.lower() in n or (len(n) >= 3 and n in key.lower())][:3]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        parts.append(f"{owner}() got an unexpected keyword argument {key!r}{hint}")
    return "; ".join(parts) + f" ({owner}'s fields: {', '.join(names)})"
