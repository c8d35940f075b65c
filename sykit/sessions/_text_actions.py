"""mini-swe-agent trajectories as transcript calls, their text actions as structured tool calls.

An agent such as mini-swe-agent keeps its action as a fenced bash block in the assistant's text
and gets the command's output back as a user message, so its conversation carries no tool call
and the stage router (which reads structured calls only) sees nothing. Here each action becomes
the call mini-swe-agent's own tool-calling mode makes, a ``bash`` tool with a ``command`` argument,
and the message that answers it becomes that call's ``tool`` result, text unchanged.

What mini-swe-agent writes, from its source (github.com/SWE-agent/mini-swe-agent):

- ``src/minisweagent/run/utils/save.py`` (v1): a ``*.traj.json`` file is one JSON object with
  ``messages`` (``role`` and ``content``), ``info`` (``exit_status``, ``submission``,
  ``model_stats`` with ``instance_cost`` and ``api_calls``, ``config``) and
  ``trajectory_format`` ``"mini-swe-agent-1"``; the SWE-bench runner adds ``instance_id``.
- ``src/minisweagent/agents/default.py`` (v1): ``parse_action`` runs
  ``re.findall(r"```bash\\s*\\n(.*?)\\n```", content, re.DOTALL)`` on each answer and takes the one
  match, stripped; any other count raises ``FormatError`` and nothing runs (the error text comes
  back as a user message). The command's output comes back as a user message rendered with
  ``action_observation_template`` (``<returncode>0</returncode>\\n<output>...</output>`` in
  ``config/extra/swebench.yaml``). ``has_finished`` ends the run when the output's first line is
  ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` or ``MINI_SWE_AGENT_FINAL_OUTPUT``; the rest of the
  output (the submission) is then the last user message.
- ``docs/advanced/v2_migration.md`` and ``src/minisweagent/models/utils/actions_text.py`` (v2):
  ``action_regex`` moved to the model config (default ``mswea_bash_command`` blocks), the same
  exactly-one rule, messages keep an ``extra`` field (observations ``extra.returncode``), a final
  ``exit`` message ends the run, and ``trajectory_format`` is ``"mini-swe-agent-1.1"``.
- ``src/minisweagent/models/utils/actions_toolcall.py`` (v2 tool-calling mode): the ``bash`` tool
  (:data:`BASH_TOOL`) with a ``command`` argument, each result a ``tool`` message rendered with
  the same observation template. That is the structured form a text action is turned into;
  trajectories of that mode already carry their calls and are kept as they are.

Each assistant message is one LLM call: its prompt is every message before it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sykit._base.errors import ArgumentError, ArgumentTypeError

__all__ = ["BASH_TOOL", "DEFAULT_ACTION_REGEX", "action_pattern", "trajectory_calls"]

#: mini-swe-agent v1's action block; v2 trajectories record their own in ``info.config``.
DEFAULT_ACTION_REGEX = r"```bash\s*\n(.*?)\n```"

#: The tool mini-swe-agent's tool-calling mode offers (``actions_toolcall.py``).
BASH_TOOL: Mapping[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to execute"}
            },
            "required": ["command"],
        },
    },
}

_ROLES = ("system", "user", "assistant", "tool", "exit")
_RETURNCODE = re.compile(r"<returncode>\s*(-?[0-9]+)\s*</returncode>")
#: Where a trajectory records the regex its run parsed with (v1 agent config, v2 model config).
_RECORDED = (("agent", "action_regex"), ("model", "action_regex"))


def action_pattern(action_regex: Any, where: str = "action_regex") -> re.Pattern[str]:
    """``action_regex`` compiled as mini-swe-agent uses it (``re.DOTALL``), with one group: the
    command."""
    if not isinstance(action_regex, str):
        raise ArgumentTypeError(
            f"{where} must be a regular expression string, got {type(action_regex).__name__}"
        )
    try:
        pattern = re.compile(action_regex, re.DOTALL)
    except re.error as exc:
        raise ArgumentError(f"{where} {action_regex!r} is not a valid regex ({exc})") from None
    if pattern.groups != 1:
        raise ArgumentError(
            f"{where} {action_regex!r} has {pattern.groups} groups; it needs exactly one, the "
            f"command, as in {DEFAULT_ACTION_REGEX!r}"
        )
    return pattern


def trajectory_calls(
    path: Path, pattern: re.Pattern[str] | None
) -> tuple[str | int, list[tuple[str, str, dict[str, Any]]]]:
    """The session id of the trajectory at ``path`` and its LLM calls, each as (where, origin,
    transcript line): the line a JSONL transcript would hold for that call.

    ``pattern`` is the action regex; None takes the one the trajectory records, else
    :data:`DEFAULT_ACTION_REGEX`."""
    data = _load(path)
    info = data.get("info", {})
    if not isinstance(info, dict):
        raise ArgumentError(f"{path}: 'info' must be an object, got {type(info).__name__}")
    sid = data.get("instance_id", _stem(path))
    if isinstance(sid, bool) or not isinstance(sid, str | int):
        raise ArgumentError(f"{path}: instance_id must be a string or an integer, got {sid!r}")
    if pattern is None:
        pattern = _recorded_pattern(info, path)
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ArgumentError(f"{path}: the trajectory has no 'messages' list")
    converted, codes, answers = _convert(messages, pattern, str(path))
    if not answers:
        raise ArgumentError(
            f"{path}: no assistant message, so session {sid!r} has no LLM calls to replay"
        )
    exit_status = info.get("exit_status")
    tool = copy.deepcopy(
        BASH_TOOL
    )  # the session's own: its turns' tools share no state with others
    calls = []
    for index in answers:
        where = f"{path}, messages[{index}] (session {sid!r})"
        if index == 0:
            raise ArgumentError(
                f"{where}: the trajectory opens with the assistant's answer; its prompt (the "
                "system message and the task) is missing"
            )
        line: dict[str, Any] = {
            "messages": converted[:index],
            "tools": [tool],
            "exit_status": exit_status if isinstance(exit_status, str) else None,
            "returncode": codes[index - 1],
        }
        usage = _usage(messages[index])
        if usage is not None:
            line["usage"] = usage
        calls.append((where, f"{path.name}:messages[{index}]", line))
    return sid, calls


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ArgumentError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "a mini-swe-agent trajectory is one JSON object"
        ) from None
    if not isinstance(data, dict):
        raise ArgumentError(
            f"{path}: expected a JSON object with 'messages', got {type(data).__name__}"
        )
    return data


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".traj.json", ".json"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem


def _recorded_pattern(info: dict[str, Any], path: Path) -> re.Pattern[str]:
    config = info.get("config")
    for section, key in _RECORDED:
        part = config.get(section) if isinstance(config, dict) else None
        if isinstance(part, dict) and key in part:
            try:
                return action_pattern(part[key], f"{path}: info.config.{section}.{key}")
            except (ArgumentError, ArgumentTypeError) as exc:
                raise ArgumentError(f"{exc}; pass action_regex= to parse with another") from None
    return action_pattern(DEFAULT_ACTION_REGEX)


def _convert(
    messages: list[Any], pattern: re.Pattern[str], where: str
) -> tuple[list[dict[str, Any]], list[int | None], list[int]]:
    """The messages in OpenAI chat form (one for one, a final ``exit`` dropped), the return code
    each shows (None where none), and the indices of the assistant messages."""
    converted: list[dict[str, Any]] = []
    codes: list[int | None] = []
    answers: list[int] = []
    # a run in tool-calling mode ran only the calls its answers carry: its text is never parsed
    parse = not any(isinstance(m, dict) and m.get("tool_calls") for m in messages)
    pending: str | None = None  # the id of the text action awaiting its output
    for i, message in enumerate(messages):
        at = f"{where}, messages[{i}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ArgumentError(f"{at}: expected an object with a 'role', got {message!r:.80}")
        role = message["role"]
        if role not in _ROLES:
            raise ArgumentError(f"{at}: role {role!r} is not one of {list(_ROLES)}")
        if role == "exit":
            if i != len(messages) - 1:
                raise ArgumentError(f"{at}: an 'exit' message ends a run, yet messages follow it")
            break
        code = None
        if pending is not None:  # whatever answers an action is its result
            if role != "user":
                raise ArgumentError(
                    f"{at}: the action of messages[{i - 1}] is answered with role {role!r}; "
                    "mini-swe-agent answers each action with its output as a user message"
                )
            out = {"role": "tool", "tool_call_id": pending, "content": _content(message, at)}
            code = _returncode(message)
            pending = None
        elif role == "assistant":
            answers.append(i)
            out, pending = _assistant(message, i, pattern if parse else None, at)
        elif role == "tool":
            out = {
                "role": "tool",
                "tool_call_id": message.get("tool_call_id"),
                "content": _content(message, at),
            }
            code = _returncode(message)
        else:
            out = {"role": role, "content": _content(message, at)}
        converted.append(out)
        codes.append(code)
    return converted, codes, answers


def _assistant(
    message: dict[str, Any], index: int, pattern: re.Pattern[str] | None, at: str
) -> tuple[dict[str, Any], str | None]:
    """An assistant message with its action as a tool call (and that call's id), or as it is:
    calls it already carries are kept; with no action, or several, mini-swe-agent ran nothing.
    Without a ``pattern`` the text is not parsed."""
    content = message.get("content")
    calls = message.get("tool_calls")
    if calls:
        return {"role": "assistant", "content": content, "tool_calls": calls}, None
    if not isinstance(content, str):
        raise ArgumentError(
            f"{at}: an assistant message without tool calls needs its text as 'content', got "
            f"{type(content).__name__}"
        )
    actions = [] if pattern is None else [found.strip() for found in pattern.findall(content)]
    if len(actions) != 1:
        return {"role": "assistant", "content": content}, None
    call_id = f"call_{index}"
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": actions[0]})},
    }
    return {"role": "assistant", "content": content, "tool_calls": [call]}, call_id


def _content(message: dict[str, Any], at: str) -> Any:
    content = message.get("content")
    if not isinstance(content, str | list):
        raise ArgumentError(
            f"{at}: 'content' must be text or a list of content parts, got {type(content).__name__}"
        )
    return content


def _returncode(message: dict[str, Any]) -> int | None:
    """The command's return code: ``extra.returncode`` (v2), else ``<returncode>`` in the text."""
    extra = message.get("extra")
    code = extra.get("returncode") if isinstance(extra, dict) else None
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    content = message.get("content")
    found = _RETURNCODE.search(content) if isinstance(content, str) else None
    return int(found.group(1)) if found else None


def _usage(message: dict[str, Any]) -> Any:
    """The token usage of the call that gave this answer, when the trajectory kept the model's
    response (``extra.response.usage``)."""
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    return response.get("usage") if isinstance(response, dict) else None
