"""Switchyard's tool signals (reference §C.5): what a conversation's messages say, the severity
table, and the dimensions and tanh score at hand-computed values."""

from __future__ import annotations

import json
import math

import pytest

import sykit as sy
from sykit._agent.tool_signals import (
    ERROR_PATTERNS,
    classify_tool_call,
    dimensions,
    error_severity,
    score,
    tool_signals,
)

# -- conversations in OpenAI's chat format ------------------------------------------------------

_ids = iter(range(10**6))


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def tool(name: str, result: str, command: str | None = None) -> list[dict]:
    """An assistant tool call and its result: two messages."""
    call_id = f"c{next(_ids)}"
    arguments = {} if command is None else {"command": command}
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def bash(command: str, result: str = "ok") -> list[dict]:
    return tool("bash", result, command)


def convo(*parts) -> list[dict]:
    """A task message, then the parts (a message or a list of them) in order."""
    messages = [user("Fix the failing test in utils.py")]
    for part in parts:
        messages.extend(part if isinstance(part, list) else [part])
    return messages


TRACEBACK = "Traceback (most recent call last):\n  File 'x.py'\nValueError: bad value"


# -- the error severity table -------------------------------------------------------------------

SEVERITY_CASES = [
    ("oom", 1.0, "fatal runtime error: out of memory"),
    ("oom", 1.0, "MemoryError"),
    ("connection_refused", 1.0, "curl: (7) Failed to connect: Connection refused"),
    ("traceback", 0.7, "Traceback (most recent call last):\n  File 'a.py', line 1"),
    ("import_error", 0.7, "ModuleNotFoundError: No module named 'numpy'"),
    ("cmd_not_found", 0.7, "bash: rg: command not found"),
    ("assertion", 0.7, "E   AssertionError: 3 != 4"),
    ("value_error", 0.7, "ValueError: invalid literal"),
    ("syntax_error", 0.7, "SyntaxError: invalid syntax"),
    ("timeout", 0.7, "the request timed out after 30 s"),
    ("no_such_file", 0.7, "cat: x.txt: No such file or directory"),
    ("no_such_file", 0.7, "<tool_use_error>File does not exist.</tool_use_error>"),
    ("exit_nonzero", 0.3, "[Command finished with exit code 1]"),
    ("exit_nonzero", 0.3, "make: exit code 2"),
    ("exit_nonzero", 0.3, "Command 'x' returned non-zero exit status 3."),
]


@pytest.mark.parametrize(("pattern", "severity", "text"), SEVERITY_CASES)
def test_each_rule_of_the_severity_table(pattern, severity, text):
    got, fired = error_severity(text)
    assert got == severity
    assert pattern in fired


def test_every_pattern_of_the_table_is_exercised():
    assert {name for name, _, _ in ERROR_PATTERNS} == {case[0] for case in SEVERITY_CASES}


def test_clean_results_and_the_highest_pattern_wins():
    assert error_severity("all good\n[Command finished with exit code 0]") == (0.0, ())
    severity, fired = error_severity("exit code 1\n" + TRACEBACK)
    assert severity == 0.7
    assert set(fired) == {"exit_nonzero", "traceback", "value_error"}
    assert error_severity("Out of memory after a Traceback (most recent call last)")[0] == 1.0


def test_severity_is_the_highest_over_the_recent_window_of_results():
    error_then_three_clean = convo(bash("pytest", TRACEBACK), bash("ls"), bash("ls"), bash("ls"))
    assert tool_signals(error_then_three_clean).severity == 0.0  # decayed out of the window of 3
    assert tool_signals(error_then_three_clean, window=4).severity == 0.7
    error_then_two_clean = convo(bash("pytest", TRACEBACK), bash("ls"), bash("ls"))
    signals = tool_signals(error_then_two_clean)
    assert signals.severity == 0.7  # sticky for the recovery turns
    assert signals.no_error_streak == 2
    assert tool_signals(convo(bash("pytest", TRACEBACK))).no_error_streak == 0


