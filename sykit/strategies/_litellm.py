"""LiteLLM's Router reproduced as a strategy: :func:`sykit.strategies.litellm_like`.

What LiteLLM 1.110.2 does on errors (retries, fallbacks between model groups, cooldowns,
Retry-After), read in its installed source and checked against recordings of the real Router
(``conformance/``). Re-exported from :mod:`sykit.strategies`.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError, ModelError, RateLimitError
from sykit._base.retry_after import RetryAfter
from sykit._base.rng import uniforms
from sykit._base.vocab import ErrorKind
from sykit._run.driver import Driver
from sykit._run.strategy_kit import checked_models
from sykit._world.dists import check_number
from sykit._world.models import Outcome, Request, Response, answered
from sykit.strategies._litellm_routing import (
    ROUTING_STRATEGIES,
    Limits,
    LoadState,
    RoutingArgs,
    routing_args,
)

__all__ = ["LITELLM_VERSION", "litellm_like"]


#: What LiteLLM 1.110.2 does without being told (read in its installed source).
LITELLM_VERSION = "1.110.2"
_LITELLM_BACKOFF_S = 0.5  # the first wait; doubled per retry
_LITELLM_BACKOFF_MAX_S = 8.0
_LITELLM_JITTER_S = 0.75  # plus U(0, 1) times this
_LITELLM_RETRY_AFTER_MAX_S = 60.0  # the longest Retry-After waited; a cooldown has no limit
_LITELLM_LONGEST_RETRY_AFTER_S = 2**63  # but a longer one is read as this
_LITELLM_MAX_FALLBACKS = 5
_LITELLM_MIN_REQUESTS = 5  # for the failure-rate cooldown of groups without allowed_fails
_LITELLM_RETRY_AFTER = ("integer", "any", "ignore")


#: What makes LiteLLM (its exception mapping for OpenAI-compatible servers) read an error's
#: message as a context-window error, lower case (``is_error_str_context_window_exceeded``).
_LITELLM_CONTEXT_PHRASES = (
    "exceed context limit",
    "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "string too long. expected a string with maximum length",
    "model's maximum context limit",
    "is longer than the model's context length",
    "input tokens exceed the configured limit",
    "`inputs` tokens + `max_new_tokens` must be",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    '"code": "context_length_exceeded"',
    "prompt is too long",
)


def _litellm_rate_limited(error: ModelError) -> bool:
    """LiteLLM's RateLimitError: a 429, or an error answer whose message speaks of a rate limit
    (its ``is_error_str_rate_limit``; checked before anything else)."""
    status = error.http_status
    if status == 429:
        return True
    if status is None or status < 400:
        return False
    lower = (error.message or "").lower()
    return bool(_RATE_LIMIT_WORDS.search(lower)) or "service tier capacity exceeded" in lower


_RATE_LIMIT_WORDS = re.compile(r"rate[\s_\-]*limit")


def _litellm_status(error: ModelError) -> int | None:
    """The HTTP status LiteLLM would see: its exception class's, read from the message as it
    does (a rate limit in words is its 429; a context-window or content-policy message its 400),
    else the server's; a timeout is its 408, a transport failure and a 2xx it cannot read
    (malformed, not a chat completion) its InternalServerError, 500."""
    if _litellm_rate_limited(error):
        return 429
    if _litellm_special(error) is not None:
        return 400
    if error.http_status is not None and not 200 <= error.http_status < 300:
        return error.http_status
    if error.kind == ErrorKind.TIMEOUT:
        return 408
    if error.kind in (ErrorKind.UNAVAILABLE, ErrorKind.INVALID_RESPONSE):
        return 500
    return None


def _litellm_special(error: ModelError) -> str | None:
    """``"context_window"`` or ``"policy"`` when LiteLLM would raise its ContextWindowExceededError
    or ContentPolicyViolationError for this error, else None. It reads the error's message only,
    not its code: "Your request was rejected as a result of our safety system." with code
    ``content_policy_violation`` is a plain 400 to it."""
    status = error.http_status
    if status is None or status < 400 or _litellm_rate_limited(error):
        return None  # not an error answer of the server's, or a rate limit first
    text = error.message or ""
    lower = text.lower()
    if "string_above_max_length" not in lower and not (
        "invalid 'user'" in lower and "string too long" in lower
    ):
        if any(phrase in lower for phrase in _LITELLM_CONTEXT_PHRASES):
            return "context_window"
        if (
            ("current length is" in lower and "while limit is" in lower)
            or ("maximum input length is" in lower and "tokens" in lower)
            or ("input too long:" in lower and "input tokens, limit is" in lower)
        ):
            return "context_window"
    if (
        ("invalid_request_error" in text and "content_policy_violation" in text)
        or ("Invalid prompt" in text and "violating our usage policy" in text)
        or "request was rejected as a result of the safety system" in lower
    ):
        return "policy"
    return None


def _litellm_retry_after(error: ModelError) -> int | None:
    """LiteLLM's reading of an error's Retry-After (``_get_retry_after_from_exception_header``,
    for the retry's wait and the cooldown alike): the ``Retry-After`` header alone
    (``retry-after-ms`` is never read), through ``int()`` (so ``"0.5"`` and ``"1.0"`` are
    unreadable), else an HTTP-date's distance from its own clock truncated toward zero (a date
    4 s after the response's ``Date`` reads as 3 s a moment later); None where it reads -1 (no
    header, or one it cannot read)."""
    sent: RetryAfter | None = getattr(error, "retry_after", None)
    if sent is None:  # an error made without headers: its retry_after_s as Retry-After
        value = getattr(error, "retry_after_s", None)
        if value is None or not math.isfinite(value) or not float(value).is_integer():
            return None
        return int(value)
    if sent.header is None:
        return None
    try:
        return min(int(sent.header), _LITELLM_LONGEST_RETRY_AFTER_S)
    except ValueError:
        pass
    return None if sent.date_s is None else int(sent.date_s)


def _litellm_retried(status: int | None) -> bool:
    return status is not None and (status in (408, 429) or status >= 500)


def _litellm_cools(status: int | None) -> bool:
    return status is not None and (status in (401, 402, 404, 408, 429) or status >= 500)


class _LiteLLMLike:
    """The router behind :func:`litellm_like` (its docstring lists the rules); state across
    requests (cooldowns, failure counts) is reset by ``start_run()``.
    """

    def __init__(
        self,
        groups: dict[str, tuple[str, ...]],
        fallbacks: dict[str, tuple[str, ...]],
        context_window_fallbacks: dict[str, tuple[str, ...]],
        content_policy_fallbacks: dict[str, tuple[str, ...]],
        *,
        num_retries: int,
        allowed_fails: int | None,
        cooldown_time: float,
        retry_after: str,
        max_fallbacks: int,
        name: str,
        stream: bool = False,
        orders: dict[str, int] | None = None,
        weights: dict[str, dict[str, float]] | None = None,
        routing_strategy: str = "simple-shuffle",
        routing_args: RoutingArgs | None = None,
        limits: dict[str, dict[str, Limits]] | None = None,
    ) -> None:
        self.groups = groups
        self.routing_strategy = routing_strategy
        self.routing_args = routing_args or RoutingArgs()
        self.limits = limits or {}  # group -> model -> its tpm and rpm
        self.orders = orders or {}  # model -> its order (LiteLLM's litellm_params["order"])
        self.weights = weights or {}  # group -> model -> its simple-shuffle weight
        self.first = next(iter(groups))
        self.fallbacks = fallbacks
        self.context_window_fallbacks = context_window_fallbacks
        self.content_policy_fallbacks = content_policy_fallbacks
        self.num_retries = num_retries
        self.allowed_fails = allowed_fails
        self.cooldown_time = cooldown_time
        self.retry_after = retry_after
        self.max_fallbacks = max_fallbacks
        self.stream = stream
        self.name = name
        self.models = [m for deployments in groups.values() for m in deployments]
        self.start_run()

    def start_run(self) -> None:
        self.cooled_until: dict[str, float] = {}
        self.fail_counts: dict[str, tuple[int, float]] = {}  # model -> (count, expires at)
        self.minute: dict[str, list[int]] = {}  # model -> [minute, successes, failures]
        # calls in flight, latencies, usage: what the load-aware routing strategies read
        self.load = LoadState(self.routing_strategy, self.routing_args, self.limits)

    # -- in bulk ----------------------------------------------------------------------------------
    def bulk_path(self) -> tuple[str, ...] | None:
        """The deployments every request tries, in order, when no request can change another's
        course and each group falls back to one group at most; None otherwise.

        That holds when no deployment can cool (groups of one deployment, no ``allowed_fails``),
        the pick reads no load (``simple-shuffle``), answers are not streamed, no
        context-window or content-policy fallbacks are set, and the path never returns to a
        deployment (each deployment's attempts are then its retries). The bulk engine then plans
        the requests column-wise (:meth:`after_failure` says what follows each failure)."""
        if (
            self.routing_strategy != "simple-shuffle"
            or self.allowed_fails is not None
            or self.stream
            or any(len(deployments) != 1 for deployments in self.groups.values())
            or any(self.context_window_fallbacks.values())
            or any(self.content_policy_fallbacks.values())
        ):
            return None
        path: list[str] = []
        group, depth = self.first, 0
        while True:
            model = self.groups[group][0]
            if model in path:
                return None
            path.append(model)
            chain = [g for g in self.fallbacks.get(group, ()) if g != group]
            if not chain or depth >= self.max_fallbacks:
                return tuple(path)
            if len(chain) > 1:
                return None
            group, depth = chain[0], depth + 1

    def after_failure(
        self, error: ModelError, retry: int, draw: Callable[[], float]
    ) -> tuple[bool, float | None]:
        """After try ``retry`` (from 0) of a group of one deployment failed with ``error``:
        whether the group is tried again, and the wait before what follows (None: no wait);
        ``draw()`` gives the request's next keyed uniform. As :meth:`_with_retries` decides."""
        if self.num_retries == 0 or not _litellm_retried(_litellm_status(error)):
            return False, None
        return retry < self.num_retries, self._wait_s(error, retry, draw())

    # -- cooldown ----------------------------------------------------------------------------------
    def _healthy(self, group: str, now: float) -> list[str]:
        cooled = self.cooled_until
        return [m for m in self.groups[group] if cooled.get(m, -math.inf) <= now]

    def _candidates(self, healthy: list[str], target_order: int | None) -> list[str]:
        """LiteLLM's order filter: the healthy deployments of the target order, or of the
        lowest order among the healthy ones (deployments without an order only when none has
        one)."""
        orders = self.orders
        if not orders:
            return healthy
        if target_order is None:
            present = [orders[m] for m in healthy if m in orders]
            if not present:
                return healthy
            target_order = min(present)
        return [m for m in healthy if orders.get(m) == target_order]

    def _pick(
        self, group: str, candidates: list[str], draws: _Draws, request: Request, now: float
    ) -> str | None:
        """The deployment ``routing_strategy`` picks (None: every candidate is over its tpm or
        rpm limit). simple-shuffle: by the deployments' weight (else rpm, else tpm) when one is
        set, uniform otherwise; the load-aware strategies at random among their choices."""
        if self.routing_strategy != "simple-shuffle":
            valid = self.load.choices(group, candidates, now, request.input_tokens, self.stream)
            if len(valid) <= 1:
                return valid[0] if valid else None
            return valid[int(draws.next() * len(valid))]
        if len(candidates) == 1:
            return candidates[0]
        u = draws.next()
        weights = self.weights.get(group)
        if weights:
            values = [weights.get(m, 0.0) for m in candidates]
            total = sum(values)
            if total > 0:
                threshold, acc = u * total, 0.0
                for model, value in zip(candidates, values, strict=True):
                    acc += value
                    if value > 0 and threshold < acc:
                        return model
                return next(m for m, v in zip(candidates[::-1], values[::-1], strict=True) if v)
        return candidates[int(u * len(candidates))]

    def _has_fallbacks(self, group: str) -> bool:
        return any(
            table.get(group)
            for table in (
                self.fallbacks,
                self.context_window_fallbacks,
                self.content_policy_fallbacks,
            )
        )

    def _count(self, model: str, now: float, failed: bool) -> tuple[int, int]:
        minute = int(now // 60.0)
        stats = self.minute.get(model)
        if stats is None or stats[0] != minute:
            stats = self.minute[model] = [minute, 0, 0]
        stats[2 if failed else 1] += 1
        return stats[1], stats[2]

    def _failed(self, group: str, model: str, error: ModelError, now: float) -> None:
        successes, failures = self._count(model, now, True)
        status = _litellm_status(error)
        if not _litellm_cools(status):
            return
        several = len(self.groups[group]) > 1
        if self.allowed_fails is not None:
            if not several and not self._has_fallbacks(group):
                return  # a lone deployment with nowhere to go is never cooled
            count, expires = self.fail_counts.get(model, (0, -math.inf))
            if now >= expires:
                count, expires = 0, now + self.cooldown_time  # the window starts at a first failure
            if count + 1 <= self.allowed_fails:
                self.fail_counts[model] = (count + 1, expires)
                return
        elif not several or not (
            status == 429
            or (successes + failures >= _LITELLM_MIN_REQUESTS and failures > successes)
        ):
            return
        header = self._retry_after(error)
        cooldown = self.cooldown_time if header is None or header < 0 else header
        self.cooled_until[model] = now + cooldown

    # -- waiting -----------------------------------------------------------------------------------
    def _retry_after(self, error: ModelError) -> float | None:
        """The error's Retry-After as this router reads it (``retry_after=``): LiteLLM's reading
        (``"integer"``), sykit's own (``"any"``), or none (``"ignore"``); negative or None when
        there is none to honour."""
        if self.retry_after == "ignore":
            return None
        if self.retry_after == "any":
            return getattr(error, "retry_after_s", None)
        return _litellm_retry_after(error)

    def _wait_s(self, error: ModelError, retry: int, jitter: float) -> float:
        header = self._retry_after(error)
        if header is not None and 0 < header <= _LITELLM_RETRY_AFTER_MAX_S:
            return header + _LITELLM_JITTER_S * jitter  # Retry-After: 0 gets the backoff
        backoff = min(_LITELLM_BACKOFF_S * 2.0**retry, _LITELLM_BACKOFF_MAX_S)
        return backoff + _LITELLM_JITTER_S * jitter

    # -- serving -----------------------------------------------------------------------------------
    async def route(self, request: Request, driver: Driver) -> Outcome:
        draws = _Draws(driver.seed, driver.request_id)
        try:
            return await self._serve_group(request, driver, self.first, 0, draws)
        except _Committed as committed:
            raise committed.error from None

    async def _serve_group(
        self, request: Request, driver: Driver, group: str, depth: int, draws: _Draws
    ) -> Outcome:
        tried: list[str] = []
        try:
            return await self._with_retries(request, driver, group, draws, None, tried)
        except ModelError as first_error:
            error = first_error
            # LiteLLM's order path: a failure at one order moves on to the group's next order
            # (with its own retries), before any fallback group.
            while tried and tried[-1] in self.orders:
                higher = [o for o in self._group_orders(group) if o > self.orders[tried[-1]]]
                if not higher:
                    break
                tried.clear()
                try:
                    return await self._with_retries(request, driver, group, draws, higher[0], tried)
                except ModelError as order_error:
                    error = order_error
                    if not tried:
                        break
            table = self.fallbacks
            special = _litellm_special(error)
            if special == "context_window" and group in self.context_window_fallbacks:
                table = self.context_window_fallbacks
            elif special == "policy" and group in self.content_policy_fallbacks:
                table = self.content_policy_fallbacks
            chain = [g for g in table.get(group, ()) if g != group]
            if not chain or depth >= self.max_fallbacks:
                if error is first_error:
                    raise
                raise error from None
            last = error
            for next_group in chain:
                driver.record_fallback(last)  # the attempt it moves on from says why
                try:
                    return await self._serve_group(request, driver, next_group, depth + 1, draws)
                except ModelError as fallback_error:
                    last = fallback_error
            raise last from None

    def _group_orders(self, group: str) -> list[int]:
        return sorted({self.orders[m] for m in self.groups[group] if m in self.orders})

    async def _with_retries(
        self,
        request: Request,
        driver: Driver,
        group: str,
        draws: _Draws,
        target_order: int | None,
        tried: list[str],
    ) -> Outcome:
        last: ModelError | None = None
        for retry in range(self.num_retries + 1):
            candidates = self._candidates(self._healthy(group, driver.now()), target_order)
            if not candidates:
                if last is not None:
                    raise last
                raise self._none_available(request, driver, group, target_order)
            model = self._pick(group, candidates, draws, request, driver.now())
            if model is None:
                if last is not None:
                    raise last
                raise self._over_limits(request, driver, group, candidates)
            tried.append(model)
            load = self.load
            started = driver.now()
            load.started(group, model, started)
            ttft: float | None = None
            try:
                if self.stream:
                    response, ttft = await self._stream_attempt(request, driver, model)
                else:
                    response = await driver.call_model(request, [model], max_retries=0)
            except ModelError as error:
                load.ended(group, model)
                if self.stream and error.http_status == 200:
                    # a stream that opened and broke before any content: LiteLLM falls back at
                    # once, and does not count it against the deployment
                    raise
                now = driver.now()
                if error.kind == ErrorKind.TIMEOUT:
                    load.timed_out(group, model)
                self._failed(group, model, error, now)
                if self.num_retries == 0 or not _litellm_retried(_litellm_status(error)):
                    raise
                healthy = self._healthy(group, now)
                if not healthy:
                    raise  # cooled: straight to the fallbacks
                if any(m != model for m in healthy):
                    wait = 0.0  # a healthy sibling takes the retry at once
                else:
                    wait = self._wait_s(error, retry, draws.next())
                await driver.sleep(wait)
                last = error
                continue
            except BaseException:
                load.ended(group, model)  # a cut stream, or the request cancelled
                raise
            now = driver.now()
            load.ended(group, model)
            usage = response.usage
            load.succeeded(
                group,
                model,
                now,
                now - started,
                ttft,
                usage.output_tokens,
                usage.input_tokens + usage.output_tokens,
            )
            self._count(model, now, False)
            return answered(model, response)
        assert last is not None
        raise last

    def _none_available(
        self, request: Request, driver: Driver, group: str, target_order: int | None
    ) -> ModelError:
        """Every deployment LiteLLM would pick from is cooling: no call is made. Each is recorded
        as skipped, as the host's candidate loop records a cooling candidate."""
        now = driver.now()
        at = "" if target_order is None else f" at order {target_order}"
        error = RateLimitError(
            f"No deployments available for selected model group {group!r}{at}: every "
            "deployment is cooling down",
            model=group,
        )
        for model in self.groups[group]:
            if target_order is None or self.orders.get(model) == target_order:
                until = self.cooled_until.get(model, -math.inf)
                if until > now:
                    driver.record_skip(
                        request,
                        model,
                        f"cooling down in litellm_like, until t={until:g} s",
                        error=error,
                    )
        return error

    def _over_limits(
        self, request: Request, driver: Driver, group: str, candidates: list[str]
    ) -> ModelError:
        """Every deployment the strategy would pick from is over its tpm or rpm limit this
        minute: LiteLLM's "No deployments available" (a 429), with no call made. Each is
        recorded as skipped."""
        now = driver.now()
        error = RateLimitError(
            f"No deployments available for selected model group {group!r}: every deployment "
            "is over its tpm or rpm limit this minute",
            model=group,
        )
        for model in candidates:
            reason = self.load.over_limit(group, model, now)
            driver.record_skip(request, model, f"{reason} in litellm_like", error=error)
        return error

    async def _stream_attempt(
        self, request: Request, driver: Driver, model: str
    ) -> tuple[Response, float | None]:
        """One streamed attempt, read to its end, as LiteLLM's Router streams it: an error before
        the stream opens is the attempt's (retried, cooled, fallen back as usual); a 200 stream
        that breaks before any content goes to the fallbacks at once (LiteLLM's mid-stream
        fallback, no retry, no cooldown); an error after content reaches the caller
        (``_Committed``). With the answer, the seconds to its first token (None: no token)."""
        started = driver.now()
        stream = driver.stream_model(request, [model], max_retries=0)
        ttft: float | None = None
        try:
            await stream.__anext__()
        except StopAsyncIteration:
            pass  # an answer with no token at all
        else:
            ttft = driver.now() - started
            try:
                async for _ in stream:
                    pass
            except ModelError as error:
                raise _Committed(error) from None  # not counted against the deployment either
        assert stream.response is not None
        return stream.response, ttft


class _Committed(Exception):
    """A streamed answer broke after content had reached the caller: LiteLLM's Router neither
    retries nor falls back; the error ends the request."""

    def __init__(self, error: ModelError) -> None:
        super().__init__(str(error))
        self.error = error


class _Draws:
    """One request's keyed uniforms, in the order the router asks for them."""

    __slots__ = ("key", "n")

    def __init__(self, seed: int, request_id: Any) -> None:
        self.key = (seed, "litellm_like", request_id)
        self.n = 0

    def next(self) -> float:
        n = self.n
        self.n = n + 1
        return uniforms(*self.key, n)[0]


GroupSpec = Mapping[str, Sequence[str] | str] | Sequence[str] | str
FallbackSpec = Mapping[str, Sequence[str] | str] | Sequence[Any]


def _group_table(
    value: FallbackSpec | None, groups: Mapping[str, Any], what: str
) -> dict[str, tuple[str, ...]]:
    """group -> fallback groups, from a mapping, LiteLLM's list of one-key dicts, or a list of
    groups (each falls back to the next)."""
    if value is None:
        return {}
    table: dict[str, tuple[str, ...]] = {}
    if isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a dict or a list of groups, got a str {value!r}")
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, Sequence) and all(isinstance(v, Mapping) for v in value):
        items = [item for entry in value for item in entry.items()]
    elif isinstance(value, Sequence):
        order = checked_models(list(value), what) if value else []
        items = [(a, [b]) for a, b in itertools.pairwise(order)]
    else:
        raise ArgumentTypeError(f"{what} must be a dict or a list of groups, got {value!r}")
    for group, targets in items:
        names = checked_models(targets, f"{what}[{group!r}]") if targets else []
        for name in [group, *names]:
            if name not in groups:
                raise ArgumentError(f"{what}: unknown group {name!r}; the groups: {list(groups)}")
        table[group] = table.get(group, ()) + tuple(names)
    return table


_LITELLM_WEIGHTS = ("weight", "rpm", "tpm")  # simple-shuffle uses the first one set


def _litellm_order(value: Any, where: str) -> int | None:
    """LiteLLM reads an order written as ``1``, ``1.0`` or ``"1"`` as the same number."""
    if value is None:
        return None
    if isinstance(value, int):  # True too, as in LiteLLM
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value):
        return int(value)
    raise ArgumentError(f"{where}: order must be a whole number, got {value!r}")


