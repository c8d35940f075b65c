"""LiteLLM's Router reproduced as a strategy: the router that ``litellm_like`` builds.

What LiteLLM 1.110.2 does on errors (retries, fallbacks between model groups, cooldowns,
Retry-After), read in its installed source and checked against recordings of the real Router
(``conformance/``): one request's course through its groups, deployments, retries and fallbacks,
and the state across requests (cooldowns, failure counts, the load the routing strategies read).
The settings and the rules as documented are in :mod:`sykit.strategies._litellm_settings`, how
LiteLLM reads an error in :mod:`sykit.strategies._litellm_errors`, the load-aware picks in
:mod:`sykit.strategies._litellm_routing`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sykit._base.errors import ModelError, RateLimitError
from sykit._base.rng import uniforms
from sykit._base.vocab import ErrorKind
from sykit._run.driver import Driver
from sykit._world.models import Outcome, Request, Response, answered
from sykit.strategies._litellm_errors import (
    _litellm_cools,
    _litellm_retried,
    _litellm_retry_after,
    _litellm_special,
    _litellm_status,
)
from sykit.strategies._litellm_routing import Limits, LoadState, RoutingArgs, deployment_price

__all__ = ["LITELLM_VERSION"]


#: What LiteLLM 1.110.2 does without being told (read in its installed source).
LITELLM_VERSION = "1.110.2"
_LITELLM_BACKOFF_S = 0.5  # the first wait; doubled per retry
_LITELLM_BACKOFF_MAX_S = 8.0
_LITELLM_JITTER_S = 0.75  # plus U(0, 1) times this
_LITELLM_RETRY_AFTER_MAX_S = 60.0  # the longest Retry-After waited; a cooldown has no limit
_LITELLM_MIN_REQUESTS = 5  # for the failure-rate cooldown of groups without allowed_fails


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
        cooldowns: dict[str, float] | None = None,
        prices: dict[str, dict[str, tuple[float | None, float | None]]] | None = None,
    ) -> None:
        self.groups = groups
        self.routing_strategy = routing_strategy
        self.routing_args = routing_args or RoutingArgs()
        self.limits = limits or {}  # group -> model -> its tpm and rpm
        self.cooldowns = cooldowns or {}  # model -> its own cooldown_time (model_list)
        self.prices = prices or {}  # group -> model -> its litellm_params prices per token
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
        # LiteLLM's precedence: the deployment's own cooldown_time, then Retry-After, then the
        # Router's cooldown_time (each passed over when negative)
        own = self.cooldowns.get(model)
        if own is not None and own >= 0:
            cooldown = own
        else:
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
    def _priced(self, driver: Driver) -> dict[str, dict[str, float]]:
        """cost-based-routing's price of every deployment (:func:`deployment_price`): its
        ``litellm_params`` prices, else its ModelProfile's on the run's host."""
        profiles = driver._state.run.profiles  # the host's models, as the run holds them
        out: dict[str, dict[str, float]] = {}
        for group, deployments in self.groups.items():
            declared = self.prices.get(group, {})
            for model in deployments:
                profile = profiles.get(model)
                prices = None if profile is None else (profile.price_in, profile.price_out)
                own = declared.get(model, (None, None))
                out.setdefault(group, {})[model] = deployment_price(own, prices)
        return out

    async def route(self, request: Request, driver: Driver) -> Outcome:
        if self.routing_strategy == "cost-based-routing" and self.load.prices is None:
            self.load.prices = self._priced(driver)
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
