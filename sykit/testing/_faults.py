"""The fault catalogue of the fake provider, and how a fault name is read.

A fault is selected by a model name (``"fail-429-once"``) or by ``FakeModel(fault=...)``; both go
through the same parser here, so a name means the same thing either way and a typo fails early with
the list of known faults.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sykit._base.errors import ArgumentError, ArgumentTypeError

__all__ = ["ERROR_FAULT", "FAULTS", "STATUS_FAULT", "fault_of_name", "parse_fault"]

#: The built-in faults, by name: what the server does when a request selects one.
FAULTS: Mapping[str, str] = {
    "fail-429": "429 rate_limit_exceeded with a Retry-After header",
    "fail-<status>": "that status (500, 502, 503, 403, ...) with an OpenAI-style error body",
    "error-<status>": "that status (400-599) with the body of sy.faults.ErrorFault(status): its "
    "realistic message, type and code (401 invalid_api_key, 404 model_not_found, ...)",
    "reset": "reads the request, then resets the connection (TCP RST)",
    "no-response": "reads the request, then closes the connection without answering",
    "hang": "reads the request and never answers (until the client gives up)",
    "slow-first-token": "answers normally, but the first token comes after FakeProvider.slow_s",
    "cut-stream": "stops half-way through the answer and closes the connection",
    "malformed-chunk": "streams a few tokens, then a chunk that is not JSON",
    "no-done": "streams the whole answer with finish_reason and usage, but no data: [DONE]",
    "empty-stream": "streams a role-only chunk and data: [DONE], then closes with the body "
    "unfinished (what llama.cpp sends to a stream it interrupts)",
    "no-content": "streams a role-only chunk and data: [DONE]: no content, no finish_reason",
    "done-then-cut": "streams the whole answer and data: [DONE], then closes with the body "
    "unfinished",
    "malformed-json": "200 with a truncated JSON body",
    "not-chat": "200 with valid JSON that is not a chat completion",
    "bad-verdict": "200 whose message is prose, not the JSON verdict a decision asks for",
    "vision-400": "400: the model does not support image input (a capability rejection)",
    "overflow-400": "400 context_length_exceeded",
    "policy-400": "400 content_policy_violation",
}

_PLAIN_FAULTS = frozenset(k for k in FAULTS if "<" not in k)
_SPEC = re.compile(r"^(?P<base>.+?)(?:-(?P<once>once)|-x(?P<times>\d+))?$")
STATUS_FAULT = re.compile(r"^fail-(?P<status>[1-5]\d\d)$")
ERROR_FAULT = re.compile(r"^error-(?P<status>[45]\d\d)$")


def _known(name: str) -> bool:
    return name in _PLAIN_FAULTS or bool(STATUS_FAULT.match(name) or ERROR_FAULT.match(name))


def parse_fault(spec: str | None, what: str) -> tuple[str | None, int | None]:
    """``"fail-500-once"`` → ``("fail-500", 1)``; ``"reset"`` → ``("reset", None)`` (always)."""
    if spec is None:
        return None, None
    if not isinstance(spec, str) or not spec:
        raise ArgumentTypeError(f"{what} must be a fault name (str) or None, got {spec!r}")
    for candidate, times in _fault_candidates(spec):
        if _known(candidate):
            return candidate, times
    known = ", ".join(sorted(_PLAIN_FAULTS))
    raise ArgumentError(
        f"{what}: unknown fault {spec!r}; known faults: {known}, fail-<status>, error-<status> "
        "(each optionally with -once or -x<N>), or a sy.faults.ErrorFault"
    )


def _fault_candidates(name: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = [(name, None)]
    match = _SPEC.match(name)
    if match and (match["once"] or match["times"]):
        out.append((match["base"], 1 if match["once"] else int(match["times"])))
    return out


def fault_of_name(name: str) -> tuple[str | None, int | None]:
    """The fault a bare model name selects, or (None, None) for a healthy model."""
    for candidate, times in _fault_candidates(name):
        if _known(candidate):
            return candidate, times
    return None, None
