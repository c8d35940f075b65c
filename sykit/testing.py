"""A loopback OpenAI-compatible server that injects provider faults, for tests and demos.

``FakeProvider`` is a real HTTP/1.1 server on 127.0.0.1 (standard library only: ``asyncio`` in a
background thread), so an algorithm runs through :class:`sykit.HttpHost` exactly as it would
against a provider, sockets and all. The model name picks the behaviour::

    with sy.testing.FakeProvider({"fast": FakeModel(ttft_s=0.01, tokens_per_s=800)}) as fake:
        host = sy.HttpHost(fake.base_url, models=["fast", "fail-429-once", "cut-stream"])
        res = sy.run(algo, requests, host=host)
        fake.requests        # what the server saw: model, fault, status, disconnected, ...

Fault names (the catalogue of :data:`FAULTS`) can be used directly as model names, or given to a
configured model with ``FakeModel(fault=...)``. A ``-once`` suffix (``"fail-500-once"``) fails only
the first request to that model, ``-x<N>`` the first N. Counters (and latency draws) are per model
and per run: ``HttpHost`` marks each run's requests with an ``X-Sykit-Run`` header, so every
strategy of a ``sy.compare`` meets the same sequence; :meth:`FakeProvider.reset` clears them for
other clients. Any other model name is a healthy model with the provider's default latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import socket
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._dists import Distribution, as_distribution
from ._rng import uniforms

__all__ = ["FAULTS", "FakeModel", "FakeProvider", "ServedRequest"]

#: The built-in faults, by name: what the server does when a request selects one.
FAULTS: Mapping[str, str] = {
    "fail-429": "429 rate_limit_exceeded with a Retry-After header",
    "fail-<status>": "that status (500, 502, 503, 403, ...) with an OpenAI-style error body",
    "reset": "reads the request, then resets the connection (TCP RST)",
    "no-response": "reads the request, then closes the connection without answering",
    "hang": "reads the request and never answers (until the client gives up)",
    "slow-first-token": "answers normally, but the first token comes after FakeProvider.slow_s",
    "cut-stream": "stops half-way through the answer and closes the connection",
    "malformed-chunk": "streams a few tokens, then a chunk that is not JSON",
    "no-done": "streams the whole answer with finish_reason and usage, but no data: [DONE]",
    "malformed-json": "200 with a truncated JSON body",
    "not-chat": "200 with valid JSON that is not a chat completion",
    "bad-verdict": "200 whose message is prose, not the JSON verdict a decision asks for",
    "vision-400": "400: the model does not support image input (a capability rejection)",
    "overflow-400": "400 context_length_exceeded",
    "policy-400": "400 content_policy_violation",
}

_PLAIN_FAULTS = frozenset(k for k in FAULTS if "<" not in k)
_SPEC = re.compile(r"^(?P<base>.+?)(?:-(?P<once>once)|-x(?P<times>\d+))?$")
_STATUS_FAULT = re.compile(r"^fail-(?P<status>[1-5]\d\d)$")
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
_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")
_MAX_HEADER_BYTES = 64 * 1024


def _parse_fault(spec: str | None, what: str) -> tuple[str | None, int | None]:
    """``"fail-500-once"`` → ``("fail-500", 1)``; ``"reset"`` → ``("reset", None)`` (always)."""
    if spec is None:
        return None, None
    if not isinstance(spec, str) or not spec:
        raise TypeError(f"{what} must be a fault name (str) or None, got {spec!r}")
    for candidate, times in _fault_candidates(spec):
        if candidate in _PLAIN_FAULTS or _STATUS_FAULT.match(candidate):
            return candidate, times
    known = ", ".join(sorted(_PLAIN_FAULTS))
    raise ValueError(
        f"{what}: unknown fault {spec!r}; known faults: {known}, fail-<status> "
        "(each optionally with -once or -x<N>)"
    )


def _fault_candidates(name: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = [(name, None)]
    match = _SPEC.match(name)
    if match and (match["once"] or match["times"]):
        out.append((match["base"], 1 if match["once"] else int(match["times"])))
    return out


def _fault_of_name(name: str) -> tuple[str | None, int | None]:
    """The fault a bare model name selects, or (None, None) for a healthy model."""
    for candidate, times in _fault_candidates(name):
        if candidate in _PLAIN_FAULTS or _STATUS_FAULT.match(candidate):
            return candidate, times
    return None, None


@dataclass(frozen=True, kw_only=True)
class FakeModel:
    """How one fake model answers.

    Latency follows the simulated host's rule: the first token after ``ttft_s``, then one token
    every ``1 / tokens_per_s`` s, the answer complete at ``ttft_s + output_tokens / tokens_per_s``.
    Each may be a number or a distribution (``sy.LogNormal(0.05, p95=0.2)``), drawn per request
    from the provider's seed. ``fault`` is a name from :data:`FAULTS` (with ``-once`` / ``-x<N>``).
    ``vision=False`` rejects images with a capability 400, ``context_window`` rejects longer
    requests with an overflow 400. ``verdict`` fixes decision answers by question id (default:
    ``true``, the first option, the highest level).
    """

    ttft_s: float | Distribution = 0.01
    tokens_per_s: float | Distribution = 2000.0
    output_tokens: int | Distribution = 16
    fault: str | None = None
    retry_after_s: float | None = 0.05
    vision: bool = True
    context_window: int | None = None
    verdict: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ttft_s", as_distribution(self.ttft_s, "ttft_s"))
        tps = as_distribution(self.tokens_per_s, "tokens_per_s")
        if tps.quantile(0.5) <= 0:
            raise ValueError("tokens_per_s must be > 0")
        object.__setattr__(self, "tokens_per_s", tps)
        object.__setattr__(
            self, "output_tokens", as_distribution(self.output_tokens, "output_tokens")
        )
        fault, times = _parse_fault(self.fault, "fault")
        object.__setattr__(self, "_fault", fault)
        object.__setattr__(self, "_fault_times", times)
        if self.retry_after_s is not None and not (
            isinstance(self.retry_after_s, int | float) and self.retry_after_s >= 0
        ):
            raise ValueError(
                f"retry_after_s must be a number ≥ 0 or None, got {self.retry_after_s!r}"
            )
        if self.context_window is not None and (
            isinstance(self.context_window, bool)
            or not isinstance(self.context_window, int)
            or self.context_window <= 0
        ):
            raise ValueError(
                f"context_window must be an int > 0 or None, got {self.context_window!r}"
            )
        if not isinstance(self.verdict, Mapping):
            raise TypeError("verdict must be a dict of question id → answer")


@dataclass
class ServedRequest:
    """What the server saw of one request, filled in while it is served.

    ``disconnected`` is True when the client closed the connection before the response was complete
    (a cancelled call); ``completed`` when the whole response was written; ``closed_by_server``
    when a fault made the server drop the connection itself.
    """

    index: int
    model: str | None
    fault: str | None
    stream: bool
    body: Any = field(repr=False)
    started_at: float
    status: int | None = None
    tokens_sent: int = 0
    completed: bool = False
    disconnected: bool = False
    closed_by_server: bool = False
    ended_at: float | None = None
    authorized: bool = True


class _Disconnected(Exception):
    """The client went away while the server was answering."""


class _Close(Exception):
    """The fault asks for the connection to be dropped now."""


class _Connection:
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
            raise _Disconnected
        self.buffer += data

    async def watch(self) -> None:
        """Return when the client closes the connection (keeping any bytes it sends meanwhile)."""
        with contextlib.suppress(_Disconnected):
            while True:
                await self.fill()

    async def read_request(self) -> tuple[str, str, dict[str, str], bytes] | None:
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > _MAX_HEADER_BYTES:
                raise _Close
            try:
                await self.fill()
            except _Disconnected:
                return None
        head, _, rest = bytes(self.buffer).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            raise _Close from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        self.buffer = bytearray(rest)
        while len(self.buffer) < length:
            try:
                await self.fill()
            except _Disconnected:
                return None
        body = bytes(self.buffer[:length])
        del self.buffer[:length]
        return method, target, headers, body

    async def write(self, data: bytes) -> None:
        if self.writer.is_closing():
            raise _Disconnected
        self.writer.write(data)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError):
            raise _Disconnected from None

    def reset(self) -> None:
        """Drop the connection with a TCP RST."""
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    def close(self) -> None:
        self.writer.close()


def _error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _prompt_tokens(body: Mapping[str, Any]) -> int:
    chars = 0
    count = 0
    for message in body.get("messages") or ():
        count += 1
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "text":
                    chars += len(str(part.get("text", "")))
                elif isinstance(part, Mapping) and part.get("type") == "image_url":
                    chars += 765 * 4
    if body.get("tools"):
        chars += len(json.dumps(body["tools"]))
    return math.ceil(chars / 4) + 4 * count


def _has_images(body: Mapping[str, Any]) -> bool:
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(p, Mapping) and p.get("type") == "image_url" for p in content
        ):
            return True
    return False


def _fill_schema(schema: Any, verdict: Mapping[str, Any]) -> dict[str, Any]:
    """An answer object that satisfies a decision's JSON schema (booleans true, first options)."""
    answer: dict[str, Any] = {}
    properties = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    for name, prop in properties.items():
        if name in verdict:
            answer[name] = verdict[name]
        elif not isinstance(prop, Mapping):
            answer[name] = None
        elif "enum" in prop:
            options = list(prop["enum"])
            answer[name] = options[-1] if prop.get("type") == "integer" else options[0]
        elif prop.get("type") == "boolean":
            answer[name] = True
        elif prop.get("type") in ("integer", "number"):
            answer[name] = prop.get("maximum", 0)
        else:
            answer[name] = ""
    return answer


