"""Session inputs that would otherwise be replayed or summarised wrongly: each is refused with an
error that says what to change."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st
from sykit.sessions import load_transcripts, pair_tasks, session_frame

USER = [{"role": "user", "content": "fix the bug"}]


def _write(path, lines):
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def _metadata_run(metadata, model="m"):
    host = sy.SimHost({model: sy.ModelProfile()})
    requests = [sy.Request(f"q{i}", metadata=m) for i, m in enumerate(metadata)]
    return sy.run(st.single(model), requests, host=host, progress=False)


def test_session_frame_needs_a_turn_beside_a_metadata_session_id():
    run = _metadata_run([{"session_id": "s"}] * 3)
    with pytest.raises(sy.ArgumentError, match=r"session_id but no turn.*give each request"):
        session_frame(run)


@pytest.mark.parametrize(
    ("turns", "match"),
    [
        ([0, 0, 1], r"session 's' has turn 0 more than once"),
        ([0, 1.5, 2], r"turn 1.5, not a whole"),
    ],
)
def test_session_frame_refuses_repeated_or_fractional_turns(turns, match):
    run = _metadata_run([{"session_id": "s", "turn": t} for t in turns])
    with pytest.raises(sy.ArgumentError, match=match):
        session_frame(run)


def test_session_frame_reads_numbered_metadata_sessions():
    run = _metadata_run([{"session_id": "s", "turn": t} for t in (1, 0, 2)])
    frame = session_frame(run)
    assert frame[["session_id", "turns", "served_turns"]].values.tolist() == [["s", 3, 3]]


def test_transcripts_refuse_a_parent_turn_key(tmp_path):
    path = _write(tmp_path / "a.jsonl", [{"messages": USER, "parent_turn": 2}])
    with pytest.raises(sy.ArgumentError, match=r"a.jsonl, line 1 .*'parent_turn' is one sykit"):
        load_transcripts(path)


def test_transcripts_refuse_session_ids_that_read_alike(tmp_path):
    lines = [{"messages": USER, "session_id": 1}, {"messages": USER, "session_id": "1"}]
    with pytest.raises(sy.ArgumentError, match=r"line 2 .*session '1' and session 1 .*read the"):
        load_transcripts(_write(tmp_path / "a.jsonl", lines))


def test_transcripts_refuse_a_file_named_after_another_files_session(tmp_path):
    a = _write(tmp_path / "a.jsonl", [{"messages": USER}])
    b = _write(tmp_path / "b.jsonl", [{"messages": USER, "session_id": "a"}])
    for paths in ([a, b], [b, a]):
        with pytest.raises(sy.ArgumentError, match=r"one by its file name and one by session_id"):
            load_transcripts(paths)
    sessions = load_transcripts([_write(tmp_path / "c.jsonl", [{"messages": USER, "session_id": "x"}]), _write(tmp_path / "d.jsonl", [{"messages": USER, "session_id": "x"}])])  # fmt: skip
    assert [len(s.turns) for s in sessions] == [2]  # a session spread over files is still one


def test_transcripts_refuse_more_cached_tokens_than_prompt_tokens(tmp_path):
    usage = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 100}}
    path = _write(tmp_path / "a.jsonl", [{"messages": USER, "usage": usage}])
    with pytest.raises(sy.ArgumentError, match=r"cached_tokens 100 is more than .*prompt_tokens"):
        load_transcripts(path)


@pytest.mark.parametrize("content", [None, 5, {"text": "hi"}, ["hi"]])
def test_transcripts_refuse_content_that_is_not_text_or_parts(tmp_path, content):
    path = _write(tmp_path / "a.jsonl", [{"messages": [{"role": "user", "content": content}]}])
    with pytest.raises(sy.ArgumentError, match=r"messages\[0\] \(user\) has content"):
        load_transcripts(path)


def test_transcripts_keep_content_parts_and_a_null_assistant_answer(tmp_path):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "go on"},
    ]
    (session,) = load_transcripts(_write(tmp_path / "a.jsonl", [{"messages": messages}]))
    assert len(session.turns) == 1


def test_pair_tasks_refuses_an_infinite_cost():
    results = pd.DataFrame(
        {"task": ["a", "a"], "model": ["s", "w"], "resolved": [1, 0], "cost": [float("inf"), 2.0]}
    )
    with pytest.raises(sy.ArgumentError, match=r"row 0 \('s'\): cost inf is not a USD amount"):
        pair_tasks(results, "s", "w", cost="cost")


def _calibration_runs():
    host = sy.SimHost({"weak": sy.ModelProfile(), "strong": sy.ModelProfile()})
    sessions = sy.sessions.grounded_sessions(n=4, seed=0)
    capable = sy.run(st.single("strong"), sessions, host=host, progress=False)
    efficient = sy.run(st.single("weak"), sessions, host=host, progress=False)
    return sessions, capable, efficient


def test_calibration_refuses_a_session_given_twice():
    sessions, capable, efficient = _calibration_runs()
    tasks = sy.sessions.swebench_pro()
    assert sy.sessions.calibrate_stage_router(sessions, capable, efficient, tasks).sessions == 4
    with pytest.raises(sy.ArgumentError, match=r"more than once, so its task would be counted"):
        sy.sessions.calibrate_stage_router(sessions + sessions[:1], capable, efficient, tasks)


def test_calibration_refuses_runs_without_turn_numbers():
    sessions, _, _ = _calibration_runs()
    capable, efficient = (_metadata_run([{"session_id": sessions[0].id}], m) for m in "sw")
    with pytest.raises(sy.ArgumentError, match=r"capable_run has a session_id but no turn"):
        sy.sessions.calibrate_stage_router(sessions, capable, efficient, sy.sessions.swebench_pro())
