"""The data an algorithm sees and returns: requests, responses, decisions and outcomes.

All of it is immutable, so an algorithm can share a request between concurrent calls safely and a
rewritten request is always a new object (``dataclasses.replace(request, max_output_tokens=64)``).
"""

from __future__ import annotations

import inspect
import json
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from sykit._base.checks import check_int, check_real
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.prompt_cache import check_prefix, check_ttl
from sykit._world.values import spelled

__all__ = [
    "IMAGE_TOKENS",
    "Answer",
    "Boolean",
    "Choice",
    "DecisionRequest",
    "DecisionResponse",
    "GroundTruth",
    "Outcome",
    "Question",
    "Request",
    "Response",
    "Score",
    "Usage",
    "answered",
    "ask_good_enough",
    "route_to",
]

#: Input tokens counted for one image when a request does not say (OpenAI's high-detail estimate
#: for a 1024×1024 image: 85 base tokens plus 4 tiles of 170).
IMAGE_TOKENS = 765
#: The most tokens a request may count (input, or its output cap), and the most candidates one
#: call may have: the records store tokens as 32-bit and candidate positions as 16-bit integers,
#: so larger values are refused where they are written, not lost in a finished run.
TOKEN_LIMIT = 2**31 - 1
CANDIDATE_LIMIT = 2**15 - 1
#: Integer request ids must fit in 64 bits (the frames' request_id column).
_ID_RANGE = range(-(2**63), 2**63)
_CHARS_PER_TOKEN = 4
_MESSAGE_OVERHEAD_TOKENS = 4
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else str(content)


def _freeze_messages(messages: object) -> tuple[Mapping[str, Any], ...]:
    if isinstance(messages, str):
        return (MappingProxyType({"role": "user", "content": messages}),)
    if isinstance(messages, Mapping) or not isinstance(messages, Iterable):
        raise ArgumentTypeError(
            "messages must be a prompt string or a list of {'role': ..., 'content': ...} dicts, "
            f"got {type(messages).__name__}"
        )
    frozen = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise ArgumentTypeError(
                f"messages[{i}] must be a dict with 'role' and 'content', got {message!r}"
            )
        frozen.append(MappingProxyType(dict(message)))
    if not frozen:
        raise ArgumentError("messages must not be empty")
    return tuple(frozen)


@dataclass(frozen=True)
class GroundTruth:
    """What a dataset knows about a request and an algorithm must not see.

    ``quality[model]`` is the score the model's answer earned (e.g. 1.0 correct, 0.0 wrong; NaN
    when the dataset has the model but no grade for this request); ``output_tokens[model]`` the
    length of that answer; ``columns`` the dataset's other columns for this row, which reach the
    ``requests`` frame for analysis but not the algorithm. The simulated host uses the truth for
    answers and its judge; algorithms never see it (see :func:`sykit.strategies.peek_truth` for the
    simulation-only exception).
    """

    quality: Mapping[str, float] = field(default_factory=dict)
    output_tokens: Mapping[str, int] = field(default_factory=dict)
    columns: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for model, tokens in self.output_tokens.items():
            if tokens > TOKEN_LIMIT:  # stored as 32-bit ints: refused here, not after a run
                raise ArgumentError(
                    f"output_tokens[{model!r}] must be ≤ 2**31 - 1 ({TOKEN_LIMIT:,}), got {tokens!r}"
                )


