"""Runs that do not fit in memory: the records go to Parquet files while the run goes, and the
Result reads them back when its frames are first used.

``sy.run(..., spill=folder)`` (and ``arun`` / ``compare``) hands the records over in chunks:

* a request's row is written once it has finished (every :data:`CHUNK_ROWS` finished requests);
* attempts are written as a *prefix* of the attempt log: an attempt is appended when it starts and
  completed when it ends, and a running request still writes to its own attempts (and reads them
  back by run-wide index), so only the attempts before the first one of any unfinished request —
  the watermark — can go. Memory then holds about the attempts of the requests in flight, plus
  those since the oldest unfinished request's first attempt (a request that runs for the whole
  run keeps everything after it in memory).

Each chunk holds the raw columns of :class:`~sykit._run.attempt_log.AttemptLog` /
:class:`~sykit._run.request_log.RequestLog`: integer codes, per-request call and race numbers,
request positions, and in its Parquet metadata the code tables (models, error kinds, messages) as
they are when it is written (they only grow). The request ids are written when the run starts
(``ids.parquet``), and ``run.json`` — the tables and the list of chunks, the run's completion
marker — when it ends. A chunk is written as ``<name>.part`` and renamed once whole. Reading concatenates
the chunks in the order they were written — the run's own order — and builds the frames with the
same functions an in-memory run uses (:func:`~sykit._run.frames.attempt_frame`,
:func:`~sykit._run.frames.request_columns`), so the frames are identical, ids renumbered over the
whole run, dtypes included. Metadata and evidence values (any Python object) are stored pickled.

A folder sykit writes carries a ``sykit-spill.json`` marker. A spill folder must be new, empty,
or one sykit wrote (holding nothing else): that one is cleared first, unless it holds the chunks
of a run that never ended (killed: no ``run.json``), which are refused rather than lost —
``sy.Result.from_spill(folder)`` reads them back (:mod:`sykit._results.spilled`). With ``compare`` each
strategy × seed gets its own subfolder. A Result keeps a token of its run and refuses to read a
folder that a later run has written again.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from sykit._base.errors import ArgumentError, ArgumentTypeError, SykitError
from sykit._base.interrupts import interrupts_held
from sykit._base.vocab import RequestStatus
from sykit._results import spilled as _spilled
from sykit._run.attempt_log import AttemptLog
from sykit._run.frames import appearing, attempt_frame, categorical, request_columns
from sykit._run.records import SERVICE_FIELD
from sykit._run.request_log import RequestLog

if TYPE_CHECKING:
    from sykit._run.state import RunState

__all__ = ["CHUNK_ROWS", "MARKER", "Spill", "SpilledFrame", "SpilledRun", "check_spill"]

#: Rows per chunk file (attempts and requests alike): about 6 MB of raw columns in memory.
CHUNK_ROWS = 65_536
#: The file that marks a folder as written by sykit.
MARKER = _spilled.MARKER
FORMAT = "sykit-spill"
VERSION = 1
_RUN_FILE = _spilled.RUN_FILE
_IDS_FILE = _spilled.IDS_FILE
_OWN_FILE = re.compile(
    r"(attempts|requests)-\d{6,}\.parquet(\.part)?|run\.json|ids\.parquet|sykit-spill\.json"
)
_EXTRA = "extra"  # the requests column of pickled metadata/evidence dicts


def _arrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:  # a dependency of sykit, so only a broken install gets here
        raise ImportError(
            "spill= writes Parquet files with pyarrow, which is not installed: pip install pyarrow"
        ) from error
    return pa, pq


# -- the folder -----------------------------------------------------------------------------------


def check_spill(spill: object, nested: bool) -> Spill | None:
    """The checked ``spill=`` argument: None, or a folder that is new, empty or sykit's own.
    ``nested``: every run (strategy × seed) gets a subfolder."""
    if spill is None:
        return None
    if isinstance(spill, bool) or not isinstance(spill, str | os.PathLike):
        raise ArgumentTypeError(
            f"spill must be a folder path (a str or pathlib.Path), got {type(spill).__name__}"
        )
    path = Path(spill).expanduser()
    if str(spill) == "":
        raise ArgumentError("spill must name a folder, got an empty string")
    if path.exists() and not path.is_dir():
        raise ArgumentError(
            f"spill={str(spill)!r} is a file; spill takes a folder (new, empty, or one an earlier "
            "spilling run wrote)"
        )
    _check_overwritable(path)
    _check_not_unfinished(path)
    _arrow()  # now, not after the run has started
    return Spill(path, nested)


def _check_overwritable(path: Path) -> None:
    if not path.is_dir() or not any(path.iterdir()):
        return
    foreign = _foreign_entries(path)
    if foreign:
        shown = ", ".join(repr(name) for name in foreign[:3]) + (", …" if len(foreign) > 3 else "")
        what = (
            "was not written by sykit (no sykit-spill.json marker)"
            if not (path / MARKER).is_file()
            else f"holds files sykit did not write ({shown})"
        )
        raise ArgumentError(
            f"spill folder {str(path)!r} is not empty and {what}; sykit only overwrites a folder "
            "it wrote itself: give a new or empty folder, or remove what is there"
        )


def _check_not_unfinished(path: Path) -> None:
    """Refuse a folder holding the records of a run that never ended (killed), rather than
    clearing them: they are all that is left of it."""
    dead = _spilled.unfinished(path)
    if dead:
        where = str(dead[0])
        more = f" (and {len(dead) - 1} more subfolder(s))" if len(dead) > 1 else ""
        raise ArgumentError(
            f"spill folder {str(path)!r} holds the records of a run that did not finish "
            f"({where!r}{more} has chunks but no run.json), so sykit will not clear it: read "
            f"what that run completed with sy.Result.from_spill({where!r}), then delete the "
            "folder, or pass a new folder as spill="
        )


def _foreign_entries(folder: Path) -> list[str]:
    """The entries of ``folder`` sykit did not write (all of them without a marker)."""
    entries = sorted(folder.iterdir())
    if not (folder / MARKER).is_file():
        return [entry.name for entry in entries]
    foreign = []
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            if _foreign_entries(entry):
                foreign.append(entry.name + "/")
        elif not (entry.is_file() and _OWN_FILE.fullmatch(entry.name)):
            foreign.append(entry.name)
    return foreign


def _clear(folder: Path) -> None:
    """Empty a folder sykit wrote (checked again: anything else in it stops the run)."""
    _check_overwritable(folder)
    for entry in folder.iterdir():
        if entry.is_dir():
            _clear(entry)
            entry.rmdir()
        else:
            entry.unlink()


def _mark(folder: Path, **extra: Any) -> None:
    content = {"format": FORMAT, "version": VERSION, **extra}
    (folder / MARKER).write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")


def _spilled_marker(folder: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict):
        return None
    return {k: v for k, v in marker.items() if k not in ("format", "version")}


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("._")[:60]
    return slug or "strategy"


class Spill:
    """Where the runs of one ``run`` / ``arun`` / ``compare`` call write their records."""

    def __init__(self, path: Path, nested: bool) -> None:
        self.path = path
        self.nested = nested
        self.opened = False
        self.folders: dict[tuple[str, int], Path] = {}
        self.live: set[Path] = set()  # run folders attached and not finished

    def _folder(self, strategy: str, seed: int) -> Path:
        if not self.nested:
            return self.path
        key = (strategy, seed)
        if key not in self.folders:
            taken = {folder.name for folder in self.folders.values()}
            name = base = f"{_slug(strategy)}-seed{seed}"
            n = 2
            while name in taken:
                name, n = f"{base}-{n}", n + 1
            self.folders[key] = self.path / name
        return self.folders[key]

    def _open(self) -> None:
        """On the first run: create the folder, or clear the one an earlier run wrote."""
        if self.opened:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        _clear(self.path)
        if self.nested:
            _mark(self.path, runs="one subfolder per strategy and seed")
        self.opened = True

    def attach(self, run: RunState, ids: Sequence[Any]) -> None:
        """Make ``run`` write its records to its folder while it goes (a run started again from
        the beginning, on the asyncio engine, starts its folder afresh)."""
        self._open()
        folder = self._folder(run.strategy, run.seed)
        folder.mkdir(exist_ok=True)
        _clear(folder)
        _mark(folder, strategy=run.strategy, seed=run.seed, engine=run.engine.name)
        writer = _Writer(folder, run.log, len(ids))
        writer.write_ids(ids)
        run.requests = SpillingRequestLog(run.log, writer)
        self.live.add(folder)

    def abandon(self) -> None:
        """The call stopped on an error: note it in the folders of its unfinished runs, so a
        later run clears them as a finished run's (the error was raised, nothing is unseen)."""
        for folder in self.live:
            marker = _spilled_marker(folder)
            if marker is not None:
                _mark(folder, **{**marker, "ended": "error"})
        self.live.clear()

    def finish(self, run: RunState, ids: Sequence[Any]) -> tuple[SpilledFrame, SpilledFrame]:
        """Write what remains of ``run``'s records and the tables to read them; the two lazy
        frames (attempts, requests) of its Result."""
        requests = run.requests
        if not isinstance(requests, SpillingRequestLog):
            raise RuntimeError("finish() of a run that was not attached")  # a bug in sykit
        spilled = requests.writer.finish(run, requests, ids)
        self.live.discard(requests.writer.folder)
        return SpilledFrame(spilled, "attempts"), SpilledFrame(spilled, "requests")


