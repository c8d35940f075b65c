"""What a stuck simulation says: which tasks wait, and where in the user's code, on either engine;
and the quiet dropping of a coroutine that will not stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import anyio

__all__ = ["describe_deadlock", "innermost_user_frame", "unreported_ignored_exits"]

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
        # an awaitable that steps a coroutine by hand (a request's guard on its algorithm) has
        # no frame of its own but says what it awaits, as ``cr_await``
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is not None:
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


@contextlib.contextmanager
def unreported_ignored_exits() -> Iterator[None]:
    """While it lasts, leave out Python's reports that a coroutine ignored ``GeneratorExit``
    (made when one that swallows every exception is closed or freed): sykit drops such a
    coroutine on purpose, and its request's records say why. Other reports go through."""
    report = sys.unraisablehook

    def quiet(unraisable: Any) -> None:
        error = unraisable.exc_value
        if not (isinstance(error, RuntimeError) and "ignored GeneratorExit" in str(error)):
            report(unraisable)

    sys.unraisablehook = quiet
    try:
        yield
    finally:
        sys.unraisablehook = report