@dataclass(frozen=True, init=False)
class Request:
    """One request to route.

        sy.Request("What is 41 + 1?")
        sy.Request([{"role": "user", "content": "Describe this."}], images=["https://…/cat.png"])
        sy.Request("Summarise…", input_tokens=30_000, max_output_tokens=256, metadata={"tier": "pro"})

    ``input_tokens`` is estimated when not given: about 4 characters a token, plus
    :data:`IMAGE_TOKENS` per image and the size of the tool schemas. Token counts are at most
    2**31 − 1 and an int ``id`` fits in 64 bits (the sizes the result tables store).
    """

    messages: tuple[Mapping[str, Any], ...]
    id: str | int | None
    images: tuple[str, ...]
    tools: tuple[Mapping[str, Any], ...]
    input_tokens: int
    max_output_tokens: int | None
    metadata: Mapping[str, Any]

    def __init__(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        id: str | int | None = None,
        images: Sequence[str] = (),
        tools: Sequence[Mapping[str, Any]] = (),
        input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        # The common request (a prompt string, no images or tools, an int token count or none)
        # takes the short paths: a user's list comprehension builds 100,000 of them. Its
        # messages are made when first read (see _PromptMessages) and no metadata is the
        # class's (_NoMetadata): one object for the cyclic garbage collector to walk while the
        # list grows instead of five, which was most of a build's time.
        fields = self.__dict__  # frozen: the fields are set once, here
        frozen: tuple[Mapping[str, Any], ...] | None
        if type(messages) is str:
            frozen = None
            fields["_prompt_text"] = messages
            if (
                input_tokens is None
                and type(images) is tuple
                and not images
                and type(tools) is tuple
                and not tools
            ):
                input_tokens = _estimate_tokens(messages) + _MESSAGE_OVERHEAD_TOKENS
        else:
            frozen = _freeze_messages(messages)
        if id is not None and type(id) is not str:
            if isinstance(id, bool) or not isinstance(id, str | int):
                raise ArgumentTypeError(f"id must be a str or int, got {type(id).__name__}")
            if type(id) is int and id not in _ID_RANGE:
                raise ArgumentError(
                    f"id {id} does not fit in 64 bits (the request tables store int ids as "
                    "int64); use a smaller int or a str id"
                )
        if type(images) is tuple and not images:
            images_frozen: tuple[str, ...] = ()
        else:
            if isinstance(images, str) or not isinstance(images, Sequence):
                raise ArgumentTypeError("images must be a list of image URLs or data URIs")
            if not all(isinstance(x, str) for x in images):
                raise ArgumentTypeError(
                    "images must contain only strings (image URLs or data URIs)"
                )
            if not all(x.strip() for x in images):
                raise ArgumentError(
                    "images holds an empty string: each image is a URL or a data URI (an "
                    "empty one would still be billed as an image)"
                )
            images_frozen = tuple(images)
        if type(tools) is tuple and not tools:
            tools_frozen: tuple[Mapping[str, Any], ...] = ()
        else:
            if isinstance(tools, str | Mapping) or not isinstance(tools, Sequence):
                raise ArgumentTypeError("tools must be a list of tool definitions (dicts)")
            tools_frozen = tuple(
                MappingProxyType(dict(t))
                if isinstance(t, Mapping)
                else MappingProxyType({"name": str(t)})
                for t in tools
            )
        if input_tokens is None:
            if frozen is None:
                frozen = self.messages
            text_tokens = sum(
                _estimate_tokens(_content_text(m["content"])) + _MESSAGE_OVERHEAD_TOKENS
                for m in frozen
            )
            tool_tokens = (
                _estimate_tokens(json.dumps([dict(t) for t in tools_frozen], default=str))
                if tools_frozen
                else 0
            )
            input_tokens = text_tokens + IMAGE_TOKENS * len(images_frozen) + tool_tokens
        elif type(input_tokens) is not int or not 0 <= input_tokens <= TOKEN_LIMIT:
            input_tokens = check_int(
                input_tokens, "input_tokens", low=0, expected="an int ≥ 0", type_error=ArgumentError
            )
        if input_tokens > TOKEN_LIMIT:  # stored as 32-bit ints: refused here, not after a run
            check_int(
                input_tokens,
                "input_tokens",
                high=TOKEN_LIMIT,
                expected=f"≤ 2**31 - 1 ({TOKEN_LIMIT:,})",
            )
        if max_output_tokens is not None:
            max_output_tokens = check_int(
                max_output_tokens,
                "max_output_tokens",
                low=1,
                high=TOKEN_LIMIT,
                expected=f"a positive int ≤ 2**31 - 1 ({TOKEN_LIMIT:,}) or None",
                type_error=ArgumentError,
            )
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ArgumentTypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
        if frozen is not None:
            fields["messages"] = frozen
        fields["id"] = id
        fields["images"] = images_frozen
        fields["tools"] = tools_frozen
        fields["input_tokens"] = input_tokens
        fields["max_output_tokens"] = max_output_tokens
        if metadata:  # else the class's empty metadata (see _NoMetadata)
            fields["metadata"] = MappingProxyType(dict(metadata))

    def _ends_with_assistant(self) -> bool:
        """Whether the last message is the assistant's (the request continues a partial
        answer), read without making the messages of a request built from a prompt string."""
        if "_prompt_text" in self.__dict__:
            return False
        messages = self.messages
        return bool(messages) and messages[-1].get("role") == "assistant"

    @property
    def prompt(self) -> str:
        """The text of the last user message (the question, for single-turn requests)."""
        for message in reversed(self.messages):
            if message["role"] == "user":
                return _content_text(message["content"])
        return _content_text(self.messages[-1]["content"])

    def __repr__(self) -> str:
        text = self.prompt
        short = text if len(text) <= 40 else text[:37] + "..."
        extras = []
        if self.images:
            extras.append(f"images={len(self.images)}")
        if self.tools:
            extras.append(f"tools={len(self.tools)}")
        if self.max_output_tokens is not None:
            extras.append(f"max_output_tokens={self.max_output_tokens}")
        tail = "".join(", " + e for e in extras)
        return f"Request({short!r}, id={self.id!r}, input_tokens={self.input_tokens}{tail})"

    def with_truth(self, truth: GroundTruth | None) -> Request:
        """A copy that carries hidden ground truth (used by datasets; algorithms never see it)."""
        copy = self._copy()
        copy.__dict__["_truth"] = truth
        return copy

    def without_truth(self) -> Request:
        """A copy without hidden ground truth: what the algorithm receives."""
        if "_truth" not in self.__dict__:
            return self
        copy = self._copy()
        del copy.__dict__["_truth"]
        return copy

    def _with_id(self, request_id: str | int) -> Request:
        """A copy under ``request_id``, checked by the caller (a run gives an id-less request its
        position)."""
        copy = self._copy()
        copy.__dict__["id"] = request_id
        return copy

    def _copy(self) -> Request:
        """A shallow copy: the same (frozen) field values, in a new object."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        return copy


class _PromptMessages:
    """``Request.messages`` of a request built from a prompt string: made when first read and
    kept in the request, whose own value then shadows this (a non-data descriptor, so reading any
    other attribute costs nothing more)."""

    def __get__(self, request: Request | None, owner: type | None = None) -> Any:
        if request is None:
            return self
        fields = request.__dict__
        if "_prompt_text" not in fields:
            raise AttributeError(f"{type(request).__name__!r} object has no attribute 'messages'")
        messages = (MappingProxyType({"role": "user", "content": fields["_prompt_text"]}),)
        fields["messages"] = messages
        return messages


class _NoMetadata:
    """``Request.metadata`` of a request given none: the one empty mapping, read from the class.
    A request that stores only strings, numbers and empty tuples is a single object to the cyclic
    garbage collector (its attribute dict is not tracked); a mapping stored in it would make two."""

    def __get__(self, request: Request | None, owner: type | None = None) -> Any:
        return self if request is None else _EMPTY


# set after the dataclass is made, so ``messages`` and ``metadata`` stay fields without defaults
setattr(Request, "messages", _PromptMessages())  # noqa: B010
setattr(Request, "metadata", _NoMetadata())  # noqa: B010


def truth_of(request: Request) -> GroundTruth | None:
    """The hidden ground truth a dataset attached to a request, if any."""
    return getattr(request, "_truth", None)


def request_list(requests: object, where: str) -> list[Request]:
    """``requests`` as a list, refusing a lone request or text and any item not a request."""
    if isinstance(requests, str | Request) or not isinstance(requests, Iterable):
        hint = " (wrap a single request in a list)" if isinstance(requests, str | Request) else ""
        raise ArgumentTypeError(
            f"{where} takes a list of sykit.Request objects, got {type(requests).__name__}{hint}"
        )
    items = list(requests)
    for item in items:
        if not isinstance(item, Request):
            raise ArgumentTypeError(
                f"{where} takes sykit.Request objects (sy.Request(text) makes one), got "
                f"{type(item).__name__}"
            )
    return items


@dataclass(frozen=True)
class Usage:
    """Tokens billed for one call."""

    input_tokens: int = 0
    output_tokens: int = 0
    #: Of ``input_tokens``: read from the model's prompt cache, and written to it.
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    #: Of ``cache_write_tokens``: written to the cache's 1-hour tier.
    cache_write_1h_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Response:
    """A model's answer.

    ``ttft_s`` and ``latency_s`` are measured from the start of the attempt that answered. A
    response carries no grade: how good the answer was is ground truth, which reaches the results
    (the ``quality`` columns) but never the algorithm.
    """

    model: str
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    ttft_s: float | None = None
    latency_s: float | None = None
    call_id: int | None = field(default=None, repr=False, compare=False)


_new = object.__new__


def make_usage(
    input_tokens: int, output_tokens: int, cached: int = 0, written: int = 0, written_1h: int = 0
) -> Usage:
    """A :class:`Usage`, built without the frozen dataclass's per-field ``__setattr__`` calls
    (the simulated host makes one per attempt)."""
    usage = _new(Usage)
    fields = usage.__dict__
    fields["input_tokens"] = input_tokens
    fields["output_tokens"] = output_tokens
    fields["cached_input_tokens"] = cached
    fields["cache_write_tokens"] = written
    fields["cache_write_1h_tokens"] = written_1h
    return usage


def make_response(
    model: str,
    text: str,
    usage: Usage,
    ttft_s: float | None,
    latency_s: float | None,
    call_id: int | None,
) -> Response:
    """A :class:`Response`, built as fast as :func:`make_usage` (one per successful attempt)."""
    response = _new(Response)
    fields = response.__dict__
    fields["model"] = model
    fields["text"] = text
    fields["usage"] = usage
    fields["ttft_s"] = ttft_s
    fields["latency_s"] = latency_s
    fields["call_id"] = call_id
    return response


# --------------------------------------------------------------------------------------------
# Decisions (shapes of Switchyard's decision protocol)

_Oracle = object | Callable[[Any], object]


def _check_text(value: object, name: str) -> None:
    """Refuse a question's text that is not a string: it is written into the judge's prompt and
    counted in its tokens, and a number there would fail only once the judge is called."""
    if value is not None and not isinstance(value, str):
        raise ArgumentTypeError(
            f"{name} must be a str or None, got {type(value).__name__} {value!r:.60}"
        )


@dataclass(frozen=True)
class Boolean:
    """A yes/no question. ``oracle`` is the right answer a *simulated* judge aims for: a value, or a
    function of the request's truth view (``view.quality(model)``, ``view.output_tokens(model)``);
    real hosts ignore it."""

    instructions: str | None = None
    true_description: str | None = None
    false_description: str | None = None
    oracle: _Oracle = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_text(self.instructions, "Boolean instructions")
        _check_text(self.true_description, "Boolean true_description")
        _check_text(self.false_description, "Boolean false_description")


class _ScaleOracle:
    """A question's oracle function whose every answer is checked against the question's
    scale: a simulated judge answers a value outside it at random, as if there were no oracle,
    which would hide the slip in an accuracy that looks poor."""

    __slots__ = ("fit", "function")

    def __init__(self, function: Callable[[Any], object], fit: Callable[[object], object]) -> None:
        self.function = function
        self.fit = fit

    def __call__(self, view: Any) -> object:
        target = self.function(view)
        return None if _no_answer(target) else self.fit(target)


def _no_answer(target: object) -> bool:
    """Whether an oracle's value says the request has no right answer: None, or NaN (the grade
    of an ungraded answer, carried through arithmetic)."""
    return target is None or (isinstance(target, float) and math.isnan(target))


def _oracle_on_scale(oracle: _Oracle, fit: Callable[[object], object]) -> _Oracle:
    """``oracle`` as checked by ``fit`` (which returns the value on the scale or raises): a
    value now, a function at each of its answers (None, an ungraded request, passes)."""
    if callable(oracle):
        return _ScaleOracle(oracle, fit)
    return None if _no_answer(oracle) else fit(oracle)


def _option_of(options: tuple[str, ...], instructions: object) -> Callable[[object], str]:
    """The check of a Choice oracle's value: one of ``options``, compared as the option ids
    (strings) the options were made into."""

    def fit(value: object) -> str:
        option = str(value)
        if option not in options:
            raise ArgumentError(
                f"the oracle of Choice({list(options)}{_about(instructions)}) gave {value!r}, "
                f"which is not one of its options; give one of {list(options)} (or None when "
                "the request has no right answer)"
            )
        return option

    return fit


def _level_of(levels: tuple[Any, ...], instructions: object) -> Callable[[object], object]:
    """The check of a Score oracle's value: a level index from 0 to ``len(levels) - 1`` (as the
    judge answers; a bool is 0 or 1), not a level itself."""

    def fit(value: object) -> object:
        if isinstance(value, numbers.Real | np.bool_):
            index = float(value)
            if index.is_integer() and 0 <= index < len(levels):
                return value
        index_of = _index_in(levels, value)
        hint = "" if index_of is None else f" ({value!r} is a level: its index is {index_of})"
        raise ArgumentError(
            f"the oracle of Score({list(levels)}{_about(instructions)}) gave {value!r}, which "
            f"is no level index; give an index from 0 to {len(levels) - 1}{hint} (or None when "
            "the request has no right answer)"
        )

    return fit


def _index_in(levels: tuple[Any, ...], value: object) -> int | None:
    """The index of the level equal to ``value``, if one is (for a hint only: a value that
    cannot be compared is none)."""
    for index, level in enumerate(levels):
        try:
            if bool(level == value):
                return index
        except Exception:  # an array's ambiguous truth, a comparison that fails
            continue
    return None


def _about(instructions: object) -> str:
    return "" if not instructions else f", {str(instructions)!r:.60}"


@dataclass(frozen=True, init=False)
class Choice:
    """Pick one of ``options`` (ids, non-empty, unique, order kept)."""

    options: tuple[str, ...]
    instructions: str | None = None
    oracle: _Oracle = field(default=None, repr=False, compare=False)

    def __init__(
        self, options: Sequence[str], instructions: str | None = None, *, oracle: _Oracle = None
    ) -> None:
        if isinstance(options, str) or not isinstance(options, Sequence) or not options:
            raise ArgumentError("Choice options must be a non-empty list of option ids")
        opts = tuple(str(o) for o in options)
        if len(set(opts)) != len(opts):
            raise ArgumentError(
                f"Choice options must be unique, got {list(opts)} (option ids are compared as "
                "strings)"
            )
        _check_text(instructions, "Choice instructions")
        object.__setattr__(self, "options", opts)
        object.__setattr__(self, "instructions", instructions)
        object.__setattr__(self, "oracle", _oracle_on_scale(oracle, _option_of(opts, instructions)))


@dataclass(frozen=True, init=False)
class Score:
    """A score on ordered ``levels`` (at least two, low to high, answered as an index from 0)."""

    levels: tuple[Any, ...]
    instructions: str | None = None
    oracle: _Oracle = field(default=None, repr=False, compare=False)

    def __init__(
        self, levels: Sequence[Any], instructions: str | None = None, *, oracle: _Oracle = None
    ) -> None:
        if isinstance(levels, str) or not isinstance(levels, Sequence) or len(levels) < 2:
            raise ArgumentError("Score needs at least two levels, ordered low to high")
        _check_text(instructions, "Score instructions")
        scale = tuple(levels)
        object.__setattr__(self, "levels", scale)
        object.__setattr__(self, "instructions", instructions)
        object.__setattr__(self, "oracle", _oracle_on_scale(oracle, _level_of(scale, instructions)))


Question = Boolean | Choice | Score


@spelled
@dataclass(frozen=True, init=False)
class DecisionRequest:
    """Questions for a judge or classifier model, with the context it should judge.

    sy.DecisionRequest({"hard": sy.Boolean("Is this question hard?")}, context=request.prompt)

    ``cache_prefix_tokens``: the first tokens of the prompt that repeat on every such decision of a
    session (the judge's instructions, the task); with the judge's ``sy.profiles.PromptCache`` and a
    ``session_id`` they are cached as a model call's prompt is (see
    :mod:`sykit._world.prompt_cache`), ``cache_ttl`` (``"5m"``, ``"1h"``; None: the cache's own
    tier) choosing the tier.
    """

    questions: Mapping[str, Question]
    context: Any
    input_tokens: int
    cache_prefix_tokens: int
    session_id: Any
    cache_ttl: str | None

    def __init__(
        self,
        questions: Mapping[str, Question],
        context: Any = None,
        *,
        input_tokens: int | None = None,
        cache_prefix_tokens: int = 0,
        session_id: Any = None,
        cache_ttl: str | None = None,
    ) -> None:
        if not isinstance(questions, Mapping) or not questions:
            raise ArgumentError(
                "questions must be a non-empty mapping of question id to sy.Boolean/Choice/Score"
            )
        for qid, question in questions.items():
            if not isinstance(qid, str):
                raise ArgumentTypeError(
                    f"question ids must be strings, got {type(qid).__name__} {qid!r:.60}: a "
                    "judge answers by id in JSON, whose keys are strings (use str(id))"
                )
            if not isinstance(question, Boolean | Choice | Score):
                raise ArgumentTypeError(
                    f"questions[{qid!r}] must be sy.Boolean, sy.Choice or sy.Score, got {type(question).__name__}"
                )
        if input_tokens is None:
            instructions = sum(
                len(getattr(q, "instructions", None) or "") for q in questions.values()
            )
            input_tokens = min(
                TOKEN_LIMIT,
                _estimate_tokens(_context_text(context))
                + math.ceil(instructions / _CHARS_PER_TOKEN)
                + 20 * len(questions),
            )
        else:
            input_tokens = check_int(
                input_tokens,
                "DecisionRequest input_tokens",
                low=0,
                high=TOKEN_LIMIT,
                expected=f"an int from 0 to 2**31 - 1 ({TOKEN_LIMIT:,}) or None (estimated)",
                type_error=ArgumentError,
            )
        object.__setattr__(self, "questions", MappingProxyType(dict(questions)))
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "input_tokens", input_tokens)
        object.__setattr__(
            self, "cache_prefix_tokens", check_prefix(cache_prefix_tokens, self.input_tokens)
        )
        object.__setattr__(self, "session_id", session_id)
        object.__setattr__(self, "cache_ttl", check_ttl(cache_ttl))


def _context_text(context: object) -> str:
    """A decision's context as the judge reads it (JSON), to estimate its tokens; a context
    JSON cannot write (one that contains itself) is refused, as a real judge could not be sent
    it."""
    if context is None:
        return ""
    try:
        return json.dumps(context, default=str)
    except (ValueError, RecursionError) as error:
        raise ArgumentError(
            f"context cannot be written as JSON ({error}): pass a string, or plain dicts, "
            "lists and values that do not contain themselves"
        ) from None


@dataclass(frozen=True)
class Answer:
    """One answer: ``value`` is a bool (Boolean), an option id (Choice) or a level index (Score);
    ``probabilities`` maps each possible value to the judge's probability, when it gives them."""

    value: bool | str | float
    probabilities: Mapping[Any, float] | None = None
    confidence: float | None = None