def _litellm_model_list(
    model_list: Any,
) -> tuple[
    dict[str, tuple[str, ...]],
    dict[str, int],
    dict[str, dict[str, float]],
    dict[str, dict[str, Limits]],
]:
    """groups, orders (model -> order), simple-shuffle weights (group -> model -> weight) and
    tpm/rpm limits (group -> model -> Limits) from LiteLLM's ``model_list``."""
    if isinstance(model_list, (str, Mapping)) or not isinstance(model_list, Sequence):
        raise ArgumentTypeError(
            f"model_list must be a list of LiteLLM deployments, got {type(model_list).__name__}"
        )
    if not model_list:
        raise ArgumentError("litellm_like(model_list=) needs at least one deployment")
    groups: dict[str, list[str]] = {}
    orders: dict[str, int] = {}
    params_of: dict[str, list[Mapping[str, Any]]] = {}
    limits: dict[str, dict[str, Limits]] = {}
    for i, entry in enumerate(model_list):
        where = f"model_list[{i}]"
        if not isinstance(entry, Mapping):
            raise ArgumentTypeError(f"{where} must be a dict, got {entry!r}")
        group = entry.get("model_name")
        if not isinstance(group, str) or not group:
            raise ArgumentError(f"{where} needs a 'model_name' (the group's public name)")
        params = entry.get("litellm_params")
        if not isinstance(params, Mapping) or not isinstance(params.get("model"), str):
            raise ArgumentError(
                f"{where} ({group!r}) needs 'litellm_params' with a 'model', such as "
                "{'model': 'openai/gpt-4o'}"
            )
        deployment = entry.get("deployment")
        if deployment is None:
            deployment = params["model"].split("/", 1)[-1]  # minus the provider/ prefix
        if not isinstance(deployment, str) or not deployment:
            raise ArgumentError(f"{where}: the deployment name must be a non-empty str")
        if deployment in groups.get(group, ()):
            raise ArgumentError(
                f"{where}: group {group!r} names the deployment {deployment!r} twice; give each "
                "a 'deployment' key with the host's model name to tell them apart"
            )
        info = entry.get("model_info")
        order = params.get("order")
        if order is None and isinstance(info, Mapping):
            order = info.get("order")
        order = _litellm_order(order, where)
        if order is not None:
            if orders.get(deployment, order) != order:
                raise ArgumentError(f"{where}: {deployment!r} has two orders")
            orders[deployment] = order
        groups.setdefault(group, []).append(deployment)
        params_of.setdefault(group, []).append(params)
        limit = _litellm_limits(params, info, where)
        if limit is not None:
            limits.setdefault(group, {})[deployment] = limit
    weights: dict[str, dict[str, float]] = {}
    for group, deployments in groups.items():
        for key in _LITELLM_WEIGHTS:
            values = []
            for deployment, params in zip(deployments, params_of[group], strict=True):
                value = params.get(key)
                if value is not None:
                    value = check_number(value, f"{group!r} {deployment!r} {key}", low=0.0)
                values.append(0.0 if value is None else float(value))
            if max(values) > 0:
                weights[group] = dict(zip(deployments, values, strict=True))
                break
    return {g: tuple(d) for g, d in groups.items()}, orders, weights, limits


