"""The LLM task classifier (reference §C.6), failing open as the judge utility does (§C.7).

A classifier model is asked, with one decision call, which target should serve the turn; the
turn is then routed there with the other targets as fallbacks. The classifier's call is never the
turn's answer. Two shapes, as in the seed system's ``llm_task_classifier``:

* :func:`task_classifier`, the ``capability`` mode with its decision judge
  (``llm_class/decision.rs``): one ``Choice``, "does the capable model succeed where the efficient
  one fails?"; the capable model serves when the probability of that *advantage* is above
  ``cutoff``.
* :func:`custom_classifier`, the ``custom`` mode: the classifier picks one of your labels, each
  naming a target.

``trigger`` is the reference's ``classify_trigger`` (§C.8): ``every_request`` decides every
turn; ``new_session`` once per session; ``user_turn`` again on each real user turn, holding
through the tool continuations in between. The latch is :func:`sykit.strategies.affinity` (the
reference's ``AffinityRouter``) around the every-request classifier, kept in
``driver.session_state``; a request outside a session is classified on its own.

Failures: a classifier that errs, times out (``timeout_s``) or gives an unusable answer is a
missing verdict, and the turn goes to the default target (the capable one, or ``default``). sykit's
``call_decision`` has no error-recovery option of its own (decision errors always come back to the
algorithm, whatever ``HostPolicy.recover_errors`` says), so the recovery is done here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError, ModelError, ModelTimeout
from sykit._base.types import Algorithm
from sykit._run.driver import Driver
from sykit._run.race import timeout as _timeout
from sykit._run.strategy_kit import affinity, named_algorithm
from sykit._world.dists import check_number
from sykit._world.models import (
    Choice,
    DecisionRequest,
    DecisionResponse,
    Outcome,
    Request,
    route_to,
)
from sykit._world.truth import graded

__all__ = ["CLASSIFY_TRIGGERS", "custom_classifier", "task_classifier"]


CLASSIFY_TRIGGERS = ("every_request", "user_turn", "new_session")
ADVANTAGE, NO_ADVANTAGE = "advantage", "no_advantage"
_INSTRUCTION_ROLES = frozenset({"system", "developer"})
_QUESTION_TOKENS = 20  # what DecisionRequest counts per question when it estimates

_ADVANTAGE_TEXT = (
    "Compare two candidate models on the user's task. Answer 'advantage' when the capable "
    "candidate succeeds AND the efficient candidate fails; 'no_advantage' when the efficient "
    "candidate succeeds OR the capable candidate fails, including a shared failure."
)
_LABEL_TEXT = "Pick the label of the target that should serve the user's task."


def task_classifier(
    efficient: str,
    capable: str,
    *,
    classifier: str,
    cutoff: float = 0.5,
    threshold: float = 0.5,
    trigger: str = "every_request",
    window: int | None = None,
    fail_open: bool = True,
    timeout_s: float | None = None,
) -> Algorithm:
    """Ask ``classifier`` whether ``capable`` succeeds where ``efficient`` fails (reference §C.6,
    the capability mode's decision judge); route to ``capable`` when its probability of that
    advantage is above ``cutoff``, else to ``efficient``, each the other's fallback.

    A simulated classifier aims for the truth: advantage when the dataset grades ``capable``'s
    answer at least ``threshold`` and ``efficient``'s below it (an ungraded answer gets an
    uninformed pick), erring as often as the host's ``sy.Judge(accuracy=...)`` says. The
    classifier sees the opening task and the latest user message; with ``window=N`` also the
    instructions and the last N messages (the reference's ``recent_turn_window``), and its input
    tokens are the turn's in proportion to what it sees.

    ``trigger``: ``"every_request"``, ``"user_turn"`` or ``"new_session"`` (module docstring).
    A failed, late (``timeout_s``) or unusable verdict routes to ``capable`` (fail-open to the
    strong tier), latched like any decision; with ``fail_open=False`` the classifier's error
    fails the turn instead. Evidence: ``source`` (``"classifier"`` or ``"fail_open"``),
    ``score`` and ``threshold`` (the advantage probability and ``cutoff``), ``reason_code``
    (the error kind, ``"timeout"`` or ``"invalid_verdict"``); with a trigger, ``affinity``.

    Differs from the reference: a decision call stands in for its JSON verdict
    (``p_solve`` and a capability boundary), so ``base_threshold``/``threshold_step`` become one
    ``cutoff``; an answer without probabilities (a real judge over HTTP) counts as 1 or 0 for
    the option it picked, where the reference's decision judge fails open; there is no
    ``message_hash_fallback`` (sykit always knows a turn's session).
    """
    _check_names({"efficient": efficient, "capable": capable, "classifier": classifier})
    if efficient == capable:
        raise ArgumentError(f"efficient and capable must differ, both are {efficient!r}")
    cutoff = check_number(cutoff, "cutoff", high=1.0)
    threshold = check_number(threshold, "threshold", low=-math.inf)
    window, timeout_s = _check_options(trigger, window, timeout_s)
    if not isinstance(fail_open, bool):
        raise ArgumentTypeError(f"fail_open must be True or False, got {fail_open!r}")

    def oracle(view: Any) -> str | None:
        strong, weak = view.quality(capable), view.quality(efficient)
        if not (graded(strong) and graded(weak)):
            return None
        return ADVANTAGE if strong >= threshold and weak < threshold else NO_ADVANTAGE

    question = Choice((ADVANTAGE, NO_ADVANTAGE), _ADVANTAGE_TEXT, oracle=oracle)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        ask = _decision(request, "route", question, window)
        verdict, reason = await _consult(driver, ask, classifier, timeout_s, fail_open)
        advantage = None if verdict is None else _advantage(verdict)
        if advantage is None:
            driver.evidence(source="fail_open", reason_code=reason or "invalid_verdict")
            return route_to(capable, request, fallbacks=[efficient])
        driver.evidence(source="classifier", score=advantage, threshold=cutoff)
        if advantage > cutoff:
            return route_to(capable, request, fallbacks=[efficient])
        return route_to(efficient, request, fallbacks=[capable])

    return _with_trigger(algorithm, trigger, f"task_classifier({efficient}|{capable}")


def custom_classifier(
    targets: Mapping[str, str],
    *,
    classifier: str,
    default: str,
    instructions: str | None = None,
    threshold: float = 0.5,
    trigger: str = "every_request",
    window: int | None = None,
    timeout_s: float | None = None,
) -> Algorithm:
    """Ask ``classifier`` to pick one label of ``targets`` (label → model) and route to its
    model, the other targets following as fallbacks in the order given (reference §C.6, the
    custom mode). A failed, late or unknown answer routes to the ``default`` label's model.

    Give ``targets`` from the cheapest to the most capable: a simulated classifier aims for the
    first label whose model's answer the dataset grades at least ``threshold`` (the last label
    when none is; an uninformed pick when an answer is ungraded). ``instructions`` is the text
    a real classifier is asked; ``trigger``, ``window`` and ``timeout_s`` as for
    :func:`task_classifier`. Evidence: ``source``, ``verdict`` (the label served),
    ``reason_code``; with a trigger, ``affinity``.

    Differs from the reference: a ``Choice`` over the labels stands in for a user JSON schema
    and its ``target_selector`` pointer. As there, a classifier failure always falls back to the
    default (the custom mode has no ``fail_open`` switch).
    """
    if not isinstance(targets, Mapping) or len(targets) < 2:
        raise ArgumentError(f"targets must map at least two labels to models, got {targets!r}")
    labels = list(targets)
    if not all(isinstance(label, str) and label for label in labels):
        raise ArgumentTypeError(f"targets' labels must be non-empty strs, got {labels!r}")
    models = dict(targets)
    _check_names({f"targets[{label!r}]": model for label, model in models.items()})
    _check_names({"classifier": classifier})
    if default not in models:
        raise ArgumentError(f"default must be one of the labels {labels}, got {default!r}")
    threshold = check_number(threshold, "threshold", low=-math.inf)
    window, timeout_s = _check_options(trigger, window, timeout_s)
    if instructions is not None and not isinstance(instructions, str):
        raise ArgumentTypeError(f"instructions must be a str or None, got {instructions!r}")

    def oracle(view: Any) -> str | None:
        for label in labels:
            quality = view.quality(models[label])
            if not graded(quality):
                return None
            if quality >= threshold:
                return label
        return labels[-1]

    question = Choice(labels, instructions or _LABEL_TEXT, oracle=oracle)

    def serve(label: str, request: Request) -> Outcome:
        model = models[label]
        rest = [m for m in dict.fromkeys(models.values()) if m != model]
        return route_to(model, request, fallbacks=rest)

    async def algorithm(request: Request, driver: Driver) -> Outcome:
        ask = _decision(request, "target", question, window)
        verdict, reason = await _consult(driver, ask, classifier, timeout_s, fail_open=True)
        label = None if verdict is None else _label(verdict, models)
        if label is None:
            driver.evidence(
                source="fail_open", verdict=default, reason_code=reason or "invalid_verdict"
            )
            return serve(default, request)
        driver.evidence(source="classifier", verdict=label)
        return serve(label, request)

    return _with_trigger(algorithm, trigger, "custom_classifier(" + ",".join(labels))


# -- the classifier's call ------------------------------------------------------------------------


async def _consult(
    driver: Driver,
    ask: DecisionRequest,
    classifier: str,
    timeout_s: float | None,
    fail_open: bool,
) -> tuple[DecisionResponse | None, str | None]:
    """The classifier's answer, or None and why (the error kind, or ``"timeout"`` when
    ``timeout_s`` ran out): a judge is an optimisation, not a dependency (reference §C.7).
    Without ``fail_open`` the failure is raised and fails the turn."""
    call = driver.call_decision(ask, classifier)
    try:
        verdict = await (call if timeout_s is None else _timeout(timeout_s, call))
    except ModelError as error:
        if not fail_open:
            raise
        return None, error.kind
    if verdict is None:
        if not fail_open:
            raise ModelTimeout(
                f"no verdict within timeout_s={timeout_s:g} (fail_open=False)", model=classifier
            )
        return None, "timeout"
    return verdict, None


def _advantage(verdict: DecisionResponse) -> float | None:
    """The probability of ``advantage``; the pick as 1 or 0 when no probabilities came; None
    when the answer is unusable."""
    answer = verdict.answers.get("route")
    if answer is None:
        return None
    if answer.probabilities:
        p = answer.probabilities.get(ADVANTAGE)
    else:
        p = {ADVANTAGE: 1.0, NO_ADVANTAGE: 0.0}.get(str(answer.value))
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        return None
    return float(p)


def _label(verdict: DecisionResponse, models: Mapping[str, str]) -> str | None:
    answer = verdict.answers.get("target")
    label = None if answer is None else str(answer.value)
    return label if label in models else None


def _decision(request: Request, qid: str, question: Choice, window: int | None) -> DecisionRequest:
    messages, tokens = _task_view(request, window)
    overhead = math.ceil(len(question.instructions or "") / 4) + _QUESTION_TOKENS
    return DecisionRequest({qid: question}, {"task": messages}, input_tokens=tokens + overhead)


def _task_view(request: Request, window: int | None) -> tuple[list[dict[str, Any]], int]:
    """What the classifier reads (the reference's ``TaskInput``) and its input tokens.

    Without a window: the opening task and the latest user message when it differs. With
    ``window=N``: the instruction messages, the opening task and the last N messages after it,
    the start moved back so that no tool result is shown without its call. The tokens are the
    turn's ``input_tokens`` in proportion to the characters shown (sessions' texts may be short
    stand-ins for longer ones).
    """
    messages = [dict(m) for m in request.messages]
    tasks = [i for i, m in enumerate(messages) if _is_user_text(m)]
    instructions = [i for i, m in enumerate(messages) if m.get("role") in _INSTRUCTION_ROLES]
    if not tasks:
        chosen = instructions
    elif window is None:
        chosen = tasks[:1] + ([tasks[-1]] if tasks[-1] != tasks[0] else [])
    else:
        tail = [i for i in range(tasks[0] + 1, len(messages)) if i not in instructions]
        start = max(0, len(tail) - window)
        while 0 < start < len(tail) and _is_tool_result(messages[tail[start]]):
            start -= 1
        chosen = [*instructions, tasks[0], *tail[start:]]
    sizes = [len(json.dumps(m, default=str)) for m in messages]
    shown = sum(sizes[i] for i in chosen)
    tokens = math.ceil(request.input_tokens * shown / sum(sizes)) if shown else 0
    return [messages[i] for i in chosen], tokens


def _is_user_text(message: Mapping[str, Any]) -> bool:
    """A user message with words of its own (not only tool results)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list | tuple):
        return any(
            isinstance(b, Mapping) and b.get("type") == "text" and str(b.get("text", "")).strip()
            for b in content
        )
    return False


