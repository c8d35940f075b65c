"""Any error status with its text (sy.faults.ErrorFault) and a non-chat 200 (Faults(non_chat=...)),
on a SimHost and on the FakeProvider: the same bodies, the same error kinds, the same fallback
reasons."""

from __future__ import annotations

import httpx
import pandas as pd
import pytest
from helpers import rows

import sykit as sy
from sykit.testing import FakeModel, FakeProvider

ErrorFault = sy.faults.ErrorFault
PRICES = sy.ModelProfile(price_in=1.0, price_out=2.0)
POLICY = sy.HostPolicy(max_retries=0, cooldown_s=0, timeout_s=2.0)


def profile(**kwargs) -> sy.ModelProfile:
    settings = {
        "latency": sy.Latency(ttft=0.02, tokens_per_s=1000),
        "output_tokens": 16,
        "reject_delay_s": 0.01,
    }
    settings.update(kwargs)
    return PRICES.replace(**settings)


def sim_host(faults: sy.Faults, policy: sy.HostPolicy = POLICY) -> sy.SimHost:
    return sy.SimHost({"m": profile(faults=faults), "b": profile()}, policy=policy)


def clean(row: dict) -> dict:
    return {
        k: (None if not isinstance(v, str | bool) and pd.isna(v) else v) for k, v in row.items()
    }


#: Each new fault, and what it is: (faults, status, error kind, fallback reason).
CASES = {
    "401": (sy.Faults(errors=[ErrorFault(401, 1.0)]), 401, "invalid_request", None),
    "402": (sy.Faults(errors=[ErrorFault(402, 1.0)]), 402, "invalid_request", None),
    "404": (sy.Faults(errors=[ErrorFault(404, 1.0)]), 404, "invalid_request", None),
    "408": (sy.Faults(errors=[ErrorFault(408, 1.0)]), 408, "unavailable", "unavailable"),
    "413": (sy.Faults(errors=[ErrorFault(413, 1.0)]), 413, "invalid_request", None),
    "422": (sy.Faults(errors=[ErrorFault(422, 1.0)]), 422, "invalid_request", None),
    "400": (sy.Faults(errors=[ErrorFault(400, 1.0)]), 400, "invalid_request", None),
    "400-policy": (sy.Faults(errors=[ErrorFault.policy(1.0)]), 400, "policy", None),
    "400-capability": (
        sy.Faults(errors=[ErrorFault.capability(1.0)]),
        400,
        "capability",
        "capability",
    ),
    "400-capability-text": (
        sy.Faults(errors=[ErrorFault(400, 1.0, message="This model does not support image input")]),
        400,
        "capability",
        "capability",
    ),
    "400-context": (
        sy.Faults(errors=[ErrorFault.context_window(1.0)]),
        400,
        "context_window",
        "context_window",
    ),
    "400-context-text": (
        sy.Faults(
            errors=[ErrorFault(400, 1.0, message="prompt is too long: 210000 tokens > 200000")]
        ),
        400,
        "context_window",
        "context_window",
    ),
    "429": (
        sy.Faults(errors=[ErrorFault(429, 1.0, retry_after_s=0.01)]),
        429,
        "rate_limit",
        "rate_limit",
    ),
    "503": (sy.Faults(errors=[ErrorFault(503, 1.0)]), 503, "unavailable", "unavailable"),
    "529": (sy.Faults(errors=[ErrorFault(529, 1.0)]), 529, "unavailable", "unavailable"),
    "non_chat": (sy.Faults(non_chat=1.0), 200, "invalid_response", None),
}


# -- on a SimHost ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
def test_each_new_fault_classifies_on_a_sim_host(case):
    faults, status, kind, reason = CASES[case]
    res = sy.run(sy.strategies.fallback_chain(["m", "b"]), ["q"], host=sim_host(faults))
    first = clean(rows(res, model="m")[0])
    assert (first["http_status"], first["error_kind"], first["fallback_reason"]) == (
        status,
        kind,
        reason,
    )
    served = res.requests.iloc[0]
    # a fallback reason moves on to "b"; policy waits for allow_policy_fallback; the rest end it
    assert (served["status"] == "ok") == (reason is not None)
    assert first["cost_usd"] == 0  # nothing generated, nothing billed


