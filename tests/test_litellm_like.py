"""sy.strategies.litellm_like against the rules measured on LiteLLM 1.110.2's Router.

Every host here has constant latencies (a rejection takes 0.05 s, an answer 0.25 s + 10 tokens at
100 tokens/s), so the only randomness in the times is the router's own jitter: a wait after a
failed attempt is ``0.5·2ⁿ`` s plus ``0.75·U``.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings

import pandas as pd
import pandas.testing as pdt
import pytest

import sykit as sy
from tests.helpers import constant_profile

st = sy.strategies
REJECT_S = 0.05  # how long a simulated rejection takes
JITTER = 0.75


def profile(faults: sy.Faults | None = None) -> sy.ModelProfile:
    return constant_profile(0.25, 10, 100.0, faults=faults or sy.Faults())


def host(policy: sy.HostPolicy | None = None, **faults: sy.Faults | None) -> sy.SimHost:
    models = {name: profile(f) for name, f in faults.items()}
    models.setdefault("ok", profile())
    return sy.SimHost(models, policy=policy or sy.HostPolicy())


def attempts(result: sy.Result) -> list[tuple[str, int, float, float]]:
    """(model, http_status, start, end) of every attempt, in start order."""
    frame = result.attempts.sort_values(["request_id", "start_s", "call_id"])
    return [
        (m, int(s), start, end)
        for m, s, start, end in zip(
            frame["model"], frame["http_status"], frame["start_s"], frame["end_s"], strict=True
        )
    ]


def with_retry_index(rows: list[tuple[str, int, float, float]]) -> list[tuple[str, int, int]]:
    """(model, status, retry index): the index counts attempts in a row at the same model."""
    out: list[tuple[str, int, int]] = []
    for model, status, _, _ in rows:
        index = out[-1][2] + 1 if out and out[-1][0] == model else 0
        out.append((model, status, index))
    return out


def gaps(rows: list[tuple[str, int, float, float]]) -> list[float]:
    """The wait between each attempt's end and the next one's start."""
    return [b[2] - a[3] for a, b in itertools.pairwise(rows)]


def assert_backoff(waits: list[float]) -> None:
    """Wait n is 0.5·2ⁿ s plus a jitter in [0, 0.75) s."""
    for n, wait in enumerate(waits):
        base = 0.5 * 2**n
        assert base <= wait < base + JITTER, (n, wait)


USAGE_POLICY = "Invalid prompt: your prompt was flagged as potentially violating our usage policy."
REQUEST = [sy.Request("hello", id=0)]


# -- retries and waits -----------------------------------------------------------------------------


def test_a_non_integer_retry_after_is_ignored_for_the_backoff():
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=0.5))
    rows = attempts(sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h))
    assert with_retry_index(rows) == [("a", 429, 0), ("a", 429, 1), ("a", 429, 2), ("ok", 200, 0)]
    assert_backoff(gaps(rows))  # 0.5·2ⁿ + jitter, not 0.5 s
    assert len({round(g, 9) for g in gaps(rows)}) == 3


def assert_retry_after(waits: list[float], seconds: float) -> None:
    """Each wait is the Retry-After plus a jitter in [0, 0.75) s (conformance/: the real Router)."""
    for wait in waits:
        assert seconds <= wait < seconds + JITTER, wait
    assert len({round(w, 9) for w in waits}) == len(waits)


def test_an_integer_retry_after_is_the_wait_and_any_honours_fractions():
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=1.0))
    rows = attempts(sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h))
    assert_retry_after(gaps(rows), 1.0)
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=0.5))
    rows = attempts(sy.run(st.litellm_like(["a", "ok"], retry_after="any"), REQUEST, host=h))
    assert_retry_after(gaps(rows), 0.5)
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=0.0))  # Retry-After: 0 gets the backoff
    assert_backoff(gaps(attempts(sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h))))
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=90.0))  # over 60 s: the backoff
    assert_backoff(gaps(attempts(sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h))))


@pytest.mark.parametrize(
    "faults",
    [sy.Faults(rate_limit=1.0, retry_after_s=None), sy.Faults(unavailable=1.0)],
    ids=["429", "503"],
)
def test_a_target_failing_every_time_gets_three_attempts_and_one_more_wait(faults):
    # the host's own policy retries twice by default: litellm_like still makes one attempt per call
    h = host(a=faults)
    rows = attempts(sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h))
    status = rows[0][1]
    assert with_retry_index(rows) == [
        ("a", status, 0),
        ("a", status, 1),
        ("a", status, 2),
        ("ok", 200, 0),
    ]
    assert rows[0][2] == 0.0
    assert_backoff(gaps(rows))  # the third wait comes before the fallback
    fallback_at = rows[-1][2]
    assert 3 * REJECT_S + 3.5 <= fallback_at < 3 * REJECT_S + 3.5 + 3 * JITTER


def test_num_retries_zero_falls_back_at_once():
    h = host(a=sy.Faults(unavailable=1.0))
    rows = attempts(sy.run(st.litellm_like(["a", "ok"], num_retries=0), REQUEST, host=h))
    assert with_retry_index(rows) == [("a", 503, 0), ("ok", 200, 0)]
    assert gaps(rows) == [0.0]


@pytest.mark.parametrize(
    "faults",
    [sy.Faults(malformed=1.0), sy.Faults(non_chat=1.0)],
    ids=["malformed", "non_chat"],
)
def test_an_unusable_200_is_retried_with_backoff_then_falls_back(faults):
    h = host(a=faults)
    result = sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h)
    frame = result.attempts
    assert frame["model"].tolist() == ["a", "a", "a", "ok"]
    assert frame["error_kind"].tolist()[:3] == ["invalid_response"] * 3
    rows = attempts(result)
    assert_backoff(gaps(rows))


# -- fallbacks -------------------------------------------------------------------------------------


def fallback_reasons(result):
    """Each attempt's fallback_reason, None where it has none."""
    column = result.attempts["fallback_reason"]
    return [None if pd.isna(r) else str(r) for r in column]


