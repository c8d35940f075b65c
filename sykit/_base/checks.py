"""Checks of numeric arguments: the one place that says what a number, a count or a probability is.

    check_real(x, "timeout_s", low=0, low_open=True)   # a finite float > 0
    check_real(x, "until_s", low=0, allow_inf=True)    # a float ≥ 0, inf allowed
    check_int(n, "n", low=1)                            # an int ≥ 1 (numpy integers too)
    check_probability(p, "share")                       # a float in [0, 1]
    is_count(reported)                                  # True for an int ≥ 0: no error raised

Bools are refused everywhere (``True`` is an ``int`` to Python, never a count or a price to sykit)
and so are strings (even though ``float("1")`` works). NaN is always refused, infinity unless
``allow_inf``. A value of the wrong type raises :class:`ArgumentTypeError` and a value out of range
:class:`ArgumentError`; both messages name the parameter, what it must be and the value got, as
``"timeout_s must be > 0, got -1"``. ``expected=`` replaces the generated "what it must be" where a
caller has better words (``"between 0 and 1"``); a type error says the kind of value wanted
(``"an int"``, or ``kind=``), with ``expected`` where that starts with the kind or is a range.
``type_error=ArgumentError`` keeps a wrong type a ``ValueError`` where that is the documented
behaviour.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, TypeGuard, cast

import numpy as np

from sykit._base.errors import ArgumentError, ArgumentTypeError, SykitError

__all__ = ["check_int", "check_probability", "check_real", "is_count", "plain"]


#: How an ``expected=`` text that is a range, not a kind of its own, begins.
_RANGE_WORDS = ("<", ">", "≤", "≥", "=", "in ", "between ", "from ")


def _wrong_type(name: str, kind: str, expected: str | None, value: Any) -> str:
    """What ``value`` must be: ``expected`` where it starts with ``kind`` ("an int ≥ 1"), ``kind``
    qualified by it where it is a range ("a number in [0, 1]", "an int ≥ 1"), else ``kind`` ("a
    number" where ``expected`` is "a finite number (0.5: random)" or "numbers in [0, 1]")."""
    if expected and expected.startswith(kind):
        kind = expected
    elif expected and expected.startswith(_RANGE_WORDS):
        kind = f"{kind} {expected}"
    return f"{name} must be {kind}, got {type(value).__name__} {value!r:.40}"


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool) -> list[str]:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '≥'} {low:g}")
    if high is not None and high != math.inf:
        parts.append(f"{'<' if high_open else '≤'} {high:g}")
    return parts


def _outside(
    number: float, low: float | None, high: float | None, low_open: bool, high_open: bool
) -> bool:
    if low is not None and (number < low or (low_open and number == low)):
        return True
    return high is not None and (number > high or (high_open and number == high))


def check_real(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
    expected: str | None = None,
    type_error: type[SykitError] = ArgumentTypeError,
) -> float:
    """``value`` as a float if it is a real number (not a bool) within the bounds, else an error
    naming ``name``. ``low``/``high`` are inclusive unless ``low_open``/``high_open``; ``None`` is
    no bound. NaN is refused, and so is ±inf unless ``allow_inf``."""
    if (
        type(value) is float
        and -math.inf < value < math.inf
        and not _outside(value, low, high, low_open, high_open)
    ):
        return value  # the common case, without the ABC check below
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise type_error(_wrong_type(name, "a number", expected, value))
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf if cast(int, value) > 0 else -math.inf
    finite = math.isfinite(number) or (allow_inf and not math.isnan(number))
    if not finite or _outside(number, low, high, low_open, high_open):
        if expected is None:
            parts = _bounds(low, high, low_open, high_open)
            if not parts:  # no bound: only NaN or inf can fail
                expected = "a number, not NaN" if allow_inf else "a finite number"
            else:
                if not finite:
                    parts.append("not NaN" if allow_inf else "finite")
                expected = " and ".join(parts)
        raise ArgumentError(f"{name} must be {expected}, got {value!r}")
    return number


def check_int(
    value: Any,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    expected: str | None = None,
    type_error: type[SykitError] = ArgumentTypeError,
    kind: str = "an int",
) -> int:
    """``value`` as an int if it is an integer (a Python or numpy integer, not a bool and not a
    float such as ``3.0``) with ``low ≤ value ≤ high``, else an error naming ``name``; ``None`` is
    no bound. ``kind`` is what a type error says the value must be ("an HTTP status")."""
    if type(value) is int and not _outside(value, low, high, False, False):
        return value  # the common case, without the ABC check below
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise type_error(_wrong_type(name, kind, expected, value))
    number = int(value)
    if _outside(number, low, high, False, False):
        if expected is None:
            if low is not None and high is not None:
                expected = f"an int from {low} to {high}"
            else:
                expected = "an int " + " and ".join(_bounds(low, high, False, False))
        raise ArgumentError(f"{name} must be {expected}, got {value!r}")
    return number


def check_probability(
    value: Any,
    name: str,
    *,
    expected: str | None = None,
    type_error: type[SykitError] = ArgumentTypeError,
) -> float:
    """``value`` as a float if it is a number in [0, 1], else an error naming ``name``."""
    return check_real(
        value, name, low=0.0, high=1.0, expected=expected or "in [0, 1]", type_error=type_error
    )


def is_count(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an int ≥ 0 (not a bool): the test for a count read from data, such as
    a provider's token counts, where a bad value is replaced rather than refused."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds, for messages: they quote ``-1``, not
    ``np.int64(-1)``."""
    return value.item() if isinstance(value, np.generic) else value
