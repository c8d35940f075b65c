"""The HTTP host: each attempt is one request to an OpenAI-compatible ``/chat/completions`` endpoint.

Like the simulated host, it performs a single attempt and reports what the provider answered; the
driver's candidate loop does the retries, Retry-After waits, fallback, cooldown, classification and
records, so an algorithm behaves the same here as in simulation. Time is real: the run clock is the
event loop's, and an attempt's deadline is ``policy.timeout_s`` after it starts.

What an HTTP exchange becomes:

* a non-2xx answer → ``Reply(status, body, headers)``, classified by the shared :func:`classify`;
* no answer (connection refused, DNS failure, reset, closed without a response) →
  ``UnavailableError`` (retried, and a fallback reason);
* no answer before the deadline → ``ModelTimeout``;
* a 2xx that is not a usable completion (bad JSON, not chat-completions, a malformed chunk, an
  unparseable verdict) → ``InvalidResponseError`` (terminal);
* a stream that breaks after its first token → ``InvalidResponseError``: an answer that has started
  is not retried or sent elsewhere (billed per ``bill_cancelled`` for the tokens received). A stream
  that breaks before its first token → ``UnavailableError``.

Cancelling the awaiting task (a lost race, ``sy.timeout``, an abandoned call) closes the HTTP
request at once: httpx drops the connection of a response that was not read to the end.

This module is the transport, and the only one that imports httpx: the chat-completions wire
format (request bodies, responses, SSE streams, verdicts) is in ``_openai_wire``, and API-key
handling (reading, masking, scrubbing) in ``_secrets``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from sykit._base.checks import check_int, check_real
from sykit._base.errors import (
    ArgumentError,
    ArgumentTypeError,
    InvalidRequestError,
    InvalidResponseError,
    ModelTimeout,
    UnavailableError,
)
from sykit._base.vocab import Kind
from sykit._hosts._openai_wire import (
    ChatStream,
    Endpoint,
    StreamBroken,
    completion_reply,
    decision_body,
    format_rejection,
    model_body,
)
from sykit._hosts._secrets import (
    LogScrubber,
    Secret,
    env_key,
    raw_keys,
    read_key,
    redact_url,
    scrub,
    scrub_json,
    without_keys,
)
from sykit._hosts.base import Attempt, Reply
from sykit._world.config import HostPolicy, ModelProfile
from sykit._world.models import DecisionRequest, Request
from sykit._world.values import spelled

if TYPE_CHECKING:
    import httpx

    from sykit._base.types import Converted, converted

__all__ = ["HttpHost", "HttpModel"]

_DECISION_FORMATS = ("auto", "json_schema", "tool")

# Streamed tokens are counted as they arrive: "generated so far" is exactly what has been received.
#: How long a stream's body may stay open after ``data: [DONE]`` before the answer stands.
_AFTER_DONE_S = 1.0

_DNS_MARKERS = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "no address associated",
    "getaddrinfo failed",
    "name resolution",
    "errno -2]",
    "errno -3]",
    "errno -5]",
    "errno 8]",
    "errno 11001]",
)


def _check_url(url: object, name: str) -> str:
    """``url`` without a trailing slash; the errors show it with any credentials redacted."""
    import httpx  # loaded with the first HTTP host, not with sykit

    if not isinstance(url, str) or not url:
        raise ArgumentTypeError(
            f"{name} must be a URL string such as 'https://api.openai.com/v1', "
            f"got {redact_url(repr(url))}"
        )
    shown = repr(redact_url(url))
    try:
        parsed = httpx.URL(url)
    except Exception:
        raise ArgumentError(f"{name} is not a valid URL: {shown}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ArgumentError(f"{name} must be an http:// or https:// URL with a host, got {shown}")
    if parsed.userinfo:
        raise ArgumentError(
            f"{name} must not contain credentials, got {shown}; pass the key as api_key instead"
        )
    return url.rstrip("/")


@dataclass(frozen=True, kw_only=True)
class HttpModel:
    """One model of an :class:`HttpHost`, when it needs more than a price profile.

        sy.HttpModel(profile=sy.ModelProfile(price_in=0.15, price_out=0.6),
                     model_id="gpt-4o-mini", base_url="https://api.openai.com/v1",
                     api_key_env="OPENAI_API_KEY", extra_body={"temperature": 0})

    ``model_id`` is the upstream name (default: the sykit name); ``base_url``, ``api_key`` and
    ``api_key_env`` override the host's; ``extra_body`` is merged into every request body;
    ``stream`` overrides the host's streaming default for this model.
    """

    profile: ModelProfile | None = None
    model_id: str | None = None
    base_url: str | None = None
    if TYPE_CHECKING:  # __post_init__ wraps a given key in a Secret
        api_key: Converted[str | None, Secret | None] = converted(
            field(default=None, repr=False, compare=False)
        )
    else:
        api_key: str | None = field(default=None, repr=False, compare=False)
    api_key_env: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    stream: bool | None = None

    def __post_init__(self) -> None:
        try:
            # The key first, so that it is held (and masked) before any other value is checked.
            if self.api_key is not None:
                object.__setattr__(self, "api_key", read_key(self.api_key, None, "api_key"))
            self._check()
        except (ArgumentError, ArgumentTypeError) as err:
            failure = err
        else:
            return
        raise without_keys(failure, raw_keys(self.api_key))

    def _check(self) -> None:
        if self.profile is not None and not isinstance(self.profile, ModelProfile):
            raise ArgumentTypeError(
                f"profile must be a sy.ModelProfile or None, got {type(self.profile).__name__}"
            )
        if self.model_id is not None and (not isinstance(self.model_id, str) or not self.model_id):
            raise ArgumentTypeError(
                f"model_id must be a non-empty string or None, got {self.model_id!r}"
            )
        if self.base_url is not None:
            object.__setattr__(self, "base_url", _check_url(self.base_url, "base_url"))
        if not isinstance(self.extra_body, Mapping):
            raise ArgumentTypeError("extra_body must be a dict of request fields")
        if self.stream is not None and not isinstance(self.stream, bool):
            raise ArgumentTypeError("stream must be True, False or None")


@spelled
class HttpHost:
    """A host that sends every attempt to a real OpenAI-compatible chat-completions endpoint.

        host = sy.HttpHost("https://api.openai.com/v1", models={
            "mini": sy.ModelProfile(price_in=0.15, price_out=0.60),        # prices for cost_usd
            "4o": sy.HttpModel(profile=sy.ModelProfile(price_in=2.5, price_out=10),
                               model_id="gpt-4o"),
        }, policy=sy.HostPolicy(max_retries=1), timeout_s=30)
        res = sy.run(algo, requests, host=host)

    The key comes from ``api_key`` or the ``api_key_env`` environment variable (none: no
    ``Authorization`` header, as local servers expect); it must be printable ASCII. It is sent
    only as a Bearer header and is scrubbed from every error message and httpx log record. A key
    is never pickled: one from ``api_key_env`` pickles as the variable's name (read again when
    unpickled), one given as ``api_key`` makes pickling raise ``TypeError``. ``timeout_s`` is the
    per-attempt deadline (it replaces ``policy.timeout_s``). ``stream=True`` streams every model
    call (a request can ask with ``metadata={"stream": True}``); decision calls are never
    streamed.

    ``decision_format`` is how a judge is asked for its structured answer: a strict JSON schema
    (``"json_schema"``), a forced tool call (``"tool"``), or ``"auto"`` (the default): JSON schema
    until a model's server refuses it (llama.cpp's server answers 500 "Input should be 'text' or
    'json_object'"), then, for that model and the rest of the run, a tool call. The refused try is
    an ``invalid_request`` attempt row and the same call is sent again at once as a tool call (not
    a retry). Against servers that accept JSON schema, ``"auto"`` sends exactly what
    ``"json_schema"`` sends; the explicit ``"json_schema"`` fails on a refusal, at once and with
    what to set, instead of sending another request.
    """

    virtual = False

    def __init__(
        self,
        base_url: str | None = None,
        *,
        models: Mapping[str, ModelProfile | HttpModel | None] | Sequence[str],
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        policy: HostPolicy | None = None,
        timeout_s: float | None = None,
        stream: bool = False,
        decision_format: Literal["auto", "json_schema", "tool"] = "auto",
        connect_timeout_s: float = 10.0,
        max_connections: int = 256,
    ) -> None:
        try:
            self._setup(
                base_url,
                models,
                api_key,
                api_key_env,
                policy,
                timeout_s,
                stream,
                decision_format,
                connect_timeout_s,
                max_connections,
            )
        except (ArgumentError, ArgumentTypeError) as err:
            failure = err
        else:
            return
        # No error quotes a key: not the one held, nor a value shaped like one (a key passed as
        # base_url or timeout_s by mistake).
        held: list[object] = [api_key]
        if isinstance(api_key_env, str) and api_key_env:
            held.append(env_key(api_key_env))
        if isinstance(models, Mapping):
            for spec in models.values():
                if isinstance(spec, HttpModel):
                    held.append(spec.api_key)
                    if isinstance(spec.api_key_env, str) and spec.api_key_env:
                        held.append(env_key(spec.api_key_env))
        raise without_keys(failure, raw_keys(*held))

    def _setup(
        self,
        base_url: str | None,
        models: Mapping[str, ModelProfile | HttpModel | None] | Sequence[str],
        api_key: str | None,
        api_key_env: str | None,
        policy: HostPolicy | None,
        timeout_s: float | None,
        stream: bool,
        decision_format: Literal["auto", "json_schema", "tool"],
        connect_timeout_s: float,
        max_connections: int,
    ) -> None:
        self._api_key = read_key(api_key, api_key_env, "api_key")
        self.base_url = None if base_url is None else _check_url(base_url, "base_url")
        if policy is None:
            policy = HostPolicy()
        if not isinstance(policy, HostPolicy):
            raise ArgumentTypeError(f"policy must be a sy.HostPolicy, got {type(policy).__name__}")
        if timeout_s is not None:
            policy = policy.replace(timeout_s=timeout_s)
        self.policy = policy
        if not isinstance(stream, bool):
            raise ArgumentTypeError("stream must be True or False")
        if not isinstance(decision_format, str) or decision_format not in _DECISION_FORMATS:
            raise ArgumentError(
                f"decision_format must be 'auto', 'json_schema' or 'tool', got {decision_format!r}"
            )
        connect_timeout_s = check_real(
            connect_timeout_s,
            "connect_timeout_s",
            low=0,
            low_open=True,
            allow_inf=True,
            expected="a number > 0",
            type_error=ArgumentError,
        )
        max_connections = check_int(
            max_connections, "max_connections", low=1, type_error=ArgumentError
        )
        self.stream = stream
        self.decision_format: Literal["auto", "json_schema", "tool"] = decision_format
        self.connect_timeout_s = float(connect_timeout_s)
        self.max_connections = max_connections
        self._models = self._check_models(models)
        self.profiles: dict[str, ModelProfile] = {}
        self._endpoints: dict[str, Endpoint] = {}
        keys: dict[str, Secret] = {}
        if self._api_key is not None and not self._api_key.missing:
            keys[self._api_key.reveal()] = self._api_key
        for name, spec in self._models.items():
            endpoint, profile = self._resolve(name, spec)
            self._endpoints[name] = endpoint
            self.profiles[name] = profile
            if endpoint.key is not None and not endpoint.key.missing:
                keys.setdefault(endpoint.key.reveal(), endpoint.key)
        # Longest first, so a key that contains another is replaced whole. The Secrets themselves
        # (not copies) are kept, so that a pickled host carries only where each key came from.
        self._secrets = tuple(keys[k] for k in sorted(keys, key=len, reverse=True) if k)

    @staticmethod
    def _check_models(
        models: Mapping[str, ModelProfile | HttpModel | None] | Sequence[str],
    ) -> dict[str, ModelProfile | HttpModel | None]:
        if isinstance(models, str):
            raise ArgumentTypeError(
                "models must be a dict of name → profile (or a list of names), not a str"
            )
        if isinstance(models, Mapping):
            checked = dict(models)
        elif isinstance(models, Sequence):
            checked = dict.fromkeys(models)
        else:
            raise ArgumentTypeError(
                "models must be a dict of model name → sy.ModelProfile / sy.HttpModel / None, "
                f"got {type(models).__name__}"
            )
        if not checked:
            raise ArgumentError("models must name at least one model")
        for name, spec in checked.items():
            if not isinstance(name, str) or not name:
                raise ArgumentTypeError(f"model names must be non-empty strings, got {name!r}")
            if spec is not None and not isinstance(spec, ModelProfile | HttpModel):
                raise ArgumentTypeError(
                    f"models[{name!r}] must be a sy.ModelProfile, a sy.HttpModel or None, "
                    f"got {type(spec).__name__}"
                )
        return checked

    def _resolve(
        self, name: str, spec: ModelProfile | HttpModel | None
    ) -> tuple[Endpoint, ModelProfile]:
        config = spec if isinstance(spec, HttpModel) else HttpModel(profile=spec)
        base = config.base_url or self.base_url
        if base is None:
            raise ArgumentError(
                f"models[{name!r}] has no base_url and the host has none: give HttpHost(base_url, ...) "
                "or sy.HttpModel(base_url=...)"
            )
        key: Secret | None
        if config.api_key is not None:
            key = config.api_key
        elif config.api_key_env is not None:
            key = read_key(None, config.api_key_env, f"models[{name!r}].api_key")
        elif base == self.base_url:
            key = self._api_key
        else:
            key = None  # the host's key is for the host's server: never send it elsewhere
        endpoint = Endpoint(
            url=f"{base}/chat/completions",
            model_id=config.model_id or name,
            key=key,
            extra_body=dict(config.extra_body),
            stream=self.stream if config.stream is None else config.stream,
        )
        return endpoint, config.profile or ModelProfile()

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self.profiles)

    def replace(
        self,
        *,
        models: Mapping[str, ModelProfile | HttpModel | None] | None = None,
        policy: HostPolicy | None = None,
        stream: bool | None = None,
    ) -> HttpHost:
        """A copy with some settings changed (the key is kept)."""
        return HttpHost(
            self.base_url,
            models=self._models if models is None else models,
            api_key=self._api_key,  # type: ignore[arg-type]
            api_key_env=None,
            policy=self.policy if policy is None else policy,
            stream=self.stream if stream is None else stream,
            decision_format=self.decision_format,
            connect_timeout_s=self.connect_timeout_s,
            max_connections=self.max_connections,
        )

    def __repr__(self) -> str:
        key = "***" if self._api_key is not None else None
        return (
            f"HttpHost({self.base_url!r}, models={list(self.profiles)!r}, api_key={key}, "
            f"stream={self.stream}, policy={self.policy!r})"
        )

    def open(self, seed: int) -> _HttpSession:
        for endpoint in self._endpoints.values():
            if endpoint.key is not None and endpoint.key.missing:
                raise ArgumentError(endpoint.key.missing_message())
        return _HttpSession(self)

    def scrub(self, text: str) -> str:
        """``text`` with every API key this host holds replaced by ``***``."""
        return scrub(text, self._secrets)


class _Clock:
    """The run clock during one attempt: the attempt's row started at ``start_s`` on it, just now."""

    __slots__ = ("loop", "start_s", "t0")

    def __init__(self, loop: asyncio.AbstractEventLoop, start_s: float) -> None:
        self.loop = loop
        self.t0 = loop.time()
        self.start_s = start_s

    def elapsed(self) -> float:
        return self.loop.time() - self.t0

    def now(self) -> float:
        return self.start_s + self.elapsed()


