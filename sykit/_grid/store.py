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

Before resuming, each finished cell's frames are checked by their Parquet footers (readable,
holding the rows its record counts), not read: a damaged cell is deleted and run again, with a
warning naming the file, rather than failing every later read of the grid. A folder holding a
file sykit did not write is refused, when resuming (it would be read as a cell) as with
``overwrite=True`` (which deletes only what sykit wrote).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.parse
import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._grid.axes import Axis, Cell

__all__ = ["MARKER", "check_out", "finished_cells", "open_store", "read_cell", "write_cell"]

MARKER = "sykit-grid.json"
FORMAT = "sykit-grid"
VERSION = 1
_OWN = frozenset({MARKER, "cells", "requests", "attempts"})
_FRAME_KINDS = ("requests", "attempts")

#: The names sykit gives what it writes under ``cells/``, ``requests/`` and ``attempts/``: a
#: cell's record or frame (named by its key), the temporary file renamed into one, a folder level.
_RECORD = re.compile(r"[0-9a-f]{16}\.json")
_FRAME = re.compile(r"[0-9a-f]{16}\.parquet")
_TEMPORARY = re.compile(r"\.[0-9a-f]{16}\.[0-9a-f]{32}\.tmp")
_LEVEL = re.compile(r"[A-Za-z_]\w*-.*")


def check_out(out: object) -> Path | None:
    if out is None:
        return None
    if not isinstance(out, str | os.PathLike):
        raise ArgumentTypeError(f"out must be a folder path, got {type(out).__name__}")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"out {str(path)!r} exists and is not a folder")
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ArgumentError(
            f"out {str(path)!r} cannot be made: {str(blocking)!r} is a file, not a folder; "
            "give a folder path"
        )
    return path


def requests_fingerprint(ids: Sequence[Any]) -> dict[str, Any]:
    digest = hashlib.sha1(repr(list(ids)).encode("utf-8")).hexdigest()
    return {"n": len(ids), "ids_sha1": digest}


def open_store(path: Path, fingerprint: dict[str, Any], overwrite: bool) -> None:
    """Make ``path`` ready: new, empty, or a grid folder for the same requests (kept, so its
    finished cells are skipped, unless ``overwrite``, which deletes what sykit wrote there). A
    folder holding anything else is refused, so that nothing of the user's is read as a cell or
    deleted."""
    marker = path / MARKER
    if path.is_dir() and any(path.iterdir()):
        foreign = sorted(e.name for e in path.iterdir() if e.name not in _OWN)
        if not marker.is_file() or foreign:
            what = "has no sykit-grid.json" if not marker.is_file() else f"holds {foreign[:3]}"
            raise ArgumentError(
                f"out folder {str(path)!r} is not empty and {what}: sykit writes a grid only "
                "to a new or empty folder, or to one an earlier grid wrote"
            )
        _refuse_foreign(path, overwrite)
        if overwrite:
            _clear(path)
        else:
            found = _read_marker(marker)
            if found.get("requests") != fingerprint:
                raise ArgumentError(
                    f"out folder {str(path)!r} holds a grid run on other requests "
                    f"({found.get('requests')} there, {fingerprint} now): give another folder, "
                    "or overwrite=True to replace it"
                )
    content = {"format": FORMAT, "version": VERSION, "requests": fingerprint}
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / "cells").mkdir(exist_ok=True)
        marker.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    except OSError as error:
        raise ArgumentError(
            f"out folder {str(path)!r} cannot be written ({type(error).__name__}: "
            f"{error.strerror or error}): give a folder you can write to"
        ) from None


def _read_marker(marker: Path) -> dict[str, Any]:
    """The folder's ``sykit-grid.json``, or an error saying it is damaged and what to do."""
    try:
        found = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        why = f"{type(error).__name__}: {error}"
    else:
        if isinstance(found, dict) and found.get("format") == FORMAT:
            return found
        why = f"it holds {json.dumps(found)[:60]}, not a sykit grid's description"
    raise ArgumentError(
        f"out folder {str(marker.parent)!r}: {str(marker)!r} cannot be read ({why}). It records "
        "which requests the folder's cells ran on, so they cannot be resumed: pass "
        "overwrite=True to run the grid afresh in that folder, or give another folder"
    )


def _foreign(path: Path) -> list[Path]:
    """What sykit did not write under the folder's ``cells/``, ``requests/`` and ``attempts/``
    (a foreign folder is listed, not what it holds)."""
    found: list[Path] = []
    cells = path / "cells"
    if cells.is_symlink() or (cells.exists() and not cells.is_dir()):
        found.append(cells)
    elif cells.is_dir():
        for entry in sorted(cells.iterdir()):
            own = _RECORD.fullmatch(entry.name) or _TEMPORARY.fullmatch(entry.name)
            if not own or entry.is_symlink() or not entry.is_file():
                found.append(entry)
    for kind in _FRAME_KINDS:
        root = path / kind
        if root.is_symlink() or (root.exists() and not root.is_dir()):
            found.append(root)
            continue
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            strange = {d for d in dirs if not _LEVEL.fullmatch(d) or (here / d).is_symlink()}
            found += [here / d for d in sorted(strange)]
            dirs[:] = sorted(d for d in dirs if d not in strange)
            found += [
                here / f
                for f in sorted(files)
                if not (_FRAME.fullmatch(f) or _TEMPORARY.fullmatch(f))
            ]
    return found


