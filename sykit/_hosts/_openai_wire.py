"""The OpenAI chat-completions wire format, as the HTTP host speaks it: no I/O, no httpx.

Building a request body (a model call, or a decision asking for a strict JSON-schema answer or a
forced tool call), reading a complete response, following a server-sent-event stream chunk by
chunk, and parsing a judge's verdict. Kept apart from the transport so that what goes over the wire
can be read, and tested, without a connection; every way a 2xx body can be unusable ends here as an
``InvalidResponseError`` that says what was wrong.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from sykit._base.checks import is_count
from sykit._base.error_bodies import ERROR_DEFAULTS, error_object
from sykit._base.errors import InvalidResponseError, ModelError
from sykit._base.vocab import Kind
from sykit._hosts._secrets import Secret, scrub_json
from sykit._hosts.base import Attempt, Reply
from sykit._world.classify import error_fields
from sykit._world.models import Answer, Boolean, Choice, DecisionRequest, Request, Score, Usage

__all__ = [
    "ERROR_DEFAULTS",
    "ChatStream",
    "Endpoint",
    "StreamBroken",
    "completion_reply",
    "decision_body",
    "error_object",
    "format_rejection",
    "model_body",
    "not_chat_body",
    "not_chat_message",
]

_CHARS_PER_TOKEN = 4
#: The most tokens a count read from a server may say: a larger one is not believed (nor can a
#: record's integers hold it), and the estimate stands in for it.
_MOST_TOKENS = 2**53
_SNIPPET = 120
_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how one model is called: the full URL, the upstream name, key, extras, streaming."""

    url: str
    model_id: str
    key: Secret | None
    extra_body: Mapping[str, Any]
    stream: bool


# -- request bodies ------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Messages are frozen mappings; JSON wants dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _messages(request: Request) -> list[dict[str, Any]]:
    messages = [_plain(m) for m in request.messages]
    if request.images:
        index = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"),
            default=len(messages) - 1,
        )
        message = messages[index]
        content = message.get("content")
        parts = (
            list(content)
            if isinstance(content, list)
            else [{"type": "text", "text": str(content or "")}]
        )
        parts += [{"type": "image_url", "image_url": {"url": url}} for url in request.images]
        messages[index] = {**message, "content": parts}
    return messages


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    if "type" in tool:
        return _plain(tool)
    function = {"name": str(tool.get("name", "tool"))}
    if "description" in tool:
        function["description"] = tool["description"]
    function["parameters"] = _plain(tool.get("parameters", {"type": "object", "properties": {}}))
    return {"type": "function", "function": function}


def model_body(request: Request, endpoint: Endpoint, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": endpoint.model_id, "messages": _messages(request)}
    if request.max_output_tokens is not None:
        body["max_tokens"] = request.max_output_tokens
    if request.tools:
        body["tools"] = [_tool(t) for t in request.tools]
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(endpoint.extra_body)
    body["model"] = endpoint.model_id
    return body


def _question_schema(question: Any) -> dict[str, Any]:
    if isinstance(question, Boolean):
        return {"type": "boolean"}
    if isinstance(question, Choice):
        return {"type": "string", "enum": list(question.options)}
    return {"type": "integer", "enum": list(range(len(question.levels)))}


def _question_text(qid: str, question: Any) -> str:
    hint = f": {question.instructions}" if question.instructions else ""
    if isinstance(question, Boolean):
        meaning = ""
        if question.true_description:
            meaning += f" true means {question.true_description}."
        if question.false_description:
            meaning += f" false means {question.false_description}."
        return f'- "{qid}" (true or false){hint}{meaning}'
    if isinstance(question, Choice):
        return f'- "{qid}" (one of {", ".join(map(repr, question.options))}){hint}'
    levels = ", ".join(f"{i} = {level}" for i, level in enumerate(question.levels))
    return f'- "{qid}" (an integer level, low to high: {levels}){hint}'


def decision_body(request: DecisionRequest, endpoint: Endpoint, fmt: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {qid: _question_schema(q) for qid, q in request.questions.items()},
        "required": list(request.questions),
        "additionalProperties": False,
    }
    system = (
        "You are a careful judge. Read the context and answer every question. Reply with a JSON "
        "object only, one key per question id:\n"
        + "\n".join(_question_text(qid, q) for qid, q in request.questions.items())
    )
    context = request.context
    user = context if isinstance(context, str) else json.dumps(_plain(context), default=str)
    body: dict[str, Any] = {
        "model": endpoint.model_id,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    if fmt == "tool":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "answer",
                    "description": "Record the answer to every question.",
                    "parameters": schema,
                    "strict": True,
                },
            }
        ]
        body["tool_choice"] = {"type": "function", "function": {"name": "answer"}}
    else:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "decision", "strict": True, "schema": schema},
        }
    body.update(endpoint.extra_body)
    body["model"] = endpoint.model_id
    return body


