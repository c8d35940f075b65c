"""Delivering an answer on time: the complete JSON body, or the SSE stream token by token.

The latency model lives here: the first token at ``ttft`` after the request, then one every
``1 / tps`` s, the whole answer at ``ttft + tokens / tps``. So do the faults that break an answer
that has started (``cut-stream``, ``malformed-chunk``, ``no-done``, ``empty-stream``,
``no-content``, ``done-then-cut``), because they are about where in the body the server stops
or goes wrong.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sykit.testing._chat import tool_call as _tool_call
from sykit.testing._chat import usage as _usage
from sykit.testing._connection import Close, Connection, head, send_raw
from sykit.testing._record import ServedRequest

__all__ = ["complete", "stream"]


async def _pace(start: float, at: float) -> None:
    delay = start + at - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


def _real_time(start: float) -> Callable[[float], Awaitable[None]]:
    """The default pace: ``at`` seconds after ``start`` (loop time), whatever else is served."""

    async def until(at: float) -> None:
        await _pace(start, at)

    return until


async def complete(
    conn: Connection,
    record: ServedRequest,
    body: Mapping[str, Any],
    name: str,
    pieces: list[str],
    tool_call: str | None,
    ttft: float,
    tps: float,
    fault: str | None,
    keep_alive: bool,
    pace: Callable[[float], Awaitable[None]] | None = None,
) -> bool:
    """Write the whole chat completion once its last token is due (by ``pace``: seconds into an
    answer at full rate; real time by default, a model's shared rate when it has a capacity)."""
    if pace is None:
        pace = _real_time(asyncio.get_running_loop().time())
    await pace(ttft + len(pieces) / tps)
    text = "".join(pieces)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_call is not None:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [_tool_call(tool_call, text)],
        }
    data = {
        "id": f"chatcmpl-fake-{record.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": _usage(body, len(pieces)),
    }
    payload = json.dumps(data).encode()
    if fault == "malformed-chunk":
        payload = payload[: len(payload) // 2]
    if fault == "cut-stream":
        response_head = head(200, "application/json", len(payload), keep_alive)
        record.status = 200
        await conn.write(response_head + payload[: len(payload) // 2])
        conn.close()
        raise Close
    await send_raw(conn, 200, payload, keep_alive=keep_alive, record=record)
    record.tokens_sent = len(pieces)
    return True


async def stream(
    conn: Connection,
    record: ServedRequest,
    body: Mapping[str, Any],
    name: str,
    pieces: list[str],
    tool_call: str | None,
    ttft: float,
    tps: float,
    fault: str | None,
    fault_after: int | None = None,
    pace: Callable[[float], Awaitable[None]] | None = None,
) -> bool:
    """Stream the answer as server-sent events over a chunked body, each token when it is due
    (by ``pace``, as for :func:`complete`); ``cut-stream`` and ``malformed-chunk`` break it after
    ``fault_after`` tokens when given."""
    if pace is None:
        pace = _real_time(asyncio.get_running_loop().time())
    record.status = 200
    response_head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
    )
    base = {
        "id": f"chatcmpl-fake-{record.index}",
        "object": "chat.completion.chunk",
        "model": name,
    }

    def event(payload: Any) -> bytes:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        line = f"data: {data}\n\n".encode()
        return f"{len(line):x}\r\n".encode() + line + b"\r\n"

    role = {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    await conn.write(response_head + event(role))
    if fault in ("empty-stream", "no-content"):
        await pace(ttft)
        if fault == "no-content":
            await conn.write(event("[DONE]") + b"0\r\n\r\n")
            return True
        await conn.write(event("[DONE]"))
        conn.close()
        raise Close
    cut_at = broken_at = None
    if fault == "cut-stream":
        cut_at = max(1, len(pieces) // 2) if fault_after is None else fault_after
    if fault == "malformed-chunk":
        broken_at = min(2 if fault_after is None else fault_after, len(pieces) - 1)
    for i, piece in enumerate(pieces):
        await pace(ttft + i / tps)
        if cut_at is not None and i >= cut_at:
            conn.close()
            raise Close
        if broken_at is not None and i >= broken_at:
            await conn.write(event('{"id": "chatcmpl-fake", "choices": [{"delta": {"content'))
            await conn.write(b"0\r\n\r\n")
            return True
        if tool_call is not None:
            delta: dict[str, Any] = {
                "tool_calls": [
                    {
                        "index": 0,
                        **({"id": "call_0", "type": "function"} if i == 0 else {}),
                        "function": {"name": tool_call, "arguments": piece}
                        if i == 0
                        else {"arguments": piece},
                    }
                ]
            }
        else:
            delta = {"content": piece}
        await conn.write(event({**base, "choices": [{"index": 0, "delta": delta}]}))
        record.tokens_sent = i + 1
    await pace(ttft + len(pieces) / tps)
    finish = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    tail = event(finish)
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        tail += event({**base, "choices": [], "usage": _usage(body, len(pieces))})
    if fault != "no-done":
        tail += event("[DONE]")
    if fault == "done-then-cut":
        await conn.write(tail)
        conn.close()
        raise Close
    await conn.write(tail + b"0\r\n\r\n")
    record.completed = True
    return True
