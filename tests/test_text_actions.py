"""mini-swe-agent trajectories load as sessions whose text actions are structured bash calls."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import constant_profile

import sykit as sy
from sykit.sessions import load_transcripts
from sykit.sessions._agent.stage import pick_tier, stage_router
from sykit.sessions._agent.tool_signals import tool_signals
from sykit.sessions._text_actions import BASH_TOOL, DEFAULT_ACTION_REGEX

DATA = Path(__file__).resolve().parent / "data" / "mini-swe-agent"
TEXT = DATA / "text" / "textkit-7.traj.json"  # a v1 run: actions as ```bash blocks
TOOLCALL = DATA / "toolcall" / "textkit-7.traj.json"  # the same run in tool-calling mode (v2)

SED = 'sed -i \'s/text.lower().replace(" ", "-")/"-".join(text.lower().split())/\' textkit/slug.py'
HEREDOC = (
    "cat <<'EOF' > tests/test_slug_spaces.py\nfrom textkit.slug import slugify\n\n\n"
    'def test_a_run_of_spaces_gives_one_dash():\n    assert slugify("a   b") == "a-b"\nEOF'
)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
#: (message index, command) of every action the run executed, the submission last.
ACTIONS = [
    (2, 'grep -rn "def slugify" textkit'),
    (4, "python -m pytest tests/test_slug.py -q"),
    (8, SED),
    (12, HEREDOC),
    (14, "python -m pytest tests -q"),
    (16, SUBMIT),
]
#: What the stage router's rules decide for each of the run's 8 turns (threshold 0.5).
STAGES = [
    (None, "ambiguous"),
    (None, "ambiguous"),
    (None, "ambiguous"),  # a failing test: hard severity alone, 0.46
    ("capable", "dimensions"),  # the failure, and a turn deep without an edit: 0.76
    (None, "ambiguous"),
    (None, "ambiguous"),
    (None, "ambiguous"),
    ("efficient", "tests_passed"),  # the suite passes after the edit and the new test
]


def _load(path: Path = TEXT, **kwargs) -> list[sy.sessions.Session]:
    return load_transcripts(path, format="mini-swe-agent", **kwargs)


def _call(call_id: str, command: str) -> dict:
    arguments = json.dumps({"command": command})
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}


def _write(path: Path, messages: list, **top) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"info": {}, "messages": messages, **top}), encoding="utf-8")
    return path


def _stages(sessions: list[sy.sessions.Session]) -> list[tuple[str | None, str]]:
    picks = [pick_tier(tool_signals(t.request.messages), 0.5) for t in sessions[0].turns]
    return [(p.tier, p.source) for p in picks]


def _structured_by_hand() -> list[sy.sessions.Session]:
    """The tool-calling run's turns, built here without the loader: each prompt is every message
    before an answer, in OpenAI chat form."""
    messages = json.loads(TOOLCALL.read_text())["messages"]
    keep = ("role", "content", "tool_calls", "tool_call_id")
    chat = [{k: m[k] for k in keep if k in m} for m in messages if m["role"] != "exit"]
    answers = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    return [
        sy.sessions.Session(
            [sy.sessions.Turn(sy.Request(chat[:i])) for i in answers], id="textkit-7"
        )
    ]


# -- conversion ---------------------------------------------------------------------------------


def test_each_action_becomes_a_bash_call_answered_by_its_output():
    raw = json.loads(TEXT.read_text())["messages"]
    (session,) = _load()
    assert session.id == "textkit-7"  # the trajectory's instance_id
    answers = [i for i, m in enumerate(raw) if m["role"] == "assistant"]
    assert answers == [2, 4, 6, 8, 10, 12, 14, 16]  # one turn per LLM call
    last = [dict(m) for m in session.turns[-1].request.messages]
    for turn, index in zip(session.turns, answers, strict=True):
        assert [dict(m) for m in turn.request.messages] == last[:index]  # the prompt so far
    calls = {index: _call(f"call_{index}", command) for index, command in ACTIONS}
    expected = []
    for i, message in enumerate(raw[:16]):
        if message["role"] == "assistant" and i in calls:
            expected.append(
                {"role": "assistant", "content": message["content"], "tool_calls": [calls[i]]}
            )
        elif message["role"] == "assistant":  # messages 6 (two blocks) and 10 (none)
            expected.append({"role": "assistant", "content": message["content"]})
        elif i - 1 in calls:
            expected.append(
                {"role": "tool", "tool_call_id": f"call_{i - 1}", "content": message["content"]}
            )
        else:  # system, task, and the two format errors stay user messages
            expected.append({"role": message["role"], "content": message["content"]})
    assert last == expected
    assert [m["role"] for m in last] == (
        ["system", "user"] + ["assistant", "tool"] * 2 + ["assistant", "user"]
        + ["assistant", "tool", "assistant", "user"] + ["assistant", "tool"] * 2
    )  # fmt: skip


def test_turns_keep_usage_the_bash_tool_and_where_they_came_from():
    (session,) = _load()
    requests = [t.request for t in session.turns]
    assert [r.input_tokens for r in requests] == [1342, 1419, 1590, 1737, 1838, 1925, 2046, 2131]
    assert all(r.tools == (BASH_TOOL,) for r in requests)
    assert [r.metadata["returncode"] for r in requests] == [None, 0, 1, None, 0, None, 0, 0]
    assert dict(requests[2].metadata) == {
        "exit_status": "Submitted",
        "returncode": 1,  # the failing test run ends this prompt
        "transcript_line": "textkit-7.traj.json:messages[6]",
        "completion_tokens": 92,
        "cached_tokens": 1280,
    }
    assert [t.gap_s for t in _load(gap_s=3.0)[0].turns] == [0.0] + [3.0] * 7


def test_no_block_or_several_run_nothing_and_their_format_error_stays_a_user_message(tmp_path):
    two = "Look first.\n\n```bash\nls\n```\n\n```bash\ncat a.py\n```"
    error = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
    path = _write(
        tmp_path / "t.traj.json",
        [
            {"role": "system", "content": "Reply with ```bash\nyour_command_here\n```"},
            {"role": "user", "content": "Fix a.py"},
            {"role": "assistant", "content": two},
            {"role": "user", "content": error},
            {"role": "assistant", "content": "I am done."},
            {"role": "user", "content": error.replace("2", "0")},
            {"role": "assistant", "content": "```bash\n  ls -la  \n```"},
            {"role": "user", "content": "<returncode>0</returncode>"},
            {"role": "assistant", "content": "Done."},
        ],
    )
    (session,) = _load(path)
    assert session.turns[-1].request.messages[6]["tool_calls"] == [_call("call_6", "ls -la")]
    assert [dict(m) for m in session.turns[-2].request.messages] == [
        {"role": "system", "content": "Reply with ```bash\nyour_command_here\n```"},
        {"role": "user", "content": "Fix a.py"},
        {"role": "assistant", "content": two},
        {"role": "user", "content": error},
        {"role": "assistant", "content": "I am done."},
        {"role": "user", "content": error.replace("2", "0")},
    ]  # the system prompt's own bash block is not an action
    assert not tool_signals(session.turns[-2].request.messages).has_tool_activity


COMMANDS = [
    ("python -m pytest tests/test_slug.py -q", "other"),
    (SED, "edit"),
    (HEREDOC, "write"),
    ("cat <<EOF > notes.txt\nline\nEOF", "write"),
    ('grep -rn "def slugify" textkit', "read"),
    (SUBMIT, "read"),  # "git diff " reads
    ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "other"),
]


@pytest.mark.parametrize(("command", "category"), COMMANDS)
def test_converted_calls_are_classified_as_structured_calls_are(tmp_path, command, category):
    answer = f"THOUGHT: next.\n\n```bash\n{command}\n```"
    path = _write(
        tmp_path / "c.traj.json",
        [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
            {"role": "assistant", "content": "THOUGHT: that is all."},
        ],
    )
    converted = _load(path)[0].turns[1].request.messages
    structured = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": None, "tool_calls": [_call("toolu_1", command)]},
        {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "content": "<returncode>0</returncode>\n<output>\n</output>",
        },
    ]
    signals = tool_signals(converted)
    assert signals == tool_signals(structured)
    counts = {
        "write": signals.write_count,
        "edit": signals.edit_count,
        "read": signals.read_count,
        "plan": signals.plan_count,
    }
    assert signals.tool_calls == 1
    assert [c for c, n in counts.items() if n] == ([] if category == "other" else [category])


# -- the stage router ---------------------------------------------------------------------------


def test_stages_equal_the_structured_runs():
    text = _load()
    assert _stages(text) == STAGES
    assert _stages(_structured_by_hand()) == STAGES
    assert _stages(_load(TOOLCALL)) == STAGES  # calls a run already carries are kept


def test_the_stage_router_routes_the_converted_run_as_the_structured_one():
    host = sy.SimHost(
        {
            "big": constant_profile(1.0, 10, 10.0, price_in=3.0, price_out=15.0),
            "small": constant_profile(0.5, 10, 10.0, price_in=0.3, price_out=1.2),
        }
    )
    frames = [
        sy.run(stage_router("big", "small"), sessions, host=host, progress=False).requests
        for sessions in (_load(), _structured_by_hand())
    ]
    columns = ["turn", "selected_model", "evidence_stage_source", "evidence_stage_tier"]
    text, structured = (f[columns].reset_index(drop=True) for f in frames)
    assert text.equals(structured)
    assert list(text["evidence_stage_source"]) == (
        ["fall_open"] * 3 + ["dimensions"] + ["fall_open"] * 3 + ["tests_passed"]
    )
    assert list(text["selected_model"]) == ["small"] * 3 + ["big"] + ["small"] * 4


# -- the action regex and trajectory versions ---------------------------------------------------


def _v2_text(tmp_path: Path, recorded: str | None) -> Path:
    config = {} if recorded is None else {"model": {"action_regex": recorded}}
    return _write(
        tmp_path / "v2.traj.json",
        [
            {"role": "system", "content": "Use ```mswea_bash_command blocks."},
            {"role": "user", "content": "Count the files."},
            {"role": "assistant", "content": "```mswea_bash_command\nls | wc -l\n```"},
            {"role": "user", "content": "<output>\n3\n</output>", "extra": {"returncode": 0}},
            {
                "role": "assistant",
                "content": "```sh\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
            },
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ],
        info={"exit_status": "Submitted", "config": config},
        trajectory_format="mini-swe-agent-1.1",
    )


def test_the_regex_the_run_recorded_is_used_unless_one_is_given(tmp_path):
    recorded = r"```mswea_bash_command\s*\n(.*?)\n```"
    (session,) = _load(_v2_text(tmp_path, recorded))
    assert session.id == "v2"  # no instance_id: the file's name
    second = session.turns[1].request
    assert second.messages[2]["tool_calls"] == [_call("call_2", "ls | wc -l")]
    assert dict(second.messages[3]) == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "<output>\n3\n</output>",
    }
    assert second.metadata["returncode"] == 0  # v2 keeps it in extra.returncode
    assert len(session.turns) == 2  # the final exit message is no call
    # the default (v1's ```bash) finds nothing here; a given regex wins over the recorded one
    (plain,) = _load(_v2_text(tmp_path, None))
    assert "tool_calls" not in plain.turns[1].request.messages[2]
    (given,) = _load(_v2_text(tmp_path, recorded), action_regex=r"```sh\n(.*?)\n```")
    assert "tool_calls" not in given.turns[1].request.messages[2]
    assert DEFAULT_ACTION_REGEX == r"```bash\s*\n(.*?)\n```"


def test_a_tool_calling_run_is_kept_and_its_text_never_parsed(tmp_path):
    call = _call("toolu_1", "ls")
    path = _write(
        tmp_path / "tc.traj.json",
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "Listing.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "a.py"},
            {"role": "assistant", "content": "```bash\ncat a.py\n```"},  # ran nothing
            {"role": "user", "content": "No tool calls found in the response."},
            {"role": "assistant", "content": "Done."},
        ],
    )
    messages = [dict(m) for m in _load(path)[0].turns[-1].request.messages]
    assert messages[2] == {"role": "assistant", "content": "Listing.", "tool_calls": [call]}
    assert messages[4] == {"role": "assistant", "content": "```bash\ncat a.py\n```"}
    assert messages[5]["role"] == "user"


def test_a_folder_gives_its_trajectories_in_path_order_subfolders_included(tmp_path):
    (tmp_path / "trajs" / "b").mkdir(parents=True)
    shutil.copy(TEXT, tmp_path / "trajs" / "b" / "b.traj.json")  # named by its instance_id
    one = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "```bash\nls\n```"},
    ]
    _write(tmp_path / "trajs" / "a" / "a-run.traj.json", one)
    (tmp_path / "trajs" / "notes.json").write_text("{}")
    loaded = _load(tmp_path / "trajs")
    assert [s.id for s in loaded] == ["a-run", "textkit-7"]
    assert [len(s.turns) for s in loaded] == [1, 8]
    _write(tmp_path / "trajs" / "c" / "textkit-7.traj.json", one)
    with pytest.raises(sy.ArgumentError, match=r"also holds session 'textkit-7'"):
        _load(tmp_path / "trajs")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "run.jsonl").write_text("")
    with pytest.raises(sy.ArgumentError, match=r"logs: the folder holds no \*\.traj\.json file"):
        _load(tmp_path / "logs")


# -- errors ------------------------------------------------------------------------------------

GOOD = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": "```bash\nls\n```"},
    {"role": "user", "content": "<returncode>0</returncode>"},
    {"role": "assistant", "content": "done"},
]


def _with(index: int, message) -> list:
    messages = [dict(m) for m in GOOD]
    messages[index] = message
    return messages


BAD_USAGE = {"response": {"usage": {"prompt_tokens": "many"}}}
MALFORMED = [
    (_with(3, "just text"), r"messages\[3\]: expected an object with a 'role'"),
    (_with(3, {"content": "x"}), r"messages\[3\]: expected an object with a 'role'"),
    (_with(1, {"role": "human", "content": "x"}), r"messages\[1\]: role 'human' is not one of"),
    (
        _with(3, {"role": "assistant", "content": "x"}),
        r"messages\[3\]: the action of messages\[2\] is answered with role 'assistant'",
    ),
    (
        _with(3, {"role": "tool", "tool_call_id": "nope", "content": "x"}),
        r"messages\[3\]: the action of messages\[2\] is answered with role 'tool'",
    ),
    (
        _with(2, {"role": "assistant", "content": None}),
        r"messages\[2\]: an assistant message without tool calls needs its text",
    ),
    (_with(3, {"role": "user", "content": 7}), r"messages\[3\]: 'content' must be text"),
    (
        _with(3, {"role": "exit", "content": ""}),
        r"messages\[3\]: an 'exit' message ends a run, yet messages follow it",
    ),
    (
        GOOD[2:],
        r"messages\[0\] \(session 'bad'\): the trajectory opens with the assistant's answer",
    ),
    (GOOD[:2], r"no assistant message, so session 'bad' has no LLM calls"),
    (
        _with(4, {"role": "assistant", "content": "done", "extra": BAD_USAGE}),
        r"messages\[4\] \(session 'bad'\): usage prompt_tokens",
    ),
]


@pytest.mark.parametrize(("messages", "message"), MALFORMED)
def test_malformed_trajectories_name_the_file_and_the_message(tmp_path, messages, message):
    path = _write(tmp_path / "bad.traj.json", messages)
    with pytest.raises(sy.ArgumentError, match=re.escape(str(path)) + ".*" + message):
        _load(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"messages": [', r"not valid JSON \(Expecting value at line 1, column 15\)"),
        ("[1, 2]", r"expected a JSON object with 'messages', got list"),
        ('{"info": {}}', r"the trajectory has no 'messages' list"),
        ('{"info": [], "messages": []}', r"'info' must be an object"),
        ('{"messages": [], "instance_id": true}', r"instance_id must be a string or an integer"),
        (
            '{"info": {"config": {"agent": {"action_regex": "(a)(b)"}}}, "messages": []}',
            r"info\.config\.agent\.action_regex '\(a\)\(b\)' has 2 groups.*pass action_regex=",
        ),
    ],
)
def test_unreadable_files_are_named(tmp_path, text, message):
    path = tmp_path / "bad.traj.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(sy.ArgumentError, match=re.escape(str(path)) + ": " + message):
        _load(path)
    path.write_bytes(b'{"messages": "\xff"}')
    with pytest.raises(sy.ArgumentError, match="not UTF-8 text"):
        _load(path)


def test_bad_options_are_named(tmp_path):
    with pytest.raises(
        sy.ArgumentError, match=r"format must be one of \['jsonl', 'mini-swe-agent'\]"
    ):
        load_transcripts(TEXT, format="swe-agent")
    with pytest.raises(sy.ArgumentError, match="action_regex applies to format='mini-swe-agent'"):
        load_transcripts(TEXT, action_regex=DEFAULT_ACTION_REGEX)
    with pytest.raises(sy.ArgumentError, match=r"has 0 groups; it needs exactly one, the command"):
        _load(action_regex="```bash.*?```")
    with pytest.raises(sy.ArgumentError, match=r"'\(' is not a valid regex"):
        _load(action_regex="(")
    with pytest.raises(sy.ArgumentTypeError, match="action_regex must be a regular expression"):
        _load(action_regex=1)