def test_a_policy_400_falls_back_when_the_policy_allows_it():
    faults = sy.Faults(errors=[ErrorFault.policy(1.0)])
    host = sim_host(faults, POLICY.replace(allow_policy_fallback=True))
    res = sy.run(sy.strategies.fallback_chain(["m", "b"]), ["q"], host=host)
    assert rows(res, model="m")[0]["fallback_reason"] == "policy"
    assert res.requests.iloc[0]["served_model"] == "b"


@pytest.mark.parametrize(
    ("fault", "words", "type_", "code"),
    [
        (
            ErrorFault(401, 1),
            "Incorrect API key provided",
            "invalid_request_error",
            "invalid_api_key",
        ),
        (ErrorFault(402, 1), "Insufficient credits", "insufficient_quota", "insufficient_quota"),
        (
            ErrorFault(404, 1),
            "The model `m` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        ),
        (ErrorFault(408, 1), "Request timed out.", "timeout_error", "request_timeout"),
        (
            ErrorFault(422, 1),
            "Unprocessable entity",
            "invalid_request_error",
            "unprocessable_entity",
        ),
        (
            ErrorFault.policy(1),
            "safety system",
            "invalid_request_error",
            "content_policy_violation",
        ),
        (
            ErrorFault.capability(1),
            "m does not support image input.",
            "invalid_request_error",
            "invalid_value",
        ),
        (
            ErrorFault.context_window(1),
            "maximum context length is 128000 tokens",
            "invalid_request_error",
            "context_length_exceeded",
        ),
        (ErrorFault(503, 1), "overloaded or not ready yet", "server_error", None),
        (ErrorFault(418, 1), "HTTP 418", "invalid_request_error", None),
        (ErrorFault(599, 1), "server had an error", "server_error", None),
    ],
)
def test_default_bodies_are_openai_style_with_realistic_text(fault, words, type_, code):
    body = fault.body("m")
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert words in body["error"]["message"]
    assert (body["error"]["type"], body["error"]["code"]) == (type_, code)


def test_given_text_replaces_the_defaults_and_names_the_model():
    fault = ErrorFault(
        404, 1, message="No endpoints found for {model}.", type="not_found", code="x"
    )
    assert fault.body("gpt-x") == {
        "error": {
            "message": "No endpoints found for gpt-x.",
            "type": "not_found",
            "param": None,
            "code": "x",
        }
    }
    assert ErrorFault(503, 1, retry_after_s=2.5).headers() == {"retry-after": "2.5"}
    assert ErrorFault(503, 1).headers() == {}
    # a replaced status takes the new status's defaults: nothing was filled in at construction
    assert "does not exist" in ErrorFault(401, 1).replace(status=404).body("m")["error"]["message"]


@pytest.mark.parametrize(
    ("fault", "kind", "reason"),
    [
        (ErrorFault(401, 1), "invalid_request", None),
        (ErrorFault(402, 1), "invalid_request", None),
        (ErrorFault(404, 1), "invalid_request", None),
        (ErrorFault(408, 1), "unavailable", sy.errors.FallbackReason.UNAVAILABLE),
        (ErrorFault(422, 1), "invalid_request", None),
        (ErrorFault.policy(1), "policy", sy.errors.FallbackReason.POLICY),
        (ErrorFault.capability(1), "capability", sy.errors.FallbackReason.CAPABILITY),
        (ErrorFault.context_window(1), "context_window", sy.errors.FallbackReason.CONTEXT_WINDOW),
    ],
)
def test_sy_classify_reads_each_body_as_the_host_does(fault, kind, reason):
    error = sy.errors.classify(fault.status, fault.body("m"), fault.headers(), model="m")
    assert error.kind == kind
    assert sy.errors.fallback_reason(error) == reason


def test_retry_after_of_an_error_fault_is_honoured():
    fault = ErrorFault(503, 1, retry_after_s=3.0)
    assert sy.errors.classify(503, fault.body("m"), fault.headers()).retry_after_s == 3.0
    policy = sy.HostPolicy(max_retries=1, cooldown_s=0, backoff_initial_s=0.01)
    host = sy.SimHost({"m": profile(faults=sy.Faults(fail_first=0, errors=[fault]))}, policy=policy)
    res = sy.run(sy.strategies.single("m"), ["q"], host=host)
    first, second = rows(res, model="m")
    assert second["start_s"] - first["end_s"] == pytest.approx(3.0)


def test_the_new_faults_leave_the_draws_of_the_existing_ones_where_they_were():
    requests = [sy.Request(f"q{i}", id=i) for i in range(400)]
    before = sy.Faults(rate_limit=0.2, unavailable=0.1, malformed=0.1)
    after = before.replace(non_chat=0.2, errors=[ErrorFault(401, 0.2), ErrorFault.capability(0.1)])
    old = sy.run(sy.strategies.single("m"), requests, host=sim_host(before)).attempts
    new = sy.run(sy.strategies.single("m"), requests, host=sim_host(after)).attempts
    old, new = (f.sort_values("request_id").reset_index(drop=True) for f in (old, new))
    failed_before = old["error_kind"].notna().to_numpy()
    # every attempt that failed before fails the same way; the rest now meet the new faults
    columns = ["request_id", "http_status", "error_kind", "error_message"]
    assert [clean(r) for r in old[failed_before][columns].to_dict("records")] == [
        clean(r) for r in new[failed_before][columns].to_dict("records")
    ]
    fresh = new[~failed_before]
    shares = fresh["http_status"].value_counts(normalize=True, dropna=False)
    assert set(shares.index) == {200, 401, 400}  # 200: served or non-chat
    counts = fresh["error_kind"].value_counts()
    assert counts["invalid_response"] > 0 and counts["invalid_request"] > 0
    assert counts["capability"] > 0 and fresh["error_kind"].isna().sum() > 0


def test_shares_follow_the_probabilities():
    faults = sy.Faults(non_chat=0.25, errors=[ErrorFault(404, 0.25), ErrorFault(402, 0.25)])
    requests = [sy.Request(f"q{i}", id=i) for i in range(2000)]
    res = sy.run(sy.strategies.single("m"), requests, host=sim_host(faults))
    shares = res.attempts["http_status"].value_counts(normalize=True)
    for status in (404, 402):
        assert shares[status] == pytest.approx(0.25, abs=0.04)
    assert (res.attempts["error_kind"] == "invalid_response").mean() == pytest.approx(
        0.25, abs=0.04
    )


# -- validation --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "error", "phrase"),
    [
        (lambda: ErrorFault(399, 0.1), sy.ArgumentError, "status must be an int HTTP status"),
        (lambda: ErrorFault(600, 0.1), sy.ArgumentError, "400-599"),
        (lambda: ErrorFault(200, 0.1), sy.ArgumentError, "400-599"),
        (lambda: ErrorFault("401", 0.1), sy.ArgumentTypeError, "status"),
        (lambda: ErrorFault(True, 0.1), sy.ArgumentTypeError, "status"),
        (lambda: ErrorFault(401, 1.5), sy.ArgumentError, "p"),
        (lambda: ErrorFault(401, -0.1), sy.ArgumentError, "p"),
        (
            lambda: ErrorFault(401, 0.1, message=42),
            sy.ArgumentTypeError,
            "message must be a string",
        ),
        (lambda: ErrorFault(401, 0.1, code=7), sy.ArgumentTypeError, "code must be a string"),
        (lambda: ErrorFault(401, 0.1, type=b"x"), sy.ArgumentTypeError, "type must be a string"),
        (lambda: ErrorFault(401, 0.1, message=""), sy.ArgumentError, "must not be empty"),
        (lambda: ErrorFault(503, 0.1, retry_after_s=-1), sy.ArgumentError, "retry_after_s"),
        (
            lambda: sy.Faults(rate_limit=0.5, errors=[ErrorFault(401, 0.3), ErrorFault(404, 0.3)]),
            sy.ArgumentError,
            "≤ 1, got 1.1",
        ),
        (lambda: sy.Faults(non_chat=0.6, malformed=0.6), sy.ArgumentError, "≤ 1"),
        (lambda: sy.Faults(non_chat=1.2), sy.ArgumentError, "non_chat"),
        (
            lambda: sy.Faults(errors=ErrorFault(401, 0.1)),
            sy.ArgumentTypeError,
            "list of sy.faults.ErrorFault",
        ),
        (lambda: sy.Faults(errors=[(401, 0.1)]), sy.ArgumentTypeError, r"errors\[0\]"),
        (lambda: sy.Faults(errors=401), sy.ArgumentTypeError, "list of sy.faults.ErrorFault"),
        (lambda: FakeModel(fault="error-600"), sy.ArgumentError, "unknown fault"),
    ],
)
def test_bad_settings_fail_with_a_clear_error(make, error, phrase):
    with pytest.raises(error, match=phrase):
        make()