@pytest.mark.parametrize(
    "fault",
    [
        sy.faults.ErrorFault.capability(1.0),
        sy.faults.ErrorFault(400, 1.0),
        sy.faults.ErrorFault(401, 1.0),
        sy.faults.ErrorFault(404, 1.0),
        sy.faults.ErrorFault(422, 1.0),
        sy.faults.ErrorFault.policy(1.0),
        sy.faults.ErrorFault.context_window(1.0),
    ],
    ids=["capability", "400", "401", "404", "422", "policy", "context_window"],
)
def test_every_error_class_falls_back_without_retries(fault):
    h = host(a=sy.Faults(errors=[fault]))
    result = sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h)
    assert result.requests["served_model"].tolist() == ["ok"]
    assert with_retry_index(attempts(result)) == [("a", fault.status, 0), ("ok", 200, 0)]
    assert result.requests["n_fallbacks"].tolist() == [1]
    # the attempt it moved on from says why, when the error is of a listed kind
    reason = {"capability": "capability", "policy": "policy", "context_window": "context_window"}
    kind = result.attempts["error_kind"].iloc[0]
    assert fallback_reasons(result) == [reason.get(kind), None]


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (sy.faults.ErrorFault.context_window(1.0), "big"),
        (sy.faults.ErrorFault.policy(1.0, message=USAGE_POLICY), "safe"),
        # OpenAI's own wording ("... our safety system") is not one LiteLLM recognises
        (sy.faults.ErrorFault.policy(1.0), "mid"),
        (sy.faults.ErrorFault(400, 1.0, message="Prompt is too long: 300000 tokens"), "big"),
        (
            sy.faults.ErrorFault(
                400, 1.0, code="context_length_exceeded", message="Too many tokens"
            ),
            "mid",
        ),
        (sy.faults.ErrorFault(401, 1.0), "mid"),
    ],
    ids=[
        "context_window",
        "policy",
        "policy-openai-wording",
        "prompt-too-long",
        "code-only",
        "other",
    ],
)
def test_context_window_and_content_policy_errors_use_their_own_fallbacks(fault, expected):
    h = host(small=sy.Faults(errors=[fault]), mid=None, big=None, safe=None)
    router = st.litellm_like(
        ["small", "mid", "big", "safe"],
        fallbacks={"small": ["mid"]},
        context_window_fallbacks={"small": ["big"]},
        content_policy_fallbacks=[{"small": ["safe"]}],  # LiteLLM's own form
    )
    result = sy.run(router, REQUEST, host=h)
    assert result.attempts["model"].tolist() == ["small", expected]


def test_without_their_own_lists_they_use_the_ordinary_fallbacks():
    h = host(small=sy.Faults(errors=[sy.faults.ErrorFault.context_window(1.0)]), mid=None)
    result = sy.run(st.litellm_like(["small", "mid"]), REQUEST, host=h)
    assert result.attempts["model"].tolist() == ["small", "mid"]


def test_at_most_five_fallbacks():
    names = [f"m{i}" for i in range(8)]
    h = host(**{n: sy.Faults(errors=[sy.faults.ErrorFault(400, 1.0)]) for n in names})
    result = sy.run(st.litellm_like(names), REQUEST, host=h)
    assert result.attempts["model"].tolist() == names[:6]  # the first group and 5 fallbacks
    assert result.requests["status"].tolist() == ["failed"]
    assert result.requests["n_fallbacks"].tolist() == [5]


def test_fallbacks_of_a_fallback_are_followed_and_a_mapping_names_them():
    h = host(a=sy.Faults(unavailable=1.0), b=sy.Faults(unavailable=1.0), c=None)
    router = st.litellm_like(["a", "b", "c"], num_retries=0, fallbacks={"a": ["b"], "b": ["c"]})
    assert sy.run(router, REQUEST, host=h).attempts["model"].tolist() == ["a", "b", "c"]
    router = st.litellm_like(["a", "b", "c"], num_retries=0, fallbacks={})
    result = sy.run(router, REQUEST, host=h)
    assert result.attempts["model"].tolist() == ["a"]
    assert result.requests["error_kind"].tolist() == ["unavailable"]


# -- cooldown --------------------------------------------------------------------------------------


def tried(result: sy.Result, model: str) -> list[int]:
    """The requests that called ``model`` (a skipped row is not a call)."""
    frame = result.attempts
    called = frame[(frame["model"] == model) & (frame["status"] != "skipped")]
    return sorted(set(called["request_id"]))


def run_at(router, h: sy.SimHost, times: list[float]) -> sy.Result:
    requests = [sy.Request("hello", id=i) for i in range(len(times))]
    return sy.run(router, requests, host=h, arrivals=times)


