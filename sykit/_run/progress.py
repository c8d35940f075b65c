"""Progress bars: tqdm, shown only for runs longer than a moment, and never left behind.

* In a notebook kernel: the ipywidgets bar, displayed under a display id and cleared when it
  closes, so a saved notebook keeps no half-drawn bar.
* On a terminal: tqdm's text bar, erased when it closes.
* Anywhere else (CI logs, a command piped to a file): no automatic bar, as a stream of ``\\r``
  updates only bloats the log; ``progress=True`` still gives one that writes a line every
  :data:`LOG_INTERVAL_S` seconds at most.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from sykit._base.errors import ArgumentTypeError

__all__ = ["LOG_INTERVAL_S", "label", "make_progress"]

#: Seconds between the lines a forced bar writes to a stream that is not a terminal.
LOG_INTERVAL_S = 30.0


def _progress_enabled(progress: bool | None) -> bool:
    if progress is None:
        return os.environ.get("SYKIT_PROGRESS", "1").lower() not in ("0", "false", "no", "off")
    if not isinstance(progress, bool):
        raise ArgumentTypeError(f"progress must be True, False or None, got {progress!r}")
    return progress


def _in_notebook() -> bool:
    """Whether the code runs in a Jupyter kernel, where a widget bar can show."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def make_progress(total: int, progress: bool | None, description: str, unit: str = "req") -> Any:
    """A tqdm bar that appears only if the run lasts over a second (``progress=None``), or None
    when there should be no bar (see the module docstring)."""
    if not _progress_enabled(progress):
        return None
    settings: dict[str, Any] = {
        "total": total,
        "desc": description,
        "unit": unit,
        "delay": 1.0 if progress is None else 0.0,
        "leave": False,
    }
    if _in_notebook():
        try:
            return _notebook_bar_class()(**settings)
        except ImportError:  # no ipywidgets: the text bar below
            pass
    from tqdm import tqdm

    stream = sys.stderr
    if not _is_terminal(stream):
        if progress is None:
            return None
        settings.update(mininterval=LOG_INTERVAL_S, maxinterval=LOG_INTERVAL_S)
    return tqdm(file=stream, **settings)


def label(bar: Any, strategy: str, seed: int, seeds: int) -> None:
    """Name the run a bar is counting: the strategy, and the seed when there are several.

    The name shows at the bar's next update: drawing it now would show a bar before its delay,
    which tqdm never clears (it clears only bars its updates drew)."""
    if bar is not None:
        text = strategy if seeds == 1 else f"{strategy} · seed {seed}"
        bar.set_description(text, refresh=False)


_NOTEBOOK_BAR: type | None = None


def _notebook_bar_class() -> type:
    global _NOTEBOOK_BAR
    if _NOTEBOOK_BAR is None:
        from tqdm.notebook import tqdm as notebook_tqdm

        class NotebookBar(notebook_tqdm):
            """tqdm's widget bar, displayed under a display id so closing it can clear the cell
            output it took (otherwise a saved notebook keeps a frozen bar)."""

            def __init__(self, **kwargs: Any) -> None:
                self._handle: Any = None
                super().__init__(display=False, **kwargs)
                if self.delay <= 0:
                    self._show()

            def _show(self) -> None:
                if self._handle is None and not self.disable:
                    from IPython import display

                    self._handle = display.display(self.container, display_id=True)

            def display(self, *args: Any, check_delay: bool = True, **kwargs: Any) -> None:
                super().display(*args, check_delay=False, **kwargs)
                if check_delay and self.delay > 0 and not kwargs.get("close"):
                    self._show()

            def close(self) -> None:
                super().close()
                if self._handle is not None:
                    self._handle.update({"text/plain": ""}, raw=True)
                    self._handle = None

        _NOTEBOOK_BAR = NotebookBar
    return _NOTEBOOK_BAR
