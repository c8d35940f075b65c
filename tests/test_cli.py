"""The README's main job: `sykit demo` prints a comparison table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import sykit as sy
from sykit._cli.main import main
from sykit._cli.prose import describe_faults


def test_demo_prints_one_row_per_strategy(capsys):
    assert main(["demo", "--requests", "120", "--quiet"]) == 0
    out = capsys.readouterr().out
    for strategy in (
        "small only",
        "large only",
        "cascade small>large",
        "race small|large",
        "hedge large @2s",
    ):
        assert strategy in out
    assert "quality" in out and "$/1k req" in out and "USD per 1,000 requests" in out


def test_demo_is_deterministic(capsys):
    main(["demo", "--requests", "80", "--quiet", "--seed", "3"])
    first = capsys.readouterr().out.split("\n\n")[1]
    main(["demo", "--requests", "80", "--quiet", "--seed", "3"])
    assert capsys.readouterr().out.split("\n\n")[1] == first


def test_compare_prints_routing_quality_without_faults_then_robustness_and_writes_files(
    capsys, tmp_path
):
    out = tmp_path / "results"
    args = ["compare", "--sample", "150", "--quiet", "--out", str(out), "--outage", "weak:10-20"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    routing, robustness = printed.split("\n2. Robustness")
    assert "1. Routing quality: no faults injected" in routing
    for strategy in (
        "weak only",
        "strong only",
        "cascade (judge)",
        "threshold 30% strong",
        "oracle",
    ):
        assert strategy in routing and strategy in robustness
    assert "APGR" in routing and "Δ quality" in routing and "realizable" in routing
    assert "APGR" not in robustness
    # the learned routers, cross-fitted per benchmark, next to the random spread and the simulated score
    assert "Learned routers you could deploy" in routing
    for row in ("kNN (TF-IDF)", "logistic (TF-IDF)", "category prior", "random (expected ± sd)"):
        assert row in routing
    assert "simulated score (reads the truth)" in routing
    assert "bound" not in " ".join(routing.split()).replace(
        "upper bound", ""
    )  # no score is a bound
    assert "race (first ok)" in routing and "race (first ok)" in robustness
    assert "cascade (judge) by the simulated judge's accuracy: 75%" in routing
    # every injected fault is named, the outage included
    assert "2.0% 429 rate limits, Retry-After 1 s" in robustness
    assert "outage (503) from t=10 s to t=20 s" in robustness
    written = {p.name for p in out.iterdir()}
    assert {"routing_summary.csv", "robustness_summary.csv", "sweeps.csv", "run.json"} <= written
    learned = pd.read_csv(out / "learned_routers.csv")
    # a 150-prompt sample holds a handful of MT-Bench prompts: too few to cross-fit, and said so
    assert set(learned["benchmark"]) == {"gsm8k", "mmlu"}
    assert "learned routers left out mt_bench:" in routing
    assert (learned["low"] <= learned["apgr"]).all() and (learned["apgr"] <= learned["high"]).all()
    assert {"cost_quality.png", "latency_cdf.png", "outcomes.png", "threshold_curve.png"} <= written
    summary = pd.read_csv(out / "routing_summary.csv")
    assert len(summary) == 12 and summary["requests"].eq(150).all()
    assert (
        summary.set_index("strategy")["realizable"].to_dict()["oracle"] is False
        or not (summary.set_index("strategy")["realizable"]["oracle"])
    )
    run = json.loads((out / "run.json").read_text())
    assert run["seeds"] == [0] and run["dataset"]["requests"] == 150
    assert len(run["dataset"]["request_ids"]) == 150
    assert {"python", "sykit", "pandas", "numpy"} <= set(run["versions"])
    weak = run["weak"]
    outages = run["robustness_host"]["models"][weak]["faults"]["outages"]
    assert outages == [[10.0, 20.0]]
    assert run["routing_host"]["models"][weak]["faults"]["rate_limit"] == 0.0
    assert run["routing_host"]["models"][weak]["faults"]["class"] == "Faults"
    assert run["routing_host"]["policy"]["timeout_s"] == 3600.0  # no deadline a routing run meets


def test_compare_without_faults_says_there_is_no_robustness_run(capsys):
    assert main(["compare", "--sample", "60", "--quiet", "--faults", "none"]) == 0
    printed = capsys.readouterr().out
    assert "no faults injected (--faults none and no --outage)" in printed


def test_compare_names_non_chat_bodies_and_every_error_fault():
    faults = sy.Faults(
        rate_limit=0.02,
        non_chat=0.01,
        errors=[
            sy.faults.ErrorFault(401, 0.01),
            sy.faults.ErrorFault.capability(0.05),
            sy.faults.ErrorFault(503, 0.02, retry_after_s=3.0),
            sy.faults.ErrorFault(
                404, 0.01, message="No endpoints found for {model} in this region."
            ),
            sy.faults.ErrorFault(500, 0.0),
        ],
    )
    assert describe_faults(faults).split("; ") == [
        "2.0% 429 rate limits, Retry-After 1 s",
        "1.0% non-chat 200 bodies",
        "1.0% HTTP 401 (invalid_api_key)",
        '5.0% HTTP 400 ("{model} does not support image input.")',
        "2.0% HTTP 503, Retry-After 3 s",
        '1.0% HTTP 404 ("No endpoints found for {model} in this…")',
    ]
    assert describe_faults(sy.Faults(errors=[sy.faults.ErrorFault(401, 0.0)])) == ""


def test_describe_faults_names_stalls_and_where_streams_break():
    faults = sy.Faults(cut_stream=0.02, break_after_tokens=5, stall_p=0.01, stall_s=12.0)
    assert describe_faults(faults).split("; ") == [
        "2.0% answers cut mid-stream, after 5 tokens",
        "1.0% of answers stall 12 s half-way",
    ]
    assert describe_faults(sy.Faults(cut_stream=0.02)) == "2.0% answers cut mid-stream"


@pytest.mark.parametrize(
    ("outage", "words"),
    [
        ("weak:30", "expected MODEL:START-END"),
        ("nobody:1-2", "unknown model"),
        ("weak:5-1", "before END"),
    ],
)
def test_a_bad_outage_is_refused_with_its_reason(outage, words, capsys):
    with pytest.raises(SystemExit, match=words):
        main(["compare", "--sample", "20", "--quiet", "--outage", outage])


def test_demo_writes_its_tables_and_plots_with_out(capsys, tmp_path):
    out = tmp_path / "demo"
    assert main(["demo", "--requests", "60", "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    files = {p.name for p in out.iterdir()}
    assert files == {
        "summary.csv",
        "requests.csv",
        "attempts.csv",
        "cost_quality.png",
        "latency_cdf.png",
        "outcomes.png",
    }
    assert f"wrote 6 files to {out}/" in printed
    summary = pd.read_csv(out / "summary.csv")
    assert "hedge large @2s" in summary["strategy"].tolist()
    assert len(pd.read_csv(out / "requests.csv")) == 60 * len(summary)
    assert (out / "outcomes.png").read_bytes().startswith(b"\x89PNG")


def test_run_json_keeps_an_error_faults_class_and_its_type_field():
    from sykit._cli.writers import _plain

    plain = _plain(sy.Faults(errors=[sy.faults.ErrorFault(401, 0.01, type="auth_error")]))
    assert plain["class"] == "Faults"
    (error,) = plain["errors"]
    assert (error["class"], error["status"], error["type"]) == ("ErrorFault", 401, "auth_error")


def test_compare_samples_a_dataset_without_benchmarks_and_reports_bad_settings_in_one_line(capsys):
    assert (
        main(["compare", "--dataset", "mmlu_pro", "--sample", "60", "--quiet", "--faults", "none"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "(a sample of 60)" in printed  # no benchmark column to stratify by
    with pytest.raises(SystemExit, match=r"--sample must be a number of requests ≥ 1, got -3"):
        main(["compare", "--sample", "-3", "--quiet"])
    with pytest.raises(SystemExit, match=r"^sykit compare: unknown dataset 'nope'; shipped"):
        main(["compare", "--dataset", "nope", "--quiet"])
