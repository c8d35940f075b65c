"""Routers for agent sessions written after the seed system's: the LLM task classifier (§C.6),
the advisor gate (§C.9) and the sub-agent router (§C.8), turn by turn on exact simulated hosts."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import constant_profile

import sykit as sy
from sykit import strategies as st
from sykit.sessions._agent.advisor import (
    MAX_FAILED_CONSULTS,
    advisor_gate,
    tool_results,
    transcript,
)
from sykit.sessions._agent.classifier import _task_view, custom_classifier, task_classifier
from sykit.sessions._agent.subagent import delegated_prompt, subagent_router

DOWN = sy.Faults(unavailable=1.0)


def _host(
    weak: float | None = None, strong: float | None = None, faults: sy.Faults | None = None
) -> sy.SimHost:
    """weak answers 50 tokens in 1.0 s, strong 100 in 3.0 s; decisions take 0.5 s on ``clf``
    and 1.1 s on strong. ``weak``/``strong`` are the profiles' qualities (1.0 or 0.0 makes every
    answer right or wrong); ``faults`` break ``down``, a model that is never up. Judges are
    always right."""
    return sy.SimHost(
        {
            "weak": constant_profile(0.5, 50, 100.0, price_in=1.0, price_out=2.0, quality=weak),
            "strong": constant_profile(
                1.0, 100, 50.0, price_in=10.0, price_out=30.0, quality=strong
            ),
            "clf": constant_profile(0.25, 5, 20.0, price_in=0.5, price_out=1.0),
            "down": constant_profile(0.25, 5, 20.0, faults=faults or DOWN),
        },
        judge=sy.Judge(accuracy=1.0),
    )


def _session(
    sid: str,
    turns: int = 4,
    *,
    user_turns: tuple[int, ...] = (),
    parent: str | None = None,
    task: str | None = None,
) -> sy.sessions.Session:
    """Turn k carries the task and k (assistant tool call, tool result) pairs, then a user
    follow-up when k is in ``user_turns``."""
    history: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": task or f"fix the bug in {sid}"},
    ]
    made = []
    for k in range(turns):
        if k:
            call = {"id": f"c{k}", "type": "function", "function": {"name": "bash"}}
            history.append({"role": "assistant", "content": None, "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"c{k}", "content": "ok"})
            if k in user_turns:
                history.append({"role": "user", "content": f"now also do step {k}"})
        made.append(
            sy.sessions.Turn(sy.Request(list(history), input_tokens=1000 * (k + 1)), gap_s=1.0)
        )
    return sy.sessions.Session(made, id=sid, parent=parent)


def _run(algorithm, items, host, **kwargs) -> sy.Result:
    return sy.run(algorithm, items, host=host, progress=False, **kwargs)


def _column(result: sy.Result, name: str) -> list:
    return [None if pd.isna(v) else v for v in result.requests[name]]


def _models(result: sy.Result) -> list[str]:
    return result.requests["served_model"].astype(str).tolist()


def _decision_calls(result: sy.Result) -> list[int]:
    """Decision calls per request, in the requests' order (a call retried counts once)."""
    a = result.attempts
    calls = a[a["kind"] == "decision"].groupby("request_id", observed=True)["call_id"].nunique()
    return [int(calls.get(rid, 0)) for rid in result.requests["request_id"]]


def _graded(weak: float, strong: float, i: int) -> sy.Request:
    truth = sy.datasets.GroundTruth(quality={"weak": weak, "strong": strong})
    return sy.Request(f"question {i}", id=i).with_truth(truth)


# -- the task classifier (§C.6) -------------------------------------------------------------------


def test_task_classifier_sends_the_capable_model_only_where_it_has_the_advantage():
    grades = [(0.0, 1.0), (1.0, 1.0), (0.0, 0.0), (1.0, 0.0)]
    requests = [_graded(w, s, i) for i, (w, s) in enumerate(grades)]
    result = _run(task_classifier("weak", "strong", classifier="clf"), requests, _host())
    assert result.strategy == "task_classifier(weak|strong)"
    assert _models(result) == ["strong", "weak", "weak", "weak"]
    assert _column(result, "evidence_source") == ["classifier"] * 4
    assert _column(result, "evidence_score") == [1.0, 0.0, 0.0, 0.0]
    assert set(result.requests["evidence_threshold"]) == {0.5}
    assert _decision_calls(result) == [1, 1, 1, 1]
    decisions = result.attempts[result.attempts["kind"] == "decision"]
    assert set(decisions["model"].astype(str)) == {"clf"} and set(decisions["phase"]) == {"routing"}
    assert result.requests["routing_s"].tolist() == [0.5] * 4  # one 0.5 s decision, no answer


