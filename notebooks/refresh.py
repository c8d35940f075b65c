"""Execute the notebooks in place so their stored outputs are current (nbval compares against them).

    pip install nbclient && python notebooks/refresh.py [notebooks/01_quickstart.ipynb ...]

Run it after changing a notebook or anything its outputs show; then `pytest` checks them.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def refresh(path: Path) -> float:
    notebook = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
    ).execute()
    # Keep diffs to what a reader sees: no execution timestamps, no widget model state (its ids
    # are random on every run; the widget's text form stays in the cell output).
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)
    return time.perf_counter() - started


def main(paths: list[str]) -> None:
    os.environ["SYKIT_PROGRESS"] = "0"
    targets = [Path(p).resolve() for p in paths] or sorted(HERE.glob("*.ipynb"))
    for path in targets:
        print(f"{path.name}: {refresh(path):.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
