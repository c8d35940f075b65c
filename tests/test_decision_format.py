"""Decision formats over HTTP: servers without JSON-schema structured output (llama.cpp's server
refuses it with a 500), ``decision_format="auto"`` falling back to a tool call and remembering it
per model, and refusals that are never retried as an unavailable server."""

from __future__ import annotations

import httpx
import pandas as pd
import pytest

import sykit as sy
from sykit._hosts._openai_wire import format_rejection
from sykit._hosts.http import HttpHost
from sykit.testing import FakeModel, FakeProvider

POLICY = sy.HostPolicy(max_retries=2, backoff_initial_s=0.01, cooldown_s=0, timeout_s=2.0)
QUESTIONS = {"good": sy.Boolean("Is it good?"), "topic": sy.Choice(["math", "code"])}
LLAMA_500 = {
    "error": {
        "code": 500,
        "message": "1 validation error for ResponseFormat\ntype\n  Input should be 'text' or "
        "'json_object' [type=literal_error, input_value='json_schema', input_type=str]",
        "type": "server_error",
    }
}
FAKE_MODELS = {
    "judge": FakeModel(ttft_s=0.005, verdict={"good": False}),
    "llama": FakeModel(ttft_s=0.005, reject_json_schema=500, verdict={"good": False}),
    "llama-400": FakeModel(ttft_s=0.005, reject_json_schema=400),
    "no-formats": FakeModel(ttft_s=0.005, reject_json_schema=500, reject_tools=500),
    "flaky": FakeModel(ttft_s=0.005, fault="fail-500-once"),
}


@pytest.fixture(scope="module")
def fake():
    with FakeProvider(FAKE_MODELS) as provider:
        yield provider


@pytest.fixture(autouse=True)
def fresh(fake):
    fake.reset()
    yield
    fake.wait_idle()


def host(fake, *models: str, **kwargs) -> HttpHost:
    return HttpHost(fake.base_url, models=list(models), policy=POLICY, api_key_env=None, **kwargs)


def judged(model: str, calls: int, outcomes: list):
    """An algorithm that asks ``model`` ``calls`` decisions, keeping each verdict or error."""

    async def algorithm(request, driver):
        for _ in range(calls):
            try:
                verdict = await driver.call_decision(
                    sy.DecisionRequest(QUESTIONS, context=request.prompt), model
                )
                outcomes.append((verdict.yes("good"), verdict.choice("topic")))
            except sy.ModelError as error:
                outcomes.append(error)
        return sy.route_to(model, request)

    return algorithm


def decision_rows(result: sy.Result) -> list[dict]:
    frame = result.attempts[result.attempts["kind"] == "decision"]
    return [
        {k: (None if not isinstance(v, str | bool) and pd.isna(v) else v) for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


def formats_sent(fake, model: str) -> list[str]:
    """What each decision request to ``model`` asked for, as the server received it."""
    fake.wait_idle()
    sent = []
    for served in fake.requests:
        body = served.body
        if served.model != model or not isinstance(body, dict):
            continue
        if "response_format" in body:
            sent.append(body["response_format"]["type"])
        elif "tool_choice" in body:
            sent.append("tool")
    return sent


# -- the fake server ------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "status"), [("llama", 500), ("llama-400", 400)])
def test_a_fake_model_refuses_json_schema_as_llama_cpp_does(fake, model, status):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    message = [{"role": "user", "content": "hi"}]
    json_schema = {"type": "json_schema", "json_schema": {"name": "d", "schema": schema}}
    tool = {"type": "function", "function": {"name": "answer", "parameters": schema}}
    with httpx.Client(base_url=fake.base_url, timeout=5) as client:
        refused = client.post(
            "/chat/completions",
            json={"model": model, "messages": message, "response_format": json_schema},
        )
        called = client.post(
            "/chat/completions",
            json={
                "model": model,
                "messages": message,
                "tools": [tool],
                "tool_choice": {"type": "function", "function": {"name": "answer"}},
            },
        )
        plain = client.post(
            "/chat/completions",
            json={"model": model, "messages": message, "response_format": {"type": "json_object"}},
        )
    assert refused.status_code == status
    assert "Input should be 'text' or 'json_object'" in refused.json()["error"]["message"]
    assert called.status_code == 200 and plain.status_code == 200
    assert called.json()["choices"][0]["message"]["tool_calls"]


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"reject_json_schema": 200}, "reject_json_schema must be an HTTP error status"),
        ({"reject_tools": True}, "reject_tools must be an HTTP error status"),
        ({"reject_tools": "500"}, "reject_tools must be an HTTP error status"),
    ],
)
def test_the_fake_refusal_statuses_are_checked(kwargs, phrase):
    with pytest.raises(sy.ArgumentError, match=phrase):
        FakeModel(**kwargs)