def test_the_other_tier_is_the_fallback():
    host = _host()
    host = sy.SimHost(
        {**host.profiles, "weak": constant_profile(0.5, 50, 100.0, faults=DOWN)},
        judge=sy.Judge(accuracy=1.0),
        policy=sy.HostPolicy(max_retries=0),
    )
    result = _run(task_classifier("weak", "strong", classifier="clf"), [_graded(1, 1, 0)], host)
    r = result.requests.iloc[0]
    assert (r["selected_model"], r["served_model"], r["n_fallbacks"]) == ("weak", "strong", 1)


def test_custom_classifier_picks_the_first_label_good_enough():
    grades = [(1.0, 1.0), (0.0, 1.0), (0.0, 0.0)]
    requests = [_graded(w, s, i) for i, (w, s) in enumerate(grades)]
    router = custom_classifier({"easy": "weak", "hard": "strong"}, classifier="clf", default="hard")
    result = _run(router, requests, _host())
    assert result.strategy == "custom_classifier(easy,hard)"
    assert _column(result, "evidence_verdict") == ["easy", "hard", "hard"]  # none good: the last
    assert _models(result) == ["weak", "strong", "strong"]


def test_every_request_classifies_every_turn():
    result = _run(task_classifier("weak", "strong", classifier="clf"), [_session("s")], _host(0, 1))
    assert _decision_calls(result) == [1, 1, 1, 1]
    assert _models(result) == ["strong"] * 4
    assert "evidence_affinity" not in result.requests.columns


def test_new_session_decides_once_and_holds_the_choice():
    sessions = [_session("a"), _session("b")]
    router = task_classifier("weak", "strong", classifier="clf", trigger="new_session")
    result = _run(router, sessions, _host(0, 1))
    assert result.strategy == "task_classifier(weak|strong,new_session)"
    assert _decision_calls(result) == [1, 0, 0, 0] * 2
    assert _models(result) == ["strong"] * 8
    assert _column(result, "evidence_affinity") == ["decided", "held", "held", "held"] * 2


def _session_where(differs, host: sy.SimHost, turns: tuple[int, ...]) -> sy.sessions.Session:
    """The first of the sessions s0, s1, ... whose weak answers at ``turns`` satisfy
    ``differs``, read through the truth the simulated classifier reads."""
    for n in range(50):
        session = _session(f"s{n}", 5, user_turns=(3,))
        seen: dict[int, float] = {}

        async def probe(request, driver, seen=seen):
            seen[request.metadata["turn"]] = sy.strategies.peek_truth(driver).quality("weak")
            return sy.route_to("weak", request)

        _run(probe, [session], host)
        if differs(*(seen[k] for k in turns)):
            return session
    raise AssertionError("no such session among 50")


def test_user_turn_decides_again_on_a_user_message_and_holds_through_tool_results():
    host = _host(weak=0.5, strong=1.0)  # weak is right on about half the turns
    session = _session_where(lambda first, fourth: first == 1.0 and fourth == 0.0, host, (0, 3))
    router = task_classifier("weak", "strong", classifier="clf", trigger="user_turn")
    result = _run(router, [session], host)
    assert _decision_calls(result) == [1, 0, 0, 1, 0]
    assert _models(result) == ["weak", "weak", "weak", "strong", "strong"]
    assert _column(result, "evidence_affinity") == ["decided", "held", "held", "decided", "held"]


def test_a_failing_classifier_fails_open_to_the_capable_model():
    result = _run(
        task_classifier("weak", "strong", classifier="down"), [_session("s")], _host(1, 1)
    )
    assert _models(result) == ["strong"] * 4
    assert set(result.requests["evidence_source"]) == {"fail_open"}
    assert set(result.requests["evidence_reason_code"]) == {"unavailable"}
    assert set(result.requests["status"]) == {"ok"}


