"""The simulated host: providers with prices, limits, latency and faults, in virtual time.

An attempt here produces what a real provider would send back (an HTTP status, a JSON error body,
headers, token usage, a time to first token) after sleeping its simulated latency on the virtual
clock. The driver classifies it with the same code it uses for real HTTP answers.

Every random draw is keyed by ``(seed, request_id, model, n)``, so strategies compared on the same
requests meet the same latencies and the same faults.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from email.utils import formatdate
from typing import Any

from sykit._base.errors import (
    ArgumentTypeError,
    InvalidResponseError,
    ModelError,
    ModelTimeout,
    UnavailableError,
)
from sykit._base.rng import HALF, SLOT, attempt_words, uniforms, unit, units
from sykit._base.vocab import Kind
from sykit._hosts._openai_wire import not_chat_message
from sykit._hosts.base import _NO_HEADERS, Attempt, Reply
from sykit._world import prompt_cache as _prompt_cache
from sykit._world.capacity import Server
from sykit._world.classify import classify
from sykit._world.config import HostPolicy, Judge, ModelProfile, PromptCache, check_profiles
from sykit._world.dists import Constant
from sykit._world.faults import (
    LATER_RANDOM_FAULTS,
    RANDOM_FAULTS,
    VIRTUAL_EPOCH,
    VIRTUAL_EPOCH_S,
    ErrorFault,
    Faults,
    RateLimit,
    retry_after_headers,
)
from sykit._world.models import (
    Answer,
    Boolean,
    Choice,
    DecisionRequest,
    GroundTruth,
    Request,
    Score,
    make_usage,
)
from sykit._world.servers import Queues
from sykit._world.sharing import DEADLINE, DECODE, FIXED, GAVE_UP, WORK, Job, SharedServer
from sykit._world.truth import TruthView
from sykit._world.values import spelled

__all__ = ["SimHost", "broken_reply", "fault_error", "structural_refusal"]

_CAPABILITY_MESSAGES = (
    "{model} does not support image input.",
    "{model} is not a multimodal model.",
    "Image input is not supported for {model}.",
    "image_url is only supported by certain models.",
)


def _error_body(
    message: str, code: str | None = None, type_: str = "invalid_request_error"
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


#: The headers of an error answer that names a date: written from the virtual time it leaves at.
_Dated = Callable[[float], dict[str, str]]


def _retry_after(spec: Faults | ErrorFault) -> dict[str, str] | _Dated:
    """The Retry-After headers ``spec`` sends; for a date, what writes them when the answer leaves
    (the ``Date`` is the whole second of the virtual wall clock it leaves in)."""
    if spec.retry_after_as == "date" and spec.retry_after_s is not None:
        return lambda t: retry_after_headers(
            spec.retry_after_s, "date", spec.retry_after_ms, VIRTUAL_EPOCH_S + math.floor(t)
        )
    return retry_after_headers(spec.retry_after_s, spec.retry_after_as, spec.retry_after_ms)


def _quota_retry_after(limit: RateLimit, now: float, wait: float) -> dict[str, str] | _Dated:
    """The truthful Retry-After of a quota that holds enough again ``wait`` s after ``now`` (inf:
    never, no header): in seconds or milliseconds rounded up to the millisecond, or as the date of
    the first whole second of the virtual wall clock from which it holds enough."""
    if math.isinf(wait):
        return {}
    ms = math.ceil(wait * 1000)
    extra = {"retry-after-ms": f"{ms:d}"} if limit.retry_after_ms else {}
    if limit.retry_after_as == "date":
        ready = VIRTUAL_EPOCH_S + math.ceil(now + wait)

        def dated(t: float) -> dict[str, str]:
            sent = VIRTUAL_EPOCH_S + math.floor(t)
            date = formatdate(sent, usegmt=True)
            return {"date": date, "retry-after": formatdate(ready, usegmt=True), **extra}

        return dated
    return {"retry-after": f"{ms / 1000:g}", **extra}


@spelled
class SimHost:
    """A simulated host in virtual time.

        host = sy.SimHost({
            "small": sy.ModelProfile(price_in=0.15, price_out=0.6, latency=sy.Latency(ttft=0.3, tokens_per_s=120)),
            "large": sy.ModelProfile(price_in=2.5, price_out=10, vision=True),
        }, policy=sy.HostPolicy(max_retries=1), judge=sy.Judge(accuracy=0.85))

    ``judge`` sets how every model answers decision calls; a dict gives it per model. Decision
    calls take the model's latency and prices.
    """

    virtual = True

    def __init__(
        self,
        models: Mapping[str, ModelProfile],
        *,
        policy: HostPolicy | None = None,
        judge: Judge | Mapping[str, Judge] | None = None,
    ) -> None:
        self.profiles: dict[str, ModelProfile] = check_profiles(models)
        if policy is None:
            policy = HostPolicy()
        if not isinstance(policy, HostPolicy):
            raise ArgumentTypeError(f"policy must be a sy.HostPolicy, got {type(policy).__name__}")
        self.policy = policy
        default_judge = Judge()
        if judge is None:
            self.judges = dict.fromkeys(self.profiles, default_judge)
        elif isinstance(judge, Judge):
            self.judges = dict.fromkeys(self.profiles, judge)
        elif isinstance(judge, Mapping):
            for name, value in judge.items():
                if name not in self.profiles:
                    from sykit._base.errors import UnknownModel

                    raise UnknownModel(name, list(self.profiles), where="judge")
                if not isinstance(value, Judge):
                    raise ArgumentTypeError(
                        f"judge[{name!r}] must be a sy.Judge, got {type(value).__name__}"
                    )
            self.judges = {name: judge.get(name, default_judge) for name in self.profiles}
        else:
            raise ArgumentTypeError(
                f"judge must be a sy.Judge or a dict of model → sy.Judge, got {type(judge).__name__}"
            )

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self.profiles)

    def replace(
        self,
        *,
        models: Mapping[str, ModelProfile] | None = None,
        policy: HostPolicy | None = None,
        judge: Judge | Mapping[str, Judge] | None = None,
    ) -> SimHost:
        """A copy with some settings changed."""
        return SimHost(
            self.profiles if models is None else models,
            policy=self.policy if policy is None else policy,
            judge=self.judges if judge is None else judge,
        )

    def __repr__(self) -> str:
        return f"SimHost(models={list(self.profiles)!r}, policy={self.policy!r})"

    def open(self, seed: int) -> _SimSession:
        return _SimSession(self, seed)


class _Bucket:
    """A token bucket that refills continuously; full at the start of a run."""

    __slots__ = ("capacity", "level", "rate_per_s", "updated")

    def __init__(self, per_min: float) -> None:
        self.capacity = per_min
        self.level = per_min
        self.rate_per_s = per_min / 60.0
        self.updated = 0.0

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate_per_s)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 if it is now)."""
        if amount > self.capacity:
            return math.inf
        return max(0.0, (amount - self.level) / self.rate_per_s)