def test_empty_results_do_not_fill_the_window():
    messages = convo(
        bash("pytest", TRACEBACK), bash("true", ""), bash("true", ""), bash("true", "")
    )
    signals = tool_signals(messages)
    assert signals.severity == 0.7
    assert signals.tool_results == 4


# -- tool calls: names, shell commands, the recent window ---------------------------------------


@pytest.mark.parametrize(
    ("name", "command", "category"),
    [
        ("Write", None, "write"),
        ("create_file", None, "write"),
        ("Edit", None, "edit"),
        ("str_replace_based_edit_tool", None, "edit"),
        ("MultiEdit", None, "edit"),
        ("Read", None, "read"),
        ("search_files", None, "read"),
        ("TodoWrite", None, "plan"),
        ("update_plan", None, "plan"),
        ("bash", "cat > notes.md << 'eof'", "write"),
        ("bash", "echo hi >> /tmp/log", "write"),
        ("shell", "sed -i 's/a/b/' x.py", "edit"),
        ("terminal", "patch -p1 < fix.diff", "edit"),
        ("bash", "grep -rn todo src", "read"),
        ("bash", "ls -la", "read"),
        ("bash", "python -m pytest -x", "other"),
        ("bash", None, "other"),
        ("execute_bash", "grep -rn todo src", "other"),  # not a shell tool of the vocabulary
        ("str_replace_editor", None, "other"),
    ],
)
def test_tool_calls_are_classified_by_name_then_command(name, command, category):
    assert classify_tool_call(name, command) == category


def test_counts_cumulative_and_over_the_last_calls():
    messages = convo(
        tool("Write", "ok"),
        tool("Edit", "ok"),
        tool("Read", "ok"),
        tool("TodoWrite", "ok"),
        bash("python run.py"),
        bash("make"),
    )
    s = tool_signals(messages)
    assert (s.write_count, s.edit_count, s.read_count, s.plan_count) == (1, 1, 1, 1)
    assert (s.recent_write_count, s.recent_edit_count, s.recent_read_count) == (0, 0, 0)
    assert s.recent_plan_count == 1  # the last three calls: TodoWrite, two unknown commands
    assert s.pure_bash_streak == 2
    assert s.turn_depth == 13
    assert (s.tool_calls, s.tool_results) == (6, 6)


def test_tool_semantics_extend_the_vocabulary():
    semantics = {"observe": ["execute_bash"], "mutate": ["str_replace_editor"], "plan": ["think"]}
    messages = convo(
        tool("execute_bash", "ok"), tool("str_replace_editor", "ok"), tool("Think", "")
    )
    s = tool_signals(messages, tool_semantics=semantics)
    assert (s.recent_read_count, s.recent_write_count, s.recent_plan_count) == (1, 1, 1)
    with pytest.raises(sy.ArgumentError, match="cannot be reclassified"):
        tool_signals(messages, tool_semantics={"observe": ["Bash"]})
    with pytest.raises(sy.ArgumentError, match="is not one of"):
        tool_signals(messages, tool_semantics={"new": ["x"]})
    with pytest.raises(sy.ArgumentError, match="in both"):
        tool_signals(messages, tool_semantics={"observe": ["x"], "plan": ["X"]})


# -- tests passed, compaction, Anthropic blocks -------------------------------------------------


@pytest.mark.parametrize(
    ("result", "passed"),
    [
        ("===== 12 passed in 0.41s =====", True),
        ("test result: ok. 8 passed; 0 failed", True),  # a zero count does not veto
        ("===== 1 failed, 11 passed in 0.5s =====", False),
        ("11 passed, 2 errors", False),
        ("error: 3 passed but the build broke", False),
        ("Everything compiled.", False),
    ],
)
def test_tests_passed_phrases_and_vetoes(result, passed):
    assert tool_signals(convo(bash("pytest", result))).tests_passed is passed


def test_tests_passed_only_within_the_window():
    messages = convo(bash("pytest", "5 passed in 1s"), bash("ls"), bash("ls"), bash("ls"))
    assert not tool_signals(messages).tests_passed
    assert tool_signals(messages, window=4).tests_passed


