"""Progress bars: tqdm (the notebook widget in Jupyter), shown only for runs longer than a moment."""

from __future__ import annotations

import os
from typing import Any

from ._errors import ArgumentTypeError

__all__ = ["make_progress"]


def _progress_enabled(progress: bool | None) -> bool:
    if progress is None:
        return os.environ.get("SYKIT_PROGRESS", "1").lower() not in ("0", "false", "no", "off")
    if not isinstance(progress, bool):
        raise ArgumentTypeError(f"progress must be True, False or None, got {progress!r}")
    return progress


def make_progress(total: int, progress: bool | None, description: str) -> Any:
    """A tqdm bar (the notebook widget in Jupyter) that appears only if the run lasts over a second."""
    if not _progress_enabled(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=description,
        unit="req",
        delay=1.0 if progress is None else 0.0,
        leave=False,
    )
