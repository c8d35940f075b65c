"""Terminal layout of what ``sykit`` prints: the width lines must fit, prose wrapped to it, tables
of strings fitted to it (the rightmost columns left out, and named, until they fit), and the
number and share formats of those tables.

It knows nothing of what a job computes: :mod:`.report` and :mod:`.main` hand it the text.
"""

from __future__ import annotations

import math
import shutil
import textwrap
from typing import Any

import pandas as pd

__all__ = ["fit_table", "fmt_answered", "fmt_number", "fmt_percent", "say", "terminal_width"]


def terminal_width() -> int:
    """The width printed lines must fit: the terminal's, or 120 columns off a terminal."""
    return max(shutil.get_terminal_size((120, 24)).columns, 40)


def say(text: str, width: int, indent: str = "") -> None:
    """Print prose wrapped to ``width``; continuation lines indented two more spaces."""
    kept = text.replace(" %", "\u00a0%")  # "95 %" stays on one line
    wrapped = textwrap.fill(kept, width, initial_indent=indent, subsequent_indent=indent + "  ")
    print(wrapped.replace("\u00a0", " "))


def fit_table(cells: pd.DataFrame, width: int) -> str:
    """A table of strings as text no wider than ``width``: the first column left-aligned, the
    others right-aligned, and the rightmost columns left out (and named) until it fits."""
    shown = list(cells.columns)
    while True:
        lines = _aligned(cells[shown])
        if max(map(len, lines)) <= width or len(shown) == 1:
            break
        shown.pop()
    left_out = [str(c) for c in cells.columns if c not in shown]
    if left_out:
        note = f"({', '.join(left_out)} left out to fit {width} columns; see the CSVs of --out)"
        lines.append(textwrap.fill(note, width))
    return "\n".join(lines)


def _aligned(cells: pd.DataFrame) -> list[str]:
    columns = [[str(c), *map(str, cells[c])] for c in cells.columns]
    widths = [max(map(len, column)) for column in columns]
    rows = []
    for i in range(len(cells) + 1):
        parts = [
            column[i].ljust(w) if j == 0 else column[i].rjust(w)
            for j, (column, w) in enumerate(zip(columns, widths, strict=True))
        ]
        rows.append("  ".join(parts).rstrip())
    return rows


def fmt_number(value: Any, digits: int, *, sign: bool = False) -> str:
    """``value`` with ``digits`` decimals (``+`` for a gain when ``sign``), ``–`` when missing."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    shown = round(float(value), digits) + 0.0  # no "-0.00"
    return f"{shown:{'+' if sign else ''}.{digits}f}"


def fmt_answered(value: Any) -> str:
    """A share of requests answered as the figures write it (rounded down to two significant
    figures, never to 100 % unless all were: ``0.852854`` reads ``85.2%``, and the outcomes
    figure's failed share, rounded up, ``14.8 %``), so a table and a figure agree to the digit."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    from sykit._viz.latency_cdf import share_text

    return f"{share_text(float(value), up=False)}%"


def fmt_percent(value: Any) -> str:
    """A share as a percentage: whole when exactly 0 or 100 %, else with the decimals that keep
    it off them (99.6 % or 99.97 % must not read as 100 %)."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    share = float(value)
    if share in (0.0, 1.0):
        return f"{share:.0%}"
    return f"{share:.1%}" if 0.0005 <= share <= 0.9995 else f"{share:.2%}"