@dataclass(frozen=True)
class DecisionResponse:
    """A judge's answers by question id."""

    answers: Mapping[str, Answer]
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    call_id: int | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, question_id: str) -> Answer:
        try:
            return self.answers[question_id]
        except (KeyError, TypeError):  # TypeError: an id that cannot be a key
            raise NoAnswer(
                f"no answer to {question_id!r}: the judge answered "
                f"{', '.join(map(repr, self.answers)) or 'no question'}; ask for a question id "
                "of the DecisionRequest"
            ) from None

    def yes(self, question_id: str) -> bool:
        """The answer to a Boolean question."""
        value = self[question_id].value  # a Choice's or a Score's would read as yes: refused
        if isinstance(value, bool | np.bool_):
            return bool(value)
        raise _wrong_reader(question_id, value, ".yes")

    def choice(self, question_id: str) -> str:
        """The option id chosen for a Choice question."""
        value = self[question_id].value
        if isinstance(value, str):
            return value
        raise _wrong_reader(question_id, value, ".choice")

    def score(self, question_id: str) -> float:
        """The level index given for a Score question."""
        value = self[question_id].value
        if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
            return float(value)
        raise _wrong_reader(question_id, value, ".score")


class NoAnswer(ArgumentError, KeyError):
    """A question id the decision has no answer to (``except KeyError`` catches it, as it
    caught the plain mapping's error)."""

    __str__ = BaseException.__str__  # the message itself, not KeyError's quoted repr of it


