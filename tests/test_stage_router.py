"""The stage router (Switchyard reference §C.5): tool signals from messages, the severity table,
the dimensions and tanh score at hand-computed values, the pick-tier rules, the judge and its
fail-open, per-session state over runs of sessions, and the threshold calibration recipe."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit.sessions._agent.calibration import StageCalibration, calibrate_stage_router
from sykit.sessions._agent.stage import SOURCES, StageState, pick_tier, stage_router
from sykit.sessions._agent.tool_signals import (
    ERROR_PATTERNS,
    Dimensions,
    classify_tool_call,
    dimensions,
    error_severity,
    score,
    tool_signals,
)

ENGINES = ["kernel", "asyncio"]

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
        ("execute_bash", "grep -rn todo src", "read"),  # OpenHands' shell tool
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
    semantics = {"observe": ["run_query"], "mutate": ["apply_change"], "plan": ["think"]}
    messages = convo(tool("run_query", "ok"), tool("apply_change", "ok"), tool("Think", ""))
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


# -- the pick-tier rules --------------------------------------------------------------------------


def test_rule_1_override_on_compaction_or_critical_severity():
    marker = user("This session is being continued from a previous conversation.")
    assert tier_source(pick_tier(tool_signals(convo(marker, bash("ls"))), 0.5)) == (
        "capable",
        "override",
    )
    critical_after_passing_tests = convo(tool("Write", "ok"), bash("pytest", "3 passed in 1s"))
    critical_after_passing_tests += bash("python big.py", "MemoryError")
    pick = pick_tier(tool_signals(critical_after_passing_tests), 0.99)
    assert (pick.tier, pick.source) == ("capable", "override")


def test_rule_2_tests_passed_after_production_and_no_error():
    messages = convo(tool("Edit", "ok"), bash("pytest", "12 passed in 0.4s"))
    assert tier_source(pick_tier(tool_signals(messages), 0.0)) == ("efficient", "tests_passed")
    no_production = convo(tool("Read", "x"), bash("pytest", "12 passed in 0.4s"))
    assert pick_tier(tool_signals(no_production), 0.9).tier is None
    soft_error = convo(tool("Edit", "ok"), bash("pytest", "12 passed"), bash("make", "exit code 2"))
    assert pick_tier(tool_signals(soft_error), 0.9).source == "ambiguous"


def test_rule_3_the_scorer_decides_at_or_above_the_threshold():
    spinning_hard = tool_signals(convo(*THREE_COMMANDS, bash("make", TRACEBACK)))  # 0.76
    assert tier_source(pick_tier(spinning_hard, 0.5)) == ("capable", "dimensions")
    assert tier_source(pick_tier(spinning_hard, 0.7615941559557649)) == ("capable", "dimensions")
    assert pick_tier(spinning_hard, 0.77).tier is None
    producing = tool_signals(convo(tool("Write", "ok")))  # −0.46
    assert tier_source(pick_tier(producing, 0.4)) == ("efficient", "dimensions")
    assert tier_source(pick_tier(producing, 0.5)) == (None, "ambiguous")
    quiet = tool_signals(convo(bash("make")))  # score 0 follows the sign rule: not positive
    assert tier_source(pick_tier(quiet, 0.0)) == ("efficient", "dimensions")


def test_rule_4_abstain_and_no_tool_activity_abstains():
    one_signal = pick_tier(tool_signals(convo(*THREE_COMMANDS, bash("make"))), 0.5)
    assert (one_signal.tier, one_signal.source) == (None, "ambiguous")
    assert one_signal.score == pytest.approx(0.46211715726000974)
    nothing = pick_tier(tool_signals(convo(user("and also this"))), 0.0)
    assert (nothing.tier, nothing.source) == (None, "ambiguous")
    assert math.isnan(nothing.score) and math.isnan(nothing.confidence)


# -- the router on a host -------------------------------------------------------------------------


def _host(*, efficient_quality=None, judge_faults=None, accuracy=1.0) -> sy.SimHost:
    judge_kwargs = {} if judge_faults is None else {"faults": judge_faults}
    return sy.SimHost(
        {
            "big": constant_profile(1.0, 10, 10.0, price_in=3.0, price_out=15.0, quality=0.9),
            "small": constant_profile(
                0.5, 10, 10.0, price_in=0.3, price_out=1.2, quality=efficient_quality
            ),
            "judge": constant_profile(0.25, 5, 20.0, price_in=0.1, price_out=0.4, **judge_kwargs),
        },
        judge=sy.Judge(accuracy=accuracy),
    )


ONE_SIGNAL = sy.Request(convo(*THREE_COMMANDS, bash("make")), id="one-signal")  # 0.46: undecided


def _row(result: sy.Result) -> dict:
    (row,) = result.requests.to_dict("records")
    return row


@pytest.mark.parametrize(("quality", "tier"), [(1.0, "efficient"), (0.0, "capable")])
def test_an_undecided_turn_asks_the_judge(quality, tier):
    result = sy.run(
        stage_router("big", "small", judge="judge"),
        [ONE_SIGNAL],
        host=_host(efficient_quality=quality),
        progress=False,
    )
    row = _row(result)
    assert row["selected_model"] == {"efficient": "small", "capable": "big"}[tier]
    assert (row["evidence_stage_source"], row["evidence_stage_judge"]) == ("llm-classifier", tier)
    decisions = result.attempts[result.attempts["kind"] == "decision"]
    assert list(decisions["model"]) == ["judge"]
    assert decisions["input_tokens"].iloc[0] > 0


def test_the_judge_threshold_reads_its_probability():
    # a judge right 70 % of the time says yes with probability 0.7: enough at 0.5, not at 0.8
    host = _host(efficient_quality=1.0, accuracy=0.7)
    runs = {
        floor: _row(
            sy.run(
                stage_router("big", "small", judge="judge", base_threshold=floor),
                [ONE_SIGNAL],
                host=host,
                seed=3,
                progress=False,
            )
        )
        for floor in (0.5, 0.8)
    }
    said_yes = runs[0.5]["evidence_stage_judge"] == "efficient"
    assert runs[0.8]["evidence_stage_judge"] == "capable"
    assert said_yes == (runs[0.5]["selected_model"] == "small")


@pytest.mark.parametrize(
    ("default", "model"), [(None, "small"), ("small", "small"), ("big", "big")]
)
def test_a_failing_judge_fails_open_to_the_default(default, model):
    host = _host(efficient_quality=0.0, judge_faults=sy.Faults(invalid=1.0))
    row = _row(
        sy.run(
            stage_router("big", "small", judge="judge", default=default),
            [ONE_SIGNAL],
            host=host,
            progress=False,
        )
    )
    assert row["status"] == "ok"
    assert row["selected_model"] == model
    assert (row["evidence_stage_source"], row["evidence_stage_judge"]) == ("fall_open", "failed")


def test_without_a_judge_an_undecided_turn_takes_the_default():
    for default, model in ((None, "small"), ("big", "big")):
        result = sy.run(
            stage_router("big", "small", default=default),
            [ONE_SIGNAL],
            host=_host(),
            progress=False,
        )
        row = _row(result)
        assert row["selected_model"] == model
        assert row["evidence_stage_source"] == "fall_open"
        assert row["evidence_stage_judge"] is None
        assert (result.attempts["kind"] == "model").all()


def test_the_other_tier_is_the_fallback():
    host = sy.SimHost(
        {
            "big": constant_profile(1.0, 10, 10.0, faults=sy.Faults(unavailable=1.0)),
            "small": constant_profile(0.5, 10, 10.0),
        },
        policy=sy.HostPolicy(max_retries=0),
    )
    request = sy.Request(convo(bash("python big.py", "MemoryError")))
    row = _row(sy.run(stage_router("big", "small"), [request], host=host, progress=False))
    assert (row["selected_model"], row["served_model"]) == ("big", "small")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"default": "judge"}, "default must be the capable model 'big' or the efficient"),
        ({"confidence_threshold": 1.5}, "confidence_threshold must be ≥ 0 and ≤ 1"),
        ({"confidence_threshold": -0.1}, "confidence_threshold must be ≥ 0 and ≤ 1"),
        ({"recent_turn_window": 0}, "recent_turn_window must be an int ≥ 1"),
        ({"base_threshold": 0.6}, "base_threshold is the judge's threshold: give judge="),
        ({"judge": "judge", "base_threshold": 2.0}, "base_threshold must be ≥ 0 and ≤ 1"),
        ({"tool_semantics": {"new": ["x"]}}, "category 'new' is not one of"),
    ],
)
def test_bad_options_are_named(kwargs, message):
    with pytest.raises(sy.ArgumentError, match=message.replace("(", r"\(")):
        stage_router("big", "small", **kwargs)


def test_bad_models_are_named():
    with pytest.raises(sy.ArgumentError, match="both 'big'"):
        stage_router("big", "big")
    with pytest.raises(sy.ArgumentTypeError, match="efficient must be a model name"):
        stage_router("big", "")
    assert stage_router("big", "small").name == "stage_router(big|small@0.5)"


# -- sessions: exact routing per turn, state across turns ----------------------------------------


def tier_source(pick) -> tuple:
    return pick.tier, pick.source


def _turns(*conversations) -> list[sy.sessions.Turn]:
    return [sy.sessions.Turn(sy.Request(messages), gap_s=1.0) for messages in conversations]


def _fixing_session() -> sy.sessions.Session:
    """A task: a script fails and the agent keeps running it, crashes out of memory, writes and
    edits a fix until the crash leaves the window, then the tests pass."""
    t0 = convo()
    t1 = t0 + bash("python run.py")
    t2 = t1 + bash("python run.py", TRACEBACK)
    t3 = t2 + bash("python run.py", TRACEBACK)
    t4 = t3 + bash("make")
    t5 = t4 + bash("python big.py", "MemoryError: cannot allocate")
    t6 = t5 + tool("Write", "File written")
    t7 = t6 + tool("Edit", "ok")
    t8 = t7 + tool("Edit", "ok")
    t9 = t8 + bash("pytest", "===== 9 passed in 0.3s =====")
    return sy.sessions.Session(_turns(t0, t1, t2, t3, t4, t5, t6, t7, t8, t9), id="fix")


FIXING_ROUTES = [
    # (tier, source): why each turn of _fixing_session goes where it does
    ("efficient", "fall_open"),  # no tool activity yet
    ("efficient", "fall_open"),  # an unknown command: score 0
    ("efficient", "fall_open"),  # hard error alone: 0.46 < 0.5
    ("efficient", "fall_open"),  # still one signal: 7 messages are not deep enough to spin
    ("capable", "dimensions"),  # 9 messages, no reads or writes, the error in the window: 0.76
    ("capable", "override"),  # MemoryError: critical
    ("capable", "override"),  # still in the window of the last three results
    ("capable", "override"),  # still
    ("efficient", "fall_open"),  # clean, all production: −0.46, below 0.5
    ("efficient", "tests_passed"),  # passed after edits, no error in the window
]


def _compacted_session() -> sy.sessions.Session:
    marker = user("This session is being continued from a previous conversation.")
    t0 = convo(bash("ls"))
    t1 = [*t0, marker]
    t2 = t1 + tool("Write", "ok")
    return sy.sessions.Session(_turns(t0, t1, t2), id="compacted")


def _state_probe(router):
    async def probe(request, driver):
        outcome = await router(request, driver)
        kept = driver.session_state["stage_router"]
        assert isinstance(kept, StageState)
        driver.evidence(turns_kept=kept.turns, tier_kept=kept.tier)
        return outcome

    return probe


@pytest.mark.parametrize("engine", ENGINES)
def test_sessions_route_turn_by_turn_with_state_per_session(engine):
    router = stage_router("big", "small")
    result = sy.run(
        _state_probe(router),
        [_fixing_session(), _compacted_session()],
        host=_host(),
        concurrency=2,
        engine=engine,
        progress=False,
    )
    r = result.requests.sort_values(["session_id", "turn"])
    fix = r[r["session_id"] == "fix"]
    assert list(zip(fix["evidence_stage_tier"], fix["evidence_stage_source"], strict=True)) == (
        FIXING_ROUTES
    )
    tiers = [tier for tier, _ in FIXING_ROUTES]
    assert list(fix["selected_model"]) == [
        {"capable": "big", "efficient": "small"}[t] for t in tiers
    ]
    switched = [k > 0 and tiers[k] != tiers[k - 1] for k in range(len(tiers))]
    assert list(fix["evidence_stage_switched"]) == switched
    assert sum(switched) == 2
    assert list(fix["evidence_turns_kept"]) == list(range(1, 11))
    assert list(fix["evidence_tier_kept"]) == tiers
    compacted = r[r["session_id"] == "compacted"]
    assert list(compacted["evidence_stage_source"]) == ["fall_open", "override", "override"]
    assert list(compacted["selected_model"]) == ["small", "big", "big"]
    assert list(compacted["evidence_turns_kept"]) == [1, 2, 3]  # its own state, from 1


def test_a_request_outside_a_session_starts_fresh():
    requests = [sy.Request(convo(bash("python big.py", "MemoryError")), id=i) for i in range(2)]
    r = sy.run(stage_router("big", "small"), requests, host=_host(), progress=False).requests
    assert list(r["evidence_stage_switched"]) == [False, False]
    assert list(r["selected_model"]) == ["big", "big"]


def test_synthetic_agent_sessions_use_both_tiers():
    sessions = sy.sessions.synthetic_sessions(30, seed=0)
    host = _host(efficient_quality=0.5, accuracy=0.8)
    result = sy.run(
        stage_router("big", "small", judge="judge"),
        sessions,
        host=host,
        concurrency=8,
        progress=False,
    )
    r = result.requests
    assert (r["status"] == "ok").all()
    assert len(r) == sum(len(s.turns) for s in sessions)
    for column in ("source", "tier", "score", "confidence", "judge", "switched"):
        assert f"evidence_stage_{column}" in r.columns
    assert set(r["selected_model"].astype(str)) == {"big", "small"}
    assert set(r["evidence_stage_tier"]) == {"capable", "efficient"}
    assert set(r["evidence_stage_source"]) <= set(SOURCES)
    assert {"dimensions", "llm-classifier"} <= set(r["evidence_stage_source"])
    judged = r["evidence_stage_source"] == "llm-classifier"
    decisions = result.attempts[result.attempts["kind"] == "decision"]
    assert len(decisions) == judged.sum()
    first_turns = r[r["turn"] == 0]
    assert (first_turns["evidence_stage_source"] == "llm-classifier").all()  # nothing to score yet
    assert first_turns["evidence_stage_score"].isna().all()
    assert (r.loc[r["evidence_stage_source"] == "dimensions", "selected_model"] == "big").all()


# -- calibration ----------------------------------------------------------------------------------

SPIN = [bash("python a.py"), bash("python b.py")]  # with the task and one more call: depth 7


def _calibration_sessions() -> list[sy.sessions.Session]:
    """One turn each, so its one turn is critical, with hand-known confidences."""
    system = {"role": "system", "content": "You are a coding agent."}
    conversations = {
        "A": [system, *convo(*SPIN, bash("make", TRACEBACK))],  # spinning + hard: 0.762
        "B": [system, *convo(*SPIN, bash("make", "exit code 1"))],  # spinning + soft: 0.613
        "C": [system, *convo(*SPIN, bash("make"))],  # spinning: 0.462
        "D": convo(bash("make", "exit code 2")),  # soft, shallow: 0.211
        "E": convo(),
        "F": convo(),
        "G": convo(),  # no row in the task table
    }
    return [
        sy.sessions.Session([sy.Request(messages, metadata={"task_id": task})], id=f"s-{task}")
        for task, messages in conversations.items()
    ]


TASKS = pd.DataFrame(
    {
        "instance_id": ["A", "B", "C", "D", "E", "F"],
        "quadrant": ["RESCUE", "RESCUE", "LOSS", "LOSS", "SAFE", "HARD"],
    }
)


def _pure_runs(sessions):
    host = _host()
    runs = sy.compare(
        [sy.strategies.single("big"), sy.strategies.single("small")],
        sessions,
        host=host,
        progress=False,
    )
    return runs["single(big)"], runs["single(small)"]


def test_calibration_picks_the_lowest_threshold_that_rescues_without_spoiling():
    sessions = _calibration_sessions()
    capable_run, efficient_run = _pure_runs(sessions)
    found = calibrate_stage_router(sessions, capable_run, efficient_run, TASKS)
    assert isinstance(found, StageCalibration)
    # A and B (RESCUE) escalate up to 0.613; C (LOSS) is spoiled below 0.462: 0.5 is the lowest
    # threshold that keeps both rescues and spoils no LOSS task
    assert found.threshold == 0.5
    assert (found.rescued, found.spoiled) == (2, 0)
    assert dict(found.quadrants) == {"SAFE": 1, "RESCUE": 2, "LOSS": 2, "HARD": 1}
    assert (found.sessions, found.left_out) == (6, 1)
    sweep = found.sweep.set_index("threshold")
    nets = {0.0: 0, 0.2: 0, 0.25: 1, 0.45: 1, 0.5: 2, 0.6: 2, 0.65: 1, 0.75: 1, 0.8: 0, 1.0: 0}
    assert {t: sweep.loc[t, "net"] for t in nets} == nets
    assert sweep.loc[0.0, "capable_share"] == pytest.approx(4 / 6)
    assert sweep.loc[1.0, "capable_share"] == 0.0


def test_calibration_over_a_probe_subset_and_other_thresholds():
    sessions = _calibration_sessions()
    capable_run, _ = _pure_runs(sessions)
    _, probe = _pure_runs(sessions[:3])  # the efficient probe ran A, B and C only
    found = calibrate_stage_router(
        sessions, capable_run, probe, TASKS, thresholds=[0.1, 0.3, 0.62, 0.9]
    )
    assert (found.sessions, found.left_out) == (3, 4)
    assert dict(found.quadrants) == {"SAFE": 0, "RESCUE": 2, "LOSS": 1, "HARD": 0}
    # 0.1 and 0.3 rescue A and B but spoil C; 0.62 rescues A alone: the same net, for fewer
    # capable turns
    assert list(found.sweep["net"]) == [1, 1, 1, 0]
    assert found.threshold == 0.62
    assert (found.rescued, found.spoiled) == (1, 0)


def test_calibration_errors_name_the_problem():
    sessions = _calibration_sessions()
    capable_run, efficient_run = _pure_runs(sessions)
    mixed = sy.run(stage_router("big", "small"), sessions, host=_host(), progress=False)
    with pytest.raises(sy.ArgumentError, match="one model served every turn"):
        calibrate_stage_router(sessions, mixed, efficient_run, TASKS)
    both = sy.compare(
        [sy.strategies.single("big"), sy.strategies.single("small")],
        sessions,
        host=_host(),
        progress=False,
    )
    with pytest.raises(sy.ArgumentError, match="Comparison of 2 runs"):
        calibrate_stage_router(sessions, both, efficient_run, TASKS)
    with pytest.raises(sy.ArgumentError, match="lacks column 'quadrant'"):
        calibrate_stage_router(sessions, capable_run, efficient_run, TASKS[["instance_id"]])
    with pytest.raises(sy.ArgumentError, match="no session is served by both runs"):
        calibrate_stage_router(sessions, capable_run, efficient_run, TASKS, task_key="other")
    with pytest.raises(sy.ArgumentError, match=r"thresholds must be numbers in \[0, 1\]"):
        calibrate_stage_router(sessions, capable_run, efficient_run, TASKS, thresholds=[1.5])


@pytest.mark.parametrize(
    ("name", "command", "category"),
    [
        ("execute_bash", "cat ./setup.py", "read"),
        ("execute_bash", "cat > out.txt << 'eof'", "write"),
        ("str_replace_editor", "view", "read"),
        ("str_replace_editor", "create", "write"),
        ("str_replace_editor", "str_replace", "edit"),
        ("str_replace_editor", None, "other"),
    ],
)
def test_openhands_tools_are_known(name, command, category):
    from sykit.sessions._agent.tool_signals import classify_tool_call

    assert classify_tool_call(name, command) == category


def test_the_judge_reads_its_instructions_and_the_task_from_its_cache():
    system = {"role": "system", "content": "You are a careful coding agent. " * 200}
    messages = [system, *convo(*THREE_COMMANDS, bash("make"))]
    sizes = [len(json.dumps(m)) for m in messages]
    tokens = 20_000
    turns = [
        sy.sessions.Turn(sy.Request(messages, input_tokens=tokens + 1000 * k), gap_s=1.0)
        for k in range(3)
    ]
    cache = sy.profiles.PromptCache(read_price=0.01, write_price=0.125, min_tokens=1024)
    host = _host(efficient_quality=1.0)
    judge = host.profiles["judge"].replace(cache=cache)
    host = sy.SimHost({**host.profiles, "judge": judge}, judge=sy.Judge(accuracy=1.0))
    result = sy.run(
        stage_router("big", "small", judge="judge"),
        [sy.sessions.Session(turns, id="s")],
        host=host,
        progress=False,
    )
    assert list(result.requests["evidence_stage_source"]) == ["llm-classifier"] * 3
    d = result.attempts[result.attempts["kind"] == "decision"]
    # the prefix: the judge's instructions, the system message and the task (the first two
    # messages), in proportion to the first judged turn's tokens and the same text, so the same
    # tokens, on every later turn; the window after it is sized per turn
    prefix = math.ceil(tokens * sum(sizes[:2]) / sum(sizes)) + 60
    from sykit.sessions._agent.stage import DEFAULT_RECENT_WINDOW, _judge_view

    shown, stable = _judge_view(messages, DEFAULT_RECENT_WINDOW)
    assert stable == 2
    after = sum(len(json.dumps(m)) for m in shown[stable:])
    rest = [math.ceil((tokens + 1000 * k) * after / sum(sizes)) for k in range(3)]
    assert prefix > 1024
    assert list(d["input_tokens"]) == [prefix + r for r in rest]
    assert list(d["cache_write_tokens"]) == [prefix, 0, 0]
    assert list(d["cached_input_tokens"]) == [0, prefix, prefix]
    expected = [
        (cached * 0.01 + written * 0.125 + (n - cached - written) * 0.1 + 5 * 0.4) / 1e6
        for n, cached, written in zip(
            d["input_tokens"], d["cached_input_tokens"], d["cache_write_tokens"], strict=True
        )
    ]
    assert d["cost_usd"].tolist() == pytest.approx(expected)