def _is_tool_result(message: Mapping[str, Any]) -> bool:
    """A tool's result, in OpenAI's ``tool`` role or as Anthropic ``tool_result`` blocks."""
    if message.get("role") == "tool":
        return True
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list | tuple)
        and any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    )


# -- options and naming ---------------------------------------------------------------------------


def _check_names(names: Mapping[str, object]) -> None:
    for option, value in names.items():
        if not isinstance(value, str) or not value:
            raise ArgumentTypeError(
                f"{option} must be a model name (a non-empty str), got {value!r}"
            )


def _check_options(
    trigger: object, window: object, timeout_s: object
) -> tuple[int | None, float | None]:
    if trigger not in CLASSIFY_TRIGGERS:
        raise ArgumentError(f"trigger must be one of {list(CLASSIFY_TRIGGERS)}, got {trigger!r}")
    if window is not None:
        window = check_int(
            window, "window", low=0, expected="an int ≥ 0 or None", type_error=ArgumentError
        )
    if timeout_s is not None:
        timeout_s = check_number(timeout_s, "timeout_s", low_open=True)
    return window, timeout_s


def _with_trigger(algorithm: Algorithm, trigger: str, label: str) -> Algorithm:
    """The classifier, latched per session by ``trigger``, named ``label`` + trigger."""
    if trigger != "every_request":
        algorithm = affinity(algorithm, trigger=trigger)
        label += f",{trigger}"
    return named_algorithm(label + ")", algorithm)
