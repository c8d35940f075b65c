"""A grid's output folder: each cell's records as Parquet, in folders by the grid's axes.

    out/
      sykit-grid.json                     which requests the folder's cells ran on
      cells/<key>.json                    one finished cell: its axes, seed, counts, notes
      requests/strategy-…/<axis>-…/seed-…/<key>.parquet
      attempts/strategy-…/<axis>-…/seed-…/<key>.parquet

Every file is self-describing: the cell's frame with ``strategy``, one column per axis of the grid
(typed the same in every file, null where the strategy does not use the axis) and ``seed`` in
front, its categorical columns as plain values (their categories are in the cell's record, from
which sykit restores them). So every file of a folder has one schema, and
``dask.dataframe.read_parquet(out / "requests")``, ``pyarrow.dataset`` or DuckDB read the folder
as it is, the axes as columns. The folder levels (``name-value``, values URI-encoded, an axis the
strategy does not use left out) sort the files by the axes for a reader that wants a slice
(``read_parquet(out / "requests" / "strategy-router" / "threshold-0.5")``); they are not
``name=value`` Hive partitions, which would repeat the columns the files hold.

A worker writes a cell's two files, then its ``cells/<key>.json`` (by an atomic rename): a cell is
finished exactly when that file exists, so a grid run again on the same folder skips finished
cells and runs the rest (a cell whose worker died half-way is run again and its files
overwritten). A cell is recognised by its strategy name, its axis labels and its seed: changing
an algorithm's code or a host's profiles under the same names needs ``overwrite=True``.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .._errors import ArgumentError, ArgumentTypeError
from .axes import Axis, Cell

__all__ = ["MARKER", "check_out", "finished_cells", "open_store", "read_cell", "write_cell"]

MARKER = "sykit-grid.json"
FORMAT = "sykit-grid"
VERSION = 1
_OWN = frozenset({MARKER, "cells", "requests", "attempts"})


def check_out(out: object) -> Path | None:
    if out is None:
        return None
    if not isinstance(out, str | os.PathLike):
        raise ArgumentTypeError(f"out must be a folder path, got {type(out).__name__}")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"out {str(path)!r} exists and is not a folder")
    return path


def requests_fingerprint(ids: Sequence[Any]) -> dict[str, Any]:
    digest = hashlib.sha1(repr(list(ids)).encode("utf-8")).hexdigest()
    return {"n": len(ids), "ids_sha1": digest}


def open_store(path: Path, fingerprint: dict[str, Any], overwrite: bool) -> None:
    """Make ``path`` ready: new, empty, or a grid folder for the same requests (kept, so its
    finished cells are skipped, unless ``overwrite``, which empties it first)."""
    marker = path / MARKER
    if path.is_dir() and any(path.iterdir()):
        foreign = sorted(e.name for e in path.iterdir() if e.name not in _OWN)
        if not marker.is_file() or foreign:
            what = "has no sykit-grid.json" if not marker.is_file() else f"holds {foreign[:3]}"
            raise ArgumentError(
                f"out folder {str(path)!r} is not empty and {what}: sykit writes a grid only "
                "to a new or empty folder, or to one an earlier grid wrote"
            )
        found = json.loads(marker.read_text(encoding="utf-8"))
        if overwrite:
            _clear(path)
        elif found.get("requests") != fingerprint:
            raise ArgumentError(
                f"out folder {str(path)!r} holds a grid run on other requests "
                f"({found.get('requests')} there, {fingerprint} now): give another folder, or "
                "overwrite=True to replace it"
            )
    path.mkdir(parents=True, exist_ok=True)
    (path / "cells").mkdir(exist_ok=True)
    content = {"format": FORMAT, "version": VERSION, "requests": fingerprint}
    marker.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")


def _clear(path: Path) -> None:
    for name in ("cells", "requests", "attempts"):
        folder = path / name
        if folder.is_dir():
            for entry in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                entry.rmdir() if entry.is_dir() else entry.unlink()
            folder.rmdir()
    (path / MARKER).unlink()


#: Longest label written out in a folder name; a longer one is named by its digest (the file
#: holds the label itself), so that no path segment exceeds what file systems allow.
MAX_SEGMENT = 80


def _segment(name: str, label: Any) -> str:
    text = urllib.parse.quote(str(label), safe="")
    if len(text) > MAX_SEGMENT:
        text = "sha1-" + hashlib.sha1(str(label).encode("utf-8")).hexdigest()[:16]
    return f"{name}-{text}"


def partition(cell: Cell) -> Path:
    """The cell's folder under ``requests/`` and ``attempts/``: the strategy, each axis the cell
    uses, the seed."""
    parts = [_segment("strategy", cell.strategy)]
    parts += [_segment(name, label) for name, label in cell.labels]
    parts.append(_segment("seed", cell.seed))
    return Path(*parts)


def _axis_type(axis: Axis) -> Any:
    import pyarrow as pa

    types = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64()}
    return types.get(axis.kind, pa.string())  # text, and mixed labels as their text


def _table(frame: pd.DataFrame, cell: Cell, axes: Mapping[str, Axis]) -> tuple[Any, dict]:
    """The file's table (see the module docstring) and the categories to restore."""
    import pyarrow as pa

    labels = dict(cell.labels)
    n = len(frame)
    arrays = [pa.array([cell.strategy] * n, pa.string())]
    fields = [pa.field("strategy", pa.string())]
    for name, axis in axes.items():
        kind = _axis_type(axis)
        label = labels.get(name)
        value = None if label is None else (str(label) if kind == pa.string() else label)
        arrays.append(pa.array([value] * n, kind))
        fields.append(pa.field(name, kind))
    arrays.append(pa.array([cell.seed] * n, pa.int64()))
    fields.append(pa.field("seed", pa.int64()))
    categories = {}
    for name in frame.columns:
        if name == "strategy":
            continue
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            values = column.cat.categories.tolist()
            try:
                json.dumps(values)
                categories[name] = values
            except (TypeError, ValueError):
                pass  # not JSON-safe: read back as plain values
            column = column.astype(column.cat.categories.dtype)
        array = pa.Array.from_pandas(column)
        arrays.append(array)
        fields.append(pa.field(name, array.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), categories


def write_cell(path: Path, cell: Cell, outcome: Any, axes: Mapping[str, Axis]) -> dict[str, Any]:
    """Write a finished cell: both frames, then its record (the sign that it finished); return
    the record, so the caller need not read back what it just wrote."""
    import pyarrow.parquet as pq

    where = partition(cell)
    files, categories = {}, {}
    for kind, frame in (("requests", outcome.requests), ("attempts", outcome.attempts)):
        folder = path / kind / where
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{cell.key}.parquet"
        temporary = folder / f".{cell.key}.{uuid.uuid4().hex}.tmp"
        table, categories[kind] = _table(frame, cell, axes)
        pq.write_table(table, temporary)
        os.replace(temporary, target)
        files[kind] = str(target.relative_to(path))
    content = {
        "key": cell.key,
        "strategy": cell.strategy,
        "labels": dict(cell.labels),
        "seed": cell.seed,
        "wall_s": outcome.wall_s,
        "engine": outcome.engine,
        "notes": list(outcome.notes),
        "counts": outcome.counts,
        "rows": list(outcome.rows),
        "files": files,
        "dtypes": {
            kind: {name: str(dtype) for name, dtype in frame.dtypes.items()}
            for kind, frame in (("requests", outcome.requests), ("attempts", outcome.attempts))
        },
        "categories": categories,
    }
    temporary = path / "cells" / f".{cell.key}.{uuid.uuid4().hex}.tmp"
    temporary.write_text(json.dumps(content) + "\n", encoding="utf-8")
    os.replace(temporary, path / "cells" / f"{cell.key}.json")
    return content


def finished_cells(path: Path) -> dict[str, dict[str, Any]]:
    """The records of the cells finished in the folder, by key."""
    found = {}
    for file in (path / "cells").glob("*.json"):
        if file.name.startswith("."):
            continue
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: the cell runs again
        if all((path / f).is_file() for f in record.get("files", {}).values()):
            found[record["key"]] = record
    return found


def read_cell(
    path: Path, record: dict[str, Any], kind: str, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """One cell's ``requests`` or ``attempts`` frame, as the run returned it (or ``columns``)."""
    import pyarrow.parquet as pq

    dtypes = record["dtypes"][kind]
    names = list(dtypes if columns is None else columns)
    frame = pq.read_table(path / record["files"][kind], columns=names).to_pandas()
    categories = record["categories"][kind]
    for name in frame.columns:
        if name in categories:
            frame[name] = pd.Categorical(frame[name], categories=categories[name])
        elif dtypes.get(name, "category") != "category" and str(frame[name].dtype) != dtypes[name]:
            frame[name] = frame[name].astype(dtypes[name])  # nullable ints, float32, …
    if "strategy" in frame:
        strategy = record["strategy"]
        frame["strategy"] = pd.Categorical(frame["strategy"], categories=[strategy])
    return frame