def test_a_deployment_cools_after_failures_exceed_allowed_fails():
    h = host(a=sy.Faults(unavailable=1.0))
    router = st.litellm_like(["a", "ok"], num_retries=0, allowed_fails=3)
    times = [0.5 * i for i in range(16)]  # every 0.5 s up to 7.5 s
    result = run_at(router, h, times)
    # failures at 0.05, 0.55, 1.05 count 1..3; the 4th (at 1.55) exceeds 3: cooled until 6.55
    assert tried(result, "a") == [0, 1, 2, 3, 14, 15]
    assert result.requests["served_model"].tolist() == ["ok"] * 16
    request = result.attempts[result.attempts["request_id"] == 4]
    # a cooled deployment: no call is made; the row says it was passed over, and why
    assert request["model"].tolist() == ["a", "ok"]
    assert request["status"].tolist() == ["skipped", "ok"]
    assert request["error_kind"].tolist()[0] == "cooldown"
    assert request["error_message"].tolist()[0] == "cooling down in litellm_like, until t=6.55 s"
    assert request["start_s"].tolist()[0] == request["end_s"].tolist()[0] == 2.0
    assert fallback_reasons(result)[:2] == ["unavailable", None]  # request 0: a's 503, then ok
    assert result.requests["n_fallbacks"].tolist() == [1] * 16


def test_the_failure_count_window_is_fixed_from_the_first_failure():
    h = host(a=sy.Faults(unavailable=1.0))
    router = st.litellm_like(["a", "ok"], num_retries=0, allowed_fails=3, cooldown_time=5.0)
    # failures at 0.05, 1.05, 2.05 (count 3, window until 5.05); at 5.55 the count starts again,
    # so 5.55, 6.05, 6.55 count 1..3 and 7.05 exceeds it. A sliding 5-s window would have
    # cooled it at 6.05 (four failures since 1.05).
    result = run_at(router, h, [0.0, 1.0, 2.0, 5.5, 6.0, 6.5, 7.0, 7.5])
    assert tried(result, "a") == [0, 1, 2, 3, 4, 5, 6]


def test_every_failed_attempt_counts_and_a_cooled_group_stops_retrying():
    h = host(a=sy.Faults(unavailable=1.0))
    router = st.litellm_like(["a", "ok"], allowed_fails=1)
    rows = attempts(sy.run(router, REQUEST, host=h))
    # the second attempt is the second failure (> 1): cooled, straight to the fallback, no wait
    assert with_retry_index(rows) == [("a", 503, 0), ("a", 503, 1), ("ok", 200, 0)]
    assert_backoff(gaps(rows)[:1])
    assert gaps(rows)[1] == 0.0


def test_without_allowed_fails_a_single_deployment_group_never_cools():
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=None))
    router = st.litellm_like(["a", "ok"], num_retries=0)
    result = run_at(router, h, [0.5 * i for i in range(12)])
    assert tried(result, "a") == list(range(12))


def test_without_allowed_fails_a_group_of_several_cools_a_deployment_on_a_429():
    h = host(a1=sy.Faults(rate_limit=1.0, retry_after_s=None), a2=None)
    router = st.litellm_like({"g": ["a1", "a2"], "ok": ["ok"]})
    result = run_at(router, h, [0.5 * i for i in range(20)])
    frame = result.attempts
    a1 = frame[frame["model"] == "a1"]
    assert len(a1) >= 1
    first = a1["request_id"].min()
    # the retry goes to the healthy sibling at once, and a1 is left alone for cooldown_time
    retry = frame[(frame["request_id"] == first) & (frame["model"] == "a2")]
    assert retry["start_s"].tolist() == [pytest.approx(a1["end_s"].min())]
    first_end = a1["end_s"].min()
    later = a1[a1["start_s"] > first_end]
    assert (later["start_s"] >= first_end + 5.0).all()
    assert set(result.requests["served_model"]) == {"a2"}


def test_without_allowed_fails_a_group_of_several_cools_on_mostly_failures():
    h = host(a1=sy.Faults(unavailable=1.0), a2=sy.Faults(unavailable=1.0))
    router = st.litellm_like({"g": ["a1", "a2"], "ok": ["ok"]}, num_retries=0)
    result = run_at(router, h, [0.5 * i for i in range(16)])
    # 503s do not cool at once; after 5 requests with more than half failed they do
    calls = result.attempts[result.attempts["status"] != "skipped"]
    per_model = calls.groupby("model")["request_id"].count()
    assert per_model["a1"] + per_model["a2"] < 16
    assert per_model["a1"] + per_model["a2"] >= 5
    # the requests that found both cooling: a skipped row for each, then straight to ok
    passed_over = result.attempts[result.attempts["status"] == "skipped"]
    assert len(passed_over) == 2 * (16 - per_model["a1"] - per_model["a2"])


def test_a_lone_deployment_without_fallbacks_is_never_cooled():
    h = host(a=sy.Faults(unavailable=1.0))
    router = st.litellm_like(["a"], num_retries=0, allowed_fails=0)
    result = run_at(router, h, [0.0, 1.0, 2.0])
    assert tried(result, "a") == [0, 1, 2]
    assert result.requests["error_kind"].tolist() == ["unavailable"] * 3
    # with a fallback the same deployment is cooled at its first failure
    result = run_at(st.litellm_like(["a", "ok"], num_retries=0, allowed_fails=0), h, [0, 1, 2])
    assert tried(result, "a") == [0]


def test_a_429_cools_for_its_retry_after():
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=2.0))
    router = st.litellm_like(["a", "ok"], num_retries=0, allowed_fails=0)
    result = run_at(router, h, [0.0, 1.0, 2.0, 2.5])
    assert tried(result, "a") == [0, 3]  # cooled from 0.05 to 2.05, not for cooldown_time (5 s)


