"""Errors that say what went wrong, and never what they must not: the issue "Nothing lost,
nothing misread"."""

from __future__ import annotations

import pytest

import sykit as sy

KEY = "sk-proj-Abc123Def456Ghi789Jkl012"
PLAIN_KEY = "localtoken"  # a key with no provider shape: masked because it is the key held


def _chain(err: BaseException) -> str:
    """Every text an exception carries: its message, args, cause and context."""
    parts: list[str] = []
    seen: BaseException | None = err
    while seen is not None:
        parts += [str(seen), repr(seen.args)]
        seen = seen.__cause__ or seen.__context__
    return "\n".join(parts)


# -- 1. keys passed by mistake are never quoted -----------------------------------------------


_HOST_MISTAKES = {
    "base_url": lambda k: sy.HttpHost(k, api_key=k, models=["m"]),
    "base_url_shape_only": lambda k: sy.HttpHost(k, api_key=None, api_key_env=None, models=["m"]),
    "timeout_s": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1", api_key=k, models=["m"], timeout_s=k
    ),
    "connect_timeout_s": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1", api_key=k, models=["m"], connect_timeout_s=k
    ),
    "max_connections": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1", api_key=k, models=["m"], max_connections=k
    ),
    "decision_format": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1", api_key=k, models=["m"], decision_format=k
    ),
    "stream": lambda k: sy.HttpHost("http://127.0.0.1:1/v1", api_key=k, models=["m"], stream=k),
    "policy": lambda k: sy.HttpHost("http://127.0.0.1:1/v1", api_key=k, models=["m"], policy=k),
    "models": lambda k: sy.HttpHost("http://127.0.0.1:1/v1", api_key=k, models=k),
    "models_value": lambda k: sy.HttpHost("http://127.0.0.1:1/v1", api_key=k, models={"m": k}),
    "model_base_url": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1",
        api_key="other-key",
        models={"m": sy.HttpModel(api_key=k, base_url=k)},
    ),
    "api_key_env": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1", models=["m"], api_key_env=k.encode()
    ),
    "model_api_key_env": lambda k: sy.HttpHost(
        "http://127.0.0.1:1/v1", api_key_env=None, models={"m": sy.HttpModel(api_key_env=[k])}
    ),
    "http_model_base_url": lambda k: sy.HttpModel(base_url=k, api_key=k),
    "http_model_model_id": lambda k: sy.HttpModel(model_id=[k], api_key=k),
    "http_model_stream": lambda k: sy.HttpModel(stream=k, api_key=k),
    "http_model_profile": lambda k: sy.HttpModel(profile=k, api_key=k),
    "http_model_extra_body": lambda k: sy.HttpModel(extra_body=k, api_key=k),
}


#: Where the key is not held by sykit (a mistaken key in another argument, with no key passed),
#: only a key-shaped value can be recognised: a plain key there is not among the cases.
_SHAPE_ONLY = ("base_url_shape_only", "api_key_env", "model_api_key_env")


@pytest.mark.parametrize(
    ("mistake", "key"),
    [
        (mistake, key)
        for mistake in sorted(_HOST_MISTAKES)
        for key in (KEY, PLAIN_KEY)
        if not (mistake in _SHAPE_ONLY and key == PLAIN_KEY)
    ],
)
def test_a_key_passed_as_another_argument_is_never_quoted(mistake: str, key: str) -> None:
    with pytest.raises((sy.ArgumentError, TypeError)) as info:
        _HOST_MISTAKES[mistake](key)
    text = _chain(info.value)
    assert key not in text, text
    assert isinstance(info.value, sy.ArgumentError | sy.errors.ArgumentTypeError)


def test_a_key_read_from_the_environment_is_never_quoted(monkeypatch) -> None:
    monkeypatch.setenv("SYKIT_TEST_HOST_KEY", PLAIN_KEY)
    monkeypatch.setenv("SYKIT_TEST_MODEL_KEY", "modeltoken")
    with pytest.raises(sy.ArgumentError) as info:
        sy.HttpHost(PLAIN_KEY, api_key_env="SYKIT_TEST_HOST_KEY", models=["m"])
    assert PLAIN_KEY not in _chain(info.value)
    with pytest.raises(sy.ArgumentError) as info:
        sy.HttpHost(
            "http://127.0.0.1:1/v1",
            api_key_env=None,
            models={"m": sy.HttpModel(api_key_env="SYKIT_TEST_MODEL_KEY")},
            decision_format="modeltoken",
        )
    assert "modeltoken" not in _chain(info.value)


