"""sy.profiles: model profiles from the shipped price table and latency measurements."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import sykit as sy
import sykit.datasets
import sykit.profiles
from sykit._base.files import read_table

profiles = sykit.profiles


def measured(source: str, provider: str | None, family: str):
    table = profiles.measurements()
    rows = table[(table["source"] == source) & (table["family"] == family) & table["used"]]
    return rows if provider is None else rows[rows["provider"] == provider]


def test_prices_context_and_flags_of_known_models():
    got = profiles.from_catalog(
        ["gpt-4-1106-preview", "gpt-4o", "claude-3-5-haiku", "mixtral-8x7b-instruct-v0.1"]
    )
    gpt4 = got["gpt-4-1106-preview"]
    assert (gpt4.price_in, gpt4.price_out, gpt4.context_window) == (10.0, 30.0, 128_000)
    assert (gpt4.vision, gpt4.tools) == (False, True)
    gpt4o = got["gpt-4o"]
    assert (gpt4o.price_in, gpt4o.price_out, gpt4o.vision) == (2.5, 10.0, True)
    # An undated name picks the newest dated listing.
    haiku = got["claude-3-5-haiku"]
    assert (haiku.price_in, haiku.price_out, haiku.context_window) == (0.8, 4.0, 200_000)
    # RouteLLM's Mixtral is priced as served by Groq, from the 2025 snapshot.
    mixtral = got["mixtral-8x7b-instruct-v0.1"]
    assert (mixtral.price_in, mixtral.price_out, mixtral.context_window) == (0.24, 0.24, 32_768)
    assert gpt4.cost_usd(1_000_000, 1_000_000) == pytest.approx(40.0)


def test_prices_follow_the_table():
    table = read_table("prices/llm_prices_chat.csv")
    row = table[
        (table["model_key"] == "gpt-4o-mini") & (table["snapshot"] == "litellm-1.110.2")
    ].iloc[0]
    mini = profiles.from_catalog(["gpt-4o-mini"])["gpt-4o-mini"]
    assert (mini.price_in, mini.price_out) == (row["input_usd_per_1m"], row["output_usd_per_1m"])
    assert mini.context_window == int(row["max_input_tokens"])
    # A key only the older snapshot has.
    claude21 = profiles.describe(["claude-2.1"]).loc["claude-2.1"]
    assert claude21["snapshot"] == "tokencost-0.1.26"
    assert (claude21["price_in"], claude21["price_out"]) == (8.0, 24.0)


def test_host_names_can_differ_from_catalogue_names():
    got = profiles.from_catalog({"strong": "gpt-4o", "weak": "gpt-4o-mini"})
    assert list(got) == ["strong", "weak"] and got["weak"].price_in == 0.15
    assert list(profiles.from_catalog("gpt-4o")) == ["gpt-4o"]


@pytest.mark.parametrize("name", ["routellm", "mmlu_pro"])
def test_every_dataset_model_has_a_profile(name):
    ds = sy.datasets.load(name)
    got = profiles.from_catalog(ds.models)
    assert tuple(got) == ds.models
    assert all(isinstance(p, sy.ModelProfile) and p.price_out > 0 for p in got.values())
    sy.SimHost(got)


def test_unknown_names_suggest_close_ones():
    with pytest.raises(ValueError, match=r"'gpt-4o-mnii' \(close names: 'gpt-4o-mini'"):
        profiles.from_catalog(["gpt-4o", "gpt-4o-mnii"])
    with pytest.raises(
        ValueError, match=r"unknown model names.*'lama-2-70b'.*'llama-2-70b'.*'zzzz'"
    ):
        profiles.from_catalog(["lama-2-70b", "zzzz"])
    with pytest.raises(ValueError, match=r"'zzzz' \(no close names\)"):
        profiles.describe(["zzzz"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="names is empty"):
        profiles.from_catalog([])
    with pytest.raises(TypeError, match="names must be a list of catalogue names"):
        profiles.from_catalog(42)
    with pytest.raises(ValueError, match="latency must be one of 'auto'"):
        profiles.from_catalog(["gpt-4o"], latency="fastest")
    with pytest.raises(TypeError, match=r"latency must be a mode string or a sy\.Latency"):
        profiles.from_catalog(["gpt-4o"], latency=0.5)


def test_names_and_search():
    names = profiles.names()
    assert names[0] == "mixtral-8x7b-instruct-v0.1" and "gpt-4o" in names
    found = profiles.search("MIXTRAL-8x7b")
    assert found[0] == "mixtral-8x7b-v0.1"
    assert "groq/mixtral-8x7b-32768" in found and "mixtral-8x7b-instruct-v0.1" in found
    assert len(profiles.search("gpt", limit=3)) == 3


def test_llmperf_fit_goes_through_the_measured_quantiles():
    rows = measured("llmperf", "anyscale", "llama-2-70b")
    latency = profiles.from_catalog(["llama-2-70b"])["llama-2-70b"].latency
    assert latency.ttft.quantile(0.5) == pytest.approx(np.median(rows["ttft_s"]))
    assert latency.ttft.quantile(0.95) == pytest.approx(np.quantile(rows["ttft_s"], 0.95))
    assert latency.tokens_per_s.quantile(0.5) == pytest.approx(np.median(rows["tokens_per_s"]))
    assert latency.tokens_per_s.quantile(0.05) == pytest.approx(
        np.quantile(rows["tokens_per_s"], 0.05)
    )
    # The leaderboard's own published median TTFT for this run.
    summary = read_table("latency/llmperf_summary.csv")
    published = summary[(summary["provider"] == "anyscale") & (summary["model_size"] == "70b")]
    assert latency.ttft.quantile(0.5) == pytest.approx(published["ttft_s_p50"].iloc[0])


def test_llmperf_tokens_per_s_is_the_decoding_speed():
    raw = read_table("latency/llmperf_requests.csv")
    row = raw[(raw["provider"] == "groq") & (raw["request_idx"] == 0)].iloc[0]
    rows = measured("llmperf", "groq", "llama-2-70b")
    first = rows.iloc[0]
    expected = row["output_tokens"] / (row["end_to_end_latency_s"] - row["ttft_s"])
    assert first["tokens_per_s"] == pytest.approx(expected)
    assert first["date"] == "2024-01-10"  # the run's own timestamp, from the summary table


def test_thefastest_fit_matches_measured_medians():
    rows = measured("thefastest", "openai", "gpt-4-1106-preview")
    assert len(rows) > 50 and set(rows["endpoint"]) >= {
        "gpt-4-1106-preview",
        "openai/gpt-4-1106-preview",
    }
    latency = profiles.from_catalog(["gpt-4-1106-preview"])["gpt-4-1106-preview"].latency
    assert latency.ttft.quantile(0.5) == pytest.approx(np.median(rows["ttft_s"]))
    assert latency.tokens_per_s.quantile(0.5) == pytest.approx(np.median(rows["tokens_per_s"]))
    described = profiles.describe(["gpt-4-1106-preview"]).iloc[0]
    assert described["latency_source"] == "thefastest:openai/gpt-4-1106-preview"
    assert described["latency_samples"] == len(rows)
    assert "best of 3" in described["note"]


def test_suspect_and_failed_rows_are_not_used():
    table = profiles.measurements()
    raw = read_table("latency/thefastest_runs.csv")
    fastest = table[table["source"] == "thefastest"]
    assert (fastest["used"] == (raw["suspect"] == 0).to_numpy()).all()
    assert fastest.loc[~fastest["used"], "excluded"].eq("suspect").all()
    llmperf = table[table["source"] == "llmperf"]
    assert set(llmperf.loc[~llmperf["used"], "excluded"]) == {"error 429", "error -1"}
    # LLMPerf's -100 ("output too few tokens") requests were answered: their timings count.
    short = read_table("latency/llmperf_requests.csv")["error_code"] == -100
    assert llmperf.loc[short.to_numpy(), "used"].all()


def test_latency_sources_and_fallbacks():
    described = profiles.describe(
        ["llama-2-70b", "meta-llama-3.1-70b-instruct", "gpt-4o", "gemini-1.5-pro-002"]
    )
    source = described["latency_source"]
    assert source["llama-2-70b"] == "llmperf:anyscale/llama-2-70b"
    # Llama 3.1 is timed as Llama 3 (same architecture) at the provider it is priced at.
    assert source["meta-llama-3.1-70b-instruct"] == "thefastest:fireworks/llama-3-70b"
    assert source["gpt-4o"] == "default"
    # Google's measured tokens/s is a streaming artefact: TTFT is used, tokens/s is the default.
    gemini = described.loc["gemini-1.5-pro-002"]
    assert gemini["latency_source"] == "thefastest:google/gemini-1.5-pro"
    assert math.isnan(gemini["tokens_per_s_median"])
    default = profiles.from_catalog(["gpt-4o"])["gpt-4o"].latency
    gemini_profile = profiles.from_catalog(["gemini-1.5-pro-002"])["gemini-1.5-pro-002"]
    assert gemini_profile.latency.tokens_per_s == default.tokens_per_s
    assert gemini_profile.latency.ttft != default.ttft


def test_latency_modes():
    by_mode = {
        mode: profiles.describe(["llama-2-70b", "gpt-4-1106-preview"], latency=mode)[
            "latency_source"
        ].tolist()
        for mode in ("llmperf", "thefastest", "default")
    }
    assert by_mode["llmperf"] == ["llmperf:anyscale/llama-2-70b", "default"]
    assert by_mode["thefastest"] == [
        "thefastest:anyscale/llama-2-70b",
        "thefastest:openai/gpt-4-1106-preview",
    ]
    assert by_mode["default"] == ["default", "default"]
    fixed = sy.Latency(ttft=0.25, tokens_per_s=100)
    assert profiles.from_catalog(["gpt-4o"], latency=fixed)["gpt-4o"].latency == fixed


def test_pooled_family_when_the_provider_was_not_measured():
    # Bedrock served Mixtral but was not timed on it: every provider of the family is pooled.
    got = profiles.describe(["bedrock/us-west-2/mistral.mixtral-8x7b-instruct-v0:1"]).iloc[0]
    assert got["latency_source"] == "thefastest:*/mixtral-8x7b"
    assert got["latency_samples"] == len(measured("thefastest", None, "mixtral-8x7b"))


def test_default_latency_is_typical_of_measured_endpoints():
    default = profiles.describe(["gpt-4o"]).iloc[0]
    assert default["latency_samples"] == 0 and "typical of" in default["note"]
    assert 0.1 < default["ttft_median_s"] < 1.0 and 20 < default["tokens_per_s_median"] < 200


def test_fit_latency():
    rng = np.random.default_rng(0)
    ttft = rng.lognormal(np.log(0.4), 0.5, 5000)
    tps = rng.lognormal(np.log(80), 0.3, 5000)
    latency = profiles.fit_latency(ttft, tps)
    assert latency.ttft.median == pytest.approx(0.4, rel=0.05)
    assert latency.ttft.sigma == pytest.approx(0.5, rel=0.1)
    assert latency.tokens_per_s.median == pytest.approx(80, rel=0.05)
    assert latency.tokens_per_s.sigma == pytest.approx(0.3, rel=0.1)
    with pytest.raises(ValueError, match="at least 5 positive ttft_s samples, got 2"):
        profiles.fit_latency([0.3, 0.4], [50] * 10)


def test_fit_estimates_how_fast_a_model_reads_its_prompt():
    rng = np.random.default_rng(5)
    tokens = rng.integers(200, 20_000, size=400)
    base = rng.lognormal(np.log(0.3), 0.3, size=400)
    measured = pd.DataFrame(
        {
            "model": "m",
            "input_tokens": tokens,
            "ttft_s": base + tokens / 5_000,
            "latency_s": base + tokens / 5_000 + 2.0,
            "output_tokens": 100,
        }
    )
    latency = sy.profiles.fit(measured)["m"].latency
    assert latency.prefill_tokens_per_s == pytest.approx(5_000, rel=0.1)
    assert latency.ttft.quantile(0.5) == pytest.approx(0.3, rel=0.1)
    flat = measured.assign(ttft_s=base, latency_s=base + 2.0)
    assert sy.profiles.fit(flat)["m"].latency.prefill_tokens_per_s is None
    same_length = measured.assign(input_tokens=1_000)
    assert sy.profiles.fit(same_length)["m"].latency.prefill_tokens_per_s is None
