"""The algorithm-facing API under unusual or mistaken use: each input here used to be read as
the wrong thing, dropped silently or fail deep inside; now it runs as meant or is refused with a
message naming the argument and what to do."""

from __future__ import annotations

import json
import math
import re
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import sykit as sy
from sykit._hosts.http import HttpHost
from sykit._world.models import TOKEN_LIMIT

QUICK = sy.ModelProfile(latency=sy.Latency(ttft=0.2, tokens_per_s=200), output_tokens=20)


def _host(accuracy: float = 0.9) -> sy.SimHost:
    return sy.SimHost({"m": QUICK, "judge": QUICK}, judge=sy.Judge(accuracy=accuracy))


def _run(algorithm, n: int = 1, host: sy.SimHost | None = None) -> sy.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sy.AlgorithmWarning)
        return sy.run(
            algorithm,
            [sy.Request(f"q{i}") for i in range(n)],
            host=host or _host(),
            progress=False,
            engine="kernel",
        )


def _asking(question: sy.Boolean | sy.Choice | sy.Score, read):
    """An algorithm that asks the judge ``question`` (id ``"q"``) and records ``read(verdict)``."""

    async def algorithm(request, driver):
        verdict = await driver.call_decision(sy.DecisionRequest({"q": question}), "judge")
        driver.evidence(answer=read(verdict))
        return sy.route_to("m", request)

    return algorithm


# -- reading answers -------------------------------------------------------------------------------

ANSWERS = sy.DecisionResponse(
    {"flag": sy.Answer(True), "level": sy.Answer(2.0), "label": sy.Answer("b")}
)


@pytest.mark.parametrize(
    ("reader", "qid", "advice"),
    [
        ("yes", "level", ".score('level')"),
        ("yes", "label", ".choice('label')"),
        ("score", "flag", ".yes('flag')"),
        ("score", "label", ".choice('label')"),
        ("choice", "flag", ".yes('flag')"),
        ("choice", "level", ".score('level')"),
    ],
)
def test_an_answer_read_as_another_kind_of_question_is_refused(reader, qid, advice):
    with pytest.raises(sy.ArgumentError, match=f"read it with {re.escape(advice)}"):
        getattr(ANSWERS, reader)(qid)


def test_each_answer_reads_as_its_own_kind():
    assert ANSWERS.yes("flag") is True
    assert ANSWERS.score("level") == 2.0
    assert ANSWERS.choice("label") == "b"


def test_a_yes_no_answer_given_as_text_is_not_read_as_yes():
    with pytest.raises(sy.ArgumentError, match=r"read it with \.choice"):
        sy.DecisionResponse({"q": sy.Answer("false")}).yes("q")


def test_yes_on_a_simulated_score_question_fails_the_request_instead_of_guessing():
    result = _run(_asking(sy.Score(["low", "mid", "high"]), lambda v: v.yes("q")), n=4)
    assert (result.requests.status == "failed").all()
    assert result.requests.error_message.str.contains(r"read it with \.score\('q'\)").all()


def test_a_question_the_judge_was_not_asked_is_named_with_those_it_answered():
    with pytest.raises(sy.ArgumentError, match=r"no answer to 'lvl'.*'flag', 'level', 'label'"):
        ANSWERS.score("lvl")
    with pytest.raises(KeyError):  # as the mapping's own error was
        ANSWERS["lvl"]


# -- decision requests and questions ---------------------------------------------------------------


@pytest.mark.parametrize("tokens", [math.nan, 3.7, "12", -5, 10**12])
def test_decision_input_tokens_must_be_a_storable_count(tokens):
    with pytest.raises(sy.ArgumentError, match="DecisionRequest input_tokens"):
        sy.DecisionRequest({"q": sy.Boolean()}, input_tokens=tokens)


def test_ask_good_enough_keeps_a_longest_request_within_the_token_limit():
    response = sy.Response("m", usage=sy.Usage(5, 100))
    asked = sy.ask_good_enough(sy.Request("x", input_tokens=TOKEN_LIMIT), response)
    assert asked.input_tokens == TOKEN_LIMIT


def test_question_ids_must_be_strings():
    with pytest.raises(sy.ArgumentTypeError, match=r"question ids must be strings.*int 1"):
        sy.DecisionRequest({1: sy.Boolean()})


def test_unicode_and_very_long_question_ids_are_answered():
    long_id = "é✓🙂" * 50 + "x" * 5000
    questions = {long_id: sy.Score([0, 1]), "ok?": sy.Boolean()}

    async def algorithm(request, driver):
        verdict = await driver.call_decision(sy.DecisionRequest(questions, context=""), "judge")
        driver.evidence(level=verdict.score(long_id), ok=verdict.yes("ok?"))
        return sy.route_to("m", request)

    assert (_run(algorithm, n=3).requests.status == "ok").all()


def test_a_context_that_contains_itself_is_refused_by_name():
    context: dict = {"prompt": "hi"}
    context["self"] = context
    with pytest.raises(sy.ArgumentError, match="context cannot be written as JSON"):
        sy.DecisionRequest({"q": sy.Boolean()}, context=context)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: sy.Boolean(5), "Boolean instructions"),
        (lambda: sy.Boolean(true_description=1), "Boolean true_description"),
        (lambda: sy.Score([0, 1], 5), "Score instructions"),
        (lambda: sy.Choice(["a", "b"], ["pick one"]), "Choice instructions"),
    ],
)
def test_a_question_text_that_is_no_string_is_refused_when_made(make, name):
    with pytest.raises(sy.ArgumentTypeError, match=f"{name} must be a str or None"):
        make()


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: sy.Score([0, 1, 2], oracle=7), "gave 7, which is no level index"),
        (lambda: sy.Score([1, 2, 3, 4, 5], oracle=5.5), "an index from 0 to 4"),
        (lambda: sy.Score(["lo", "hi"], oracle="hi"), "'hi' is a level: its index is 1"),
        (lambda: sy.Choice(["a", "b"], oracle="c"), "gave 'c', which is not one of its options"),
    ],
)
def test_a_constant_oracle_off_the_question_scale_is_refused(make, words):
    with pytest.raises(sy.ArgumentError, match=re.escape(words)):
        make()


