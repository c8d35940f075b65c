"""The model names and numbers a strategy is built with, checked where it is built, so that a
wrong value is refused with the argument's name rather than failing inside a run."""

from __future__ import annotations

from typing import Any

from sykit._base.checks import check_real
from sykit._base.errors import ArgumentError
from sykit._run.strategy_kit import checked_models

__all__ = ["one_model", "quality_threshold", "seconds"]


def one_model(model: Any, what: str, hint: str = "") -> str:
    """The one model name ``model`` gives (a name, or a list of exactly one): a strategy built
    around a single model must not keep the first of several and drop the rest unseen."""
    names = checked_models(model, what)
    if len(names) != 1:
        raise ArgumentError(f"{what} takes one model name, got {model!r:.80}{hint}")
    return names[0]


def quality_threshold(value: Any, name: str = "threshold") -> float:
    """A grade threshold: any finite number (grades may be 0/1, out of 10, ...); NaN would make
    every comparison false and so decide every request the same way unseen."""
    return check_real(value, name, expected="a finite number (the grade an answer needs)")


def seconds(value: Any, name: str) -> float:
    """A delay or timeout in seconds, refused here rather than on every request of a run."""
    return check_real(value, name, low=0.0, expected="a finite number of seconds ≥ 0")