def test_a_retry_after_over_60_s_cools_for_all_of_it_and_a_0_for_none():
    # LiteLLM caps the Retry-After it waits at 60 s, not the one it cools for
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=90.0))
    router = st.litellm_like(["a", "ok"], num_retries=0, allowed_fails=0, cooldown_time=2)
    result = run_at(router, h, [0.0, 3.0, 90.0, 90.1])
    assert tried(result, "a") == [0, 3]  # cooled from 0.05 to 90.05
    skipped = result.attempts[result.attempts["status"] == "skipped"]
    assert sorted(skipped["request_id"]) == [1, 2]
    h = host(a=sy.Faults(rate_limit=1.0, retry_after_s=0.0))
    assert tried(run_at(router, h, [0.0, 0.5, 1.0]), "a") == [0, 1, 2]  # not cooldown_time
    ignoring = st.litellm_like(
        ["a", "ok"], num_retries=0, allowed_fails=0, cooldown_time=2, retry_after="ignore"
    )
    assert tried(run_at(ignoring, h, [0.0, 0.5, 2.5]), "a") == [0, 2]  # cooldown_time


# -- determinism, the old form, the driver ---------------------------------------------------------


def test_the_same_seed_gives_the_same_run_and_another_seed_other_waits():
    h = host(a=sy.Faults(unavailable=1.0))
    requests = [sy.Request("hello", id=i) for i in range(5)]
    router = st.litellm_like(["a", "ok"])
    first = sy.run(router, requests, host=h, seed=1)
    again = sy.run(router, requests, host=h, seed=1)
    pdt.assert_frame_equal(first.attempts, again.attempts)
    other = sy.run(router, requests, host=h, seed=2)
    assert first.attempts["start_s"].tolist() != other.attempts["start_s"].tolist()


def test_the_old_list_form_still_works():
    router = st.litellm_like(["a", "ok"])
    assert router.name == "litellm_like(a>ok)"
    h = host(a=sy.Faults(unavailable=1.0))
    assert sy.run(router, REQUEST, host=h).requests["served_model"].tolist() == ["ok"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = st.litellm_like(["a", "ok"], allowed_fails=2, cooldown_s=10.0)
    assert old.cooldown_time == 10.0
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)


def test_bad_settings_are_refused():
    with pytest.raises(sy.ArgumentError):
        st.litellm_like(["a", "b"], fallbacks={"a": ["c"]})
    with pytest.raises(sy.ArgumentError):
        st.litellm_like(["a"], retry_after="float")
    with pytest.raises(sy.ArgumentError):
        st.litellm_like(["a"], num_retries=-1)
    with pytest.raises(sy.ArgumentError):
        st.litellm_like(["a"], allowed_fails=True)


# -- streamed requests (stream=True) -----------------------------------------------------------------


def test_a_streamed_request_is_served_as_a_whole_one_is():
    h = host(a=None)
    streamed = sy.run(st.litellm_like(["a", "ok"], stream=True), REQUEST, host=h)
    whole = sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h)
    assert streamed.requests["served_model"].tolist() == ["a"]
    assert attempts(streamed) == attempts(whole)
    assert streamed.attempts["ttft_s"].tolist() == [0.25]


def test_a_stream_cut_after_content_ends_the_request_without_retry_or_fallback():
    h = host(a=sy.Faults(cut_stream=1.0))
    result = sy.run(st.litellm_like(["a", "ok"], stream=True), REQUEST, host=h)
    assert result.attempts["model"].tolist() == ["a"]
    assert result.requests["status"].tolist() == ["failed"]
    assert result.requests["n_fallbacks"].tolist() == [0]
    # the same fault on a whole (not streamed) request is a 502: retried, then the fallback
    whole = sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h)
    assert whole.attempts["model"].tolist() == ["a", "a", "a", "ok"]


def test_a_malformed_chunk_after_content_ends_the_request_too():
    h = host(a=sy.Faults(malformed=1.0, break_after_tokens=3))
    result = sy.run(st.litellm_like(["a", "ok"], stream=True), REQUEST, host=h)
    assert result.attempts["model"].tolist() == ["a"]
    assert result.requests["error_kind"].tolist() == ["invalid_response"]


def test_a_stream_broken_before_content_falls_back_at_once():
    h = host(a=sy.Faults(malformed=1.0))  # the first chunk is garbage
    result = sy.run(st.litellm_like(["a", "ok"], stream=True), REQUEST, host=h)
    rows = attempts(result)
    assert [r[:2] for r in rows] == [("a", 200), ("ok", 200)]
    assert gaps(rows) == [0.0]  # no backoff: LiteLLM's mid-stream fallback
    assert result.requests["served_model"].tolist() == ["ok"]
    assert result.requests["n_fallbacks"].tolist() == [1]
    # not streamed, the same unusable 200 is retried with backoff first
    whole = sy.run(st.litellm_like(["a", "ok"]), REQUEST, host=h)
    assert whole.attempts["model"].tolist() == ["a", "a", "a", "ok"]


def test_an_error_before_the_stream_opens_is_retried_as_usual():
    h = host(a=sy.Faults(unavailable=1.0))
    result = sy.run(st.litellm_like(["a", "ok"], stream=True), REQUEST, host=h)
    rows = attempts(result)
    assert [r[:2] for r in rows] == [("a", 503)] * 3 + [("ok", 200)]
    assert_backoff(gaps(rows))
    assert fallback_reasons(result) == [None, None, "unavailable", None]