#: ``Kind.MODEL``, read once (an enum member's lookup costs a call on every attempt).
_MODEL = Kind.MODEL


class _Card:
    """What a session needs of one model's profile on every attempt, looked up once."""

    __slots__ = (
        "break_after",
        "cache",
        "faulty",
        "out_value",
        "output_tokens",
        "prefill",
        "prefill_tokens_per_s",
        "profile",
        "server",
        "spike_factor",
        "spike_p",
        "stall_p",
        "stall_s",
        "text",
        "tokens_per_s",
        "tps_value",
        "ttft",
        "window",
    )

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        faults = profile.faults
        self.faulty = bool(
            faults.scripted or profile.rate_limit is not None or faults.random_total > 0
        )
        self.ttft = profile.latency.ttft.quantile
        self.tokens_per_s = profile.latency.tokens_per_s.quantile
        self.output_tokens = profile.output_tokens.quantile
        # a constant's value, without a call per attempt (None: drawn)
        self.tps_value = _constant(profile.latency.tokens_per_s)
        out = _constant(profile.output_tokens)
        self.out_value = None if out is None else max(1, round(out))
        self.spike_p = faults.spike_p
        self.spike_factor = faults.spike_factor
        self.stall_p = faults.stall_p
        self.break_after = faults.break_after_tokens
        self.stall_s = faults.stall_s
        self.window = profile.context_window
        self.prefill = profile.prefill
        self.prefill_tokens_per_s = profile.latency.prefill_tokens_per_s
        self.cache = profile.cache
        self.text = ""
        self.server: Server | None = None  # its slots and queue, when it declares a capacity


def _constant(dist: Any) -> float | None:
    """The value of a constant distribution (None for any other)."""
    return dist.value if type(dist) is Constant else None


