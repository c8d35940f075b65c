"""Your own agent logs as sessions, to replay them against routing strategies.

A transcript is JSONL: one LLM call per line, in the order the agent made them, each line a JSON
object with

- ``messages`` (required): the full prompt of that call, OpenAI chat format;
- ``session_id`` (optional): the session the call belongs to; without it, the file's name (its
  stem) is the session, so one file holds one session;
- ``timestamp`` (optional): when the call was sent, in seconds (e.g. epoch seconds), and
  ``end_timestamp`` (optional): when its answer arrived. The pause before a turn is the time from
  the previous call's end to this call's start; when the previous call has no end time, from its
  start (which then also counts the previous call's latency). Either every call of a session has
  a timestamp or none has; without them every pause is ``gap_s``;
- ``usage`` (optional): ``prompt_tokens`` becomes the request's ``input_tokens`` (else it is
  estimated from the text); ``completion_tokens`` and ``prompt_tokens_details.cached_tokens`` go
  into metadata as ``completion_tokens`` and ``cached_tokens``;
- ``tools`` (optional): the tool definitions sent with the call.

Any other key of a line is kept in the request's metadata under its own name, and
``transcript_line`` (``"<file name>:<line>"``) says where each turn came from. Turns follow file
order within a session (files in the order given, a folder's ``*.jsonl`` files in name order).
Blank lines are skipped. Bad input stops the load with one :class:`~sykit.ArgumentError` naming the
file, the line and the session, rather than replaying a log that is not what was recorded.

``format="mini-swe-agent"`` reads mini-swe-agent's ``*.traj.json`` trajectories instead, one
session each, their text actions turned into structured tool calls (:mod:`._text_actions`).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request
from sykit._world.sessions import _RESERVED as _SESSION_KEYS
from sykit._world.sessions import Session, Turn, _check_gap
from sykit.sessions._text_actions import action_pattern, trajectory_calls

__all__ = ["load_transcripts"]

_KNOWN = frozenset(("messages", "session_id", "timestamp", "end_timestamp", "usage", "tools"))
#: metadata keys sykit sets on session turns, or this loader sets from ``usage``.
_RESERVED = frozenset((*_SESSION_KEYS, "completion_tokens", "cached_tokens", "transcript_line"))

PathLike = str | os.PathLike[str]
#: The formats ``load_transcripts`` reads, and the files it takes from a folder for each.
FORMATS = {"jsonl": "*.jsonl", "mini-swe-agent": "**/*.traj.json"}


@dataclass(frozen=True)
class _Call:
    """One parsed line, and where it came from."""

    where: str  # "<file>, line <n>"
    request: Request
    timestamp: float | None
    end: float | None


def load_transcripts(
    paths: PathLike | Sequence[PathLike],
    *,
    gap_s: Any = 0.0,
    format: str = "jsonl",
    action_regex: str | None = None,
) -> list[Session]:
    """The sessions in JSONL transcripts: one path, a list of paths, or a folder (its
    ``*.jsonl`` files in name order); sessions in the order they first appear.

    ``gap_s`` is the pause before each later turn of a session whose calls carry no timestamps
    (seconds, or a distribution such as ``sy.dists.LogNormal(8.4, p95=16)``).

    ``format="mini-swe-agent"`` reads mini-swe-agent trajectories (``*.traj.json``; a folder's
    in path order, subfolders included), one session each, named by ``instance_id`` or else the
    file. Each action the agent wrote as a fenced bash block becomes a ``bash`` tool call with a
    ``command`` argument, and the message answering it that call's ``tool`` result, so the stage
    router reads them as it reads structured calls. An answer with no block, or several, runs
    nothing in mini-swe-agent and gets no call here. ``action_regex`` (one group: the command)
    overrides the regex the trajectory records, else ``r"```bash\\s*\\n(.*?)\\n```"``."""
    try:
        _check_gap(gap_s)
    except (ArgumentError, ArgumentTypeError) as exc:
        raise ArgumentError(str(exc)) from None
    if format not in FORMATS:
        raise ArgumentError(f"format must be one of {list(FORMATS)}, got {format!r}")
    if format == "mini-swe-agent":
        pattern = None if action_regex is None else action_pattern(action_regex)
        return _trajectories(_files(paths, FORMATS[format]), pattern, gap_s)
    if action_regex is not None:
        raise ArgumentError(
            "action_regex applies to format='mini-swe-agent', whose actions are text; "
            "JSONL transcripts carry structured tool calls"
        )
    files = _files(paths, FORMATS[format])
    sessions: dict[str | int, list[_Call]] = {}
    stems: dict[str, Path] = {}
    named: dict[str | int, Path] = {}
    for path in files:
        used = _read(path, sessions, stems, named)
        if not used:
            raise ArgumentError(
                f"{path}: the file holds no calls, so session {path.stem!r} has no turns"
            )
    return _sessions(sessions, gap_s)


def _sessions(sessions: dict[str | int, list[_Call]], gap_s: Any) -> list[Session]:
    """The sessions, once each: ids that read alike (``1`` and ``"1"``) would give their turns
    the same request ids (``"1#0"``) and the same rows in every frame."""
    seen: dict[str, str | int] = {}
    for sid, calls in sessions.items():
        other = seen.setdefault(str(sid), sid)
        if other != sid or type(other) is not type(sid):
            raise ArgumentError(
                f"{calls[0].where}: session {sid!r} and session {other!r} "
                f"({sessions[other][0].where}) read the same, so their turns would share "
                f"request ids ('{sid}#0'); give them ids that differ as text"
            )
    return [_session(sid, calls, gap_s) for sid, calls in sessions.items()]


def _trajectories(files: list[Path], pattern: re.Pattern[str] | None, gap_s: Any) -> list[Session]:
    """One session per mini-swe-agent trajectory file."""
    sessions: dict[str | int, list[_Call]] = {}
    first: dict[str | int, Path] = {}
    for path in files:
        sid, calls = trajectory_calls(path, pattern)
        if sid in first:
            raise ArgumentError(
                f"{path}: {first[sid]} also holds session {sid!r}; a trajectory is a whole "
                "session, so give each file its own instance_id or name"
            )
        first[sid] = path
        sessions[sid] = [_call(line, where, origin) for where, origin, line in calls]
    return _sessions(sessions, gap_s)


def _files(paths: Any, pattern: str = "*.jsonl") -> list[Path]:
    """The transcript files named by ``paths`` (a folder's matching ``pattern``), each once."""
    if isinstance(paths, str | os.PathLike):
        given = [paths]
    elif isinstance(paths, Sequence) and not isinstance(paths, bytes):
        given = list(paths)
        if not given:
            raise ArgumentError(
                "paths is empty: give a transcript file, a list of them or a folder"
            )
    else:
        raise ArgumentTypeError(
            f"paths must be a path, a list of paths or a folder, got {type(paths).__name__}"
        )
    files: list[Path] = []
    for item in given:
        if not isinstance(item, str | os.PathLike):
            raise ArgumentTypeError(f"paths must hold paths, got {type(item).__name__}")
        path = Path(item)
        if path.is_dir():
            found = sorted(path.glob(pattern), key=lambda p: p.relative_to(path).parts)
            if not found:
                raise ArgumentError(
                    f"{path}: the folder holds no {pattern.removeprefix('**/')} file"
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ArgumentError(f"{path}: no such file or folder")
    seen: set[Path] = set()
    for path in files:
        if path.resolve() in seen:
            raise ArgumentError(f"{path} is given twice; its calls would be replayed twice")
        seen.add(path.resolve())
    return files


def _read(
    path: Path,
    sessions: dict[str | int, list[_Call]],
    stems: dict[str, Path],
    named: dict[str | int, Path],
) -> int:
    """Add the calls of one file to ``sessions``; how many there were. ``stems`` and ``named``
    record the file that first gave each session id by its name and by ``session_id``: a file
    named after a session another file names is two sessions merged by accident."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ArgumentError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    count = 0
    # JSON strings may hold U+2028 and other characters str.splitlines() would split at
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ArgumentError(
                f"{where} (session unknown): not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(data, dict):
            raise ArgumentError(
                f"{where} (session unknown): expected a JSON object, got {type(data).__name__}"
            )
        sid = data.get("session_id", path.stem)
        if isinstance(sid, bool) or not isinstance(sid, str | int):
            raise ArgumentError(f"{where}: session_id must be a string or an integer, got {sid!r}")
        if "session_id" not in data:
            other = stems.setdefault(path.stem, path)
            if other != path:
                raise ArgumentError(
                    f"{where} (session {sid!r}): {other} also names its session {sid!r}; "
                    "rename a file or give session_id in its lines"
                )
            other = named.get(sid, path)
        else:
            named.setdefault(sid, path)
            other = stems.get(sid, path) if isinstance(sid, str) else path
        if other != path:
            raise ArgumentError(
                f"{where} (session {sid!r}): {other} names a session {sid!r} too, one by its "
                "file name and one by session_id; rename the file or give its lines a session_id"
            )
        where = f"{where} (session {sid!r})"
        call = _call(data, where, f"{path.name}:{number}")
        sessions.setdefault(sid, []).append(call)
        count += 1
    return count


def _call(data: dict[str, Any], where: str, origin: str) -> _Call:
    """One line as a request, with its times."""
    if "messages" not in data:
        raise ArgumentError(f"{where}: the line has no 'messages' (the prompt of the call)")
    messages = _messages(data["messages"], where)
    timestamp = _seconds(data, "timestamp", where)
    end = _seconds(data, "end_timestamp", where)
    if end is not None and (timestamp is None or end < timestamp):
        raise ArgumentError(
            f"{where}: end_timestamp {end} needs a timestamp no later than it, got {timestamp}"
        )
    metadata = {key: value for key, value in data.items() if key not in _KNOWN}
    clash = sorted(_RESERVED & metadata.keys())
    if clash:
        raise ArgumentError(
            f"{where}: key {clash[0]!r} is one sykit sets on each turn; rename it in the log"
        )
    metadata["transcript_line"] = origin
    usage = data.get("usage")
    input_tokens = None
    if usage is not None:
        if not isinstance(usage, dict):
            raise ArgumentError(f"{where}: usage must be an object, got {usage!r}")
        input_tokens = _count(usage, "prompt_tokens", where)
        completion = _count(usage, "completion_tokens", where)
        if completion is not None:
            metadata["completion_tokens"] = completion
        details = usage.get("prompt_tokens_details")
        if details is not None:
            if not isinstance(details, dict):
                raise ArgumentError(f"{where}: usage.prompt_tokens_details must be an object")
            cached = _count(details, "cached_tokens", where)
            if cached is not None:
                if input_tokens is not None and cached > input_tokens:
                    raise ArgumentError(
                        f"{where}: usage.prompt_tokens_details.cached_tokens {cached} is more "
                        f"than usage.prompt_tokens {input_tokens}; cached tokens are part of "
                        "the prompt, so it cannot exceed it"
                    )
                metadata["cached_tokens"] = cached
    try:
        request = Request(
            messages,
            tools=data.get("tools", ()),
            input_tokens=input_tokens,
            metadata=metadata,
        )
    except (ArgumentError, ArgumentTypeError) as exc:
        raise ArgumentError(f"{where}: {exc}") from None
    return _Call(where, request, timestamp, end)


def _messages(messages: Any, where: str) -> list[dict[str, Any]]:
    """The prompt's messages, checked: each a dict with a role; every tool result answers an
    earlier assistant tool call of the same prompt."""
    if not isinstance(messages, list) or not messages:
        raise ArgumentError(f"{where}: 'messages' must be a non-empty list of message objects")
    calls: set[Any] = set()
    checked = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ArgumentError(f"{where}: messages[{i}] must be an object with a 'role'")
        role = message["role"]
        if "content" not in message:
            if role != "assistant" or not message.get("tool_calls"):
                raise ArgumentError(f"{where}: messages[{i}] ({role}) has no 'content'")
            message = {**message, "content": None}  # the OpenAI format lets tool calls omit it
        content = message["content"]
        if not (
            isinstance(content, str)
            or (isinstance(content, list) and all(isinstance(part, dict) for part in content))
            or (content is None and role == "assistant")
        ):
            raise ArgumentError(
                f"{where}: messages[{i}] ({role}) has content {content!r:.80}; it must be text "
                "or a list of content-part objects (null only for an assistant message)"
            )
        if role == "assistant":
            tool_calls = message.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise ArgumentError(f"{where}: messages[{i}].tool_calls must be a list")
            for call in tool_calls:
                if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                    raise ArgumentError(f"{where}: messages[{i}] has a tool call without an 'id'")
                calls.add(call["id"])
        elif role == "tool":
            answered = message.get("tool_call_id")
            if not isinstance(answered, str) or answered not in calls:
                raise ArgumentError(
                    f"{where}: messages[{i}] is a tool result for tool_call_id {answered!r}, "
                    "which no earlier assistant tool call in this prompt has"
                )
        checked.append(message)
    return checked


def _seconds(data: dict[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    return check_real(
        value, f"{where}: {key}", expected="a number of seconds", type_error=ArgumentError
    )


def _count(data: Mapping[str, Any], key: str, where: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    return check_int(value, f"{where}: usage {key}", low=0, type_error=ArgumentError)


def _session(sid: str | int, calls: list[_Call], gap_s: Any) -> Session:
    """A session of ``calls``; pauses from their timestamps, else ``gap_s``."""
    timed = [call.timestamp is not None for call in calls]
    if any(timed) and not all(timed):
        odd = calls[timed.index(not timed[0])]
        raise ArgumentError(
            f"{odd.where}: {'no' if timed[0] else 'a'} timestamp, unlike the session's first "
            f"call ({calls[0].where}); give every call of a session a timestamp, or none"
        )
    turns = [Turn(calls[0].request)]
    for previous, call in itertools.pairwise(calls):
        since = previous.end if previous.end is not None else previous.timestamp
        if call.timestamp is None or since is None:  # untimed (a session is timed all or none)
            gap = gap_s
        else:
            gap = call.timestamp - since
            if gap < 0:
                what = "ended" if previous.end is not None else "was sent"
                raise ArgumentError(
                    f"{call.where}: timestamp {call.timestamp} is before the previous call "
                    f"of the session {what} ({since}, {previous.where}); turns must be in order"
                )
        try:
            turns.append(Turn(call.request, gap_s=gap))
        except (ArgumentError, ArgumentTypeError) as exc:
            raise ArgumentError(f"{call.where}: {exc}") from None
    return Session(turns, id=sid)
