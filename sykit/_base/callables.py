"""Whether a user's function can be called the way sykit will call it, asked once when it is
handed over rather than found out on every request of a run."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["binds"]


def binds(fn: Any, n: int) -> bool:
    """Whether ``fn`` takes ``n`` positional arguments (True when its signature cannot be read,
    as for some builtins: the call itself then says)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*([None] * n))
    except TypeError:
        return False
    return True