@pytest.mark.parametrize(
    ("faults", "served"),
    [(sy.Faults(cut_stream=1.0), [None] * 3), (sy.Faults(malformed=1.0), ["ok"] * 3)],
    ids=["cut-after-content", "malformed-first-chunk"],
)
def test_a_broken_stream_does_not_count_toward_the_cooldown(faults, served):
    h = host(a=faults)
    router = st.litellm_like(["a", "ok"], stream=True, allowed_fails=0, cooldown_time=5.0)
    result = run_at(router, h, [0.0, 1.0, 6.0])
    assert tried(result, "a") == [0, 1, 2]  # never cooled
    assert (result.attempts["status"] != "skipped").all()
    assert [None if pd.isna(m) else m for m in result.requests["served_model"]] == served
    # the same deployment answering 503 is cooled at its first failure
    down = run_at(router, host(a=sy.Faults(unavailable=1.0)), [0.0, 1.0, 6.0])
    assert tried(down, "a") == [0, 2]


def test_stream_must_be_a_bool():
    with pytest.raises(sy.ArgumentTypeError, match="stream must be True or False"):
        st.litellm_like(["a"], stream="yes")


def test_call_model_max_retries_overrides_the_host_policy_for_one_call():
    h = host(a=sy.Faults(unavailable=1.0), policy=sy.HostPolicy(max_retries=2))
    seen = []

    async def algorithm(request, driver):
        seen.append(driver.seed)
        with contextlib.suppress(sy.ModelError):
            await driver.call_model(request, ["a"], max_retries=0)
        return sy.answered("ok", await driver.call_model(request, ["ok"]))

    result = sy.run(algorithm, REQUEST, host=h, seed=7)
    assert result.attempts["model"].tolist() == ["a", "ok"]
    assert seen == [7]


# -- LiteLLM's model_list: order tiers and simple-shuffle ------------------------------------------


def deployment(group: str, model: str, **params) -> dict:
    return {"model_name": group, "litellm_params": {"model": model, **params}}


def test_model_list_names_the_hosts_model_without_its_provider_prefix():
    h = host(east=None, west=None)
    router = st.litellm_like(
        model_list=[
            deployment("gpt-4o", "openai/east", order=1),
            deployment("gpt-4o", "west", order=2),
            {**deployment("gpt-4o", "azure/x/y", order=3), "deployment": "ok"},
        ]
    )
    assert router.groups == {"gpt-4o": ("east", "west", "ok")}
    assert router.fallbacks == {}  # LiteLLM's default: no fallbacks
    assert sy.run(router, REQUEST, host=h).attempts["model"].tolist() == ["east"]


def test_a_failing_order_retries_in_place_then_the_next_order_then_the_fallbacks():
    h = host(east=sy.Faults(unavailable=1.0), west=sy.Faults(unavailable=1.0), mini=None)
    router = st.litellm_like(
        model_list=[
            deployment("gpt-4o", "openai/west", order=2),
            deployment("gpt-4o", "openai/east", order=1),
            deployment("mini", "openai/mini"),
        ],
        fallbacks=[{"gpt-4o": ["mini"]}],
    )
    result = sy.run(router, REQUEST, host=h)
    rows = attempts(result)
    assert [r[:2] for r in rows] == [("east", 503)] * 3 + [("west", 503)] * 3 + [("mini", 200)]
    assert all(g < 1e-9 for g in gaps(rows))  # a healthy sibling: no waits
    # the move to order 2 after east's last 503 is a switch of model, a fallback as any
    # algorithm's; then west's last 503 moves on to the fallback group
    assert result.requests["n_fallbacks"].tolist() == [2]
    assert fallback_reasons(result) == [None, None, "unavailable", None, None, "unavailable", None]


def test_a_cooled_low_order_hands_its_requests_to_the_next_order():
    h = host(east=sy.Faults(rate_limit=1.0, retry_after_s=1.0), west=None)
    router = st.litellm_like(
        model_list=[
            deployment("gpt-4o", "openai/east", order=1),
            deployment("gpt-4o", "openai/west", order=2),
        ]
    )
    requests = [sy.Request("x", id=i) for i in range(3)]
    result = sy.run(router, requests, host=h, arrivals=[0.0, 0.5, 2.0])
    assert result.attempts.sort_values(["request_id", "start_s"])["model"].tolist() == [
        "east", "west", "west", "east", "west",
    ]  # fmt: skip


OWN_COOLDOWN = ["east", "west", "east", "west", "east", "west"]  # cooled 1 s: back at 1.5 s
HEADER_COOLDOWN = ["east", "west", "west", "east", "west"]  # cooled for Retry-After: 3 s


@pytest.mark.parametrize(
    ("params", "info", "expected"),
    [
        ({"cooldown_time": 1}, None, OWN_COOLDOWN),
        ({"cooldown_time": 10}, {"cooldown_time": 1.0}, OWN_COOLDOWN),  # model_info first
        ({}, None, HEADER_COOLDOWN),
        ({"cooldown_time": True}, None, HEADER_COOLDOWN),  # not a number: passed over
        ({"cooldown_time": "1"}, None, HEADER_COOLDOWN),
        ({"cooldown_time": -1}, None, HEADER_COOLDOWN),  # negative: passed over when cooling
    ],
)
def test_a_deployments_own_cooldown_time_comes_before_retry_after(params, info, expected):
    # as LiteLLM 1.110.2 (conformance: cooldown-time-deployment-429): the deployment's own
    # cooldown_time, then Retry-After, then the Router's cooldown_time
    h = host(east=sy.Faults(rate_limit=1.0, retry_after_s=3.0), west=None)
    east = deployment("gpt-4o", "openai/east", order=1, **params)
    if info is not None:
        east["model_info"] = info
    router = st.litellm_like(
        model_list=[east, deployment("gpt-4o", "openai/west", order=2)],
        allowed_fails=0,
        cooldown_time=5,
        num_retries=0,
    )
    requests = [sy.Request("x", id=i) for i in range(3)]
    result = sy.run(router, requests, host=h, arrivals=[0.0, 1.5, 4.0])
    models = result.attempts.sort_values(["request_id", "start_s", "call_id"])["model"]
    assert models.tolist() == expected