# -- writing ------------------------------------------------------------------------------------


class SpillingRequestLog(RequestLog):
    """A request log that hands finished requests, and the attempts no running request can still
    touch, to a :class:`_Writer` as the run goes."""

    __slots__ = ("log", "writer")

    def __init__(self, log: AttemptLog, writer: _Writer) -> None:
        super().__init__(log.models)
        self.log = log
        self.writer = writer

    def add(self, index: int, *args: Any) -> None:
        super().add(index, *args)
        self.writer.done[index] = 1
        self._flush_if_due()

    def extend(
        self, columns: Mapping[str, np.ndarray], extras: Mapping[int, dict[str, Any]]
    ) -> None:
        """Rows added at once (the bulk engine's block of finished requests): the same chunks
        as :meth:`add` would write, checked once for the block."""
        super().extend(columns, extras)
        done = np.frombuffer(self.writer.done, dtype=np.uint8)
        done[np.asarray(columns["index"], np.int64)] = 1
        self._flush_if_due()

    def _flush_if_due(self) -> None:
        """Write the attempts before the watermark, and the finished requests' rows, when
        enough of either are held."""
        writer = self.writer
        due_attempts = self.log.held() >= writer.next_check
        due_requests = len(self.index) >= writer.chunk_rows
        if due_attempts or due_requests:
            with interrupts_held():  # rows handed over reach their file, or stay held
                if due_attempts:
                    writer.flush_attempts(final=False)
                if due_requests:
                    writer.flush_requests(self)


