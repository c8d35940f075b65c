"""Tool-activity signals of a coding agent's conversation, as Switchyard's stage router reads them.

Reference §C.5 "Signals" and "Dimensions"/"Score" (libsy ``util/tool_signals.rs`` and
``util/stage.rs``). A turn's request carries the whole conversation so far; what the agent's tools
did in it (errors in their results, which kind of tool it called lately, how deep the
conversation is) says whether the agent is stuck (a capable model should take over) or producing
code on a settled plan (an efficient model will do). Everything here is a pure function of the
messages, so a turn routes the same way wherever it is replayed.

Messages are OpenAI chat messages (assistant ``tool_calls``, ``tool`` results) or Anthropic ones
(``tool_use`` / ``tool_result`` content blocks): Switchyard normalises both before reading them.
The constants are the reference's ([Aug]); later upstream changes are listed in
docs/stage-router.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError

__all__ = [
    "CRITICAL",
    "DEFAULT_RECENT_WINDOW",
    "HARD",
    "SOFT",
    "Dimensions",
    "StageScore",
    "ToolSemantics",
    "ToolSignals",
    "classify_tool_call",
    "dimensions",
    "error_severity",
    "score",
    "tool_signals",
]

# -- constants (reference §C.5) ---------------------------------------------------------------

SOFT = 0.3
HARD = 0.7
CRITICAL = 1.0

#: Tool results (for severity) and tool calls (for the recent counts) the signals look back over.
DEFAULT_RECENT_WINDOW = 3

#: (name, severity, lower-case substrings: any one fires the pattern), matched on a tool result.
ERROR_PATTERNS: tuple[tuple[str, float, tuple[str, ...]], ...] = (
    ("oom", CRITICAL, ("out of memory", "memoryerror", "cannot allocate memory")),
    (
        "connection_refused",
        CRITICAL,
        ("connection refused", "connectionrefusederror", "econnrefused"),
    ),
    ("traceback", HARD, ("traceback (most recent call last)",)),
    ("import_error", HARD, ("modulenotfounderror:", "importerror:", "no module named ")),
    ("cmd_not_found", HARD, ("command not found", "not found\n", "/usr/bin/env: ")),
    ("assertion", HARD, ("assertionerror",)),
    ("value_error", HARD, ("valueerror:",)),
    ("syntax_error", HARD, ("syntaxerror:",)),
    ("timeout", HARD, ("timed out", "timeouterror", "timeout expired", "deadline exceeded")),
    (
        "no_such_file",
        HARD,
        ("filenotfounderror:", "no such file or directory", "file does not exist"),
    ),
    ("exit_nonzero", SOFT, ("exit code 1", "exit code 2", "exit status 1", "returned non-zero")),
)

WRITE_TOOLS = frozenset({"write", "create_file", "new_file", "write_file"})
EDIT_TOOLS = frozenset(
    {
        "edit",
        "multiedit",
        "notebookedit",
        "str_replace",
        "str_replace_based_edit_tool",
        "text_editor",
        "patch",
    }
)
READ_TOOLS = frozenset({"read", "view", "read_file", "search_files"})
PLAN_TOOLS = frozenset({"todowrite", "todo_write", "todo", "update_plan"})
#: Tools whose ``command`` argument is classified by the shell patterns below.
SHELL_TOOLS = frozenset(
    {"bash", "shell_command", "shell", "local_shell_call", "terminal", "execute_bash"}
)
#: Editor tools whose ``command`` argument names the operation (OpenHands' and Anthropic's text
#: editor, which the reference's vocabulary does not list): the operation → its category.
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor"})
EDITOR_COMMANDS = {
    "view": "read",
    "create": "write",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
}

# Checked in this order on the lower-cased command: redirection or a heredoc writes, an in-place
# edit edits, an inspection reads; anything else is "other".
SHELL_WRITE_PATTERNS = (
    "cat >",
    "cat >>",
    "echo >",
    "echo >>",
    "tee ",
    "printf >",
    "printf >>",
    "> /",
    ">> /",
    "<< 'eof'",
    "<<eof",
    "<<'eof'",
    "<< eof",
)
SHELL_EDIT_PATTERNS = (
    "sed -i",
    "sed --in-place",
    "awk -i inplace",
    "awk 'inplace=1'",
    "patch ",
    "patch -p",
    "perl -i",
    "perl -p -i",
    "perl -pi",
)
SHELL_READ_PATTERNS = (
    "cat /",
    "cat ./",
    "cat ../",
    "grep ",
    "ls ",
    "ls -",
    "find ",
    "head ",
    "tail ",
    "wc ",
    "diff ",
    "which ",
    "ps ",
    "df ",
    "du ",
    "stat ",
    "file ",
    "less ",
    "more ",
)

# A test run passed: one of these phrases, and none of the failure phrases, and no nonzero count
# before a failure word ("0 failed" is a clean run, "2 failed" is not). False negatives are
# preferred: a pass hands the turn back to the efficient tier.
TEST_PASS_PHRASES = (
    " passed",
    "passed in",
    "tests passed",
    "all tests passed",
    "test ok",
    "test result: ok",
    "passed.\n",
    "tests pass",
    "\nok ",
    "✓ ",
)
TEST_FAILURE_PHRASES = ("✗ ", "fatal:", "assertionerror", "error:")
_COUNTED_FAILURE = re.compile(r"([0-9]+)\s*(?:failures|failure|failed|errors|error)(?![a-z0-9])")

#: Claude Code's preamble after it compacted an overflowing context (case-insensitive).
COMPACTION_MARKER = "session is being continued"

TOOL_CATEGORIES = ("write", "edit", "read", "plan", "other")

# -- what the messages say --------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSemantics:
    """Tool names added to the built-in vocabulary (the reference's [Oct] ``tool_semantics``):
    ``observe`` tools count as reads, ``mutate`` tools as writes, ``plan`` tools as plans. Names
    match case-insensitively; a built-in name cannot be reclassified."""

    observe: frozenset[str] = frozenset()
    mutate: frozenset[str] = frozenset()
    plan: frozenset[str] = frozenset()

    @classmethod
    def of(cls, given: Mapping[str, Iterable[str]] | ToolSemantics | None) -> ToolSemantics:
        """Check a ``{"observe": [...], "mutate": [...], "plan": [...]}`` mapping."""
        if given is None:
            return cls()
        if isinstance(given, ToolSemantics):
            return given
        if not isinstance(given, Mapping):
            raise ArgumentTypeError(
                "tool_semantics must be a mapping such as {'observe': [...], 'mutate': [...], "
                f"'plan': [...]}}, got {type(given).__name__}"
            )
        allowed = ("observe", "mutate", "plan")
        seen: dict[str, str] = {}
        sets: dict[str, frozenset[str]] = {}
        for category, names in given.items():
            if category not in allowed:
                raise ArgumentError(
                    f"tool_semantics category {category!r} is not one of {list(allowed)}"
                )
            if isinstance(names, str) or not isinstance(names, Iterable):
                raise ArgumentTypeError(
                    f"tool_semantics[{category!r}] must be a list of tool names, got "
                    f"{type(names).__name__}"
                )
            lowered = set()
            for name in names:
                if not isinstance(name, str) or not name.strip():
                    raise ArgumentError(
                        f"tool_semantics[{category!r}] holds {name!r}; tool names are non-empty str"
                    )
                low = name.lower()
                if _builtin_category(low) is not None:
                    raise ArgumentError(
                        f"tool {name!r} already has built-in semantics and cannot be reclassified"
                    )
                if low in seen and seen[low] != category:
                    raise ArgumentError(
                        f"tool {name!r} is in both tool_semantics[{seen[low]!r}] and "
                        f"tool_semantics[{category!r}]"
                    )
                seen[low] = category
                lowered.add(low)
            sets[category] = frozenset(lowered)
        return cls(**sets)

    def category(self, lower_name: str) -> str | None:
        if lower_name in self.observe:
            return "read"
        if lower_name in self.mutate:
            return "write"
        if lower_name in self.plan:
            return "plan"
        return None


def _builtin_category(lower_name: str) -> str | None:
    if lower_name in WRITE_TOOLS:
        return "write"
    if lower_name in EDIT_TOOLS:
        return "edit"
    if lower_name in READ_TOOLS:
        return "read"
    if lower_name in PLAN_TOOLS:
        return "plan"
    if lower_name in SHELL_TOOLS:
        return "shell"
    return None


def classify_tool_call(
    name: str, command: str | None = None, semantics: ToolSemantics | None = None
) -> str:
    """The category of one tool call: ``"write"``, ``"edit"``, ``"read"``, ``"plan"`` or
    ``"other"``. By name first; a shell tool by its (lower-cased) ``command``; then the added
    ``semantics``."""
    lower = name.lower()
    if lower in EDITOR_TOOLS and command is not None and command.strip() in EDITOR_COMMANDS:
        return EDITOR_COMMANDS[command.strip()]
    builtin = _builtin_category(lower)
    if builtin is not None and builtin != "shell":
        return builtin
    if builtin == "shell" and command is not None:
        if any(p in command for p in SHELL_WRITE_PATTERNS):
            return "write"
        if any(p in command for p in SHELL_EDIT_PATTERNS):
            return "edit"
        if any(p in command for p in SHELL_READ_PATTERNS):
            return "read"
    if semantics is not None:
        return semantics.category(lower) or "other"
    return "other"


def error_severity(text: str) -> tuple[float, tuple[str, ...]]:
    """The severity of one tool result (0 clean, 0.3 soft, 0.7 hard, 1.0 critical: the highest
    pattern that fires) and the names of the patterns that fired."""
    lower = text.lower()
    fired = tuple(name for name, _, needles in ERROR_PATTERNS if any(n in lower for n in needles))
    severity = max((sev for name, sev, _ in ERROR_PATTERNS if name in fired), default=0.0)
    return severity, fired


def _tests_passed(text: str) -> bool:
    lower = text.lower()
    return (
        any(p in lower for p in TEST_PASS_PHRASES)
        and not any(p in lower for p in TEST_FAILURE_PHRASES)
        and not any(set(m.group(1)) - {"0"} for m in _COUNTED_FAILURE.finditer(lower))
    )


@dataclass(frozen=True)
class ToolSignals:
    """What a request's messages say about the agent's tools (reference §C.5 "Signals").

    ``severity`` is the highest error severity among the last ``window`` tool results;
    ``recent_*`` count the last ``window`` tool calls by category, the other counts the whole
    conversation; ``pure_bash_streak`` counts the trailing calls of no known category;
    ``tests_passed`` says a test run passed among the last ``window`` results; ``turn_depth`` is
    the message count; ``compacted`` that the agent's context was compacted."""

    severity: float
    no_error_streak: int
    write_count: int
    edit_count: int
    read_count: int
    plan_count: int
    recent_write_count: int
    recent_edit_count: int
    recent_read_count: int
    recent_plan_count: int
    pure_bash_streak: int
    tests_passed: bool
    turn_depth: int
    compacted: bool
    tool_calls: int
    tool_results: int

    @property
    def has_tool_activity(self) -> bool:
        """Whether the conversation holds any tool call or result; without, nothing is scored."""
        return self.tool_calls > 0 or self.tool_results > 0


def tool_signals(
    messages: Sequence[Mapping[str, Any]],
    *,
    window: int = DEFAULT_RECENT_WINDOW,
    tool_semantics: ToolSemantics | Mapping[str, Iterable[str]] | None = None,
) -> ToolSignals:
    """The :class:`ToolSignals` of a conversation (a request's ``messages``)."""
    window = check_int(window, "window", low=1, type_error=ArgumentError)
    semantics = ToolSemantics.of(tool_semantics)
    calls: list[str] = []  # the category of each tool call, in order
    texts: list[str] = []  # each non-empty tool result
    results = 0
    compacted = False
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role in ("tool", "function"):
            results += 1
            text = _text(content)
            if text:
                texts.append(text)
            continue
        for name, command in _openai_calls(message):
            calls.append(classify_tool_call(name, command, semantics))
        if isinstance(content, str):
            compacted = compacted or COMPACTION_MARKER in content.lower()
            continue
        for block in _blocks(content):
            kind = block.get("type")
            if kind == "text":
                compacted = compacted or COMPACTION_MARKER in str(block.get("text", "")).lower()
            elif kind == "tool_use":
                tool_name = block.get("name")
                if isinstance(tool_name, str):
                    command = _command(block.get("input"))
                    calls.append(classify_tool_call(tool_name, command, semantics))
            elif kind == "tool_result":
                results += 1
                text = _text(block.get("content"))
                if text:
                    texts.append(text)

    recent_texts = texts[-window:]
    severity = max((error_severity(t)[0] for t in recent_texts), default=0.0)
    streak = 0
    for text in reversed(texts):
        if error_severity(text)[0] > 0:
            break
        streak += 1
    recent = calls[-window:]
    trailing_other = 0
    for category in reversed(calls):
        if category != "other":
            break
        trailing_other += 1
    return ToolSignals(
        severity=severity,
        no_error_streak=streak,
        write_count=calls.count("write"),
        edit_count=calls.count("edit"),
        read_count=calls.count("read"),
        plan_count=calls.count("plan"),
        recent_write_count=recent.count("write"),
        recent_edit_count=recent.count("edit"),
        recent_read_count=recent.count("read"),
        recent_plan_count=recent.count("plan"),
        pure_bash_streak=trailing_other,
        tests_passed=any(_tests_passed(t) for t in recent_texts),
        turn_depth=len(messages),
        compacted=compacted,
        tool_calls=len(calls),
        tool_results=results,
    )


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str | bytes) or not isinstance(content, Sequence):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _text(content: Any) -> str:
    """The text of a message or tool-result content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts = [
        str(block.get("text", ""))
        for block in _blocks(content)
        if block.get("type") == "text" and block.get("text")
    ]
    return "\n".join(parts)


def _openai_calls(message: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """(name, command) of an OpenAI assistant message's ``tool_calls``."""
    found = []
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, Sequence) and not isinstance(calls, str) else ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function", call)
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            found.append((name, _command(function.get("arguments"))))
    return found