def _wrong_reader(question_id: str, value: object, used: str) -> ArgumentError:
    """Why an answer cannot be read as ``used`` asked: it answers another kind of question."""
    if isinstance(value, bool | np.bool_):
        kind, reader = "yes/no (a Boolean question)", ".yes"
    elif isinstance(value, str):
        kind, reader = "an option id (a Choice question)", ".choice"
    elif isinstance(value, numbers.Real):
        kind, reader = "a level index (a Score question)", ".score"
    else:
        return ArgumentError(
            f"{used}({question_id!r}): the answer {value!r:.60} is no bool, option id or level "
            "index; read it as response[question_id].value"
        )
    return ArgumentError(
        f"{used}({question_id!r}): {question_id!r} is answered with {value!r:.60}, "
        f"{kind}; read it with {reader}({question_id!r})"
    )


def ask_good_enough(
    request: Request, response: Response, *, threshold: float = 0.5
) -> DecisionRequest:
    """Ask a judge whether ``response`` answers ``request`` well enough to serve it.

    The question id is ``"good_enough"``. A simulated judge aims for the truth (the dataset's grade
    of ``response.model``'s answer is at least ``threshold``) and errs as often as its accuracy
    says; an ungraded answer gets a coin flip.
    """
    if not isinstance(request, Request):
        raise ArgumentTypeError(f"request must be a sy.Request, got {type(request).__name__}")
    if not isinstance(response, Response):
        raise _not_a_response(response)
    threshold = check_real(threshold, "threshold", expected="a number (the grade that is enough)")
    model = response.model

    def oracle(view: Any) -> bool | None:
        quality = view.quality(model)
        return None if quality is None or math.isnan(quality) else bool(quality >= threshold)

    return DecisionRequest(
        {
            "good_enough": Boolean(
                "Does the candidate answer fully and correctly answer the user's request?",
                oracle=oracle,
            )
        },
        context={"prompt": request.prompt, "answer": response.text},
        input_tokens=min(TOKEN_LIMIT, request.input_tokens + response.usage.output_tokens + 60),
    )