def test_a_key_shaped_value_is_masked_but_the_message_still_names_the_argument() -> None:
    with pytest.raises(sy.ArgumentError, match="base_url must be an http") as info:
        sy.HttpHost(KEY, api_key=KEY, models=["m"])
    assert "***" in str(info.value)
    with pytest.raises(TypeError, match="timeout_s must be a number") as info2:
        sy.HttpHost("http://127.0.0.1:1/v1", api_key=KEY, models=["m"], timeout_s=KEY)
    assert KEY not in str(info2.value)


def test_an_ordinary_wrong_value_is_still_quoted() -> None:
    with pytest.raises(sy.ArgumentError, match="'jsonn'"):
        sy.HttpHost("http://127.0.0.1:1/v1", api_key=KEY, models=["m"], decision_format="jsonn")
    with pytest.raises(sy.ArgumentError, match="'Meta-Llama-3-70B-Instruct'"):
        sy.HttpHost(api_key=KEY, models=["Meta-Llama-3-70B-Instruct"])  # no base_url anywhere


# -- 2. a results file pandas cannot read -------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\xfd", "not UTF-8 text"),
        (b"task,model,resolved\n1,a,1\n2,b,1,4,5\n", "not a readable CSV file"),
        (b"", "the file is empty"),
        (b"task,model,resolved\n", "has no rows"),
    ],
    ids=["binary", "ragged", "empty", "header-only"],
)
def test_pair_tasks_on_an_unreadable_file_names_it(tmp_path, content: bytes, said: str) -> None:
    path = tmp_path / "results.csv"
    path.write_bytes(content)
    with pytest.raises(sy.ArgumentError, match=said) as info:
        sy.sessions.pair_tasks(path, strong="a", weak="b")
    assert "results.csv" in str(info.value)
    assert info.value.__context__ is None  # no pandas error rides along


@pytest.mark.parametrize("fmt", [None, "mini-swe-agent"])
def test_the_transcript_loaders_name_a_binary_file(tmp_path, fmt) -> None:
    path = tmp_path / ("run.traj.json" if fmt else "run.jsonl")
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    kwargs = {} if fmt is None else {"format": fmt}
    with pytest.raises(sy.ArgumentError, match="not UTF-8 text") as info:
        sy.sessions.load_transcripts(path, **kwargs)
    assert path.name in str(info.value)


# -- 3. fit_capacity when nothing answers ------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_fit_capacity_against_a_closed_port_says_the_connection_was_refused() -> None:
    host = sy.HttpHost(
        f"http://127.0.0.1:{_closed_port()}/v1",
        models=["m"],
        api_key_env=None,
        policy=sy.HostPolicy(max_retries=0, cooldown_s=0),
    )
    with pytest.raises(sy.ArgumentError, match=r"all 8 requests at level 1 failed") as info:
        sy.profiles.fit_capacity(host, "m", levels=(1, 2), warmup=0)
    assert "8 × unavailable: connection refused" in str(info.value)
    assert "decode time" not in str(info.value)


def test_fit_capacity_against_a_server_answering_503_counts_the_503s() -> None:
    from sykit.testing import FakeProvider

    with FakeProvider() as fake:
        host = sy.HttpHost(
            fake.base_url,
            models=["fail-503"],
            api_key_env=None,
            policy=sy.HostPolicy(max_retries=0, cooldown_s=0),
        )
        with pytest.raises(
            sy.ArgumentError, match=r"all 8 requests at level 1 failed: 8 × HTTP 503"
        ):
            sy.profiles.fit_capacity(host, "fail-503", levels=(1, 2), warmup=0)


