"""``FakeProvider``: the loopback server, its thread and event loop, and what it records.

It owns the lifecycle (a background thread running ``asyncio``), the bookkeeping tests read
(:class:`ServedRequest` records, per-run and per-model counters that make ``-once`` faults and
latency draws repeat), and the routing of one request: authorization, validation, which fault
applies. Framing lives in ``_connection``, answer content in ``_chat``, timing in ``_answers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from sykit._base.checks import check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._base.rng import uniforms
from sykit._hosts._openai_wire import not_chat_body
from sykit._world.faults import ErrorFault
from sykit.testing._answers import complete, stream
from sykit.testing._chat import answer_pieces, error_body, format_rejection, rejection
from sykit.testing._connection import Close, Connection, Disconnected, send_json, send_raw
from sykit.testing._faults import ERROR_FAULT, STATUS_FAULT, fault_of_name
from sykit.testing._model import FakeModel
from sykit.testing._record import ServedRequest
from sykit.testing._slots import Pace, Slots

__all__ = ["FakeProvider"]


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
                raise ArgumentTypeError(f"model names must be non-empty strings, got {name!r}")
            if not isinstance(model, FakeModel):
                raise ArgumentTypeError(
                    f"models[{name!r}] must be a sy.testing.FakeModel, got {type(model).__name__}"
                )
        if default is not None and not isinstance(default, FakeModel):
            raise ArgumentTypeError(f"default must be a FakeModel, got {type(default).__name__}")
        check_real(
            slow_s,
            "slow_s",
            low=0,
            allow_inf=True,
            expected="a number of seconds ≥ 0",
            type_error=ArgumentError,
        )
        self.models = models
        self.default = default or FakeModel()
        self._api_key = api_key
        self.slow_s = float(slow_s)
        self.seed = seed
        self._port = port
        self._lock = threading.Lock()
        self._records: list[ServedRequest] = []
        self._counters: dict[tuple[str, str], int] = {}
        self._origins: dict[str, float] = {}
        self._open_connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._slots: dict[str, Slots] = {}  # per model with a capacity, across runs
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
            self._origins.clear()

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
        conn = Connection(reader, writer)
        try:
            while True:
                request = await conn.read_request()
                if request is None:
                    break
                if not await self._exchange(conn, *request):
                    break
        except (Close, Disconnected, ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            if not writer.is_closing():
                conn.close()
            self._open_connections -= 1
            self._tasks.discard(task)

    async def _exchange(
        self, conn: Connection, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> bool:
        """Serve one request; return whether the connection stays open for the next one."""
        path = target.split("?", 1)[0].rstrip("/")
        keep_alive = headers.get("connection", "").lower() != "close"
        if method == "GET" and path in ("/v1/models", "/models"):
            names = list(self.models)
            data = {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
            await send_json(conn, 200, data, keep_alive=keep_alive)
            return keep_alive
        if path not in ("/v1/chat/completions", "/chat/completions"):
            unknown = error_body(f"Unknown path {path!r}", "invalid_request_error", "not_found")
            await send_json(conn, 404, unknown, keep_alive=keep_alive)
            return keep_alive
        if method != "POST":
            not_post = error_body("Use POST", "invalid_request_error", None)
            await send_json(conn, 405, not_post, keep_alive=keep_alive)
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
        except Disconnected:
            record.disconnected = True
            return False
        except Close:
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

    def _run_time(self, run: str) -> float:
        """Seconds since the first request of this run (the clock of outages and flapping)."""
        now = self._now()
        with self._lock:
            return now - self._origins.setdefault(run, now)

    def _model(self, name: str) -> tuple[FakeModel, str | None, int | None]:
        configured = self.models.get(name)
        if configured is not None:
            return configured, configured._fault, configured._fault_times
        fault, times = fault_of_name(name)
        return self.default, fault, times

    async def _respond(
        self,
        conn: Connection,
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
                error = error_body(
                    f"Incorrect API key provided: {shown}.",
                    "invalid_request_error",
                    "invalid_api_key",
                )
                await send_json(conn, 401, error, keep_alive=keep_alive, record=record)
                return True
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            error = error_body(
                "The request body must be a JSON object with 'model' and 'messages'.",
                "invalid_request_error",
                None,
            )
            await send_json(conn, 400, error, keep_alive=keep_alive, record=record)
            return True
        name = record.model
        if not name:
            error = error_body("You must provide a model parameter.", "invalid_request_error", None)
            await send_json(conn, 400, error, keep_alive=keep_alive, record=record)
            return True
        model, fault, times = self._model(name)
        run = headers.get("x-sykit-run", "")
        t = self._run_time(run)
        n = self._next_number((run, name))
        if fault is not None and (times is None or n < times):
            record.fault = fault
        else:
            fault = None
        down = model.down_status(t)
        return await self._serve(conn, record, body, name, model, fault, n, keep_alive, down)

    async def _serve(
        self,
        conn: Connection,
        record: ServedRequest,
        body: dict[str, Any],
        name: str,
        model: FakeModel,
        fault: str | None,
        n: int,
        keep_alive: bool,
        down: int | None = None,
    ) -> bool:
        error = _error_fault(model, fault)
        if error is not None:
            if error.p >= 1.0 or uniforms(self.seed, "fake", name, n)[0] < error.p:
                extra = {k.title(): v for k, v in error.headers().items()}
                await send_json(
                    conn, error.status, error.body(name), keep_alive=keep_alive, record=record,
                    extra=extra,
                )  # fmt: skip
                return True
            fault = record.fault = None  # this request is spared
        status_fault = STATUS_FAULT.match(fault or "")
        if status_fault:
            status = int(status_fault["status"])
            await self._fail(conn, record, name, model, status, keep_alive)
            return True
        if fault == "reset":
            conn.reset()
            raise Close
        if fault == "no-response":
            conn.close()
            raise Close
        if fault == "hang":
            await asyncio.Event().wait()
        unsupported = format_rejection(model, body)
        if unsupported is not None:
            status, rejected = unsupported
            await send_json(conn, status, rejected, keep_alive=keep_alive, record=record)
            return True
        refusal = rejection(name, model, body, fault)
        if refusal is not None:
            await send_json(conn, 400, refusal, keep_alive=keep_alive, record=record)
            return True
        if down is not None:
            record.fault = "outage" if down == 503 and model.outages else "flapping"
            await self._fail(conn, record, name, model, down, keep_alive)
            return True
        if fault == "malformed-json":
            text = '{"id": "chatcmpl-fake", "object": "chat.completion", "choices": [{"mess'
            await send_raw(conn, 200, text.encode(), keep_alive=keep_alive, record=record)
            return True
        if fault == "not-chat":
            await send_json(conn, 200, not_chat_body(name), keep_alive=keep_alive, record=record)
            return True
        u = uniforms(self.seed, "fake", name, n)
        ttft = self.slow_s if fault == "slow-first-token" else model.ttft_s.quantile(u[1])
        tps = model.tokens_per_s.quantile(u[2])
        content, tool_call = answer_pieces(name, model, body, fault, u)
        answer = functools.partial(
            self._answer, conn, record, body, name, model, content, tool_call, ttft, tps, fault,
            keep_alive,
        )  # fmt: skip
        if model.capacity is None:
            return await answer(None)
        slots = self._slots.get(name)
        if slots is None:
            slots = self._slots[name] = Slots(model.capacity)
        if slots.full:
            await self._overloaded(conn, record, name, model, keep_alive)
            return True
        loop = asyncio.get_running_loop()
        arrived = loop.time()
        await slots.acquire()
        try:
            start = loop.time()
            record.queue_s = start - arrived
            return await answer(slots.pace(start, ttft))
        finally:
            slots.release()

    async def _answer(
        self,
        conn: Connection,
        record: ServedRequest,
        body: dict[str, Any],
        name: str,
        model: FakeModel,
        content: list[str],
        tool_call: str | None,
        ttft: float,
        tps: float,
        fault: str | None,
        keep_alive: bool,
        pace: Pace | None,
    ) -> bool:
        if record.stream:
            return await stream(
                conn, record, body, name, content, tool_call, ttft, tps, fault,
                model.fault_after_tokens, pace,
            )  # fmt: skip
        return await complete(
            conn, record, body, name, content, tool_call, ttft, tps, fault, keep_alive, pace
        )

    async def _overloaded(
        self, conn: Connection, record: ServedRequest, name: str, model: FakeModel, keep_alive: bool
    ) -> None:
        """The answer of a model whose slots are busy and whose queue is full, as the simulated
        host gives it: ``reject_status`` (503 or 429) with code ``overloaded``."""
        capacity = model.capacity
        assert capacity is not None
        status = capacity.reject_status
        error = error_body(
            f"{name} is overloaded: its {capacity.slots} slots are busy and its queue of "
            f"{capacity.queue_limit} requests is full. Please try again later.",
            "requests" if status == 429 else "server_error",
            "overloaded",
        )
        record.fault = "overloaded"
        extra = (
            model.retry_after_headers(time.time()) if status in model.retry_after_statuses else {}
        )
        await send_json(conn, status, error, keep_alive=keep_alive, record=record, extra=extra)

    async def _fail(
        self,
        conn: Connection,
        record: ServedRequest,
        name: str,
        model: FakeModel,
        status: int,
        keep_alive: bool,
    ) -> None:
        """An error answer with ``status``: a rate limit or a server error, with Retry-After when
        the model sends one for that status."""
        if status == 429:
            error = error_body(f"Rate limit reached for {name}.", "requests", "rate_limit_exceeded")
        else:
            error = error_body(
                "The server had an error while processing your request.", "server_error", None
            )
        extra = {}
        if status in model.retry_after_statuses:
            now = time.time()
            if model.retry_after_as == "date" and now % 1.0 >= _DATE_LATEST:
                # into the next second: a client that reads the date against its own clock then
                # reads whole seconds one short of it, wherever the request fell in its second
                await asyncio.sleep(1.0 - now % 1.0)
                now = time.time()
            extra = model.retry_after_headers(now)
        await send_json(conn, status, error, keep_alive=keep_alive, record=record, extra=extra)


_DATE_LATEST = 0.9  # a Retry-After date leaves in the first 0.9 s of a second


def _error_fault(model: FakeModel, fault: str | None) -> ErrorFault | None:
    """The :class:`ErrorFault` a request meets: the model's own, or the one its name selects."""
    match = ERROR_FAULT.match(fault or "")
    if match is None:
        return None
    own = model._error
    if own is not None and fault == model._fault:
        return own
    return ErrorFault(int(match["status"]), 1.0)
