"""The loopback fault server on its own, spoken to with plain httpx: protocol, faults, counters,
and the server-side record of clients that went away."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

import sykit as sy
from sykit.testing import FAULTS, FakeModel, FakeProvider

KEY = "sk-fake-provider-key"


@pytest.fixture(scope="module")
def fake():
    models = {
        "fast": FakeModel(ttft_s=0.01, tokens_per_s=1000, output_tokens=8),
        "slow": FakeModel(ttft_s=0.02, tokens_per_s=100, output_tokens=30),
        "text-only": FakeModel(vision=False),
        "small-window": FakeModel(context_window=50),
        "flaky": FakeModel(fault="fail-503-x2"),
        "judge": FakeModel(verdict={"ok": False}),
    }
    with FakeProvider(models, api_key=KEY) as provider:
        yield provider


@pytest.fixture(autouse=True)
def fresh(fake):
    fake.reset()
    yield
    fake.wait_idle()


@pytest.fixture
def client(fake):
    with httpx.Client(
        base_url=fake.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=5
    ) as c:
        yield c


def chat(client, model, *, stream=False, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": "hello there"}], **extra}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return client.post("/chat/completions", json=body)


def events(response) -> list[str]:
    return [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]


def test_a_healthy_model_answers_a_chat_completion_with_usage(fake, client):
    response = chat(client, "fast")
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["message"]["content"].startswith("lorem ipsum")
    assert data["usage"]["completion_tokens"] == 8
    assert data["usage"]["prompt_tokens"] == 3 + 4  # 11 characters ≈ 3 tokens, plus 4 per message
    fake.wait_idle()
    (record,) = fake.requests
    assert (record.model, record.status, record.completed, record.disconnected) == (
        "fast",
        200,
        True,
        False,
    )


def test_a_stream_sends_a_role_chunk_content_chunks_usage_and_done(client):
    started = time.perf_counter()
    response = chat(client, "slow", stream=True)
    elapsed = time.perf_counter() - started
    assert response.headers["content-type"] == "text/event-stream"
    data = events(response)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    contents = [c["choices"][0]["delta"].get("content") for c in chunks[1:] if c["choices"]]
    assert len([c for c in contents if c]) == 30
    assert chunks[-1]["usage"]["completion_tokens"] == 30
    assert elapsed >= 0.02 + 30 / 100 * 0.95  # ttft, then 30 tokens at 100 tokens/s


def test_latency_draws_from_distributions_repeat_with_the_seed():
    model = {
        "m": FakeModel(
            ttft_s=sy.dists.LogNormal(0.01, p95=0.03), output_tokens=sy.dists.Uniform(2, 30)
        )
    }
    lengths = []
    for _ in range(2):
        with FakeProvider(model, seed=7) as provider, httpx.Client(base_url=provider.base_url) as c:
            lengths.append([chat(c, "m").json()["usage"]["completion_tokens"] for _ in range(4)])
    assert lengths[0] == lengths[1]
    assert len(set(lengths[0])) > 1


@pytest.mark.parametrize(
    ("model", "status", "code"),
    [
        ("fail-429", 429, "rate_limit_exceeded"),
        ("fail-500", 500, None),
        ("fail-502", 502, None),
        ("vision-400", 400, None),
        ("overflow-400", 400, "context_length_exceeded"),
        ("policy-400", 400, "content_policy_violation"),
    ],
)
def test_http_faults_answer_openai_style_errors(client, model, status, code):
    response = chat(client, model)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    if status == 429:
        assert response.headers["retry-after"] == "0.05"


def test_capability_and_window_rejections_of_configured_models(client):
    image = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]
    response = client.post(
        "/chat/completions",
        json={"model": "text-only", "messages": [{"role": "user", "content": image}]},
    )
    assert response.status_code == 400
    assert "does not support image input" in response.json()["error"]["message"]
    assert chat(client, "small-window", max_tokens=100).status_code == 400
    assert chat(client, "small-window", max_tokens=10).status_code == 200


def test_once_and_times_suffixes_count_per_model_and_reset_restarts_them(fake, client):
    assert [chat(client, "fail-500-once").status_code for _ in range(3)] == [500, 200, 200]
    assert [chat(client, "flaky").status_code for _ in range(3)] == [503, 503, 200]
    fake.reset()
    assert chat(client, "fail-500-once").status_code == 500
    assert [r.fault for r in fake.requests] == ["fail-500"]


def test_connection_faults_drop_the_connection(fake, client):
    with pytest.raises(httpx.ReadError):
        chat(client, "reset")
    with pytest.raises(httpx.RemoteProtocolError, match="without sending"):
        chat(client, "no-response")
    with pytest.raises(httpx.ReadTimeout):
        client.post(
            "/chat/completions",
            json={"model": "hang", "messages": [{"role": "user", "content": "hi"}]},
            timeout=0.2,
        )
    fake.wait_idle()
    reset, no_response, hang = fake.requests
    assert reset.closed_by_server and no_response.closed_by_server
    assert hang.disconnected and not hang.completed


def test_broken_streams(client):
    with pytest.raises(httpx.RemoteProtocolError):
        chat(client, "cut-stream", stream=True)
    broken = events(chat(client, "malformed-chunk", stream=True))
    with pytest.raises(ValueError):
        json.loads(broken[-1])
    no_done = events(chat(client, "no-done", stream=True))
    assert "[DONE]" not in no_done
    assert json.loads(no_done[-1])["usage"]["completion_tokens"] == 16


def test_streams_break_where_fault_after_tokens_says():
    models = {
        "cut": FakeModel(output_tokens=60, fault="cut-stream", fault_after_tokens=40),
        "bad": FakeModel(output_tokens=60, fault="malformed-chunk", fault_after_tokens=0),
    }
    with FakeProvider(models) as fake, httpx.Client(base_url=fake.base_url, timeout=5) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            chat(client, "cut", stream=True)
        broken = events(chat(client, "bad", stream=True))
        fake.wait_idle()
        assert [r.tokens_sent for r in fake.requests] == [40, 0]
    assert len(broken) == 2  # the role chunk, then the malformed one
    with pytest.raises(ValueError):
        json.loads(broken[-1])


def test_a_model_without_prefill_refuses_a_conversation_ending_with_the_assistant():
    with (
        FakeProvider({"strict": FakeModel(prefill=False)}) as fake,
        httpx.Client(base_url=fake.base_url, timeout=5) as client,
    ):
        assert chat(client, "strict").status_code == 200
        continued = [
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": "Hel"},
        ]
        response = client.post("/chat/completions", json={"model": "strict", "messages": continued})
    assert response.status_code == 400
    assert "prefill" in response.json()["error"]["message"]


def test_outages_and_flapping_follow_the_run_clock():
    models = {
        "outage": FakeModel(outages=[(0.2, 0.4)], retry_after_s=0.5, retry_after_statuses=(503,)),
        "flapping": FakeModel(
            flapping=sy.faults.Flapping(up_s=0.2, down_s=0.2, until_s=0.8, status=429)
        ),
    }
    with FakeProvider(models) as fake, httpx.Client(base_url=fake.base_url, timeout=5) as client:
        start = time.monotonic()
        seen = []
        for at in (0.0, 0.3, 0.5, 0.9):
            time.sleep(max(0.0, start + at - time.monotonic()))
            outage, flapping = chat(client, "outage"), chat(client, "flapping")
            seen.append((outage.status_code, flapping.status_code))
            if outage.status_code == 503:
                assert outage.headers["retry-after"] == "0.5"
        faults = [r.fault for r in fake.requests]
        fake.reset()  # a new run: the clock starts again at the next request
        assert chat(client, "outage").status_code == 200
    assert seen == [(200, 200), (503, 429), (200, 200), (200, 200)]
    assert faults.count("outage") == 1 and faults.count("flapping") == 1


def test_bad_bodies(client):
    with pytest.raises(ValueError):
        chat(client, "malformed-json").json()
    assert "choices" not in chat(client, "not-chat").json()
    response = client.post("/chat/completions", content=b"{not json")
    assert response.status_code == 400
    assert client.post("/completions", json={}).status_code == 404


def test_a_wrong_key_gets_a_401_that_echoes_it(fake):
    with httpx.Client(base_url=fake.base_url, headers={"Authorization": "Bearer nope"}) as c:
        response = chat(c, "fast")
    assert response.status_code == 401
    assert "nope" in response.json()["error"]["message"]
    assert fake.requests[0].authorized is False


def test_a_decision_schema_gets_a_matching_verdict(client):
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "pick": {"type": "string", "enum": ["a", "b"]},
            "level": {"type": "integer", "enum": [0, 1, 2]},
        },
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "d", "strict": True, "schema": schema}}
    verdict = chat(client, "judge", response_format=fmt).json()
    assert json.loads(verdict["choices"][0]["message"]["content"]) == {
        "ok": False,
        "pick": "a",
        "level": 2,
    }
    tool = {"type": "function", "function": {"name": "answer", "parameters": schema}}
    called = chat(
        client,
        "fast",
        tools=[tool],
        tool_choice={"type": "function", "function": {"name": "answer"}},
    ).json()
    (call,) = called["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"])["ok"] is True


def test_a_client_that_goes_away_mid_stream_is_recorded_as_disconnected(fake, client):
    with client.stream(
        "POST",
        "/chat/completions",
        json={"model": "slow", "messages": [{"role": "user", "content": "hi"}], "stream": True},
    ) as response:
        lines = response.iter_lines()
        while "lorem" not in next(lines):
            pass
    # closing a response that was not read to the end drops its connection
    fake.wait_idle()
    (record,) = fake.requests
    assert record.disconnected and not record.completed
    assert 1 <= record.tokens_sent < 30


def test_keep_alive_reuses_one_connection_and_models_are_listed(fake, client):
    for _ in range(3):
        chat(client, "fast")
    assert fake.open_connections == 1
    assert [m["id"] for m in client.get("/models").json()["data"]][:2] == ["fast", "slow"]
    client.close()
    fake.wait_idle(connections=True)


def test_lifecycle_and_arguments():
    provider = FakeProvider().start()
    port = provider.port
    assert repr(provider).startswith("FakeProvider(http://127.0.0.1:")
    provider.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        _ = provider.base_url
    with pytest.raises(ValueError, match="unknown fault 'explode'"):
        FakeModel(fault="explode")
    with pytest.raises(TypeError, match=r"models\['x'\] must be a sy.testing.FakeModel"):
        FakeProvider({"x": sy.ModelProfile()})
    with pytest.raises(ValueError, match="slow_s"):
        FakeProvider(slow_s=-1)
    for bad in ("503", (503.0,), (42,)):
        with pytest.raises(sy.ArgumentError, match="retry_after_statuses"):
            FakeModel(retry_after_statuses=bad)
    assert FakeModel(retry_after_statuses=[503, 529]).retry_after_statuses == (503, 529)
    assert "cut-stream" in FAULTS and "fail-<status>" in FAULTS
    with pytest.raises(sy.ArgumentError, match="fault_after_tokens"):
        FakeModel(fault_after_tokens=-1)
    with pytest.raises(sy.ArgumentError, match=r"outages\[0\] ends"):
        FakeModel(outages=[(2, 1)])
    with pytest.raises(TypeError, match="flapping"):
        FakeModel(flapping=(1, 1))
    with pytest.raises(TypeError, match="prefill"):
        FakeModel(prefill="no")
