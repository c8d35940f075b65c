"""Coding-agent session workloads: synthetic sessions fitted to the OpenHands trace, and agent
logs loaded as sessions."""

from __future__ import annotations

import itertools
import json
import re
import statistics

import pandas as pd
import pytest

import sykit as sy
from sykit._base.files import data_dir
from sykit.sessions._synthetic import TOOLS, AgentTrace, fit_openhands, synthetic_sessions
from sykit.sessions._transcripts import load_transcripts

CALLS = "agentic/openhands_sweverified_claude35_calls.csv"
ERROR_MARK = re.compile(r"Traceback|exit code [1-9]|^ERROR:", re.M)


def _host() -> sy.SimHost:
    latency = sy.Latency(ttft=sy.dists.Constant(0.5), tokens_per_s=2.0)  # one token: 1 s exactly
    profile = sy.ModelProfile(latency=latency, output_tokens=1, price_in=1e-6, price_out=1e-6)
    return sy.SimHost({"weak": profile, "strong": profile})


async def weak(request, driver):
    return sy.route_to("weak", request)


# -- the trace's own figures, computed from the CSV here (not by the code under test) ----------


@pytest.fixture(scope="module")
def table() -> dict:
    calls = pd.read_csv(data_dir() / CALLS)
    # a conversation starts at a call whose prompt is the system prompt and the task only
    calls["conversation"] = (calls["n_messages"] == 2).cumsum()
    calls["kind"] = calls["tool_sub"].fillna(calls["tool"])
    by = calls.groupby("conversation")
    later = calls[calls["n_messages"] > 2]
    previous_kind = by["kind"].shift()[calls["n_messages"] > 2]
    return {
        "tasks": calls["instance_id"].nunique(),
        "conversations": calls["conversation"].nunique(),
        "calls_per_task": calls.groupby("instance_id").size().median(),
        "calls": by.size().median(),
        "calls_mean": by.size().mean(),
        "prompt": calls["prompt_tokens"].median(),
        "first_prompt": by["prompt_tokens"].first().median(),
        "growth": by["prompt_tokens"].diff().median(),
        "error": later["prev_obs_error"].mean(),
        "gap": later["gap_s"].median(),
        "completion": calls["completion_tokens"].median(),
        "mix": previous_kind.value_counts(normalize=True).to_dict(),
        "cap": calls.loc[calls["finish_reason"] == "length", "completion_tokens"].max(),
    }


@pytest.fixture(scope="module")
def generated() -> dict:
    sessions = synthetic_sessions(400, seed=0)
    turns = [turn for s in sessions for turn in s.turns]
    later = [turn for s in sessions for turn in s.turns[1:]]
    growth = [
        b.request.input_tokens - a.request.input_tokens
        for s in sessions
        for a, b in itertools.pairwise(s.turns)
    ]
    kinds = pd.Series([t.request.metadata["tool_kind"] for t in later])
    return {
        "calls": statistics.median(len(s.turns) for s in sessions),
        "calls_mean": statistics.mean(len(s.turns) for s in sessions),
        "prompt": statistics.median(t.request.input_tokens for t in turns),
        "first_prompt": statistics.median(s.turns[0].request.input_tokens for s in sessions),
        "growth": statistics.median(growth),
        "error": statistics.mean(t.request.metadata["tool_error"] for t in later),
        "gap": statistics.median(t.gap_s for t in later),
        "completion": statistics.median(t.request.metadata["completion_tokens"] for t in turns),
        "mix": kinds.value_counts(normalize=True).to_dict(),
    }


# -- synthetic sessions --------------------------------------------------------------------------


def test_the_fit_cuts_the_trace_into_conversations(table):
    trace = fit_openhands()
    assert trace.tasks == table["tasks"] == 50
    assert len(trace.conversations) == len(trace.first_prompt_tokens) == table["conversations"]
    assert trace.restarts == table["conversations"] - table["tasks"] == 12
    assert sum(map(len, trace.conversations)) == sum(map(len, trace.completion_tokens.values()))
    assert trace.max_output_tokens == table["cap"] == 8192
    assert trace.output_tokens().quantile(0.5) == table["completion"]
    assert fit_openhands() is trace  # fitted once


@pytest.mark.parametrize(
    ("figure", "tolerance"),
    [
        ("calls", 0.15),  # median calls per conversation (a discrete median of 62 lengths)
        ("calls_mean", 0.10),
        ("prompt", 0.10),  # median prompt tokens over all calls
        ("first_prompt", 0.10),
        ("growth", 0.10),  # median prompt growth turn over turn
        ("gap", 0.10),  # median pause before a later turn
        ("completion", 0.10),  # median traced answer length
    ],
)
def test_generated_sessions_reproduce_the_trace_medians(table, generated, figure, tolerance):
    assert generated[figure] == pytest.approx(table[figure], rel=tolerance)


