"""What the fake provider says: chat-completions error bodies, rejections, answer text and usage.

Pure functions of the request body and the :class:`FakeModel`, no I/O: the server decides *when*
to answer, these decide *what*, in the OpenAI wire format that :class:`sykit.HttpHost` parses
(including a decision's structured answer, as JSON text or a forced tool call).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from sykit.testing._model import FakeModel

__all__ = [
    "answer_pieces",
    "error_body",
    "format_rejection",
    "prompt_tokens",
    "rejection",
    "tool_call",
    "usage",
]

_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")


def error_body(message: str, type_: str, code: str | None) -> dict[str, Any]:
    """An OpenAI-style error body."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The prompt's tokens as this provider counts them: about four characters a token, an image
    765, the tool schemas by size, and four per message."""
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


def _ends_with_assistant(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages") or ()
    last = messages[-1] if messages else None
    return isinstance(last, Mapping) and last.get("role") == "assistant"


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


def format_rejection(
    model: FakeModel, body: Mapping[str, Any]
) -> tuple[int, dict[str, Any]] | None:
    """The status and body with which a model refuses a structured-output format it lacks, else
    None: the messages of llama.cpp's server, in its error shape (``code`` is the status)."""
    fmt = body.get("response_format")
    status = model.reject_json_schema
    if status is not None and isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        message = (
            "1 validation error for ResponseFormat\ntype\n  Input should be 'text' or "
            "'json_object' [type=literal_error, input_value='json_schema', input_type=str]"
        )
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return status, {"error": {"code": status, "message": message, "type": kind}}
    status = model.reject_tools
    if status is not None and (body.get("tools") or body.get("tool_choice")):
        kind = "server_error" if status >= 500 else "invalid_request_error"
        message = "tools param requires --jinja flag"
        return status, {"error": {"code": status, "message": message, "type": kind}}
    return None


def rejection(
    name: str, model: FakeModel, body: Mapping[str, Any], fault: str | None
) -> dict[str, Any] | None:
    """The 400 error body for a request the model refuses (images, context, prefill, policy), else
    None."""
    if fault == "vision-400" or (not model.vision and _has_images(body)):
        return error_body(f"{name} does not support image input.", "invalid_request_error", None)
    requested = prompt_tokens(body) + int(body.get("max_tokens") or 0)
    window = model.context_window
    if fault == "overflow-400" or (window is not None and requested > window):
        window = window or 4096
        return error_body(
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{max(requested, window + 1)} tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
        )
    if not model.prefill and _ends_with_assistant(body):
        return error_body(
            "This model does not support assistant message prefill. The conversation must end "
            "with a user message.",
            "invalid_request_error",
            None,
        )
    if fault == "policy-400":
        return error_body(
            "Your request was rejected as a result of our safety system.",
            "invalid_request_error",
            "content_policy_violation",
        )
    return None


def answer_pieces(
    name: str,
    model: FakeModel,
    body: Mapping[str, Any],
    fault: str | None,
    u: Sequence[float],
) -> tuple[list[str], str | None]:
    """The answer as token pieces, and the tool name when the answer is a forced tool call."""
    structured = _decision_schema(body)
    if fault == "bad-verdict":
        return _pieces("Sure! The answer looks fine to me."), None
    if structured is not None:
        kind, schema = structured
        text = json.dumps(_fill_schema(schema, model.verdict))
        return _pieces(text), kind.removeprefix("tool:") if kind.startswith("tool:") else None
    n = max(1, round(model.output_tokens.quantile(u[3])))
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    if isinstance(limit, int) and limit > 0:
        n = min(n, limit)
    return [_WORDS[i % len(_WORDS)] + " " for i in range(n)], None


def _pieces(text: str) -> list[str]:
    """Split text into token-sized pieces of about four characters."""
    return [text[i : i + 4] for i in range(0, len(text), 4)] or [""]


def tool_call(name: str, arguments: str) -> dict[str, Any]:
    """A complete message's ``tool_calls`` entry."""
    return {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}


def usage(body: Mapping[str, Any], completion: int) -> dict[str, int]:
    """The ``usage`` object: the prompt estimated at about four characters a token."""
    prompt = prompt_tokens(body)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