def test_a_fail_open_choice_is_latched_like_any_other():
    router = task_classifier("weak", "strong", classifier="down", trigger="new_session")
    result = _run(router, [_session("s")], _host(1, 1))
    assert _decision_calls(result) == [1, 0, 0, 0]
    assert _models(result) == ["strong"] * 4
    assert _column(result, "evidence_source") == ["fail_open", None, None, None]


def test_custom_classifier_fails_open_to_its_default():
    router = custom_classifier(
        {"easy": "weak", "hard": "strong"}, classifier="down", default="easy"
    )
    result = _run(router, [_graded(0, 1, 0)], _host())
    assert _models(result) == ["weak"]
    assert _column(result, "evidence_verdict") == ["easy"]
    assert _column(result, "evidence_reason_code") == ["unavailable"]


def test_without_fail_open_a_classifier_error_fails_the_turn_and_ends_the_session():
    router = task_classifier("weak", "strong", classifier="down", fail_open=False)
    result = _run(router, [_session("s")], _host(1, 1))
    r = result.requests
    assert r["status"].tolist() == ["failed"] and r["error_kind"].tolist() == ["unavailable"]


def test_a_late_classifier_is_a_missing_verdict():
    router = task_classifier("weak", "strong", classifier="clf", timeout_s=0.25)
    result = _run(router, [_graded(1, 1, 0)], _host())
    assert _models(result) == ["strong"]
    assert _column(result, "evidence_reason_code") == ["timeout"]
    decision = result.attempts[result.attempts["kind"] == "decision"].iloc[0]
    assert (decision["status"], decision["cancel_cause"]) == ("cancelled", "timeout")
    late = task_classifier("weak", "strong", classifier="clf", timeout_s=0.25, fail_open=False)
    failed = _run(late, [_graded(1, 1, 0)], _host()).requests.iloc[0]
    assert (failed["status"], failed["error_kind"]) == ("failed", "timeout")


def test_the_classifier_sees_the_task_and_a_window_that_keeps_tool_pairs_whole():
    request = _session("s", 3, user_turns=(2,)).turns[-1].request
    roles = [m["role"] for m in request.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]

    def shown(window):
        messages, tokens = _task_view(request, window)
        return [request.messages.index(m) for m in messages], tokens

    assert shown(None)[0] == [1, 6]  # the opening task and the latest user message
    assert shown(1)[0] == [0, 1, 6]
    assert shown(2)[0] == [0, 1, 4, 5, 6]  # would start at a tool result: widened to its call
    assert shown(10) == (list(range(7)), request.input_tokens)
    assert 0 < shown(None)[1] < shown(2)[1] < request.input_tokens


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: task_classifier("w", "s", classifier="c", trigger="always"), "trigger must be"),
        (lambda: task_classifier("w", "s", classifier="c", cutoff=1.5), "cutoff must be"),
        (lambda: task_classifier("w", "s", classifier="c", window=-1), "window must be"),
        (lambda: task_classifier("w", "w", classifier="c"), "must differ"),
        (lambda: task_classifier("w", "s", classifier=""), "classifier must be a model name"),
        (lambda: task_classifier("w", "s", classifier="c", fail_open=1), "fail_open must be"),
        (lambda: task_classifier("w", "s", classifier="c", timeout_s=0), "timeout_s must be"),
        (lambda: custom_classifier({"a": "w"}, classifier="c", default="a"), "at least two"),
        (lambda: custom_classifier({"a": "w", "b": "s"}, classifier="c", default="x"), "default"),
        (lambda: custom_classifier({"a": "w", 2: "s"}, classifier="c", default="a"), "labels"),
    ],
)
def test_classifier_options_are_checked(make, match):
    with pytest.raises((sy.ArgumentError, sy.ArgumentTypeError), match=match):
        make()


# -- the advisor gate (§C.9) ----------------------------------------------------------------------


def _evidence(result: sy.Result) -> list[tuple]:
    return list(
        zip(_column(result, "evidence_advisor"), _column(result, "evidence_reviews"), strict=True)
    )


