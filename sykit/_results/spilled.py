"""Reading back what a spilling run left in its folder, finished or not (``Result.from_spill``).

A spilling run (``sy.run(..., spill=folder)``, see :mod:`sykit._run.spill`) writes its records
as Parquet chunks while it goes. Each chunk carries, in its Parquet metadata, the code tables
(models, error kinds, messages) as they were when it was written; the tables only grow, so the
last whole chunk's tables decode every chunk before it. The request ids are written when the run
starts, ``run.json`` when it ends. So a run killed on the way (SIGKILL, a crash, a power cut)
leaves every chunk it completed readable; a chunk cut short is told apart and skipped.

This module reads the files; the frames are built by the function :mod:`sykit._run.spill`
registers (:func:`register`), the same that builds an in-memory run's frames, since ``_results``
may not import ``_run``.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError, SykitError

if TYPE_CHECKING:
    from sykit._results.result import Result

__all__ = [
    "IDS_FILE",
    "MARKER",
    "RUN_FILE",
    "TABLES_KEY",
    "Chunks",
    "read_chunks",
    "recover",
    "register",
    "unfinished",
]

#: The file that marks a folder as written by sykit.
MARKER = "sykit-spill.json"
#: Written when a spilled run ends: its completion marker.
RUN_FILE = "run.json"
IDS_FILE = "ids.parquet"
#: The Parquet metadata key of a chunk's code tables.
TABLES_KEY = b"sykit"
#: A chunk, or one being written (``.part``, renamed once whole).
CHUNK = re.compile(r"(attempts|requests)-(\d{6,})\.parquet(\.part)?")


@dataclass
class Chunks:
    """The whole chunks of one run's folder, in the order they were written, and what decodes
    them."""

    folder: Path
    strategy: str
    seed: int
    engine: str
    finished: bool
    ids: Any
    attempts: list[Any] = field(default_factory=list)  # pyarrow Tables
    requests: list[Any] = field(default_factory=list)
    tables: dict[str, list[str]] = field(default_factory=dict)
    cut: list[str] = field(default_factory=list)  # files that could not be read whole


_BUILD: list[Callable[[Chunks], tuple[pd.DataFrame, pd.DataFrame]]] = []


def register(build: Callable[[Chunks], tuple[pd.DataFrame, pd.DataFrame]]) -> None:
    """Set the function that turns :class:`Chunks` into the (attempts, requests) frames."""
    _BUILD[:] = [build]


def _parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as error:  # a dependency of sykit, so only a broken install gets here
        raise ImportError("reading a spill folder needs pyarrow: pip install pyarrow") from error
    return pq


def _json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def unfinished(folder: Path) -> list[Path]:
    """The run folders in ``folder`` (itself and its subfolders) that hold chunks of a run that
    never ended: no ``run.json``, and no note that it stopped on an error."""
    found: list[Path] = []
    if not folder.is_dir():
        return found
    marker = _json(folder / MARKER) if (folder / MARKER).is_file() else None
    if marker is None:
        return found
    if (
        not (folder / RUN_FILE).exists()
        and not marker.get("ended")
        and any(CHUNK.fullmatch(entry.name) for entry in folder.iterdir())
    ):
        found.append(folder)
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            found.extend(unfinished(entry))
    return found


def read_chunks(folder: Path) -> Chunks:
    """Every whole chunk of the run in ``folder``; the others are listed in ``cut``."""
    pq = _parquet()
    marker = _json(folder / MARKER) if (folder / MARKER).is_file() else None
    if marker is None:
        raise ArgumentError(
            f"{str(folder)!r} is not a spill folder sykit wrote (no readable {MARKER} marker)"
        )
    if "strategy" not in marker:
        runs = sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / MARKER).is_file())
        raise ArgumentError(
            f"{str(folder)!r} holds one subfolder per strategy and seed (a spilling compare); "
            f"read one of them: {', '.join(repr(name) for name in runs) or 'none written'}"
        )
    meta = _json(folder / RUN_FILE)
    try:
        column = pq.read_table(folder / IDS_FILE).column("id")
    except Exception as error:
        raise SykitError(
            f"the spill folder {str(folder)!r} has no readable {IDS_FILE} (the run wrote no "
            f"records yet, or an earlier version of sykit wrote it): {error}"
        ) from error
    ids = column.to_numpy() if _is_int(column) else column.to_pylist()
    chunks = Chunks(
        folder=folder,
        strategy=str(marker["strategy"]),
        seed=int(marker.get("seed", 0)),
        engine=str((meta or marker).get("engine", "kernel")),
        finished=meta is not None,
        ids=ids,
    )
    found = sorted(
        (int(match.group(2)), match.group(1), entry.name, bool(match.group(3)))
        for entry in folder.iterdir()
        if (match := CHUNK.fullmatch(entry.name))
    )
    for _, kind, name, part in found:
        if part:
            chunks.cut.append(name)
            continue
        try:
            table = pq.read_table(folder / name)
            tables = json.loads((table.schema.metadata or {})[TABLES_KEY])
        except Exception:
            chunks.cut.append(name)
            continue
        (chunks.attempts if kind == "attempts" else chunks.requests).append(table)
        for key, values in tables.items():  # they only grow: the longest decodes them all
            if len(values) > len(chunks.tables.get(key, ())):
                chunks.tables[key] = values
    return chunks


def _is_int(column: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(column.type))


def recover(cls: type[Result], folder: object) -> Result:
    """``Result.from_spill``: the run in ``folder`` as a Result, from its whole chunks."""
    if isinstance(folder, bool) or not isinstance(folder, str | os.PathLike):
        raise ArgumentTypeError(
            f"folder must be a path (a str or pathlib.Path), got {type(folder).__name__}"
        )
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise ArgumentError(f"spill folder {str(path)!r} does not exist or is not a folder")
    chunks = read_chunks(path)
    if not _BUILD:  # sykit._run.spill registers it, and `import sykit` loads that
        raise RuntimeError("no spill reader registered")  # a bug in sykit
    attempts, requests = _BUILD[0](chunks)
    notes = []
    if not chunks.finished:
        notes.append(
            f"the run that wrote spill folder {str(path)!r} did not finish: {len(requests)} "
            f"finished requests and {len(attempts)} attempts recovered from its whole chunks "
            "(the requests that finished last may miss attempts that were not written yet)"
        )
    if chunks.cut:
        shown = ", ".join(repr(name) for name in chunks.cut)
        notes.append(
            f"skipped cut (unreadable or half-written) chunk file(s) in {str(path)!r}: "
            f"{shown}; their rows are lost"
        )
    if notes:
        warnings.warn("; ".join(notes), UserWarning, stacklevel=3)
    return cls(
        strategy=chunks.strategy,
        seed=chunks.seed,
        attempts=attempts,
        requests=requests,
        wall_s=math.nan,
        engine=chunks.engine,
        interrupted=not chunks.finished,
    )
