"""The README's main job: `sykit demo` prints a comparison table."""

from __future__ import annotations

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