def test_an_approved_turn_is_the_executors_answer_and_the_spent_budget_passes_through():
    result = _run(advisor_gate("weak", "strong"), [_session("s", 3)], _host(weak=1.0))
    assert result.strategy == "advisor_gate(weak>strong)"
    assert _evidence(result) == [("approve", 1), ("spent", 1), ("spent", 1)]
    assert _column(result, "evidence_trigger") == ["every_turn", None, None]
    a = result.attempts
    first = a[a["request_id"] == "s#0"]
    columns = ["phase", "kind", "model", "served"]
    assert first[columns].astype(str).values.tolist() == [
        ["routing", "model", "weak", "True"],
        ["routing", "decision", "strong", "False"],
    ]
    later = a[a["request_id"] != "s#0"]
    assert set(later["phase"]) == {"answer"} and set(later["model"].astype(str)) == {"weak"}
    assert result.requests["routing_s"].iloc[0] == pytest.approx(1.0 + 1.1)  # executor, review


def test_redo_discards_the_executors_turn_and_hands_it_to_the_strong_model():
    result = _run(advisor_gate("weak", "strong"), [_session("s", 2)], _host(weak=0.0))
    assert _evidence(result) == [("redo", 1), ("spent", 1)]
    r = result.requests
    assert _models(result) == ["strong", "weak"]
    assert r["evidence_discarded_input_tokens"].iloc[0] == 1000
    assert r["evidence_discarded_output_tokens"].iloc[0] == 50
    assert r["wasted_usd"].iloc[0] > 0 and r["n_attempts"].iloc[0] == 3
    answer = result.attempts[(result.attempts["request_id"] == "s#0") & result.attempts["served"]]
    assert answer[["phase", "model"]].astype(str).values.tolist() == [["answer", "strong"]]


def test_redo_to_the_executor_asks_it_again_with_its_turn_and_the_feedback():
    gate = advisor_gate("weak", "strong", redo_to="weak")
    assert gate.name == "advisor_gate(weak>strong,redo:weak)"
    result = _run(gate, [_session("s", 1)], _host(weak=0.0))
    answer = result.attempts[result.attempts["phase"] == "answer"].iloc[0]
    assert str(answer["model"]) == "weak" and answer["served"]
    assert answer["input_tokens"] > 1000 + 50  # the request, the discarded turn, the feedback


def test_the_review_budget_is_per_session():
    gate = advisor_gate("weak", "strong", max_reviews=2)
    result = _run(gate, [_session("a"), _session("b")], _host(weak=1.0))
    per_session = [("approve", 1), ("approve", 2), ("spent", 2), ("spent", 2)]
    assert _evidence(result) == per_session * 2
    assert _decision_calls(result) == [1, 1, 0, 0] * 2


def test_min_tool_results_holds_reviews_back():
    gate = advisor_gate("weak", "strong", max_reviews=5, min_tool_results=2)
    result = _run(gate, [_session("s")], _host(weak=1.0))
    assert _column(result, "evidence_advisor") == ["quiet", "quiet", "approve", "approve"]
    assert tool_results(_session("s").turns[3].request.messages) == 3


def test_the_stall_checkpoint_reviews_once_per_session():
    gate = advisor_gate("weak", "strong", max_reviews=5, trigger="pattern", pattern="NEVER")
    assert set(_column(_run(gate, [_session("s", 5)], _host(1.0)), "evidence_advisor")) == {"quiet"}
    stalled = advisor_gate(
        "weak", "strong", max_reviews=5, trigger="pattern", pattern="NEVER", stall_turns=2
    )
    result = _run(stalled, [_session("s", 5)], _host(weak=1.0))
    assert _column(result, "evidence_advisor") == ["quiet", "quiet", "approve", "quiet", "quiet"]
    assert _column(result, "evidence_trigger") == [None, None, "stall", None, None]


def test_the_pattern_trigger_reads_the_executors_text():
    gate = advisor_gate("weak", "strong", trigger="pattern", pattern=r"simulated answer")
    result = _run(gate, [_session("s", 2)], _host(weak=1.0))
    assert _column(result, "evidence_trigger") == ["pattern", None]