# -- recognising a refusal of the format ----------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "fmt"),
    [
        (500, LLAMA_500, "json_schema"),
        (
            400,
            '{"error": {"code": 400, "message": "response_format type must be one of '
            '\\"text\\" or \\"json_object\\", but got: json_schema", "type": '
            '"invalid_request_error"}}',
            "json_schema",
        ),
        (
            422,
            {
                "detail": [
                    {
                        "loc": ["body", "response_format", "type"],
                        "msg": "Input should be 'text' or 'json_object'",
                    }
                ]
            },
            "json_schema",
        ),
        (400, "This server does not support structured output", "json_schema"),
        (500, {"error": {"code": 500, "message": "tools param requires --jinja flag"}}, "tool"),
    ],
)
def test_refusals_of_the_format_are_recognised(status, body, fmt):
    said = format_rejection(status, body, fmt)
    assert said is not None and said.startswith(f"HTTP {status}: ")


@pytest.mark.parametrize(
    ("status", "body", "fmt"),
    [
        (500, {"error": {"message": "The server had an error."}}, "json_schema"),
        (503, LLAMA_500, "json_schema"),  # overloaded, whatever it says: transient
        (429, LLAMA_500, "json_schema"),
        (400, {"error": {"message": "Input should be a valid list", "code": None}}, "json_schema"),
        (400, {"error": {"message": "maximum context length is 4096"}}, "json_schema"),
        (500, {"error": {"message": "tools param requires --jinja flag"}}, "json_schema"),
        (500, LLAMA_500, "tool"),
    ],
)
def test_other_errors_are_not_refusals_of_the_format(status, body, fmt):
    assert format_rejection(status, body, fmt) is None


# -- decision_format="auto" -----------------------------------------------------------------------


@pytest.mark.parametrize(("model", "status"), [("llama", 500), ("llama-400", 400)])
def test_auto_falls_back_to_a_tool_call_and_remembers_it_for_the_model(fake, model, status):
    outcomes: list = []
    res = sy.run(judged(model, 2, outcomes), ["q"], host=host(fake, model))
    assert all(isinstance(o, tuple) for o in outcomes), outcomes
    refused, *served = decision_rows(res)
    assert refused["status"] == "error" and refused["error_kind"] == "invalid_request"
    assert refused["http_status"] == status and refused["retried"] is False
    assert "fell back to decision_format='tool'" in refused["error_message"]
    assert "Input should be 'text' or 'json_object'" in refused["error_message"]
    assert [r["status"] for r in served] == ["ok", "ok"]
    assert [r["retry_index"] for r in (refused, *served)] == [0, 0, 0]
    assert refused["end_s"] <= served[0]["start_s"] and refused["cost_usd"] == 0
    request = res.requests.iloc[0]
    assert request["status"] == "ok" and request["n_retries"] == 0
    assert request["n_attempts"] == 4  # three decision attempts and the answer
    # the second decision went straight to the tool format
    assert formats_sent(fake, model) == ["json_schema", "tool", "tool"]


def test_auto_verdicts_from_the_tool_format_are_the_judges(fake):
    outcomes: list = []
    sy.run(judged("llama", 1, outcomes), ["q"], host=host(fake, "llama"))
    assert outcomes == [(False, "math")]


