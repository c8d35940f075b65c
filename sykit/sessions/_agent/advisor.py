"""The advisor gate (reference §C.9, ``advisor_gate``): a weak executor serves every turn, and a
strong advisor reviews some of its turns, within a review budget per session.

Per turn, while the session's budget lasts: the executor answers in the routing phase; if the
turn triggers a review, the advisor is asked APPROVE or REDO in a decision call. APPROVE serves
the executor's answer; REDO discards it and routes the turn again (to the advisor's model by
default). Once the budget is spent, turns go straight to the executor with no routing work.

A failing, late or unusable advisor fails open: the executor's answer is served, the review is
refunded and the failure counted; after three failures in a session the advisor is no longer
consulted there. The executor's own errors fail the turn, as in the reference.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError, ModelError
from sykit._run.driver import Driver
from sykit._run.race import timeout as _timeout
from sykit._world.dists import check_number
from sykit._world.models import (
    Choice,
    DecisionRequest,
    Outcome,
    Request,
    Response,
    answered,
    route_to,
)
from sykit._world.truth import graded

__all__ = ["ADVISOR_TRIGGERS", "MAX_FAILED_CONSULTS", "ReviewLedger", "advisor_gate"]

ADVISOR_TRIGGERS = ("every_turn", "pattern")
#: Failed consults tolerated per session before the advisor is no longer asked (the
#: reference's ``MAX_FAILED_CONSULTS``): failures refund the budget, so this cap is what bounds
#: the time a down advisor costs.
MAX_FAILED_CONSULTS = 3
APPROVE, REDO = "APPROVE", "REDO"
_LEDGER_KEY = "advisor_gate"
_QUESTION_TOKENS = 20
_REVIEW_TEXT = (
    "You review the executor's latest turn against the task and the transcript. Answer APPROVE "
    "if the turn is correct and complete; REDO if it must be done again."
)
_REDO_FEEDBACK = (
    "A reviewer found problems with your last turn. Do not stop: keep working on the task and "
    "address the reviewer's plan."
)
_NO_OUTPUT = "(the executor produced no output this turn)"

Trigger = str | Callable[[Request, Response], bool]


@dataclass
class ReviewLedger:
    """One session's review budget (the reference's per-scope ``ScopeState``) and its stall
    checkpoint latch."""

    reviews: int = 0
    failed_consults: int = 0
    stall_fired: bool = False

    def spent(self, max_reviews: int) -> bool:
        return self.reviews >= max_reviews or self.failed_consults >= MAX_FAILED_CONSULTS

    def reserve(self, max_reviews: int) -> bool:
        """Take one review if the budget allows (before the consult, as the reference does)."""
        if self.spent(max_reviews):
            return False
        self.reviews += 1
        return True

    def refund_failure(self) -> None:
        """A failed consult gives its review back and counts toward the failure cap."""
        self.reviews = max(0, self.reviews - 1)
        self.failed_consults += 1


class AdvisorGate:
    """The gate built by :func:`advisor_gate`; an object so that the budget shared by requests
    outside sessions (one scope for the whole run, as in the reference) starts afresh each run."""

    def __init__(
        self,
        executor: str,
        advisor: str,
        redo_to: str,
        max_reviews: int,
        trigger: Trigger,
        pattern: re.Pattern[str] | None,
        min_tool_results: int,
        stall_turns: int,
        threshold: float,
        transcript_max_tokens: int,
        fail_open: bool,
        timeout_s: float | None,
    ) -> None:
        self.executor, self.advisor, self.redo_to = executor, advisor, redo_to
        self.max_reviews = max_reviews
        self.trigger, self.pattern = trigger, pattern
        self.min_tool_results, self.stall_turns = min_tool_results, stall_turns
        self.transcript_max_tokens = transcript_max_tokens
        self.fail_open, self.timeout_s = fail_open, timeout_s

        def oracle(view: Any) -> str | None:
            quality = view.quality(executor)
            return None if not graded(quality) else APPROVE if quality >= threshold else REDO

        self.question = Choice((APPROVE, REDO), _REVIEW_TEXT, oracle=oracle)
        redo = "" if redo_to == advisor else f",redo:{redo_to}"
        self.name = f"advisor_gate({executor}>{advisor}{redo})"
        self.start_run()

    def start_run(self) -> None:
        self.instance_ledger = ReviewLedger()

    def ledger(self, driver: Driver) -> ReviewLedger:
        """The session's ledger, or the run's one for requests outside sessions."""
        state = driver.session_state
        if state is None:
            return self.instance_ledger
        ledger = state.get(_LEDGER_KEY)
        if ledger is None:
            ledger = state[_LEDGER_KEY] = ReviewLedger()
        return ledger

    async def route(self, request: Request, driver: Driver) -> Outcome:
        ledger = self.ledger(driver)
        if ledger.spent(self.max_reviews):
            driver.evidence(advisor="spent", reviews=ledger.reviews)
            return route_to(self.executor, request)
        draft = await driver.call_model(request, [self.executor])  # its errors fail the turn
        fired = self.fired(request, draft)
        if fired is None and self.stalled(request) and not ledger.stall_fired:
            ledger.stall_fired = True  # the stall checkpoint fires once per session
            fired = "stall"
        if fired is None or not ledger.reserve(self.max_reviews):
            driver.evidence(advisor="quiet", reviews=ledger.reviews)
            return answered(self.executor, draft)
        verdict, reason = await self.consult(request, draft, driver)
        if verdict == APPROVE:
            driver.evidence(advisor="approve", trigger=fired, reviews=ledger.reviews)
            return answered(self.executor, draft)
        if verdict == REDO:
            driver.evidence(
                advisor="redo",
                trigger=fired,
                reviews=ledger.reviews,
                discarded_input_tokens=draft.usage.input_tokens,
                discarded_output_tokens=draft.usage.output_tokens,
            )
            return self.redo(request, draft)
        ledger.refund_failure()
        if not self.fail_open:
            raise ModelError(
                f"advisor consult failed ({reason}) and fail_open=False",
                model=self.advisor,
                kind="advisor_failed",
            )
        driver.evidence(
            advisor="fail_open",
            trigger=fired,
            reviews=ledger.reviews,
            failed_consults=ledger.failed_consults,
            reason_code=reason,
        )
        return answered(self.executor, draft)

    def fired(self, request: Request, draft: Response) -> str | None:
        """The trigger that fired for this turn, as its label, or None."""
        if self.pattern is not None:
            return "pattern" if self.pattern.search(draft.text or "") else None
        if tool_results(request.messages) < self.min_tool_results:
            return None
        if callable(self.trigger):
            return "custom" if self.trigger(request, draft) else None
        return "every_turn"

    def stalled(self, request: Request) -> bool:
        turns = sum(1 for m in request.messages if m.get("role") == "assistant")
        return 0 < self.stall_turns <= turns

    async def consult(
        self, request: Request, draft: Response, driver: Driver
    ) -> tuple[str | None, str | None]:
        """The advisor's verdict, or None and why (the error kind, ``"timeout"``,
        ``"parse_error"``)."""
        cap = self.transcript_max_tokens
        tokens = min(request.input_tokens + draft.usage.output_tokens, cap)
        context = {
            "transcript": transcript([dict(m) for m in request.messages], cap * 4),
            "turn": draft.text or _NO_OUTPUT,
        }
        overhead = math.ceil(len(_REVIEW_TEXT) / 4) + _QUESTION_TOKENS
        ask = DecisionRequest({"verdict": self.question}, context, input_tokens=tokens + overhead)
        call = driver.call_decision(ask, self.advisor)
        try:
            reply = await (call if self.timeout_s is None else _timeout(self.timeout_s, call))
        except ModelError as error:
            return None, error.kind
        if reply is None:
            return None, "timeout"
        answer = reply.answers.get("verdict")
        verdict = None if answer is None else str(answer.value)
        return (verdict, None) if verdict in (APPROVE, REDO) else (None, "parse_error")

    def redo(self, request: Request, draft: Response) -> Outcome:
        """REDO: the strong model takes the turn over (executor as fallback); with
        ``redo_to=executor``, the reference's retry: the executor is asked again with its
        discarded turn and the reviewer's feedback appended."""
        if self.redo_to != self.executor:
            return route_to(self.redo_to, request, fallbacks=[self.executor])
        echo = {"role": "assistant", "content": draft.text or _NO_OUTPUT}
        feedback = {"role": "user", "content": _REDO_FEEDBACK}
        retry = Request(
            [*(dict(m) for m in request.messages), echo, feedback],
            id=request.id,
            images=request.images,
            tools=[dict(t) for t in request.tools],
            input_tokens=request.input_tokens
            + draft.usage.output_tokens
            + math.ceil(len(_REDO_FEEDBACK) / 4),
            max_output_tokens=request.max_output_tokens,
            metadata=request.metadata,
        )
        return route_to(self.executor, retry)