def test_simple_shuffle_weighs_by_weight_then_rpm_and_is_uniform_without():
    h = host(a1=None, a2=None)

    def shares(**params) -> float:
        router = st.litellm_like(
            model_list=[
                deployment("g", "a1", **params.get("a1", {})),
                deployment("g", "a2", **params.get("a2", {})),
            ]
        )
        requests = [sy.Request("x", id=i) for i in range(400)]
        models = sy.run(router, requests, host=h).attempts["model"]
        return float((models == "a1").mean())

    assert 0.4 < shares() < 0.6
    assert 0.7 < shares(a1={"weight": 3}, a2={"weight": 1}) < 0.8
    assert 0.05 < shares(a1={"rpm": 10}, a2={"rpm": 90}) < 0.15
    assert shares(a1={"weight": 1}) == 1.0  # a2 sets none: weight 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model_list": [{"litellm_params": {"model": "a"}}]}, "needs a 'model_name'"),
        ({"model_list": [{"model_name": "g"}]}, "needs 'litellm_params' with a 'model'"),
        ({"model_list": [{"model_name": "g", "litellm_params": {}}]}, "with a 'model'"),
        ({"model_list": [deployment("g", "a"), deployment("g", "x/a")]}, "twice"),
        ({"model_list": [deployment("g", "a", order="first")]}, "order must be a whole"),
        ({"model_list": [deployment("g", "a")], "fallbacks": [{"g": ["h"]}]}, "unknown group"),
        (
            {"model_list": [deployment("g", "a")], "routing_strategy": "usage-based-routing"},
            "unknown routing_strategy",
        ),
        ({}, "needs the models"),
    ],
)
def test_model_list_mistakes_are_named(kwargs, message):
    with pytest.raises(sy.ArgumentError, match=message):
        st.litellm_like(**kwargs)


def test_groups_and_model_list_together_are_refused():
    with pytest.raises(sy.ArgumentError, match="either groups or model_list"):
        st.litellm_like(["a"], model_list=[deployment("g", "a")])


def test_a_group_of_deployments_over_http_matches_the_simulated_host():
    """The same model_list on an HttpHost (each deployment a model of the FakeProvider) and on a
    SimHost with the same faults: the same attempts, deployment by deployment."""
    from sykit.testing import FakeModel, FakeProvider

    model_list = [
        {"model_name": "gpt", "litellm_params": {"model": "openai/east", "order": 1}},
        {"model_name": "gpt", "litellm_params": {"model": "openai/west", "order": 2}},
        {"model_name": "mini", "litellm_params": {"model": "openai/mini"}},
    ]
    router = sy.strategies.litellm_like(
        model_list=model_list, fallbacks=[{"gpt": ["mini"]}], num_retries=0
    )
    policy = sy.HostPolicy(max_retries=0, cooldown_s=0, timeout_s=2.0)
    prices = sy.ModelProfile(price_in=1.0, price_out=2.0)
    sim = sy.SimHost(
        {
            "east": prices.replace(faults=sy.Faults(errors=[sy.faults.ErrorFault(503, 1.0)])),
            "west": prices,
            "mini": prices,
        },
        policy=policy,
    )
    wire = {
        "east": FakeModel(fault=sy.faults.ErrorFault(503, 1.0)),
        "west": FakeModel(ttft_s=0.01),
        "mini": FakeModel(ttft_s=0.01),
    }
    with FakeProvider(wire, seed=1) as fake:
        http = sy.HttpHost(
            fake.base_url, models={m: prices for m in wire}, policy=policy, stream=False
        )
        real = sy.run(router, ["q1", "q2"], host=http, progress=False)
    simulated = sy.run(router, ["q1", "q2"], host=sim, progress=False)

    def attempts(result):
        a = result.attempts
        return list(
            zip(
                a["request_id"],
                a["model"].astype(str),
                a["status"].astype(str),
                a["http_status"].astype("Int64").tolist(),
                strict=True,
            )
        )

    assert attempts(real) == attempts(simulated)
    assert [m for _, m, _, _ in attempts(real)] == ["east", "west", "east", "west"]
    assert (real.requests["served_model"].astype(str) == "west").all()


@pytest.mark.parametrize(
    ("fault", "after", "expected"),
    [
        ("cut-stream", 4, [("a", "error")]),
        ("malformed-chunk", 4, [("a", "error")]),
        ("malformed-chunk", 0, [("a", "error"), ("ok", "ok")]),
        ("fail-503", None, [("a", "error")] * 3 + [("ok", "ok")]),
    ],
    ids=["cut-after-content", "malformed-after-content", "malformed-first-chunk", "503"],
)
def test_streamed_requests_over_http(fault, after, expected):
    """litellm_like(stream=True) through a streaming HttpHost: a stream broken after content
    fails the request, one broken before content falls back at once, an error status is
    retried (its backoff, real seconds over HTTP, set to nothing to keep the test short)."""
    from sykit.testing import FakeModel, FakeProvider

    wire = {
        "a": FakeModel(ttft_s=0.005, output_tokens=12, fault=fault, fault_after_tokens=after),
        "ok": FakeModel(ttft_s=0.005, output_tokens=12),
    }
    prices = sy.ModelProfile(price_in=1.0, price_out=2.0)
    with FakeProvider(wire, seed=1) as fake:
        http = sy.HttpHost(fake.base_url, models={m: prices for m in wire}, stream=True)
        router = st.litellm_like(["a", "ok"], stream=True, num_retries=2)
        if fault == "fail-503":
            router._wait_s = lambda error, retry, jitter: 0.0
        result = sy.run(router, ["q"], host=http, progress=False)
    rows = list(
        zip(
            result.attempts["model"].astype(str), result.attempts["status"].astype(str), strict=True
        )
    )
    assert rows == expected
    served = expected[-1][1] == "ok"
    assert result.requests["status"].tolist() == (["ok"] if served else ["failed"])