def test_a_trigger_function_sees_the_turn_and_the_answer():
    seen = []

    def last_step(request, response):
        seen.append((request.metadata["turn"], response.model))
        return request.metadata["turn"] == 2

    gate = advisor_gate("weak", "strong", trigger=last_step)
    result = _run(gate, [_session("s")], _host(weak=1.0))
    assert _column(result, "evidence_advisor") == ["quiet", "quiet", "approve", "spent"]
    assert seen == [(0, "weak"), (1, "weak"), (2, "weak")]


def test_a_failing_advisor_fails_open_and_is_dropped_after_three_failures():
    result = _run(advisor_gate("weak", "down"), [_session("s", 5)], _host(weak=0.0))
    assert MAX_FAILED_CONSULTS == 3
    assert _column(result, "evidence_advisor") == ["fail_open"] * 3 + ["spent"] * 2
    assert _column(result, "evidence_failed_consults") == [1, 2, 3, None, None]
    assert _column(result, "evidence_reviews") == [0] * 5  # failures give their review back
    assert set(result.requests["evidence_reason_code"].dropna()) == {"unavailable"}
    assert _models(result) == ["weak"] * 5 and set(result.requests["status"]) == {"ok"}
    assert _decision_calls(result) == [1, 1, 1, 0, 0]


def test_a_late_advisor_fails_open():
    gate = advisor_gate("weak", "strong", timeout_s=0.5)  # a review takes 1.1 s
    result = _run(gate, [_session("s", 1)], _host(weak=0.0))
    assert _column(result, "evidence_advisor") == ["fail_open"]
    assert _column(result, "evidence_reason_code") == ["timeout"]
    assert _models(result) == ["weak"]


def test_without_fail_open_an_advisor_failure_fails_the_turn():
    gate = advisor_gate("weak", "down", fail_open=False)
    result = _run(gate, [_session("s", 3)], _host(weak=1.0))
    r = result.requests
    assert r["status"].tolist() == ["failed"] and r["error_kind"].tolist() == ["advisor_failed"]


def test_an_executor_error_fails_the_turn():
    host = _host()
    host = sy.SimHost({**host.profiles, "weak": constant_profile(0.5, 50, 100.0, faults=DOWN)})
    result = _run(advisor_gate("weak", "strong"), [_session("s", 2)], host)
    assert result.requests["error_kind"].tolist() == ["unavailable"]


def test_requests_outside_sessions_share_one_budget_that_each_run_starts_afresh():
    gate = advisor_gate("weak", "strong", max_reviews=2)
    requests = [_graded(1.0, 1.0, i) for i in range(4)]
    first = _run(gate, requests, _host(), concurrency=1)
    assert _evidence(first) == [("approve", 1), ("approve", 2), ("spent", 2), ("spent", 2)]
    again = _run(gate, requests, _host(), concurrency=1)
    pd.testing.assert_frame_equal(first.requests, again.requests)
    # all four at once: each executor call starts before any review is taken; the first two
    # turns to finish take the budget, the others pass through unreviewed
    together = _run(gate, requests, _host())
    assert _column(together, "evidence_advisor") == ["approve", "approve", "quiet", "quiet"]
    assert sum(_decision_calls(together)) == 2


def test_the_advisor_reads_a_transcript_with_its_middle_dropped():
    messages = [dict(m) for m in _session("s", 6).turns[-1].request.messages]
    assert transcript(messages, 10**6) == messages
    short = transcript(messages, 400)
    assert short[:2] == messages[:2] and short[-1] == messages[-1]
    assert short[2]["content"].endswith("messages omitted]") and len(short) < len(messages)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_reviews": 0}, "max_reviews must be an int ≥ 1"),
        ({"trigger": "no_tool_call"}, "trigger must be one of"),
        ({"trigger": "pattern"}, "needs pattern"),
        ({"trigger": "pattern", "pattern": "("}, "not a valid regex"),
        ({"pattern": "DONE"}, "pattern is for trigger='pattern'"),
        ({"stall_turns": -1}, "stall_turns must be"),
        ({"transcript_max_tokens": 10}, "transcript_max_tokens must be"),
        ({"redo_to": ""}, "redo_to must be a model name"),
        ({"fail_open": "yes"}, "fail_open must be"),
    ],
)
def test_advisor_options_are_checked(kwargs, match):
    with pytest.raises((sy.ArgumentError, sy.ArgumentTypeError), match=match):
        advisor_gate("weak", "strong", **kwargs)