def test_a_choice_oracle_is_compared_as_an_option_id():
    # options are kept as strings: an oracle of 1 means the option "1", not "no right answer"
    result = _run(_asking(sy.Choice([1, 2], oracle=1), lambda v: v.choice("q")), 20, _host(1.0))
    assert (result.requests.evidence_answer == "1").all()


def test_an_oracle_function_off_the_scale_fails_the_request_with_the_reason():
    result = _run(_asking(sy.Score(["bad", "good"], oracle=lambda view: 2), lambda v: 0), n=2)
    assert (result.requests.status == "failed").all()
    assert result.requests.error_message.str.contains("the oracle of Score").all()


@pytest.mark.parametrize("oracle", [None, math.nan, lambda view: None, lambda view: math.nan])
def test_an_oracle_without_a_right_answer_still_gets_an_uninformed_answer(oracle):
    result = _run(_asking(sy.Score([0, 1, 2], oracle=oracle), lambda v: v.score("q")), n=3)
    assert (result.requests.status == "ok").all()


def test_a_yes_no_oracle_on_two_levels_is_still_a_level_index():
    result = _run(
        _asking(sy.Score(["bad", "good"], oracle=True), lambda v: v.score("q")), 5, _host(1.0)
    )
    assert (result.requests.evidence_answer == 1.0).all()


# -- outcomes and the judge's helper -----------------------------------------------------------------


@pytest.mark.parametrize("fallbacks", [None, 3, {"m": 1}])
def test_route_to_refuses_fallbacks_that_are_no_list_of_names(fallbacks):
    with pytest.raises(sy.ArgumentTypeError, match="fallbacks must be a list of model names"):
        sy.route_to("m", sy.Request("x"), fallbacks=fallbacks)


def test_route_to_still_takes_one_name_or_any_iterable_of_names():
    request = sy.Request("x")
    assert sy.route_to("m", request, fallbacks="n").models == ("m", "n")
    assert sy.route_to("m", request, fallbacks=iter(["n", "o"])).models == ("m", "n", "o")


def test_ask_good_enough_checks_its_request_and_threshold():
    response = sy.Response("m")
    with pytest.raises(sy.ArgumentTypeError, match=r"request must be a sy\.Request, got str"):
        sy.ask_good_enough("hi", response)
    with pytest.raises(sy.ArgumentTypeError, match="threshold must be a number"):
        sy.ask_good_enough(sy.Request("hi"), response, threshold="0.5")


@pytest.mark.parametrize("helper", ["answered", "ask_good_enough"])
def test_an_unfinished_stream_or_the_stream_itself_is_refused_with_what_to_pass(helper):
    async def algorithm(request, driver):
        stream = driver.stream_model(request, ["m"])
        async for _ in stream:
            break  # stopped early: no response
        for given in (stream.response, stream):
            try:
                if helper == "answered":
                    sy.answered("m", given)
                else:
                    sy.ask_good_enough(request, given)
            except sy.ArgumentTypeError as error:
                driver.evidence(**{"none" if given is None else "stream": str(error)})
        return sy.route_to("m", request)

    row = _run(algorithm).requests.iloc[0]
    assert "read it to the end with `async for chunk in stream` first" in row.evidence_none
    assert "then pass `stream.response`" in row.evidence_stream


# -- a stream a server answered whole --------------------------------------------------------------


class _WholeAnswers(BaseHTTPRequestHandler):
    """A server that ignores ``"stream": true`` and answers with one JSON completion."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps(
            {
                "id": "c1",
                "object": "chat.completion",
                "model": "plain",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "hello"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def whole_answers() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _WholeAnswers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_stream_answered_whole_names_its_model_for_answered(whole_answers):
    host = HttpHost(
        whole_answers,
        models={"plain": sy.ModelProfile()},
        policy=sy.HostPolicy(max_retries=0, timeout_s=5.0),
    )

    async def algorithm(request, driver):
        async with driver.stream_model(request, ["plain"]) as stream:
            texts = [chunk.text async for chunk in stream]
        driver.evidence(texts="".join(texts), model=stream.model)
        return sy.answered(stream.model, stream.response)

    row = sy.run(algorithm, [sy.Request("hi")], host=host, progress=False).requests.iloc[0]
    assert (row.status, row.served_model, row.evidence_model) == ("ok", "plain", "plain")
    assert row.evidence_texts == "hello"


def test_a_simulated_score_answer_is_a_float_informed_or_not():
    """The judge's level index was an int when it had no oracle to aim for and a float when it
    had one, so ``verdict[q].value`` changed type from request to request."""
    host = sy.SimHost({"m": sy.ModelProfile(), "judge": sy.ModelProfile()})
    seen = []

    async def alg(request, driver):
        questions = {
            "blind": sy.Score(["low", "mid", "high"]),
            "aimed": sy.Score(["low", "mid", "high"], oracle=2),
        }
        verdict = await driver.call_decision(sy.DecisionRequest(questions, context="x"), "judge")
        seen.append((verdict["blind"].value, verdict["aimed"].value))
        return sy.route_to("m", request)

    sy.run(alg, [sy.Request(f"q{i}") for i in range(8)], host=host)
    assert all(type(blind) is float and type(aimed) is float for blind, aimed in seen)