#: What a server says when it refuses a decision format itself, by format, lower case. A bare
#: "Input should be" is not enough: it is pydantic's wording for any invalid field.
_FORMAT_PHRASES: dict[str, tuple[str, ...]] = {
    "json_schema": (
        "response_format",
        "response format",
        "json_schema",
        "json schema",
        "json_object",
        "structured output",
    ),
    "tool": (
        "tool_choice",
        "tools",
        "tool call",
        "tool_call",
        "function call",
        "function_call",
        "--jinja",
    ),
}
#: Statuses servers refuse a format with: 400 and 422 (validation), 500 (llama.cpp), 501.
_FORMAT_STATUSES = frozenset((400, 422, 500, 501))


def format_rejection(status: int, body: Any, fmt: str) -> str | None:
    """``"HTTP <status>: <the server's words>"`` when a non-2xx answer to a decision says the server
    does not support the format ``fmt`` asked in (llama.cpp: 500 "Input should be 'text' or
    'json_object'"), else None. Such a refusal is not transient: resending it cannot succeed, so it
    must not be retried as an unavailable server."""
    if status not in _FORMAT_STATUSES:
        return None
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    _, message, _ = error_fields(body)
    if message:
        text = message
    elif isinstance(body, str):
        text = body
    else:
        text = json.dumps(_plain(body), default=str)  # e.g. a validation error's "detail" list
    lowered = text.lower()
    if not any(phrase in lowered for phrase in _FORMAT_PHRASES.get(fmt, ())):
        return None
    return f"HTTP {status}: {_snippet(text)}"


# -- response bodies -----------------------------------------------------------------------------


def _read_json(text: str, secrets: Sequence[Secret] = ()) -> Any:
    """``text`` decoded as JSON and scrubbed of ``secrets``; ``ValueError`` for anything else,
    including JSON nested too deeply to decode (which Python reports as a ``RecursionError``)."""
    try:
        return scrub_json(json.loads(text), secrets)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _text(content: Any) -> str:
    """A message's content as text: a string, or a list of content parts whose texts are joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "".join(parts)


def _snippet(text: str) -> str:
    return repr(text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…")


def not_chat_body(model: str) -> dict[str, Any]:
    """A 200 body that is valid JSON but not a chat completion: a model list, as a gateway might
    send from the wrong route (the fake provider's ``not-chat``, the simulated ``non_chat``)."""
    return {"object": "list", "data": [{"id": model, "object": "model"}]}


def not_chat_message(model: str) -> str:
    """What :func:`completion_reply` says of :func:`not_chat_body` sent as JSON."""
    return _not_chat(json.dumps(not_chat_body(model)))


def _not_chat(text: str) -> str:
    return f"the 2xx body is not a chat completion (no choices[0].message): {_snippet(text)}"


def _invalid(message: str, model: str, status: int) -> Reply:
    return Reply(status, error=InvalidResponseError(message, model=model, http_status=status))


def _message(data: Any) -> Mapping[str, Any] | None:
    if not isinstance(data, Mapping):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, Mapping) else None


def _tool_arguments(tool_calls: Any) -> str:
    if not isinstance(tool_calls, list):
        return ""
    parts = []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            parts.append(arguments)
        elif isinstance(arguments, Mapping):  # some servers send the arguments decoded
            parts.append(json.dumps(arguments))
    return "".join(parts)