# -- the sub-agent router (§C.8) ------------------------------------------------------------------


def _family() -> list[sy.sessions.Session]:
    return [
        _session("p", 3),
        _session("p/refactor", 2, parent="p", task="refactor the parser"),
        _session("p/docs", 2, parent="p", task="look up the API docs"),
    ]


def test_sub_agent_turns_go_to_the_fixed_target_and_the_rest_to_the_parent():
    router = subagent_router(st.single("strong"), target="weak")
    assert router.name == "single(strong)+subagent(weak)"
    result = _run(router, _family(), _host())
    assert _models(result) == ["strong"] * 3 + ["weak"] * 4
    assert _column(result, "evidence_subagent") == [None] * 3 + ["target"] * 4
    alone = _run(st.single("strong"), [_session("p", 3)], _host(), strategy=result.strategy)
    got = result.requests[result.requests["session_id"] == "p"]
    got = got.drop(columns=["evidence_subagent", "parent_session"])
    pd.testing.assert_frame_equal(got, alone.requests, check_categorical=False)


def test_a_gate_reads_the_delegated_prompt_and_abstains_to_the_default():
    seen = []

    def hard_work(text):
        seen.append(text)
        return "strong" if "refactor" in text else None

    router = subagent_router(st.single("weak"), gate=hard_work, default="weak")
    result = _run(router, _family(), _host())
    assert _models(result) == ["weak"] * 3 + ["strong"] * 2 + ["weak"] * 2
    assert _column(result, "evidence_subagent")[3:] == ["gate", "gate", "default", "default"]
    assert sorted(seen) == ["look up the API docs"] * 2 + ["refactor the parser"] * 2


def test_the_delegated_prompt_is_the_last_text_of_the_last_user_message():
    blocks = [{"type": "text", "text": "context"}, {"type": "text", "text": "the task"}]
    assert delegated_prompt(sy.Request([{"role": "user", "content": blocks}])) == "the task"
    results_only = [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]
    assert delegated_prompt(sy.Request([{"role": "user", "content": results_only}])) is None
    assert delegated_prompt(sy.Request([{"role": "assistant", "content": "hi"}])) is None


def test_a_gate_algorithm_routes_a_copy_holding_only_the_prompt():
    seen = []

    async def gate(request, driver):
        seen.append((tuple(dict(m) for m in request.messages), request.metadata["parent_session"]))
        return sy.route_to("strong", request, fallbacks=["weak"])

    router = subagent_router(st.single("weak"), gate=gate, default="weak")
    result = _run(router, _family()[:2], _host())
    assert _models(result) == ["weak"] * 3 + ["strong"] * 2
    assert seen[0] == (({"role": "user", "content": "refactor the parser"},), "p")


def test_a_task_classifier_as_gate_classifies_sub_agent_turns_only():
    gate = task_classifier("weak", "strong", classifier="clf")
    router = subagent_router(st.single("weak"), gate=gate, default="weak")
    result = _run(router, _family(), _host(weak=0.0, strong=1.0))
    assert _decision_calls(result) == [0, 0, 0, 1, 1, 1, 1]
    assert _models(result) == ["weak"] * 3 + ["strong"] * 4
    assert _column(result, "evidence_source")[3:] == ["classifier"] * 4
    decisions = result.attempts[result.attempts["kind"] == "decision"]
    assert (decisions["input_tokens"] < 100).all()  # it read the prompt, not the conversation


def test_new_session_latches_each_sub_agent_on_its_first_choice():
    calls = []

    def pick(text):
        calls.append(text)
        return "strong"

    router = subagent_router(st.single("weak"), gate=pick, default="weak", trigger="new_session")
    result = _run(router, _family(), _host())
    assert len(calls) == 2  # once per sub-agent session
    assert _column(result, "evidence_subagent")[3:] == ["gate", "held", "gate", "held"]
    assert _models(result)[3:] == ["strong"] * 4