def advisor_gate(
    executor: str,
    advisor: str,
    *,
    redo_to: str | None = None,
    max_reviews: int = 1,
    trigger: Trigger = "every_turn",
    pattern: str | None = None,
    min_tool_results: int = 0,
    stall_turns: int = 0,
    threshold: float = 0.5,
    transcript_max_tokens: int = 50_000,
    fail_open: bool = True,
    timeout_s: float | None = None,
) -> AdvisorGate:
    """A weak ``executor`` serves each turn; a strong ``advisor`` reviews up to ``max_reviews``
    of a session's turns (reference §C.9).

    Which executor turns are reviewed, ``trigger``:

    * ``"every_turn"`` (default): every turn once the conversation holds ``min_tool_results``
      tool results, so the budget goes to the first such turns;
    * ``"pattern"``: the executor's text matches the regex ``pattern`` (searched);
    * a function ``(request, response) -> bool`` of the turn and the executor's answer, also
      subject to ``min_tool_results``.

    ``stall_turns=N`` (0: off) also reviews, once per session, the first turn whose request
    carries N assistant turns (a mid-task checkpoint). A review is a decision call to
    ``advisor`` over the transcript (its input tokens capped at ``transcript_max_tokens``) and the
    executor's answer; a simulated advisor aims for APPROVE when the dataset grades the
    executor's answer at least ``threshold``, REDO otherwise, erring as ``sy.Judge(accuracy)``
    says. APPROVE serves the executor's answer; REDO routes the turn to ``redo_to`` (default
    ``advisor``, with ``executor`` as fallback). An advisor that errs, takes longer than
    ``timeout_s`` or answers neither fails open (``fail_open=False``: the turn fails with
    ``error_kind="advisor_failed"``). Outside sessions one budget covers the whole run.

    Evidence: ``advisor`` (``"quiet"`` not reviewed, ``"approve"``, ``"redo"``, ``"fail_open"``,
    ``"spent"`` budget used up), ``trigger`` (``every_turn``, ``pattern``, ``custom``,
    ``stall``), ``reviews`` (the session's reviews so far), ``failed_consults`` and
    ``reason_code`` on a failure, ``discarded_input_tokens`` / ``discarded_output_tokens`` of
    the executor's answer a REDO threw away.

    Differs from the reference: its default trigger reviews terminal turns (no tool call), but a
    sykit response does not say whether it calls a tool, so ``every_turn`` or a function stands
    in; the advisor answers a decision call instead of free text whose first word is the
    verdict, so there is no REDO plan, and REDO hands the turn to the strong model by default,
    where the reference asks the executor again with the plan (``redo_to=executor`` does that,
    with a fixed feedback text: a simulated executor then earns the same grade again); the
    budget is per sy.sessions.Session (a sub-agent's session has its own), not per benchmark header.
    """
    names = {"executor": executor, "advisor": advisor}
    if redo_to is not None:
        names["redo_to"] = redo_to
    for option, value in names.items():
        if not isinstance(value, str) or not value:
            raise ArgumentTypeError(
                f"{option} must be a model name (a non-empty str), got {value!r}"
            )
    compiled = _check_trigger(trigger, pattern)
    counts = {
        "max_reviews": (max_reviews, 1),
        "min_tool_results": (min_tool_results, 0),
        "stall_turns": (stall_turns, 0),
        "transcript_max_tokens": (transcript_max_tokens, 64),
    }
    for option, (count, low) in counts.items():
        check_int(count, option, low=low, type_error=ArgumentError)
    threshold = check_number(threshold, "threshold", low=-math.inf)
    if not isinstance(fail_open, bool):
        raise ArgumentTypeError(f"fail_open must be True or False, got {fail_open!r}")
    if timeout_s is not None:
        timeout_s = check_number(timeout_s, "timeout_s", low_open=True)
    return AdvisorGate(
        executor,
        advisor,
        advisor if redo_to is None else redo_to,
        max_reviews,
        trigger,
        compiled,
        min_tool_results,
        stall_turns,
        threshold,
        transcript_max_tokens,
        fail_open,
        timeout_s,
    )


