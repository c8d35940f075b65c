"""A summary as a reader first sees it: every column in the frame, the figures that compare
strategies on display.

A summary has some thirty columns, which pandas prints as ``...`` in a script. ``summary()``
returns a :class:`SummaryFrame`: it holds every column (code reads any of them, a CSV writes them
all) and shows only its *view*, the figures of the main job's robustness table: strategy (and the
``by`` or grid-axis columns), success rate, mean quality, cost per 1,000 requests, latency p50 and
p99, attempts per request, retries, fallbacks and the wasted share (and, against a baseline, the
differences in quality and cost), wrapped to the width and never cut to ``...``, then a line
naming the other columns. ``summary(columns="all")`` gives the plain frame with every column, and
``summary(columns=[...])`` the columns named.

Anything made from a SummaryFrame (a selection, ``.T``, ``set_index``, a merge) is a plain
DataFrame and prints as pandas prints it.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from typing import Any, ClassVar

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError

__all__ = ["VIEW_COLUMNS", "SummaryFrame", "summary_frame", "view_columns"]

#: The columns a summary shows, after its key columns (strategy and those it is grouped by), in
#: this order; ``{latency}`` stands for the latency percentiles (p50 and p99 by default).
VIEW_COLUMNS: tuple[str, ...] = (
    "realizable",
    "success_rate",
    "mean_quality",
    "cost_per_1k_requests_usd",
    "{latency}",
    "attempts_per_request",
    "retries",
    "fallbacks",
    "wasted_share",
    "d_quality",
    "d_cost_usd",
)

_DEFAULT_LATENCY = ("latency_p50_s", "latency_p95_s", "latency_p99_s")
_SHOWN_LATENCY = ("latency_p50_s", "latency_p99_s")


def view_columns(columns: Sequence[str], realizable: bool = True) -> list[str]:
    """The columns of a summary with ``columns`` that its view shows: the key columns (those
    before ``realizable``), then :data:`VIEW_COLUMNS` it has. ``realizable`` only when some
    strategy is not (it read the ground truth), which the view then says."""
    names = list(columns)
    keys = names[: names.index("realizable")] if "realizable" in names else names[:1]
    latency = [c for c in names if c.startswith("latency_p") and c.endswith("_s")]
    if tuple(latency) == _DEFAULT_LATENCY:
        latency = list(_SHOWN_LATENCY)
    shown = list(keys)
    for name in VIEW_COLUMNS:
        if name == "{latency}":
            shown += latency
        elif name in names and name not in shown and (name != "realizable" or not realizable):
            shown.append(name)
    return shown


class SummaryFrame(pd.DataFrame):
    """A summary's every column, displayed as its view (see the module docstring). What is made
    from it is a plain DataFrame."""

    _metadata: ClassVar[list[str]] = ["_view"]
    _view: tuple[str, ...]

    @property
    def _constructor(self) -> Any:
        return pd.DataFrame

    def view(self) -> list[str]:
        """The columns displayed, in order."""
        names = getattr(self, "_view", None)
        if names is None:  # a SummaryFrame built by hand: its columns decide
            names = view_columns([str(c) for c in self.columns])
        return [c for c in names if c in self.columns]

    def shown(self) -> pd.DataFrame:
        """The view: the columns displayed, as a plain frame."""
        return pd.DataFrame(self.loc[:, self.view()])

    def hidden(self) -> list[str]:
        """The columns not displayed, in order."""
        shown = set(self.view())
        return [str(c) for c in self.columns if c not in shown]

    def _more(self, width: int) -> str:
        hidden = self.hidden()
        if not hidden:
            return ""
        text = (
            f"[{len(hidden)} more columns, not shown: {', '.join(hidden)}; select any by "
            'name, or take summary(columns="all")]'
        )
        return "\n".join(textwrap.wrap(text, width=width))

    def __repr__(self) -> str:
        """The view, every column of it: wrapped to the width, never cut to ``...``."""
        width = _width()
        table = self.shown().to_string(
            line_width=width,
            max_rows=pd.get_option("display.max_rows"),
            min_rows=pd.get_option("display.min_rows"),
            show_dimensions="truncate",
        )
        more = self._more(width)
        return table + ("\n" + more if more else "")

    def _repr_html_(self) -> str | None:
        table = self.shown()._repr_html_()
        more = self._more(_width())
        if table is None or not more:
            return table
        return table + f"<p><small>{_escape(more)}</small></p>"


def _width() -> int:
    """The width to print at: the terminal's, else pandas' ``display.width``."""
    fallback = pd.get_option("display.width") or 80
    return max(shutil.get_terminal_size((int(fallback), 24)).columns, 40)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def summary_frame(table: pd.DataFrame, columns: Any = None) -> pd.DataFrame:
    """``table`` (a whole summary) as ``summary(columns=...)`` returns it: None, a
    :class:`SummaryFrame` that displays its view; ``"all"``, the plain frame; a list of column
    names, those columns (a plain frame)."""
    if columns is None:
        frame = SummaryFrame(table)
        realizable = "realizable" not in table or bool(table["realizable"].fillna(True).all())
        frame._view = tuple(view_columns([str(c) for c in table.columns], realizable))
        return frame
    if isinstance(columns, str):
        if columns == "all":
            return table
        columns = [columns]
    if not isinstance(columns, Sequence) or not all(isinstance(c, str) for c in columns):
        raise ArgumentTypeError(
            f'summary(columns=...) takes "all" or a list of column names, got {columns!r:.80}'
        )
    unknown = [c for c in columns if c not in table.columns]
    if unknown:
        raise ArgumentError(
            f"summary(columns=...): {unknown} {'is not a column' if len(unknown) == 1 else 'are not columns'} "
            f'of the summary; choose from {list(table.columns)}, or "all"'
        )
    return table.loc[:, list(dict.fromkeys(columns))]