def test_generated_sessions_reproduce_the_error_share_and_tool_mix(table, generated):
    assert generated["error"] == pytest.approx(table["error"], abs=0.03)  # ~24 %
    assert set(generated["mix"]) <= set(table["mix"])
    for kind, share in table["mix"].items():
        assert generated["mix"].get(kind, 0.0) == pytest.approx(share, abs=0.03), kind


def test_the_headline_figures_are_the_ones_documented(table):
    assert table["calls_per_task"] == 22 and table["calls"] == 18
    assert round(table["prompt"], -3) == 21_000
    assert 495 <= table["growth"] <= 510
    assert round(table["error"], 2) == 0.24
    assert round(table["gap"], 1) == 8.3
    assert table["completion"] == 130


def test_same_seed_same_sessions_other_seeds_differ():
    a = synthetic_sessions(15, seed=3)
    assert a == synthetic_sessions(15, seed=3)
    assert a != synthetic_sessions(15, seed=4)
    assert synthetic_sessions(16, seed=3)[:15] == a  # each session is drawn by its own keys
    assert [s.id for s in a[:2]] == ["task-0", "task-1"]
    assert [s.id for s in synthetic_sessions(2, id_prefix="run")] == ["run-0", "run-1"]


def test_turns_are_well_formed_openai_chat_prompts():
    names = {tool["function"]["name"] for tool in TOOLS}
    for session in synthetic_sessions(40, seed=1):
        before = 0
        for k, turn in enumerate(session.turns):
            request = turn.request
            messages = request.messages
            assert [m["role"] for m in messages[:2]] == ["system", "user"]
            assert len(messages) == 2 + 2 * k  # each earlier call: its message and its result
            assert request.input_tokens > before  # the context grows turn over turn
            before = request.input_tokens
            assert request.max_output_tokens == 8192
            assert {t["function"]["name"] for t in request.tools} == names
            calls = {}
            for m in messages[2:]:
                if m["role"] == "assistant":
                    for call in m.get("tool_calls", []):
                        assert call["type"] == "function" and call["function"]["name"] in names
                        json.loads(call["function"]["arguments"])
                        calls[call["id"]] = call["function"]["name"]
                elif m["role"] == "tool":
                    assert m["tool_call_id"] in calls
                else:
                    assert m["role"] == "user"  # the agent's nudge after an answer without a tool
            meta = request.metadata
            if k == 0:
                assert meta["tool"] is None and meta["tool_error"] is False
                assert turn.gap_s == 0.0
                continue
            last, answer = messages[-1], messages[-2]
            if meta["tool"] == "none":
                assert last["role"] == "user" and "tool_calls" not in answer
            else:
                assert last["role"] == "tool"
                call = answer["tool_calls"][0]
                assert last["tool_call_id"] == call["id"]
                assert call["function"]["name"] == meta["tool"]
                assert bool(ERROR_MARK.search(last["content"])) is meta["tool_error"]
            assert turn.gap_s > 0


def test_generated_sessions_run_with_exact_turn_counts():
    sessions = synthetic_sessions(6, seed=2)
    result = sy.run(weak, sessions, host=_host(), concurrency=3, progress=False)
    r = result.requests
    assert (r["status"] == "ok").all()
    counts = r.groupby("session_id", sort=False).size().to_dict()
    assert counts == {s.id: len(s.turns) for s in sessions}
    for session in sessions:
        rows = r[r["session_id"] == session.id]
        assert rows["turn"].tolist() == list(range(len(session.turns)))
        assert rows["tool_error"].tolist() == [
            t.request.metadata["tool_error"] for t in session.turns
        ]
        gaps = [t.gap_s for t in session.turns[1:]]
        waited = (rows["arrival_s"].to_numpy()[1:] - rows["end_s"].to_numpy()[:-1]).tolist()
        assert waited == pytest.approx(gaps)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"n": 0}, sy.ArgumentError),
        ({"n": 2, "seed": "0"}, sy.ArgumentTypeError),
        ({"n": 2, "trace": "openhands"}, sy.ArgumentTypeError),
        ({"n": 2, "id_prefix": 3}, sy.ArgumentTypeError),
    ],
)
def test_bad_generator_arguments_are_refused(kwargs, error):
    with pytest.raises(error):
        synthetic_sessions(**kwargs)


def test_a_trace_with_an_unknown_transition_is_refused():
    trace = fit_openhands()
    with pytest.raises(sy.ArgumentError, match="has no traced transitions"):
        AgentTrace(**{**trace.__dict__, "transitions": {}})