def test_auto_remembers_per_model_and_per_run(fake):
    outcomes: list = []

    async def algorithm(request, driver):
        for model in ("llama", "judge", "llama", "judge"):
            verdict = await driver.call_decision(sy.DecisionRequest(QUESTIONS, context="x"), model)
            outcomes.append(verdict.yes("good"))
        return sy.route_to("judge", request)

    hosted = host(fake, "llama", "judge")
    sy.run(algorithm, ["q"], host=hosted)
    assert formats_sent(fake, "llama") == ["json_schema", "tool", "tool"]
    assert formats_sent(fake, "judge") == ["json_schema", "json_schema"]
    fake.reset()
    sy.run(algorithm, ["q"], host=hosted)  # a new run finds out again
    assert formats_sent(fake, "llama") == ["json_schema", "tool", "tool"]
    assert outcomes == [False] * 8


def test_auto_is_the_default_and_sends_only_json_schema_to_a_server_that_accepts_it(fake):
    hosted = HttpHost(fake.base_url, models=["judge"], policy=POLICY, api_key_env=None)
    assert hosted.decision_format == "auto" and hosted.replace().decision_format == "auto"
    outcomes: list = []
    res = sy.run(judged("judge", 2, outcomes), ["q"], host=hosted)
    assert outcomes == [(False, "math")] * 2
    assert [r["status"] for r in decision_rows(res)] == ["ok", "ok"]
    assert formats_sent(fake, "judge") == ["json_schema", "json_schema"]
    assert all("tools" not in r.body for r in fake.requests)


def test_auto_still_retries_an_unrelated_500(fake):
    outcomes: list = []
    res = sy.run(
        judged("flaky", 1, outcomes), ["q"], host=host(fake, "flaky", decision_format="auto")
    )
    assert len(outcomes) == 1 and isinstance(outcomes[0], tuple)
    failed, served = decision_rows(res)
    assert (failed["error_kind"], failed["http_status"], failed["retried"]) == (
        "unavailable",
        500,
        True,
    )
    assert (served["status"], served["retry_index"]) == ("ok", 1)
    assert res.requests.iloc[0]["n_retries"] == 1
    assert formats_sent(fake, "flaky") == ["json_schema", "json_schema"]


def test_auto_names_both_formats_when_the_server_refuses_both(fake):
    outcomes: list = []
    res = sy.run(judged("no-formats", 1, outcomes), ["q"], host=host(fake, "no-formats"))
    (error,) = outcomes
    assert isinstance(error, sy.InvalidRequestError)
    message = str(error)
    assert "neither decision format" in message
    assert "decision_format='json_schema'" in message and "decision_format='tool'" in message
    assert "Input should be 'text'" in message and "--jinja" in message
    rows = decision_rows(res)
    assert [(r["error_kind"], r["retried"]) for r in rows] == [("invalid_request", False)] * 2
    assert res.requests.iloc[0]["n_retries"] == 0
    assert formats_sent(fake, "no-formats") == ["json_schema", "tool"]


# -- explicit formats ------------------------------------------------------------------------------


def test_explicit_json_schema_fails_once_and_says_what_to_set(fake):
    outcomes: list = []
    res = sy.run(
        judged("llama", 1, outcomes), ["q"], host=host(fake, "llama", decision_format="json_schema")
    )
    (error,) = outcomes
    assert isinstance(error, sy.InvalidRequestError) and error.http_status == 500
    assert "decision_format='tool'" in str(error) and "decision_format='auto'" in str(error)
    (row,) = decision_rows(res)
    assert (row["error_kind"], row["retried"]) == ("invalid_request", False)
    assert "set HttpHost(decision_format='tool')" in row["error_message"]
    assert res.requests.iloc[0]["n_retries"] == 0
    assert formats_sent(fake, "llama") == ["json_schema"]


def test_explicit_tool_sends_only_tool_calls(fake):
    outcomes: list = []
    sy.run(judged("llama", 2, outcomes), ["q"], host=host(fake, "llama", decision_format="tool"))
    assert outcomes == [(False, "math")] * 2
    assert formats_sent(fake, "llama") == ["tool", "tool"]


@pytest.mark.parametrize("value", ["xml", "AUTO", "", None, 1, ["tool"]])
def test_bad_decision_formats_are_argument_errors(value):
    with pytest.raises(sy.ArgumentError, match="decision_format must be 'auto', 'json_schema' or"):
        HttpHost("http://127.0.0.1:9/v1", models=["m"], decision_format=value)