def _decision_schema(body: Mapping[str, Any]) -> tuple[str, Any] | None:
    """("json", schema) or ("tool:<name>", schema) when the request asks for a structured answer."""
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return "json", spec.get("schema", {}) if isinstance(spec, Mapping) else {}
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        name = choice["function"].get("name")
        for tool in body.get("tools") or ():
            function = tool.get("function") if isinstance(tool, Mapping) else None
            if isinstance(function, Mapping) and function.get("name") == name:
                return f"tool:{name}", function.get("parameters", {})
    return None


class FakeProvider:
    """A chat-completions server on 127.0.0.1 that streams with configured latency and injects faults.

        fake = sy.testing.FakeProvider({"small": FakeModel(ttft_s=0.02)}, api_key="sk-test").start()
        fake.base_url            # "http://127.0.0.1:<port>/v1"
        fake.requests            # [ServedRequest(...)], one per request, in arrival order
        fake.reset()             # forget requests and per-model counters
        fake.stop()

    ``models`` configures named models (others get ``default``, or the fault their name selects).
    ``api_key``, when set, is required as ``Authorization: Bearer``; a wrong key gets a 401 that
    echoes it, as some providers do. ``slow_s`` is the first-token delay of ``slow-first-token``.
    ``seed`` keys the latency draws (per model and request number, so runs repeat).
    """

    def __init__(
        self,
        models: Mapping[str, FakeModel] | None = None,
        *,
        default: FakeModel | None = None,
        api_key: str | None = None,
        slow_s: float = 1.0,
        seed: int = 0,
        port: int = 0,
    ) -> None:
        models = dict(models or {})
        for name, model in models.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"model names must be non-empty strings, got {name!r}")
            if not isinstance(model, FakeModel):
                raise TypeError(
                    f"models[{name!r}] must be a sy.testing.FakeModel, got {type(model).__name__}"
                )
        if default is not None and not isinstance(default, FakeModel):
            raise TypeError(f"default must be a FakeModel, got {type(default).__name__}")
        if isinstance(slow_s, bool) or not isinstance(slow_s, int | float) or slow_s < 0:
            raise ValueError(f"slow_s must be a number of seconds ≥ 0, got {slow_s!r}")
        self.models = models
        self.default = default or FakeModel()
        self._api_key = api_key
        self.slow_s = float(slow_s)
        self.seed = seed
        self._port = port
        self._lock = threading.Lock()
        self._records: list[ServedRequest] = []
        self._counters: dict[tuple[str, str], int] = {}
        self._open_connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._clock0 = time.monotonic()

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeProvider:
        """Start serving in a background thread; return self (for ``fake = FakeProvider().start()``)."""
        if self._thread is not None:
            raise RuntimeError("this FakeProvider is already running")
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=serve, name="sykit-fake-provider", daemon=True)
        thread.start()
        ready.wait()
        self._loop, self._thread = loop, thread
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", self._port), loop
        )
        self._server = future.result(timeout=10)
        return self

    def stop(self) -> None:
        """Close every connection and stop the server thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None
        self._server = None

    close = stop

    def __enter__(self) -> FakeProvider:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self._server is not None else "stopped"
        return f"FakeProvider({where}, models={list(self.models)!r})"

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- inspection ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the FakeProvider is not running; call start() or use `with`")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        """The URL to give ``sy.HttpHost`` (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[ServedRequest]:
        """Every request served since start (or the last reset), in arrival order."""
        with self._lock:
            return list(self._records)

    @property
    def open_connections(self) -> int:
        """Client connections currently open (0 after a client closed its pool)."""
        return self._open_connections

    def reset(self) -> None:
        """Forget the served requests and restart every per-model counter (``-once`` faults fail again)."""
        with self._lock:
            self._records.clear()
            self._counters.clear()

    def wait_idle(self, timeout: float = 5.0, *, connections: bool = False) -> None:
        """Wait until no request is being served (and, with ``connections=True``, none is open).

        Server-side bookkeeping lags the client by a loop turn; call this before reading
        ``requests`` after a run.
        """
        deadline = time.monotonic() + timeout
        while True:
            busy = any(r.ended_at is None for r in self.requests)
            if not busy and (not connections or self._open_connections == 0):
                return
            if time.monotonic() > deadline:
                what = "connections" if connections else "requests"
                raise TimeoutError(f"the FakeProvider still has open {what} after {timeout:g} s")
            time.sleep(0.005)

    def _now(self) -> float:
        return time.monotonic() - self._clock0

    # -- serving -------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._open_connections += 1
        conn = _Connection(reader, writer)
        try:
            while True:
                request = await conn.read_request()
                if request is None:
                    break
                if not await self._exchange(conn, *request):
                    break
        except (_Close, _Disconnected, ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            if not writer.is_closing():
                conn.close()
            self._open_connections -= 1
            self._tasks.discard(task)

    async def _exchange(
        self, conn: _Connection, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> bool:
        """Serve one request; return whether the connection stays open for the next one."""
        path = target.split("?", 1)[0].rstrip("/")
        keep_alive = headers.get("connection", "").lower() != "close"
        if method == "GET" and path in ("/v1/models", "/models"):
            names = list(self.models)
            data = {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
            await self._send_json(conn, 200, data, keep_alive=keep_alive)
            return keep_alive
        if path not in ("/v1/chat/completions", "/chat/completions"):
            body = _error_body(f"Unknown path {path!r}", "invalid_request_error", "not_found")
            await self._send_json(conn, 404, body, keep_alive=keep_alive)
            return keep_alive
        if method != "POST":
            body = _error_body("Use POST", "invalid_request_error", None)
            await self._send_json(conn, 405, body, keep_alive=keep_alive)
            return keep_alive
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        model_name = body.get("model") if isinstance(body, dict) else None
        record = self._record(body, model_name)
        watcher = asyncio.ensure_future(conn.watch())
        producer = asyncio.ensure_future(self._respond(conn, record, body, headers, keep_alive))
        try:
            done, _ = await asyncio.wait({watcher, producer}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            watcher.cancel()
            producer.cancel()
            await asyncio.gather(watcher, producer, return_exceptions=True)
            record.ended_at = self._now()
            raise
        if producer not in done:
            record.disconnected = True
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)
            record.ended_at = self._now()
            return False
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        record.ended_at = self._now()
        try:
            return producer.result() and keep_alive and not conn.eof
        except _Disconnected:
            record.disconnected = True
            return False
        except _Close:
            record.closed_by_server = True
            return False

    def _record(self, body: Any, model: Any) -> ServedRequest:
        with self._lock:
            record = ServedRequest(
                index=len(self._records),
                model=model if isinstance(model, str) else None,
                fault=None,
                stream=bool(body.get("stream")) if isinstance(body, dict) else False,
                body=body,
                started_at=self._now(),
            )
            self._records.append(record)
            return record

    def _next_number(self, model: tuple[str, str]) -> int:
        with self._lock:
            n = self._counters.get(model, 0)
            self._counters[model] = n + 1
            return n

    def _model(self, name: str) -> tuple[FakeModel, str | None, int | None]:
        configured = self.models.get(name)
        if configured is not None:
            return configured, configured._fault, configured._fault_times  # type: ignore[attr-defined]
        fault, times = _fault_of_name(name)
        return self.default, fault, times

    async def _respond(
        self,
        conn: _Connection,
        record: ServedRequest,
        body: Any,
        headers: Mapping[str, str],
        keep_alive: bool,
    ) -> bool:
        if self._api_key is not None:
            sent = headers.get("authorization", "")
            if sent != f"Bearer {self._api_key}":
                record.authorized = False
                shown = sent.removeprefix("Bearer ") or "(none)"
                error = _error_body(
                    f"Incorrect API key provided: {shown}.",
                    "invalid_request_error",
                    "invalid_api_key",
                )
                await self._send_json(conn, 401, error, keep_alive=keep_alive, record=record)
                return True
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            error = _error_body(
                "The request body must be a JSON object with 'model' and 'messages'.",
                "invalid_request_error",
                None,
            )
            await self._send_json(conn, 400, error, keep_alive=keep_alive, record=record)
            return True
        name = record.model
        if not name:
            error = _error_body(
                "You must provide a model parameter.", "invalid_request_error", None
            )
            await self._send_json(conn, 400, error, keep_alive=keep_alive, record=record)
            return True
        model, fault, times = self._model(name)
        n = self._next_number((headers.get("x-sykit-run", ""), name))
        if fault is not None and (times is None or n < times):
            record.fault = fault
        else:
            fault = None
        return await self._serve(conn, record, body, name, model, fault, n, keep_alive)

    async def _serve(
        self,
        conn: _Connection,
        record: ServedRequest,
        body: dict[str, Any],
        name: str,
        model: FakeModel,
        fault: str | None,
        n: int,
        keep_alive: bool,
    ) -> bool:
        status_fault = _STATUS_FAULT.match(fault or "")
        if status_fault:
            status = int(status_fault["status"])
            extra = {}
            if status == 429:
                error = _error_body(
                    f"Rate limit reached for {name}.", "requests", "rate_limit_exceeded"
                )
                if model.retry_after_s is not None:
                    extra["Retry-After"] = f"{model.retry_after_s:g}"
            else:
                error = _error_body(
                    "The server had an error while processing your request.", "server_error", None
                )
            await self._send_json(
                conn, status, error, keep_alive=keep_alive, record=record, extra=extra
            )
            return True
        if fault == "reset":
            conn.reset()
            raise _Close
        if fault == "no-response":
            conn.close()
            raise _Close
        if fault == "hang":
            await asyncio.Event().wait()
        rejection = self._rejection(name, model, body, fault)
        if rejection is not None:
            await self._send_json(conn, 400, rejection, keep_alive=keep_alive, record=record)
            return True
        if fault == "malformed-json":
            text = '{"id": "chatcmpl-fake", "object": "chat.completion", "choices": [{"mess'
            await self._send_raw(conn, 200, text.encode(), keep_alive=keep_alive, record=record)
            return True
        if fault == "not-chat":
            data = {"object": "list", "data": [{"id": name, "object": "model"}]}
            await self._send_json(conn, 200, data, keep_alive=keep_alive, record=record)
            return True
        u = uniforms(self.seed, "fake", name, n)
        ttft = self.slow_s if fault == "slow-first-token" else model.ttft_s.quantile(u[1])  # type: ignore[union-attr]
        tps = model.tokens_per_s.quantile(u[2])  # type: ignore[union-attr]
        content, tool_call = self._content(name, model, body, fault, u)
        if record.stream:
            return await self._stream(
                conn, record, body, name, content, tool_call, ttft, tps, fault
            )
        return await self._complete(
            conn, record, body, name, content, tool_call, ttft, tps, fault, keep_alive
        )

    def _rejection(
        self, name: str, model: FakeModel, body: Mapping[str, Any], fault: str | None
    ) -> dict[str, Any] | None:
        if fault == "vision-400" or (not model.vision and _has_images(body)):
            return _error_body(
                f"{name} does not support image input.", "invalid_request_error", None
            )
        requested = _prompt_tokens(body) + int(body.get("max_tokens") or 0)
        window = model.context_window
        if fault == "overflow-400" or (window is not None and requested > window):
            window = window or 4096
            return _error_body(
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{max(requested, window + 1)} tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                "context_length_exceeded",
            )
        if fault == "policy-400":
            return _error_body(
                "Your request was rejected as a result of our safety system.",
                "invalid_request_error",
                "content_policy_violation",
            )
        return None

    def _content(
        self,
        name: str,
        model: FakeModel,
        body: Mapping[str, Any],
        fault: str | None,
        u: tuple[float, ...],
    ) -> tuple[list[str], str | None]:
        """The answer as token pieces, and the tool name when the answer is a forced tool call."""
        structured = _decision_schema(body)
        if fault == "bad-verdict":
            return _pieces("Sure! The answer looks fine to me."), None
        if structured is not None:
            kind, schema = structured
            text = json.dumps(_fill_schema(schema, model.verdict))
            return _pieces(text), kind.removeprefix("tool:") if kind.startswith("tool:") else None
        n = max(1, round(model.output_tokens.quantile(u[3])))  # type: ignore[union-attr]
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(limit, int) and limit > 0:
            n = min(n, limit)
        return [_WORDS[i % len(_WORDS)] + " " for i in range(n)], None

    async def _pace(self, start: float, at: float) -> None:
        delay = start + at - asyncio.get_running_loop().time()
        if delay > 0:
            await asyncio.sleep(delay)

    async def _complete(
        self,
        conn: _Connection,
        record: ServedRequest,
        body: Mapping[str, Any],
        name: str,
        pieces: list[str],
        tool_call: str | None,
        ttft: float,
        tps: float,
        fault: str | None,
        keep_alive: bool,
    ) -> bool:
        start = asyncio.get_running_loop().time()
        await self._pace(start, ttft + len(pieces) / tps)
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
            head = self._head(200, "application/json", len(payload), keep_alive)
            record.status = 200
            await conn.write(head + payload[: len(payload) // 2])
            conn.close()
            raise _Close
        await self._send_raw(conn, 200, payload, keep_alive=keep_alive, record=record)
        record.tokens_sent = len(pieces)
        return True

    async def _stream(
        self,
        conn: _Connection,
        record: ServedRequest,
        body: Mapping[str, Any],
        name: str,
        pieces: list[str],
        tool_call: str | None,
        ttft: float,
        tps: float,
        fault: str | None,
    ) -> bool:
        loop = asyncio.get_running_loop()
        start = loop.time()
        record.status = 200
        head = (
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
        await conn.write(head + event(role))
        cut_at = len(pieces) // 2 if fault == "cut-stream" else None
        broken_at = min(2, len(pieces) - 1) if fault == "malformed-chunk" else None
        for i, piece in enumerate(pieces):
            await self._pace(start, ttft + i / tps)
            if cut_at is not None and i >= max(1, cut_at):
                conn.close()
                raise _Close
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
        await self._pace(start, ttft + len(pieces) / tps)
        finish = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        tail = event(finish)
        options = body.get("stream_options")
        if isinstance(options, Mapping) and options.get("include_usage"):
            tail += event({**base, "choices": [], "usage": _usage(body, len(pieces))})
        if fault != "no-done":
            tail += event("[DONE]")
        await conn.write(tail + b"0\r\n\r\n")
        record.completed = True
        return True

    # -- writing -------------------------------------------------------------------------------
    @staticmethod
    def _head(
        status: int,
        content_type: str,
        length: int,
        keep_alive: bool,
        extra: Mapping[str, str] | None = None,
    ) -> bytes:
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"Content-Type: {content_type}",
            f"Content-Length: {length}",
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
        ]
        lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send_raw(
        self,
        conn: _Connection,
        status: int,
        payload: bytes,
        *,
        keep_alive: bool,
        record: ServedRequest | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        if record is not None:
            record.status = status
        await conn.write(
            self._head(status, "application/json", len(payload), keep_alive, extra) + payload
        )
        if record is not None:
            record.completed = True

    async def _send_json(
        self,
        conn: _Connection,
        status: int,
        data: Any,
        *,
        keep_alive: bool,
        record: ServedRequest | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        payload = json.dumps(data).encode()
        await self._send_raw(
            conn, status, payload, keep_alive=keep_alive, record=record, extra=extra
        )


def _pieces(text: str) -> list[str]:
    """Split text into token-sized pieces of about four characters."""
    return [text[i : i + 4] for i in range(0, len(text), 4)] or [""]


def _tool_call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}


def _usage(body: Mapping[str, Any], completion: int) -> dict[str, int]:
    prompt = _prompt_tokens(body)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