@pytest.mark.parametrize("stream", [False, True])
def test_both_engines_give_the_same_frames(stream):
    """Cooldowns, skipped rows, fallback reasons and streams under concurrency: the kernel and
    the asyncio engine record the same attempts and requests."""
    faults = sy.Faults(unavailable=0.3, malformed=0.2, cut_stream=0.2)
    h = host(a=faults)
    requests = [sy.Request(f"r{i}", id=i) for i in range(120)]

    def run(engine):
        router = st.litellm_like(["a", "ok"], stream=stream, allowed_fails=2, cooldown_time=2.0)
        return sy.run(router, requests, host=h, engine=engine, concurrency=8, seed=3)

    kernel, loop = run("kernel"), run("asyncio")
    assert (kernel.engine, loop.engine) == ("kernel", "asyncio")
    pdt.assert_frame_equal(kernel.attempts, loop.attempts)
    pdt.assert_frame_equal(kernel.requests, loop.requests)
    assert (kernel.attempts["status"] == "skipped").any()
    assert kernel.attempts["fallback_reason"].notna().any()


def test_an_error_message_decides_what_litellm_sees_as_it_does():
    """LiteLLM maps an error by its message before its status: a 500 saying the prompt is too
    long is its ContextWindowExceededError (a 400: not retried, context_window_fallbacks)."""
    h = host(small=sy.Faults(errors=[sy.faults.ErrorFault(500, 1.0, message="Prompt is too long")]))
    h = sy.SimHost({**h.profiles, "big": profile(), "mid": profile()})
    router = st.litellm_like(
        ["small", "mid", "big"],
        fallbacks={"small": ["mid"]},
        context_window_fallbacks={"small": ["big"]},
    )
    result = sy.run(router, REQUEST, host=h)
    assert result.attempts["model"].tolist() == ["small", "big"]


@pytest.mark.parametrize(
    ("message", "first_request", "second_request"),
    [
        # 5 failures in the minute, all failed: cooled at request 1's second attempt
        ("The server had an error.", ["a1"] * 3 + ["a2"], ["a1", "a1", "a2"]),
        ("Rate limit exceeded, slow down.", ["a1", "a2"], ["a2"]),
    ],
    ids=["plain-503", "rate-limit-in-words"],
)
def test_a_503_that_speaks_of_a_rate_limit_is_a_429_to_litellm(
    message, first_request, second_request
):
    # a 429 cools a deployment of a group at once (no allowed_fails); a plain 503 only once
    # more than half of at least 5 requests in the minute failed
    h = host(a1=sy.Faults(errors=[sy.faults.ErrorFault(503, 1.0, message=message)]), a2=None)
    router = st.litellm_like(
        model_list=[deployment("a", "a1", order=1), deployment("a", "a2", order=2)]
    )
    result = run_at(router, h, [0.0, 1.0])
    calls = result.attempts[result.attempts["status"] != "skipped"]
    per_request = calls.groupby("request_id")["model"].apply(list).tolist()
    assert per_request == [first_request, second_request]


# -- cost-based-routing ---------------------------------------------------------------------------


def priced(name: str, price_in: float = 0.0, price_out: float = 0.0) -> dict:
    """A deployment of the group "a" with its litellm_params prices per token (0: none given)."""
    params: dict = {"model": name}
    if price_in:
        params["input_cost_per_token"] = price_in
    if price_out:
        params["output_cost_per_token"] = price_out
    return {"model_name": "a", "litellm_params": params}


def cost_run(model_list, n: int = 4, gap: float = 1.0, models=None, **kwargs) -> sy.Result:
    router = st.litellm_like(
        model_list=[*model_list, {"model_name": "b", "litellm_params": {"model": "ok"}}],
        routing_strategy="cost-based-routing",
        fallbacks={"a": ["b"]},
        **kwargs,
    )
    hosted = models or {m["litellm_params"]["model"]: profile() for m in model_list}
    requests = [sy.Request(f"q{i}", id=i) for i in range(n)]
    arrivals = [gap * i for i in range(n)]
    return sy.run(router, requests, host=sy.SimHost({"ok": profile(), **hosted}), arrivals=arrivals)


def served_by(result: sy.Result) -> list[str]:
    return list(result.requests["served_model"])


def test_cost_based_routing_sends_every_request_to_the_cheapest_deployment():
    # input plus output per token: a2 (1e-7 + 4e-7) under a1 (1e-6 + 1e-6) and a3 (5e-8 + 1e-6)
    result = cost_run(
        [priced("a1", 1e-6, 1e-6), priced("a2", 1e-7, 4e-7), priced("a3", 5e-8, 1e-6)]
    )
    assert served_by(result) == ["a2"] * 4


