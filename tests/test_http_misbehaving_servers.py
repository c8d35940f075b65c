"""HttpHost against servers that answer in ways the chat-completions format does not foresee: each
such answer fails (or is read as) one attempt, never the run, and never records a wrong value."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import sykit as sy
from sykit._hosts.http import HttpHost

PRICES = sy.ModelProfile(price_in=1.0, price_out=2.0)
POLICY = sy.HostPolicy(max_retries=0, cooldown_s=0, timeout_s=2.0)
QUESTIONS = {"good": sy.Boolean("Is it right?"), "level": sy.Score(["low", "high"])}

#: What the server answers: (status, content type, body) for a request's decoded JSON body.
Answer = Callable[[dict[str, Any]], tuple[int, str, str | bytes]]


class _Server:
    """A loopback server that answers each POST with what ``answer`` says for its body."""

    def __init__(self) -> None:
        self.answer: Answer = lambda body: (200, "application/json", json.dumps(_completion()))
        self.headers: dict[str, str] = {}  # sent with every answer
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, content_type, text = server.answer(body)
                data = text if isinstance(text, bytes) else text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in server.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    served = _Server()
    thread = threading.Thread(target=served.httpd.serve_forever, daemon=True)
    thread.start()
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def _completion(content: Any = "hi", usage: Any = None, **message: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "choices": [{"message": {"content": content, **message}, "finish_reason": "stop"}]
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _events(*chunks: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def _host(server: _Server, **kwargs: Any) -> HttpHost:
    return HttpHost(
        server.base_url, models={"m": PRICES}, api_key_env=None, policy=POLICY, **kwargs
    )


def _run(server: _Server, answer: Answer, **kwargs: Any) -> tuple[sy.Result, list[str]]:
    """One request to ``m`` answered by ``answer``; the result and the texts it answered."""
    server.answer = answer
    texts = []

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        response = await driver.call_model(request, ["m"])
        texts.append(response.text)
        return sy.answered("m", response)

    return sy.run(algorithm, ["q"], host=_host(server, **kwargs)), texts


def _decide(server: _Server, answer: Answer, **kwargs: Any) -> tuple[sy.Result, list[Any]]:
    """One decision by ``m`` answered by ``answer``; the result and the verdict or error."""
    server.answer = answer
    seen: list[Any] = []

    async def algorithm(request: sy.Request, driver: sy.Driver) -> sy.Outcome:
        try:
            verdict = await driver.call_decision(sy.DecisionRequest(QUESTIONS, context="x"), "m")
        except sy.InvalidResponseError as error:
            seen.append(error)
        else:
            seen.append((verdict.yes("good"), verdict.score("level")))
        return sy.route_to("m", request)

    return sy.run(algorithm, ["q"], host=_host(server, **kwargs)), seen


def _raw(status: int, content_type: str, text: str | bytes) -> Answer:
    return lambda request: (status, content_type, text)


def _json(body: Any, status: int = 200) -> Answer:
    return _raw(status, "application/json", json.dumps(body))


def _decision_row(result: sy.Result) -> Any:
    return result.attempts[result.attempts["kind"] == "decision"].iloc[0]


@pytest.mark.parametrize("stream", [False, True])
def test_a_token_count_too_large_to_record_is_replaced_by_the_estimate(server, stream):
    usage = {"prompt_tokens": 10**30, "completion_tokens": 10**30}
    if stream:
        last = {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": usage}
        body = _events({"choices": [{"delta": {"content": "hi"}}]}, last)
        answer = _raw(200, "text/event-stream", body)
    else:
        answer = _json(_completion("hi", usage))
    result, texts = _run(server, answer, stream=stream)
    assert texts == ["hi"]
    row = result.attempts.iloc[0]
    assert row["status"] == "ok"
    assert 0 < row["input_tokens"] < 100 and row["output_tokens"] == 1


_DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("answer", "kind", "words"),
    [
        (_raw(200, "application/json", _DEEP), "invalid_response", "not valid JSON"),
        (_raw(500, "application/json", _DEEP), "unavailable", "nested too deeply"),
        (_raw(429, "application/json", _DEEP), "rate_limit", "nested too deeply"),
        (
            _raw(200, "text/event-stream", f"data: {_DEEP}\n\n"),
            "invalid_response",
            "malformed stream chunk",
        ),
    ],
    ids=["200", "500", "429", "stream"],
)
def test_json_nested_too_deeply_fails_the_attempt_not_the_run(server, answer, kind, words):
    result, _ = _run(server, answer, stream=True)
    row = result.attempts.iloc[0]
    assert row["error_kind"] == kind
    assert words in row["error_message"]
    assert result.requests.iloc[0]["status"] == "failed"


def test_a_verdict_nested_too_deeply_is_unparseable(server):
    result, seen = _decide(server, _json(_completion(_DEEP)))
    assert "unparseable verdict: not JSON" in str(seen[0])
    assert result.requests.iloc[0]["status"] == "ok"


def test_content_sent_as_a_list_of_parts_is_the_answer(server):
    parts = [{"type": "text", "text": "hello"}, {"type": "text", "text": " world"}]
    _, texts = _run(server, _json(_completion(parts)))
    assert texts == ["hello world"]
    chunk = {"choices": [{"delta": {"content": [{"type": "text", "text": "hey"}]}}]}
    stop = {"choices": [{"delta": {}, "finish_reason": "stop"}]}
    result, texts = _run(server, _raw(200, "text/event-stream", _events(chunk, stop)), stream=True)
    assert texts == ["hey"]
    assert result.attempts.iloc[0]["output_tokens"] == 1
    verdict = [{"type": "text", "text": '{"good": true, "level": 1}'}]
    _, seen = _decide(server, _json(_completion(verdict)))
    assert seen == [(True, 1.0)]


def test_tool_call_arguments_sent_as_an_object_are_the_verdict(server):
    call = {
        "type": "function",
        "function": {"name": "answer", "arguments": {"good": False, "level": 0}},
    }
    result, seen = _decide(
        server, _json(_completion(None, tool_calls=[call])), decision_format="tool"
    )
    assert seen == [(False, 0.0)]
    assert _decision_row(result)["status"] == "ok"


def test_a_verdict_with_more_digits_than_int_reads_is_unparseable(server):
    verdict = json.dumps({"good": True, "level": "9" * 5000})
    result, seen = _decide(server, _json(_completion(verdict)))
    assert isinstance(seen[0], sy.InvalidResponseError)
    assert "is not a valid answer to 'level'" in str(seen[0])
    assert result.requests.iloc[0]["status"] == "ok"


def test_a_redirect_says_where_it_points(server):
    server.headers = {"Location": "/v2/chat/completions"}
    try:
        result, _ = _run(server, _raw(307, "text/plain", ""))
    finally:
        server.headers = {}
    message = result.attempts.iloc[0]["error_message"]
    assert f"HTTP 307 redirect to '{server.base_url[:-3]}/v2/chat/completions'" in message
    assert "set base_url" in message


@pytest.mark.parametrize(
    ("content_type", "data", "shown"),
    [
        (
            "text/plain; charset=iso-8859-1",
            "Modèle surchargé".encode("latin-1"),
            "Modèle surchargé",
        ),
        ("text/plain; charset=utf-16", "Modèle surchargé".encode("utf-16"), "Modèle surchargé"),
        ("text/plain", "Modèle surchargé".encode(), "Modèle surchargé"),  # none declared: UTF-8
        ("text/plain; charset=rot13", b"overloaded", "overloaded"),  # a codec, not a charset
        ("text/plain; charset=nonsense", b"overloaded", "overloaded"),
    ],
)
def test_an_error_body_is_read_in_the_charset_it_declares(server, content_type, data, shown):
    result, _ = _run(server, _raw(503, content_type, data))
    row = result.attempts.iloc[0]
    assert row["error_kind"] == "unavailable"
    assert row["error_message"] == shown