def _usage(raw: Any, input_estimate: int, text: str | None, tokens: int | None = None) -> Usage:
    """The provider's token counts; an estimate (≈4 characters a token) where it gives none.

    The prompt-cache counts come in three shapes: OpenAI's chat completions
    (``prompt_tokens_details.cached_tokens``, of ``prompt_tokens``), OpenAI's responses
    (``input_tokens_details.cached_tokens``, of ``input_tokens``), and Anthropic's, passed through
    by gateways (``cache_read_input_tokens`` and ``cache_creation_input_tokens``, split by lifetime
    in ``cache_creation``; without ``prompt_tokens`` its ``input_tokens`` leaves both out, so the
    prompt is their sum)."""
    prompt = completion = None
    anthropic = False
    if isinstance(raw, Mapping):
        prompt = raw.get("prompt_tokens")
        if prompt is None:
            prompt = raw.get("input_tokens")
            anthropic = any(key in raw for key in _ANTHROPIC_CACHE_KEYS)
        completion = raw.get("completion_tokens", raw.get("output_tokens"))
    if not _is_tokens(prompt):
        prompt, anthropic = input_estimate, False
    if not _is_tokens(completion):
        completion = tokens if tokens is not None else math.ceil(len(text or "") / _CHARS_PER_TOKEN)
    cached = written = written_1h = 0
    if isinstance(raw, Mapping):
        read = None
        for name in ("prompt_tokens_details", "input_tokens_details"):
            details = raw.get(name)
            if read is None and isinstance(details, Mapping):
                read = details.get("cached_tokens")
        if read is None:
            read = raw.get("cache_read_input_tokens")
        creation = raw.get("cache_creation")
        by_lifetime = creation if isinstance(creation, Mapping) else {}
        short = by_lifetime.get("ephemeral_5m_input_tokens")
        long = by_lifetime.get("ephemeral_1h_input_tokens")
        created = raw.get("cache_creation_input_tokens")
        if created is None and (_is_tokens(short) or _is_tokens(long)):
            created = (short if _is_tokens(short) else 0) + (long if _is_tokens(long) else 0)
        if anthropic:
            prompt += (read if _is_tokens(read) else 0) + (created if _is_tokens(created) else 0)
        cached = _count(read, prompt)
        written = _count(created, prompt - cached)
        written_1h = _count(long, written)
    return Usage(prompt, completion, cached, written, written_1h)


#: Keys only Anthropic's usage has: with them, its ``input_tokens`` leaves the cache out.
_ANTHROPIC_CACHE_KEYS = ("cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation")


