"""The fake provider's HTTP/1.1 layer: reading requests off a connection and writing responses.

Standard library only (``asyncio`` streams), and just enough HTTP/1.1 for an OpenAI client:
keep-alive, ``Content-Length`` bodies, a response head with a reason phrase. It also tells the
server when the client has gone away mid-answer (:class:`Disconnected`) and lets a fault drop the
connection (:class:`Close`, :meth:`Connection.reset`), which is what the faults are made of.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections.abc import Mapping
from email.utils import formatdate
from typing import Any

from sykit.testing._record import ServedRequest

__all__ = ["Close", "Connection", "Disconnected", "head", "send_json", "send_raw"]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_HEADER_BYTES = 64 * 1024


class Disconnected(Exception):
    """The client went away while the server was answering."""


class Close(Exception):
    """The fault asks for the connection to be dropped now."""


class Connection:
    """One client connection: a buffer shared by the request parser and the disconnect watcher."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.buffer = bytearray()
        self.eof = False

    async def fill(self) -> None:
        try:
            data = await self.reader.read(65536)
        except (ConnectionError, OSError):
            data = b""
        if not data:
            self.eof = True
            raise Disconnected
        self.buffer += data

    async def watch(self) -> None:
        """Return when the client closes the connection (keeping any bytes it sends meanwhile)."""
        with contextlib.suppress(Disconnected):
            while True:
                await self.fill()

    async def read_request(self) -> tuple[str, str, dict[str, str], bytes] | None:
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > _MAX_HEADER_BYTES:
                raise Close
            try:
                await self.fill()
            except Disconnected:
                return None
        head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            raise Close from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        self.buffer = bytearray(rest)
        while len(self.buffer) < length:
            try:
                await self.fill()
            except Disconnected:
                return None
        body = bytes(self.buffer[:length])
        del self.buffer[:length]
        return method, target, headers, body

    async def write(self, data: bytes) -> None:
        if self.writer.is_closing():
            raise Disconnected
        self.writer.write(data)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError):
            raise Disconnected from None

    def reset(self) -> None:
        """Drop the connection with a TCP RST."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    def close(self) -> None:
        self.writer.close()


def head(
    status: int,
    content_type: str,
    length: int,
    keep_alive: bool,
    extra: Mapping[str, str] | None = None,
) -> bytes:
    """The status line and headers of a response with a ``Content-Length`` body."""
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {length}",
        f"Connection: {'keep-alive' if keep_alive else 'close'}",
    ]
    extra = extra or {}
    if not any(k.lower() == "date" for k in extra):
        lines.append(f"Date: {formatdate(usegmt=True)}")  # as every HTTP/1.1 origin server does
    lines += [f"{k}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def send_raw(
    conn: Connection,
    status: int,
    payload: bytes,
    *,
    keep_alive: bool,
    record: ServedRequest | None = None,
    extra: Mapping[str, str] | None = None,
) -> None:
    """Write a whole ``application/json`` response, noting its status and completion on ``record``."""
    if record is not None:
        record.status = status
    await conn.write(head(status, "application/json", len(payload), keep_alive, extra) + payload)
    if record is not None:
        record.completed = True


async def send_json(
    conn: Connection,
    status: int,
    data: Any,
    *,
    keep_alive: bool,
    record: ServedRequest | None = None,
    extra: Mapping[str, str] | None = None,
) -> None:
    """:func:`send_raw` with ``data`` encoded as JSON."""
    payload = json.dumps(data).encode()
    await send_raw(conn, status, payload, keep_alive=keep_alive, record=record, extra=extra)