def _check_trigger(trigger: object, pattern: object) -> re.Pattern[str] | None:
    if callable(trigger):
        if pattern is not None:
            raise ArgumentError("pattern is for trigger='pattern'; a trigger function got one")
        return None
    if trigger not in ADVISOR_TRIGGERS:
        raise ArgumentError(
            f"trigger must be one of {list(ADVISOR_TRIGGERS)} or a function "
            f"(request, response) -> bool, got {trigger!r}"
        )
    if trigger == "every_turn":
        if pattern is not None:
            raise ArgumentError("pattern is for trigger='pattern', not 'every_turn'")
        return None
    if not isinstance(pattern, str) or not pattern:
        raise ArgumentError(f"trigger='pattern' needs pattern, a non-empty regex; got {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ArgumentError(f"pattern is not a valid regex ({error}): {pattern!r}") from None


def tool_results(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many tool results a conversation holds (OpenAI ``tool`` messages, Anthropic
    ``tool_result`` blocks)."""
    count = 0
    for message in messages:
        if message.get("role") == "tool":
            count += 1
        elif message.get("role") == "user" and isinstance(message.get("content"), list | tuple):
            count += sum(
                1
                for b in message["content"]
                if isinstance(b, Mapping) and b.get("type") == "tool_result"
            )
    return count


def transcript(messages: list[dict[str, Any]], max_chars: int) -> list[dict[str, Any]]:
    """The conversation the advisor reads: whole if it fits ``max_chars`` (as JSON), else the
    head up to the task and the newest messages that fit, the middle replaced by a marker."""
    sizes = [len(json.dumps(m, default=str)) for m in messages]
    if sum(sizes) <= max_chars:
        return messages
    head = next((i + 1 for i, m in enumerate(messages) if m.get("role") == "user"), 0)
    budget = max_chars - sum(sizes[:head])
    start = len(messages)
    while start > head and sizes[start - 1] <= budget:
        budget -= sizes[start - 1]
        start -= 1
    marker = {"role": "user", "content": f"[{start - head} messages omitted]"}
    return [*messages[:head], marker, *messages[start:]]