class _Writer:
    """Writes one run's chunks: ``attempts-NNNNNN.parquet`` and ``requests-NNNNNN.parquet``."""

    def __init__(self, folder: Path, log: AttemptLog, n_requests: int) -> None:
        self.folder = folder
        self.log = log
        self.chunk_rows = max(1, CHUNK_ROWS)
        self.next_check = self.chunk_rows
        self.done = bytearray(n_requests)  # 1 once a request's row is written to the log
        self.attempt_files: list[str] = []
        self.request_files: list[str] = []
        self.requests_written = 0
        self.pa, self.pq = _arrow()

    def flush_attempts(self, final: bool) -> None:
        """Write the attempts before the watermark (all of them when ``final``), if enough."""
        log = self.log
        held = log.held()
        if final:
            cut = held
        else:
            requests = log.held_requests()
            unfinished = np.frombuffer(self.done, dtype=np.uint8)[requests] == 0
            cut = int(unfinished.argmax()) if unfinished.any() else held
            if cut < max(1, self.chunk_rows // 2):  # too few yet: look again a bit later
                self.next_check = held + max(1, self.chunk_rows // 2)
                return
        if cut:
            name = f"attempts-{len(self.attempt_files):06d}.parquet"
            tables = {
                "models": log.models.values,
                "attempt_error_kinds": log.kinds.values,
                "attempt_messages": log.messages.values,
            }
            self._write(name, log.hand_over(cut), tables)
            self.attempt_files.append(name)
        self.next_check = log.held() + self.chunk_rows

    def flush_requests(self, requests: RequestLog) -> None:
        if not len(requests):
            return
        raw, extras = requests.hand_over()
        n = len(raw["index"])
        columns: dict[str, Any] = dict(raw)
        blobs: list[bytes | None] = [None] * n
        for row, extra in extras.items():
            blobs[row] = _pickled(extra)
        columns[_EXTRA] = self.pa.array(blobs, type=self.pa.binary())
        name = f"requests-{len(self.request_files):06d}.parquet"
        tables = {
            "models": requests.models.values,
            "request_error_kinds": requests.kinds.values,
            "request_messages": requests.messages.values,
        }
        self._write(name, columns, tables)
        self.request_files.append(name)
        self.requests_written += n

    def _write(self, name: str, columns: Mapping[str, Any], tables: Mapping[str, Any]) -> None:
        """One chunk, with the code tables that decode it; written whole or not at all under
        its name (a run killed while writing leaves a ``.part`` file)."""
        table = self.pa.table(dict(columns))
        metadata = {_spilled.TABLES_KEY: json.dumps(dict(tables), ensure_ascii=False).encode()}
        table = table.replace_schema_metadata(metadata)
        part = self.folder / (name + ".part")
        self.pq.write_table(table, part)
        os.replace(part, self.folder / name)

    def write_ids(self, ids: Sequence[Any]) -> None:
        """The request ids, at the start: a run killed on the way still has them."""
        pa = self.pa
        integers = isinstance(ids, np.ndarray) and ids.dtype.kind == "i"
        if integers or all(type(v) is int for v in ids):
            column = pa.array(ids, type=pa.int64())
        else:
            column = pa.array([str(v) for v in ids], type=pa.string())
        with interrupts_held():
            self.pq.write_table(pa.table({"id": column}), self.folder / _IDS_FILE)

    def finish(self, run: RunState, requests: SpillingRequestLog, ids: Sequence[Any]) -> SpilledRun:
        log = self.log
        self.flush_attempts(final=True)
        self.flush_requests(requests)
        token = uuid.uuid4().hex
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "token": token,
            "strategy": run.strategy,
            "seed": run.seed,
            "engine": run.engine.name,
            "attempts": len(log),
            "requests": self.requests_written,
            "attempt_files": self.attempt_files,
            "request_files": self.request_files,
            "models": list(log.models.values),
            "attempt_error_kinds": list(log.kinds.values),
            "attempt_messages": list(log.messages.values),
            "queues": log.service is not None,  # the attempts' service starts were written
            "request_error_kinds": list(requests.kinds.values),
            "request_messages": list(requests.messages.values),
        }
        path = self.folder / _RUN_FILE
        path.write_text(json.dumps(meta, ensure_ascii=False) + "\n", encoding="utf-8")
        return SpilledRun(self.folder, token, run.strategy, len(log), self.requests_written)


def _pickled(extra: Mapping[str, Any]) -> bytes:
    try:
        return pickle.dumps(dict(extra), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        for key, value in extra.items():
            try:
                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                raise ArgumentTypeError(
                    f"column {key!r} holds a {type(value).__name__} that cannot be written to the "
                    f"spill folder ({type(error).__name__}: {error}); metadata and evidence "
                    "values of a spilling run must be picklable"
                ) from error
        raise


# -- reading --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpilledRun:
    """One run's records in a spill folder, read on demand."""

    folder: Path
    token: str
    strategy: str
    n_attempts: int
    n_requests: int

    def _meta(self) -> dict[str, Any]:
        path = self.folder / _RUN_FILE
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = None
        if not isinstance(meta, dict) or meta.get("token") != self.token:
            raise SykitError(
                f"the spill folder {str(self.folder)!r} no longer holds this run's records (a "
                "later run wrote there, or they were removed); run again, or give each run its "
                "own spill folder"
            )
        return meta

    def _ids(self) -> Any:
        pa, pq = _arrow()
        column = pq.read_table(self.folder / _IDS_FILE).column("id")
        if pa.types.is_integer(column.type):
            return column.to_numpy()
        return column.to_pylist()

    def _columns(self, files: Sequence[str], names: Sequence[str] | None = None) -> dict[str, Any]:
        """The chunks' columns, concatenated in the order they were written."""
        _, pq = _arrow()
        parts: dict[str, list[Any]] = {}
        for name in files:
            table = pq.read_table(self.folder / name, columns=names)
            for column in table.column_names:
                parts.setdefault(column, []).append(table.column(column))
        return parts

    def _raw(self, files: Sequence[str], fields: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """Each field as one array (``(name, type code)``), read a column at a time: the Arrow
        copy of one column is all that reading holds beside the arrays, never the whole file."""
        _, pq = _arrow()
        readers = [pq.ParquetFile(self.folder / name) for name in files]
        present = [set(reader.schema_arrow.names) for reader in readers]
        raw: dict[str, Any] = {}
        for name, code in fields:
            chunks = [
                reader.read(columns=[name]).column(name)
                for reader, names in zip(readers, present, strict=True)
                if name in names
            ]
            raw[name] = concat_frames(chunks, code)
        return raw

    def attempts(self) -> pd.DataFrame:
        meta = self._meta()
        fields = list(_ATTEMPT_DTYPES.items())
        if meta.get("queues"):  # a model declared a capacity: the frame has queue_s
            fields.append((SERVICE_FIELD, "d"))
        raw = self._raw(meta["attempt_files"], fields)
        ids = self._ids()
        # Only the attempts of requests that have a row, as in memory (all of them unless the
        # run was interrupted).
        finished = self._columns(meta["request_files"], ["index"]).get("index", [])
        keep = np.zeros(len(ids), dtype=bool)
        keep[concat_frames(finished, "i").astype(np.int64)] = True
        return attempt_frame(
            raw,
            meta["models"],
            meta["attempt_error_kinds"],
            meta["attempt_messages"],
            self.strategy,
            ids,
            keep,
        )

    def requests(self) -> pd.DataFrame:
        meta = self._meta()
        raw = self._raw(meta["request_files"], RequestLog.FIELDS)
        extras: dict[int, Any] = {}
        offset = 0
        for chunk in self._columns(meta["request_files"], [_EXTRA]).get(_EXTRA, []):
            valid = chunk.is_valid().to_numpy(zero_copy_only=False)
            for row in np.flatnonzero(valid):
                extras[offset + int(row)] = pickle.loads(chunk[int(row)].as_py())
            offset += len(chunk)
        return request_columns(
            raw,
            extras,
            meta["models"],
            meta["request_error_kinds"],
            meta["request_messages"],
            self.strategy,
            self._ids(),
        ).load()

    def request_errors(self) -> pd.DataFrame:
        """Only ``status``, ``error_kind`` and ``error_message`` of the requests, in request
        order: what the run's checks and reprs need, without reading the rest."""
        meta = self._meta()
        names = ["index", "status", "error_kind", "message"]
        parts = self._columns(meta["request_files"], names)
        codes = dict(RequestLog.FIELDS)
        raw = {name: concat_frames(parts.get(name, []), codes[name]) for name in names}
        order = np.argsort(raw["index"], kind="stable")
        return pd.DataFrame(
            {
                "status": categorical(raw["status"][order], [s.value for s in RequestStatus]),
                "error_kind": appearing(raw["error_kind"][order], meta["request_error_kinds"]),
                "error_message": appearing(raw["message"][order], meta["request_messages"]),
            }
        )


_ATTEMPT_DTYPES = dict(AttemptLog.RAW_FIELDS)


def concat_frames(chunks: list[Any], code: str) -> np.ndarray:
    dtype = np.dtype(code)
    if not chunks:
        return np.zeros(0, dtype)
    return np.concatenate([chunk.to_numpy() for chunk in chunks]).astype(dtype, copy=False)


@dataclass(frozen=True)
class SpilledFrame:
    """The ``attempts`` or ``requests`` frame of a spilled run, read when first used."""

    run: SpilledRun
    table: str

    @property
    def rows(self) -> int:
        return self.run.n_attempts if self.table == "attempts" else self.run.n_requests

    def load(self) -> pd.DataFrame:
        return self.run.attempts() if self.table == "attempts" else self.run.requests()

    def errors(self) -> pd.DataFrame:
        return self.run.request_errors()


def _recovered_frames(chunks: _spilled.Chunks) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (attempts, requests) frames of a folder's whole chunks (``Result.from_spill``): the
    finished requests' rows, and the attempts of those requests that were written."""
    tables = chunks.tables

    def table(key: str) -> list[str]:
        return list(tables.get(key, []))

    def raw(parts: list[Any], fields: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        return {
            name: concat_frames([t.column(name) for t in parts if name in t.column_names], code)
            for name, code in fields
        }

    attempt_fields = list(_ATTEMPT_DTYPES.items())
    if any(SERVICE_FIELD in t.column_names for t in chunks.attempts):
        attempt_fields.append((SERVICE_FIELD, "d"))
    request_raw = raw(chunks.requests, RequestLog.FIELDS)
    extras: dict[int, Any] = {}
    offset = 0
    for part in chunks.requests:
        if _EXTRA in part.column_names:
            column = part.column(_EXTRA)
            for row, blob in enumerate(column.to_pylist()):
                if blob is not None:
                    extras[offset + row] = pickle.loads(blob)
        offset += part.num_rows
    keep = np.zeros(len(chunks.ids), dtype=bool)
    keep[request_raw["index"].astype(np.int64)] = True
    attempts = attempt_frame(
        raw(chunks.attempts, attempt_fields),
        table("models"),
        table("attempt_error_kinds"),
        table("attempt_messages"),
        chunks.strategy,
        chunks.ids,
        keep,
    )
    requests = request_columns(
        request_raw,
        extras,
        table("models"),
        table("request_error_kinds"),
        table("request_messages"),
        chunks.strategy,
        chunks.ids,
    ).load()
    return attempts, requests


_spilled.register(_recovered_frames)