# --------------------------------------------------------------------------------------------
# Outcomes


@dataclass(frozen=True)
class Outcome:
    """What an algorithm decided: serve ``models[0]`` (then the fallbacks), or an answer already made."""

    models: tuple[str, ...]
    request: Request | None = None
    response: Response | None = None

    @property
    def model(self) -> str:
        """The selected model."""
        return self.models[0]

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """Models the answer-phase call may fall back to, in order."""
        return self.models[1:]


def _model_name(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ArgumentTypeError(f"{name} must be a non-empty model name (str), got {value!r}")
    return value


def _outcome(
    models: tuple[str, ...], request: Request | None, response: Response | None
) -> Outcome:
    """An :class:`Outcome` without the frozen dataclass's per-field ``__setattr__`` calls (one is
    made per request)."""
    outcome = _new(Outcome)
    fields = outcome.__dict__
    fields["models"] = models
    fields["request"] = request
    fields["response"] = response
    return outcome


def _not_a_response(response: object) -> ArgumentTypeError:
    """Why ``response`` (no Response) is refused, with a hint for the usual slips."""
    return ArgumentTypeError(
        f"response must be a sy.Response, got {type(response).__name__}"
        + (_race_hint(response) or _stream_hint(response) or _await_hint(response))
    )


def _stream_hint(value: object) -> str:
    """A hint when ``value`` is a stream, or the ``response`` of one not read to its end."""
    if value is None:
        return (
            " (a stream's `response` is None until the stream has ended with an answer: read "
            "it to the end with `async for chunk in stream` first)"
        )
    if hasattr(value, "__aiter__") and hasattr(type(value), "response"):  # a ModelStream
        return (
            " (a stream: read it to the end with `async for chunk in stream`, then pass "
            "`stream.response`)"
        )
    return ""


def _await_hint(value: object) -> str:
    """A hint for the commonest slip: a call passed on without ``await``. The coroutine is closed
    so Python does not also warn that it was never awaited."""
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if close is not None:
            close()
        return " (did you forget `await`? e.g. `response = await driver.call_model(...)`)"
    return ""


def _race_hint(value: object) -> str:
    """A hint when ``value`` is what ``sy.first_ok`` or ``sy.first`` returns, ``(index, result)``,
    passed on as if it were the response."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], int):
        return (
            " (an (index, response) pair: sy.first_ok(...) and sy.first(...) return "
            "`(index, response)`; unpack it: `index, response = await sy.first_ok(...)`)"
        )
    return ""


def route_to(model: str, request: Request, fallbacks: Sequence[str] = ()) -> Outcome:
    """Serve ``request`` from ``model``; on an eligible failure the runner tries ``fallbacks`` in order."""
    if not isinstance(request, Request):
        raise ArgumentTypeError(f"request must be a sy.Request, got {type(request).__name__}")
    if isinstance(fallbacks, str):
        fallbacks = [fallbacks]
    elif type(fallbacks) is not list and type(fallbacks) is not tuple:
        _check_fallbacks(fallbacks)
    models = (_model_name(model, "model"), *(_model_name(f, "fallbacks[]") for f in fallbacks))
    check_candidate_count(len(models), "route_to(model, fallbacks)")
    return _outcome(models, request, None)


def _check_fallbacks(fallbacks: object) -> None:
    """Refuse fallbacks that are no list of model names (None, one number, a mapping)."""
    if isinstance(fallbacks, Mapping) or not isinstance(fallbacks, Iterable):
        raise ArgumentTypeError(
            f"fallbacks must be a list of model names, got {type(fallbacks).__name__} "
            f"{fallbacks!r:.60} (pass [] or leave it out for no fallbacks)"
        )


def check_candidate_count(n: int, name: str) -> None:
    """Refuse a call with more candidates than the records can number."""
    if n > CANDIDATE_LIMIT:
        raise ArgumentError(
            f"{name} has {n:,} candidate models; a call may have at most {CANDIDATE_LIMIT:,} "
            "(the attempt table stores candidate positions as 16-bit integers)"
        )


def answered(model: str, response: Response) -> Outcome:
    """The algorithm already has the answer (e.g. from a routing-phase call): serve it as is.

    ``model`` must be the model that gave it (``response.model``): the records report it as
    both selected and served, so another name is refused rather than misreported. ``response``
    must be one that a call of this request returned (``driver.call_model``, a stream's
    ``response``, a race's winner): any other (built by hand, kept from another request) has no
    attempt behind it, and the request fails as ``invalid_outcome``."""
    if not isinstance(response, Response):
        raise _not_a_response(response)
    model = _model_name(model, "model")
    if response.model != model:
        raise ArgumentError(_not_its_answer(model, response.model))
    return _outcome((model,), None, response)


def _not_its_answer(model: str, answered_by: object) -> str:
    """Why ``answered`` refuses another model's response: the results would report ``model`` as
    selected and the other as served, a routing decision the algorithm never made."""
    return (
        f"answered({model!r}, response): the response came from {answered_by!r}, not {model!r}; "
        "an answer can only be served as the model that gave it: "
        "`sy.answered(response.model, response)`, or `sy.route_to(model, request)` to have "
        f"{model!r} answer"
    )