def _command(arguments: Any) -> str | None:
    """The lower-cased ``command`` argument of a tool call (its arguments as a JSON string or an
    object; the command as a string or an argv list), or None."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, Mapping):
        return None
    command = arguments.get("command")
    if isinstance(command, str):
        return command.lower()
    if isinstance(command, Sequence) and command and all(isinstance(p, str) for p in command):
        return " ".join(command).lower()
    return None


# -- dimensions and score (reference §C.5 "Dimensions", "Score") -----------------------------

#: Below this many messages a turn without writes is normal exploration, not a stall.
STALL_MIN_TURN_DEPTH = 8
#: One maxed signal contributes this much to the raw score.
SIGNAL_UNIT = 0.10
#: The gain before the tanh, spreading the small raw sum over the confidence range.
SCORE_GAIN = 5.0


@dataclass(frozen=True)
class Dimensions:
    """The two axes the score weighs: errors and stalls (``severity``, ``spinning``,
    ``exploring``: toward the capable tier) against production (``production_intensity``, the
    share of recent tool calls that wrote or edited: toward the efficient tier)."""

    severity: float
    spinning: float
    exploring: float
    production_intensity: float


def dimensions(signals: ToolSignals) -> Dimensions:
    """Project the signals onto the dimensions. ``spinning`` and ``exploring`` need a deep turn
    (``turn_depth`` ≥ 8) without recent writes or edits; ``exploring`` if it read or planned
    lately, ``spinning`` if it did not (at most one of them fires)."""
    s = signals
    produced = s.recent_write_count + s.recent_edit_count
    investigated = s.recent_read_count + s.recent_plan_count
    stalled = s.turn_depth >= STALL_MIN_TURN_DEPTH and produced == 0
    ops = produced + investigated
    return Dimensions(
        severity=s.severity,
        spinning=1.0 if stalled and investigated == 0 else 0.0,
        exploring=1.0 if stalled and investigated > 0 else 0.0,
        production_intensity=produced / ops if ops else 0.0,
    )


@dataclass(frozen=True)
class StageScore:
    """The signed score in (−1, 1) (positive: capable) and its magnitude, the confidence."""

    score: float
    confidence: float


def score(signals: ToolSignals) -> StageScore:
    """raw = 0.10 × (severity / 0.7 + spinning + exploring − production_intensity);
    score = tanh(5 × raw); confidence = |score|. One full signal gives tanh(0.5) ≈ 0.46, two
    corroborating ones tanh(1) ≈ 0.76, soft severity alone ≈ 0.21."""
    d = dimensions(signals)
    raw = SIGNAL_UNIT * (d.severity / HARD + d.spinning + d.exploring - d.production_intensity)
    value = math.tanh(SCORE_GAIN * raw)
    return StageScore(value, abs(value))
