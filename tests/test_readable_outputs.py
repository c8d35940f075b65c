"""What a reader gets out of a run: frames whose columns each have one dtype (and read back from
CSV as written), and a summary that prints the figures it compares first, in a script too."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sykit as sy
from sykit import strategies as st
from sykit._results.metrics import SUMMARY_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
VIEW = [
    "strategy",
    "success_rate",
    "mean_quality",
    "cost_per_1k_requests_usd",
    "latency_p50_s",
    "latency_p99_s",
    "attempts_per_request",
    "retries",
    "fallbacks",
    "wasted_share",
]


def two_models(faults: sy.Faults | None = None) -> sy.SimHost:
    profile = sy.ModelProfile(price_in=1.0, price_out=2.0, faults=faults or sy.Faults())
    return sy.SimHost({"a": profile, "b": profile})


async def with_evidence(request, driver):
    """Evidence on some requests only: a flag, a note and a score, missing on the others."""
    if request.id % 7 == 0:
        driver.evidence(flag=request.id % 2 == 0, note=f"n{request.id % 3}", score=0.5)
    return sy.route_to("a", request, fallbacks=["b"])


def requests(n: int) -> list[sy.Request]:
    return [sy.Request(f"q{i}", id=i) for i in range(n)]


# -- one dtype per column -------------------------------------------------------------------------
def test_flags_some_requests_lack_are_one_nullable_boolean_column():
    result = sy.run(with_evidence, requests(14), host=two_models(), seed=0)
    flag = result.requests["evidence_flag"]
    assert isinstance(flag.dtype, pd.BooleanDtype)
    assert flag.tolist()[:8] == [True, pd.NA, pd.NA, pd.NA, pd.NA, pd.NA, pd.NA, False]
    assert result.requests["evidence_score"].dtype == np.float64


def test_a_comparisons_flags_are_one_column_where_a_strategy_has_none():
    async def always(request, driver):
        driver.evidence(flag=True)
        return sy.route_to("b", request)

    cmp = sy.compare({"always": always, "plain": st.single("a")}, requests(4), host=two_models())
    flag = cmp.requests["evidence_flag"]
    assert isinstance(flag.dtype, pd.BooleanDtype)
    assert flag.tolist() == [True] * 4 + [pd.NA] * 4


@pytest.fixture(scope="module")
def large() -> sy.Result:
    """A faulty run of 60,000 requests: failures, fallbacks and sparse evidence."""
    host = two_models(sy.faults.Faults.realistic(unavailable=0.05))
    return sy.run(with_evidence, requests(60_000), host=host, seed=0, progress=False)


def test_no_column_of_a_large_faulty_run_mixes_types(large):
    assert len(large.requests) >= 50_000 and len(large.attempts) >= 50_000
    assert (large.requests["status"] == "failed").any()
    assert large.attempts["fallback_reason"].notna().any()
    for name in ("requests", "attempts"):
        frame = getattr(large, name)
        mixed = [c for c in frame.columns if frame[c].dtype == object]
        assert not mixed, f"{name} columns of mixed Python objects: {mixed}"


@pytest.mark.parametrize("name", ["requests", "attempts"])
def test_the_documented_read_back_of_a_large_runs_csv_is_quiet_and_exact(large, tmp_path, name):
    """pandas guesses a column's type per block of rows: a text column empty over a whole block
    (no failure there) reads as numbers in it, and ``pd.read_csv(path)`` warns; the docs say to
    read the records with ``low_memory=False``, which reads every value back as written."""
    frame = getattr(large, name)
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = pd.read_csv(path, low_memory=False)
    assert list(back.columns) == list(frame.columns)
    for column in ("error_kind", "error_message", "status"):
        written = frame[column].astype(object).where(frame[column].notna(), None)
        read = back[column].astype(object).where(back[column].notna(), None)
        assert written.tolist() == read.tolist(), column


# -- the summary's view ---------------------------------------------------------------------------
@pytest.fixture
def script(monkeypatch):
    """pandas' display as a script in an 80-column terminal sees it."""
    monkeypatch.setenv("COLUMNS", "80")
    with pd.option_context("display.max_columns", 0, "display.width", 80):
        yield


@pytest.fixture(scope="module")
def run() -> sy.Result:
    host = two_models(sy.Faults(unavailable=0.2))
    return sy.run(with_evidence, requests(200), host=host, seed=0)


def test_a_summary_prints_its_view_in_full_in_a_script(run, script):
    text = repr(run.summary())
    assert "..." not in text
    for column in VIEW:
        assert column in text.split("[")[0], column
    assert "more columns, not shown: realizable, requests" in text
    assert 'summary(columns="all")' in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_every_column_is_still_in_the_summary_and_one_argument_away(run):
    summary = run.summary()
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert summary["cost_usd"].iloc[0] > 0 and summary.iloc[0]["routing_errors"] == 0
    whole = run.summary(columns="all")
    assert type(whole) is pd.DataFrame
    pd.testing.assert_frame_equal(pd.DataFrame(summary), whole)
    picked = run.summary(columns=["strategy", "fallbacks_unavailable"])
    assert list(picked.columns) == ["strategy", "fallbacks_unavailable"]
    # what is made from the summary prints as pandas prints any frame
    assert type(summary.T) is pd.DataFrame and type(summary[["strategy"]]) is pd.DataFrame


def test_an_unknown_column_is_refused_with_the_columns_there_are(run):
    with pytest.raises(sy.ArgumentError, match=r"\['nope'\] is not a column .* choose from"):
        run.summary(columns=["strategy", "nope"])
    with pytest.raises(sy.ArgumentTypeError, match='takes "all" or a list'):
        run.summary(columns=3)


def test_the_view_follows_the_keywords_that_choose_columns(run, script):
    text = repr(run.summary(percentiles=[0.9, 0.999]))
    assert "latency_p90_s" in text.split("[")[0] and "latency_p99.9_s" in text.split("[")[0]
    by = run.summary(by="evidence_note")
    assert list(by.shown().columns[:2]) == ["strategy", "evidence_note"]
    cmp = sy.compare({"a": st.single("a"), "b": st.single("b")}, requests(20), host=two_models())
    against = cmp.summary(baseline="b")
    assert list(against.shown().columns[-2:]) == ["d_quality", "d_cost_usd"]
    assert "d_quality_ci_low" in against.columns
    html = against._repr_html_()
    assert "<th>d_quality</th>" in html and "<th>cost_usd</th>" not in html


def test_the_readme_comment_names_the_columns_the_summary_shows():
    readme = (ROOT / "README.md").read_text()
    comment = re.search(r"res\.summary\(\)\s+#(.*?)\n```", readme, re.S).group(1)
    words = set(re.findall(r"[a-z][a-z0-9_]*", comment))
    assert {w for w in words if "_" in w} <= set(SUMMARY_COLUMNS)  # no made-up names
    assert set(VIEW[1:]) <= words