def test_a_stateful_parent_starts_afresh_on_every_run():
    router = subagent_router(advisor_gate("weak", "strong"), target="weak")
    requests = [_graded(1.0, 1.0, i) for i in range(3)]
    first = _run(router, requests, _host(), concurrency=1)
    assert _column(first, "evidence_advisor") == ["approve", "spent", "spent"]
    again = _run(router, requests, _host(), concurrency=1)
    pd.testing.assert_frame_equal(first.requests, again.requests)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "got neither"),
        ({"target": "weak", "gate": str.upper}, "not both"),
        ({"target": "weak", "default": "weak"}, "default is for gate="),
        ({"gate": str.upper}, "needs default="),
        ({"gate": 3, "default": "weak"}, "gate must be a function"),
        ({"target": "weak", "trigger": "user_turn"}, "not for sub-agents"),
        ({"target": "weak", "trigger": "always"}, "trigger must be one of"),
    ],
)
def test_subagent_router_options_are_checked(kwargs, match):
    with pytest.raises((sy.ArgumentError, sy.ArgumentTypeError), match=match):
        subagent_router(st.single("strong"), **kwargs)
    with pytest.raises(sy.ArgumentTypeError, match="algorithm"):
        subagent_router("strong", target="weak")


# -- all three over synthetic coding-agent sessions -----------------------------------------------


def _realistic() -> sy.SimHost:
    return sy.SimHost(
        {
            "weak": sy.ModelProfile(price_in=0.2, price_out=0.8, quality=0.6),
            "strong": sy.ModelProfile(price_in=3.0, price_out=15.0, quality=0.9),
            "clf": sy.ModelProfile(price_in=0.1, price_out=0.4),
        },
        judge=sy.Judge(accuracy=0.8),
    )


def test_smoke_over_synthetic_sessions_the_counts_add_up():
    sessions = sy.sessions.synthetic_sessions(20, seed=0)
    # half of them as sub-agents of the other half
    family = [
        s if i % 2 == 0 else sy.sessions.Session(s.turns, id=s.id, parent=sessions[i - 1].id)
        for i, s in enumerate(sessions)
    ]
    turns = sum(len(s.turns) for s in sessions)
    host = _realistic()
    gate = advisor_gate("weak", "strong", max_reviews=3, min_tool_results=3, stall_turns=30)
    lineup = {
        "every": task_classifier("weak", "strong", classifier="clf", window=6),
        "session": task_classifier("weak", "strong", classifier="clf", trigger="new_session"),
        "advisor": gate,
        "family": subagent_router(
            gate, gate=task_classifier("weak", "strong", classifier="clf"), default="weak"
        ),
    }
    results = {name: _run(router, family, host, seed=0) for name, router in lineup.items()}
    for result in results.values():
        assert len(result.requests) == turns and set(result.requests["status"]) == {"ok"}

    assert sum(_decision_calls(results["every"])) == turns
    by_session = results["session"].requests.assign(calls=_decision_calls(results["session"]))
    assert (by_session.groupby("session_id")["calls"].sum() == 1).all()

    r = results["advisor"].requests.assign(calls=_decision_calls(results["advisor"]))
    assert (r.groupby("session_id")["calls"].sum() <= 3).all()
    assert (r["evidence_reviews"] <= 3).all()
    reviewed = r["evidence_advisor"].isin(["approve", "redo", "fail_open"])
    assert r["calls"].sum() == reviewed.sum() > 0
    expected = r["evidence_advisor"].map({"quiet": 1, "approve": 2, "redo": 3, "spent": 1})
    assert (r["n_attempts"] == expected + r["n_retries"] + r["n_fallbacks"]).all()
    assert (r.loc[r["evidence_advisor"] == "redo", "served_model"] == "strong").all()

    f = results["family"].requests.assign(calls=_decision_calls(results["family"]))
    child = f["parent_session"].notna()
    assert f.loc[child, "evidence_subagent"].isin(["gate"]).all()
    assert f.loc[~child, "evidence_advisor"].notna().all()
    assert (f.loc[child, "calls"] == 1).all()
    parents_alone = _run(gate, family[::2], host, seed=0).requests
    assert (
        f.loc[~child, "served_model"].tolist() == parents_alone["served_model"].tolist()
    )  # the parent's sessions route as they would alone

    kernel = _run(gate, family, host, seed=0, engine="kernel")
    on_asyncio = _run(gate, family, host, seed=0, engine="asyncio")
    pd.testing.assert_frame_equal(kernel.attempts, on_asyncio.attempts)