# -- transcripts ---------------------------------------------------------------------------------


def _write(path, lines) -> None:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )


def _line(text="hi", **extra) -> dict:
    return {"messages": [{"role": "user", "content": text}], **extra}


def test_generated_sessions_survive_a_round_trip_through_transcripts(tmp_path):
    sessions = synthetic_sessions(5, seed=7)
    for session in sessions:
        clock, lines = 1_000.0, []
        for turn in session.turns:
            clock += turn.gap_s
            request = turn.request
            lines.append(
                {
                    "messages": [dict(m) for m in request.messages],
                    "timestamp": clock,
                    "end_timestamp": clock + 3.0,
                    "usage": {
                        "prompt_tokens": request.input_tokens,
                        "completion_tokens": request.metadata["completion_tokens"],
                    },
                    "tools": [dict(t) for t in request.tools],
                }
            )
            clock += 3.0
        _write(tmp_path / f"{session.id}.jsonl", lines)
    loaded = load_transcripts(tmp_path)
    assert [s.id for s in loaded] == sorted(s.id for s in sessions)
    by_id = {s.id: s for s in sessions}
    for back in loaded:
        original = by_id[back.id]
        assert len(back.turns) == len(original.turns)
        for a, b in zip(original.turns, back.turns, strict=True):
            assert b.request.messages == a.request.messages
            assert b.request.tools == a.request.tools
            assert b.request.input_tokens == a.request.input_tokens
            assert (
                b.request.metadata["completion_tokens"] == a.request.metadata["completion_tokens"]
            )
            assert b.gap_s == pytest.approx(a.gap_s)


def test_sessions_come_from_session_ids_or_files_in_order(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _write(folder / "b.jsonl", [_line("b0"), _line("b1")])
    _write(
        folder / "a.jsonl",
        [_line("a0", session_id=7), _line("x0", session_id="x"), _line("a1", session_id=7)],
    )
    (folder / "notes.txt").write_text("not a transcript")
    loaded = load_transcripts(folder)
    assert [s.id for s in loaded] == [7, "x", "b"]
    assert [[t.request.prompt for t in s.turns] for s in loaded] == [
        ["a0", "a1"],
        ["x0"],
        ["b0", "b1"],
    ]
    assert [t.request.metadata["transcript_line"] for t in loaded[0].turns] == [
        "a.jsonl:1",
        "a.jsonl:3",
    ]
    # a list of paths, and a single path, give the same sessions for those files
    assert load_transcripts([folder / "a.jsonl", str(folder / "b.jsonl")]) == loaded
    assert load_transcripts(folder / "b.jsonl") == loaded[2:]


def test_gaps_come_from_end_times_else_start_times_else_gap_s(tmp_path):
    _write(
        tmp_path / "t.jsonl",
        [
            _line(session_id="ends", timestamp=10.0, end_timestamp=12.5),
            _line(session_id="ends", timestamp=20.0, end_timestamp=21.0),
            _line(session_id="starts", timestamp=100),
            _line(session_id="starts", timestamp=104.5),
            _line(session_id="none"),
            _line(session_id="none"),
            "",
        ],
    )
    ends, starts, none = load_transcripts(tmp_path / "t.jsonl", gap_s=2.0)
    assert [t.gap_s for t in ends.turns] == [0.0, 7.5]
    assert [t.gap_s for t in starts.turns] == [0.0, 4.5]
    assert [t.gap_s for t in none.turns] == [0.0, 2.0]
    pause = sy.dists.LogNormal(8.4, p95=16)
    assert load_transcripts(tmp_path / "t.jsonl", gap_s=pause)[2].turns[1].gap_s is pause


def test_lines_keep_usage_tools_and_other_keys(tmp_path):
    tool = {"type": "function", "function": {"name": "execute_bash", "parameters": {}}}
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "execute_bash", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "[Command finished with exit code 1]"},
    ]
    usage = {
        "prompt_tokens": 900,
        "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 512},
    }
    _write(
        tmp_path / "s.jsonl",
        [{"messages": messages, "usage": usage, "tools": [tool], "model": "m1"}],
    )
    (session,) = load_transcripts(tmp_path / "s.jsonl")
    request = session.turns[0].request
    assert request.input_tokens == 900
    assert request.messages[2]["content"] is None  # omitted with tool calls, as OpenAI allows
    assert [dict(t) for t in request.tools] == [tool]
    assert dict(request.metadata) == {
        "model": "m1",
        "transcript_line": "s.jsonl:1",
        "completion_tokens": 40,
        "cached_tokens": 512,
    }
    assert load_transcripts(tmp_path / "s.jsonl")[0].turns[0].request.input_tokens == 900
    _write(tmp_path / "u.jsonl", [_line("x" * 400)])
    assert (
        load_transcripts(tmp_path / "u.jsonl")[0].turns[0].request.input_tokens > 100
    )  # estimated