def test_cost_based_routing_reads_the_hosts_prices_when_litellm_params_give_none():
    # ModelProfile prices are USD per million tokens: a1 0.15 + 0.6, a2 2.5 + 10
    models = {
        "a1": constant_profile(0.25, 10, 100.0).replace(price_in=2.5, price_out=10.0),
        "a2": constant_profile(0.25, 10, 100.0).replace(price_in=0.15, price_out=0.6),
    }
    assert served_by(cost_run([priced("a1"), priced("a2")], models=models)) == ["a2"] * 4
    # a litellm_params price comes first: a1 at 1e-8 + 1e-8 per token is now the cheapest
    listed = [priced("a1", 1e-8, 1e-8), priced("a2")]
    assert served_by(cost_run(listed, models=models)) == ["a1"] * 4
    # the groups form has no litellm_params: the host's prices alone
    router = st.litellm_like({"a": ["a1", "a2"]}, routing_strategy="cost-based-routing")
    result = sy.run(router, [sy.Request("q", id=0)], host=sy.SimHost(models))
    assert served_by(result) == ["a2"]


def test_cost_based_routing_gives_an_unknown_price_5_per_token_and_ties_to_the_first():
    from sykit.strategies._litellm_routing import deployment_price

    assert deployment_price((None, None), None) == 10.0
    assert deployment_price((1e-6, None), None) == pytest.approx(5.000001)
    assert deployment_price((0.0, 0.0), None) == 10.0  # LiteLLM passes over a 0
    assert deployment_price((None, None), (0.0, 0.0)) == 10.0  # sykit's unpriced profile
    assert deployment_price((None, None), (1.0, 3.0)) == pytest.approx(4e-6)
    assert deployment_price((2e-6, None), (1.0, 3.0)) == pytest.approx(5e-6)
    # no price known anywhere: a tie at 10, to the deployment listed first, every time
    assert served_by(cost_run([priced("a1"), priced("a2")])) == ["a1"] * 4
    assert served_by(cost_run([priced("a2"), priced("a1")])) == ["a2"] * 4
    # an input price alone: its output counts 5, still under an unpriced deployment's 10
    assert served_by(cost_run([priced("a1"), priced("a2", price_in=1e-6)])) == ["a2"] * 4


def test_a_cost_tie_goes_to_the_deployment_that_answered_first_in_the_group():
    # LiteLLM's record lists the deployments in the order of their first answer: a1 (listed
    # first) is rate limited at first and cools, so a2 answers first and wins the later ties.
    models = {
        "a1": profile(sy.Faults(fail_first=1, fail_first_status=429, retry_after_s=1.0)),
        "a2": profile(),
    }
    result = cost_run([priced("a1"), priced("a2")], n=4, gap=10.0, models=models)
    assert served_by(result) == ["a2"] * 4
    assert attempts(result)[0][:2] == ("a1", 429)


def test_cost_based_routing_keeps_to_rpm_and_tpm_limits_per_minute():
    # the cheap a2 serves rpm 2 answered calls a minute, then the dearer a1 takes the rest of
    # that minute, and a2 is back the next minute
    cheap = priced("a2", 1e-7, 1e-7)
    cheap["litellm_params"]["rpm"] = 2
    result = cost_run([priced("a1", 1e-6, 1e-6), cheap], n=5, gap=1.0)
    assert served_by(result) == ["a2", "a2", "a1", "a1", "a1"]
    result = cost_run([priced("a1", 1e-6, 1e-6), cheap], n=4, gap=25.0)
    assert served_by(result) == ["a2", "a2", "a1", "a2"]  # t = 0, 25 | 50 | 75
    # rpm 0 is no limit (LiteLLM reads the limits with `or`)
    cheap["litellm_params"]["rpm"] = 0
    assert served_by(cost_run([priced("a1", 1e-6, 1e-6), cheap], n=4)) == ["a2"] * 4
    # every deployment over its limit: no call on the group, the fallback b
    both = [
        {**d, "litellm_params": {**d["litellm_params"], "rpm": 1}}
        for d in (priced("a1", 1e-6, 1e-6), priced("a2", 1e-7, 1e-7))
    ]
    result = cost_run(both, n=3)
    assert served_by(result) == ["a2", "a1", "ok"]
    assert (result.attempts["status"] == "skipped").sum() == 2


def test_cost_based_routing_refuses_what_it_does_not_model():
    with pytest.raises(sy.ArgumentError, match="base_model"):
        st.litellm_like(
            model_list=[
                {"model_name": "a", "litellm_params": {"model": "a1", "base_model": "gpt-4o"}}
            ],
            routing_strategy="cost-based-routing",
        )
    with pytest.raises(sy.ArgumentTypeError, match="input_cost_per_token must be a number"):
        st.litellm_like(
            model_list=[
                {"model_name": "a", "litellm_params": {"model": "a1", "input_cost_per_token": "1"}}
            ],
            routing_strategy="cost-based-routing",
        )
    with pytest.raises(sy.ArgumentError, match="are not read by 'cost-based-routing'"):
        st.litellm_like(
            ["a"], routing_strategy="cost-based-routing", routing_strategy_args={"ttl": 60}
        )


def test_cost_based_routing_runs_on_the_event_engines_only():
    router = st.litellm_like(
        model_list=[priced("a1", 1e-6, 1e-6), priced("a2", 1e-7, 1e-7)],
        routing_strategy="cost-based-routing",
    )
    assert router.bulk_path() is None
    hosted = sy.SimHost({"a1": profile(), "a2": profile()})
    with pytest.raises(sy.ArgumentError, match="can change one another's course"):
        sy.run(router, REQUEST, host=hosted, engine="bulk")
    assert sy.run(router, REQUEST, host=hosted).engine == "kernel"
