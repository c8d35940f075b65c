"""The README's main job: `sykit demo` prints a comparison table."""

from __future__ import annotations

import pandas as pd

from sykit._cli import main


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
    assert "mean_quality" in out and "cost_per_request_usd" in out


def test_demo_is_deterministic(capsys):
    main(["demo", "--requests", "80", "--quiet", "--seed", "3"])
    first = capsys.readouterr().out.split("\n\n")[1]
    main(["demo", "--requests", "80", "--quiet", "--seed", "3"])
    assert capsys.readouterr().out.split("\n\n")[1] == first


def test_compare_on_a_shipped_dataset_prints_the_table_and_writes_files(capsys, tmp_path):
    out = tmp_path / "results"
    assert main(["compare", "--sample", "150", "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for strategy in (
        "weak only",
        "strong only",
        "cascade (judge)",
        "threshold 30% strong",
        "oracle",
    ):
        assert strategy in printed
    assert "APGR" in printed and "d_quality" in printed
    written = {p.name for p in out.iterdir()}
    assert {"summary.csv", "requests.csv", "attempts.csv", "sweeps.csv"} <= written
    assert {"cost_quality.png", "latency_cdf.png", "outcomes.png", "threshold_curve.png"} <= written
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 11 and summary["requests"].eq(150).all()