class _SimSession:
    """One run's provider state (rate-limit buckets, fail-first counters). It *plans* each attempt
    when it starts: what the provider will answer and after how long. The driver then waits that
    long on the virtual clock, or stops waiting when the call is cancelled."""

    def __init__(self, host: SimHost, seed: int) -> None:
        self.host = host
        self.profiles = host.profiles
        self.seed = seed
        self.fail_first_seen: dict[str, int] = {}
        self.buckets: dict[str, tuple[_Bucket | None, _Bucket | None]] = {}
        self.cards = {name: _Card(profile) for name, profile in host.profiles.items()}
        # prompt caches: (model, session id[, decision]) → (cached tokens, when it expires)
        self.prompt_cache: _prompt_cache.Store = {}
        for name, card in self.cards.items():
            card.text = f"(simulated answer from {name})"
        # the models that declare a capacity: their slots and queues (see sykit._world.capacity)
        self.queues = Queues.of(host.profiles)
        if self.queues is not None:
            for name, server in self.queues.servers.items():
                self.cards[name].server = server

    async def aclose(self) -> None:
        return None

    # -- the attempt ---------------------------------------------------------------------------
    def plan(self, attempt: Attempt, truth: GroundTruth | None) -> Reply:
        """What the provider answers to ``attempt`` and when (``Reply.after_s`` from its start);
        ``truth`` is the request's ground truth (answer lengths, and what the judge aims for).
        The reply carries no grade: the run writes the grades into the records itself, after
        the request has ended (see :mod:`sykit._world.truth`)."""
        card = self.cards[attempt.model]
        profile = card.profile
        words = attempt_words(attempt.seed, attempt.request_id, attempt.model, attempt.n)
        now = attempt.start_s
        request = attempt.request
        if (
            attempt.kind == _MODEL
            and isinstance(request, Request)  # a model attempt's request is never a decision's
            and (
                request.images
                or request.tools
                or request.input_tokens + (request.max_output_tokens or 0) > card.window
                or (not card.prefill and request._ends_with_assistant())
            )
        ):
            u = units(words)
            rejection = self._structural(attempt.model, profile, request, u)
            if rejection is not None:
                return self._error(profile, u, *rejection)
        if not card.faulty:
            return self._answer(attempt, card, words, now, None, truth)
        u = units(words)
        failure = None
        faults = profile.faults
        if faults.scripted or profile.rate_limit is not None:
            failure = self._scripted(attempt, profile, now)
        if failure is None and faults.random_total > 0:
            failure = self._random(attempt.model, profile, u)
        if failure is None:
            return self._answer(attempt, card, words, now, None, truth)
        if failure == "timeout":
            return Reply(
                None, error=fault_error("timeout", attempt.model), after_s=attempt.deadline_s - now
            )
        if failure == "reset":
            return Reply(
                None,
                error=fault_error("reset", attempt.model),
                after_s=profile.reject_delay_s.quantile(u[SLOT.TTFT]),
            )
        if not isinstance(failure, str):
            if len(failure) == 3 and callable(failure[2]):
                return self._dated(attempt, profile, u, *failure)
            return self._error(profile, u, *failure)
        if failure == "non_chat":
            # A 200 answered at once with JSON that is not a chat completion: nothing generated.
            return Reply(
                200,
                error=fault_error("non_chat", attempt.model),
                after_s=profile.reject_delay_s.quantile(u[SLOT.TTFT]),
            )
        return self._answer(attempt, card, words, now, failure, truth)

    @staticmethod
    def _error(
        profile: ModelProfile,
        u: Sequence[float],
        status: int,
        body: Any,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        delay = profile.reject_delay_s.quantile(u[SLOT.TTFT])
        return Reply(status, body, headers or {}, after_s=delay)

    @staticmethod
    def _dated(
        attempt: Attempt, profile: ModelProfile, u: Sequence[float], status: int, body: Any,
        write: _Dated,
    ) -> Reply:  # fmt: skip
        """An error answer whose headers name a date: written when it leaves, on the virtual wall
        clock, and classified against that clock as an HTTP client classifies an answer against
        its own when it comes (a date's ``RetryAfter.date_s``, which LiteLLM's reading uses)."""
        delay = profile.reject_delay_s.quantile(u[SLOT.TTFT])
        leaves = attempt.start_s + delay
        headers = write(leaves)
        now = VIRTUAL_EPOCH + timedelta(seconds=leaves)
        error = classify(status, body, headers, model=attempt.model, now=now)
        return Reply(status, body, headers, error=error, after_s=delay)

    def _structural(
        self, model: str, profile: ModelProfile, request: Request, u: Sequence[float]
    ) -> tuple[int, Any] | None:
        return structural_refusal(
            model,
            profile,
            images=bool(request.images),
            input_tokens=request.input_tokens,
            max_output_tokens=request.max_output_tokens,
            tools=bool(request.tools),
            ends_with_assistant=request._ends_with_assistant(),
            detail=u[SLOT.DETAIL],
        )

    def _scripted(self, attempt: Attempt, profile: ModelProfile, now: float) -> Any:
        faults = profile.faults
        if faults.outages and faults.in_outage(now):
            return 503, _error_body(
                "The server is currently unavailable (outage).", type_="server_error"
            )
        if faults.flapping is not None and faults.flapping.is_down(now):
            status = faults.flapping.status
            return status, _error_body(
                "The server is temporarily unavailable (flapping).", type_="server_error"
            )
        if faults.fail_first:
            seen = self.fail_first_seen.get(attempt.model, 0)
            self.fail_first_seen[attempt.model] = seen + 1
            if seen < faults.fail_first:
                first = faults.fail_first_status
                if first in ("timeout", "reset"):
                    return first
                if first == 429:
                    return self._rate_limited(
                        _retry_after(faults), "Rate limit reached (scripted)."
                    )
                return first, _error_body("Internal server error (scripted).", type_="server_error")
        if profile.rate_limit is not None:
            return self._take_quota(attempt, profile, now)
        return None

    def _take_quota(self, attempt: Attempt, profile: ModelProfile, now: float) -> Any:
        limit = profile.rate_limit
        assert limit is not None
        buckets = self.buckets.get(attempt.model)
        if buckets is None:
            buckets = (
                _Bucket(limit.requests_per_min) if limit.requests_per_min else None,
                _Bucket(limit.tokens_per_min) if limit.tokens_per_min else None,
            )
            self.buckets[attempt.model] = buckets
        requests_bucket, tokens_bucket = buckets
        request = attempt.request
        tokens = request.input_tokens + (getattr(request, "max_output_tokens", None) or 0)
        wait = 0.0
        for bucket, amount in ((requests_bucket, 1.0), (tokens_bucket, float(tokens))):
            if bucket is not None:
                bucket.refill(now)
                wait = max(wait, bucket.wait_for(amount))
        if wait > 0:
            return self._rate_limited(
                _quota_retry_after(limit, now, wait),
                "Rate limit reached for requests or tokens per minute.",
            )
        for bucket, amount in ((requests_bucket, 1.0), (tokens_bucket, float(tokens))):
            if bucket is not None:
                bucket.level -= amount
        return None

    @staticmethod
    def _rate_limited(
        headers: dict[str, str] | _Dated, message: str
    ) -> tuple[int, Any, dict[str, str] | _Dated]:
        return 429, _error_body(message, code="rate_limit_exceeded", type_="requests"), headers

    def _random(self, model: str, profile: ModelProfile, u: Sequence[float]) -> Any:
        faults = profile.faults
        x = u[SLOT.FAULT]
        for name in RANDOM_FAULTS:
            x -= getattr(faults, name)
            if x < 0:
                return self._fault(name, faults)
        for name in LATER_RANDOM_FAULTS:  # after the others: their draws stay where they were
            x -= getattr(faults, name)
            if x < 0:
                return name
        for error in faults.errors:
            x -= error.p
            if x < 0:
                return error.status, error.body(model), _retry_after(error)
        return None

    def _fault(self, name: str, faults: Any) -> Any:
        if name == "rate_limit":
            return self._rate_limited(_retry_after(faults), "Rate limit reached.")
        if name == "unavailable":
            return faults.unavailable_status, _error_body(
                "The server had an error processing your request.", type_="server_error"
            )
        if name == "policy":
            return 400, _error_body(
                "Your request was rejected as a result of our safety system.",
                code="content_policy_violation",
            )
        if name == "invalid":
            return 400, _error_body(
                "Invalid value for 'temperature': expected a number ≤ 2.", code="invalid_value"
            )
        return name  # timeout, reset, cut_stream, malformed: handled where time is known

    # -- a successful answer -------------------------------------------------------------------
    def _answer(
        self,
        attempt: Attempt,
        card: _Card,
        words: tuple[int, ...],
        now: float,
        broken: str | None,
        truth: GroundTruth | None,
    ) -> Reply:
        server = card.server
        if server is None:
            return self._generate(attempt, card, words, now, broken, truth, 0.0, 1.0)
        if type(server) is SharedServer:
            return self._shared(attempt, card, words, now, broken, truth, server)
        # A model with a capacity: the call waits for a slot, then runs at the rate the
        # sequences in service leave it (see sykit._world.capacity).
        admitted = server.admit(now)
        if admitted is None:  # the queue is full
            return _rejected(attempt, card, words, server)
        start, rate = admitted
        assert self.queues is not None
        self.queues.planned(attempt, start)
        if start - now > server.queue_timeout_s or start >= attempt.deadline_s:
            if now + server.queue_timeout_s < attempt.deadline_s:
                give_up, why = server.queue_timeout_s, "the server's queue timeout"
            else:
                give_up, why = attempt.deadline_s - now, "the deadline"
            message = f"no free slot before {why}: queued {give_up:g} s"
            return Reply(None, error=ModelTimeout(message, model=attempt.model), after_s=give_up)
        reply = self._generate(attempt, card, words, now, broken, truth, start - now, rate)
        server.hold(attempt, start, now + reply.after_s)
        return reply

    def _generate(
        self,
        attempt: Attempt,
        card: _Card,
        words: tuple[int, ...],
        now: float,
        broken: str | None,
        truth: GroundTruth | None,
        wait: float,
        rate: float,
    ) -> Reply:
        """The answer of a call that waited ``wait`` seconds for a slot and runs at ``rate``
        times the profile's decode and prefill rates (0 and 1 without a capacity)."""
        request = attempt.request
        model = attempt.model
        out = self._output_tokens(attempt, card, words, truth)
        cache = card.cache
        if cache is None:  # no prompt cache: nothing read, nothing written
            key, cached, cacheable, tier = None, 0, 0, ""
        else:
            key, cached, cacheable, tier = self._cache_read(request, model, card, now)
        ttft = card.ttft(((words[SLOT.TTFT] >> 10) | 1) * HALF)
        if card.prefill_tokens_per_s:  # reading the (uncached part of the) prompt comes first
            ttft += (request.input_tokens - cached) / (card.prefill_tokens_per_s * rate)
        tps = card.tps_value
        if tps is None:
            tps = card.tokens_per_s(((words[SLOT.TOKENS_PER_S] >> 10) | 1) * HALF)
        tps *= rate
        factor = 1.0
        if card.spike_p and ((words[SLOT.SPIKE] >> 10) | 1) * HALF < card.spike_p:
            factor = card.spike_factor
        if factor != 1.0:
            ttft *= factor
        if wait:
            ttft += wait  # queued for a slot before anything else
        total = ttft + (out / tps) * factor
        stall = 0.0
        if card.stall_p and ((words[SLOT.STALL] >> 10) | 1) * HALF < card.stall_p:
            stall = card.stall_s
            total += stall
        deadline = attempt.deadline_s
        if broken == "malformed" and not card.break_after and now + ttft <= deadline:
            # The first chunk is garbage: no usable token arrived, as over HTTP; nothing billed.
            return broken_reply("malformed", model, None, out, ttft)
        # accepted, billable from now on (Generation.plan, inlined: one per attempt)
        attempt.accepted = True
        attempt.first_token_at = now + ttft
        if wait:
            attempt.in_service_from = now + wait
        attempt.tokens_per_s = tps / factor
        attempt.planned = out
        if stall:
            attempt.stall_after = max(1, out // 2)
            attempt.stall_s = stall
        if now + total > deadline:
            # The client gives up at its deadline with the answer still in flight.
            return Reply(None, error=fault_error("timeout", model), after_s=deadline - now)
        if broken is not None:  # a cut stream, or a malformed chunk after some good tokens
            after = card.break_after
            produced = max(1, (2 * out) // 3) if after is None else max(1, min(after, out))
            last = ttft + ((produced - 1) / tps) * factor  # the instant its last token came
            if stall and produced > attempt.stall_after:
                last += stall
            return broken_reply(broken, model, produced, out, last)
        if key is not None and cache is not None:
            written, written_1h = _prompt_cache.write(
                self.prompt_cache, key, cached, cacheable, cache, tier, now + total
            )
            usage = make_usage(request.input_tokens, out, cached, written, written_1h)
        else:
            usage = make_usage(request.input_tokens, out)
        if attempt.kind == "decision":
            answers = self._judge(attempt, truth)
            return Reply(200, None, _NO_HEADERS, None, "", usage, ttft, answers, total)
        return Reply(200, None, _NO_HEADERS, None, card.text, usage, ttft, None, total)

    def _output_tokens(
        self, attempt: Attempt, card: _Card, words: tuple[int, ...], truth: GroundTruth | None
    ) -> int:
        """How many tokens the answer to ``attempt`` has: the judge's per question for a
        decision, the truth's when it knows, else the profile's draw; capped by the request."""
        request = attempt.request
        model = attempt.model
        if isinstance(request, DecisionRequest):  # attempt.kind == "decision"
            return self.host.judges[model].output_tokens * len(request.questions)
        known = truth.output_tokens.get(model) if truth is not None else None
        if known is not None:
            out = int(known)
        elif card.out_value is not None:
            out = card.out_value
        else:
            u_out = ((words[SLOT.OUTPUT_TOKENS] >> 10) | 1) * HALF
            out = max(1, round(card.output_tokens(u_out)))
        cap = request.max_output_tokens
        return cap if cap is not None and out > cap else out

    def _cache_read(
        self, request: Request | DecisionRequest, model: str, card: _Card, now: float
    ) -> tuple[tuple[Any, ...] | None, int, int, str]:
        """Where the call's prompt is cached (None: nowhere), how many of its tokens are read
        from the cache now, how many can be, and at which tier."""
        key, cacheable, tier = _cache_key(request, model, card.cache)
        cached = 0
        if key is not None and card.cache is not None:
            cached = _prompt_cache.lookup(self.prompt_cache, key, now, cacheable, card.cache)
        return key, cached, cacheable, tier

    def _shared(
        self,
        attempt: Attempt,
        card: _Card,
        words: tuple[int, ...],
        now: float,
        broken: str | None,
        truth: GroundTruth | None,
        server: SharedServer,
    ) -> Reply:
        """An answer from a model under exact processor sharing: the same draws as
        :meth:`_generate`, laid out as segments the server times (see
        :mod:`sykit._world.sharing`); the reply waits on the job's alarm and is made when the
        job has ended (:meth:`_SharedCall.reply`)."""
        waits = server.must_wait(now)
        if waits is None:  # the queue is full
            return _rejected(attempt, card, words, server)
        request = attempt.request
        out = self._output_tokens(attempt, card, words, truth)
        key, cached, cacheable, tier = self._cache_read(request, attempt.model, card, now)
        factor = 1.0
        if card.spike_p and ((words[SLOT.SPIKE] >> 10) | 1) * HALF < card.spike_p:
            factor = card.spike_factor
        ttft = card.ttft(((words[SLOT.TTFT] >> 10) | 1) * HALF) * factor
        prefill = 0.0
        if card.prefill_tokens_per_s:
            prefill = (request.input_tokens - cached) / card.prefill_tokens_per_s * factor
        tps = card.tokens_per_s(((words[SLOT.TOKENS_PER_S] >> 10) | 1) * HALF)
        unit_work = factor / tps  # full-rate seconds per token
        stall = 0.0
        if card.stall_p and ((words[SLOT.STALL] >> 10) | 1) * HALF < card.stall_p:
            stall = card.stall_s
        stall_after = max(1, out // 2) if stall else 0
        segments: list[tuple[int, float]] = [(FIXED, ttft), (WORK, prefill)]
        malformed_first = broken == "malformed" and not card.break_after
        produced = out
        if broken is not None and not malformed_first:
            after = card.break_after
            produced = max(1, (2 * out) // 3) if after is None else max(1, min(after, out))
        if not malformed_first:
            # token i comes at i units of generation (after the stall when i ≥ stall_after);
            # the answer ends one unit after its last token, a broken one at its last token
            last = produced if broken is None else produced - 1
            if stall and last >= stall_after:
                before = min(last, stall_after)
                segments += [(DECODE, before * unit_work), (FIXED, stall)]
                segments.append((DECODE, (last - before) * unit_work))
            else:
                segments.append((DECODE, last * unit_work))
            attempt.accepted = True
            attempt.planned = out
            attempt.received = 0
        give_up = min(now + server.queue_timeout_s, attempt.deadline_s)
        context = _SharedCall(self, attempt, card, truth, out, broken, malformed_first)
        context.cache = (key, cached, cacheable, tier)
        job = Job(
            attempt,
            now,
            attempt.deadline_s,
            give_up,
            segments,
            unit_work,
            0 if malformed_first else out,  # a malformed first chunk: no token to read
            stall_after,
            context.reply,
        )
        if waits:
            attempt.in_service_from = math.inf  # billed nothing until its service starts
        server.admit(job, now)
        return Reply(None, after_s=math.nan, alarm=job)

    def _judge(self, attempt: Attempt, truth: GroundTruth | None) -> dict[str, Answer]:
        request = attempt.request
        assert isinstance(request, DecisionRequest)
        accuracy = self.host.judges[attempt.model].accuracy
        view = TruthView(truth, self.profiles, attempt.seed, attempt.request_id)
        answers = {}
        for qid, question in request.questions.items():
            u_right, u_pick = uniforms(
                attempt.seed, attempt.request_id, attempt.model, attempt.n, qid
            )[:2]
            oracle = question.oracle
            target = oracle(view) if callable(oracle) else oracle
            answers[qid] = _answer(question, target, accuracy, u_right, u_pick)
        return answers


class _SharedCall:
    """What the reply of a call under exact sharing needs once its job has ended."""

    __slots__ = ("attempt", "broken", "cache", "card", "malformed_first", "out", "session", "truth")

    def __init__(
        self,
        session: _SimSession,
        attempt: Attempt,
        card: _Card,
        truth: GroundTruth | None,
        out: int,
        broken: str | None,
        malformed_first: bool,
    ) -> None:
        self.session = session
        self.attempt = attempt
        self.card = card
        self.truth = truth
        self.out = out
        self.broken = broken
        self.malformed_first = malformed_first
        self.cache: tuple[Any, int, int, str] = (None, 0, 0, "")

    def reply(self, job: Job) -> Reply:
        attempt = self.attempt
        model = attempt.model
        arrival = job.arrival
        after = job.end - arrival
        if job.end_kind == GAVE_UP:
            if job.give_up < attempt.deadline_s:
                why = "the server's queue timeout"
            else:
                why = "the deadline"
            message = f"no free slot before {why}: queued {after:g} s"
            return Reply(None, error=ModelTimeout(message, model=model), after_s=after)
        if job.end_kind == DEADLINE:
            attempt.received = job.produced
            return Reply(None, error=fault_error("timeout", model), after_s=after)
        if self.malformed_first:
            return broken_reply("malformed", model, None, self.out, after)
        if self.broken is not None:
            attempt.received = job.produced
            return broken_reply(self.broken, model, job.produced, self.out, after)
        request = attempt.request
        ttft = job.first_token - arrival
        key, cached, cacheable, tier = self.cache
        cache = self.card.cache
        if key is not None and cache is not None:
            written, written_1h = _prompt_cache.write(
                self.session.prompt_cache, key, cached, cacheable, cache, tier, job.end
            )
            usage = make_usage(request.input_tokens, self.out, cached, written, written_1h)
        else:
            usage = make_usage(request.input_tokens, self.out)
        if attempt.kind == "decision":
            answers = self.session._judge(attempt, self.truth)
            return Reply(200, None, _NO_HEADERS, None, "", usage, ttft, answers, after)
        return Reply(200, None, _NO_HEADERS, None, self.card.text, usage, ttft, None, after)


def _rejected(attempt: Attempt, card: _Card, words: tuple[int, ...], server: Any) -> Reply:
    """The answer to a call that finds its model's queue full, after the reject delay."""
    status, body = server.rejection(attempt.model)
    delay = card.profile.reject_delay_s.quantile(unit(words[SLOT.TTFT]))
    return Reply(status, body, after_s=delay)


def _cache_key(
    request: Request | DecisionRequest, model: str, cache: PromptCache | None
) -> tuple[tuple[Any, ...] | None, int, str]:
    """Where an attempt's prompt is cached (None: it is not), how many of its tokens can be, and
    at which tier: a model call's whole prompt per session, a decision's declared prefix per
    session and set of questions."""
    if cache is None:
        return None, 0, ""
    if isinstance(request, DecisionRequest):
        session = request.session_id
        if session is None or not request.cache_prefix_tokens:
            return None, 0, ""
        key = (model, session, "decision", *sorted(request.questions))
        return key, request.cache_prefix_tokens, _prompt_cache.tier_of(cache, request.cache_ttl)
    session = request.metadata.get("session_id")
    if session is None:
        return None, 0, ""
    tier = _prompt_cache.metadata_tier(cache, request.metadata)
    return (model, session), request.input_tokens, tier


def _answer(question: Any, target: Any, accuracy: float, u_right: float, u_pick: float) -> Answer:
    if isinstance(question, Boolean):
        if target is None:
            value = u_pick < 0.5
            return Answer(value, {True: 0.5, False: 0.5}, 0.5)
        value = bool(target) if u_right < accuracy else not bool(target)
        p_true = accuracy if value else 1.0 - accuracy
        return Answer(value, {True: p_true, False: 1.0 - p_true}, accuracy)
    options: tuple[Any, ...] = (
        question.options if isinstance(question, Choice) else tuple(range(len(question.levels)))
    )
    assert isinstance(question, Choice | Score)
    k = len(options)
    if target is None or target not in options:
        chosen = options[min(k - 1, int(u_pick * k))]
        level = float(chosen) if isinstance(question, Score) else chosen  # as an informed one
        return Answer(level, dict.fromkeys(options, 1.0 / k), 1.0 / k)
    if u_right < accuracy or k == 1:
        chosen = target
    else:
        others = [o for o in options if o != target]
        chosen = others[min(len(others) - 1, int(u_pick * len(others)))]
    rest = (1.0 - accuracy) / (k - 1) if k > 1 else 0.0
    probabilities = {o: (accuracy if o == chosen else rest) for o in options}
    chosen_value = float(chosen) if isinstance(question, Score) else chosen
    return Answer(chosen_value, probabilities, accuracy)


def fault_error(name: str, model: str) -> ModelError:
    """The error of a fault that is no HTTP error answer: ``"timeout"`` (no answer before the
    deadline, a fault's or a late answer's), ``"reset"`` (the connection dropped) or
    ``"non_chat"`` (a 200 whose JSON is no chat completion). The simulated host and the bulk
    engine make them alike."""
    if name == "timeout":
        return ModelTimeout("no answer before the deadline", model=model)
    if name == "reset":
        return UnavailableError("connection reset by peer", model=model)
    if name == "non_chat":
        return InvalidResponseError(not_chat_message(model), model=model, http_status=200)
    raise ValueError(f"no such fault: {name!r}")


def broken_reply(broken: str, model: str, produced: int | None, out: int, after_s: float) -> Reply:
    """The reply of a stream that broke ``after_s`` from its start: ``"malformed"`` (a chunk
    that is not JSON: the first one when ``produced`` is None, else after ``produced`` good
    tokens) or ``"cut_stream"`` (ended early after ``produced`` of ``out`` tokens, a 502). The
    simulated host and the bulk engine word them alike."""
    if broken == "malformed":
        where = "" if produced is None else f" (after {produced} tokens)"
        return Reply(
            None,
            error=InvalidResponseError(
                "malformed stream chunk: 'data: {\"choices\": [' is not valid JSON" + where,
                model=model,
                http_status=200,
            ),
            after_s=after_s,
        )
    return Reply(
        502,
        _error_body(
            f"upstream stream ended early after {produced} of {out} tokens", type_="server_error"
        ),
        after_s=after_s,
    )


def structural_refusal(
    model: str,
    profile: ModelProfile,
    *,
    images: bool,
    input_tokens: int,
    max_output_tokens: int | None,
    tools: bool,
    ends_with_assistant: bool,
    detail: float,
) -> tuple[int, Any] | None:
    """The 400 (status and body) a model answers at once to a request it cannot take: images
    without vision, more tokens than its window, tools it lacks, a prefill it refuses; None if it
    can take it. ``detail`` is the attempt's DETAIL uniform (which phrasing). The simulated host
    asks it per attempt, the bulk engine per column of attempts (one wording for both)."""
    if images and not profile.vision:
        phrase = _CAPABILITY_MESSAGES[int(detail * len(_CAPABILITY_MESSAGES))]
        return 400, _error_body(phrase.format(model=model))
    requested = input_tokens + (max_output_tokens or 0)
    if requested > profile.context_window:
        return 400, _error_body(
            f"This model's maximum context length is {profile.context_window} tokens. However, "
            f"you requested {requested} tokens ({input_tokens} in the messages, "
            f"{max_output_tokens or 0} in the completion). Please reduce the length of "
            "the messages or completion.",
            code="context_length_exceeded",
        )
    if tools and not profile.tools:
        return 400, _error_body(
            f"{model} does not support tools (function calling).", code="unsupported_parameter"
        )
    if not profile.prefill and ends_with_assistant:
        return 400, _error_body(
            "This model does not support assistant message prefill. The conversation must "
            "end with a user message."
        )
    return None