def test_compaction_is_read_from_text_not_tool_results():
    marker = "This session is being continued from a previous conversation that ran out of context."
    assert tool_signals(convo(user(marker), bash("ls"))).compacted
    assert not tool_signals(convo(bash("cat notes", marker))).compacted


def test_anthropic_blocks_give_the_same_signals():
    anthropic = [
        user("Fix the failing test in utils.py"),
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running the tests."},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "is_error": True,
                    "content": [{"type": "text", "text": TRACEBACK}],
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}],
        },
    ]
    openai = convo(bash("pytest", TRACEBACK), tool("Edit", "ok"))
    a, o = tool_signals(anthropic), tool_signals(openai)
    assert (a.severity, a.recent_edit_count, a.tool_calls, a.tool_results) == (0.7, 1, 2, 2)
    assert (a.severity, a.recent_edit_count, a.pure_bash_streak) == (
        o.severity,
        o.recent_edit_count,
        o.pure_bash_streak,
    )


# -- dimensions and the tanh score ---------------------------------------------------------------

THREE_COMMANDS = [bash("python a.py"), bash("python b.py"), bash("make")]  # depth 1 + 6 = 7


def test_spinning_and_exploring_need_a_deep_turn_without_production():
    shallow = tool_signals(convo(*THREE_COMMANDS))
    assert shallow.turn_depth == 7
    assert dimensions(shallow).spinning == 0.0
    deep = tool_signals(convo(*THREE_COMMANDS, bash("make")))
    assert dimensions(deep) == sy_dims(spinning=1.0)
    reading = tool_signals(convo(*THREE_COMMANDS, tool("Read", "text")))
    assert dimensions(reading) == sy_dims(exploring=1.0)
    planning = tool_signals(convo(*THREE_COMMANDS, tool("TodoWrite", "ok")))
    assert dimensions(planning) == sy_dims(exploring=1.0)
    writing = tool_signals(convo(*THREE_COMMANDS, tool("Write", "ok")))
    assert dimensions(writing) == sy_dims(production_intensity=1.0)
    mixed = tool_signals(convo(*THREE_COMMANDS[:2], tool("Read", "x"), tool("Write", "ok")))
    assert dimensions(mixed).production_intensity == 0.5


def sy_dims(**given):
    from sykit._agent.tool_signals import Dimensions

    values = {"severity": 0.0, "spinning": 0.0, "exploring": 0.0, "production_intensity": 0.0}
    return Dimensions(**{**values, **given})


@pytest.mark.parametrize(
    ("parts", "raw", "expected"),
    [
        # one full signal: 0.10 × 1 → tanh(0.5)
        ((*THREE_COMMANDS, bash("make")), 0.10, 0.46211715726000974),
        # spinning + hard severity: 0.10 × (0.7/0.7 + 1) → tanh(1)
        ((*THREE_COMMANDS, bash("make", TRACEBACK)), 0.20, 0.7615941559557649),
        # soft severity alone, shallow: 0.10 × 0.3/0.7 → tanh(3/14)
        ((bash("make", "exit code 1"),), 0.03 / 0.7, 0.2110649744411714),
        # spinning + soft severity: 0.10 × (0.3/0.7 + 1) → tanh(5/7)
        ((*THREE_COMMANDS, bash("make", "exit code 2")), 0.1 + 0.03 / 0.7, 0.6133572603953827),
        # production only: −0.10 → −tanh(0.5)
        ((tool("Write", "ok"),), -0.10, -0.46211715726000974),
        # hard severity, half the recent calls produced: 0.10 × (1 − 0.5)
        ((tool("Read", "x"), tool("Write", TRACEBACK)), 0.05, 0.24491866240370913),
        # exploring: deep, a recent read, no production
        ((*THREE_COMMANDS, tool("Read", "x")), 0.10, 0.46211715726000974),
        # tool activity with no signal at all
        ((bash("make"),), 0.0, 0.0),
    ],
)
def test_score_at_hand_computed_values(parts, raw, expected):
    scored = score(tool_signals(convo(*parts)))
    assert scored.score == pytest.approx(math.tanh(5 * raw), abs=1e-12)
    assert scored.score == pytest.approx(expected, abs=1e-12)
    assert scored.confidence == abs(scored.score)