def _refuse_foreign(path: Path, overwrite: bool) -> None:
    """Refuse a grid folder holding files sykit did not write: resuming would read them as
    cells, and ``overwrite`` would delete them."""
    foreign = _foreign(path)
    if not foreign:
        return
    shown = ", ".join(repr(str(f.relative_to(path))) for f in foreign[:3])
    more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
    why = (
        "overwrite=True deletes only what sykit wrote, and would leave them among the new cells"
        if overwrite
        else "a grid folder holds only what sykit writes, so that a resumed grid and the "
        "readers of requests/ and attempts/ find nothing but cells there"
    )
    raise ArgumentError(
        f"out folder {str(path)!r} holds {shown}{more}, which sykit did not write: {why}; "
        "move them out of the folder, or give another folder"
    )


def _clear(path: Path) -> None:
    """Delete what sykit wrote in the folder (its cells' records, frames and temporary files,
    the folders that held them, the marker), and nothing else."""
    for name in ("cells", *_FRAME_KINDS):
        folder = path / name
        if not folder.is_dir() or folder.is_symlink():
            continue
        for here, dirs, files in os.walk(folder, topdown=False):
            for file in files:
                if _RECORD.fullmatch(file) or _FRAME.fullmatch(file) or _TEMPORARY.fullmatch(file):
                    (Path(here) / file).unlink()
            for sub in dirs:
                _remove_if_empty(Path(here) / sub)
        _remove_if_empty(folder)
    (path / MARKER).unlink()


def _remove_if_empty(folder: Path) -> None:
    if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()


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


def finished_cells(
    path: Path, keys: Collection[str]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The records of the cells of ``keys`` finished in the folder, by key, and what is wrong
    with those found damaged: their record and frames are deleted, so they run again, instead of
    failing every read of the grid later."""
    found: dict[str, dict[str, Any]] = {}
    damaged: list[str] = []
    for key in sorted(keys):
        file = path / "cells" / f"{key}.json"
        if not file.is_file():
            continue  # not finished (or its worker died before writing the record): it runs
        record, problem = _checked_record(path, file)
        if problem is None:
            found[key] = record
        else:
            damaged.append(problem)
            _forget(path, file, record)
    return found, damaged


#: What a cell's record holds: the keys that reading the cell back needs.
_RECORD_KEYS = frozenset(
    {"key", "strategy", "labels", "seed", "wall_s", "engine", "notes", "counts", "rows", "files"}
    | {"dtypes", "categories"}
)


def _checked_record(path: Path, file: Path) -> tuple[dict[str, Any], str | None]:
    """The cell's record and None, or what it could be read of and why the cell is damaged. The
    frames are checked by their Parquet footer only (their row counts), not read."""
    import pyarrow.parquet as pq

    where = str(file.relative_to(path))
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {}, f"{where} cannot be read ({type(error).__name__}: {error})"
    if not isinstance(record, dict) or not set(record) >= _RECORD_KEYS:
        return {}, f"{where} is not a cell's record"
    files, rows = record["files"], record["rows"]
    if record["key"] != file.stem or not isinstance(files, dict) or not _pair(rows):
        return {}, f"{where} is not a cell's record"
    for kind, expected in zip(_FRAME_KINDS, rows, strict=True):
        name = files.get(kind)
        frame = path / str(name)
        if not isinstance(name, str) or not _is_own_frame(path, frame, kind):
            return record, f"{where} names no {kind} file of the folder"
        try:
            n = pq.read_metadata(frame).num_rows
        except Exception as error:  # a missing, truncated or overwritten file
            return record, f"{name} cannot be read ({type(error).__name__}: {error})"
        if n != expected:
            return record, f"{name} holds {n} rows, its record {expected}"
    return record, None


def _pair(rows: object) -> bool:
    return isinstance(rows, list) and len(rows) == 2


def _is_own_frame(path: Path, frame: Path, kind: str) -> bool:
    """Whether ``frame`` is where sykit writes a cell's ``kind`` frame (so it may be deleted)."""
    root = (path / kind).resolve()
    return _FRAME.fullmatch(frame.name) is not None and root in frame.resolve().parents


def _forget(path: Path, file: Path, record: dict[str, Any]) -> None:
    """Delete a damaged cell's record, then its frames, so that it is not finished any more."""
    file.unlink()
    files = record.get("files")
    for kind in _FRAME_KINDS:
        name = files.get(kind) if isinstance(files, dict) else None
        frame = path / str(name)
        if isinstance(name, str) and _is_own_frame(path, frame, kind) and frame.is_file():
            frame.unlink()


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