def test_refitting_attempts_that_all_failed_says_so() -> None:
    from sykit.testing import FakeProvider

    with FakeProvider() as fake:
        host = sy.HttpHost(
            fake.base_url, models=["fail-503"], api_key_env=None,
            policy=sy.HostPolicy(max_retries=0, cooldown_s=0),
        )  # fmt: skip
        result = sy.run(
            sy.strategies.single("fail-503"),
            [sy.Request("hi", id=f"r{i}", metadata={"stream": True}) for i in range(3)],
            host=host,
            progress=False,
        )
    attempts = result.attempts.assign(level=1)
    with pytest.raises(sy.ArgumentError, match=r"all 3 requests at level 1 failed: 3 × HTTP 503"):
        sy.profiles.fit_capacity(attempts, levels=(1,))


# -- 4, 5, 7. cross-fitting ---------------------------------------------------------------------

import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

POLICY = sy.HostPolicy(timeout_s=3600.0, cooldown_s=0.0)


def _priced_host(models=("weak", "strong")) -> sy.SimHost:
    prices = {"weak": 0.1, "strong": 10.0}
    return sy.SimHost(
        {
            m: sy.ModelProfile(price_in=prices[m], price_out=prices[m], output_tokens=100)
            for m in models
        },
        policy=POLICY,
    )


def _duplicated(n: int = 150, seed: int = 0) -> sy.datasets.Dataset:
    """``n`` prompts, each twice under two ids, with grades drawn at random per prompt (the same
    for both copies): nothing about a prompt predicts its grades, so the truth is APGR 0.5."""
    rng = np.random.default_rng(seed)
    weak = (rng.uniform(size=n) < 0.4).astype(float)
    strong = (rng.uniform(size=n) < 0.8).astype(float)
    order = rng.permutation(2 * n)
    rows = np.arange(2 * n) % n
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in order],
            "prompt": [f"prompt number {r}" for r in rows],
            "weak_ok": weak[rows],
            "strong_ok": strong[rows],
        }
    )
    return sy.datasets.from_frame(
        frame, prompt="prompt", id="id", quality={"weak": "weak_ok", "strong": "strong_ok"}
    )


class Memoriser:
    """Learns each training prompt's grades by heart; predicts 0.5 for a prompt it never saw."""

    name = "memoriser"

    def fit(self, train, models):
        quality = train.quality.reindex(train.frame["id"])
        table = {
            prompt: quality.iloc[i][list(models)].to_numpy(dtype=float)
            for i, prompt in enumerate(train.frame["prompt"])
        }
        return _Memorised(tuple(models), table)


class _Memorised:
    name = "memoriser"

    def __init__(self, models, table):
        self.models, self.table = models, table

    def predict(self, requests):
        unseen = np.full(len(self.models), 0.5)
        return np.array([self.table.get(r.messages[-1]["content"], unseen) for r in requests])

    def score(self, weak, strong):
        i, j = self.models.index(weak), self.models.index(strong)
        return lambda r: float(self.predict([r])[0, j] - self.predict([r])[0, i])


def test_a_memorising_router_gains_nothing_held_out_when_prompts_repeat_under_other_ids() -> None:
    data = _duplicated()
    held_out = sy.learn.cross_fit(
        Memoriser(), data, weak="weak", strong="strong", host=_priced_host(), resamples=200
    )
    assert held_out.apgr.value < 0.62, held_out.apgr  # the truth is 0.5
    # group=None, given explicitly, is kept as is: every row alone, and the copies leak
    leaky = sy.learn.cross_fit(
        Memoriser(), data, weak="weak", strong="strong", host=_priced_host(), resamples=200,
        group=None,
    )  # fmt: skip
    assert leaky.apgr.value > 0.7, leaky.apgr


def test_cross_fit_folds_keep_one_prompt_in_one_fold() -> None:
    data = _duplicated(40)
    seen: list[set[str]] = []

    class Recorder(Memoriser):
        def fit(self, train, models):
            seen.append(set(train.frame["prompt"]))
            return super().fit(train, models)

    for fit in (
        lambda: sy.learn.cross_fit(
            Recorder(), data, weak="weak", strong="strong", host=_priced_host(), resamples=200
        ),
        lambda: sy.learn.cross_fit_costs(
            Recorder(), data, host=_priced_host(), lambdas=[0.0, 1.0], resamples=100
        ),
    ):
        seen.clear()
        fit()
        # every prompt is held out exactly once: absent from exactly one fold's training side
        for prompt in set(data.frame["prompt"]):
            assert sum(prompt not in train for train in seen) == 1