class _SseReader:
    """A streamed body read token by token: an HTTP host's live stream (see ``LiveStream``).

    ``next()`` reads on to the next token and returns its text, or, once the stream is over,
    the attempt's Reply (served, broken, cut or past its deadline), closing the connection."""

    def __init__(
        self,
        session: _HttpSession,
        attempt: Attempt,
        response: httpx.Response,
        held: contextlib.AsyncExitStack,
        clock: _Clock,
    ) -> None:
        self.session = session
        self.attempt = attempt
        self.held = held
        self.clock = clock
        self.sse = ChatStream()
        # httpx types aiter_lines() as an AsyncIterator; it is an async generator (aclose below)
        self.lines = cast("AsyncGenerator[str, None]", response.aiter_lines())
        self.ttft: float | None = None
        self.first = ""
        self.closed = False
        # Within its exchange, the exchange's timeout bounds every read; a stream handed over to
        # the caller keeps the attempt's deadline itself.
        self.own_deadline = False
        self.deadline = clock.t0 + (attempt.deadline_s - attempt.start_s)  # on the loop clock

    async def next(self) -> str | Reply:
        if not self.own_deadline:
            item = await self._read()
        else:
            try:
                async with asyncio.timeout_at(self.deadline):
                    item = await self._read()
            except TimeoutError:
                item = self.session.timed_out(self.attempt)
        if isinstance(item, Reply):
            await self.aclose()
        return item

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                # Close the line iterator first: left to the garbage collector, httpx's body
                # iterators would be finalized later, when the connection may serve another call.
                await self.lines.aclose()
            finally:
                await self.held.aclose()

    async def _read(self) -> str | Reply:
        import httpx  # loaded with the first HTTP host, not with sykit

        sse, attempt, session = self.sse, self.attempt, self.session
        try:
            async for line in self.lines:
                if sse.feed(session.host.scrub(line)):
                    if self.ttft is None:
                        self.ttft = self.clock.elapsed()
                        attempt.seen_ttft_s = self.ttft
                    attempt.receive(sse.tokens)
                    return sse.last
                if sse.done:
                    break
            if sse.done:
                # Read the body to its end: one that breaks after [DONE] was cut, not finished. A
                # server that holds it open gets a short grace, then the answer stands.
                grace = min(
                    _AFTER_DONE_S, attempt.deadline_s - self.clock.now() - _AFTER_DONE_S / 10
                )
                if grace > 0:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(grace):
                            async for _ in self.lines:
                                pass
        except StreamBroken as exc:
            return session._broken(attempt, sse.tokens, exc.message, invalid=exc.invalid)
        except httpx.HTTPError as exc:
            message = session._describe(exc, session.host._endpoints[attempt.model])
            if sse.done:
                message += " (after data: [DONE])"
            return session._broken(attempt, sse.tokens, message)
        if not (sse.done or sse.finished):
            return session._broken(
                attempt, sse.tokens, "the stream ended without finish_reason or [DONE]"
            )
        if sse.tokens == 0 and not sse.finished:
            return session._broken(
                attempt, 0, "the stream ended with no content and no finish_reason"
            )
        usage = sse.usage_of(attempt.request.input_tokens)
        return Reply(200, text=session.host.scrub(sse.text()), usage=usage, ttft_s=self.ttft)