def _is_tokens(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a token count to believe: an int from 0 to ``_MOST_TOKENS``."""
    return is_count(value) and value <= _MOST_TOKENS


def _count(value: Any, most: int) -> int:
    """A reported token count, kept within what it can be part of (0 when absent or invalid)."""
    return min(value, most) if _is_tokens(value) else 0


def completion_reply(
    attempt: Attempt, status: int, text: str, *, secrets: Sequence[Secret] = ()
) -> Reply:
    """The reply for a complete (non-streamed) 2xx body, already decoded and scrubbed as text;
    its JSON is scrubbed of ``secrets`` again once parsed, where escapes have been undone."""
    model = attempt.model
    try:
        data = _read_json(text, secrets)
    except ValueError:
        return _invalid(f"the 2xx body is not valid JSON: {_snippet(text)}", model, status)
    message = _message(data)
    if message is None:
        return _invalid(_not_chat(text), model, status)
    content = _text(message.get("content"))
    tool_text = _tool_arguments(message.get("tool_calls"))
    request = attempt.request
    if attempt.kind == Kind.DECISION:
        assert isinstance(request, DecisionRequest)
        answers = _parse_verdict(request, tool_text or content, model, status)
        if isinstance(answers, ModelError):
            return Reply(status, error=answers)
        usage = _usage(data.get("usage"), request.input_tokens, tool_text or content)
        return Reply(status, usage=usage, answers=answers)
    usage = _usage(data.get("usage"), request.input_tokens, content or tool_text)
    return Reply(status, text=content or tool_text, usage=usage)


# -- streamed bodies -----------------------------------------------------------------------------


class StreamBroken(Exception):
    """A stream chunk that ends the answer: malformed (``invalid``) or an error event."""

    def __init__(self, message: str, *, invalid: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.invalid = invalid


class ChatStream:
    """A streamed chat completion as it arrives, fed one SSE line at a time.

    :meth:`feed` says whether a line carried a token (content or tool-call arguments) and raises
    :class:`StreamBroken` for a chunk that is not JSON or an error event. ``done`` is set by
    ``data: [DONE]``, ``finished`` by a ``finish_reason``; a stream that ends with neither is cut.
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.tool_pieces: list[str] = []
        self.tokens = 0
        self.finished = False
        self.done = False
        self.usage: Any = None
        self.last = ""  # the text of the last token fed

    def feed(self, line: str) -> bool:
        if not line.startswith("data:"):
            return False  # blank separators, comments, event:/id:/retry: fields
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return False
        try:
            chunk = _read_json(data)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            raise StreamBroken(f"malformed stream chunk {_snippet(data)}", invalid=True)
        if "error" in chunk and not chunk.get("choices"):
            raise StreamBroken(f"error event in the stream: {_snippet(data)}")
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            return False
        choice = choices[0]
        delta = choice.get("delta") or {}
        piece = _text(delta.get("content")) if isinstance(delta, dict) else None
        tool_piece = _tool_arguments(delta.get("tool_calls")) if isinstance(delta, dict) else ""
        token = bool(piece or tool_piece)
        if token:
            if isinstance(piece, str):
                self.pieces.append(piece)
            if tool_piece:
                self.tool_pieces.append(tool_piece)
            self.last = piece if isinstance(piece, str) and piece else tool_piece
            self.tokens += 1
        if choice.get("finish_reason"):
            self.finished = True
        return token

    def text(self) -> str:
        """The answer received: the content, else the tool-call arguments."""
        return "".join(self.pieces) or "".join(self.tool_pieces)

    def usage_of(self, input_estimate: int) -> Usage:
        """The provider's final usage chunk; where it gave none, the estimate and tokens counted."""
        return _usage(self.usage, input_estimate, None, self.tokens)


# -- decision verdicts ---------------------------------------------------------------------------

_TRUE = frozenset(("true", "yes", "y", "1"))
_FALSE = frozenset(("false", "no", "n", "0"))


def _parse_verdict(
    request: DecisionRequest, text: str, model: str, status: int
) -> dict[str, Answer] | ModelError:
    """The judge's answers by question id, or the InvalidResponseError saying what is wrong."""

    def bad(reason: str) -> ModelError:
        return InvalidResponseError(
            f"unparseable verdict: {reason}; the judge said {_snippet(text)}",
            model=model,
            http_status=status,
        )

    fenced = _FENCE.match(text)
    stripped = fenced.group(1) if fenced else text.strip()
    try:
        data = _read_json(stripped)
    except ValueError:
        return bad("not JSON")
    if not isinstance(data, Mapping):
        return bad("not a JSON object")
    questions = request.questions
    if not any(qid in data for qid in questions) and len(data) == 1:
        (inner,) = data.values()
        if isinstance(inner, Mapping):
            data = inner  # {"answers": {...}}
    answers = {}
    for qid, question in questions.items():
        if qid not in data:
            return bad(f"no answer to {qid!r}")
        value = data[qid]
        parsed = _answer(question, value)
        if parsed is None:
            return bad(f"{value!r} is not a valid answer to {qid!r} ({_expected(question)})")
        answers[qid] = Answer(parsed)
    return answers


def _expected(question: Any) -> str:
    if isinstance(question, Boolean):
        return "expected true or false"
    if isinstance(question, Choice):
        return f"expected one of {list(question.options)}"
    return f"expected a level index from 0 to {len(question.levels) - 1}"


def _answer(question: Any, value: Any) -> bool | str | float | None:
    if isinstance(question, Boolean):
        if isinstance(value, bool):
            return value
        if isinstance(value, int | str):
            word = str(value).strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
        return None
    if isinstance(question, Choice):
        if isinstance(value, str) and value.strip() in question.options:
            return value.strip()
        return None
    assert isinstance(question, Score)
    levels = question.levels
    if not isinstance(value, bool) and isinstance(value, int | float) and float(value).is_integer():
        index = int(value)
        return float(index) if 0 <= index < len(levels) else None
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            try:
                index = int(text)
            except ValueError:  # more digits than int() reads
                return None
            return float(index) if 0 <= index < len(levels) else None
    for index, level in enumerate(levels):
        if value == level:
            return float(index)
    return None
