"""What a stuck simulation says: which tasks wait, and where in the user's code, on either engine."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

import anyio

__all__ = ["describe_deadlock", "innermost_user_frame"]

_LIBRARY_DIRS = (
    *(os.path.dirname(module.__file__ or "") + os.sep for module in (asyncio, anyio)),
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # sykit itself
)


def innermost_user_frame(coro: Any) -> Any:
    """The deepest frame of a suspended coroutine outside asyncio, anyio and sykit: where the user
    waits (the deepest frame of all when every frame is a library's)."""
    frames = []
    awaited: Any = coro
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    for frame in reversed(frames):
        if not frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
            return frame
    return frames[-1] if frames else None


def describe_deadlock(now: float, waiting: Iterable[tuple[str, Any]], example: str) -> str:
    """The SimDeadlock message: the virtual time, an example of what causes it, and up to five
    waiting tasks (name, coroutine) with the file, line and function each waits in."""
    waiting = list(waiting)
    lines = []
    for name, coro in waiting[:5]:
        frame = innermost_user_frame(coro)
        where = ""
        if frame is not None:
            where = f" at {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        lines.append(f"  - task {name!r}{where}")
    more = f"\n  … and {len(waiting) - 5} more" if len(waiting) > 5 else ""
    return (
        f"simulation deadlock at t={now:g} s: every task is waiting and no timer is pending, so "
        f"virtual time cannot move ({example}). Waiting tasks:\n" + "\n".join(lines) + more
    )