def test_errors_are_kept_as_a_tuple_and_faults_stay_hashable():
    faults = sy.Faults(errors=[ErrorFault(401, 0.1)])
    assert faults.errors == (ErrorFault(401, 0.1),)
    assert hash(faults) == hash(sy.Faults(errors=(ErrorFault(401, 0.1),)))


# -- on the FakeProvider, and the same algorithm on both hosts -------------------------------------------


def wire_model(faults: sy.Faults) -> FakeModel:
    """The FakeModel that forces the one fault of ``faults``."""
    if faults.non_chat:
        return FakeModel(fault="not-chat")
    (error,) = faults.errors
    return FakeModel(fault=error)


@pytest.fixture(scope="module")
def fake():
    models = {f"m-{case}": wire_model(faults) for case, (faults, *_) in CASES.items()}
    models["b"] = FakeModel(ttft_s=0.01)
    models["half"] = FakeModel(fault=ErrorFault(500, 0.5))
    with FakeProvider(models, seed=3) as provider:
        yield provider


@pytest.fixture(autouse=True)
def fresh(request):
    if "fake" in request.fixturenames:
        fake = request.getfixturevalue("fake")
        fake.reset()
        yield
        fake.wait_idle()
    else:
        yield


COMPARED = ["model", "status", "http_status", "error_kind", "fallback_reason", "error_message"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_the_same_algorithm_meets_the_same_fault_on_a_sim_host_and_over_http(fake, case, stream):
    faults, status, kind, reason = CASES[case]
    name = f"m-{case}"
    algorithm = sy.strategies.fallback_chain([name, "b"])
    sim = sy.SimHost({name: profile(faults=faults), "b": profile()}, policy=POLICY)
    http = sy.HttpHost(
        fake.base_url, models={name: PRICES, "b": PRICES}, policy=POLICY, stream=stream
    )
    simulated = sy.run(algorithm, ["q"], host=sim)
    real = sy.run(algorithm, ["q"], host=http)
    ours = [{k: clean(r)[k] for k in COMPARED} for r in rows(simulated)]
    theirs = [{k: clean(r)[k] for k in COMPARED} for r in rows(real)]
    assert ours == theirs
    assert (ours[0]["http_status"], ours[0]["error_kind"], ours[0]["fallback_reason"]) == (
        status,
        kind,
        reason,
    )
    assert simulated.requests["status"].tolist() == real.requests["status"].tolist()
    fake.wait_idle()
    served = [r for r in fake.requests if r.model == name]
    expected = "not-chat" if faults.non_chat else f"error-{status}"
    assert [r.fault for r in served] == [expected]


def test_the_fake_provider_serves_the_error_fault_body_and_headers(fake):
    error = ErrorFault(429, 1.0, message="Slow down, {model}.", retry_after_s=0.25)
    with (
        FakeProvider({"m": FakeModel(fault=error)}) as provider,
        httpx.Client(base_url=provider.base_url, timeout=5) as client,
    ):
        chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        answer = client.post("/chat/completions", json=chat)
        assert answer.status_code == 429
        assert answer.headers["retry-after"] == "0.25"
        assert answer.json() == error.body("m")
        assert answer.json()["error"]["message"] == "Slow down, m."
        # a bare model name selects the status with its defaults, -once like any fault
        for name, status in (("error-404-once", 404), ("error-404-once", 200), ("error-402", 402)):
            answer = client.post("/chat/completions", json={**chat, "model": name})
            assert answer.status_code == status
        assert answer.json() == ErrorFault(402, 1.0).body("error-402")


def test_an_error_fault_below_one_fails_that_share_of_requests_repeatably(fake):
    http = sy.HttpHost(fake.base_url, models={"half": PRICES}, policy=POLICY)
    requests = [sy.Request(f"q{i}", id=i) for i in range(40)]
    first = sy.run(sy.strategies.single("half"), requests, host=http, concurrency=1)
    failed = first.attempts.sort_values("request_id")["http_status"].eq(500).tolist()
    assert 8 <= sum(failed) <= 32
    fake.wait_idle()
    fake.reset()
    again = sy.run(sy.strategies.single("half"), requests, host=http, concurrency=1)
    assert again.attempts.sort_values("request_id")["http_status"].eq(500).tolist() == failed