def _litellm_limits(params: Mapping[str, Any], info: Any, where: str) -> Limits | None:
    """A deployment's tpm and rpm, as the load-aware strategies read them: from
    ``litellm_params``, else ``model_info`` (None when it sets neither)."""
    values: dict[str, float] = {}
    for key in ("tpm", "rpm"):
        value = params.get(key)
        if value is None and isinstance(info, Mapping):
            value = info.get(key)
        if value is not None:
            values[key] = float(check_number(value, f"{where} {key}", low=0.0))
    return Limits(**values) if values else None


def litellm_like(
    models_or_groups: GroupSpec | None = None,
    *,
    model_list: Sequence[Mapping[str, Any]] | None = None,
    routing_strategy: str = "simple-shuffle",
    routing_strategy_args: Mapping[str, Any] | None = None,
    num_retries: int = 2,
    fallbacks: FallbackSpec | None = None,
    context_window_fallbacks: FallbackSpec | None = None,
    content_policy_fallbacks: FallbackSpec | None = None,
    allowed_fails: int | None = None,
    cooldown_time: float = 5.0,
    retry_after: str = "integer",
    max_fallbacks: int = _LITELLM_MAX_FALLBACKS,
    stream: bool = False,
    cooldown_s: float | None = None,
    window_s: float | None = None,
) -> Any:
    """LiteLLM's Router (litellm 1.110.2) as a strategy, with LiteLLM's own setting names.

    ``models_or_groups`` is a list of model names (each a group of one deployment) or a dict
    ``group -> [model, ...]`` (deployments picked at random among the healthy ones). Requests go to
    the first group. ``fallbacks`` maps a group to the groups it falls back to, in order (a list of
    groups means each falls back to the next; LiteLLM's ``[{"a": ["b"]}]`` works too); None means
    the groups in the order given, ``{}`` none. ``context_window_fallbacks`` and
    ``content_policy_fallbacks`` take the same forms and are used for those errors only.

    ``model_list=`` takes LiteLLM's own configuration instead: one entry per deployment,
    ``{"model_name": group, "litellm_params": {"model": "openai/east", "order": 1, ...}}``. The
    deployment is the host's model named by ``litellm_params["model"]`` minus its provider prefix
    (the part up to the first ``/``: ``"openai/east"`` is ``east``, ``"east"`` stays ``east``); an
    entry's ``"deployment"`` key, when given, names the host's model instead (for a name with a
    ``/`` of its own). Requests go to the first ``model_name``; ``fallbacks=None`` means none, as in
    LiteLLM. Other ``litellm_params`` (``api_base``, keys, ...) are ignored.

        sy.strategies.litellm_like(
            model_list=[
                {"model_name": "gpt-4o", "litellm_params": {"model": "openai/east", "order": 1}},
                {"model_name": "gpt-4o", "litellm_params": {"model": "openai/west", "order": 2}},
                {"model_name": "mini", "litellm_params": {"model": "openai/mini"}},
            ],
            fallbacks=[{"gpt-4o": ["mini"]}],
        )

        sy.strategies.litellm_like(["small", "large"])              # small, then large
        sy.strategies.litellm_like(
            {"gpt": ["gpt-a", "gpt-b"], "claude": ["claude"]},
            fallbacks={"gpt": ["claude"]}, allowed_fails=3, cooldown_time=10,
        )

    ``cooldown_s`` is the former name of ``cooldown_time``; ``window_s`` is no longer used (the
    failure count's window is ``cooldown_time``, as in LiteLLM).

    The rules, as measured on LiteLLM 1.110.2 against sykit's FakeProvider and read in its source:

    * **Retries** (``num_retries=2``: 3 attempts in all) for 408, 429, 5xx, timeouts, transport
      failures and 2xx bodies that are not a chat completion (LiteLLM's InternalServerError). After
      *every* failed attempt, the last one included, it waits ``0.5·2ⁿ`` s (capped at 8 s) plus
      ``0.75·U`` s of jitter, so a target that always fails is left for its fallback after a fourth
      wait (a 503 every time: at about 3.6–5.9 s instead of at once). Other 4xx are not retried.
    * **Retry-After** replaces the backoff (the jitter stays: ``Retry-After + 0.75·U`` s) when
      LiteLLM reads it as a number in (0, 60] (``retry_after="integer"``). It reads the
      ``Retry-After`` header alone, never ``retry-after-ms`` (a 429 with ``retry-after-ms: 3000``
      and ``Retry-After: 1`` waits 1 s; with ``retry-after-ms`` alone, the backoff), and reads it
      with ``int()``: a whole number of seconds, so ``Retry-After: 0.5`` gets the backoff, or an
      HTTP-date, measured against its own clock when the answer came and truncated toward zero
      (a date 4 s after the response's ``Date``, which truncates the sending time to whole
      seconds, is 3.something s away on arrival: 3 s plus the jitter). ``"any"`` reads it as
      sykit's own retries do (fractions, ``retry-after-ms`` first, a date against the response's
      ``Date``), ``"ignore"`` never uses it. No wait at all when another deployment of the group
      is healthy: the retry goes there.
    * **Fallbacks** catch every error class (a 400 such as "does not support image input", 401,
      404, 422, ...): the group's ``fallbacks`` are tried in order, each with its own retries, and
      their own fallbacks in turn, at most ``max_fallbacks`` (5) deep: the limit is on depth, so
      every group of one list is tried (``{"a": ["b", "c"]}`` with ``max_fallbacks=1`` tries b
      and c; ``a -> b -> c`` stops after b). A context-window error uses
      ``context_window_fallbacks`` and a content-policy error ``content_policy_fallbacks`` when
      they name the group, the ordinary fallbacks otherwise. Which errors those are is decided as
      LiteLLM decides for an OpenAI-compatible server: by the error message's wording alone
      ("This model's maximum context length is ...", "prompt is too long", ...; "Invalid prompt"
      with "violating our usage policy", "request was rejected as a result of the safety
      system"), not by the error's code, so OpenAI's "Your request was rejected as a result of
      *our* safety system." goes to the ordinary fallbacks, as it does in LiteLLM. The message
      comes before the status there: an error answer that speaks of a rate limit is its 429
      (retried, cooled), and one that speaks of the context window or a content policy its 400
      (not retried), whatever status the server sent.
    * **Cooldown** for statuses 429, 401, 402, 404, 408 and 5xx (a timeout counts as 408, a
      transport failure or unusable 2xx as 500). Every failed attempt counts, retries included.
      With ``allowed_fails`` a deployment cools once its failures *exceed* it (the 4th failure
      with ``allowed_fails=3``), for ``cooldown_time`` (5 s); the count's window is fixed,
      expiring ``cooldown_time`` after its first failure. Without ``allowed_fails``, only a group
      of several deployments cools one down: on a 429, or on more than 50 % failures over at least
      5 requests in the current minute. A group of one deployment and no fallbacks is never cooled.
      A cooldown lasts the error's Retry-After, read as for the wait but with no 60 s limit
      (``Retry-After: 90`` cools the deployment for 90 s, ``Retry-After: 0`` for none), else
      ``cooldown_time``.
    * A cooled deployment is skipped: a retry under way for a group with no healthy deployment goes
      straight to the fallbacks, and a new request for it fails over with no call made.
    * **Picking a deployment** (``routing_strategy="simple-shuffle"``, the default): at random
      among the group's healthy deployments, the one that just failed included, in proportion to
      ``litellm_params["weight"]`` when a deployment of the group sets one, else ``rpm``, else
      ``tpm`` (a deployment without it then gets none), uniformly when none is set.
    * **Load-aware picking**, among the same healthy deployments, from what this router has seen
      of its own calls in the run (as LiteLLM counts them in its router):

      - ``"least-busy"``: the deployment with the fewest of this router's calls in flight (from
        the call's start to its answer or error; a stream to its end); a tie goes to the one
        listed first. No random draw.
      - ``"latency-based-routing"``: the lowest mean over the last ``max_latency_list_size``
        (10) answers of seconds per output token (the seconds, for an answer without tokens);
        a streamed request uses the mean seconds to the first token where the deployment has
        some (or their ``ttft_percentile``). A timeout adds a 1000 s sample; other errors add
        nothing. A deployment not yet seen counts as 0, so it is tried next, and once the group
        has a record that 0 stays as its first sample. Deployments within
        ``lowest_latency_buffer`` × the lowest (``routing_strategy_args``; 0 by default) are
        picked among at random; so are ties.
      - ``"usage-based-routing-v2"``: the lowest tokens answered this minute (input plus
        output, counted when the answer ends), a tie at random, among the deployments whose
        tokens plus the request's ``input_tokens`` stay within their ``tpm`` and whose calls
        started this minute plus one stay *below* their ``rpm`` (so ``rpm=3`` lets two calls a
        minute through, and ``rpm=1`` or ``2`` one). ``tpm``/``rpm`` come from
        ``litellm_params`` or ``model_info``. When none is left, no call is made (a
        ``skipped`` row per deployment) and the request goes to the fallbacks, LiteLLM's "No
        deployments available". Latency-based routing applies the same limits, counting
        answered calls per minute.

      A minute is the run's (``int(t // 60)``), a wall-clock one in LiteLLM. Unknown names are
      refused with the list of supported ones.
    * **order** (``litellm_params["order"]``, or ``model_info["order"]``): only the healthy
      deployments of the lowest order are picked (those without an order only when no healthy
      one has one), so a cooled order-1 deployment hands its retries to order 2 at once. When a
      request fails at one order, with its retries spent or on an error that is not retried (a
      400 too), the group's next higher order is tried, with its own retries, before any
      fallback group. Retries at an order do not wait while another deployment of the group,
      of any order, is healthy.
    * **Streaming** (``stream=True``, LiteLLM's ``acompletion(..., stream=True)``; every attempt
      is a :meth:`Driver.stream_model` read to its end): an error before the stream opens (an
      error status, a reset, a timeout) is handled as above; a 200 stream that breaks before any
      content (a malformed first chunk) goes to the fallbacks at once, without a retry
      (LiteLLM's mid-stream fallback); a stream that breaks after content had come (a cut
      stream) ends the request with that error: no retry, no fallback, as LiteLLM raises it to
      its caller (its continuation of a cut stream is off by default and not modelled).
      Neither kind of broken stream counts toward a cooldown.

    It owns its retry loop rather than extending ``HostPolicy``, because LiteLLM decides each
    retry from state the host's loop does not have: whether a sibling deployment is healthy (then
    no wait), which deployment to pick next, the group's cooldowns counting every failed attempt,
    a wait after the last retry, LiteLLM's own reading of Retry-After with jitter. Every attempt is
    ``driver.call_model(request, [model], max_retries=0)`` (or ``stream_model``), which overrides the host's ``HostPolicy.max_retries`` for that one call, so
    it behaves the same on any host (no need to build one with ``max_retries=0``, and nothing to
    refuse). The host's ``timeout_s`` still bounds each attempt. It needs ``recover_errors=True``
    (the default) to see its calls' errors. Jitter and deployment picks are keyed draws
    (``uniforms(driver.seed, "litellm_like", request id, n)``), so a run is the same for a seed.

    Not modelled: LiteLLM's ``usage-based-routing`` (v1) and ``cost-based-routing``, rpm/tpm
    limits under simple-shuffle (there ``rpm`` only weighs the shuffle), usage-based-routing-v2's
    check at the call's start that refuses a deployment whose rpm another pick filled since (a
    race between concurrent picks, which a pick and its call at one instant never meet),
    LiteLLM's own token count of the messages (``input_tokens`` is sykit's), a deployment's own
    ``cooldown_time`` (which LiteLLM puts before Retry-After), retry policies per error class,
    retries on other 4xx when a group has several deployments, a stream that an HttpHost sees
    break after its 200 but before any content without a malformed chunk (LiteLLM falls back at
    once; here it is an ``unavailable`` attempt, retried), the continuation of a cut stream
    on a fallback (``enable_mid_stream_fallback_continuation``, off by default), and providers
    other than OpenAI-compatible ones (whose errors LiteLLM maps by other rules).
    ``conformance/`` in the repository records the real Router's behaviour and checks this one
    against it.

    Groups of one deployment without ``allowed_fails`` (no deployment can cool), with
    ``simple-shuffle``, no streams, and no group falling back to several, run on the bulk engine
    (see ``docs/engines.md``); other settings on the event engines. The frames are the same.

    In the ``attempts`` frame every attempt is its own call (``retry_index`` 0, ``retried``
    False). The attempt after which it moves to a fallback group carries the ``fallback_reason``
    (when its error is of a listed kind: a timeout or a 401, which LiteLLM falls back on too,
    leaves it empty), and the request's ``n_fallbacks`` counts the fallback groups tried (a move
    to a higher order within a group is not counted). A request that finds every deployment of a
    group cooling gets a ``skipped`` row per deployment (``error_kind`` ``cooldown``), as the
    host's candidate loop writes for a cooling candidate.
    """
    orders: dict[str, int] = {}
    weights: dict[str, dict[str, float]] = {}
    limits: dict[str, dict[str, Limits]] = {}
    if not isinstance(routing_strategy, str) or routing_strategy not in ROUTING_STRATEGIES:
        raise ArgumentError(
            f"unknown routing_strategy {routing_strategy!r:.60}; litellm_like supports "
            f"{list(ROUTING_STRATEGIES)} (LiteLLM's usage-based-routing and cost-based-routing "
            "are not modelled)"
        )
    args = routing_args(routing_strategy, routing_strategy_args)
    if model_list is not None:
        if models_or_groups is not None:
            raise ArgumentError(
                "litellm_like() takes either groups or model_list=, not both: put every "
                "deployment in model_list"
            )
        groups, orders, weights, limits = _litellm_model_list(model_list)
    elif models_or_groups is None:
        raise ArgumentError("litellm_like() needs the models, the groups or model_list=")
    elif isinstance(models_or_groups, Mapping):
        groups = {}
        for group, deployments in models_or_groups.items():
            if not isinstance(group, str) or not group:
                raise ArgumentError(f"group names must be non-empty strings, got {group!r}")
            groups[group] = tuple(checked_models(deployments, f"litellm_like() group {group!r}"))
        if not groups:
            raise ArgumentError("litellm_like() needs at least one group")
    else:
        groups = {m: (m,) for m in checked_models(models_or_groups, "litellm_like()")}
    if cooldown_s is not None or window_s is not None:
        warnings.warn(
            "litellm_like(cooldown_s=, window_s=) are the former settings: use cooldown_time= "
            "(window_s is no longer used)",
            DeprecationWarning,
            stacklevel=2,
        )
        if cooldown_s is not None:
            cooldown_time = cooldown_s
    for name, number in (("num_retries", num_retries), ("max_fallbacks", max_fallbacks)):
        check_int(number, name, low=0, type_error=ArgumentError)
    if num_retries > 10:
        raise ArgumentError(f"num_retries must be at most 10, got {num_retries}")
    if allowed_fails is not None:
        allowed_fails = check_int(
            allowed_fails,
            "allowed_fails",
            low=0,
            expected="None or an int ≥ 0",
            type_error=ArgumentError,
        )
    cooldown_time = check_number(cooldown_time, "cooldown_time")
    if retry_after not in _LITELLM_RETRY_AFTER:
        raise ArgumentError(
            f"retry_after must be one of {list(_LITELLM_RETRY_AFTER)}, got {retry_after!r}"
        )
    if not isinstance(stream, bool):
        raise ArgumentTypeError(f"stream must be True or False, got {stream!r:.40}")
    if fallbacks is None and model_list is None:
        fallbacks = list(groups)  # each group falls back to the next one given
    regular = _group_table(fallbacks, groups, "fallbacks")
    name = (
        "litellm_like("
        + ">".join(g if groups[g] == (g,) else f"{g}[{','.join(groups[g])}]" for g in groups)
        + ")"
    )
    return _LiteLLMLike(
        groups,
        regular,
        _group_table(context_window_fallbacks, groups, "context_window_fallbacks"),
        _group_table(content_policy_fallbacks, groups, "content_policy_fallbacks"),
        num_retries=num_retries,
        allowed_fails=allowed_fails,
        cooldown_time=float(cooldown_time),
        retry_after=retry_after,
        max_fallbacks=max_fallbacks,
        name=name,
        stream=stream,
        orders=orders,
        weights=weights,
        routing_strategy=routing_strategy,
        routing_args=args,
        limits=limits,
    )