def test_lines_split_only_at_newlines(tmp_path):
    text = "one\u2028two\x85three\r"  # JSON may carry these unescaped; they end no line
    (tmp_path / "w.jsonl").write_text(
        json.dumps(_line(text), ensure_ascii=False) + "\r\n", encoding="utf-8"
    )
    (session,) = load_transcripts(tmp_path / "w.jsonl")
    assert [t.request.prompt for t in session.turns] == [text]


def test_loaded_sessions_run(tmp_path):
    _write(tmp_path / "a.jsonl", [_line("a", timestamp=0.0), _line("b", timestamp=5.0)])
    result = sy.run(weak, load_transcripts(tmp_path), host=_host(), progress=False)
    r = result.requests
    assert r["session_id"].tolist() == ["a", "a"]
    assert r["arrival_s"].tolist() == [0.0, 6.0]  # answered at 1 s, then the 5 s pause


_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([_line(), "{not json"], r"bad\.jsonl, line 2 \(session unknown\): not valid JSON"),
        ([_line(), "[1, 2]"], r"line 2 \(session unknown\): expected a JSON object"),
        (
            [{"session_id": "s", "prompt": "hi"}],
            r"line 1 \(session 's'\): the line has no 'messages'",
        ),
        ([], r"bad\.jsonl: the file holds no calls, so session 'bad' has no turns"),
        (
            [_line(session_id="s", timestamp=9.0), _line(session_id="s", timestamp=5.0)],
            r"line 2 \(session 's'\): timestamp 5\.0 is before the previous call",
        ),
        (
            [_line(timestamp=1.0, end_timestamp=8.0), _line(timestamp=5.0)],
            r"line 2 \(session 'bad'\): timestamp 5\.0 is before the previous call of the session ended",
        ),
        (
            [
                {
                    "messages": [
                        {"role": "assistant", "content": None, "tool_calls": [_CALL]},
                        {"role": "tool", "tool_call_id": "c2", "content": "x"},
                    ]
                }
            ],
            r"line 1 \(session 'bad'\): messages\[1\] is a tool result for tool_call_id 'c2'",
        ),
        (
            [
                {
                    "messages": [
                        {"role": "tool", "tool_call_id": "c1", "content": "x"},
                        {"role": "assistant", "content": None, "tool_calls": [_CALL]},
                    ]
                }
            ],
            r"messages\[0\] is a tool result for tool_call_id 'c1', which no earlier",
        ),
        ([_line(timestamp=1.0), _line()], r"line 2 \(session 'bad'\): no timestamp, unlike"),
        ([_line(timestamp="2026-01-01")], r"line 1 \(session 'bad'\): timestamp must be a number"),
        ([_line(usage={"prompt_tokens": -1})], r"usage prompt_tokens must be an int ≥ 0"),
        ([_line(turn=3)], r"key 'turn' is one sykit sets"),
        (
            [{"messages": [{"role": "user"}]}],
            r"line 1 \(session 'bad'\): messages\[0\] \(user\) has no 'content'",
        ),
        ([{"messages": "hi"}], r"'messages' must be a non-empty list"),
        ([_line(tools="bash")], r"line 1 \(session 'bad'\): tools must be a list"),
        ([_line(session_id=True)], r"session_id must be a string or an integer"),
    ],
)
def test_bad_transcripts_give_one_clear_error(tmp_path, lines, match):
    _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(sy.ArgumentError, match=match):
        load_transcripts(tmp_path / "bad.jsonl")


def test_bad_paths_are_refused(tmp_path):
    with pytest.raises(sy.ArgumentError, match="no such file or folder"):
        load_transcripts(tmp_path / "missing.jsonl")
    with pytest.raises(sy.ArgumentError, match=r"holds no \*\.jsonl file"):
        load_transcripts(tmp_path)
    _write(tmp_path / "a.jsonl", [_line()])
    with pytest.raises(sy.ArgumentError, match="given twice"):
        load_transcripts([tmp_path / "a.jsonl", tmp_path])
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub" / "a.jsonl", [_line()])
    with pytest.raises(sy.ArgumentError, match="also names its session 'a'"):
        load_transcripts([tmp_path / "a.jsonl", tmp_path / "sub" / "a.jsonl"])
    with pytest.raises(sy.ArgumentError, match="paths is empty"):
        load_transcripts([])
    with pytest.raises(sy.ArgumentError, match="gap_s"):
        load_transcripts(tmp_path / "a.jsonl", gap_s=-1)