class FailsOnUnseen:
    """A router that looks up the grade of each request by id: it fails on held-out ones."""

    name = "lookup"

    def fit(self, train, models):
        return _Lookup(tuple(models), set(train.frame["id"]))


class _Lookup:
    name = "lookup"

    def __init__(self, models, ids):
        self.models, self.ids = models, ids

    def predict(self, requests):
        return np.array([[{r: 1.0 for r in self.ids}[r.id]] * len(self.models) for r in requests])


def test_cross_fit_costs_with_a_router_failing_held_out_names_the_request() -> None:
    data = _duplicated(30)
    with pytest.raises(sy.ArgumentError, match=r"failed on held-out request\(s\), e\.g\. 'r\d+'"):
        sy.learn.cross_fit_costs(FailsOnUnseen(), data, host=_priced_host(), lambdas=[0.0, 1.0])


def test_cross_fit_warns_how_to_price_models_the_catalogue_does_not_know() -> None:
    data = _duplicated(30)
    with pytest.warns(UserWarning, match=r"does not know \['weak', 'strong'\].*host=sy\.SimHost"):
        sy.learn.cross_fit(Memoriser(), data, weak="weak", strong="strong", resamples=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sy.learn.cross_fit(
            Memoriser(), data, weak="weak", strong="strong", host=_priced_host(), resamples=200
        )


def test_cross_fit_costs_refuses_models_it_cannot_price() -> None:
    with pytest.raises(sy.ArgumentError, match=r"does not know .*host=sy\.SimHost"):
        sy.learn.cross_fit_costs(Memoriser(), _duplicated(30), lambdas=[0.0, 1.0])


# -- 6. a misspelt keyword of a configuration object ----------------------------------------------


@pytest.mark.parametrize(
    ("make", "hint"),
    [
        (lambda: sy.ModelProfile(price_input=0.1, price_out=0.2), "did you mean price_in"),
        (lambda: sy.ModelProfile().replace(price_ot=3), "did you mean price_out"),
        (lambda: sy.Latency(ttft_s=0.1), "did you mean ttft"),
        (lambda: sy.faults.Faults(rate_limits=0.1), "did you mean rate_limit"),
        (lambda: sy.faults.ErrorFault(503, retry_after=2), "did you mean retry_after_s"),
        (lambda: sy.HostPolicy(timeout=3), "did you mean timeout_s"),
        (lambda: sy.HostPolicy(max_retry=3), "did you mean max_retries"),
        (lambda: sy.Judge(acuracy=0.9), "did you mean accuracy"),
        (lambda: sy.faults.RateLimit(requests_per_minute=3), "did you mean requests_per_min"),
        (lambda: sy.profiles.PromptCache(min_token=3), "did you mean min_tokens"),
        (lambda: sy.faults.Flapping(period=3), None),
        (lambda: sy.Capacity(slot=3), "did you mean slots"),
        (lambda: sy.Capacity(slots=2).replace(sharng="exact"), "did you mean sharing"),
        (lambda: sy.SimHost({}, polcy=None), "did you mean policy"),
        (lambda: sy.HttpHost("http://localhost:1/v1", model=["m"]), "did you mean models"),
        (lambda: sy.DecisionRequest({}, sesion_id=1), "did you mean session_id"),
    ],
)
def test_a_misspelt_keyword_says_what_was_meant(make, hint) -> None:
    with pytest.raises(sy.errors.ArgumentTypeError, match="unexpected keyword argument") as info:
        make()
    assert isinstance(info.value, TypeError)  # `except TypeError` still catches it
    if hint is not None:
        assert hint in str(info.value)
    assert "fields:" in str(info.value)


def test_a_wrong_value_of_a_right_keyword_keeps_its_own_error() -> None:
    with pytest.raises(TypeError, match="price_in must be a number"):
        sy.ModelProfile(price_in="x")
