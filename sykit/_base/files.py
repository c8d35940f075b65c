"""Where the shipped tables live, and one cached read of each.

An installed wheel carries them as ``sykit/_data``; an editable checkout reads the repository's
``datasets/`` folder. Tables are parsed once per process and shared read-only, so a second
``load()`` costs nothing.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

__all__ = ["data_dir", "read_table"]

_PACKAGE = Path(__file__).resolve().parent.parent


@functools.cache
def data_dir() -> Path:
    """The folder holding the shipped tables (``routellm/``, ``mmlu_pro/``, ``prices/``, ``latency/``)."""
    for candidate in (_PACKAGE / "_data", _PACKAGE.parent / "datasets"):
        if (candidate / "PROVENANCE.md").is_file():
            return candidate
    raise FileNotFoundError(
        "sykit's data files are missing: expected sykit/_data (installed wheel) or datasets/ "
        f"next to the sykit package (checkout), looked in {_PACKAGE}"
    )


@functools.cache
def read_table(relative: str) -> pd.DataFrame:
    """A shipped CSV, parsed once. Callers must not modify the frame they get."""
    return pd.read_csv(data_dir() / relative, keep_default_na=True)
