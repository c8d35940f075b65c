"""The numeric argument checks (sykit._base.checks): types, bounds, NaN, inf and bool."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from sykit import ArgumentError, ArgumentTypeError
from sykit._base.checks import check_int, check_probability, check_real, is_count
from sykit._world.dists import check_number

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    ("value", "kwargs", "want"),
    [
        (3, {}, 3.0),
        (2.5, {}, 2.5),
        (-7, {}, -7.0),
        (np.float64(0.25), {}, 0.25),
        (np.int32(4), {}, 4.0),
        (Fraction(1, 4), {}, 0.25),
        (0, {"low": 0}, 0.0),
        (1, {"high": 1}, 1.0),
        (0.5, {"low": 0, "high": 1, "low_open": True, "high_open": True}, 0.5),
        (INF, {"low": 0, "allow_inf": True}, INF),
        (-INF, {"allow_inf": True}, -INF),
    ],
)
def test_real_accepts(value, kwargs, want):
    got = check_real(value, "x", **kwargs)
    assert got == want and type(got) is float


@pytest.mark.parametrize("value", [True, False, "1", None, [1], 1j, np.bool_(True)])
def test_real_refuses_types(value):
    with pytest.raises(ArgumentTypeError, match=r"^x must be a number, got "):
        check_real(value, "x")


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (NAN, {}, "x must be a finite number, got nan"),
        (INF, {}, "x must be a finite number, got inf"),
        (-INF, {}, "x must be a finite number, got -inf"),
        (NAN, {"allow_inf": True}, "x must be a number, not NaN, got nan"),
        (NAN, {"low": 0, "allow_inf": True}, "x must be ≥ 0 and not NaN, got nan"),
        (10**400, {}, "x must be a finite number, got 1000"),
        (INF, {"low": 0}, "x must be ≥ 0 and finite, got inf"),
        (-1, {"low": 0}, "x must be ≥ 0, got -1"),
        (0, {"low": 0, "low_open": True}, "x must be > 0, got 0"),
        (0.0, {"low": 0, "low_open": True}, "x must be > 0, got 0.0"),
        (1.5, {"low": 0, "high": 1}, "x must be ≥ 0 and ≤ 1, got 1.5"),
        (1, {"high": 1, "high_open": True}, "x must be < 1, got 1"),
        (-2, {"low": -1, "expected": "at least -1"}, "x must be at least -1, got -2"),
    ],
)
def test_real_refuses_values(value, kwargs, message):
    with pytest.raises(ArgumentError) as info:
        check_real(value, "x", **kwargs)
    assert str(info.value).startswith(message)


def test_type_error_can_stay_a_value_error():
    with pytest.raises(ArgumentError, match="x must be a number between 0 and 1, got str 'a'"):
        check_real("a", "x", expected="between 0 and 1", type_error=ArgumentError)


@pytest.mark.parametrize(
    ("value", "kwargs", "want"),
    [
        (0, {}, 0),
        (-3, {}, -3),
        (np.int64(5), {"low": 1}, 5),
        (10**30, {"low": 0}, 10**30),
        (3, {"low": 3, "high": 3}, 3),
    ],
)
def test_int_accepts(value, kwargs, want):
    got = check_int(value, "n", **kwargs)
    assert got == want and type(got) is int


@pytest.mark.parametrize("value", [True, np.bool_(False), 1.0, 2.5, NAN, INF, "3", None])
def test_int_refuses_types(value):
    with pytest.raises(ArgumentTypeError, match=r"^n must be an int, got "):
        check_int(value, "n")


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (0, {"low": 1}, "n must be an int ≥ 1, got 0"),
        (11, {"high": 10}, "n must be an int ≤ 10, got 11"),
        (0, {"low": 1, "high": 10}, "n must be an int from 1 to 10, got 0"),
        (-1, {"low": 0, "expected": "a count ≥ 0"}, "n must be a count ≥ 0, got -1"),
    ],
)
def test_int_refuses_values(value, kwargs, message):
    with pytest.raises(ArgumentError) as info:
        check_int(value, "n", **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("check", "expected", "message"),
    [
        (check_int, "a count ≥ 0", "n must be an int, got str 'x'"),
        (check_int, "an int ≥ 1", "n must be an int ≥ 1, got str 'x'"),
        (check_int, "≥ 1", "n must be an int ≥ 1, got str 'x'"),
        (check_real, "a finite number (0.5: random)", "n must be a number, got str 'x'"),
        (check_real, "a number ≥ 0", "n must be a number ≥ 0, got str 'x'"),
        (check_real, "between 0 and 1", "n must be a number between 0 and 1, got str 'x'"),
        (check_real, "numbers in [0, 1]", "n must be a number, got str 'x'"),
    ],
)
def test_a_type_error_names_the_kind_and_the_callers_range(check, expected, message):
    with pytest.raises(ArgumentTypeError) as info:
        check("x", "n", expected=expected)
    assert str(info.value) == message


@pytest.mark.parametrize("value", [0, 1, 0.5, np.float32(0.25)])
def test_probability_accepts(value):
    assert check_probability(value, "p") == float(value)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-0.1, ArgumentError, r"p must be in \[0, 1\], got -0.1"),
        (1.5, ArgumentError, r"p must be in \[0, 1\], got 1.5"),
        (NAN, ArgumentError, r"p must be in \[0, 1\], got nan"),
        (INF, ArgumentError, r"p must be in \[0, 1\], got inf"),
        (True, ArgumentTypeError, r"p must be a number in \[0, 1\], got bool True"),
        ("0.5", ArgumentTypeError, r"p must be a number in \[0, 1\], got str '0.5'"),
    ],
)
def test_probability_refuses(value, error, message):
    with pytest.raises(error, match=message):
        check_probability(value, "p")


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (-1, {}, "x must be ≥ 0, got -1"),
        (INF, {}, "x must be ≥ 0 and finite, got inf"),
        (0, {"low_open": True}, "x must be > 0, got 0"),
        (2, {"high": 1.0}, "x must be ≥ 0 and ≤ 1, got 2"),
        (NAN, {"low": -INF}, "x must be ≥ -inf and finite, got nan"),
    ],
)
def test_check_number_is_check_real_from_zero(value, kwargs, message):
    with pytest.raises(ArgumentError) as info:
        check_number(value, "x", **kwargs)
    assert str(info.value) == message
    assert check_number(INF, "x", allow_inf=True) == INF


@pytest.mark.parametrize(
    ("value", "want"),
    [(0, True), (12, True), (-1, False), (True, False), (1.0, False), ("3", False), (None, False)],
)
def test_is_count(value, want):
    assert is_count(value) is want


def test_a_type_error_can_name_another_kind():
    with pytest.raises(ArgumentError, match=r"^s must be an HTTP status \(400-599\), got str"):
        check_int(
            "500",
            "s",
            low=400,
            expected="an HTTP status (400-599)",
            kind="an HTTP status",
            type_error=ArgumentError,
        )
