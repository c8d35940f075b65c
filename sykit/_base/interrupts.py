"""Ctrl-C held back while a few steps that must run whole run.

A spilled run writes a chunk of records and then notes it. A ``KeyboardInterrupt`` landing
between the two (or in the middle of the write) would drop rows that had finished: they were
handed to the writer and never reached a file the run's Result reads. Inside
:func:`interrupts_held` a Ctrl-C is noted instead, and delivered (to the handler that was in
place) as soon as the block ends, when the records are consistent again.

Signal handlers can only be changed in the main thread; elsewhere (a run in a worker thread) the
block runs as it is, and the caller's own ``except KeyboardInterrupt`` keeps what it can.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["Held", "interrupts_held"]


class Held:
    """What :func:`interrupts_held` saw: ``caught`` is True when a Ctrl-C arrived inside."""

    __slots__ = ("caught",)

    def __init__(self) -> None:
        self.caught = False


@contextmanager
def interrupts_held(deliver: bool = True) -> Iterator[Held]:
    """Run the block whole: a SIGINT that arrives inside it reaches its handler when it ends
    (with ``deliver=False`` it is only noted in the :class:`Held` the block gets, for a caller
    that stops its own way)."""
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # ignored, or the default that kills the process: leave it
        yield held
        return
    frames: list[FrameType | None] = []

    def note(signum: int, frame: FrameType | None) -> None:
        held.caught = True
        frames.append(frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
        if frames and deliver:
            handler: Any = previous
            handler(signal.SIGINT, frames[0])  # the default handler raises KeyboardInterrupt