class _HttpSession:
    """One run's HTTP client; closing it closes every pooled connection."""

    def __init__(self, host: HttpHost) -> None:
        import httpx  # loaded with the first HTTP host, not with sykit

        self.host = host
        # With decision_format="auto": each model whose server refused JSON-schema decisions, and
        # what it said; its later decisions go straight to the tool format.
        self.json_schema_refused: dict[str, str] = {}
        # Tells a test server which run a request belongs to, so every run meets the same faults.
        self.run_header = {"X-Sykit-Run": uuid.uuid4().hex[:16]}
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=host.connect_timeout_s),
            limits=httpx.Limits(
                max_connections=host.max_connections,
                max_keepalive_connections=host.max_connections,
            ),
            follow_redirects=False,
        )
        # httpcore logs response headers at DEBUG; a server may echo the key in one.
        self._log_token = LogScrubber.attach(host._secrets)

    async def aclose(self) -> None:
        try:
            await self.client.aclose()
        finally:
            LogScrubber.detach(self._log_token)

    async def send(self, attempt: Attempt) -> Reply:
        reply = await self._guarded(attempt, live=False)
        assert isinstance(reply, Reply)
        return reply

    async def open_stream(self, attempt: Attempt) -> Reply | _SseReader:
        """Send a streamed model call and read it up to its first token: the open stream, or the
        Reply of an attempt that ended before it (an error, or an answer with no content)."""
        return await self._guarded(attempt, live=True)

    async def _guarded(self, attempt: Attempt, live: bool) -> Reply | _SseReader:
        clock = _Clock(asyncio.get_running_loop(), attempt.start_s)
        remaining = attempt.deadline_s - attempt.start_s
        try:
            async with asyncio.timeout(max(0.0, remaining)):
                return await self._exchange(attempt, clock, live)
        except TimeoutError:
            return self.timed_out(attempt)
        except Exception as exc:
            text = str(exc)
            clean = self.host.scrub(text)
            if clean != text or self.host.scrub(repr(exc)) != repr(exc):
                raise RuntimeError(f"{type(exc).__name__}: {clean}") from None
            raise

    def timed_out(self, attempt: Attempt) -> Reply:
        message = f"no answer within {self.host.policy.timeout_s:g} s"
        received = attempt.received  # content chunks of a stream cut short
        if received:
            message += f" (after {received} tokens)"
        return Reply(None, error=ModelTimeout(message, model=attempt.model))

    # -- one exchange --------------------------------------------------------------------------
    async def _exchange(self, attempt: Attempt, clock: _Clock, live: bool) -> Reply | _SseReader:
        """One HTTP request. With ``live``, a streamed answer is returned open at its first token
        (its connection stays open until the reader ends or is closed)."""
        import httpx  # loaded with the first HTTP host, not with sykit

        host = self.host
        endpoint = host._endpoints[attempt.model]
        request = attempt.request
        stream = False
        fmt = None
        if attempt.kind == Kind.DECISION:
            assert isinstance(request, DecisionRequest)
            fmt = self.decision_format(attempt.model)
            body = decision_body(request, endpoint, fmt)
        else:
            assert isinstance(request, Request)
            stream = live or bool(request.metadata.get("stream", endpoint.stream))
            body = model_body(request, endpoint, stream)
        headers = dict(self.run_header)
        if stream:
            # A connection is not reused after a streamed answer: reusing one that had carried a
            # stream read to its end left an occasional later call on it without an answer.
            headers["Connection"] = "close"
        if endpoint.key is not None:
            headers["Authorization"] = f"Bearer {endpoint.key.reveal()}"
        # A real host cannot see whether the provider started on a request: once it is sent, an
        # attempt that ends unserved (cancelled, timed out) is billed per the policy.
        attempt.receive(0)
        held = contextlib.AsyncExitStack()
        reader: _SseReader | None = None
        handed_over = False
        try:
            response = await held.enter_async_context(
                self.client.stream("POST", endpoint.url, json=body, headers=headers)
            )
            status = response.status_code
            if not 200 <= status < 300:
                text = self._error_body(await response.aread(), response.encoding or "utf-8")
                location = response.headers.get("location")
                if 300 <= status < 400 and location:
                    # Requests are not re-sent to wherever a server points: say where it pointed.
                    target = redact_url(str(response.url.join(location)))
                    text = host.scrub(
                        f"HTTP {status} redirect to {target!r}, which HttpHost does not follow: "
                        "set base_url to the URL the server means"
                    )
                if fmt is not None:
                    refused = self._format_refused(attempt.model, fmt, status, text)
                    if refused is not None:
                        return refused
                return Reply(status, text, dict(response.headers))
            content_type = response.headers.get("content-type", "")
            if stream and "text/event-stream" in content_type:
                reader = _SseReader(self, attempt, response, held, clock)
                first = await reader.next()
                if live and not isinstance(first, Reply):
                    reader.first = first
                    reader.own_deadline = True  # read on after this exchange's own timeout
                    handed_over = True
                    return reader  # the caller closes it
                while not isinstance(first, Reply):
                    first = await reader.next()
                return first
            text = host.scrub((await response.aread()).decode("utf-8", "replace"))
            return completion_reply(attempt, status, text, secrets=host._secrets)
        except httpx.HTTPError as exc:
            return Reply(
                None, error=UnavailableError(self._describe(exc, endpoint), model=attempt.model)
            )
        finally:
            if not handed_over:  # the connection goes back (or away) with this exchange
                await (reader.aclose() if reader is not None else held.aclose())

    def _error_body(self, raw: bytes, encoding: str) -> str:
        """An error body, decoded by its declared charset (``encoding``: UTF-8 when it declares
        none), scrubbed as text and, if it is JSON, again once decoded: the classifier
        decodes it, and an escaped key (``\\/``, ``\\u0073``) must not decode into the key. JSON
        nested too deeply to decode is passed on as words saying so, which the classifier reads
        as the message rather than failing on it."""
        secrets = self.host._secrets
        try:
            decoded = raw.decode(encoding, "replace")
        except LookupError:  # a codec that is no text encoding (charset=rot13, base64, ...)
            decoded = raw.decode("utf-8", "replace")
        text = scrub(decoded, secrets)
        try:
            data = json.loads(text)
        except ValueError:
            return text
        except RecursionError:
            return f"an error body of JSON nested too deeply to read: {text[:100]!r}"
        if not secrets:
            return text
        clean = scrub_json(data, secrets)
        return text if clean == data else json.dumps(clean, ensure_ascii=False)

    def decision_format(self, model: str) -> str:
        """The format the next decision call to ``model`` is asked in."""
        setting = self.host.decision_format
        if setting != "auto":
            return setting
        return "tool" if model in self.json_schema_refused else "json_schema"

    def _format_refused(self, model: str, fmt: str, status: int, text: str) -> Reply | None:
        """The reply for a server's refusal of the decision format itself, else None (classified as
        usual). Not transient, so never an ``unavailable`` to retry: with ``"auto"`` a JSON-schema
        refusal is resent as a tool call; otherwise it is an invalid request saying what to set."""
        said = format_rejection(status, text, fmt)
        if said is None:
            return None
        setting = self.host.decision_format
        if fmt == "json_schema" and setting == "auto":
            self.json_schema_refused[model] = said
            message = (
                "the server does not accept response_format json_schema; fell back to "
                f"decision_format='tool' ({said})"
            )
            error = InvalidRequestError(message, model=model, http_status=status)
            return Reply(status, error=error, resend=True)
        if fmt == "json_schema":
            message = (
                "the server does not accept response_format json_schema: set "
                f"HttpHost(decision_format='tool') or decision_format='auto' ({said})"
            )
        elif setting == "auto":
            message = (
                "the server accepts neither decision format: decision_format='json_schema' was "
                f"refused ({self.json_schema_refused[model]}) and "
                f"decision_format='tool' too ({said}); use a judge that supports either"
            )
        else:
            return None
        return Reply(status, error=InvalidRequestError(message, model=model, http_status=status))

    def _describe(self, exc: httpx.HTTPError, endpoint: Endpoint) -> str:
        import httpx  # loaded with the first HTTP host, not with sykit

        url = httpx.URL(endpoint.url)
        where = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
        text = str(exc) or type(exc).__name__
        lowered = text.lower()
        if isinstance(exc, httpx.ConnectTimeout):
            message = f"connecting to {where} timed out"
        elif isinstance(exc, httpx.ConnectError):
            if any(marker in lowered for marker in _DNS_MARKERS):
                message = f"DNS lookup failed for {url.host!r} ({text})"
            elif "refused" in lowered or "all connection attempts failed" in lowered:
                message = f"connection refused by {where} ({text})"
            else:
                message = f"could not connect to {where} ({text})"
        elif isinstance(exc, httpx.RemoteProtocolError) and "without sending a response" in lowered:
            message = f"{where} closed the connection without a response"
        elif isinstance(exc, httpx.RemoteProtocolError) and "complete message body" in lowered:
            message = f"{where} closed the connection before the body was complete"
        elif isinstance(exc, httpx.ReadError | httpx.WriteError) and (
            "reset" in lowered or "errno 104" in lowered or "broken pipe" in lowered or not str(exc)
        ):
            message = f"connection reset by {where}"
        else:
            message = f"{type(exc).__name__} talking to {where}: {text}"
        return self.host.scrub(message)

    def _broken(
        self, attempt: Attempt, tokens: int, message: str, *, invalid: bool = False
    ) -> Reply:
        """A stream that failed: before its first token the target is unavailable; after, the
        answer is broken (terminal, unless ``HostPolicy(resend_cut_streams=True)`` makes a cut
        unavailable) and, like any answer that ends unserved, billed per the policy for the
        tokens received."""
        model = attempt.model
        message = self.host.scrub(message)
        if tokens == 0 and not invalid:
            return Reply(
                None, error=UnavailableError(f"{message} (before the first token)", model=model)
            )
        if tokens:
            message = f"{message} (after {tokens} tokens)"
            if not invalid and self.host.policy.resend_cut_streams:
                # the provider's contract allows resending a cut answer: retried, then fallback
                return Reply(None, error=UnavailableError(message, model=model))
        return Reply(200, error=InvalidResponseError(message, model=model, http_status=200))
